// test_fault_plan.cc: the fault plan's rate parsing and its statistics: each
// action happens as often as configured, within a binomial bound, and the
// plan replays exactly from its seed.  Pure C++, no DPDK.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <map>
#include <vector>

#include "drivers/net/fault_plan.h"

namespace ofi_dpdk::net {
namespace {

constexpr uint64_t kDecisions = 200000;

// |k - n p| <= 5 sigma of the binomial: a correct plan fails this about
// once in 1.7 million runs; a plan off by a tenth of the rate fails always.
void expect_binomial(uint64_t observed, uint64_t n, double p, const char* what) {
  const double mean = static_cast<double>(n) * p;
  const double sigma = std::sqrt(static_cast<double>(n) * p * (1 - p));
  EXPECT_LE(std::fabs(static_cast<double>(observed) - mean), 5 * sigma)
      << what << ": observed " << observed << " of " << n << ", expected " << mean << " +- "
      << 5 * sigma;
}

std::map<FaultAction, uint64_t> tally(FaultPlan& plan, uint64_t n) {
  std::map<FaultAction, uint64_t> counts;
  for (uint64_t i = 0; i < n; ++i) ++counts[plan.next()];
  return counts;
}

TEST(ParseRate, AcceptsFractions) {
  EXPECT_EQ(parse_rate("0"), 0.0);
  EXPECT_EQ(parse_rate("1"), 1.0);
  EXPECT_EQ(parse_rate("0.05"), 0.05);
  EXPECT_EQ(parse_rate(".5"), 0.5);
  EXPECT_EQ(parse_rate("1e-3"), 0.001);
  EXPECT_EQ(parse_rate("  0.25\t"), 0.25);  // blanks around are fine
}

TEST(ParseRate, AcceptsPercent) {
  EXPECT_EQ(parse_rate("5%"), 0.05);
  EXPECT_EQ(parse_rate("100%"), 1.0);
  EXPECT_EQ(parse_rate("0%"), 0.0);
  EXPECT_EQ(parse_rate("12.5%"), 0.125);
  EXPECT_EQ(parse_rate(" 20% "), 0.2);
}

TEST(ParseRate, RejectsBadText) {
  for (const char* text : {"", " ", "%", "abc", "0.05x", "5%%", "5 %", "%5", "0,05", "+0.5",
                           "0.5.1", "nan", "inf", "-inf", "1e", "0x0.1"}) {
    EXPECT_EQ(parse_rate(text), std::nullopt) << '"' << text << '"';
  }
}

TEST(ParseRate, RejectsOutOfRange) {
  for (const char* text : {"1.0001", "2", "-0.1", "101%", "-1%", "1e300"}) {
    EXPECT_EQ(parse_rate(text), std::nullopt) << '"' << text << '"';
  }
}

TEST(ParseRate, NegativeZeroIsZero) {
  const auto rate = parse_rate("-0");
  ASSERT_TRUE(rate.has_value());
  EXPECT_FALSE(std::signbit(*rate));
}

TEST(FaultConfig, AnyIsTrueWhenOneRateIsSet) {
  FaultConfig config;
  EXPECT_FALSE(config.any());
  config.delay = 0.01;
  EXPECT_TRUE(config.any());
}

struct SingleRateCase {
  FaultAction action;
  double FaultConfig::*rate;
};

const SingleRateCase kSingleRates[] = {
    {FaultAction::kDrop, &FaultConfig::drop},
    {FaultAction::kReorder, &FaultConfig::reorder},
    {FaultAction::kDuplicate, &FaultConfig::duplicate},
    {FaultAction::kCorrupt, &FaultConfig::corrupt},
    {FaultAction::kDelay, &FaultConfig::delay},
};

TEST(FaultPlan, EachRateAloneMatchesItsProbability) {
  for (const SingleRateCase& c : kSingleRates) {
    for (double p : {0.05, 0.20}) {
      FaultConfig config;
      config.*c.rate = p;
      config.seed = 42;
      FaultPlan plan(config);
      auto counts = tally(plan, kDecisions);
      expect_binomial(counts[c.action], kDecisions, p, fault_action_name(c.action));
      // Nothing but the configured action and pass ever comes out.
      EXPECT_EQ(counts[c.action] + counts[FaultAction::kPass], kDecisions)
          << fault_action_name(c.action);
    }
  }
}

TEST(FaultPlan, MixedRatesMatchTheirProbabilities) {
  FaultConfig config;
  config.drop = 0.05;
  config.reorder = 0.10;
  config.duplicate = 0.02;
  config.corrupt = 0.15;
  config.delay = 0.08;
  config.seed = 7;
  FaultPlan plan(config);
  auto counts = tally(plan, kDecisions);
  expect_binomial(counts[FaultAction::kDrop], kDecisions, 0.05, "drop");
  expect_binomial(counts[FaultAction::kReorder], kDecisions, 0.10, "reorder");
  expect_binomial(counts[FaultAction::kDuplicate], kDecisions, 0.02, "duplicate");
  expect_binomial(counts[FaultAction::kCorrupt], kDecisions, 0.15, "corrupt");
  expect_binomial(counts[FaultAction::kDelay], kDecisions, 0.08, "delay");
  expect_binomial(counts[FaultAction::kPass], kDecisions, 0.60, "pass");
}

TEST(FaultPlan, ManySeedsStayWithinBounds) {
  // A weak generator can look fine for one seed and be biased for others
  // (small seeds especially).
  for (uint64_t seed : {0ULL, 1ULL, 2ULL, 3ULL, 0xffffffffffffffffULL}) {
    FaultConfig config;
    config.drop = 0.10;
    config.seed = seed;
    FaultPlan plan(config);
    auto counts = tally(plan, kDecisions);
    expect_binomial(counts[FaultAction::kDrop], kDecisions, 0.10, "drop");
  }
}

TEST(FaultPlan, RatesAboveOneInTotalServeInOrder) {
  FaultConfig config;
  config.drop = 0.7;
  config.reorder = 0.7;  // gets the remaining 0.3
  config.delay = 0.5;    // gets nothing
  FaultPlan plan(config);
  auto counts = tally(plan, kDecisions);
  expect_binomial(counts[FaultAction::kDrop], kDecisions, 0.7, "drop");
  expect_binomial(counts[FaultAction::kReorder], kDecisions, 0.3, "reorder");
  EXPECT_EQ(counts[FaultAction::kDelay], 0u);
  EXPECT_EQ(counts[FaultAction::kPass], 0u);
}

TEST(FaultPlan, RateOneIsAlways) {
  FaultConfig config;
  config.corrupt = 1;
  FaultPlan plan(config);
  auto counts = tally(plan, kDecisions);
  EXPECT_EQ(counts[FaultAction::kCorrupt], kDecisions);
}

TEST(FaultPlan, SameSeedSameDecisions) {
  FaultConfig config;
  config.drop = 0.1;
  config.reorder = 0.1;
  config.duplicate = 0.1;
  config.corrupt = 0.1;
  config.delay = 0.1;
  config.seed = 12345;
  FaultPlan a(config);
  FaultPlan b(config);
  for (int i = 0; i < 10000; ++i) {
    ASSERT_EQ(a.next(), b.next()) << "decision " << i;
    ASSERT_EQ(a.random_u32(), b.random_u32()) << "draw " << i;
  }
}

TEST(FaultPlan, DifferentSeedsDiffer) {
  FaultConfig config;
  config.drop = 0.5;
  config.seed = 1;
  FaultPlan a(config);
  config.seed = 2;
  FaultPlan b(config);
  int differences = 0;
  for (int i = 0; i < 1000; ++i) differences += a.next() != b.next();
  // Two independent fair coins disagree half the time.
  EXPECT_GT(differences, 350);
  EXPECT_LT(differences, 650);
}

TEST(FaultPlan, ZeroRatesOnlyPass) {
  FaultConfig config;
  config.seed = 99;
  FaultPlan plan(config);
  for (uint64_t i = 0; i < kDecisions; ++i) {
    ASSERT_EQ(plan.next(), FaultAction::kPass);
  }
}

TEST(FaultPlan, OutOfRangeRatesAreClamped) {
  FaultConfig config;
  config.drop = -0.5;
  config.delay = std::nan("");
  FaultPlan quiet(config);
  for (int i = 0; i < 10000; ++i) ASSERT_EQ(quiet.next(), FaultAction::kPass);

  config.drop = 3;
  FaultPlan loud(config);
  for (int i = 0; i < 10000; ++i) ASSERT_EQ(loud.next(), FaultAction::kDrop);
}

TEST(FaultPlan, RandomBelowIsUniform) {
  FaultConfig config;
  config.seed = 5;
  FaultPlan plan(config);
  constexpr uint32_t kBuckets = 50;  // e.g. byte positions in a short frame
  std::vector<uint64_t> hits(kBuckets);
  for (uint64_t i = 0; i < kDecisions; ++i) {
    const uint32_t value = plan.random_below(kBuckets);
    ASSERT_LT(value, kBuckets);
    ++hits[value];
  }
  for (uint32_t b = 0; b < kBuckets; ++b) {
    expect_binomial(hits[b], kDecisions, 1.0 / kBuckets, "bucket");
  }
}

TEST(FaultPlan, RandomU32UsesAllBits) {
  FaultConfig config;
  FaultPlan plan(config);
  uint32_t ones = 0;
  uint32_t zeros = 0;
  for (int i = 0; i < 1000; ++i) {
    const uint32_t v = plan.random_u32();
    ones |= v;
    zeros |= ~v;
  }
  EXPECT_EQ(ones, 0xffffffffu);
  EXPECT_EQ(zeros, 0xffffffffu);
}

}  // namespace
}  // namespace ofi_dpdk::net
