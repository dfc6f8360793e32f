// Triggered operations (fi_trigger(3)) and endpoint aliases (fi_endpoint(3)
// fi_ep_alias) through stock libfabric on one net_ring port: FI_TRIGGER is
// granted when asked for; a write posted through an alias whose transmit
// flags hold FI_TRIGGER waits until its counter reaches the threshold, then
// lands and completes with the fi_triggered_context; fabtests'
// fi_rdm_rma_trigger sequence (a triggered write at threshold n + 1, then a
// plain write, the counter waited to n + 2) works; operations go in the
// order of their thresholds; an injected triggered send carries the bytes
// of the call, not those in the buffer later; an alias takes one
// direction's flags, and its endpoint refuses to close while it is open;
// what cannot be served is refused at the call.
#include <gtest/gtest.h>
#include <rdma/fi_rma.h>
#include <rdma/fi_trigger.h>

#include <chrono>
#include <cstring>
#include <string>
#include <vector>

#include "test/support/messaging.h"

namespace ofi_dpdk::test {
namespace {

fi_info* trigger_info(uint64_t caps) {
  fi_info* hints = dpdk_hints();
  hints->caps = caps;
  hints->mode = FI_CONTEXT | FI_CONTEXT2;
  fi_info* info = nullptr;
  const int ret = fi_getinfo(FI_VERSION(1, 17), nullptr, nullptr, 0, hints, &info);
  fi_freeinfo(hints);
  return ret == 0 ? info : nullptr;
}

fid_cntr* open_counter(fid_domain* domain) {
  fi_cntr_attr attr{};
  attr.events = FI_CNTR_EVENTS_COMP;
  attr.wait_obj = FI_WAIT_UNSPEC;
  fid_cntr* counter = nullptr;
  EXPECT_EQ(fi_cntr_open(domain, &attr, &counter, nullptr), 0);
  return counter;
}

// Reads the counter (progress) for `seconds`; returns its last value.
uint64_t progress_for(fid_cntr* counter, double seconds) {
  const auto until = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  uint64_t value = 0;
  while (std::chrono::steady_clock::now() < until) value = fi_cntr_read(counter);
  return value;
}

class Trigger : public ::testing::Test {
 protected:
  void SetUp() override {
    domain_.info = trigger_info(FI_MSG | FI_RMA | FI_TRIGGER);
    ASSERT_NE(domain_.info, nullptr);
    ASSERT_TRUE(domain_.info->caps & FI_TRIGGER);
    ASSERT_EQ(fi_fabric(domain_.info->fabric_attr, &domain_.fabric, nullptr), 0);
    ASSERT_EQ(fi_domain(domain_.fabric, domain_.info, &domain_.domain, nullptr), 0);
    fi_av_attr av_attr{};
    av_attr.type = FI_AV_TABLE;
    ASSERT_EQ(fi_av_open(domain_.domain, &av_attr, &domain_.av, nullptr), 0);
    counter_ = open_counter(domain_.domain);
    ASSERT_EQ(a_.open(domain_.domain, domain_.av, domain_.info, FI_CQ_FORMAT_DATA, 0, counter_,
                      FI_SEND | FI_WRITE),
              0);
    ASSERT_EQ(b_.open(domain_.domain, domain_.av, domain_.info), 0);
    region_.assign(64, 0);
    ASSERT_EQ(fi_mr_reg(domain_.domain, region_.data(), region_.size(), FI_REMOTE_WRITE, 0, 0, 0,
                        &mr_, nullptr),
              0);
    key_ = fi_mr_key(mr_);
    base_ = (domain_.info->domain_attr->mr_mode & FI_MR_VIRT_ADDR)
                ? reinterpret_cast<uint64_t>(region_.data())
                : 0;
  }
  void TearDown() override {
    if (alias_ != nullptr) {
      EXPECT_EQ(fi_close(&alias_->fid), 0);
    }
    if (mr_ != nullptr) {
      EXPECT_EQ(fi_close(&mr_->fid), 0);
    }
    a_.close();
    b_.close();
    if (counter_ != nullptr) {
      EXPECT_EQ(fi_close(&counter_->fid), 0);
    }
    domain_.close();
  }
  fi_triggered_context when(uint64_t threshold) {
    fi_triggered_context context{};
    context.event_type = FI_TRIGGER_THRESHOLD;
    context.trigger.threshold.cntr = counter_;
    context.trigger.threshold.threshold = threshold;
    return context;
  }

