// fi_tagged(3) through stock libfabric on one net_ring port
// (tagged_fixture.h): FI_PEEK, FI_CLAIM and FI_DISCARD, and selective
// completion of receives and peeks.
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
  ASSERT_EQ(trecvmsg(b_, peek_buffer.data(), peek_buffer.size(), 0xA0, 0xF, &peek_buffer, FI_PEEK),
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
  ASSERT_EQ(
      fi_trecv(b_.ep, buffer.data(), buffer.size(), nullptr, FI_ADDR_UNSPEC, 0xAB, 0, &buffer), 0);
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
  ASSERT_EQ(
      fi_trecv(b_.ep, buffer, sizeof(buffer), nullptr, FI_ADDR_UNSPEC, 0, ~uint64_t{0}, buffer), 0);
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

}  // namespace
}  // namespace ofi_dpdk::test
