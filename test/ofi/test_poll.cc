// fi_poll(3) poll sets through stock libfabric on one net_ring port: a set of
// CQs and counters returns the context of each CQ holding a completion and
// of each counter that moved since the set last looked, progressing the
// port itself; what it takes and refuses, and that a member cannot be
// closed while it is in a set.  Each test says what it expects.
#include <gtest/gtest.h>
#include <rdma/fi_domain.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <vector>

#include "test/support/messaging.h"

// Poll sets are deprecated in libfabric 2.x (FI_DEPRECATED_FUNC) but still
// there, and programs (fabtests' fi_poll) still use them: tested on both.
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"

namespace ofi_dpdk::test {
namespace {

using Clock = std::chrono::steady_clock;

class PollSet : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_EQ(domain_.open(), 0) << "no dpdk provider on the net_ring port";
    fi_cntr_attr cntr_attr{};
    cntr_attr.events = FI_CNTR_EVENTS_COMP;
    ASSERT_EQ(fi_cntr_open(domain_.domain, &cntr_attr, &rx_cntr_, &cntr_context_), 0);
    ASSERT_EQ(a_.open(domain_.domain, domain_.av, domain_.info), 0);
    ASSERT_EQ(
        b_.open(domain_.domain, domain_.av, domain_.info, FI_CQ_FORMAT_DATA, 0, rx_cntr_, FI_RECV),
        0);
    // The contexts fi_poll returns: the objects' own.
    a_.tx_cq->fid.context = &a_tx_;
    b_.rx_cq->fid.context = &b_rx_;
    fi_poll_attr attr{};
    ASSERT_EQ(fi_poll_open(domain_.domain, &attr, &poll_), 0);
  }
  void TearDown() override {
    if (poll_ != nullptr) {
      EXPECT_EQ(fi_close(&poll_->fid), 0);
    }
    a_.close();
    b_.close();
    if (rx_cntr_ != nullptr) {
      EXPECT_EQ(fi_close(&rx_cntr_->fid), 0);
    }
    domain_.close();
  }
  // The contexts fi_poll returns within `seconds`, once any comes.
  std::vector<void*> poll_until_some(double seconds = 5) {
    void* contexts[8] = {};
    const auto deadline = Clock::now() + std::chrono::duration<double>(seconds);
    int n = 0;
    while ((n = fi_poll(poll_, contexts, 8)) == 0 && Clock::now() < deadline) {
    }
    EXPECT_GE(n, 0);
    return std::vector<void*>(contexts, contexts + std::max(n, 0));
  }

  TestDomain domain_;
  TestEndpoint a_, b_;
  fid_cntr* rx_cntr_ = nullptr;
  fid_poll* poll_ = nullptr;
  int a_tx_ = 0, b_rx_ = 0, cntr_context_ = 0;
};

