// fi_tagged(3) through stock libfabric on one net_ring port (it loops back
// to itself): every call, matching by tag and ignore mask in posting order,
// unexpected messages in arrival order, directed receives, tagged and
// untagged kept apart, FI_PEEK / FI_CLAIM / FI_DISCARD, the fields of
// FI_CQ_FORMAT_TAGGED, a 1 MiB message, and bad input.  Only public fi_*
// calls are used.
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

#include "test/support/messaging.h"

namespace ofi_dpdk::test {
namespace {

using Clock = std::chrono::steady_clock;

constexpr uint8_t kFill = 0xEE;
constexpr double kWait = 5;  // seconds any single completion may take

std::vector<uint8_t> pattern(size_t length, unsigned seed) {
  std::vector<uint8_t> bytes(length);
  for (size_t i = 0; i < length; ++i)
    bytes[i] = static_cast<uint8_t>(i * 31 + seed * 7 + (i >> 11) + 3);
  return bytes;
}

bool all_fill(const uint8_t* bytes, size_t length) {
  return std::all_of(bytes, bytes + length, [](uint8_t b) { return b == kFill; });
}

// Polls `cq` (FI_CQ_FORMAT_TAGGED) for `seconds`; true if nothing came.
bool quiet(fid_cq* cq, double seconds = 0.2) {
  fi_cq_tagged_entry entry;
  return wait_for_completion(cq, &entry, seconds) == -FI_EAGAIN;
}

fi_cq_err_entry read_error(fid_cq* cq) {
  fi_cq_err_entry error{};
  EXPECT_EQ(fi_cq_readerr(cq, &error, 0), 1);
  return error;
}

// Calls `op` until it stops returning -FI_EAGAIN, driving progress on `cq`.
template <typename Op>
ssize_t retry(fid_cq* cq, Op op) {
  const auto deadline = Clock::now() + std::chrono::duration<double>(kWait);
  ssize_t ret;
  while ((ret = op()) == -FI_EAGAIN && Clock::now() < deadline) {
    fi_cq_tagged_entry unused;
    fi_cq_read(cq, &unused, 0);
  }
  return ret;
}

fi_cq_tagged_entry expect_completion(fid_cq* cq, void* context, uint64_t flags) {
  fi_cq_tagged_entry entry{};
  const ssize_t ret = wait_for_completion(cq, &entry, kWait);
  EXPECT_EQ(ret, 1) << fi_strerror(static_cast<int>(-ret));
  if (ret == -FI_EAVAIL) {
    const fi_cq_err_entry error = read_error(cq);
    ADD_FAILURE() << "error completion: " << fi_strerror(error.err);
  }
  if (ret != 1) return {};
  EXPECT_EQ(entry.op_context, context);
  EXPECT_EQ(entry.flags & flags, flags);
  return entry;
}

// Two endpoints a and b (c for directed tests) with FI_CQ_FORMAT_TAGGED CQs.
class Tagged : public ::testing::Test {
 protected:
  virtual uint64_t caps() const { return FI_TAGGED | FI_MSG; }

  void SetUp() override {
    ASSERT_EQ(domain_.open(nullptr, caps()), 0) << "no dpdk provider offering FI_TAGGED";
    ASSERT_TRUE(domain_.info->caps & FI_TAGGED);
    ASSERT_EQ(a_.open(domain_.domain, domain_.av, domain_.info, FI_CQ_FORMAT_TAGGED), 0);
    ASSERT_EQ(b_.open(domain_.domain, domain_.av, domain_.info, FI_CQ_FORMAT_TAGGED), 0);
  }
  void TearDown() override {
    a_.close();
    b_.close();
    domain_.close();
  }

  size_t inject_size() const { return domain_.info->tx_attr->inject_size; }

