// atomic_reference.h: what fi_atomic(3) says each (class, op, datatype)
// does, written as plain sequential C++ independently of lib/atomic, for the
// tests that check the dispatch table (test/atomic) and the provider between
// two processes (test/multiproc/atomic_peer.cc):
//   - which cells are supported (doc/atomics.md's matrix, from the man page
//     and our decisions), as expect_supported();
//   - edge values per element type (extremes, NaN, infinities, signed zeros);
//   - reference(): one element's new value, a scalar loop's body;
//   - same_value() / describe() to compare and print results;
//   - libfabric 2.x's reduced-precision floats (TestSmallFloat): values from
//     their fields with ldexp, results computed in float and rounded to the
//     type by picking the nearest of all its values (ties to the even bit
//     pattern), a method unlike lib/atomic's bit arithmetic on purpose.
// No gtest here: a plain program can use it too.
#pragma once

#include <rdma/fi_atomic.h>

#include <algorithm>
#include <cmath>
#include <complex>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include "lib/atomic/atomic_config.h"  // which 1.17 / 2.x datatypes and ops the headers have

namespace ofi_dpdk::test {

__extension__ typedef __int128 TestInt128;
__extension__ typedef unsigned __int128 TestUint128;

// The three families of calls, each with its op set (fi_atomic(3)):
// fi_atomic, fi_fetch_atomic, fi_compare_atomic.
enum class CallClass { kBase, kFetch, kCompare };

// ---- The expected matrix, written from fi_atomic(3) and our decisions ----

enum class Category { kInteger, kReal, kComplex, kNone };

inline Category category_of(int datatype) {
  switch (datatype) {
    case FI_INT8:
    case FI_UINT8:
    case FI_INT16:
    case FI_UINT16:
    case FI_INT32:
    case FI_UINT32:
    case FI_INT64:
    case FI_UINT64:
      return Category::kInteger;
#if OFI_DPDK_HAVE_FI_INT128
    case FI_INT128:
      return Category::kInteger;
#endif
#if OFI_DPDK_HAVE_FI_UINT128
    case FI_UINT128:
      return Category::kInteger;
#endif
    case FI_FLOAT:
    case FI_DOUBLE:
    case FI_LONG_DOUBLE:
      return Category::kReal;
      // Computed in float and rounded back: float's op set.
#if OFI_DPDK_HAVE_FI_FLOAT16
    case FI_FLOAT16:
      return Category::kReal;
#endif
#if OFI_DPDK_HAVE_FI_BFLOAT16
    case FI_BFLOAT16:
      return Category::kReal;
#endif
#if OFI_DPDK_HAVE_FI_FLOAT8_E4M3
    case FI_FLOAT8_E4M3:
      return Category::kReal;
#endif
#if OFI_DPDK_HAVE_FI_FLOAT8_E5M2
    case FI_FLOAT8_E5M2:
      return Category::kReal;
#endif
    case FI_FLOAT_COMPLEX:
    case FI_DOUBLE_COMPLEX:
    case FI_LONG_DOUBLE_COMPLEX:
      return Category::kComplex;
    default:
      return Category::kNone;
  }
}

inline bool op_in_class(int op, CallClass op_class) {
  if (op >= FI_CSWAP && op <= FI_MSWAP) return op_class == CallClass::kCompare;
  if (op == FI_ATOMIC_READ) return op_class == CallClass::kFetch;
  if (op >= FI_MIN && op <= FI_ATOMIC_WRITE) return op_class != CallClass::kCompare;
#if OFI_DPDK_HAVE_FI_DIFF
  // fi_atomic(3) 2.1 names no class for FI_DIFF; we give it FI_SUM's.
  if (op == FI_DIFF) return op_class != CallClass::kCompare;
#endif
  return false;
}

inline bool op_defined_on(int op, Category category) {
  if (category == Category::kNone) return false;
  switch (op) {
    case FI_MIN:
    case FI_MAX:
    case FI_CSWAP_LE:
    case FI_CSWAP_LT:
    case FI_CSWAP_GE:
    case FI_CSWAP_GT:
      return category != Category::kComplex;  // no order on complex numbers
    case FI_BOR:
    case FI_BAND:
    case FI_BXOR:
    case FI_MSWAP:
      return category == Category::kInteger;  // bits only mean numbers there
    case FI_SUM:
    case FI_PROD:
    case FI_LOR:
    case FI_LAND:
    case FI_LXOR:
    case FI_ATOMIC_READ:
    case FI_ATOMIC_WRITE:
    case FI_CSWAP:
    case FI_CSWAP_NE:
      return true;
#if OFI_DPDK_HAVE_FI_DIFF
    case FI_DIFF:
      return true;  // subtraction exists on every arithmetic type
#endif
    default:
      return false;
  }
}

inline bool expect_supported(CallClass op_class, int op, int datatype) {
  return op_in_class(op, op_class) && op_defined_on(op, category_of(datatype));
}

// ---- libfabric 2.x's reduced-precision floats, held as their bits ----

// Sign, kExponentBits of exponent (bias 2^(kExponentBits-1) - 1), kMantissaBits
// of fraction with an implicit one, subnormals at exponent 0.  kHasInfinity:
// IEEE-like (all-ones exponent = inf or NaN); false is OCP FP8 E4M3, whose
// only NaN is S.1111.111 and whose all-ones exponent otherwise holds numbers.
template <int kE, int kM, bool kInf>
struct TestSmallFloat {
  static constexpr int kExponentBits = kE;
  static constexpr int kMantissaBits = kM;
  static constexpr bool kHasInfinity = kInf;
  static constexpr int kWidth = 1 + kExponentBits + kMantissaBits;
  static constexpr int kBias = (1 << (kExponentBits - 1)) - 1;
  static constexpr unsigned kExponentOnes = (1u << kExponentBits) - 1;
  static constexpr unsigned kFractionMask = (1u << kMantissaBits) - 1;
  static constexpr unsigned kSignBit = 1u << (kWidth - 1);
  using Bits = std::conditional_t<kWidth == 8, uint8_t, uint16_t>;
  Bits bits;

