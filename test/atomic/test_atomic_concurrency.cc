// test_atomic_concurrency.cc: two threads hammering the same elements through
// the table, one test per atomicity method (native fetch-add, native CAS loop,
// 16-byte CAS, striped lock), ending in exact totals.  Lost updates show up
// as a short total; torn or repeated fetches as duplicate old values.  With
// libfabric 2.x headers, the same for the 1- and 2-byte reduced floats, whose
// CAS loop must neither lose an update nor rewrite a neighbouring element.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <complex>
#include <cstdint>
#include <new>
#include <thread>
#include <vector>

#include "lib/atomic/atomic_config.h"
#include "lib/atomic/atomic_table.h"

namespace {

using ofi_dpdk::atomic::apply;
using ofi_dpdk::atomic::Class;

__extension__ typedef __int128 TestInt128;

constexpr int kThreads = 2;
// Enough overlap to catch a missing atomic on a slow 2-core machine, and
// still well under a second per test there.
constexpr int kIterations = 100000;
constexpr size_t kElements = 4;

// Starts `body(thread_index)` on every thread at once, so they overlap.
template <typename Body>
void run_together(const Body& body) {
  std::atomic<int> ready{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      ready.fetch_add(1);
      while (ready.load() < kThreads) std::this_thread::yield();
      body(t);
    });
  }
  for (std::thread& thread : threads) thread.join();
}

template <typename T>
void sum_ones_concurrently(fi_datatype datatype, T* target) {
  std::vector<T> ones(kElements, T(1));
  run_together([&](int) {
    for (int i = 0; i < kIterations; ++i) {
      ASSERT_EQ(0, apply(FI_SUM, datatype, Class::kBase, target, ones.data(), nullptr, nullptr,
                         kElements));
    }
  });
}

TEST(AtomicConcurrency, Uint64SumIsExact) {
  alignas(64) uint64_t target[kElements] = {};
  sum_ones_concurrently(FI_UINT64, target);
  for (uint64_t value : target) EXPECT_EQ(uint64_t{kThreads} * kIterations, value);
}

TEST(AtomicConcurrency, DoubleSumIsExact) {
  // Whole numbers below 2^53 add exactly, so the total is exact too.
  alignas(64) double target[kElements] = {};
  sum_ones_concurrently(FI_DOUBLE, target);
  for (double value : target) EXPECT_EQ(double{kThreads} * kIterations, value);
}

#if OFI_DPDK_HAVE_FI_INT128
TEST(AtomicConcurrency, Int128SumIsExactAcrossTheHalves) {
  // Start just below 2^64 so the carry into the high half happens mid-run.
  alignas(64) TestInt128 target[kElements];
  const TestInt128 start = (TestInt128{1} << 64) - kIterations;
  std::fill(std::begin(target), std::end(target), start);
  sum_ones_concurrently(FI_INT128, target);
  for (TestInt128 value : target) {
    EXPECT_TRUE(value == start + TestInt128{kThreads} * kIterations);
  }
}
#endif

TEST(AtomicConcurrency, LongDoubleComplexSumIsExact) {
  alignas(64) std::complex<long double> target[kElements] = {};
  std::vector<std::complex<long double>> operand(kElements, {1.0L, -2.0L});
  run_together([&](int) {
    for (int i = 0; i < kIterations; ++i) {
      ASSERT_EQ(0, apply(FI_SUM, FI_LONG_DOUBLE_COMPLEX, Class::kBase, target, operand.data(),
                         nullptr, nullptr, kElements));
    }
  });
  for (const auto& value : target) {
    EXPECT_EQ(static_cast<long double>(kThreads * kIterations), value.real());
    EXPECT_EQ(-2.0L * kThreads * kIterations, value.imag());
  }
}

// long double complex needs only 16-byte alignment, so two requests may name
// elements that overlap by half.  Thread 0 adds 1 to the imaginary parts of
// the elements at +0, +32, +64 ...; thread 1 adds 1 to the real parts of the
// elements at +16, +48 ...: the same 16-byte slots.  The lock must cover both.
TEST(AtomicConcurrency, OverlappingLockedElementsStayAtomic) {
  constexpr size_t kOverlapping = 16;
  alignas(64) long double memory[2 * kOverlapping + 1] = {};
  const std::vector<std::complex<long double>> to_imaginary(kOverlapping, {0.0L, 1.0L});
  const std::vector<std::complex<long double>> to_real(kOverlapping, {1.0L, 0.0L});
  run_together([&](int t) {
    for (int i = 0; i < kIterations / 4; ++i) {
      ASSERT_EQ(
          0, apply(FI_SUM, FI_LONG_DOUBLE_COMPLEX, Class::kBase, &memory[t],
                   t == 0 ? to_imaginary.data() : to_real.data(), nullptr, nullptr, kOverlapping));
    }
  });
  for (size_t i = 0; i <= 2 * kOverlapping; ++i) {
    const bool shared = i % 2 == 1;
    EXPECT_EQ(shared ? static_cast<long double>(kThreads * (kIterations / 4)) : 0.0L, memory[i])
        << "slot " << i;
  }
}

// Fetching adds hand out every intermediate value exactly once.
template <typename T>
void check_fetch_add_hands_out_each_value_once(fi_datatype datatype) {
  alignas(64) T target{};
  std::vector<std::vector<T>> fetched(kThreads, std::vector<T>(kIterations));
  const T one(1);
  run_together([&](int t) {
    for (int i = 0; i < kIterations; ++i) {
      ASSERT_EQ(0,
                apply(FI_SUM, datatype, Class::kFetch, &target, &one, nullptr, &fetched[t][i], 1));
    }
  });
  std::vector<T> all;
  for (const auto& values : fetched) all.insert(all.end(), values.begin(), values.end());
  std::sort(all.begin(), all.end());
  for (size_t i = 0; i < all.size(); ++i) {
    ASSERT_TRUE(all[i] == static_cast<T>(i)) << "old value " << i << " missing or repeated";
  }
}