  TestDomain domain_;
  TestEndpoint a_, b_;
  fid_cntr* counter_ = nullptr;
  fid_ep* alias_ = nullptr;
  std::vector<uint8_t> region_;
  fid_mr* mr_ = nullptr;
  uint64_t key_ = 0;
  uint64_t base_ = 0;
};

TEST(TriggerGetinfo, GrantedWhenAskedFor) {
  fi_info* plain = trigger_info(FI_MSG | FI_RMA);
  ASSERT_NE(plain, nullptr);
  EXPECT_FALSE(plain->caps & FI_TRIGGER);
  fi_freeinfo(plain);
  fi_info* asked = trigger_info(FI_MSG | FI_RMA | FI_TRIGGER);
  ASSERT_NE(asked, nullptr);
  EXPECT_TRUE(asked->caps & FI_TRIGGER);
  fi_freeinfo(asked);
}

// fabtests' fi_rdm_rma_trigger: the second half through an alias with
// FI_TRIGGER, at threshold start + 1; the first half plainly; the counter
// waited to start + 2.
TEST_F(Trigger, AWriteWaitsForItsThresholdThenLands) {
  ASSERT_EQ(fi_ep_alias(a_.ep, &alias_, FI_TRANSMIT | FI_TRIGGER), 0);
  static const std::string text = "Hello1 from Client!Hello2 from Client!";
  const size_t first = 19;
  const uint64_t start = fi_cntr_read(counter_);
  fi_triggered_context context = when(start + 1);
  ASSERT_EQ(fi_write(alias_, text.data() + first, text.size() - first, nullptr, b_.addr,
                     base_ + first, key_, &context),
            0);
  // Nothing reached its threshold: nothing moves.
  EXPECT_EQ(progress_for(counter_, 0.2), start);
  EXPECT_EQ(region_[first], 0);
  int plain_context = 0;
  ASSERT_EQ(fi_write(a_.ep, text.data(), first, nullptr, b_.addr, base_, key_, &plain_context), 0);
  ASSERT_EQ(fi_cntr_wait(counter_, start + 2, 5000), 0);
  EXPECT_EQ(std::string(reinterpret_cast<char*>(region_.data()), text.size()), text);
  // Both completions: the plain write's, then the triggered one's context.
  fi_cq_data_entry entry{};
  ASSERT_EQ(wait_for_completion(a_.tx_cq, &entry), 1);
  EXPECT_EQ(entry.op_context, &plain_context);
  ASSERT_EQ(wait_for_completion(a_.tx_cq, &entry), 1);
  EXPECT_EQ(entry.op_context, &context);
  EXPECT_EQ(entry.flags, FI_RMA | FI_WRITE);
}

// fi_trigger(3): in the order of the thresholds, whatever the order posted;
// fi_cntr_add reaches them too.  An injected send's bytes are the call's.
TEST_F(Trigger, OperationsGoByThresholdAndInjectedBytesAreTheCalls) {
  char received[2][16] = {};
  ASSERT_EQ(fi_recv(b_.ep, received[0], sizeof(received[0]), nullptr, FI_ADDR_UNSPEC, nullptr), 0);
  ASSERT_EQ(fi_recv(b_.ep, received[1], sizeof(received[1]), nullptr, FI_ADDR_UNSPEC, nullptr), 0);
  const uint64_t start = fi_cntr_read(counter_);
  fi_triggered_context later = when(start + 2), sooner = when(start + 1);
  char buffer[16] = "second";
  iovec iov{buffer, 7};
  fi_msg msg{};
  msg.msg_iov = &iov;
  msg.iov_count = 1;
  msg.addr = b_.addr;
  msg.context = &later;
  ASSERT_EQ(fi_sendmsg(a_.ep, &msg, FI_TRIGGER | FI_INJECT), 0);
  std::strcpy(buffer, "changed");
  static const char first[] = "first";
  msg.context = &sooner;
  iov = {const_cast<char*>(first), sizeof(first)};
  ASSERT_EQ(fi_sendmsg(a_.ep, &msg, FI_TRIGGER), 0);
  fi_cq_data_entry entry{};
  EXPECT_TRUE(stays_empty(b_.rx_cq, 0.2));
  ASSERT_EQ(fi_cntr_add(counter_, 1), 0);  // start + 1: "first"; its send makes start + 2
  ASSERT_EQ(wait_for_completion(b_.rx_cq, &entry), 1);
  EXPECT_STREQ(received[0], "first");
  ASSERT_EQ(wait_for_completion(b_.rx_cq, &entry), 1);
  EXPECT_STREQ(received[1], "second");
}

TEST_F(Trigger, WhatCannotBeServedIsRefusedAtTheCall) {
  fi_triggered_context context = when(1);
  context.event_type = FI_TRIGGER_XPU;
  char byte = 0;
  iovec iov{&byte, 1};
  fi_msg msg{};
  msg.msg_iov = &iov;
  msg.iov_count = 1;
  msg.addr = b_.addr;
  msg.context = &context;
  EXPECT_EQ(fi_sendmsg(a_.ep, &msg, FI_TRIGGER), -FI_EOPNOTSUPP);
  msg.context = nullptr;
  EXPECT_EQ(fi_sendmsg(a_.ep, &msg, FI_TRIGGER), -FI_EINVAL);
  // An endpoint opened without FI_TRIGGER.
  fi_info* plain = trigger_info(FI_MSG | FI_RMA);
  ASSERT_NE(plain, nullptr);
  TestEndpoint other;
  ASSERT_EQ(other.open(domain_.domain, domain_.av, plain), 0);
  context = when(1);
  msg.context = &context;
  EXPECT_EQ(fi_sendmsg(other.ep, &msg, FI_TRIGGER), -FI_EOPNOTSUPP);
  other.close();
  fi_freeinfo(plain);
}

// fi_endpoint(3) fi_ep_alias: one direction's flags, not both or neither;
// the alias starts from the endpoint's flags; the endpoint stays open while
// an alias is.
TEST_F(Trigger, AnAliasTakesOneDirectionsFlags) {
  fid_ep* alias = nullptr;
  EXPECT_EQ(fi_ep_alias(a_.ep, &alias, FI_TRANSMIT | FI_RECV), -FI_EINVAL);
  EXPECT_EQ(fi_ep_alias(a_.ep, &alias, FI_COMPLETION), -FI_EINVAL);
  ASSERT_EQ(fi_ep_alias(a_.ep, &alias_, FI_RECV | FI_COMPLETION), 0);
  uint64_t flags = FI_RECV;
  ASSERT_EQ(fi_control(&alias_->fid, FI_GETOPSFLAG, &flags), 0);
  EXPECT_EQ(flags, FI_COMPLETION);
  uint64_t endpoint_flags = FI_RECV;
  ASSERT_EQ(fi_control(&a_.ep->fid, FI_GETOPSFLAG, &endpoint_flags), 0);
  EXPECT_EQ(endpoint_flags & FI_COMPLETION, 0u) << "the endpoint's own flags are unchanged";
  EXPECT_EQ(fi_close(&a_.ep->fid), -FI_EBUSY);
  // The alias sends as its endpoint does.
  expect_message_delivered(a_, b_.addr, b_, "through the endpoint");
  char buffer[32] = {};
  ASSERT_EQ(fi_recv(b_.ep, buffer, sizeof(buffer), nullptr, FI_ADDR_UNSPEC, buffer), 0);
  static const std::string text = "through the alias";
  ASSERT_EQ(fi_send(alias_, text.data(), text.size(), nullptr, b_.addr, nullptr), 0);
  fi_cq_data_entry entry{};
  ASSERT_EQ(wait_for_completion(b_.rx_cq, &entry), 1);
  EXPECT_EQ(std::string(buffer, entry.len), text);
}

}  // namespace
}  // namespace ofi_dpdk::test
