// fi_poll(3) wait sets through stock libfabric on one net_ring port: CQs,
// counters and EQs opened with FI_WAIT_SET wake fi_wait when they have
// something, and the set's one descriptor wakes an application asleep in
// poll(2) after fi_trywait; what fi_wait_open refuses, and that a set with
// members cannot be closed.  Each test says what it expects.
#include <gtest/gtest.h>
#include <poll.h>
#include <rdma/fi_domain.h>

#include <chrono>
#include <cstring>

#include "test/support/messaging.h"

// Wait sets are deprecated in libfabric 2.x (FI_DEPRECATED_FUNC) but still
// there: tested on both.
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"

namespace ofi_dpdk::test {
namespace {

using Clock = std::chrono::steady_clock;

class WaitSet : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_EQ(domain_.open(), 0) << "no dpdk provider on the net_ring port";
    fi_wait_attr attr{};
    attr.wait_obj = FI_WAIT_UNSPEC;
    ASSERT_EQ(fi_wait_open(domain_.fabric, &attr, &set_), 0);
    ASSERT_EQ(a_.open(domain_.domain, domain_.av, domain_.info), 0);
    // B: its own endpoint whose receive CQ is in the set.
    fi_cq_attr cq_attr{};
    cq_attr.format = FI_CQ_FORMAT_DATA;
    cq_attr.wait_obj = FI_WAIT_SET;
    cq_attr.wait_set = set_;
    ASSERT_EQ(fi_cq_open(domain_.domain, &cq_attr, &b_rx_, nullptr), 0);
    cq_attr.wait_obj = FI_WAIT_NONE;
    cq_attr.wait_set = nullptr;
    ASSERT_EQ(fi_cq_open(domain_.domain, &cq_attr, &b_tx_, nullptr), 0);
    ASSERT_EQ(fi_endpoint(domain_.domain, domain_.info, &b_, nullptr), 0);
    ASSERT_EQ(fi_ep_bind(b_, &domain_.av->fid, 0), 0);
    ASSERT_EQ(fi_ep_bind(b_, &b_tx_->fid, FI_TRANSMIT), 0);
    ASSERT_EQ(fi_ep_bind(b_, &b_rx_->fid, FI_RECV), 0);
    ASSERT_EQ(fi_enable(b_), 0);
    uint8_t name[64];
    size_t len = sizeof(name);
    ASSERT_EQ(fi_getname(&b_->fid, name, &len), 0);
    ASSERT_EQ(fi_av_insert(domain_.av, name, 1, &b_addr_, 0, nullptr), 1);
  }
  void TearDown() override {
    if (b_ != nullptr) {
      EXPECT_EQ(fi_close(&b_->fid), 0);
    }
    if (b_tx_ != nullptr) {
      EXPECT_EQ(fi_close(&b_tx_->fid), 0);
    }
    if (b_rx_ != nullptr) {
      EXPECT_EQ(fi_close(&b_rx_->fid), 0);
    }
    a_.close();
    if (set_ != nullptr) {
      EXPECT_EQ(fi_close(&set_->fid), 0);
    }
    domain_.close();
  }
  // A sends `text` to B, whose receive is posted first; A's send CQ is
  // read until the send completed.
  void send_to_b(const char* text) {
    ASSERT_EQ(fi_recv(b_, buffer_, sizeof(buffer_), nullptr, FI_ADDR_UNSPEC, buffer_), 0);
    ASSERT_EQ(fi_send(a_.ep, text, std::strlen(text), nullptr, b_addr_, nullptr), 0);
    fi_cq_data_entry sent{};
    ASSERT_EQ(wait_for_completion(a_.tx_cq, &sent), 1);
  }

  TestDomain domain_;
  TestEndpoint a_;
  fid_wait* set_ = nullptr;
  fid_ep* b_ = nullptr;
  fid_cq* b_tx_ = nullptr;
  fid_cq* b_rx_ = nullptr;
  fi_addr_t b_addr_ = FI_ADDR_NOTAVAIL;
  char buffer_[32] = {};
};

