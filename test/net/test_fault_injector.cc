// test_fault_injector.cc: the fault injector on a real DPDK port.  One
// net_ring vdev loops back to itself (TX queue 0 arrives on RX queue 0);
// numbered frames go round while the injector works on the receive side,
// and each fault is checked against its rate and its exact effect.  Needs
// no hugepages and no NIC; has its own main() because EAL starts once.
#include <gtest/gtest.h>

#include <rte_eal.h>
#include <rte_ethdev.h>
#include <rte_mbuf.h>
#include <rte_mempool.h>

#include <array>
#include <bit>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include "drivers/net/fault_injector.h"
#include "test/support/test_eal.h"

namespace ofi_dpdk::net {
namespace {

using Clock = std::chrono::steady_clock;

constexpr uint32_t kFrameLen = 64;
constexpr uint32_t kEthLen = 14;
constexpr uint16_t kEtherType = 0x88B5;  // IEEE local experimental
constexpr uint32_t kFrames = 20000;
constexpr uint16_t kTxBurst = 16;
// Frames in flight (sent, not yet received, not dropped) are capped so the
// injector never runs out of hold slots, which would turn chosen faults
// into passes and bias the counts the tests check.
constexpr uint32_t kWindow = 32;
static_assert(kWindow < FaultInjector::kMaxHeldFrames);
constexpr uint16_t kRxBurst = 64;  // > kWindow: duplicates always find room
constexpr auto kRunLimit = std::chrono::seconds(5);

uint16_t g_port = 0;
rte_mempool* g_pool = nullptr;

using Frame = std::array<uint8_t, kFrameLen>;

// Ethernet header, then the sequence number three times (so a single
// flipped bit never hides which frame this is), then a pattern from it.
Frame expected_frame(uint32_t seq) {
  Frame f{};
  const uint8_t dst[6] = {0x02, 0, 0, 0, 0, 0x01};
  const uint8_t src[6] = {0x02, 0, 0, 0, 0, 0x02};
  std::memcpy(f.data(), dst, 6);
  std::memcpy(f.data() + 6, src, 6);
  f[12] = kEtherType >> 8;
  f[13] = kEtherType & 0xff;
  for (int copy = 0; copy < 3; ++copy) {
    std::memcpy(f.data() + kEthLen + 4 * copy, &seq, 4);
  }
  for (uint32_t i = kEthLen + 12; i < kFrameLen; ++i) {
    f[i] = static_cast<uint8_t>(seq * 31 + i);
  }
  return f;
}

// Majority of the three copies; nullopt when no two agree.
std::optional<uint32_t> frame_seq(const Frame& f) {
  uint32_t s[3];
  for (int copy = 0; copy < 3; ++copy) {
    std::memcpy(&s[copy], f.data() + kEthLen + 4 * copy, 4);
  }
  if (s[0] == s[1] || s[0] == s[2]) return s[0];
  if (s[1] == s[2]) return s[1];
  return std::nullopt;
}

int differing_bits(const Frame& a, const Frame& b, uint32_t from, uint32_t to) {
  int bits = 0;
  for (uint32_t i = from; i < to; ++i) {
    bits += std::popcount(static_cast<unsigned>(a[i] ^ b[i]));
  }
  return bits;
}

// |k - n p| <= 5 sigma of the binomial.
void expect_binomial(uint64_t observed, uint64_t n, double p, const char* what) {
  const double mean = static_cast<double>(n) * p;
  const double sigma = std::sqrt(static_cast<double>(n) * p * (1 - p));
  EXPECT_LE(std::fabs(static_cast<double>(observed) - mean), 5 * sigma)
      << what << ": observed " << observed << " of " << n << ", expected " << mean << " +- "
      << 5 * sigma;
}

struct Arrival {
  uint32_t seq;
  Frame bytes;
};

struct Traffic {
  std::vector<Arrival> arrivals;  // in arrival order, duplicates included
  uint32_t distinct = 0;
  uint32_t undecodable = 0;
  bool timed_out = false;
};

// Receives once into `run`; returns how many frames came.
uint16_t receive(Traffic* run, std::vector<uint8_t>* seen, uint16_t burst) {
  rte_mbuf* pkts[kRxBurst];
  const uint16_t nb = rte_eth_rx_burst(g_port, 0, pkts, burst);
  for (uint16_t i = 0; i < nb; ++i) {
    rte_mbuf* m = pkts[i];
    Frame bytes{};
    const bool whole = m->nb_segs == 1 && rte_pktmbuf_pkt_len(m) == kFrameLen;
    if (whole) {
      std::memcpy(bytes.data(), rte_pktmbuf_mtod(m, uint8_t*), kFrameLen);
    }
    rte_pktmbuf_free(m);
    const auto seq = whole ? frame_seq(bytes) : std::nullopt;
    if (!seq || *seq >= seen->size()) {
      ++run->undecodable;
      continue;
    }
    if ((*seen)[*seq]++ == 0) ++run->distinct;
    run->arrivals.push_back(Arrival{*seq, bytes});
  }
  return nb;
}

// Sends frames 0..n-1 in bursts, at most kWindow in flight, and receives
// until every frame arrived or was dropped, or kRunLimit passed.  Then
// polls on for a moment to catch anything that comes late.
Traffic run_traffic(uint32_t n, const FaultInjector* injector, uint16_t rx_burst = kRxBurst) {
  Traffic run;
  std::vector<uint8_t> seen(n, 0);
  uint32_t sent = 0;
  const auto deadline = Clock::now() + kRunLimit;
  for (;;) {
    const uint64_t dropped = injector ? injector->stats().dropped : 0;
    if (sent == n && run.distinct + dropped == n) break;
    if (Clock::now() > deadline) {
      run.timed_out = true;
      break;
    }
    const uint64_t in_flight = sent - run.distinct - dropped;
    if (sent < n && in_flight + kTxBurst <= kWindow) {
      rte_mbuf* pkts[kTxBurst];
      const uint16_t count = static_cast<uint16_t>(std::min<uint32_t>(kTxBurst, n - sent));
      if (rte_pktmbuf_alloc_bulk(g_pool, pkts, count) == 0) {
        for (uint16_t i = 0; i < count; ++i) {
          const Frame f = expected_frame(sent + i);
          std::memcpy(rte_pktmbuf_append(pkts[i], kFrameLen), f.data(), kFrameLen);
        }
        const uint16_t nb_tx = rte_eth_tx_burst(g_port, 0, pkts, count);
        for (uint16_t i = nb_tx; i < count; ++i) rte_pktmbuf_free(pkts[i]);
        sent += nb_tx;
      }
    }
    receive(&run, &seen, rx_burst);
  }
  const auto settle = Clock::now() + std::chrono::milliseconds(5);
  while (Clock::now() < settle) receive(&run, &seen, rx_burst);
  return run;
}

// Arrivals whose sequence number is below one seen earlier.
uint32_t count_late(const Traffic& run) {
  uint32_t late = 0;
  int64_t highest = -1;
  for (const Arrival& a : run.arrivals) {
    if (static_cast<int64_t>(a.seq) < highest) {
      ++late;
    } else {
      highest = a.seq;
    }
  }
  return late;
}

uint32_t count_changed(const Traffic& run) {
  uint32_t changed = 0;
  for (const Arrival& a : run.arrivals) {
    changed += a.bytes != expected_frame(a.seq);
  }
  return changed;
}

class FaultInjectorTest : public ::testing::Test {
 protected:
  void SetUp() override {
    // Leftovers of a failed earlier test must not count here.
    rte_mbuf* pkts[kRxBurst];
    uint16_t nb;
    while ((nb = rte_eth_rx_burst(g_port, 0, pkts, kRxBurst)) > 0) {
      rte_pktmbuf_free_bulk(pkts, nb);
    }
  }
  void TearDown() override {
    // Every mbuf the test or the injector took is back: nothing held is
    // leaked, no duplicate is left behind.
    EXPECT_EQ(rte_mempool_in_use_count(g_pool), 0u);
  }

