// crossed_ports.h: the main() of a test whose endpoints sit on two DPDK
// ports joined by crossed rings (rte_eth_from_rings: what port <name>_a
// sends, <name>_b receives, and back).  The test initialises EAL itself,
// with one lcore and no hugepages, before the provider finds it up.
#pragma once

#include <gtest/gtest.h>
#include <rte_eal.h>
#include <rte_eth_ring.h>
#include <rte_ring.h>

#include <cstdio>
#include <string>

namespace ofi_dpdk::test {

inline bool make_crossed_ports(const std::string& name) {
  rte_ring* one = rte_ring_create((name + "_1").c_str(), 1024, 0, RING_F_SP_ENQ | RING_F_SC_DEQ);
  rte_ring* two = rte_ring_create((name + "_2").c_str(), 1024, 0, RING_F_SP_ENQ | RING_F_SC_DEQ);
  return one != nullptr && two != nullptr &&
         rte_eth_from_rings((name + "_a").c_str(), &one, 1, &two, 1, 0) >= 0 &&
         rte_eth_from_rings((name + "_b").c_str(), &two, 1, &one, 1, 0) >= 0;
}

// Initialises EAL, makes the ports <name>_a and <name>_b, runs the tests.
inline int run_over_crossed_ports(int argc, char** argv, const std::string& name) {
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
  if (!make_crossed_ports(name)) {
    std::fprintf(stderr, "could not create the crossed net_ring ports\n");
    return 1;
  }
  testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}

}  // namespace ofi_dpdk::test
