// test_link_state.cc: net::Port::link_up, which every poll checks (a
// transmit takes the cached answer), asks the device at most once per
// kLinkRefreshMicros and still sees the link go down and come back.  On a
// net_ring vdev, whose link rte_eth_dev_set_link_down/up really change.
#include <gtest/gtest.h>

#include <rte_eal.h>
#include <rte_ethdev.h>

#include <chrono>
#include <memory>
#include <string>

#include "drivers/net/port.h"
#include "test/support/test_eal.h"

namespace ofi_dpdk {
namespace {

constexpr const char* kPortName = "net_ring0";

class PortLink : public ::testing::Test {
 protected:
  void SetUp() override {
    uint16_t port_id = 0;
    ASSERT_EQ(rte_eth_dev_get_port_by_name(kPortName, &port_id), 0);
    net::PortConfig config;
    config.steering = net::SteeringRequest::kSoftware;
    config.mbufs = 1023;
    std::string error;
    ASSERT_EQ(net::Port::open(port_id, config, &port_, &error), 0) << error;
  }
  void TearDown() override {
    if (port_) rte_eth_dev_set_link_up(port_->id());
  }

  // Calls link_up() until it says `up` or `limit` passes; returns whether it did.
  bool wait_for(bool up, std::chrono::milliseconds limit) {
    const auto end = std::chrono::steady_clock::now() + limit;
    while (std::chrono::steady_clock::now() < end)
      if (port_->link_up() == up) return true;
    return false;
  }

  std::unique_ptr<net::Port> port_;
};

// A poller asking a million times in a row costs a clock read each, not a
// driver call: the device is read about once per refresh period of the time
// the loop took (however slow a busy machine makes it), not once per call.
TEST_F(PortLink, ReadFromTheDeviceOncePerRefreshNotPerCall) {
  ASSERT_TRUE(port_->link_up());
  constexpr int kCalls = 1000000;
  const uint64_t reads_before = port_->link_reads();
  const auto start = std::chrono::steady_clock::now();
  int up = 0;
  for (int i = 0; i < kCalls; ++i) up += port_->link_up() ? 1 : 0;
  const auto elapsed = std::chrono::steady_clock::now() - start;
  const uint64_t reads = port_->link_reads() - reads_before;
  const auto periods =
      static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::microseconds>(elapsed).count() /
                            net::Port::kLinkRefreshMicros);
  EXPECT_EQ(up, kCalls);
  // (+1 for the period under way, +1 % for the timer's calibration, which
  // is not steady_clock's.)
  EXPECT_LE(reads, periods + periods / 100 + 2)
      << "calls " << kCalls << " in " << std::chrono::duration<double, std::milli>(elapsed).count()
      << " ms";
  EXPECT_LT(reads, static_cast<uint64_t>(kCalls) / 10);
}

// A poller that has read its own clock passes it: the device is read once
// per refresh period of that clock, whatever the calls' pace, and the
// cached form never reads it.  (The caller's clock is made up here: it is
// the caller's.)
TEST_F(PortLink, CallersClockDecidesWhenTheDeviceIsRead) {
  ASSERT_TRUE(port_->link_up());
  constexpr uint64_t kPeriodNs = uint64_t{net::Port::kLinkRefreshMicros} * 1000;
  const uint64_t start_ns = uint64_t{1} << 40;
  const uint64_t reads_before = port_->link_reads();
  // 10 refresh periods of the caller's clock, 1000 calls in each.
  for (uint64_t call = 0; call < 10000; ++call)
    ASSERT_TRUE(port_->link_up(start_ns + call * (kPeriodNs / 1000)));
  const uint64_t reads = port_->link_reads() - reads_before;
  EXPECT_GE(reads, 10u);
  EXPECT_LE(reads, 11u);
  const uint64_t before_cached = port_->link_reads();
  for (int i = 0; i < 100000; ++i) ASSERT_TRUE(port_->link_up_cached());
  EXPECT_EQ(port_->link_reads(), before_cached);
  // The caller's form sees the link go down at its next due read.
  ASSERT_EQ(rte_eth_dev_set_link_down(port_->id()), 0);
  const uint64_t later_ns = start_ns + 20 * kPeriodNs;
  EXPECT_FALSE(port_->link_up(later_ns));
  EXPECT_FALSE(port_->link_up_cached());
  ASSERT_EQ(rte_eth_dev_set_link_up(port_->id()), 0);
  EXPECT_TRUE(port_->link_up(later_ns + kPeriodNs));
}

// The cache follows the device: a link taken down is seen as down, and the
// pollers see it up again when it comes back, each within a refresh period
// or so (the limit here is generous: a busy machine may stall us).
TEST_F(PortLink, FollowsTheLinkDownAndUp) {
  ASSERT_TRUE(port_->link_up());
  ASSERT_EQ(rte_eth_dev_set_link_down(port_->id()), 0);
  EXPECT_TRUE(wait_for(false, std::chrono::seconds(5)));
  EXPECT_FALSE(port_->read_link());
  ASSERT_EQ(rte_eth_dev_set_link_up(port_->id()), 0);
  EXPECT_TRUE(wait_for(true, std::chrono::seconds(5)));
  EXPECT_TRUE(port_->read_link());
}

}  // namespace
}  // namespace ofi_dpdk

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  if (!ofi_dpdk::test::bring_up_test_eal("test_link_state", {"--vdev=net_ring0"})) return 1;
  const int result = RUN_ALL_TESTS();
  rte_eal_cleanup();
  return result;
}