  ssize_t tsend(TestEndpoint& from, const void* buf, size_t len, fi_addr_t to, uint64_t tag,
                void* context) {
    return retry(from.tx_cq,
                 [&] { return fi_tsend(from.ep, buf, len, nullptr, to, tag, context); });
  }
  // Sends and waits for the send's completion: the message is then whole at
  // the receiver's transport (unexpected unless a receive took it).
  void tsend_acked(TestEndpoint& from, const void* buf, size_t len, fi_addr_t to, uint64_t tag) {
    int context = 0;
    ASSERT_EQ(tsend(from, buf, len, to, tag, &context), 0);
    expect_completion(from.tx_cq, &context, FI_TAGGED | FI_SEND);
  }
  // fi_trecvmsg with one buffer (or none) and `flags`.
  ssize_t trecvmsg(TestEndpoint& at, void* buf, size_t len, uint64_t tag, uint64_t ignore,
                   void* context, uint64_t flags, fi_addr_t source = FI_ADDR_UNSPEC) {
    iovec iov{buf, len};
    fi_msg_tagged msg{};
    msg.msg_iov = buf != nullptr ? &iov : nullptr;
    msg.iov_count = buf != nullptr ? 1 : 0;
    msg.addr = source;
    msg.tag = tag;
    msg.ignore = ignore;
    msg.context = context;
    return fi_trecvmsg(at.ep, &msg, flags);
  }