  static TestSmallFloat of(unsigned raw) { return {static_cast<Bits>(raw)}; }
  bool is_nan() const {
    const unsigned exponent = (bits >> kMantissaBits) & kExponentOnes;
    const unsigned fraction = bits & kFractionMask;
    return exponent == kExponentOnes && (kHasInfinity ? fraction != 0 : fraction == kFractionMask);
  }
};
using TestFloat16 = TestSmallFloat<5, 10, true>;
using TestBfloat16 = TestSmallFloat<8, 7, true>;
using TestFloat8E4M3 = TestSmallFloat<4, 3, false>;
using TestFloat8E5M2 = TestSmallFloat<5, 2, true>;

template <typename T>
inline constexpr bool kIsSmallFloatT = false;
template <int kE, int kM, bool kInf>
inline constexpr bool kIsSmallFloatT<TestSmallFloat<kE, kM, kInf>> = true;

// The value of x, from its fields.
template <typename S>
double small_float_value(S x) {
  const bool negative = x.bits & S::kSignBit;
  const unsigned exponent = (x.bits >> S::kMantissaBits) & S::kExponentOnes;
  const unsigned fraction = x.bits & S::kFractionMask;
  double magnitude;
  if (x.is_nan()) {
    magnitude = std::numeric_limits<double>::quiet_NaN();
  } else if (S::kHasInfinity && exponent == S::kExponentOnes) {
    magnitude = std::numeric_limits<double>::infinity();
  } else if (exponent == 0) {
    magnitude = std::ldexp(double(fraction), 1 - S::kBias - S::kMantissaBits);
  } else {
    magnitude = std::ldexp(double(fraction + (1u << S::kMantissaBits)),
                           int(exponent) - S::kBias - S::kMantissaBits);
  }
  return negative ? -magnitude : magnitude;
}

// Where each non-negative bit pattern sits on the number line, in increasing
// order, plus the pattern an overflow gives at the place the next binade's
// first value would be (IEEE: infinity, whose all-ones exponent and zero
// fraction are that value's; E4M3: S.1111.111, at 480, where its fraction
// would put it).  So overflow is just rounding to that last entry, with the
// same ties-to-even rule as any other.
template <typename S>
const std::vector<std::pair<double, unsigned>>& small_float_line() {
  static const std::vector<std::pair<double, unsigned>> line = [] {
    std::vector<std::pair<double, unsigned>> points;
    // IEEE: just past the largest binade; E4M3: its all-ones binade.
    const double next_binade = std::ldexp(1.0, int(S::kExponentOnes) - S::kBias);
    for (unsigned raw = 0; raw < S::kSignBit; ++raw) {
      const S x = S::of(raw);
      const double value = small_float_value(x);
      if (std::isinf(value)) {
        points.emplace_back(next_binade, raw);
      } else if (x.is_nan()) {
        if (!S::kHasInfinity) {
          points.emplace_back(
              next_binade * (1.0 + double(S::kFractionMask) / (1u << S::kMantissaBits)), raw);
        }
      } else {
        points.emplace_back(value, raw);
      }
    }
    std::sort(points.begin(), points.end());
    return points;
  }();
  return line;
}

// value rounded to S: the nearest point of the line, ties to the even bit
// pattern, with value's sign; beyond the last point, the overflow pattern.
template <typename S>
S round_to_small_float(float value) {
  const unsigned sign = std::signbit(value) ? S::kSignBit : 0;
  const auto& line = small_float_line<S>();
  if (std::isnan(value)) {
    // E4M3's one NaN ends its line; for the others, any quiet NaN.
    if (!S::kHasInfinity) return S::of(sign | line.back().second);
    return S::of(sign | (S::kExponentOnes << S::kMantissaBits) | (1u << (S::kMantissaBits - 1)));
  }
  const double magnitude = std::fabs(double(value));
  const auto above = std::lower_bound(line.begin(), line.end(), std::make_pair(magnitude, 0u));
  if (above == line.end() || std::isinf(magnitude)) return S::of(sign | line.back().second);
  if (above->first == magnitude || above == line.begin()) return S::of(sign | above->second);
  const auto below = above - 1;
  // Sums of two neighbours and doubled floats are exact in double.
  const double twice = 2 * magnitude;
  const double middle = below->first + above->first;
  unsigned raw;
  if (twice < middle)
    raw = below->second;
  else if (twice > middle)
    raw = above->second;
  else
    raw = (below->second % 2 == 0) ? below->second : above->second;
  return S::of(sign | raw);
}

// ---- Values and comparison ----

template <typename T>
inline constexpr bool kIsComplexT = false;
template <typename R>
inline constexpr bool kIsComplexT<std::complex<R>> = true;

template <typename T>
inline constexpr bool kIsIntegerT =
    std::is_integral_v<T> || std::is_same_v<T, TestInt128> || std::is_same_v<T, TestUint128>;

// Same value, with NaN equal to NaN and +0.0 different from -0.0 (the table
// must not turn one into the other).
template <typename T>
bool same_value(const T& a, const T& b) {
  if constexpr (kIsSmallFloatT<T>) {
    if (a.is_nan() || b.is_nan()) return a.is_nan() && b.is_nan();
    return a.bits == b.bits;
  } else if constexpr (kIsComplexT<T>) {
    return same_value(a.real(), b.real()) && same_value(a.imag(), b.imag());
  } else if constexpr (std::is_floating_point_v<T>) {
    if (std::isnan(a) || std::isnan(b)) return std::isnan(a) && std::isnan(b);
    return a == b && std::signbit(a) == std::signbit(b);
  } else {
    return a == b;
  }
}

template <typename T>
std::string describe(const T& value) {
  char text[96];
  if constexpr (kIsSmallFloatT<T>) {
    std::snprintf(text, sizeof text, "0x%0*x (%.9g)", T::kWidth / 4, unsigned{value.bits},
                  small_float_value(value));
  } else if constexpr (kIsComplexT<T>) {
    return "(" + describe(value.real()) + ", " + describe(value.imag()) + ")";
  } else if constexpr (std::is_floating_point_v<T>) {
    std::snprintf(text, sizeof text, "%.21Lg", static_cast<long double>(value));
  } else {
    const auto bits = static_cast<TestUint128>(value);
    std::snprintf(text, sizeof text, "0x%016llx%016llx",
                  static_cast<unsigned long long>(bits >> 64),
                  static_cast<unsigned long long>(bits));
  }
  return text;
}

template <typename T>
std::vector<T> edge_values() {
  if constexpr (kIsSmallFloatT<T>) {
    // Zeros, the smallest subnormal and its negative, the largest
    // subnormal, the smallest normal, +-max, NaN, +-inf (where the type has
    // it), 1, the next value above 1, half of 1's ulp (1 + it ties to even
    // and rounds down, 1+ulp + it ties and rounds up), -2 and an inexact
    // fraction, as bit patterns.
    std::vector<unsigned> raw;
    if constexpr (std::is_same_v<T, TestFloat16>) {
      raw = {0x0000, 0x8000, 0x0001, 0x8001, 0x03FF, 0x0400, 0x7BFF, 0xFBFF,
             0x7E00, 0x7C00, 0xFC00, 0x3C00, 0x3C01, 0x1000, 0xC000, 0x3555};
    } else if constexpr (std::is_same_v<T, TestBfloat16>) {
      raw = {0x0000, 0x8000, 0x0001, 0x8001, 0x007F, 0x0080, 0x7F7F, 0xFF7F,
             0x7FC0, 0x7F80, 0xFF80, 0x3F80, 0x3F81, 0x3B80, 0xC000, 0x3EAB};
    } else if constexpr (std::is_same_v<T, TestFloat8E4M3>) {
      // No infinity: 256 (whose sum with itself overflows) instead.
      raw = {0x00, 0x80, 0x01, 0x81, 0x07, 0x08, 0x7E, 0xFE,
             0x7F, 0x78, 0xF8, 0x38, 0x39, 0x18, 0xC0, 0x35};
    } else {
      raw = {0x00, 0x80, 0x01, 0x81, 0x03, 0x04, 0x7B, 0xFB,
             0x7E, 0x7C, 0xFC, 0x3C, 0x3D, 0x30, 0xC0, 0x35};
    }
    std::vector<T> values;
    for (unsigned r : raw) values.push_back(T::of(r));
    return values;
  } else if constexpr (kIsComplexT<T>) {
    using R = typename T::value_type;
    const R nan = std::numeric_limits<R>::quiet_NaN();
    const R inf = std::numeric_limits<R>::infinity();
    return {T(0, 0),   T(-R(0), R(0)), T(R(1.5), R(-2)), T(0, 1),
            T(nan, 0), T(inf, 1),      T(3, 4),          T(-1, 0)};
  } else if constexpr (std::is_floating_point_v<T>) {
    using L = std::numeric_limits<T>;
    return {T(0),           -T(0),          T(1.5),   T(-2.25),        L::infinity(),
            -L::infinity(), L::quiet_NaN(), L::max(), L::denorm_min(), T(3)};
  } else {
    // Extremes built from bits: numeric_limits<__int128> is absent in strict
    // C++20 mode.
    constexpr bool is_signed = T(-1) < T(0);
    const T all_ones = static_cast<T>(~TestUint128{0});
    const T max =
        is_signed ? static_cast<T>(static_cast<TestUint128>(all_ones) >> (128 - 8 * sizeof(T) + 1))
                  : all_ones;
    const T min = is_signed ? static_cast<T>(-max - 1) : T(0);
    TestUint128 pattern = 0;
    for (size_t i = 0; i < sizeof(T); ++i) pattern = (pattern << 8) | 0xA5;
    return {T(0),
            T(1),
            all_ones,
            min,
            max,
            static_cast<T>(min + 1),
            static_cast<T>(max - 1),
            static_cast<T>(pattern),
            T(3),
            static_cast<T>(T(0) - T(7))};
  }
}

// ---- The sequential reference ----

// Integer arithmetic in a wide unsigned type, narrowed back (modular in C++20):
// the reference must not overflow a signed type either.
template <typename T>
T reference_add(T a, T b) {
  using Wide = std::conditional_t<(sizeof(T) > 8), TestUint128, uint64_t>;
  return static_cast<T>(static_cast<Wide>(a) + static_cast<Wide>(b));
}
template <typename T>
T reference_mul(T a, T b) {
  using Wide = std::conditional_t<(sizeof(T) > 8), TestUint128, uint64_t>;
  return static_cast<T>(static_cast<Wide>(a) * static_cast<Wide>(b));
}

template <typename T>
bool is_true(const T& value) {
  if constexpr (kIsComplexT<T>) {
    return value.real() != 0 || value.imag() != 0 || std::isnan(value.real()) ||
           std::isnan(value.imag());
  } else {
    return value != T(0);
  }
}

// fi_atomic(3)'s pseudo-code, one element at a time: the element's new
// value (the old one for ops that leave it), or nullopt for an op that has
// no meaning on T.
template <typename T>
std::optional<T> arithmetic_reference(int op, const T& target, const T& operand, const T& compare) {
  if constexpr (kIsIntegerT<T>) {
    switch (op) {
      case FI_SUM:
        return reference_add(target, operand);
#if OFI_DPDK_HAVE_FI_DIFF
      case FI_DIFF:
        return reference_add(target, static_cast<T>(T(0) - operand));
#endif
      case FI_PROD:
        return reference_mul(target, operand);
      case FI_BOR:
        return static_cast<T>(target | operand);
      case FI_BAND:
        return static_cast<T>(target & operand);
      case FI_BXOR:
        return static_cast<T>(target ^ operand);
      case FI_MSWAP:
        return static_cast<T>((operand & compare) | (target & ~compare));
      default:
        break;
    }
  } else {
    switch (op) {
      case FI_SUM:
        return target + operand;
#if OFI_DPDK_HAVE_FI_DIFF
      case FI_DIFF:
        return target - operand;
#endif
      case FI_PROD:
        return target * operand;
      default:
        break;
    }
  }
  if constexpr (!kIsComplexT<T>) {
    switch (op) {
      case FI_MIN:
        return operand < target ? operand : target;
      case FI_MAX:
        return operand > target ? operand : target;
      case FI_CSWAP_LE:
        return compare <= target ? operand : target;
      case FI_CSWAP_LT:
        return compare < target ? operand : target;
      case FI_CSWAP_GE:
        return compare >= target ? operand : target;
      case FI_CSWAP_GT:
        return compare > target ? operand : target;
      default:
        break;
    }
  }
  switch (op) {
    case FI_LOR:
      return (is_true(target) || is_true(operand)) ? T(1) : T(0);
    case FI_LAND:
      return (is_true(target) && is_true(operand)) ? T(1) : T(0);
    case FI_LXOR:
      return (is_true(target) != is_true(operand)) ? T(1) : T(0);
    case FI_ATOMIC_READ:
      return target;
    case FI_ATOMIC_WRITE:
      return operand;
    case FI_CSWAP:
      return compare == target ? operand : target;
    case FI_CSWAP_NE:
      return compare != target ? operand : target;
    default:
      break;
  }
  return std::nullopt;
}

// A reduced float: the float reference on the exact values, rounded to S.
template <typename S>
std::optional<S> small_float_reference(int op, S target, S operand, S compare) {
  const auto widened = arithmetic_reference<float>(op, float(small_float_value(target)),
                                                   float(small_float_value(operand)),
                                                   float(small_float_value(compare)));
  if (!widened) return std::nullopt;
  return round_to_small_float<S>(*widened);
}

// What the tests call: one element's new value for any datatype.
template <typename T>
std::optional<T> reference(int op, const T& target, const T& operand, const T& compare) {
  if constexpr (kIsSmallFloatT<T>) {
    return small_float_reference(op, target, operand, compare);
  } else {
    return arithmetic_reference(op, target, operand, compare);
  }
}

// Calls check.template operator()<T>(datatype) for each datatype the
// installed headers define, with T its C++ element type.
template <typename F>
void for_each_datatype(F&& check) {
  check.template operator()<int8_t>(FI_INT8);
  check.template operator()<uint8_t>(FI_UINT8);
  check.template operator()<int16_t>(FI_INT16);
  check.template operator()<uint16_t>(FI_UINT16);
  check.template operator()<int32_t>(FI_INT32);
  check.template operator()<uint32_t>(FI_UINT32);
  check.template operator()<int64_t>(FI_INT64);
  check.template operator()<uint64_t>(FI_UINT64);
  check.template operator()<float>(FI_FLOAT);
  check.template operator()<double>(FI_DOUBLE);
  check.template operator()<std::complex<float>>(FI_FLOAT_COMPLEX);
  check.template operator()<std::complex<double>>(FI_DOUBLE_COMPLEX);
  check.template operator()<long double>(FI_LONG_DOUBLE);
  check.template operator()<std::complex<long double>>(FI_LONG_DOUBLE_COMPLEX);
#if OFI_DPDK_HAVE_FI_INT128
  check.template operator()<TestInt128>(FI_INT128);
#endif
#if OFI_DPDK_HAVE_FI_UINT128
  check.template operator()<TestUint128>(FI_UINT128);
#endif
#if OFI_DPDK_HAVE_FI_FLOAT16
  check.template operator()<TestFloat16>(FI_FLOAT16);
#endif
#if OFI_DPDK_HAVE_FI_BFLOAT16
  check.template operator()<TestBfloat16>(FI_BFLOAT16);
#endif
#if OFI_DPDK_HAVE_FI_FLOAT8_E4M3
  check.template operator()<TestFloat8E4M3>(FI_FLOAT8_E4M3);
#endif
#if OFI_DPDK_HAVE_FI_FLOAT8_E5M2
  check.template operator()<TestFloat8E5M2>(FI_FLOAT8_E5M2);
#endif
}

}  // namespace ofi_dpdk::test
