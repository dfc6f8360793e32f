// test_eal.h: EAL for a test program that brings it up itself, before its
// tests: no hugepages and no shared files (tests may run side by side),
// 256 MiB, lcore 0, no PCI, and the test's own extra arguments (a vdev).
#pragma once

#include <rte_eal.h>
#include <rte_errno.h>

#include <cstdio>
#include <string>
#include <vector>

namespace ofi_dpdk::test {

inline bool bring_up_test_eal(const char* program, const std::vector<std::string>& extra = {}) {
  // EAL reorders its argv and keeps pointers into it: a copy that lives on.
  static std::vector<std::string> args;
  args = {program,    "--no-huge",      "--no-shconf", "-m", "256",
          "--no-pci", "--no-telemetry", "-l",          "0",  "--log-level=lib.eal:error"};
  args.insert(args.end(), extra.begin(), extra.end());
  static std::vector<char*> argv;
  argv.clear();
  for (std::string& arg : args) argv.push_back(arg.data());
  if (rte_eal_init(static_cast<int>(argv.size()), argv.data()) < 0) {
    std::fprintf(stderr, "%s: rte_eal_init: %s\n", program, rte_strerror(rte_errno));
    return false;
  }
  return true;
}

}  // namespace ofi_dpdk::test
