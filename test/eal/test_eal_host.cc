// Way (c) into EAL: a DPDK program that called rte_eal_init and made its own
// ports.  The provider must not initialise EAL again (FI_DPDK_EAL_ARGS is
// broken on purpose), must offer the ports the program names, and must share
// a port the program started itself.
#include <fi_dpdk.h>
#include <gtest/gtest.h>
#include <rte_eal.h>
#include <rte_eth_ring.h>
#include <rte_ethdev.h>
#include <rte_lcore.h>
#include <rte_mbuf.h>
#include <rte_ring.h>

#include <cstdlib>

#include "test/support/messaging.h"

namespace ofi_dpdk::test {
namespace {

// Two ports joined by crossed rings: what one sends, the other receives.
void make_crossed_ports(const char* a, const char* b) {
  const std::string prefix = std::string(a) + b;
  rte_ring* one = rte_ring_create((prefix + "1").c_str(), 1024, 0, RING_F_SP_ENQ | RING_F_SC_DEQ);
  rte_ring* two = rte_ring_create((prefix + "2").c_str(), 1024, 0, RING_F_SP_ENQ | RING_F_SC_DEQ);
  ASSERT_NE(one, nullptr);
  ASSERT_NE(two, nullptr);
  ASSERT_GE(rte_eth_from_rings(a, &one, 1, &two, 1, 0), 0);
  ASSERT_GE(rte_eth_from_rings(b, &two, 1, &one, 1, 0), 0);
}

// The host program configures and starts a port itself.
void start_port_as_host(const char* name) {
  uint16_t port;
  ASSERT_EQ(rte_eth_dev_get_port_by_name(name, &port), 0);
  static rte_mempool* pool =
      rte_pktmbuf_pool_create("host_pool", 2047, 64, 0, RTE_MBUF_DEFAULT_BUF_SIZE, 0);
  ASSERT_NE(pool, nullptr);
  rte_eth_conf conf{};
  ASSERT_EQ(rte_eth_dev_configure(port, 1, 1, &conf), 0);
  ASSERT_EQ(rte_eth_rx_queue_setup(port, 0, 512, 0, nullptr, pool), 0);
  ASSERT_EQ(rte_eth_tx_queue_setup(port, 0, 512, 0, nullptr), 0);
  ASSERT_EQ(rte_eth_dev_start(port), 0);
}

TEST(EalFromHost, ProviderSeesTheHostsEal) {
  EXPECT_EQ(fi_dpdk_eal_ready(), 1);
}

TEST(EalFromHost, DomainNameSelectsOnePort) {
  fi_info* info = get_dpdk_info("net_ring_ring_b");
  ASSERT_NE(info, nullptr);
  EXPECT_STREQ(info->domain_attr->name, "net_ring_ring_b");
  EXPECT_EQ(info->next, nullptr);
  fi_freeinfo(info);
  EXPECT_EQ(get_dpdk_info("no_such_port"), nullptr);
}

TEST(EalFromHost, AllHostPortsAreOffered) {
  fi_info* info = get_dpdk_info();
  ASSERT_NE(info, nullptr);
  int count = 0;
  for (fi_info* i = info; i; i = i->next) ++count;
  EXPECT_EQ(count, 4);
  fi_freeinfo(info);
}

TEST(EalFromHost, MessagesCrossBetweenTwoPorts) {
  TestDomain left, right;
  ASSERT_EQ(left.open("net_ring_ring_a"), 0);
  ASSERT_EQ(right.open("net_ring_ring_b"), 0);
  TestEndpoint a, b;
  ASSERT_EQ(a.open(left.domain, left.av, left.info), 0);
  ASSERT_EQ(b.open(right.domain, right.av, right.info), 0);
  // Each side's AV needs the other's address.
  fi_addr_t b_at_left, a_at_right;
  ASSERT_EQ(fi_av_insert(left.av, b.name, 1, &b_at_left, 0, nullptr), 1);
  ASSERT_EQ(fi_av_insert(right.av, a.name, 1, &a_at_right, 0, nullptr), 1);
  expect_message_delivered(a, b_at_left, b, "ring_a to ring_b");
  expect_message_delivered(b, a_at_right, a, "and back");
  a.close();
  b.close();
  left.close();
  right.close();
}

TEST(EalFromHost, PortStartedByTheHostIsShared) {
  TestDomain left, right;
  ASSERT_EQ(left.open("net_ring_host_c"), 0);
  ASSERT_EQ(right.open("net_ring_host_d"), 0);
  TestEndpoint c, d;
  ASSERT_EQ(c.open(left.domain, left.av, left.info), 0);
  ASSERT_EQ(d.open(right.domain, right.av, right.info), 0);
  fi_addr_t d_at_left;
  ASSERT_EQ(fi_av_insert(left.av, d.name, 1, &d_at_left, 0, nullptr), 1);
  expect_message_delivered(c, d_at_left, d, "on ports the host started");
  c.close();
  d.close();
  left.close();
  right.close();
  // The provider leaves a port it did not start running.
  uint16_t port;
  ASSERT_EQ(rte_eth_dev_get_port_by_name("net_ring_host_c", &port), 0);
  rte_eth_link link;
  EXPECT_EQ(rte_eth_link_get_nowait(port, &link), 0);
  EXPECT_EQ(link.link_status, RTE_ETH_LINK_UP);
}

}  // namespace
}  // namespace ofi_dpdk::test

int main(int argc, char** argv) {
  setenv("FI_DPDK_EAL_ARGS", "--this-is-not-an-eal-option", 1);
  char* eal_argv[] = {argv[0],
                      const_cast<char*>("-l"),
                      const_cast<char*>("0"),
                      const_cast<char*>("--no-huge"),
                      const_cast<char*>("-m"),
                      const_cast<char*>("512"),
                      const_cast<char*>("--no-shconf"),
                      const_cast<char*>("--no-pci"),
                      const_cast<char*>("--no-telemetry"),
                      const_cast<char*>("--log-level=lib.eal:error"),
                      nullptr};
  if (rte_eal_init(10, eal_argv) < 0) {
    std::fprintf(stderr, "rte_eal_init failed\n");
    return 1;
  }
  // rte_eth_from_rings names its ports net_ring_<name>.
  ofi_dpdk::test::make_crossed_ports("ring_a", "ring_b");
  ofi_dpdk::test::make_crossed_ports("host_c", "host_d");
  ofi_dpdk::test::start_port_as_host("net_ring_host_c");
  ofi_dpdk::test::start_port_as_host("net_ring_host_d");
  testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