  std::unique_ptr<FaultInjector> attach(const FaultConfig& config) {
    std::string error;
    auto injector = FaultInjector::attach(g_port, 1, config, &error);
    EXPECT_NE(injector, nullptr) << error;
    return injector;
  }
};

TEST_F(FaultInjectorTest, NoFaultsMeansNoInjectorAndCleanTraffic) {
  std::string error = "untouched";
  FaultConfig config;
  config.delay_us = 5;  // not a rate: still nothing to inject
  EXPECT_EQ(FaultInjector::attach(g_port, 1, config, &error), nullptr);
  EXPECT_EQ(error, "untouched");

  const Traffic run = run_traffic(kFrames, nullptr);
  ASSERT_FALSE(run.timed_out);
  ASSERT_EQ(run.arrivals.size(), kFrames);
  for (uint32_t i = 0; i < kFrames; ++i) {
    ASSERT_EQ(run.arrivals[i].seq, i);
    ASSERT_EQ(run.arrivals[i].bytes, expected_frame(i));
  }
}

TEST_F(FaultInjectorTest, AttachFailuresSayWhyAndLeaveThePortClean) {
  FaultConfig config;
  config.drop = 0.5;
  std::string error;
  // Queue 1 does not exist: queue 0's callback must be removed again.
  EXPECT_EQ(FaultInjector::attach(g_port, 2, config, &error), nullptr);
  EXPECT_NE(error.find("queue 1"), std::string::npos) << error;

  error.clear();
  EXPECT_EQ(FaultInjector::attach(RTE_MAX_ETHPORTS - 1, 1, config, &error), nullptr);
  EXPECT_FALSE(error.empty());

  error.clear();
  EXPECT_EQ(FaultInjector::attach(g_port, 0, config, &error), nullptr);
  EXPECT_FALSE(error.empty());

  error.clear();
  config.drop = 1.5;
  EXPECT_EQ(FaultInjector::attach(g_port, 1, config, &error), nullptr);
  EXPECT_FALSE(error.empty());

  // No callback survived: everything passes untouched and in order.
  const Traffic run = run_traffic(2000, nullptr);
  ASSERT_EQ(run.arrivals.size(), 2000u);
  for (uint32_t i = 0; i < 2000; ++i) {
    ASSERT_EQ(run.arrivals[i].seq, i);
    ASSERT_EQ(run.arrivals[i].bytes, expected_frame(i));
  }
}

TEST_F(FaultInjectorTest, Drop) {
  FaultConfig config;
  config.drop = 0.10;
  config.seed = 11;
  auto injector = attach(config);
  ASSERT_NE(injector, nullptr);
  const Traffic run = run_traffic(kFrames, injector.get());
  const FaultStats stats = injector->stats();
  injector.reset();

  EXPECT_FALSE(run.timed_out);
  EXPECT_EQ(run.undecodable, 0u);
  EXPECT_EQ(run.arrivals.size(), run.distinct);  // nothing twice
  expect_binomial(run.distinct, kFrames, 1 - config.drop, "received");
  EXPECT_EQ(stats.dropped, kFrames - run.distinct);
  EXPECT_EQ(stats.passed, run.distinct);
  EXPECT_EQ(count_late(run), 0u);
  EXPECT_EQ(count_changed(run), 0u);
}

TEST_F(FaultInjectorTest, Duplicate) {
  FaultConfig config;
  config.duplicate = 0.10;
  config.seed = 12;
  auto injector = attach(config);
  ASSERT_NE(injector, nullptr);
  const Traffic run = run_traffic(kFrames, injector.get());
  const FaultStats stats = injector->stats();
  injector.reset();

  EXPECT_FALSE(run.timed_out);
  EXPECT_EQ(run.undecodable, 0u);
  EXPECT_EQ(run.distinct, kFrames);
  const uint64_t extra = run.arrivals.size() - run.distinct;
  EXPECT_EQ(extra, stats.duplicated);
  expect_binomial(extra, kFrames, config.duplicate, "duplicated");
  EXPECT_EQ(stats.duplicated + stats.passed, kFrames);

  // Every copy is byte for byte its original.
  std::vector<const Arrival*> first(kFrames, nullptr);
  uint32_t compared = 0;
  for (const Arrival& a : run.arrivals) {
    if (first[a.seq] == nullptr) {
      first[a.seq] = &a;
      EXPECT_EQ(a.bytes, expected_frame(a.seq));
    } else {
      EXPECT_EQ(a.bytes, first[a.seq]->bytes) << "duplicate of " << a.seq;
      ++compared;
    }
  }
  EXPECT_EQ(compared, extra);
}

TEST_F(FaultInjectorTest, Reorder) {
  FaultConfig config;
  config.reorder = 0.10;
  config.seed = 13;
  auto injector = attach(config);
  ASSERT_NE(injector, nullptr);
  const Traffic run = run_traffic(kFrames, injector.get());
  const FaultStats stats = injector->stats();
  const uint32_t held = injector->held_frames();
  injector.reset();

  EXPECT_FALSE(run.timed_out);
  EXPECT_EQ(held, 0u);
  EXPECT_EQ(run.undecodable, 0u);
  EXPECT_EQ(run.distinct, kFrames);                 // nothing lost
  EXPECT_EQ(run.arrivals.size(), size_t{kFrames});  // nothing twice
  const uint32_t late = count_late(run);
  EXPECT_GT(late, 0u);
  EXPECT_LE(late, stats.reordered);  // only held frames come late
  expect_binomial(stats.reordered, kFrames, config.reorder, "reordered");
  EXPECT_EQ(stats.reordered + stats.passed, kFrames);
  EXPECT_EQ(count_changed(run), 0u);
}

TEST_F(FaultInjectorTest, Corrupt) {
  FaultConfig config;
  config.corrupt = 0.10;
  config.seed = 14;
  auto injector = attach(config);
  ASSERT_NE(injector, nullptr);
  const Traffic run = run_traffic(kFrames, injector.get());
  const FaultStats stats = injector->stats();
  injector.reset();

  EXPECT_FALSE(run.timed_out);
  EXPECT_EQ(run.undecodable, 0u);
  EXPECT_EQ(run.distinct, kFrames);
  EXPECT_EQ(run.arrivals.size(), size_t{kFrames});
  uint32_t changed = 0;
  for (const Arrival& a : run.arrivals) {
    const Frame want = expected_frame(a.seq);
    // The Ethernet header is never touched, so the frame still reaches
    // the stack; the payload differs in at most one bit.
    ASSERT_EQ(differing_bits(a.bytes, want, 0, kEthLen), 0) << a.seq;
    const int bits = differing_bits(a.bytes, want, kEthLen, kFrameLen);
    ASSERT_LE(bits, 1) << a.seq;
    changed += bits;
  }
  EXPECT_EQ(changed, stats.corrupted);
  expect_binomial(changed, kFrames, config.corrupt, "corrupted");
  EXPECT_EQ(stats.corrupted + stats.passed, kFrames);
}

TEST_F(FaultInjectorTest, Delay) {
  FaultConfig config;
  config.delay = 0.10;
  config.delay_us = 100;
  config.seed = 15;
  auto injector = attach(config);
  ASSERT_NE(injector, nullptr);
  const Traffic run = run_traffic(kFrames, injector.get());
  const FaultStats stats = injector->stats();
  const uint32_t held = injector->held_frames();
  injector.reset();

  EXPECT_FALSE(run.timed_out);
  EXPECT_EQ(held, 0u);
  EXPECT_EQ(run.undecodable, 0u);
  EXPECT_EQ(run.distinct, kFrames);
  EXPECT_EQ(run.arrivals.size(), size_t{kFrames});
  expect_binomial(stats.delayed, kFrames, config.delay, "delayed");
  EXPECT_EQ(stats.delayed + stats.passed, kFrames);
  EXPECT_LE(count_late(run), stats.delayed);
  EXPECT_EQ(count_changed(run), 0u);
}

TEST_F(FaultInjectorTest, DelayedFrameWaitsDelayUs) {
  FaultConfig config;
  config.delay = 1;
  config.delay_us = 20000;
  auto injector = attach(config);
  ASSERT_NE(injector, nullptr);

  rte_mbuf* m = rte_pktmbuf_alloc(g_pool);
  ASSERT_NE(m, nullptr);
  const Frame f = expected_frame(7);
  std::memcpy(rte_pktmbuf_append(m, kFrameLen), f.data(), kFrameLen);
  const auto start = Clock::now();
  ASSERT_EQ(rte_eth_tx_burst(g_port, 0, &m, 1), 1);

  Traffic run;
  std::vector<uint8_t> seen(8, 0);
  const auto limit = start + std::chrono::seconds(2);
  while (run.arrivals.empty() && Clock::now() < limit) {
    receive(&run, &seen, kRxBurst);
  }
  const auto waited = Clock::now() - start;
  ASSERT_EQ(run.arrivals.size(), 1u);
  EXPECT_EQ(run.arrivals[0].bytes, f);
  EXPECT_GE(waited, std::chrono::microseconds(config.delay_us));
  EXPECT_LT(waited, std::chrono::milliseconds(500));
}

TEST_F(FaultInjectorTest, ReorderedFrameLeavesWithoutNewTraffic) {
  // A held frame must never be lost: with no frame after it, it still goes
  // out after at most kReorderMaxCalls empty rx_burst calls.
  FaultConfig config;
  config.reorder = 1;
  auto injector = attach(config);
  ASSERT_NE(injector, nullptr);

  rte_mbuf* m = rte_pktmbuf_alloc(g_pool);
  ASSERT_NE(m, nullptr);
  const Frame f = expected_frame(3);
  std::memcpy(rte_pktmbuf_append(m, kFrameLen), f.data(), kFrameLen);
  ASSERT_EQ(rte_eth_tx_burst(g_port, 0, &m, 1), 1);

  Traffic run;
  std::vector<uint8_t> seen(4, 0);
  uint32_t calls = 0;
  while (run.arrivals.empty() && calls < 1000) {
    receive(&run, &seen, kRxBurst);
    ++calls;
  }
  ASSERT_EQ(run.arrivals.size(), 1u);
  EXPECT_EQ(run.arrivals[0].bytes, f);
  EXPECT_LE(calls, 1 + FaultInjector::kReorderMaxCalls);
  EXPECT_EQ(injector->stats().reordered, 1u);
}

TEST_F(FaultInjectorTest, HoldSlotsAreBoundedAndFreedOnDetach) {
  FaultConfig config;
  config.delay = 1;
  config.delay_us = 10000000;  // 10 s: still held when we detach
  auto injector = attach(config);
  ASSERT_NE(injector, nullptr);

  constexpr uint32_t kSent = FaultInjector::kMaxHeldFrames + 36;
  Traffic run;
  std::vector<uint8_t> seen(kSent, 0);
  for (uint32_t base = 0; base < kSent; base += kTxBurst) {
    rte_mbuf* pkts[kTxBurst];
    const uint16_t count = static_cast<uint16_t>(std::min<uint32_t>(kTxBurst, kSent - base));
    ASSERT_EQ(rte_pktmbuf_alloc_bulk(g_pool, pkts, count), 0);
    for (uint16_t i = 0; i < count; ++i) {
      const Frame f = expected_frame(base + i);
      std::memcpy(rte_pktmbuf_append(pkts[i], kFrameLen), f.data(), kFrameLen);
    }
    ASSERT_EQ(rte_eth_tx_burst(g_port, 0, pkts, count), count);
    for (int i = 0; i < 4; ++i) receive(&run, &seen, kRxBurst);
  }
  for (int i = 0; i < 100; ++i) receive(&run, &seen, kRxBurst);

  // The first kMaxHeldFrames are held, the rest pass as the slots are full.
  const FaultStats stats = injector->stats();
  EXPECT_EQ(stats.delayed, FaultInjector::kMaxHeldFrames);
  EXPECT_EQ(stats.passed, kSent - FaultInjector::kMaxHeldFrames);
  EXPECT_EQ(injector->held_frames(), FaultInjector::kMaxHeldFrames);
  ASSERT_EQ(run.arrivals.size(), kSent - FaultInjector::kMaxHeldFrames);
  EXPECT_EQ(run.arrivals.front().seq, FaultInjector::kMaxHeldFrames);

  injector.reset();  // frees the held frames: TearDown checks the pool
  for (int i = 0; i < 100; ++i) receive(&run, &seen, kRxBurst);
  EXPECT_EQ(run.arrivals.size(), kSent - FaultInjector::kMaxHeldFrames);
}

TEST_F(FaultInjectorTest, AllFaultsWithSmallBurstsLoseNothingHeld) {
  // Tiny caller arrays force released frames and duplicates to wait for
  // room (the carry path); every frame not dropped must still arrive,
  // exactly once apart from duplicates.
  for (const int size : {1, 2, 3, 8}) {
    const auto burst = static_cast<uint16_t>(size);
    SCOPED_TRACE("rx burst " + std::to_string(burst));
    FaultConfig config;
    config.drop = 0.05;
    config.reorder = 0.05;
    config.duplicate = 0.05;
    config.corrupt = 0.05;
    config.delay = 0.05;
    config.delay_us = 50;
    config.seed = 100 + burst;
    auto injector = attach(config);
    ASSERT_NE(injector, nullptr);
    const Traffic run = run_traffic(5000, injector.get(), burst);
    const FaultStats stats = injector->stats();
    const uint32_t held = injector->held_frames();
    injector.reset();

    EXPECT_FALSE(run.timed_out);
    EXPECT_EQ(held, 0u);
    EXPECT_EQ(run.undecodable, 0u);
    EXPECT_EQ(run.distinct + stats.dropped, 5000u);
    EXPECT_EQ(run.arrivals.size() - run.distinct, stats.duplicated);
    EXPECT_EQ(stats.dropped + stats.duplicated + stats.reordered + stats.corrupted + stats.delayed +
                  stats.passed,
              5000u);
    EXPECT_EQ(count_changed(run), stats.corrupted);
    // Even a caller that reads one frame at a time, never leaving a spare
    // slot, gets duplicates: the copy comes with the next burst.
    EXPECT_GT(stats.duplicated, 0u);
  }
}

bool set_up_port() {
  g_pool = rte_pktmbuf_pool_create("fault_test_pool", 8191, 256, 0, RTE_MBUF_DEFAULT_BUF_SIZE,
                                   rte_socket_id());
  if (g_pool == nullptr) {
    std::fprintf(stderr, "mempool: %s\n", rte_strerror(rte_errno));
    return false;
  }
  if (rte_eth_dev_get_port_by_name("net_ring0", &g_port) != 0) {
    std::fprintf(stderr, "no net_ring0 port\n");
    return false;
  }
  rte_eth_conf conf{};
  int rc = rte_eth_dev_configure(g_port, 1, 1, &conf);
  if (rc == 0) {
    rc = rte_eth_rx_queue_setup(g_port, 0, 1024, rte_socket_id(), nullptr, g_pool);
  }
  if (rc == 0) {
    rc = rte_eth_tx_queue_setup(g_port, 0, 1024, rte_socket_id(), nullptr);
  }
  if (rc == 0) rc = rte_eth_dev_start(g_port);
  if (rc != 0) {
    std::fprintf(stderr, "port %u set-up: %s\n", g_port, rte_strerror(-rc));
    return false;
  }
  return true;
}

}  // namespace
}  // namespace ofi_dpdk::net

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);

  if (!ofi_dpdk::test::bring_up_test_eal("test_fault_injector", {"--vdev=net_ring0"})) return 1;
  int result = 1;
  if (ofi_dpdk::net::set_up_port()) result = RUN_ALL_TESTS();

  using ofi_dpdk::net::g_pool;
  using ofi_dpdk::net::g_port;
  rte_eth_dev_stop(g_port);
  rte_eth_dev_close(g_port);
  if (g_pool != nullptr) rte_mempool_free(g_pool);
  rte_eal_cleanup();
  return result;
}
