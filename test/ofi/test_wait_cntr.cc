// fi_cntr(3) and the CQ wait objects of fi_cq(3) / fi_poll(3) through stock
// libfabric on one net_ring port: counters count completions with and
// without CQ entries and errors apart; FI_WAIT_FD descriptors become
// readable when something arrives while the application makes no call;
// fi_trywait, fi_cq_signal and FI_CQ_COND_THRESHOLD.
#include <gtest/gtest.h>
#include <poll.h>

#include <chrono>
#include <cstring>
#include <string>
#include <thread>

#include "test/support/messaging.h"

namespace ofi_dpdk::test {
namespace {

using Clock = std::chrono::steady_clock;

bool readable(int fd, int timeout_ms) {
  pollfd entry{fd, POLLIN, 0};
  return ::poll(&entry, 1, timeout_ms) == 1 && (entry.revents & POLLIN);
}

fid_cntr* open_counter(fid_domain* domain, fi_wait_obj wait = FI_WAIT_UNSPEC) {
  fi_cntr_attr attr{};
  attr.events = FI_CNTR_EVENTS_COMP;
  attr.wait_obj = wait;
  fid_cntr* cntr = nullptr;
  EXPECT_EQ(fi_cntr_open(domain, &attr, &cntr, nullptr), 0);
  return cntr;
}

class Counters : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_EQ(domain_.open(), 0) << "no dpdk provider on the net_ring port";
    ASSERT_EQ(receiver_.open(domain_.domain, domain_.av, domain_.info), 0);
  }
  void TearDown() override {
    sender_.close();
    receiver_.close();
    if (send_cntr_) {
      EXPECT_EQ(fi_close(&send_cntr_->fid), 0);
    }
    domain_.close();
  }

  // The sender, with its counter bound before fi_enable; its CQs are
  // selective when asked.
  void open_sender(uint64_t cq_flags) {
    send_cntr_ = open_counter(domain_.domain);
    ASSERT_EQ(sender_.open(domain_.domain, domain_.av, domain_.info, FI_CQ_FORMAT_DATA, cq_flags,
                           send_cntr_, FI_SEND),
              0);
  }

  TestDomain domain_;
  TestEndpoint sender_, receiver_;
  fid_cntr* send_cntr_ = nullptr;
};

TEST_F(Counters, AddSetAndTheirErrorValuesAreIndependent) {
  fid_cntr* c = open_counter(domain_.domain);
  EXPECT_EQ(fi_cntr_read(c), 0u);
  EXPECT_EQ(fi_cntr_add(c, 5), 0);
  EXPECT_EQ(fi_cntr_adderr(c, 2), 0);
  EXPECT_EQ(fi_cntr_read(c), 5u);
  EXPECT_EQ(fi_cntr_readerr(c), 2u);
  EXPECT_EQ(fi_cntr_set(c, 40), 0);
  EXPECT_EQ(fi_cntr_seterr(c, 0), 0);
  EXPECT_EQ(fi_cntr_read(c), 40u);
  EXPECT_EQ(fi_cntr_readerr(c), 0u);
  EXPECT_EQ(fi_close(&c->fid), 0);
}

