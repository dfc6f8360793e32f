// RttHistogram (lib/proto/rtt_histogram.h): the round trips a transport
// measured, and the percentiles the stats ops' ep_rtt and the bottleneck
// bench report: within an eighth above the true value, never below it,
// never above the largest sample; and the engine counting one sample per
// acknowledged segment sent once (TransportStats::round_trips), over the
// in-memory link.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <random>
#include <vector>

#include "lib/proto/rtt_histogram.h"
#include "test/proto/engine_pair.h"

namespace ofi_dpdk::proto {
namespace {

// The exact percentile of `samples` as the histogram defines it: the
// value at rank ceil(n * q), from 1.
uint64_t exact(std::vector<uint64_t> samples, unsigned per_mille) {
  std::sort(samples.begin(), samples.end());
  const size_t rank = std::max<size_t>(1, (samples.size() * per_mille + 999) / 1000);
  return samples[rank - 1];
}

TEST(RttHistogram, EmptySaysZero) {
  RttHistogram h;
  EXPECT_EQ(h.samples(), 0u);
  EXPECT_EQ(h.percentile(500), 0u);
  EXPECT_EQ(h.percentile(990), 0u);
  EXPECT_EQ(h.max_ns(), 0u);
}

TEST(RttHistogram, PercentilesAreWithinAnEighthAboveTheTruth) {
  // Expect: for spreads from microseconds to seconds, each percentile at
  // least the exact one and at most an eighth over it (or the largest
  // sample), and the median, p90, p99 in order.
  std::mt19937_64 random(7);
  for (const uint64_t scale : {uint64_t{3'000}, uint64_t{80'000}, uint64_t{2'000'000'000}}) {
    RttHistogram h;
    std::vector<uint64_t> samples;
    std::lognormal_distribution<double> spread(0.0, 0.8);
    for (int i = 0; i < 20'000; ++i) {
      const auto rtt = static_cast<uint64_t>(static_cast<double>(scale) * spread(random)) + 1;
      samples.push_back(rtt);
      h.add(rtt);
    }
    EXPECT_EQ(h.samples(), samples.size());
    EXPECT_EQ(h.max_ns(), *std::max_element(samples.begin(), samples.end()));
    uint64_t previous = 0;
    for (const unsigned q : {10u, 500u, 900u, 990u, 999u, 1000u}) {
      const uint64_t truth = exact(samples, q);
      const uint64_t told = h.percentile(q);
      // Under 1024 ns everything shares the first bucket.
      const uint64_t floor = std::max<uint64_t>(truth, 1024);
      EXPECT_GE(told, truth) << "scale " << scale << " q " << q;
      EXPECT_LE(told, std::min(floor + floor / 8, h.max_ns())) << "scale " << scale << " q " << q;
      EXPECT_GE(told, previous);
      previous = told;
    }
    EXPECT_EQ(h.percentile(1000), h.max_ns());
  }
}

TEST(RttHistogram, OneSampleIsEveryPercentile) {
  RttHistogram h;
  h.add(123'456);
  EXPECT_EQ(h.percentile(1), 123'456u);
  EXPECT_EQ(h.percentile(500), 123'456u);
  EXPECT_EQ(h.percentile(1000), 123'456u);
}

TEST(RttHistogram, ExtremesLandInTheEndBuckets) {
  // Expect: 0 ns and 100 s are counted, not dropped or out of bounds.
  RttHistogram h;
  h.add(0);
  h.add(100'000'000'000);
  EXPECT_EQ(h.samples(), 2u);
  EXPECT_LT(h.percentile(500), 1152u);  // the first bucket: 1024 ns and an eighth
  EXPECT_EQ(h.max_ns(), 100'000'000'000u);
  EXPECT_GE(h.percentile(1000), uint64_t{1} << 35);
}

TEST(RttHistogram, AnEnginesPingpongCountsItsRoundTrips) {
  // Expect: 200 round trips of 8 bytes over the in-memory link (5 us
  // steps) give each side samples, at most one per segment it sent, with
  // a median above 0 and a tail no longer than the run.
  sim::Pair p(91);
  ASSERT_TRUE(p.warm_up());
  const uint64_t a_before = p.engine(p.a).stats().round_trips.samples();
  std::vector<uint8_t> ping(8, 0x11), pong(8, 0x22), in_a(8), in_b(8);
  constexpr uint64_t kSec = 1'000'000'000;
  for (uintptr_t i = 0; i < 200; ++i) {
    ASSERT_EQ(p.post(p.b, &in_b, reinterpret_cast<void*>(1)), 0);
    ASSERT_EQ(p.post(p.a, &in_a, reinterpret_cast<void*>(2)), 0);
    ASSERT_EQ(p.send(p.a, p.b, ping, reinterpret_cast<void*>(3)), 0);
    ASSERT_TRUE(p.wait(p.b, 1, kSec));
    ASSERT_EQ(p.send(p.b, p.a, pong, reinterpret_cast<void*>(4)), 0);
    ASSERT_TRUE(p.wait(p.a, 2, kSec));
    ASSERT_TRUE(p.wait(p.b, 2, kSec));
    p.done[p.a].clear();
    p.done[p.b].clear();
  }
  for (const auto side : {p.a, p.b}) {
    const RttHistogram& trips = p.engine(side).stats().round_trips;
    EXPECT_GT(trips.samples(), 0u);
    EXPECT_LE(trips.samples(), p.engine(side).stats().frames_sent);
    EXPECT_GT(trips.percentile(500), 0u);
    EXPECT_LE(trips.percentile(500), trips.percentile(990));
    EXPECT_LE(trips.percentile(990), trips.max_ns());
    EXPECT_LT(trips.max_ns(), kSec);
  }
  EXPECT_GT(p.engine(p.a).stats().round_trips.samples(), a_before);
}

}  // namespace
}  // namespace ofi_dpdk::proto
