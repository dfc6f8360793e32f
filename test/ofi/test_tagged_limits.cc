// fi_tagged(3) through stock libfabric on one net_ring port
// (tagged_fixture.h): a 1 MiB message, rendezvous, the unexpected budget,
// truncation with the tag, and bad input.
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
  ASSERT_EQ(
      fi_trecv(b_.ep, buffer.data(), kThreshold, nullptr, FI_ADDR_UNSPEC, 0xC1, 0, &eager_context),
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
  ASSERT_EQ(
      fi_trecv(b_.ep, got_small, sizeof(got_small), nullptr, FI_ADDR_UNSPEC, 2, 0, &small_context),
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
