// test_steering.cc: how frames reach an endpoint's queue on a real port
// that has no rte_flow (a net_ring vdev, like every virtual PMD here; see
// design.md): the software fallback, at two levels.
//
//   PortSteering.*      net::Port::open directly.  main() brings EAL up
//                       itself with one net_ring port, because
//                       FI_DPDK_EAL_ARGS is unset in that run.
//   ProviderSteering.*  through stock libfabric and the provider, which
//                       brings EAL up from FI_DPDK_EAL_ARGS; the run's
//                       FI_DPDK_STEERING (flow, software, auto or unset)
//                       says what to expect.
//
// test/net/meson.build runs each level as its own test with its own
// environment (EAL starts once per process).  A run in which no test
// passed (everything skipped: wrong environment) fails.
#include <fi_dpdk.h>
#include <gtest/gtest.h>
#include <rdma/fabric.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_errno.h>

#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_ethdev.h>
#include <rte_mbuf.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "drivers/net/port.h"
#include "test/support/messaging.h"
#include "test/support/test_eal.h"

namespace ofi_dpdk {
namespace {

constexpr const char* kPortName = "net_ring0";

// Set by main(): whether this process brought EAL up for the Port tests.
bool g_own_eal = false;

bool provider_run() {
  return std::getenv("FI_DPDK_EAL_ARGS") != nullptr;
}

std::string steering_env() {
  const char* value = std::getenv("FI_DPDK_STEERING");
  return value != nullptr ? value : "";
}

// --- net::Port ------------------------------------------------------------

class PortSteering : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!g_own_eal) GTEST_SKIP() << "EAL belongs to the provider in this run";
    ASSERT_EQ(rte_eth_dev_get_port_by_name(kPortName, &port_id_), 0);
  }

  int open(net::SteeringRequest steering) {
    net::PortConfig config;
    config.steering = steering;
    config.queues_wanted = 4;  // net_ring has 16: rte_flow is tried
    config.mbufs = 4095;
    error_.clear();
    return net::Port::open(port_id_, config, &port_, &error_);
  }

  uint16_t port_id_ = 0;
  std::unique_ptr<net::Port> port_;
  std::string error_;
};

// FI_DPDK_STEERING=auto on a net_ring of its own (whose TX queue q is its
// RX queue q's ring): the sender picks the queue, so the port keeps the
// queue pairs asked for and no rte_flow rule is tried.
TEST_F(PortSteering, AutoOnALoopingRingIsBySender) {
  ASSERT_EQ(open(net::SteeringRequest::kAuto), 0) << error_;
  ASSERT_NE(port_, nullptr);
  EXPECT_EQ(port_->steering(), net::Steering::kSender);
  EXPECT_EQ(port_->queue_pairs(), 4);
  EXPECT_NE(port_->description().find("steered by sender"), std::string::npos)
      << port_->description();
  // Endpoint queue 5 is served by queue pair 5 mod 4, with no rule.
  std::string refused;
  EXPECT_EQ(port_->bind_endpoint_queue(5, &refused), 1);
  EXPECT_EQ(refused, "");
  port_->unbind_endpoint_queue(5);
  // A frame sent on queue pair 2 comes back on queue pair 2, and only there.
  rte_mbuf* frame = port_->alloc_frame();
  ASSERT_NE(frame, nullptr);
  ASSERT_NE(rte_pktmbuf_append(frame, 60), nullptr);
  ASSERT_EQ(port_->tx_burst(2, &frame, 1), 1);
  rte_mbuf* got[4];
  for (uint16_t queue = 0; queue < 4; ++queue) {
    const uint16_t count = port_->rx_burst(queue, got, 4);
    EXPECT_EQ(count, queue == 2 ? 1 : 0) << "queue pair " << queue;
    for (uint16_t i = 0; i < count; ++i) rte_pktmbuf_free(got[i]);
  }
}

// FI_DPDK_STEERING=flow: a device without rte_flow queue rules is refused,
// and the error says why.
TEST_F(PortSteering, FlowIsRefusedWithoutRteFlow) {
  EXPECT_EQ(open(net::SteeringRequest::kFlow), -ENOTSUP);
  EXPECT_EQ(port_, nullptr);
  EXPECT_NE(error_.find("rte_flow"), std::string::npos) << error_;
  // The refusal leaves the port usable.
  ASSERT_EQ(open(net::SteeringRequest::kAuto), 0) << error_;
  EXPECT_EQ(port_->steering(), net::Steering::kSender);
}

// A port that speaks UDP in both families tries a rule of each kind, and
// says, kind by kind, what the device refused and why.
TEST_F(PortSteering, EachRuleKindIsTriedAndItsRefusalNamed) {
  net::PortConfig config;
  config.steering = net::SteeringRequest::kFlow;
  config.queues_wanted = 4;
  config.mbufs = 4095;
  config.udp4 = config.udp6 = true;
  config.udp_port_base = 9228;
  EXPECT_EQ(net::Port::open(port_id_, config, &port_, &error_), -ENOTSUP);
  for (const char* kind : {"EtherType: rte_flow_validate", "UDP/IPv4: rte_flow_validate",
                           "UDP/IPv6: rte_flow_validate"})
    EXPECT_NE(error_.find(kind), std::string::npos) << kind << " in " << error_;
  // Auto on this looping ring needs no rule: its senders steer.
  config.steering = net::SteeringRequest::kAuto;
  ASSERT_EQ(net::Port::open(port_id_, config, &port_, &error_), 0) << error_;
  EXPECT_EQ(port_->steering(), net::Steering::kSender);
  EXPECT_EQ(port_->rule_kinds(), 0u);
}

