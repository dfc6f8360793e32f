// test_interrupt_thread.cc: device control run on EAL's interrupt thread
// (drivers/net/interrupt_thread.h).  net_memif frees a connection's regions
// both in rte_eth_dev_stop and on the interrupt thread when the peer goes,
// with no lock between the two, so a port's close stops its device on that
// thread.  Both ends of each memif pair are in this process.
#include <gtest/gtest.h>

#include <rte_ethdev.h>
#include <rte_interrupts.h>
#include <rte_log.h>
#include <rte_malloc.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "drivers/net/interrupt_thread.h"
#include "drivers/net/port.h"
#include "test/support/memif_pairs.h"
#include "test/support/test_eal.h"

namespace ofi_dpdk {
namespace {

using std::chrono::milliseconds;
using std::chrono::steady_clock;

TEST(InterruptThread, RunsTheWorkThereAndReturnsWhenItHasRun) {
  std::atomic<int> on_interrupt_thread{-1};
  net::run_on_interrupt_thread([&] {
    std::this_thread::sleep_for(milliseconds(20));  // the caller waits it out
    on_interrupt_thread = rte_thread_is_intr();
  });
  EXPECT_EQ(on_interrupt_thread.load(), 1);
}

TEST(InterruptThread, WorkAskedForThereRunsAtOnce) {
  int depth = 0;
  net::run_on_interrupt_thread([&] {
    ++depth;
    // Waiting for an alarm from the thread that runs alarms would hang.
    net::run_on_interrupt_thread([&] { depth += rte_thread_is_intr() ? 10 : 100; });
  });
  EXPECT_EQ(depth, 11);
}

// Pairs of net_memif vdevs main() creates: server net_memif<2i>, client
// net_memif<2i+1>, each on a socket of its own and used for one round.
constexpr int kPairs = 16;

bool link_up(uint16_t port, milliseconds limit) {
  const auto end = steady_clock::now() + limit;
  do {
    rte_eth_link link{};
    if (rte_eth_link_get_nowait(port, &link) == 0 && link.link_status == RTE_ETH_LINK_UP)
      return true;
    std::this_thread::sleep_for(milliseconds(1));
  } while (steady_clock::now() < end);
  return false;
}

std::unique_ptr<net::Port> open_port(int vdev) {
  net::PortConfig config;
  config.steering = net::SteeringRequest::kSoftware;
  config.mbufs = 1023;
  config.rx_descriptors = 128;
  config.tx_descriptors = 128;
  config.connect_timeout_ms = 10000;
  const std::string name = "net_memif" + std::to_string(vdev);
  uint16_t id = 0;
  std::unique_ptr<net::Port> port;
  std::string error;
  if (rte_eth_dev_get_port_by_name(name.c_str(), &id) != 0 ||
      net::Port::open(id, config, &port, &error) != 0) {
    std::fprintf(stderr, "%s: %s\n", name.c_str(), error.c_str());
    return nullptr;
  }
  return port;
}

// EAL's complaints about the heap ("Invalid memory" from a second free).
char g_log[1 << 16];
FILE* g_log_stream = nullptr;

size_t heap_complaints() {
  std::fflush(g_log_stream);
  size_t count = 0;
  for (const char* at = g_log; (at = std::strstr(at, "Invalid memory")) != nullptr; ++at) ++count;
  return count;
}

// Stops both ends of each pair at once, the server first, the way two
// processes that finish together close their ports; then uses the heap.
// Returns how many times EAL found the heap broken.
size_t stop_pairs_at_once(int first_pair) {
  for (int pair = first_pair; pair < kPairs; ++pair) {
    std::unique_ptr<net::Port> server = open_port(2 * pair);
    std::unique_ptr<net::Port> client = open_port(2 * pair + 1);
    if (!server || !client || !link_up(server->id(), milliseconds(10000)) ||
        !link_up(client->id(), milliseconds(10000))) {
      ADD_FAILURE() << "pair " << pair << " did not connect";
      return 0;
    }
    // The server goes first; the client's interrupt thread hears of it
    // and starts tearing the client down, marking its link down first of
    // all; the client's own close comes right then.
    server.reset();
    const uint16_t client_id = client->id();
    const auto end = steady_clock::now() + milliseconds(10000);
    for (rte_eth_link link{}; rte_eth_link_get_nowait(client_id, &link) == 0 &&
                              link.link_status == RTE_ETH_LINK_UP && steady_clock::now() < end;) {
    }
    client.reset();
  }
  std::this_thread::sleep_for(milliseconds(100));  // the last goodbyes handled
  std::vector<void*> blocks;
  for (int i = 0; i < 4096; ++i) blocks.push_back(rte_malloc(nullptr, 64 + 64 * (i % 64), 0));
  for (void* block : blocks) rte_free(block);
  return heap_complaints();
}

// A port's close stops the device on the interrupt thread: while that
// thread is busy (here with work of ours, in the race with a driver's
// handler), the close waits.
TEST(InterruptThread, APortsCloseWaitsForTheInterruptThread) {
  std::unique_ptr<net::Port> server = open_port(0);
  std::unique_ptr<net::Port> client = open_port(1);
  ASSERT_TRUE(server && client);
  ASSERT_TRUE(link_up(client->id(), milliseconds(10000)));
  std::atomic<bool> holding{false}, release{false}, closed{false};
  std::thread holder([&] {
    net::run_on_interrupt_thread([&] {
      holding = true;
      while (!release) std::this_thread::sleep_for(milliseconds(1));
    });
  });
  while (!holding) std::this_thread::sleep_for(milliseconds(1));
  std::thread closer([&] {
    client.reset();
    closed = true;
  });
  std::this_thread::sleep_for(milliseconds(200));
  EXPECT_FALSE(closed.load()) << "the close stopped the device beside the interrupt thread";
  release = true;
  holder.join();
  closer.join();
  EXPECT_TRUE(closed.load());
  server.reset();
}

// What CI once saw (a fault in rte_free under rte_eth_dev_stop, both ends
// closing at once), asked for on every remaining pair.  Stopped from the
// closing thread, the race is narrow and was not met here on demand; this
// keeps the close path honest rather than proving the race.
TEST(InterruptThread, BothEndsOfMemifPairsClosedAtOnceKeepTheHeapWhole) {
  EXPECT_EQ(stop_pairs_at_once(1), 0u) << g_log;
}

}  // namespace
}  // namespace ofi_dpdk

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  using ofi_dpdk::g_log;
  ofi_dpdk::g_log_stream = fmemopen(g_log, sizeof g_log - 1, "w");
  if (ofi_dpdk::g_log_stream != nullptr) rte_openlog_stream(ofi_dpdk::g_log_stream);
  const ofi_dpdk::test::MemifPairVdevs pairs("intr-thread", ofi_dpdk::kPairs, "rsize=8");
  if (!ofi_dpdk::test::bring_up_test_eal("test_interrupt_thread", pairs.eal_args())) return 1;
  const int status = RUN_ALL_TESTS();
  return status;
}