TEST(AtomicConcurrency, Int64FetchSumReturnsDistinctOldValues) {
  check_fetch_add_hands_out_each_value_once<int64_t>(FI_INT64);
}

TEST(AtomicConcurrency, DoubleFetchSumReturnsDistinctOldValues) {
  check_fetch_add_hands_out_each_value_once<double>(FI_DOUBLE);
}

#if OFI_DPDK_HAVE_FI_INT128
TEST(AtomicConcurrency, Int128FetchSumReturnsDistinctOldValues) {
  check_fetch_add_hands_out_each_value_once<TestInt128>(FI_INT128);
}
#endif

// A CAS-built counter: each thread retries FI_CSWAP until it lands, so the
// final value counts only successful swaps.
TEST(AtomicConcurrency, CswapCounterCountsEverySuccess) {
  alignas(64) uint32_t target = 0;
  run_together([&](int) {
    uint32_t seen = 0;
    for (int i = 0; i < kIterations; ++i) {
      for (;;) {
        const uint32_t next = seen + 1;
        uint32_t old = 0;
        ASSERT_EQ(0, apply(FI_CSWAP, FI_UINT32, Class::kCompare, &target, &next, &seen, &old, 1));
        if (old == seen) break;
        seen = old;
      }
      ++seen;
    }
  });
  EXPECT_EQ(uint32_t{kThreads} * kIterations, target);
}

#if OFI_DPDK_HAVE_FI_FLOAT16
// Four neighbouring halves in one 8-byte word, both threads adding 1.0 to
// all four: whole numbers up to 2048 are exact in binary16, so each element
// must hand out 0 .. 2047 as its old values, each exactly once.  That run is
// short, so it is repeated for more overlap.
TEST(AtomicConcurrency, Float16NeighboursFetchSumHandsOutEachValueOnce) {
  constexpr int kAdds = 1024;  // 2 * 1024 = 2048 = 0x6800, still exact
  constexpr int kRounds = 20;
  constexpr uint16_t kOne = 0x3C00;
  // binary16 of the whole number n < 2048, built from its fields.
  auto half_of = [](unsigned n) -> uint16_t {
    if (n == 0) return 0;
    const int top = 31 - __builtin_clz(n);
    return static_cast<uint16_t>(((top + 15) << 10) | ((n << (10 - top)) & 0x3FF));
  };
  std::vector<uint16_t> expected;
  for (unsigned n = 0; n < kThreads * kAdds; ++n) expected.push_back(half_of(n));
  std::sort(expected.begin(), expected.end());
  const std::vector<uint16_t> ones(kElements, kOne);
  for (int round = 0; round < kRounds; ++round) {
    alignas(64) uint16_t target[kElements] = {};
    std::vector<std::vector<uint16_t>> fetched(kThreads, std::vector<uint16_t>(kAdds * kElements));
    run_together([&](int t) {
      for (int i = 0; i < kAdds; ++i) {
        ASSERT_EQ(0, apply(FI_SUM, FI_FLOAT16, Class::kFetch, target, ones.data(), nullptr,
                           &fetched[t][i * kElements], kElements));
      }
    });
    for (size_t e = 0; e < kElements; ++e) {
      ASSERT_EQ(0x6800, target[e]) << "round " << round << " element " << e;
      std::vector<uint16_t> old_values;
      for (const auto& values : fetched)
        for (int i = 0; i < kAdds; ++i) old_values.push_back(values[i * kElements + e]);
      std::sort(old_values.begin(), old_values.end());
      ASSERT_TRUE(old_values == expected)
          << "round " << round << " element " << e << ": an old value missing or repeated";
    }
  }
}
#endif

#if OFI_DPDK_HAVE_FI_FLOAT8_E4M3
// Eight FP8 elements in one word, thread t owning every other byte from t:
// each thread steps its own bytes through 0x01 .. 0x7E with FI_CSWAP, whose
// compare value is what it last wrote, so every swap must succeed.  A
// read-modify-write of the containing word instead of the byte would put a
// neighbour's stale byte back, and a swap would then fail.
TEST(AtomicConcurrency, Float8NeighbouringBytesStayIndependent) {
  constexpr size_t kBytes = 8;
  alignas(64) uint8_t target[kBytes];
  std::fill(std::begin(target), std::end(target), uint8_t{0x01});
  std::vector<int> failed_swaps(kThreads, 0);
  run_together([&](int t) {
    std::vector<uint8_t> mine(kBytes, 0x01);
    for (int i = 0; i < kIterations / 4; ++i) {
      for (size_t b = static_cast<size_t>(t); b < kBytes; b += kThreads) {
        const uint8_t next = mine[b] == 0x7E ? 0x01 : static_cast<uint8_t>(mine[b] + 1);
        uint8_t old = 0;
        ASSERT_EQ(0, apply(FI_CSWAP, FI_FLOAT8_E4M3, Class::kCompare, &target[b], &next, &mine[b],
                           &old, 1));
        if (old != mine[b]) ++failed_swaps[t];
        mine[b] = next;
      }
    }
  });
  EXPECT_EQ(0, failed_swaps[0]);
  EXPECT_EQ(0, failed_swaps[1]);
  const auto final_byte = static_cast<uint8_t>(0x01 + (kIterations / 4) % 0x7E);
  for (size_t b = 0; b < kBytes; ++b) EXPECT_EQ(final_byte, target[b]) << "byte " << b;
}
#endif

}  // namespace