TEST_F(PollSet, ReturnsTheContextsOfCqsWithCompletionsAndOfCountersThatMoved) {
  // Expect: nothing before traffic; after A sends to B, fi_poll returns A's
  // TX CQ, B's RX CQ and B's receive counter (which the set itself
  // progressed); once both CQs are read, the counter is not returned again
  // until it moves.
  ASSERT_EQ(fi_poll_add(poll_, &a_.tx_cq->fid, 0), 0);
  ASSERT_EQ(fi_poll_add(poll_, &b_.rx_cq->fid, 0), 0);
  ASSERT_EQ(fi_poll_add(poll_, &rx_cntr_->fid, 0), 0);
  void* contexts[8];
  EXPECT_EQ(fi_poll(poll_, contexts, 8), 0);
  char buffer[16] = {};
  ASSERT_EQ(fi_recv(b_.ep, buffer, sizeof(buffer), nullptr, FI_ADDR_UNSPEC, buffer), 0);
  ASSERT_EQ(fi_send(a_.ep, "polled", 6, nullptr, b_.addr, nullptr), 0);
  std::vector<void*> seen;
  const auto deadline = Clock::now() + std::chrono::seconds(5);
  while (seen.size() < 3 && Clock::now() < deadline)
    for (void* context : poll_until_some(0.1))
      if (std::find(seen.begin(), seen.end(), context) == seen.end()) seen.push_back(context);
  EXPECT_NE(std::find(seen.begin(), seen.end(), &a_tx_), seen.end()) << "A's TX CQ";
  EXPECT_NE(std::find(seen.begin(), seen.end(), &b_rx_), seen.end()) << "B's RX CQ";
  EXPECT_NE(std::find(seen.begin(), seen.end(), &cntr_context_), seen.end()) << "B's counter";
  fi_cq_data_entry entry{};
  ASSERT_EQ(fi_cq_read(a_.tx_cq, &entry, 1), 1);
  ASSERT_EQ(fi_cq_read(b_.rx_cq, &entry, 1), 1);
  EXPECT_EQ(std::memcmp(buffer, "polled", 6), 0);
  EXPECT_EQ(fi_poll(poll_, contexts, 8), 0) << "read CQs and an unmoved counter are no events";
  ASSERT_EQ(fi_cntr_add(rx_cntr_, 1), 0);
  ASSERT_EQ(fi_poll(poll_, contexts, 8), 1);
  EXPECT_EQ(contexts[0], &cntr_context_);
}

TEST_F(PollSet, TakesOnlyItsDomainsCqsAndCountersOnceAndHoldsThem) {
  // Expect: an AV (neither CQ nor counter) and a flag are refused with
  // FI_EINVAL, a second add of a member with FI_EALREADY, a del of a
  // non-member with FI_ENOENT; a CQ in the set cannot be closed (FI_EBUSY)
  // until it leaves; fi_poll with a null array and count is refused.
  EXPECT_EQ(fi_poll_add(poll_, &domain_.av->fid, 0), -FI_EINVAL);
  EXPECT_EQ(fi_poll_add(poll_, &a_.tx_cq->fid, 1), -FI_EINVAL);
  ASSERT_EQ(fi_poll_add(poll_, &a_.tx_cq->fid, 0), 0);
  EXPECT_EQ(fi_poll_add(poll_, &a_.tx_cq->fid, 0), -FI_EALREADY);
  EXPECT_EQ(fi_poll_del(poll_, &b_.rx_cq->fid, 0), -FI_ENOENT);
  EXPECT_EQ(fi_poll(poll_, nullptr, 4), -FI_EINVAL);
  fi_cq_attr attr{};
  attr.format = FI_CQ_FORMAT_CONTEXT;
  fid_cq* spare = nullptr;
  ASSERT_EQ(fi_cq_open(domain_.domain, &attr, &spare, nullptr), 0);
  ASSERT_EQ(fi_poll_add(poll_, &spare->fid, 0), 0);
  EXPECT_EQ(fi_close(&spare->fid), -FI_EBUSY);
  ASSERT_EQ(fi_poll_del(poll_, &spare->fid, 0), 0);
  EXPECT_EQ(fi_close(&spare->fid), 0);
  ASSERT_EQ(fi_poll_del(poll_, &a_.tx_cq->fid, 0), 0);
}

TEST(PollSetOpen, RefusesFlagsItDoesNotKnow) {
  // Expect: fi_poll_open with attr.flags set is refused (FI_EINVAL); with
  // none it opens and closes.
  TestDomain domain;
  ASSERT_EQ(domain.open(), 0);
  fi_poll_attr attr{};
  attr.flags = 1;
  fid_poll* poll = nullptr;
  EXPECT_EQ(fi_poll_open(domain.domain, &attr, &poll), -FI_EINVAL);
  attr.flags = 0;
  ASSERT_EQ(fi_poll_open(domain.domain, &attr, &poll), 0);
  EXPECT_EQ(fi_close(&poll->fid), 0);
  domain.close();
}

}  // namespace
}  // namespace ofi_dpdk::test
