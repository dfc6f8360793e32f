// fi_tagged(3) through stock libfabric on one net_ring port (it loops back
// to itself): every call, matching by tag and ignore mask in posting order,
// unexpected messages in arrival order, directed receives, tagged and
// untagged kept apart; FI_PEEK / FI_CLAIM / FI_DISCARD are in
// test_tagged_peek.cc, large messages and bad input in
// test_tagged_limits.cc.  Only public fi_* calls are used.
#include <gtest/gtest.h>
#include <rdma/fi_tagged.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "test/ofi/tagged_fixture.h"
#include "test/support/messaging.h"

namespace ofi_dpdk::test {
namespace {

// ---- the calls ----

TEST_F(Tagged, TsendTrecvFillEveryTaggedCqField) {
  const std::vector<uint8_t> message = pattern(100, 1);
  std::vector<uint8_t> buffer(128, kFill);
  int send_context = 0;
  constexpr uint64_t kTag = 0x8000'0000'dead'beefull;
  ASSERT_EQ(
      fi_trecv(b_.ep, buffer.data(), buffer.size(), nullptr, FI_ADDR_UNSPEC, kTag, 0, &buffer), 0);
  ASSERT_EQ(tsend(a_, message.data(), message.size(), b_.addr, kTag, &send_context), 0);
  const fi_cq_tagged_entry sent = expect_completion(a_.tx_cq, &send_context, FI_TAGGED | FI_SEND);
  EXPECT_FALSE(sent.flags & (FI_MSG | FI_RECV));
  const fi_cq_tagged_entry got = expect_completion(b_.rx_cq, &buffer, FI_TAGGED | FI_RECV);
  EXPECT_FALSE(got.flags & (FI_MSG | FI_SEND | FI_REMOTE_CQ_DATA));
  EXPECT_EQ(got.len, message.size());
  EXPECT_EQ(got.buf, buffer.data());
  EXPECT_EQ(got.tag, kTag);
  EXPECT_TRUE(std::equal(message.begin(), message.end(), buffer.begin()));
  EXPECT_TRUE(all_fill(buffer.data() + message.size(), buffer.size() - message.size()));
}

TEST_F(Tagged, TsendvGathersAndTrecvvScatters) {
  const std::vector<uint8_t> message = pattern(139, 2);
  iovec send_iov[3] = {{const_cast<uint8_t*>(message.data()), 5},
                       {const_cast<uint8_t*>(message.data()) + 5, 100},
                       {const_cast<uint8_t*>(message.data()) + 105, 34}};
  std::vector<uint8_t> r0(10, kFill), r1(200, kFill);
  iovec recv_iov[2] = {{r0.data(), r0.size()}, {r1.data(), r1.size()}};
  int send_context = 0, recv_context = 0;
  ASSERT_EQ(fi_trecvv(b_.ep, recv_iov, nullptr, 2, FI_ADDR_UNSPEC, 0x77, 0, &recv_context), 0);
  ASSERT_EQ(
      retry(a_.tx_cq,
            [&] { return fi_tsendv(a_.ep, send_iov, nullptr, 3, b_.addr, 0x77, &send_context); }),
      0);
  expect_completion(a_.tx_cq, &send_context, FI_TAGGED | FI_SEND);
  const fi_cq_tagged_entry got = expect_completion(b_.rx_cq, &recv_context, FI_TAGGED | FI_RECV);
  EXPECT_EQ(got.len, message.size());
  EXPECT_EQ(got.tag, 0x77u);
  EXPECT_TRUE(std::equal(message.begin(), message.begin() + 10, r0.begin()));
  EXPECT_TRUE(std::equal(message.begin() + 10, message.end(), r1.begin()));
  EXPECT_TRUE(all_fill(r1.data() + 129, 71));
}

TEST_F(Tagged, TsendmsgAndTrecvmsgCarryDataAndContexts) {
  const std::string text = "tsendmsg with data";
  iovec iov{const_cast<char*>(text.data()), text.size()};
  fi_msg_tagged msg{};
  msg.msg_iov = &iov;
  msg.iov_count = 1;
  msg.addr = b_.addr;
  msg.tag = 0x1234;
  msg.ignore = ~uint64_t{0};  // ignored on a send
  msg.data = 0xC0FFEE;
  int send_context = 0;
  msg.context = &send_context;
  char buffer[64] = {};
  ASSERT_EQ(trecvmsg(b_, buffer, sizeof(buffer), 0x1234, 0, buffer, 0), 0);
  ASSERT_EQ(retry(a_.tx_cq, [&] { return fi_tsendmsg(a_.ep, &msg, FI_REMOTE_CQ_DATA); }), 0);
  expect_completion(a_.tx_cq, &send_context, FI_TAGGED | FI_SEND);
  fi_cq_tagged_entry got = expect_completion(b_.rx_cq, buffer, FI_TAGGED | FI_RECV);
  EXPECT_TRUE(got.flags & FI_REMOTE_CQ_DATA);
  EXPECT_EQ(got.data, 0xC0FFEEu);
  EXPECT_EQ(got.tag, 0x1234u);
  EXPECT_EQ(std::string(buffer, got.len), text);

  // Without FI_REMOTE_CQ_DATA the data stays behind.
  ASSERT_EQ(trecvmsg(b_, buffer, sizeof(buffer), 0x1234, 0, buffer, 0), 0);
  ASSERT_EQ(retry(a_.tx_cq, [&] { return fi_tsendmsg(a_.ep, &msg, 0); }), 0);
  expect_completion(a_.tx_cq, &send_context, FI_TAGGED | FI_SEND);
  got = expect_completion(b_.rx_cq, buffer, FI_TAGGED | FI_RECV);
  EXPECT_FALSE(got.flags & FI_REMOTE_CQ_DATA);
}

TEST_F(Tagged, TsenddataDeliversRemoteCqData) {
  char buffer[32] = {};
  int context = 0;
  ASSERT_EQ(fi_trecv(b_.ep, buffer, sizeof(buffer), nullptr, FI_ADDR_UNSPEC, 9, 0, buffer), 0);
  ASSERT_EQ(retry(a_.tx_cq,
                  [&] {
                    return fi_tsenddata(a_.ep, "data", 4, nullptr, 0xABCDEF, b_.addr, 9, &context);
                  }),
            0);
  expect_completion(a_.tx_cq, &context, FI_TAGGED | FI_SEND);
  const fi_cq_tagged_entry got = expect_completion(b_.rx_cq, buffer, FI_TAGGED | FI_RECV);
  EXPECT_TRUE(got.flags & FI_REMOTE_CQ_DATA);
  EXPECT_EQ(got.data, 0xABCDEFu);
  EXPECT_EQ(got.tag, 9u);
  EXPECT_EQ(std::string(buffer, got.len), "data");
}

TEST_F(Tagged, TinjectAndTinjectdataReuseTheBufferAndNeverComplete) {
  char payload[] = "tinject";
  char first[32] = {}, second[32] = {};
  ASSERT_EQ(fi_trecv(b_.ep, first, sizeof(first), nullptr, FI_ADDR_UNSPEC, 5, 0, first), 0);
  ASSERT_EQ(fi_trecv(b_.ep, second, sizeof(second), nullptr, FI_ADDR_UNSPEC, 6, 0, second), 0);
  ASSERT_EQ(retry(a_.tx_cq, [&] { return fi_tinject(a_.ep, payload, 7, b_.addr, 5); }), 0);
  std::memset(payload, 'X', 7);
  std::memcpy(payload, "injdata", 7);
  ASSERT_EQ(retry(a_.tx_cq, [&] { return fi_tinjectdata(a_.ep, payload, 7, 42, b_.addr, 6); }), 0);
  std::memset(payload, 'Y', 7);
  fi_cq_tagged_entry got = expect_completion(b_.rx_cq, first, FI_TAGGED | FI_RECV);
  EXPECT_EQ(std::string(first, got.len), "tinject");
  EXPECT_EQ(got.tag, 5u);
  EXPECT_FALSE(got.flags & FI_REMOTE_CQ_DATA);
  got = expect_completion(b_.rx_cq, second, FI_TAGGED | FI_RECV);
  EXPECT_EQ(std::string(second, got.len), "injdata");
  EXPECT_EQ(got.tag, 6u);
  EXPECT_TRUE(got.flags & FI_REMOTE_CQ_DATA);
  EXPECT_EQ(got.data, 42u);
  EXPECT_TRUE(quiet(a_.tx_cq, 0.3)) << "an inject made a CQ entry";
}

TEST_F(Tagged, TsendmsgInjectCopiesAndInjectCompleteCompletes) {
  std::vector<char> payload = {'c', 'o', 'p', 'y'};
  char buffer[16] = {};
  ASSERT_EQ(fi_trecv(b_.ep, buffer, sizeof(buffer), nullptr, FI_ADDR_UNSPEC, 1, 0, buffer), 0);
  iovec iov{payload.data(), payload.size()};
  fi_msg_tagged msg{};
  msg.msg_iov = &iov;
  msg.iov_count = 1;
  msg.addr = b_.addr;
  msg.tag = 1;
  int context = 0;
  msg.context = &context;
  ASSERT_EQ(
      retry(a_.tx_cq,
            [&] { return fi_tsendmsg(a_.ep, &msg, FI_INJECT | FI_INJECT_COMPLETE | FI_MORE); }),
      0);
  std::fill(payload.begin(), payload.end(), 'Z');
  expect_completion(a_.tx_cq, &context, FI_TAGGED | FI_SEND);
  const fi_cq_tagged_entry got = expect_completion(b_.rx_cq, buffer, FI_TAGGED | FI_RECV);
  EXPECT_EQ(std::string(buffer, got.len), "copy");
  // FI_TRANSMIT_COMPLETE is taken too.
  ASSERT_EQ(fi_trecv(b_.ep, buffer, sizeof(buffer), nullptr, FI_ADDR_UNSPEC, 1, 0, buffer), 0);
  ASSERT_EQ(retry(a_.tx_cq, [&] { return fi_tsendmsg(a_.ep, &msg, FI_TRANSMIT_COMPLETE); }), 0);
  expect_completion(a_.tx_cq, &context, FI_TAGGED | FI_SEND);
  expect_completion(b_.rx_cq, buffer, FI_TAGGED | FI_RECV);
}

TEST_F(Tagged, InjectAboveInjectSizeIsEMSGSIZE) {
  ASSERT_GT(inject_size(), 0u);
  std::vector<uint8_t> big(inject_size() + 1, 1);
  EXPECT_EQ(fi_tinject(a_.ep, big.data(), big.size(), b_.addr, 1), -FI_EMSGSIZE);
  EXPECT_EQ(fi_tinjectdata(a_.ep, big.data(), big.size(), 1, b_.addr, 1), -FI_EMSGSIZE);
  iovec iov{big.data(), big.size()};
  fi_msg_tagged msg{};
  msg.msg_iov = &iov;
  msg.iov_count = 1;
  msg.addr = b_.addr;
  EXPECT_EQ(fi_tsendmsg(a_.ep, &msg, FI_INJECT), -FI_EMSGSIZE);
  EXPECT_TRUE(quiet(a_.tx_cq, 0.1));
}

// ---- matching ----

TEST_F(Tagged, IgnoreMaskSelectsTheReceive) {
  // (recv_tag | ignore) == (msg_tag | ignore)
  char wide[32] = {}, exact[32] = {};
  ASSERT_EQ(fi_trecv(b_.ep, exact, sizeof(exact), nullptr, FI_ADDR_UNSPEC, 0x200, 0, exact), 0);
  ASSERT_EQ(fi_trecv(b_.ep, wide, sizeof(wide), nullptr, FI_ADDR_UNSPEC, 0x1F00, 0xFF, wide), 0);
  ASSERT_EQ(tsend(a_, "to wide", 7, b_.addr, 0x1F42, nullptr), 0);
  fi_cq_tagged_entry got = expect_completion(b_.rx_cq, wide, FI_TAGGED | FI_RECV);
  EXPECT_EQ(got.tag, 0x1F42u) << "the message's tag, not the receive's";
  EXPECT_EQ(std::string(wide, got.len), "to wide");
  // 0x201 matches neither; 0x200 the exact one.
  ASSERT_EQ(tsend(a_, "nobody", 6, b_.addr, 0x201, nullptr), 0);
  EXPECT_TRUE(quiet(b_.rx_cq, 0.2));
  ASSERT_EQ(tsend(a_, "exact", 5, b_.addr, 0x200, nullptr), 0);
  got = expect_completion(b_.rx_cq, exact, FI_TAGGED | FI_RECV);
  EXPECT_EQ(std::string(exact, got.len), "exact");
  // The 0x201 message waits for a receive that ignores its low bit.
  char any[32] = {};
  ASSERT_EQ(fi_trecv(b_.ep, any, sizeof(any), nullptr, FI_ADDR_UNSPEC, 0x200, 0x1, any), 0);
  got = expect_completion(b_.rx_cq, any, FI_TAGGED | FI_RECV);
  EXPECT_EQ(got.tag, 0x201u);
  EXPECT_EQ(std::string(any, got.len), "nobody");
}

TEST_F(Tagged, PostedReceivesMatchInPostingOrder) {
  struct Receive {
    char buffer[32];
  } receives[3] = {};
  // All three match tag 0x10; the first posted takes the first message.
  ASSERT_EQ(fi_trecv(b_.ep, receives[0].buffer, 32, nullptr, FI_ADDR_UNSPEC, 0x10, 0, &receives[0]),
            0);
  ASSERT_EQ(fi_trecv(b_.ep, receives[1].buffer, 32, nullptr, FI_ADDR_UNSPEC, 0, ~uint64_t{0},
                     &receives[1]),
            0);
  ASSERT_EQ(
      fi_trecv(b_.ep, receives[2].buffer, 32, nullptr, FI_ADDR_UNSPEC, 0x1F, 0xF, &receives[2]), 0);
  const std::string texts[3] = {"one", "two", "three"};
  for (const std::string& text : texts)
    ASSERT_EQ(tsend(a_, text.data(), text.size(), b_.addr, 0x10, nullptr), 0);
  for (int i = 0; i < 3; ++i) {
    const fi_cq_tagged_entry got = expect_completion(b_.rx_cq, &receives[i], FI_TAGGED | FI_RECV);
    EXPECT_EQ(std::string(receives[i].buffer, got.len), texts[i]);
  }
}

TEST_F(Tagged, UnexpectedMessagesMatchInArrivalOrder) {
  tsend_acked(a_, "first 1", 7, b_.addr, 1);
  tsend_acked(a_, "only 2", 6, b_.addr, 2);
  tsend_acked(a_, "second 1", 8, b_.addr, 1);
  EXPECT_TRUE(quiet(b_.rx_cq, 0.1));
  char buffer[32] = {};
  const std::pair<uint64_t, std::string> expected[3] = {
      {1, "first 1"}, {2, "only 2"}, {1, "second 1"}};
  // A receive for tag 1 takes the oldest tag-1 message, then one that
  // ignores every bit the oldest left.
  ASSERT_EQ(fi_trecv(b_.ep, buffer, sizeof(buffer), nullptr, FI_ADDR_UNSPEC, 1, 0, buffer), 0);
  fi_cq_tagged_entry got = expect_completion(b_.rx_cq, buffer, FI_TAGGED | FI_RECV);
  EXPECT_EQ(std::string(buffer, got.len), expected[0].second);
  for (int i = 1; i < 3; ++i) {
    ASSERT_EQ(
        fi_trecv(b_.ep, buffer, sizeof(buffer), nullptr, FI_ADDR_UNSPEC, 0, ~uint64_t{0}, buffer),
        0);
    got = expect_completion(b_.rx_cq, buffer, FI_TAGGED | FI_RECV);
    EXPECT_EQ(got.tag, expected[i].first);
    EXPECT_EQ(std::string(buffer, got.len), expected[i].second);
  }
}

TEST_F(Tagged, TaggedAndUntaggedNeverMatchEachOther) {
  char untagged_rx[32] = {}, tagged_rx[32] = {};
  ASSERT_EQ(fi_recv(b_.ep, untagged_rx, sizeof(untagged_rx), nullptr, FI_ADDR_UNSPEC, untagged_rx),
            0);
  // A tagged message (any tag would do) skips the untagged receive.
  ASSERT_EQ(tsend(a_, "tagged", 6, b_.addr, 0, nullptr), 0);
  EXPECT_TRUE(quiet(b_.rx_cq, 0.2)) << "a tagged message matched fi_recv";
  ASSERT_EQ(fi_trecv(b_.ep, tagged_rx, sizeof(tagged_rx), nullptr, FI_ADDR_UNSPEC, 0, ~uint64_t{0},
                     tagged_rx),
            0);
  fi_cq_tagged_entry got = expect_completion(b_.rx_cq, tagged_rx, FI_TAGGED | FI_RECV);
  EXPECT_EQ(std::string(tagged_rx, got.len), "tagged");
  // An untagged message skips a tagged receive that ignores every bit.
  ASSERT_EQ(fi_trecv(b_.ep, tagged_rx, sizeof(tagged_rx), nullptr, FI_ADDR_UNSPEC, 0, ~uint64_t{0},
                     tagged_rx),
            0);
  ASSERT_EQ(retry(a_.tx_cq, [&] { return fi_send(a_.ep, "plain", 5, nullptr, b_.addr, nullptr); }),
            0);
  got = expect_completion(b_.rx_cq, untagged_rx, FI_MSG | FI_RECV);
  EXPECT_FALSE(got.flags & FI_TAGGED);
  EXPECT_EQ(std::string(untagged_rx, got.len), "plain");
  EXPECT_EQ(fi_cancel(&b_.ep->fid, tagged_rx), 0);
  const fi_cq_err_entry error = [&] {
    fi_cq_tagged_entry entry;
    EXPECT_EQ(wait_for_completion(b_.rx_cq, &entry, kWait), -FI_EAVAIL);
    return read_error(b_.rx_cq);
  }();
  EXPECT_EQ(error.err, FI_ECANCELED);
  EXPECT_EQ(error.flags & (FI_TAGGED | FI_RECV), FI_TAGGED | FI_RECV);
}

TEST_F(TaggedDirected, DirectedReceiveTakesOnlyItsSource) {
  char from_a[32] = {}, any[32] = {};
  ASSERT_EQ(fi_trecv(b_.ep, from_a, sizeof(from_a), nullptr, a_.addr, 7, 0, from_a), 0);
  ASSERT_EQ(tsend(c_, "from c", 6, b_.addr, 7, nullptr), 0);
  EXPECT_TRUE(quiet(b_.rx_cq, 0.2)) << "c's message matched a receive for a";
  ASSERT_EQ(tsend(a_, "from a", 6, b_.addr, 7, nullptr), 0);
  fi_cq_tagged_entry got = expect_completion(b_.rx_cq, from_a, FI_TAGGED | FI_RECV);
  EXPECT_EQ(std::string(from_a, got.len), "from a");
  // c's message waits; a directed peek for a does not see it, one for c does.
  char dummy[8];
  ASSERT_EQ(trecvmsg(b_, dummy, sizeof(dummy), 7, 0, dummy, FI_PEEK, a_.addr), 0);
  fi_cq_tagged_entry entry;
  ASSERT_EQ(wait_for_completion(b_.rx_cq, &entry, kWait), -FI_EAVAIL);
  EXPECT_EQ(read_error(b_.rx_cq).err, FI_ENOMSG);
  ASSERT_EQ(trecvmsg(b_, dummy, sizeof(dummy), 7, 0, dummy, FI_PEEK, c_.addr), 0);
  got = expect_completion(b_.rx_cq, dummy, FI_TAGGED | FI_RECV);
  EXPECT_EQ(got.len, 6u);
  ASSERT_EQ(fi_trecv(b_.ep, any, sizeof(any), nullptr, FI_ADDR_UNSPEC, 7, 0, any), 0);
  got = expect_completion(b_.rx_cq, any, FI_TAGGED | FI_RECV);
  EXPECT_EQ(std::string(any, got.len), "from c");
}

#ifdef FI_TAGGED_DIRECTED_RECV
// libfabric 2.x: FI_TAGGED_DIRECTED_RECV alone directs tagged receives only;
// an untagged receive's source is ignored, as without FI_DIRECTED_RECV.
class TaggedOnlyDirected : public TaggedThree {
 protected:
  uint64_t caps() const override { return FI_TAGGED | FI_MSG | FI_TAGGED_DIRECTED_RECV; }
};

TEST_F(TaggedOnlyDirected, TaggedReceivesAreDirectedUntaggedOnesAreNot) {
  EXPECT_TRUE(domain_.info->caps & FI_TAGGED_DIRECTED_RECV);
  EXPECT_FALSE(domain_.info->caps & FI_DIRECTED_RECV);
  char tagged_from_a[32] = {}, untagged[32] = {};
  ASSERT_EQ(
      fi_trecv(b_.ep, tagged_from_a, sizeof(tagged_from_a), nullptr, a_.addr, 7, 0, tagged_from_a),
      0);
  ASSERT_EQ(tsend(c_, "tagged c", 8, b_.addr, 7, nullptr), 0);
  EXPECT_TRUE(quiet(b_.rx_cq, 0.2)) << "c's tagged message matched a receive for a";
  ASSERT_EQ(tsend(a_, "tagged a", 8, b_.addr, 7, nullptr), 0);
  fi_cq_tagged_entry got = expect_completion(b_.rx_cq, tagged_from_a, FI_TAGGED | FI_RECV);
  EXPECT_EQ(std::string(tagged_from_a, got.len), "tagged a");
  ASSERT_EQ(fi_recv(b_.ep, untagged, sizeof(untagged), nullptr, a_.addr, untagged), 0);
  static const char kUntagged[] = "untagged c";
  ASSERT_EQ(retry(c_.tx_cq,
                  [&] {
                    return fi_send(c_.ep, kUntagged, sizeof(kUntagged) - 1, nullptr, b_.addr,
                                   nullptr);
                  }),
            0);
  got = expect_completion(b_.rx_cq, untagged, FI_MSG | FI_RECV);
  EXPECT_EQ(std::string(untagged, got.len), kUntagged);
  char rest[32] = {};
  ASSERT_EQ(fi_trecv(b_.ep, rest, sizeof(rest), nullptr, FI_ADDR_UNSPEC, 7, 0, rest), 0);
  got = expect_completion(b_.rx_cq, rest, FI_TAGGED | FI_RECV);
  EXPECT_EQ(std::string(rest, got.len), "tagged c");
}
#endif

TEST_F(TaggedSource, ReadfromNamesTheSenderOfATaggedMessageAndOfAPeek) {
  char buffer[16] = {};
  tsend_acked(c_, "who", 3, b_.addr, 3);
  fi_cq_tagged_entry entry{};
  fi_addr_t source = 777;
  ASSERT_EQ(trecvmsg(b_, nullptr, 0, 3, 0, buffer, FI_PEEK), 0);
  ASSERT_EQ(wait_for_completion(b_.rx_cq, &entry, kWait, &source), 1);
  EXPECT_EQ(source, c_.addr);
  ASSERT_EQ(fi_trecv(b_.ep, buffer, sizeof(buffer), nullptr, FI_ADDR_UNSPEC, 3, 0, buffer), 0);
  source = 777;
  ASSERT_EQ(wait_for_completion(b_.rx_cq, &entry, kWait, &source), 1);
  EXPECT_EQ(source, c_.addr);
  EXPECT_EQ(entry.tag, 3u);
}

}  // namespace
}  // namespace ofi_dpdk::test