TEST_F(Counters, SendCounterCountsCompletionsWithAndWithoutCqEntries) {
  open_sender(FI_SELECTIVE_COMPLETION);
  char buffers[3][16];
  for (auto& b : buffers)
    ASSERT_EQ(fi_recv(receiver_.ep, b, sizeof(b), nullptr, FI_ADDR_UNSPEC, b), 0);
  // No FI_COMPLETION (selective), one with, and an inject: all three count.
  ASSERT_EQ(fi_send(sender_.ep, "one", 3, nullptr, receiver_.addr, nullptr), 0);
  iovec iov{const_cast<char*>("two"), 3};
  fi_msg msg{};
  msg.msg_iov = &iov;
  msg.iov_count = 1;
  msg.addr = receiver_.addr;
  msg.context = &iov;
  ASSERT_EQ(fi_sendmsg(sender_.ep, &msg, FI_COMPLETION), 0);
  ASSERT_EQ(fi_inject(sender_.ep, "three", 5, receiver_.addr), 0);
  EXPECT_EQ(fi_cntr_wait(send_cntr_, 3, 5000), 0);
  EXPECT_EQ(fi_cntr_read(send_cntr_), 3u);
  EXPECT_EQ(fi_cntr_readerr(send_cntr_), 0u);
  // Exactly one CQ entry: the FI_COMPLETION one.
  fi_cq_data_entry entry{};
  ASSERT_EQ(wait_for_completion(sender_.tx_cq, &entry), 1);
  EXPECT_EQ(entry.op_context, &iov);
  EXPECT_TRUE(stays_empty(sender_.tx_cq));
  for (int i = 0; i < 3; ++i) ASSERT_EQ(wait_for_completion(receiver_.rx_cq, &entry), 1);
}

TEST_F(Counters, ReceiveErrorsCountInTheErrorValue) {
  // A receiver with a counter: a truncated receive is an error completion,
  // counted in the error value, not the value.
  fid_cntr* recv_cntr = open_counter(domain_.domain);
  TestEndpoint counted;
  ASSERT_EQ(counted.open(domain_.domain, domain_.av, domain_.info, FI_CQ_FORMAT_DATA, 0, recv_cntr,
                         FI_RECV),
            0);

  char small[4], fits[32];
  ASSERT_EQ(fi_recv(counted.ep, small, sizeof(small), nullptr, FI_ADDR_UNSPEC, small), 0);
  ASSERT_EQ(fi_recv(counted.ep, fits, sizeof(fits), nullptr, FI_ADDR_UNSPEC, fits), 0);
  ASSERT_EQ(fi_send(receiver_.ep, "too long for it", 15, nullptr, counted.addr, nullptr), 0);
  ASSERT_EQ(fi_send(receiver_.ep, "fits", 4, nullptr, counted.addr, nullptr), 0);
  // Waiting ends early when the error value changes.
  const int first = fi_cntr_wait(recv_cntr, 2, 5000);
  EXPECT_TRUE(first == -FI_EAVAIL || first == 0) << first;
  EXPECT_EQ(fi_cntr_wait(recv_cntr, 1, 5000), 0);
  EXPECT_EQ(fi_cntr_read(recv_cntr), 1u);
  EXPECT_EQ(fi_cntr_readerr(recv_cntr), 1u);
  fi_cq_data_entry entry{};
  EXPECT_EQ(wait_for_completion(counted.rx_cq, &entry), -FI_EAVAIL);
  counted.close();
  EXPECT_EQ(fi_close(&recv_cntr->fid), 0);
}

// fi_cntr(3) calls a wait on an FI_WAIT_NONE counter invalid; ours polls
// (progress included) as with FI_WAIT_YIELD, and times out the same way.
TEST_F(Counters, WaitTimesOutWithOrWithoutAWaitObject) {
  fid_cntr* c = open_counter(domain_.domain);
  const auto start = Clock::now();
  EXPECT_EQ(fi_cntr_wait(c, 1, 50), -FI_ETIMEDOUT);
  EXPECT_GE(Clock::now() - start, std::chrono::milliseconds(50));
  EXPECT_EQ(fi_close(&c->fid), 0);
  fid_cntr* none = open_counter(domain_.domain, FI_WAIT_NONE);
  const auto polled = Clock::now();
  EXPECT_EQ(fi_cntr_wait(none, 1, 50), -FI_ETIMEDOUT);
  EXPECT_GE(Clock::now() - polled, std::chrono::milliseconds(50));
  EXPECT_EQ(fi_cntr_add(none, 1), 0);
  EXPECT_EQ(fi_cntr_wait(none, 1, 50), 0);
  EXPECT_EQ(fi_close(&none->fid), 0);
}