// FI_DPDK_STEERING=software: no rte_flow attempt, one queue pair.
TEST_F(PortSteering, SoftwareIsSoftware) {
  ASSERT_EQ(open(net::SteeringRequest::kSoftware), 0) << error_;
  EXPECT_EQ(port_->steering(), net::Steering::kSoftware);
  EXPECT_EQ(port_->queue_pairs(), 1);
  EXPECT_NE(port_->description().find("software"), std::string::npos) << port_->description();
  // Every endpoint queue is served by queue pair 0, with no rule to install.
  std::string refused;
  EXPECT_EQ(port_->bind_endpoint_queue(5, &refused), 0);
  EXPECT_EQ(refused, "");
}

// --- the provider -----------------------------------------------------------

class ProviderSteering : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!provider_run()) GTEST_SKIP() << "needs FI_DPDK_EAL_ARGS (the provider's EAL)";
  }
};

// FI_DPDK_STEERING=flow on a port without rte_flow: fi_domain fails with
// an fi_errno, and fails the same way when asked again; nothing crashes and
// the fabric still closes.
TEST_F(ProviderSteering, FlowRequestFailsDomainOpen) {
  if (steering_env() != "flow") GTEST_SKIP() << "run with FI_DPDK_STEERING=flow";
  fi_info* info = test::get_dpdk_info(kPortName);
  ASSERT_NE(info, nullptr);
  fid_fabric* fabric = nullptr;
  ASSERT_EQ(fi_fabric(info->fabric_attr, &fabric, nullptr), 0);
  for (int attempt = 0; attempt < 2; ++attempt) {
    fid_domain* domain = nullptr;
    const int ret = fi_domain(fabric, info, &domain, nullptr);
    EXPECT_LT(ret, 0) << "attempt " << attempt << ": " << fi_strerror(-ret);
    EXPECT_EQ(domain, nullptr);
    if (ret == 0 && domain != nullptr) fi_close(&domain->fid);
  }
  EXPECT_EQ(fi_close(&fabric->fid), 0);
  fi_freeinfo(info);
}

// FI_DPDK_STEERING=software, auto or unset: the domain opens, the stats ops
// say software steering (0) on one queue pair, or (auto, unset) steering by
// sender on four, and each message reaches the endpoint it is for.
TEST_F(ProviderSteering, SoftwareSteeringOnOneQueuePair) {
  if (steering_env() == "flow") GTEST_SKIP() << "FI_DPDK_STEERING=flow: see the test above";
  test::TestDomain d;
  ASSERT_EQ(d.open(kPortName), 0);
  fi_dpdk_ops_stats* ops = nullptr;
  ASSERT_EQ(fi_open_ops(&d.domain->fid, FI_DPDK_STATS_OPS_NAME, 0, reinterpret_cast<void**>(&ops),
                        nullptr),
            0);
  ASSERT_NE(ops, nullptr);
  EXPECT_EQ(ops->size, sizeof(fi_dpdk_ops_stats));
  fi_dpdk_port_stats stats{};
  ASSERT_EQ(ops->port_stats(d.domain, &stats), 0);
  if (steering_env() == "software") {
    EXPECT_EQ(stats.steering, 0u) << "0: software demultiplexer";
    EXPECT_EQ(stats.queues, 1u);
  } else {
    // A net_ring of its own is steered by its senders (3), a lane per
    // queue pair.
    EXPECT_EQ(stats.steering, 3u) << "3: by sender";
    EXPECT_EQ(stats.queues, 4u);
  }

  test::TestEndpoint a, b;
  ASSERT_EQ(a.open(d.domain, d.av, d.info), 0);
  ASSERT_EQ(b.open(d.domain, d.av, d.info), 0);
  test::expect_message_delivered(a, b.addr, b, "a to b, one queue pair");
  test::expect_message_delivered(b, a.addr, a, "b to a, one queue pair");
  EXPECT_TRUE(test::stays_empty(a.rx_cq)) << "nothing else arrived at a";
  EXPECT_TRUE(test::stays_empty(b.rx_cq)) << "nothing else arrived at b";
  a.close();
  b.close();
  d.close();
}

}  // namespace
}  // namespace ofi_dpdk

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  if (!ofi_dpdk::provider_run()) {
    if (!ofi_dpdk::test::bring_up_test_eal("test_steering", {"--vdev=net_ring0"})) return 1;
    ofi_dpdk::g_own_eal = true;
  }
  int result = RUN_ALL_TESTS();
  if (result == 0 && ::testing::UnitTest::GetInstance()->successful_test_count() == 0) {
    std::fprintf(stderr, "test_steering: no test ran in this environment (%s)\n",
                 ofi_dpdk::provider_run() ? "FI_DPDK_EAL_ARGS set" : "own EAL");
    result = 1;
  }
  if (ofi_dpdk::g_own_eal) rte_eal_cleanup();
  return result;
}