  TestDomain domain_;
  TestEndpoint a_, b_;
};

class TaggedThree : public Tagged {
 protected:
  void SetUp() override {
    Tagged::SetUp();
    if (HasFatalFailure()) return;
    ASSERT_EQ(c_.open(domain_.domain, domain_.av, domain_.info, FI_CQ_FORMAT_TAGGED), 0);
  }
  void TearDown() override {
    c_.close();
    Tagged::TearDown();
  }
  TestEndpoint c_;
};

class TaggedDirected : public TaggedThree {
 protected:
  uint64_t caps() const override { return FI_TAGGED | FI_MSG | FI_DIRECTED_RECV; }
};

class TaggedSource : public TaggedThree {
 protected:
  uint64_t caps() const override { return FI_TAGGED | FI_SOURCE; }
};

// ---- the calls ----

TEST_F(Tagged, TsendTrecvFillEveryTaggedCqField) {
  const std::vector<uint8_t> message = pattern(100, 1);
  std::vector<uint8_t> buffer(128, kFill);
  int send_context = 0;
  constexpr uint64_t kTag = 0x8000'0000'dead'beefull;
  ASSERT_EQ(fi_trecv(b_.ep, buffer.data(), buffer.size(), nullptr, FI_ADDR_UNSPEC, kTag, 0,
                     &buffer),
            0);
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
  ASSERT_EQ(retry(a_.tx_cq,
                  [&] {
                    return fi_tsendv(a_.ep, send_iov, nullptr, 3, b_.addr, 0x77, &send_context);
                  }),
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
  ASSERT_EQ(retry(a_.tx_cq, [&] { return fi_tinjectdata(a_.ep, payload, 7, 42, b_.addr, 6); }),
            0);
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
  ASSERT_EQ(retry(a_.tx_cq, [&] {
              return fi_tsendmsg(a_.ep, &msg, FI_INJECT | FI_INJECT_COMPLETE | FI_MORE);
            }),
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
  ASSERT_EQ(fi_trecv(b_.ep, receives[2].buffer, 32, nullptr, FI_ADDR_UNSPEC, 0x1F, 0xF,
                     &receives[2]),
            0);
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
    ASSERT_EQ(fi_trecv(b_.ep, buffer, sizeof(buffer), nullptr, FI_ADDR_UNSPEC, 0, ~uint64_t{0},
                       buffer),
              0);
    got = expect_completion(b_.rx_cq, buffer, FI_TAGGED | FI_RECV);
    EXPECT_EQ(got.tag, expected[i].first);
    EXPECT_EQ(std::string(buffer, got.len), expected[i].second);
  }
}

TEST_F(Tagged, TaggedAndUntaggedNeverMatchEachOther) {
  char untagged_rx[32] = {}, tagged_rx[32] = {};
  ASSERT_EQ(fi_recv(b_.ep, untagged_rx, sizeof(untagged_rx), nullptr, FI_ADDR_UNSPEC,
                    untagged_rx),
            0);
  // A tagged message (any tag would do) skips the untagged receive.
  ASSERT_EQ(tsend(a_, "tagged", 6, b_.addr, 0, nullptr), 0);
  EXPECT_TRUE(quiet(b_.rx_cq, 0.2)) << "a tagged message matched fi_recv";
  ASSERT_EQ(fi_trecv(b_.ep, tagged_rx, sizeof(tagged_rx), nullptr, FI_ADDR_UNSPEC, 0,
                     ~uint64_t{0}, tagged_rx),
            0);
  fi_cq_tagged_entry got = expect_completion(b_.rx_cq, tagged_rx, FI_TAGGED | FI_RECV);
  EXPECT_EQ(std::string(tagged_rx, got.len), "tagged");
  // An untagged message skips a tagged receive that ignores every bit.
  ASSERT_EQ(fi_trecv(b_.ep, tagged_rx, sizeof(tagged_rx), nullptr, FI_ADDR_UNSPEC, 0,
                     ~uint64_t{0}, tagged_rx),
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
  ASSERT_EQ(fi_trecv(b_.ep, tagged_from_a, sizeof(tagged_from_a), nullptr, a_.addr, 7, 0,
                     tagged_from_a),
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

// ---- FI_PEEK, FI_CLAIM, FI_DISCARD ----

TEST_F(Tagged, PeekReportsTheMessageWithoutTakingIt) {
  const std::vector<uint8_t> message = pattern(300, 3);
  int context = 0;
  ASSERT_EQ(retry(a_.tx_cq,
                  [&] {
                    return fi_tsenddata(a_.ep, message.data(), message.size(), nullptr, 0x5EED,
                                        b_.addr, 0xAB, &context);
                  }),
            0);
  expect_completion(a_.tx_cq, &context, FI_TAGGED | FI_SEND);
  std::vector<uint8_t> peek_buffer(64, kFill);
  ASSERT_EQ(trecvmsg(b_, peek_buffer.data(), peek_buffer.size(), 0xA0, 0xF, &peek_buffer,
                     FI_PEEK),
            0);
  const fi_cq_tagged_entry peeked = expect_completion(b_.rx_cq, &peek_buffer, FI_TAGGED | FI_RECV);
  EXPECT_EQ(peeked.len, message.size()) << "len: the message's size";
  EXPECT_EQ(peeked.buf, nullptr) << "buf NULL: no data returned";
  EXPECT_EQ(peeked.tag, 0xABu);
  EXPECT_TRUE(peeked.flags & FI_REMOTE_CQ_DATA);
  EXPECT_EQ(peeked.data, 0x5EEDu);
  EXPECT_TRUE(all_fill(peek_buffer.data(), peek_buffer.size())) << "a peek copied data";
  // Still there: a receive takes it.
  std::vector<uint8_t> buffer(512, kFill);
  ASSERT_EQ(fi_trecv(b_.ep, buffer.data(), buffer.size(), nullptr, FI_ADDR_UNSPEC, 0xAB, 0,
                     &buffer),
            0);
  const fi_cq_tagged_entry got = expect_completion(b_.rx_cq, &buffer, FI_TAGGED | FI_RECV);
  EXPECT_EQ(got.len, message.size());
  EXPECT_TRUE(std::equal(message.begin(), message.end(), buffer.begin()));
}

TEST_F(Tagged, PeekWithoutMatchIsAnENOMSGErrorCompletion) {
  tsend_acked(a_, "tag 1", 5, b_.addr, 1);
  // Untagged messages are invisible to a peek as well.
  ASSERT_EQ(retry(a_.tx_cq, [&] { return fi_send(a_.ep, "plain", 5, nullptr, b_.addr, nullptr); }),
            0);
  expect_completion(a_.tx_cq, nullptr, FI_MSG | FI_SEND);
  int context = 0;
  ASSERT_EQ(trecvmsg(b_, nullptr, 0, 2, 0, &context, FI_PEEK), 0);
  fi_cq_tagged_entry entry;
  ASSERT_EQ(wait_for_completion(b_.rx_cq, &entry, kWait), -FI_EAVAIL);
  const fi_cq_err_entry error = read_error(b_.rx_cq);
  EXPECT_EQ(error.err, FI_ENOMSG);
  EXPECT_EQ(error.op_context, &context);
  EXPECT_EQ(error.flags & (FI_TAGGED | FI_RECV), FI_TAGGED | FI_RECV);
  // The peek did not stay queued: the tag-2 message that comes next reaches
  // no receive.
  tsend_acked(a_, "tag 2", 5, b_.addr, 2);
  EXPECT_TRUE(quiet(b_.rx_cq, 0.1));
}

TEST_F(Tagged, PeekClaimReservesTheMessageForTheClaim) {
  tsend_acked(a_, "claimed", 7, b_.addr, 0x44);
  fi_context claim_context{};
  ASSERT_EQ(trecvmsg(b_, nullptr, 0, 0x44, 0, &claim_context, FI_PEEK | FI_CLAIM), 0);
  fi_cq_tagged_entry got = expect_completion(b_.rx_cq, &claim_context, FI_TAGGED | FI_RECV);
  EXPECT_EQ(got.len, 7u);
  EXPECT_EQ(got.tag, 0x44u);
  // Reserved: an ordinary receive and another peek do not see it.
  char other[32] = {};
  ASSERT_EQ(fi_trecv(b_.ep, other, sizeof(other), nullptr, FI_ADDR_UNSPEC, 0x44, 0, other), 0);
  EXPECT_TRUE(quiet(b_.rx_cq, 0.1)) << "a receive took a claimed message";
  int peek_context = 0;
  ASSERT_EQ(trecvmsg(b_, nullptr, 0, 0x44, 0, &peek_context, FI_PEEK), 0);
  fi_cq_tagged_entry entry;
  ASSERT_EQ(wait_for_completion(b_.rx_cq, &entry, kWait), -FI_EAVAIL);
  EXPECT_EQ(read_error(b_.rx_cq).err, FI_ENOMSG);
  // A claim with another context is refused; with the peek's it receives.
  char buffer[32] = {};
  fi_context stranger{};
  EXPECT_EQ(trecvmsg(b_, buffer, sizeof(buffer), 0, 0, &stranger, FI_CLAIM), -FI_EINVAL);
  ASSERT_EQ(trecvmsg(b_, buffer, sizeof(buffer), 0, 0, &claim_context, FI_CLAIM), 0);
  got = expect_completion(b_.rx_cq, &claim_context, FI_TAGGED | FI_RECV);
  EXPECT_EQ(std::string(buffer, got.len), "claimed");
  EXPECT_EQ(got.buf, buffer);
  EXPECT_EQ(got.tag, 0x44u);
  // Claimed once only.
  EXPECT_EQ(trecvmsg(b_, buffer, sizeof(buffer), 0, 0, &claim_context, FI_CLAIM), -FI_EINVAL);
  EXPECT_EQ(fi_cancel(&b_.ep->fid, other), 0);
}

TEST_F(Tagged, PeekDiscardAndClaimDiscardDropTheMessage) {
  tsend_acked(a_, "drop me", 7, b_.addr, 0x51);
  tsend_acked(a_, "claim and drop", 14, b_.addr, 0x52);
  tsend_acked(a_, "keep me", 7, b_.addr, 0x51);
  int context = 0;
  // PEEK|DISCARD: completes like a peek and the message is gone.
  char ignored[4];
  ASSERT_EQ(trecvmsg(b_, ignored, sizeof(ignored), 0x51, 0, &context, FI_PEEK | FI_DISCARD), 0);
  fi_cq_tagged_entry got = expect_completion(b_.rx_cq, &context, FI_TAGGED | FI_RECV);
  EXPECT_EQ(got.len, 7u);
  EXPECT_EQ(got.buf, nullptr);
  // CLAIM|DISCARD after PEEK|CLAIM: completes with no data.
  fi_context claim_context{};
  ASSERT_EQ(trecvmsg(b_, nullptr, 0, 0x52, 0, &claim_context, FI_PEEK | FI_CLAIM), 0);
  expect_completion(b_.rx_cq, &claim_context, FI_TAGGED | FI_RECV);
  ASSERT_EQ(trecvmsg(b_, nullptr, 0, 0x52, 0, &claim_context, FI_CLAIM | FI_DISCARD), 0);
  got = expect_completion(b_.rx_cq, &claim_context, FI_TAGGED | FI_RECV);
  EXPECT_EQ(got.len, 0u);
  EXPECT_EQ(got.buf, nullptr);
  EXPECT_EQ(trecvmsg(b_, ignored, sizeof(ignored), 0, 0, &claim_context, FI_CLAIM), -FI_EINVAL);
  // What is left is "keep me".
  char buffer[32] = {};
  ASSERT_EQ(fi_trecv(b_.ep, buffer, sizeof(buffer), nullptr, FI_ADDR_UNSPEC, 0, ~uint64_t{0},
                     buffer),
            0);
  got = expect_completion(b_.rx_cq, buffer, FI_TAGGED | FI_RECV);
  EXPECT_EQ(std::string(buffer, got.len), "keep me");
  EXPECT_EQ(trecvmsg(b_, nullptr, 0, 0, ~uint64_t{0}, &context, FI_PEEK), 0);
  fi_cq_tagged_entry entry;
  ASSERT_EQ(wait_for_completion(b_.rx_cq, &entry, kWait), -FI_EAVAIL);
  EXPECT_EQ(read_error(b_.rx_cq).err, FI_ENOMSG);
}

// A peek's completion is its only result: written even on a selective CQ
// without FI_COMPLETION.  An ordinary trecv there completes only when asked.
TEST_F(Tagged, SelectiveCompletionAppliesToReceivesNotToPeeks) {
  TestEndpoint s;
  ASSERT_EQ(s.open(domain_.domain, domain_.av, domain_.info, FI_CQ_FORMAT_TAGGED,
                   FI_SELECTIVE_COMPLETION),
            0);
  int context = 0;
  ASSERT_EQ(retry(s.tx_cq, [&] { return fi_tsend(s.ep, "q", 1, nullptr, s.addr, 8, &context); }),
            0);
  EXPECT_TRUE(quiet(s.tx_cq, 0.2)) << "fi_tsend completed without FI_COMPLETION";
  ASSERT_EQ(trecvmsg(s, nullptr, 0, 8, 0, &context, FI_PEEK), 0);
  fi_cq_tagged_entry got = expect_completion(s.rx_cq, &context, FI_TAGGED | FI_RECV);
  EXPECT_EQ(got.len, 1u);
  char buffer[8] = {};
  ASSERT_EQ(fi_trecv(s.ep, buffer, sizeof(buffer), nullptr, FI_ADDR_UNSPEC, 8, 0, buffer), 0);
  EXPECT_TRUE(quiet(s.rx_cq, 0.1));
  EXPECT_EQ(buffer[0], 'q');
  ASSERT_EQ(retry(s.tx_cq, [&] { return fi_tsend(s.ep, "r", 1, nullptr, s.addr, 8, &context); }),
            0);
  ASSERT_EQ(trecvmsg(s, buffer, sizeof(buffer), 8, 0, buffer, FI_COMPLETION), 0);
  got = expect_completion(s.rx_cq, buffer, FI_TAGGED | FI_RECV);
  EXPECT_EQ(buffer[0], 'r');
  s.close();
}

// ---- large messages ----

TEST_F(Tagged, OneMebibyteMessagePostedAndUnexpected) {
  constexpr size_t kSize = size_t{1} << 20;
  const std::vector<uint8_t> message = pattern(kSize, 4);
  std::vector<uint8_t> buffer(kSize + 64, kFill);
  int context = 0;
  // Posted first.
  ASSERT_EQ(fi_trecv(b_.ep, buffer.data(), kSize, nullptr, FI_ADDR_UNSPEC, 0xB16, 0, &buffer), 0);
  ASSERT_EQ(tsend(a_, message.data(), kSize, b_.addr, 0xB16, &context), 0);
  expect_completion(a_.tx_cq, &context, FI_TAGGED | FI_SEND);
  fi_cq_tagged_entry got = expect_completion(b_.rx_cq, &buffer, FI_TAGGED | FI_RECV);
  EXPECT_EQ(got.len, kSize);
  EXPECT_TRUE(std::equal(message.begin(), message.end(), buffer.begin()));
  EXPECT_TRUE(all_fill(buffer.data() + kSize, 64));
  // Unexpected, then peeked, claimed and received.  A message this large
  // goes by rendezvous (FI_DPDK_RENDEZVOUS_BYTES): its send completes only
  // once a receive took it, so the peek is retried until it arrives.
  std::fill(buffer.begin(), buffer.end(), kFill);
  ASSERT_EQ(tsend(a_, message.data(), kSize, b_.addr, 0xB17, &context), 0);
  fi_context claim_context{};
  const auto deadline = Clock::now() + std::chrono::duration<double>(kWait);
  for (;;) {
    ASSERT_EQ(trecvmsg(b_, nullptr, 0, 0xB17, 0, &claim_context, FI_PEEK | FI_CLAIM), 0);
    fi_cq_tagged_entry entry;
    const ssize_t ret = wait_for_completion(b_.rx_cq, &entry, kWait);
    if (ret == 1) {
      EXPECT_EQ(entry.op_context, &claim_context);
      EXPECT_EQ(entry.len, kSize);
      break;
    }
    ASSERT_EQ(ret, -FI_EAVAIL);
    ASSERT_EQ(read_error(b_.rx_cq).err, FI_ENOMSG);
    ASSERT_LT(Clock::now(), deadline) << "the message never arrived";
    fi_cq_tagged_entry unused;
    fi_cq_read(a_.tx_cq, &unused, 0);  // the sender's progress
  }
  EXPECT_TRUE(quiet(a_.tx_cq)) << "the send completed before any receive took it";
  ASSERT_EQ(trecvmsg(b_, buffer.data(), kSize, 0, 0, &claim_context, FI_CLAIM), 0);
  got = expect_completion(b_.rx_cq, &claim_context, FI_TAGGED | FI_RECV);
  EXPECT_EQ(got.len, kSize);
  EXPECT_EQ(got.tag, 0xB17u);
  EXPECT_TRUE(std::equal(message.begin(), message.end(), buffer.begin()));
  EXPECT_TRUE(all_fill(buffer.data() + kSize, 64));
  expect_completion(a_.tx_cq, &context, FI_TAGGED | FI_SEND);
}

// fi_dpdk(7): FI_DPDK_RENDEZVOUS_BYTES defaults to 64 KiB.  A message one
// byte shorter sent before its receive is sent at once and buffered, so its
// send completes; a 64 KiB one waits for the receive that pulls it.
TEST_F(Tagged, RendezvousStartsAt64KiBByDefault) {
  if (std::getenv("FI_DPDK_RENDEZVOUS_BYTES") != nullptr) GTEST_SKIP() << "threshold set";
  constexpr size_t kThreshold = 64 * 1024;
  const std::vector<uint8_t> message = pattern(kThreshold, 5);
  std::vector<uint8_t> buffer(kThreshold, kFill);
  int eager_context = 0, rendezvous_context = 0;
  ASSERT_EQ(tsend(a_, message.data(), kThreshold - 1, b_.addr, 0xC1, &eager_context), 0);
  expect_completion(a_.tx_cq, &eager_context, FI_TAGGED | FI_SEND);
  ASSERT_EQ(tsend(a_, message.data(), kThreshold, b_.addr, 0xC2, &rendezvous_context), 0);
  EXPECT_TRUE(quiet(a_.tx_cq, 0.3)) << "a 64 KiB send completed before any receive took it";
  ASSERT_EQ(fi_trecv(b_.ep, buffer.data(), kThreshold, nullptr, FI_ADDR_UNSPEC, 0xC2, 0,
                     &rendezvous_context),
            0);
  fi_cq_tagged_entry got = expect_completion(b_.rx_cq, &rendezvous_context, FI_TAGGED | FI_RECV);
  EXPECT_EQ(got.len, kThreshold);
  EXPECT_TRUE(buffer == message);
  expect_completion(a_.tx_cq, &rendezvous_context, FI_TAGGED | FI_SEND);
  // The eager one was waiting in the unexpected buffer all along.
  std::fill(buffer.begin(), buffer.end(), kFill);
  ASSERT_EQ(fi_trecv(b_.ep, buffer.data(), kThreshold, nullptr, FI_ADDR_UNSPEC, 0xC1, 0,
                     &eager_context),
            0);
  got = expect_completion(b_.rx_cq, &eager_context, FI_TAGGED | FI_RECV);
  EXPECT_EQ(got.len, kThreshold - 1);
  EXPECT_TRUE(std::equal(message.begin(), message.end() - 1, buffer.begin()));
}

TEST_F(Tagged, AMessageLargerThanTheUnexpectedBudgetDoesNotHoldBackLaterOnes) {
  // 80 MiB, above the 64 MiB FI_DPDK_UNEXPECTED_BYTES, sent before any
  // receive: it goes by rendezvous, so the receiver holds a record of it
  // and a small message sent after it is taken and received meanwhile.
  // Buffered whole, it would close the receive window on both.
  constexpr size_t kBig = size_t{80} << 20;
  const std::vector<uint8_t> big = pattern(kBig, 9);
  const char small[] = "after the big one";
  int big_context = 0, small_context = 0;
  ASSERT_EQ(tsend(a_, big.data(), kBig, b_.addr, 1, &big_context), 0);
  ASSERT_EQ(tsend(a_, small, sizeof(small), b_.addr, 2, &small_context), 0);
  expect_completion(a_.tx_cq, &small_context, FI_TAGGED | FI_SEND);
  char got_small[sizeof(small)] = {};
  ASSERT_EQ(fi_trecv(b_.ep, got_small, sizeof(got_small), nullptr, FI_ADDR_UNSPEC, 2, 0,
                     &small_context),
            0);
  fi_cq_tagged_entry got = expect_completion(b_.rx_cq, &small_context, FI_TAGGED | FI_RECV);
  EXPECT_EQ(got.len, sizeof(small));
  EXPECT_STREQ(got_small, small);
  EXPECT_TRUE(quiet(a_.tx_cq)) << "the big send completed before a receive took it";

  std::vector<uint8_t> buffer(kBig, kFill);
  ASSERT_EQ(fi_trecv(b_.ep, buffer.data(), kBig, nullptr, FI_ADDR_UNSPEC, 1, 0, &big_context), 0);
  got = expect_completion(b_.rx_cq, &big_context, FI_TAGGED | FI_RECV);
  EXPECT_EQ(got.len, kBig);
  EXPECT_TRUE(buffer == big);
  expect_completion(a_.tx_cq, &big_context, FI_TAGGED | FI_SEND);
}

TEST_F(Tagged, MessageLongerThanTheBufferIsETRUNCWithItsTag) {
  const std::vector<uint8_t> message = pattern(40, 5);
  std::vector<uint8_t> buffer(16 + 16, kFill);
  ASSERT_EQ(fi_trecv(b_.ep, buffer.data(), 16, nullptr, FI_ADDR_UNSPEC, 0x99, 0, &buffer), 0);
  ASSERT_EQ(tsend(a_, message.data(), message.size(), b_.addr, 0x99, nullptr), 0);
  fi_cq_tagged_entry entry;
  ASSERT_EQ(wait_for_completion(b_.rx_cq, &entry, kWait), -FI_EAVAIL);
  const fi_cq_err_entry error = read_error(b_.rx_cq);
  EXPECT_EQ(error.err, FI_ETRUNC);
  EXPECT_EQ(error.len, 16u);
  EXPECT_EQ(error.olen, 24u);
  EXPECT_EQ(error.tag, 0x99u);
  EXPECT_EQ(error.flags & (FI_TAGGED | FI_RECV), FI_TAGGED | FI_RECV);
  EXPECT_TRUE(all_fill(buffer.data() + 16, 16));
}

// ---- bad input ----

TEST_F(Tagged, BadFlagsAreEBADFLAGS) {
  char buffer[8] = {};
  iovec iov{buffer, sizeof(buffer)};
  fi_msg_tagged msg{};
  msg.msg_iov = &iov;
  msg.iov_count = 1;
  msg.addr = b_.addr;
  fi_context context{};
  msg.context = &context;
  for (uint64_t flags : {uint64_t{FI_PEEK}, uint64_t{FI_CLAIM}, uint64_t{FI_FENCE}}) {
    EXPECT_EQ(fi_tsendmsg(a_.ep, &msg, flags), -FI_EBADFLAGS) << std::hex << flags;
  }
  msg.addr = FI_ADDR_UNSPEC;
  // (FI_MULTI_RECV is refused in 1.x; 2.x grants FI_TAGGED_MULTI_RECV.)
  for (uint64_t flags : {uint64_t{FI_DISCARD}, uint64_t{FI_PEEK | FI_CLAIM | FI_DISCARD},
                         uint64_t{FI_INJECT}, uint64_t{FI_MULTI_RECV | FI_PEEK}}) {
    EXPECT_EQ(fi_trecvmsg(b_.ep, &msg, flags), -FI_EBADFLAGS) << std::hex << flags;
  }
  EXPECT_TRUE(quiet(a_.tx_cq, 0.05));
  EXPECT_TRUE(quiet(b_.rx_cq, 0.05));
}

TEST_F(Tagged, BadArgumentsAreEINVAL) {
  char buffer[8] = {};
  int context = 0;
  EXPECT_EQ(fi_tsendmsg(a_.ep, nullptr, 0), -FI_EINVAL);
  EXPECT_EQ(fi_trecvmsg(b_.ep, nullptr, 0), -FI_EINVAL);
  // A NULL buffer with a length.
  EXPECT_EQ(fi_tsend(a_.ep, nullptr, 8, nullptr, b_.addr, 1, &context), -FI_EINVAL);
  EXPECT_EQ(fi_trecv(b_.ep, nullptr, 8, nullptr, FI_ADDR_UNSPEC, 1, 0, &context), -FI_EINVAL);
  // Too many iovs.
  iovec iov[64];
  for (iovec& v : iov) v = {buffer, 1};
  EXPECT_EQ(fi_tsendv(a_.ep, iov, nullptr, 64, b_.addr, 1, &context), -FI_EINVAL);
  EXPECT_EQ(fi_trecvv(b_.ep, iov, nullptr, 64, FI_ADDR_UNSPEC, 1, 0, &context), -FI_EINVAL);
  // An fi_addr not in the AV.
  EXPECT_EQ(fi_tsend(a_.ep, buffer, 8, nullptr, 4242, 1, &context), -FI_EINVAL);
  EXPECT_EQ(fi_tinject(a_.ep, buffer, 8, 4242, 1), -FI_EINVAL);
  // FI_CLAIM without a context, or with one that claimed nothing.
  EXPECT_EQ(trecvmsg(b_, buffer, sizeof(buffer), 0, 0, nullptr, FI_PEEK | FI_CLAIM), -FI_EINVAL);
  EXPECT_EQ(trecvmsg(b_, buffer, sizeof(buffer), 0, 0, nullptr, FI_CLAIM), -FI_EINVAL);
  EXPECT_EQ(trecvmsg(b_, buffer, sizeof(buffer), 0, 0, &context, FI_CLAIM), -FI_EINVAL);
  EXPECT_EQ(trecvmsg(b_, buffer, sizeof(buffer), 0, 0, &context, FI_CLAIM | FI_DISCARD),
            -FI_EINVAL);
  EXPECT_TRUE(quiet(a_.tx_cq, 0.05));
  EXPECT_TRUE(quiet(b_.rx_cq, 0.05));
  // The endpoints still work.
  char in[8] = {};
  ASSERT_EQ(fi_trecv(b_.ep, in, sizeof(in), nullptr, FI_ADDR_UNSPEC, 1, 0, in), 0);
  ASSERT_EQ(tsend(a_, "ok", 2, b_.addr, 1, nullptr), 0);
  const fi_cq_tagged_entry got = expect_completion(b_.rx_cq, in, FI_TAGGED | FI_RECV);
  EXPECT_EQ(std::string(in, got.len), "ok");
}

TEST_F(Tagged, CallsBeforeEnableFail) {
  fid_ep* ep = nullptr;
  ASSERT_EQ(fi_endpoint(domain_.domain, domain_.info, &ep, nullptr), 0);
  char buffer[8] = {};
  fi_context context{};
  iovec iov{buffer, sizeof(buffer)};
  fi_msg_tagged msg{};
  msg.msg_iov = &iov;
  msg.iov_count = 1;
  msg.addr = FI_ADDR_UNSPEC;
  msg.context = &context;
  const ssize_t results[] = {
      fi_tsend(ep, buffer, 4, nullptr, b_.addr, 1, nullptr),
      fi_tinject(ep, buffer, 4, b_.addr, 1),
      fi_trecv(ep, buffer, sizeof(buffer), nullptr, FI_ADDR_UNSPEC, 1, 0, nullptr),
      fi_trecvmsg(ep, &msg, FI_PEEK),
      fi_trecvmsg(ep, &msg, FI_CLAIM),
  };
  for (ssize_t ret : results) {
    EXPECT_LT(ret, 0);
    EXPECT_NE(ret, -FI_EAGAIN) << "retrying would never succeed";
  }
  EXPECT_EQ(fi_close(&ep->fid), 0);
}

// tx_attr->size sends outstanding: -FI_EAGAIN, never a crash, and the
// sends all complete once progress runs.
TEST_F(Tagged, FullSendQueueIsEAGAIN) {
  const size_t depth = domain_.info->tx_attr->size;
  std::vector<uint8_t> byte(1, 7);
  size_t accepted = 0;
  ssize_t ret = 0;
  // Nothing reads a_'s CQ in between, so its window fills with unacked
  // sends; b never posts, so they are unexpected there.
  for (size_t i = 0; i < depth + 64; ++i) {
    ret = fi_tsend(a_.ep, byte.data(), 1, nullptr, b_.addr, i, nullptr);
    if (ret != 0) break;
    ++accepted;
  }
  EXPECT_EQ(ret, -FI_EAGAIN);
  EXPECT_EQ(accepted, depth);
  fi_cq_tagged_entry entries[64];
  size_t completed = 0;
  const auto deadline = Clock::now() + std::chrono::seconds(10);
  while (completed < accepted && Clock::now() < deadline) {
    const ssize_t n = fi_cq_read(a_.tx_cq, entries, 64);
    if (n > 0) completed += static_cast<size_t>(n);
  }
  EXPECT_EQ(completed, accepted);
}

}  // namespace
}  // namespace ofi_dpdk::test
