// FI_DELIVERY_COMPLETE (fi_msg(3), fi_tagged(3), fi_cq(3) "Completion event
// semantics") through stock libfabric on one net_ring port: such a send
// completes only once a receive at the peer has taken the message, not
// when the peer's transport acknowledged it.
#include <gtest/gtest.h>
#include <rdma/fi_tagged.h>

#include <chrono>
#include <cstdlib>
#include <deque>
#include <string>

#include "test/support/messaging.h"

namespace ofi_dpdk::test {
namespace {

using Clock = std::chrono::steady_clock;
constexpr double kWait = 5;
// A short peer timeout, so the dead-receiver case ends quickly; set before
// the provider reads its parameters (first fi_getinfo).
constexpr int kPeerTimeoutMs = 500;
const bool kTimeoutSet = setenv("FI_DPDK_PEER_TIMEOUT_MS", "500", 1) == 0;

template <typename Op>
ssize_t retry(fid_cq* cq, Op op) {
  const auto deadline = Clock::now() + std::chrono::duration<double>(kWait);
  ssize_t ret;
  while ((ret = op()) == -FI_EAGAIN && Clock::now() < deadline) {
    fi_cq_data_entry unused;
    fi_cq_read(cq, &unused, 0);
  }
  return ret;
}

class DeliveryComplete : public ::testing::Test {
 protected:
  virtual uint64_t caps() const { return FI_MSG | FI_TAGGED; }
  void SetUp() override {
    ASSERT_TRUE(kTimeoutSet);
    ASSERT_EQ(domain_.open(nullptr, caps()), 0) << "no dpdk provider on the net_ring port";
    ASSERT_EQ(a_.open(domain_.domain, domain_.av, domain_.info), 0);
    ASSERT_EQ(b_.open(domain_.domain, domain_.av, domain_.info), 0);
  }
  void TearDown() override {
    a_.close();
    b_.close();
    domain_.close();
  }
  ssize_t sendmsg(const std::string& text, uint64_t flags, void* context, bool tagged = false) {
    // A send's buffer is the provider's until the send completes: kept
    // here, not in the caller's temporary.
    const std::string& kept = sent_.emplace_back(text);
    iovec iov{const_cast<char*>(kept.data()), kept.size()};
    if (tagged) {
      fi_msg_tagged msg{};
      msg.msg_iov = &iov;
      msg.iov_count = 1;
      msg.addr = b_.addr;
      msg.tag = 0x77;
      msg.context = context;
      return retry(a_.tx_cq, [&] { return fi_tsendmsg(a_.ep, &msg, flags); });
    }
    fi_msg msg{};
    msg.msg_iov = &iov;
    msg.iov_count = 1;
    msg.addr = b_.addr;
    msg.context = context;
    return retry(a_.tx_cq, [&] { return fi_sendmsg(a_.ep, &msg, flags); });
  }
  // Drives progress on the port for `seconds`; true if a's TX CQ stayed empty.
  bool no_send_completion(double seconds) { return stays_empty(a_.tx_cq, seconds); }
  void expect_send_completion(void* context) {
    fi_cq_data_entry entry{};
    const ssize_t ret = wait_for_completion(a_.tx_cq, &entry, kWait);
    ASSERT_EQ(ret, 1) << fi_strerror(static_cast<int>(-ret));
    EXPECT_EQ(entry.op_context, context);
    EXPECT_TRUE(entry.flags & FI_SEND);
  }
  std::deque<std::string> sent_;  // outlives the endpoints (closed in TearDown)
  TestDomain domain_;
  TestEndpoint a_, b_;
};

// The contrast: a plain send completes once acknowledged, with no receive.
TEST_F(DeliveryComplete, PlainSendCompletesWithoutAReceive) {
  int context = 0;
  ASSERT_EQ(sendmsg("plain", 0, &context), 0);
  expect_send_completion(&context);
}

TEST_F(DeliveryComplete, SendmsgCompletesOnlyAfterAReceiveTookIt) {
  int context = 0;
  ASSERT_EQ(sendmsg("delivered", FI_DELIVERY_COMPLETE, &context), 0);
  // Longer than the peer timeout: the receiver is alive (it answers the
  // sender's probes), only its application has not posted a receive.
  EXPECT_TRUE(no_send_completion(3.0 * kPeerTimeoutMs / 1000))
      << "completed before any receive was posted";
  char buffer[16] = {};
  ASSERT_EQ(fi_recv(b_.ep, buffer, sizeof(buffer), nullptr, FI_ADDR_UNSPEC, buffer), 0);
  fi_cq_data_entry entry{};
  ASSERT_EQ(wait_for_completion(b_.rx_cq, &entry, kWait), 1);
  EXPECT_EQ(std::string(buffer, entry.len), "delivered");
  expect_send_completion(&context);
}

TEST_F(DeliveryComplete, SendmsgToAPostedReceiveCompletes) {
  char buffer[16] = {};
  ASSERT_EQ(fi_recv(b_.ep, buffer, sizeof(buffer), nullptr, FI_ADDR_UNSPEC, buffer), 0);
  int context = 0;
  ASSERT_EQ(sendmsg("posted first", FI_DELIVERY_COMPLETE, &context), 0);
  expect_send_completion(&context);
  fi_cq_data_entry entry{};
  ASSERT_EQ(wait_for_completion(b_.rx_cq, &entry, kWait), 1);
  EXPECT_EQ(std::string(buffer, entry.len), "posted first");
}

TEST_F(DeliveryComplete, TsendmsgCompletesOnlyAfterATaggedReceiveTookIt) {
  int context = 0;
  ASSERT_EQ(sendmsg("tagged", FI_DELIVERY_COMPLETE, &context, /*tagged=*/true), 0);
  // An untagged receive never takes a tagged message.
  char wrong[16] = {};
  ASSERT_EQ(fi_recv(b_.ep, wrong, sizeof(wrong), nullptr, FI_ADDR_UNSPEC, wrong), 0);
  EXPECT_TRUE(no_send_completion(0.2));
  char buffer[16] = {};
  ASSERT_EQ(fi_trecv(b_.ep, buffer, sizeof(buffer), nullptr, FI_ADDR_UNSPEC, 0x77, 0, buffer), 0);
  fi_cq_tagged_entry entry{};
  ASSERT_EQ(wait_for_completion(b_.rx_cq, &entry, kWait), 1);
  EXPECT_EQ(entry.op_context, buffer);
  expect_send_completion(&context);
  ASSERT_EQ(fi_cancel(&b_.ep->fid, wrong), 0);
}

// fi_tagged(3) FI_MATCH_COMPLETE: no completion before a tagged receive
// matched the message, or the target discarded it.
TEST_F(DeliveryComplete, TsendmsgMatchCompleteWaitsForAMatch) {
  int context = 0;
  ASSERT_EQ(sendmsg("match me", FI_MATCH_COMPLETE, &context, /*tagged=*/true), 0);
  EXPECT_TRUE(no_send_completion(3.0 * kPeerTimeoutMs / 1000)) << "completed before a match";
  char buffer[16] = {};
  ASSERT_EQ(fi_trecv(b_.ep, buffer, sizeof(buffer), nullptr, FI_ADDR_UNSPEC, 0x77, 0, buffer), 0);
  fi_cq_tagged_entry entry{};
  ASSERT_EQ(wait_for_completion(b_.rx_cq, &entry, kWait), 1);
  EXPECT_EQ(std::string(buffer, entry.len), "match me");
  expect_send_completion(&context);
}

TEST_F(DeliveryComplete, TsendmsgMatchCompleteEndsWhenTheTargetDiscards) {
  int context = 0;
  ASSERT_EQ(sendmsg("unwanted", FI_MATCH_COMPLETE, &context, /*tagged=*/true), 0);
  EXPECT_TRUE(no_send_completion(0.2));
  fi_msg_tagged peek{};
  peek.addr = FI_ADDR_UNSPEC;
  peek.tag = 0x77;
  fi_context peek_context{};
  peek.context = &peek_context;
  // The message may still be on its way: peek until it is found.
  const auto deadline = Clock::now() + std::chrono::duration<double>(kWait);
  for (;;) {
    ASSERT_EQ(fi_trecvmsg(b_.ep, &peek, FI_PEEK | FI_DISCARD), 0);
    fi_cq_tagged_entry entry{};
    const ssize_t got = wait_for_completion(b_.rx_cq, &entry, kWait);
    if (got == 1) break;
    ASSERT_EQ(got, -FI_EAVAIL);
    fi_cq_err_entry error{};
    ASSERT_EQ(fi_cq_readerr(b_.rx_cq, &error, 0), 1);
    ASSERT_EQ(error.err, FI_ENOMSG);
    ASSERT_LT(Clock::now(), deadline);
  }
  expect_send_completion(&context);
}

// As a transmit operation flag, it applies to fi_send.
TEST_F(DeliveryComplete, TxOpFlagAppliesToFiSend) {
  uint64_t flags = FI_TRANSMIT | FI_DELIVERY_COMPLETE;
  ASSERT_EQ(fi_control(&a_.ep->fid, FI_SETOPSFLAG, &flags), 0);
  int context = 0;
  ASSERT_EQ(retry(a_.tx_cq, [&] { return fi_send(a_.ep, "op", 2, nullptr, b_.addr, &context); }),
            0);
  EXPECT_TRUE(no_send_completion(0.2));
  char buffer[4] = {};
  ASSERT_EQ(fi_recv(b_.ep, buffer, sizeof(buffer), nullptr, FI_ADDR_UNSPEC, buffer), 0);
  expect_send_completion(&context);
}

TEST(DeliveryCompleteGetinfo, TxOpFlagIsAccepted) {
  fi_info* hints = dpdk_hints();
  hints->tx_attr->op_flags = FI_DELIVERY_COMPLETE;
  fi_info* info = nullptr;
  ASSERT_EQ(fi_getinfo(FI_VERSION(1, 17), nullptr, nullptr, 0, hints, &info), 0);
  EXPECT_EQ(info->tx_attr->op_flags, uint64_t{FI_DELIVERY_COMPLETE});
  fi_freeinfo(info);
  fi_freeinfo(hints);
}

// The peer's transport took the message, then the receiving endpoint went
// away before any receive took it: the send ends in an error within the
// peer timeout (the receiver stops answering probes), not a hang.
TEST_F(DeliveryComplete, ReceiverClosedBeforeAReceiveFailsTheSend) {
  int context = 0;
  ASSERT_EQ(sendmsg("never taken", FI_DELIVERY_COMPLETE, &context), 0);
  EXPECT_TRUE(no_send_completion(0.1));
  b_.close();
  fi_cq_data_entry entry{};
  const auto start = Clock::now();
  ASSERT_EQ(wait_for_completion(a_.tx_cq, &entry, kWait), -FI_EAVAIL);
  EXPECT_LT(Clock::now() - start, std::chrono::milliseconds(4 * kPeerTimeoutMs));
  fi_cq_err_entry error{};
  ASSERT_EQ(fi_cq_readerr(a_.tx_cq, &error, 0), 1);
  EXPECT_EQ(error.op_context, &context);
  EXPECT_TRUE(error.err == FI_ETIMEDOUT || error.err == FI_EIO) << fi_strerror(error.err);
}

}  // namespace
}  // namespace ofi_dpdk::test