TEST_F(Counters, BindingRulesFollowFiEndpoint) {
  fid_cntr* c = open_counter(domain_.domain);
  fid_ep* ep = nullptr;
  ASSERT_EQ(fi_endpoint(domain_.domain, domain_.info, &ep, nullptr), 0);
  EXPECT_EQ(fi_ep_bind(ep, &c->fid, 0), -FI_EBADFLAGS);
  EXPECT_EQ(fi_ep_bind(ep, &c->fid, FI_SEND | FI_TAGGED), -FI_EBADFLAGS);
  EXPECT_EQ(fi_ep_bind(ep, &c->fid, FI_SEND | FI_RECV), 0);
  EXPECT_EQ(fi_ep_bind(ep, &c->fid, FI_SEND), -FI_EALREADY);
  EXPECT_EQ(fi_close(&c->fid), -FI_EBUSY);
  EXPECT_EQ(fi_close(&ep->fid), 0);
  EXPECT_EQ(fi_close(&c->fid), 0);
}

TEST_F(Counters, WaitFdCounterSignalsWithoutCalls) {
  fid_cntr* c = open_counter(domain_.domain, FI_WAIT_FD);
  ASSERT_NE(c, nullptr);
  int fd = -1;
  ASSERT_EQ(fi_control(&c->fid, FI_GETWAIT, &fd), 0);
  ASSERT_GE(fd, 0);
  fi_wait_obj kind{};
  ASSERT_EQ(fi_control(&c->fid, FI_GETWAITOBJ, &kind), 0);
  EXPECT_EQ(kind, FI_WAIT_FD);
  EXPECT_FALSE(readable(fd, 0));
  fid* fids[] = {&c->fid};
  EXPECT_EQ(fi_trywait(domain_.fabric, fids, 1), 0);
  fi_cntr_add(c, 1);
  EXPECT_TRUE(readable(fd, 1000));
  EXPECT_EQ(fi_trywait(domain_.fabric, fids, 1), -FI_EAGAIN);
  EXPECT_EQ(fi_cntr_read(c), 1u);
  EXPECT_FALSE(readable(fd, 0));
  EXPECT_EQ(fi_close(&c->fid), 0);
}

// ---- CQ wait objects ------------------------------------------------------

class WaitFd : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_EQ(domain_.open(), 0) << "no dpdk provider on the net_ring port";
    ASSERT_EQ(sender_.open(domain_.domain, domain_.av, domain_.info), 0);
    fi_cq_attr attr{};
    attr.format = FI_CQ_FORMAT_DATA;
    attr.wait_obj = FI_WAIT_FD;
    attr.wait_cond = FI_CQ_COND_THRESHOLD;
    ASSERT_EQ(fi_cq_open(domain_.domain, &attr, &receiver_.rx_cq, nullptr), 0);
    attr.wait_cond = FI_CQ_COND_NONE;
    ASSERT_EQ(fi_cq_open(domain_.domain, &attr, &receiver_.tx_cq, nullptr), 0);
    ASSERT_EQ(fi_endpoint(domain_.domain, domain_.info, &receiver_.ep, nullptr), 0);
    ASSERT_EQ(fi_ep_bind(receiver_.ep, &domain_.av->fid, 0), 0);
    ASSERT_EQ(fi_ep_bind(receiver_.ep, &receiver_.tx_cq->fid, FI_TRANSMIT), 0);
    ASSERT_EQ(fi_ep_bind(receiver_.ep, &receiver_.rx_cq->fid, FI_RECV), 0);
    ASSERT_EQ(fi_enable(receiver_.ep), 0);
    receiver_.name_len = sizeof(receiver_.name);
    ASSERT_EQ(fi_getname(&receiver_.ep->fid, receiver_.name, &receiver_.name_len), 0);
    ASSERT_EQ(fi_av_insert(domain_.av, receiver_.name, 1, &receiver_.addr, 0, nullptr), 1);
    ASSERT_EQ(fi_control(&receiver_.rx_cq->fid, FI_GETWAIT, &fd_), 0);
  }
  void TearDown() override {
    sender_.close();
    receiver_.close();
    domain_.close();
  }

  TestDomain domain_;
  TestEndpoint sender_, receiver_;
  int fd_ = -1;
  char buffers_[4][32];
};