TEST_F(WaitSet, FiWaitReturnsOnceAMemberCqHasACompletion) {
  // Expect: with nothing in B's CQ, fi_wait times out (-FI_ETIMEDOUT);
  // after A's message reached B, fi_wait returns 0 and B's CQ holds it;
  // once read, fi_wait times out again.
  EXPECT_EQ(fi_wait(set_, 0), -FI_ETIMEDOUT);
  EXPECT_EQ(fi_wait(set_, 20), -FI_ETIMEDOUT);
  send_to_b("waited for");
  EXPECT_EQ(fi_wait(set_, 5000), 0);
  fi_cq_data_entry entry{};
  ASSERT_EQ(fi_cq_read(b_rx_, &entry, 1), 1);
  EXPECT_EQ(std::string(buffer_, entry.len), "waited for");
  EXPECT_EQ(fi_wait(set_, 20), -FI_ETIMEDOUT);
}

TEST_F(WaitSet, ItsDescriptorWakesASleeperAfterTrywait) {
  // Expect: the set (FI_WAIT_UNSPEC) has a descriptor (FI_GETWAIT) and is
  // FI_WAIT_FD (FI_GETWAITOBJ); fi_trywait on the set says 0 while B's CQ
  // is empty; after A's message, the descriptor becomes readable without
  // any call into the provider (the progress loop filled B's CQ), and
  // fi_trywait then says -FI_EAGAIN.
  int fd = -1;
  ASSERT_EQ(fi_control(&set_->fid, FI_GETWAIT, &fd), 0);
  ASSERT_GE(fd, 0);
  fi_wait_obj kind = FI_WAIT_NONE;
  ASSERT_EQ(fi_control(&set_->fid, FI_GETWAITOBJ, &kind), 0);
  EXPECT_EQ(kind, FI_WAIT_FD);
  fid* members[] = {&set_->fid};
  ASSERT_EQ(fi_trywait(domain_.fabric, members, 1), 0);
  ASSERT_EQ(fi_recv(b_, buffer_, sizeof(buffer_), nullptr, FI_ADDR_UNSPEC, buffer_), 0);
  ASSERT_EQ(fi_send(a_.ep, "wake up", 7, nullptr, b_addr_, nullptr), 0);
  pollfd entry{fd, POLLIN, 0};
  EXPECT_EQ(poll(&entry, 1, 5000), 1) << "nothing signalled the set's descriptor";
  EXPECT_EQ(fi_trywait(domain_.fabric, members, 1), -FI_EAGAIN);
  fi_cq_data_entry got{};
  EXPECT_EQ(wait_for_completion(b_rx_, &got), 1);
  fi_cq_data_entry sent{};
  EXPECT_EQ(wait_for_completion(a_.tx_cq, &sent), 1);
}

TEST_F(WaitSet, CountersAndEqsInTheSetWakeItToo) {
  // Expect: a counter in the set wakes fi_wait once per change (a second
  // fi_wait without a change times out); an EQ in the set wakes it while
  // it holds an event.
  fi_cntr_attr cntr_attr{};
  cntr_attr.events = FI_CNTR_EVENTS_COMP;
  cntr_attr.wait_obj = FI_WAIT_SET;
  cntr_attr.wait_set = set_;
  fid_cntr* cntr = nullptr;
  ASSERT_EQ(fi_cntr_open(domain_.domain, &cntr_attr, &cntr, nullptr), 0);
  fi_eq_attr eq_attr{};
  eq_attr.wait_obj = FI_WAIT_SET;
  eq_attr.wait_set = set_;
  eq_attr.flags = FI_WRITE;
  fid_eq* eq = nullptr;
  ASSERT_EQ(fi_eq_open(domain_.fabric, &eq_attr, &eq, nullptr), 0);
  EXPECT_EQ(fi_wait(set_, 20), -FI_ETIMEDOUT);
  ASSERT_EQ(fi_cntr_add(cntr, 2), 0);
  EXPECT_EQ(fi_wait(set_, 1000), 0);
  EXPECT_EQ(fi_wait(set_, 20), -FI_ETIMEDOUT) << "the counter did not move again";
  fi_eq_entry event{};
  event.context = &event;
  ASSERT_EQ(fi_eq_write(eq, FI_NOTIFY, &event, sizeof(event), 0),
            static_cast<ssize_t>(sizeof(event)));
  EXPECT_EQ(fi_wait(set_, 1000), 0);
  uint32_t kind = 0;
  ASSERT_EQ(fi_eq_read(eq, &kind, &event, sizeof(event), 0), static_cast<ssize_t>(sizeof(event)));
  EXPECT_EQ(fi_wait(set_, 20), -FI_ETIMEDOUT);
  EXPECT_EQ(fi_close(&eq->fid), 0);
  EXPECT_EQ(fi_close(&cntr->fid), 0);
}

