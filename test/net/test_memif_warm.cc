// test_memif_warm.cc: a net_memif port writes to every page of the driver's
// shared memory when its link comes up (drivers/net/memif_warm.h), so that
// the first frames do not each pay page faults.  One server/client pair in
// this process; the kernel's account of each mapping (/proc/self/smaps) says
// whether this process has every page of it mapped.
#include <gtest/gtest.h>

#include <rte_ethdev.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "drivers/net/memif_warm.h"
#include "drivers/net/port.h"
#include "test/support/memif_pairs.h"
#include "test/support/test_eal.h"

namespace ofi_dpdk {
namespace {

using std::chrono::milliseconds;
using std::chrono::steady_clock;

struct Mapping {
  uintptr_t start = 0;
  std::string name;
  uint64_t size_kb = 0;
  uint64_t resident_kb = 0;
};

// Every mapping of net_memif's region files in this process, with its size
// and how much of it this process has mapped in.
std::vector<Mapping> memif_mappings() {
  std::vector<Mapping> found;
  std::ifstream smaps("/proc/self/smaps");
  std::string line;
  Mapping* current = nullptr;
  while (std::getline(smaps, line)) {
    std::istringstream fields(line);
    std::string first;
    fields >> first;
    if (first.find('-') != std::string::npos && first.back() != ':') {
      // A mapping's header: "start-end perms offset dev inode path".
      current = nullptr;
      if (line.find("/memfd:memif_region_") != std::string::npos) {
        found.push_back(
            Mapping{std::stoul(first, nullptr, 16), line.substr(line.find("/memfd:")), 0, 0});
        current = &found.back();
      }
      continue;
    }
    uint64_t kb = 0;
    if (current == nullptr || !(fields >> kb)) continue;
    if (first == "Size:") current->size_kb = kb;
    if (first == "Rss:") current->resident_kb = kb;
  }
  return found;
}

// Ports stay open to the end of the process: closing net_memif pairs while
// EAL's interrupt thread works on their sockets crashes 22.11's control
// path now and then (as test_unmap_guard found), which is not what this
// test is about.
net::Port* open_port(const char* name, bool guarded) {
  static auto* kept = new std::vector<std::unique_ptr<net::Port>>;
  net::PortConfig config;
  config.steering = net::SteeringRequest::kSoftware;
  config.mbufs = 1023;
  config.connect_timeout_ms = 10000;
  config.memif_unmap_guard = guarded ? net::UnmapGuardRequest::kOn : net::UnmapGuardRequest::kOff;
  uint16_t id = 0;
  std::unique_ptr<net::Port> port;
  std::string error;
  EXPECT_EQ(rte_eth_dev_get_port_by_name(name, &id), 0) << name;
  EXPECT_EQ(net::Port::open(id, config, &port, &error), 0) << error;
  kept->push_back(std::move(port));
  return kept->back().get();
}

// Polls the port's link as a poller does (Port::link_up, cached) until up.
bool comes_up(const net::Port& port) {
  const auto end = steady_clock::now() + milliseconds(10000);
  while (!port.link_up()) {
    if (steady_clock::now() > end) return false;
    std::this_thread::sleep_for(milliseconds(1));
  }
  return true;
}

// The address ranges of the memif regions mapped now.
std::vector<std::pair<uintptr_t, uintptr_t>> region_ranges() {
  std::ifstream maps("/proc/self/maps");
  std::string line;
  std::vector<std::pair<uintptr_t, uintptr_t>> regions;
  while (std::getline(maps, line)) {
    if (line.find("/memfd:memif_region_") == std::string::npos) continue;
    unsigned long start = 0, end = 0;
    if (std::sscanf(line.c_str(), "%lx-%lx", &start, &end) == 2) regions.emplace_back(start, end);
  }
  return regions;
}

// Whether `start` begins one of `ranges`.
bool among(uintptr_t start, const std::vector<std::pair<uintptr_t, uintptr_t>>& ranges) {
  for (const auto& range : ranges)
    if (range.first == start) return true;
  return false;
}

TEST(MemifWarm, BothEndsMapEveryPageOfTheRegionOnceTheLinkIsUp) {
  const auto before = region_ranges();
  // The server listens first; the client's start connects (Port::start
  // waits for the link) and the server sees it come up when it polls.
  net::Port* server = open_port("net_memif0", true);
  net::Port* client = open_port("net_memif1", true);
  ASSERT_TRUE(server && client);
  ASSERT_TRUE(comes_up(*client));
  ASSERT_TRUE(comes_up(*server));

  std::vector<Mapping> mappings;
  for (const Mapping& mapping : memif_mappings())
    if (!among(mapping.start, before)) mappings.push_back(mapping);
  // The client's region and the server's mapping of it.
  ASSERT_EQ(mappings.size(), 2u);
  for (const Mapping& mapping : mappings) {
    EXPECT_GT(mapping.size_kb, 4096u) << mapping.name;  // 2 x 512 buffers of 9216 bytes
    EXPECT_EQ(mapping.resident_kb, mapping.size_kb) << mapping.name;
  }
  const uint64_t page_kb = static_cast<uint64_t>(sysconf(_SC_PAGESIZE)) / 1024;
  // Both mappings are in this process: the port that saw its link first
  // warmed what was mapped then, the other what was new by its turn.
  EXPECT_EQ(client->memif_pages_warmed() + server->memif_pages_warmed(),
            (mappings[0].size_kb + mappings[1].size_kb) / page_kb);
}

TEST(MemifWarm, WarmingChangesNoByteOfTheRegion) {
  // Expect: with a mark in every page of the buffers of an idle pair's
  // region (both mappings of it), writing to each page as the warming does
  // changes no byte of it.
  const auto before = region_ranges();
  net::Port* server = open_port("net_memif4", true);
  net::Port* client = open_port("net_memif5", true);
  ASSERT_TRUE(server && client);
  ASSERT_TRUE(comes_up(*client));
  ASSERT_TRUE(comes_up(*server));
  std::vector<std::pair<uintptr_t, uintptr_t>> regions;
  for (const auto& range : region_ranges())
    if (!among(range.first, before)) regions.push_back(range);
  ASSERT_EQ(regions.size(), 2u);
  std::vector<std::vector<uint8_t>> copies;
  for (const auto& [start, end] : regions) {
    // The buffers fill the region's second half (the rings sit at its
    // start); nothing flows, so nothing else writes there.
    for (uintptr_t at = start + (end - start) / 2 + 17; at < end; at += 4096)
      *reinterpret_cast<volatile uint8_t*>(at) = 0xA5;
    copies.emplace_back(reinterpret_cast<uint8_t*>(start), reinterpret_cast<uint8_t*>(end));
  }
  for (const auto& [start, end] : regions)
    EXPECT_EQ(net::write_each_page(reinterpret_cast<void*>(start), end - start),
              (end - start + 4095) / 4096);
  for (size_t i = 0; i < regions.size(); ++i)
    EXPECT_EQ(
        std::memcmp(copies[i].data(), reinterpret_cast<void*>(regions[i].first), copies[i].size()),
        0);
}

TEST(MemifWarm, AnUnguardedPortLeavesTheRegionAsTheDriverMappedIt) {
  // Without the unmap guard the driver could unmap the region while we
  // write to it: such a port does not warm.
  net::Port* server = open_port("net_memif2", false);
  net::Port* client = open_port("net_memif3", false);
  ASSERT_TRUE(server && client);
  ASSERT_TRUE(comes_up(*client));
  ASSERT_TRUE(comes_up(*server));
  EXPECT_EQ(client->memif_pages_warmed(), 0u);
  EXPECT_EQ(server->memif_pages_warmed(), 0u);
}

}  // namespace
}  // namespace ofi_dpdk

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  const ofi_dpdk::test::MemifPairVdevs pairs("memif-warm", 3, "rsize=9,bsize=9216");
  if (!ofi_dpdk::test::bring_up_test_eal("test_memif_warm", pairs.eal_args())) return 1;
  const int status = RUN_ALL_TESTS();
  // No rte_eal_cleanup (as test_unmap_guard: 22.11's memif close races its
  // interrupt thread); the process's end frees all.
  return status;
}