TEST_F(WaitFd, DescriptorTurnsReadableWhenAMessageArrivesWithoutCalls) {
  fid* fids[] = {&receiver_.rx_cq->fid};
  ASSERT_EQ(fi_recv(receiver_.ep, buffers_[0], 32, nullptr, FI_ADDR_UNSPEC, buffers_[0]), 0);
  EXPECT_FALSE(readable(fd_, 0));
  EXPECT_EQ(fi_trywait(domain_.fabric, fids, 1), 0);
  ASSERT_EQ(fi_send(sender_.ep, "wake up", 7, nullptr, receiver_.addr, nullptr), 0);
  // The application sleeps in poll(2); the provider's progress loop must
  // receive the message and signal the descriptor.
  ASSERT_TRUE(readable(fd_, 2000));
  EXPECT_EQ(fi_trywait(domain_.fabric, fids, 1), -FI_EAGAIN);
  fi_cq_data_entry entry{};
  ASSERT_EQ(fi_cq_read(receiver_.rx_cq, &entry, 1), 1);
  EXPECT_EQ(std::string(buffers_[0], entry.len), "wake up");
  EXPECT_FALSE(readable(fd_, 0)) << "an empty CQ leaves its descriptor unreadable";
  EXPECT_EQ(fi_trywait(domain_.fabric, fids, 1), 0);
  ASSERT_EQ(wait_for_completion(sender_.tx_cq, &entry), 1);
}

TEST_F(WaitFd, SreadWaitsForTheThreshold) {
  for (auto& b : buffers_) ASSERT_EQ(fi_recv(receiver_.ep, b, 32, nullptr, FI_ADDR_UNSPEC, b), 0);
  std::thread late_sender([&] {
    ASSERT_EQ(fi_send(sender_.ep, "first", 5, nullptr, receiver_.addr, nullptr), 0);
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    ASSERT_EQ(fi_send(sender_.ep, "second", 6, nullptr, receiver_.addr, nullptr), 0);
  });
  fi_cq_data_entry entries[4];
  const auto start = Clock::now();
  const ssize_t got =
      fi_cq_sread(receiver_.rx_cq, entries, 4, reinterpret_cast<const void*>(uintptr_t{2}), 5000);
  late_sender.join();
  EXPECT_EQ(got, 2);
  EXPECT_GE(Clock::now() - start, std::chrono::milliseconds(150)) << "returned before the second";
}

TEST_F(WaitFd, SignalWakesABlockedSread) {
  std::thread signaller([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    EXPECT_EQ(fi_cq_signal(receiver_.tx_cq), 0);
  });
  fi_cq_data_entry entry{};
  const auto start = Clock::now();
  EXPECT_EQ(fi_cq_sread(receiver_.tx_cq, &entry, 1, nullptr, 5000), -FI_EAGAIN);
  EXPECT_LT(Clock::now() - start, std::chrono::seconds(4));
  signaller.join();
}

TEST_F(WaitFd, SreadTimesOutWithEagain) {
  fi_cq_data_entry entry{};
  const auto start = Clock::now();
  EXPECT_EQ(fi_cq_sread(receiver_.tx_cq, &entry, 1, nullptr, 100), -FI_EAGAIN);
  EXPECT_GE(Clock::now() - start, std::chrono::milliseconds(100));
}

TEST_F(WaitFd, WaitObjectIsReported) {
  fi_wait_obj kind{};
  ASSERT_EQ(fi_control(&receiver_.rx_cq->fid, FI_GETWAITOBJ, &kind), 0);
  EXPECT_EQ(kind, FI_WAIT_FD);
  int fd = -1;
  EXPECT_EQ(fi_control(&sender_.rx_cq->fid, FI_GETWAIT, &fd), -FI_ENODATA)
      << "FI_WAIT_UNSPEC has no descriptor to give";
}

}  // namespace
}  // namespace ofi_dpdk::test
