// atomic_reference.h: what fi_atomic(3) says each (class, op, datatype)
// does, written as plain sequential C++ independently of lib/atomic, for the
// tests that check the dispatch table (test/atomic) and the provider between
// two processes (test/multiproc/atomic_peer.cc):
//   - which cells are supported (doc/atomics.md's matrix, from the man page
//     and our decisions), as expect_supported();
//   - edge values per element type (extremes, NaN, infinities, signed zeros);
//   - reference(): one element's new value, a scalar loop's body;
//   - same_value() / describe() to compare and print results.
// No gtest here: a plain program can use it too.
#pragma once

#include <rdma/fi_atomic.h>

#include <cmath>
#include <complex>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include "lib/atomic/atomic_config.h"  // which of FI_INT128 / FI_UINT128 the headers have

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
    case FI_INT8: case FI_UINT8: case FI_INT16: case FI_UINT16:
    case FI_INT32: case FI_UINT32: case FI_INT64: case FI_UINT64:
      return Category::kInteger;
#if OFI_DPDK_HAVE_FI_INT128
    case FI_INT128:
      return Category::kInteger;
#endif
#if OFI_DPDK_HAVE_FI_UINT128
    case FI_UINT128:
      return Category::kInteger;
#endif
    case FI_FLOAT: case FI_DOUBLE: case FI_LONG_DOUBLE:
      return Category::kReal;
    case FI_FLOAT_COMPLEX: case FI_DOUBLE_COMPLEX: case FI_LONG_DOUBLE_COMPLEX:
      return Category::kComplex;
    default:
      return Category::kNone;  // e.g. libfabric 2.x's FI_FLOAT16
  }
}

inline bool op_in_class(int op, CallClass op_class) {
  if (op >= FI_CSWAP && op <= FI_MSWAP) return op_class == CallClass::kCompare;
  if (op == FI_ATOMIC_READ) return op_class == CallClass::kFetch;
  if (op >= FI_MIN && op <= FI_ATOMIC_WRITE) return op_class != CallClass::kCompare;
  return false;  // FI_DIFF (libfabric 2.x) is not implemented
}

inline bool op_defined_on(int op, Category category) {
  if (category == Category::kNone) return false;
  switch (op) {
    case FI_MIN: case FI_MAX:
    case FI_CSWAP_LE: case FI_CSWAP_LT: case FI_CSWAP_GE: case FI_CSWAP_GT:
      return category != Category::kComplex;  // no order on complex numbers
    case FI_BOR: case FI_BAND: case FI_BXOR: case FI_MSWAP:
      return category == Category::kInteger;  // bits only mean numbers there
    case FI_SUM: case FI_PROD: case FI_LOR: case FI_LAND: case FI_LXOR:
    case FI_ATOMIC_READ: case FI_ATOMIC_WRITE: case FI_CSWAP: case FI_CSWAP_NE:
      return true;
    default:
      return false;
  }
}

inline bool expect_supported(CallClass op_class, int op, int datatype) {
  return op_in_class(op, op_class) && op_defined_on(op, category_of(datatype));
}

// ---- Values and comparison ----

template <typename T>
inline constexpr bool kIsComplexT = false;
template <typename R>
inline constexpr bool kIsComplexT<std::complex<R>> = true;

template <typename T>
inline constexpr bool kIsIntegerT = std::is_integral_v<T> ||
                                    std::is_same_v<T, TestInt128> ||
                                    std::is_same_v<T, TestUint128>;

// Same value, with NaN equal to NaN and +0.0 different from -0.0 (the table
// must not turn one into the other).
template <typename T>
bool same_value(const T& a, const T& b) {
  if constexpr (kIsComplexT<T>) {
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
  if constexpr (kIsComplexT<T>) {
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
  if constexpr (kIsComplexT<T>) {
    using R = typename T::value_type;
    const R nan = std::numeric_limits<R>::quiet_NaN();
    const R inf = std::numeric_limits<R>::infinity();
    return {T(0, 0), T(-R(0), R(0)), T(R(1.5), R(-2)), T(0, 1), T(nan, 0),
            T(inf, 1), T(3, 4), T(-1, 0)};
  } else if constexpr (std::is_floating_point_v<T>) {
    using L = std::numeric_limits<T>;
    return {T(0), -T(0), T(1.5), T(-2.25), L::infinity(), -L::infinity(),
            L::quiet_NaN(), L::max(), L::denorm_min(), T(3)};
  } else {
    // Extremes built from bits: numeric_limits<__int128> is absent in strict
    // C++20 mode.
    constexpr bool is_signed = T(-1) < T(0);
    const T all_ones = static_cast<T>(~TestUint128{0});
    const T max = is_signed ? static_cast<T>(static_cast<TestUint128>(all_ones) >>
                                             (128 - 8 * sizeof(T) + 1))
                            : all_ones;
    const T min = is_signed ? static_cast<T>(-max - 1) : T(0);
    TestUint128 pattern = 0;
    for (size_t i = 0; i < sizeof(T); ++i) pattern = (pattern << 8) | 0xA5;
    return {T(0), T(1), all_ones, min, max, static_cast<T>(min + 1), static_cast<T>(max - 1),
            static_cast<T>(pattern), T(3), static_cast<T>(T(0) - T(7))};
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
std::optional<T> reference(int op, const T& target, const T& operand, const T& compare) {
  if constexpr (kIsIntegerT<T>) {
    switch (op) {
      case FI_SUM: return reference_add(target, operand);
      case FI_PROD: return reference_mul(target, operand);
      case FI_BOR: return static_cast<T>(target | operand);
      case FI_BAND: return static_cast<T>(target & operand);
      case FI_BXOR: return static_cast<T>(target ^ operand);
      case FI_MSWAP: return static_cast<T>((operand & compare) | (target & ~compare));
      default: break;
    }
  } else {
    switch (op) {
      case FI_SUM: return target + operand;
      case FI_PROD: return target * operand;
      default: break;
    }
  }
  if constexpr (!kIsComplexT<T>) {
    switch (op) {
      case FI_MIN: return operand < target ? operand : target;
      case FI_MAX: return operand > target ? operand : target;
      case FI_CSWAP_LE: return compare <= target ? operand : target;
      case FI_CSWAP_LT: return compare < target ? operand : target;
      case FI_CSWAP_GE: return compare >= target ? operand : target;
      case FI_CSWAP_GT: return compare > target ? operand : target;
      default: break;
    }
  }
  switch (op) {
    case FI_LOR: return (is_true(target) || is_true(operand)) ? T(1) : T(0);
    case FI_LAND: return (is_true(target) && is_true(operand)) ? T(1) : T(0);
    case FI_LXOR: return (is_true(target) != is_true(operand)) ? T(1) : T(0);
    case FI_ATOMIC_READ: return target;
    case FI_ATOMIC_WRITE: return operand;
    case FI_CSWAP: return compare == target ? operand : target;
    case FI_CSWAP_NE: return compare != target ? operand : target;
    default: break;
  }
  return std::nullopt;
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
}

}  // namespace ofi_dpdk::test