TEST_F(WaitSet, TrywaitReportsACountersMoveOnce) {
  // Expect: fi_trywait on the set says -FI_EAGAIN once after a member
  // counter moved, then 0 (a caller may sleep), not -FI_EAGAIN for ever.
  fi_cntr_attr cntr_attr{};
  cntr_attr.events = FI_CNTR_EVENTS_COMP;
  cntr_attr.wait_obj = FI_WAIT_SET;
  cntr_attr.wait_set = set_;
  fid_cntr* cntr = nullptr;
  ASSERT_EQ(fi_cntr_open(domain_.domain, &cntr_attr, &cntr, nullptr), 0);
  fid* members[] = {&set_->fid};
  EXPECT_EQ(fi_trywait(domain_.fabric, members, 1), 0);
  ASSERT_EQ(fi_cntr_add(cntr, 1), 0);
  EXPECT_EQ(fi_trywait(domain_.fabric, members, 1), -FI_EAGAIN);
  EXPECT_EQ(fi_trywait(domain_.fabric, members, 1), 0);
  EXPECT_EQ(fi_close(&cntr->fid), 0);
}

TEST_F(WaitSet, RefusesWhatItDoesNotTakeAndOutlivesNoMember) {
  // Expect: fi_wait_open refuses flags (FI_EINVAL) and a mutex/cond wait
  // object (FI_ENOSYS); a CQ asking for FI_WAIT_SET without a set, or with
  // an object that is not a wait set, is refused; a set with a member
  // cannot be closed (FI_EBUSY) until the member is.
  fid_wait* other = nullptr;
  fi_wait_attr attr{};
  attr.wait_obj = FI_WAIT_FD;
  attr.flags = 1;
  EXPECT_EQ(fi_wait_open(domain_.fabric, &attr, &other), -FI_EINVAL);
  attr.flags = 0;
  attr.wait_obj = FI_WAIT_MUTEX_COND;
  EXPECT_EQ(fi_wait_open(domain_.fabric, &attr, &other), -FI_ENOSYS);
  fi_cq_attr cq_attr{};
  cq_attr.format = FI_CQ_FORMAT_CONTEXT;
  cq_attr.wait_obj = FI_WAIT_SET;
  fid_cq* cq = nullptr;
  EXPECT_NE(fi_cq_open(domain_.domain, &cq_attr, &cq, nullptr), 0);
  cq_attr.wait_set = reinterpret_cast<fid_wait*>(&domain_.av->fid);
  EXPECT_NE(fi_cq_open(domain_.domain, &cq_attr, &cq, nullptr), 0);
  EXPECT_EQ(fi_close(&set_->fid), -FI_EBUSY) << "B's receive CQ is in it";
  ASSERT_EQ(fi_close(&b_->fid), 0);
  b_ = nullptr;
  ASSERT_EQ(fi_close(&b_rx_->fid), 0);
  b_rx_ = nullptr;
  EXPECT_EQ(fi_close(&set_->fid), 0);
  set_ = nullptr;
}

}  // namespace
}  // namespace ofi_dpdk::test
