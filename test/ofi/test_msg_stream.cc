// fi_msg(3) through stock libfabric on one net_ring port (msg_fixture.h):
// many messages in a row, paced and in bursts, each arriving once and in
// order; and the round trips the sender's transport measured meanwhile,
// through the stats ops' ep_rtt (include/fi_dpdk.h).
#include <fi_dpdk.h>
#include <gtest/gtest.h>
#include <rdma/fi_atomic.h>
#include <rdma/fi_rma.h>
#include <rdma/fi_tagged.h>
#include <sys/mman.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "test/ofi/msg_fixture.h"
#include "test/support/messaging.h"

namespace ofi_dpdk::test {
namespace {

// ---- many messages ----

// Sends kMessages numbered messages from a to b while b keeps kPosted
// receives posted, reposting each one as it completes.  `window` bounds the
// messages sent but not yet received (0: none, send until -FI_EAGAIN).
// Expects every message exactly once, in order.
void run_stream(TestEndpoint& a, TestEndpoint& b, uint32_t window) {
  constexpr uint32_t kMessages = 5000;
  constexpr size_t kPosted = 64, kSize = 64;
  struct Slot {
    uint8_t data[kSize];
  };
  std::vector<Slot> slots(kPosted);
  for (Slot& slot : slots)
    ASSERT_EQ(fi_recv(b.ep, slot.data, kSize, nullptr, FI_ADDR_UNSPEC, &slot), 0);
  // Every message up front: a send buffer must stay valid until its send
  // completes, and static storage outlives even an early return.
  static const std::vector<std::vector<uint8_t>> messages = [] {
    std::vector<std::vector<uint8_t>> all(kMessages);
    for (uint32_t seq = 0; seq < kMessages; ++seq) {
      all[seq] = pattern(kSize, seq);
      std::memcpy(all[seq].data(), &seq, sizeof(seq));
    }
    return all;
  }();

  uint32_t sent = 0, received = 0, send_completions = 0;
  const auto deadline = Clock::now() + std::chrono::seconds(40);
  while (received < kMessages && Clock::now() < deadline) {
    while (sent < kMessages && (window == 0 || sent - received < window)) {
      const ssize_t ret = fi_send(a.ep, messages[sent].data(), kSize, nullptr, b.addr, nullptr);
      if (ret == -FI_EAGAIN) break;
      ASSERT_EQ(ret, 0) << "send " << sent << ": " << fi_strerror(static_cast<int>(-ret));
      ++sent;
    }
    fi_cq_data_entry entries[kPosted];
    ssize_t ret;
    while ((ret = fi_cq_read(a.tx_cq, entries, kPosted)) > 0) send_completions += ret;
    ASSERT_EQ(ret, -FI_EAGAIN) << "TX CQ: " << fi_strerror(static_cast<int>(-ret));
    ret = fi_cq_read(b.rx_cq, entries, kPosted);
    if (ret == -FI_EAGAIN) continue;
    if (ret == -FI_EAVAIL) {
      const fi_cq_err_entry error = read_error(b.rx_cq);
      FAIL() << "RX error after " << received << " messages: " << fi_strerror(error.err);
    }
    ASSERT_GT(ret, 0);
    for (ssize_t i = 0; i < ret; ++i) {
      Slot* slot = static_cast<Slot*>(entries[i].op_context);
      ASSERT_EQ(entries[i].len, kSize);
      uint32_t seq;
      std::memcpy(&seq, slot->data, sizeof(seq));
      ASSERT_EQ(seq, received) << "message lost, duplicated or out of order";
      ASSERT_EQ(first_difference(slot->data, messages[seq].data(), kSize), -1);
      ++received;
      ASSERT_EQ(fi_recv(b.ep, slot->data, kSize, nullptr, FI_ADDR_UNSPEC, slot), 0);
    }
  }
  EXPECT_EQ(sent, kMessages);
  EXPECT_EQ(received, kMessages) << "lost messages (or too slow)";
  // Every send completes, and b has nothing extra.
  fi_cq_data_entry entry;
  while (send_completions < kMessages && wait_for_completion(a.tx_cq, &entry, 1) == 1)
    ++send_completions;
  EXPECT_EQ(send_completions, kMessages);
  EXPECT_TRUE(stays_empty(b.rx_cq, 0.1));
  for (Slot& slot : slots) EXPECT_EQ(fi_cancel(&b.ep->fid, &slot), 0);
}

// The application keeps no more messages in flight than receives posted.
TEST_F(Messaging, FiveThousandMessagesArriveInOrderPaced) {
  run_stream(a_, b_, 64);
}

// The sender's transport measured the stream's round trips, and ep_rtt
// tells them in order (p50 <= p90 <= p99 <= largest); the receiver, which
// sent nothing of its own, measured none; a fid that is no endpoint is
// refused.
TEST_F(Messaging, TheSendersRoundTripsAreMeasured) {
  run_stream(a_, b_, 64);
  fi_dpdk_ops_stats* stats = nullptr;
  ASSERT_EQ(fi_open_ops(&domain_.domain->fid, FI_DPDK_STATS_OPS_NAME, 0,
                        reinterpret_cast<void**>(&stats), nullptr),
            0);
  ASSERT_GE(stats->size, offsetof(fi_dpdk_ops_stats, ep_rtt) + sizeof(stats->ep_rtt));
  fi_dpdk_ep_rtt sender{}, receiver{};
  ASSERT_EQ(stats->ep_rtt(a_.ep, &sender), 0);
  ASSERT_EQ(stats->ep_rtt(b_.ep, &receiver), 0);
  EXPECT_GT(sender.samples, 0u);
  EXPECT_GT(sender.p50_ns, 0u);
  EXPECT_LE(sender.p50_ns, sender.p90_ns);
  EXPECT_LE(sender.p90_ns, sender.p99_ns);
  EXPECT_LE(sender.p99_ns, sender.max_ns);
  EXPECT_EQ(receiver.samples, 0u);
  EXPECT_EQ(receiver.p99_ns, 0u);
  EXPECT_EQ(stats->ep_rtt(domain_.domain, &sender), -FI_EINVAL);
  EXPECT_EQ(stats->ep_rtt(a_.ep, nullptr), -FI_EINVAL);
}

// No pacing: the sender sends until -FI_EAGAIN.  With FI_RM_ENABLED on an
// RDM endpoint, fi_domain(3)'s resource management table says a message
// that finds no receive buffer is retried, never dropped.  (The provider
// before the reliable transport dropped past 256 unexpected messages.)
TEST_F(Messaging, FiveThousandMessagesArriveInOrderUnpacedBurst) {
  run_stream(a_, b_, 0);
}

}  // namespace
}  // namespace ofi_dpdk::test
