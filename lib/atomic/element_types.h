// element_types.h (internal): the C++ type behind each fi_datatype, and the
// categories the op rules are written in (integer, real, complex; the 2.x
// reduced-precision floats are computed as float, see element_ops.h).
#pragma once

#include <rdma/fi_atomic.h>

#include <complex>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <type_traits>

#include "lib/atomic/atomic_config.h"
#include "lib/atomic/reduced_float.h"

namespace ofi_dpdk::atomic::detail {

// __int128 is a GNU extension; -Wpedantic accepts it only under __extension__.
__extension__ typedef __int128 Int128;
__extension__ typedef unsigned __int128 Uint128;

// A datatype slot this build has no element type for: every rule rejects
// it, so its cells stay empty.
struct NoElement {};

template <fi_datatype D>
struct ElementOf {
  using type = NoElement;
};
#define OFI_DPDK_ELEMENT(datatype, cxx_type) \
  template <>                                \
  struct ElementOf<datatype> {               \
    using type = cxx_type;                   \
  }
OFI_DPDK_ELEMENT(FI_INT8, int8_t);
OFI_DPDK_ELEMENT(FI_UINT8, uint8_t);
OFI_DPDK_ELEMENT(FI_INT16, int16_t);
OFI_DPDK_ELEMENT(FI_UINT16, uint16_t);
OFI_DPDK_ELEMENT(FI_INT32, int32_t);
OFI_DPDK_ELEMENT(FI_UINT32, uint32_t);
OFI_DPDK_ELEMENT(FI_INT64, int64_t);
OFI_DPDK_ELEMENT(FI_UINT64, uint64_t);
OFI_DPDK_ELEMENT(FI_FLOAT, float);
OFI_DPDK_ELEMENT(FI_DOUBLE, double);
OFI_DPDK_ELEMENT(FI_FLOAT_COMPLEX, std::complex<float>);
OFI_DPDK_ELEMENT(FI_DOUBLE_COMPLEX, std::complex<double>);
OFI_DPDK_ELEMENT(FI_LONG_DOUBLE, long double);
OFI_DPDK_ELEMENT(FI_LONG_DOUBLE_COMPLEX, std::complex<long double>);
#if OFI_DPDK_HAVE_FI_INT128
OFI_DPDK_ELEMENT(FI_INT128, Int128);
#endif
#if OFI_DPDK_HAVE_FI_UINT128
OFI_DPDK_ELEMENT(FI_UINT128, Uint128);
#endif
#if OFI_DPDK_HAVE_FI_FLOAT16
OFI_DPDK_ELEMENT(FI_FLOAT16, ReducedFloat<kBinary16>);
#endif
#if OFI_DPDK_HAVE_FI_BFLOAT16
OFI_DPDK_ELEMENT(FI_BFLOAT16, ReducedFloat<kBfloat16>);
#endif
#if OFI_DPDK_HAVE_FI_FLOAT8_E4M3
OFI_DPDK_ELEMENT(FI_FLOAT8_E4M3, ReducedFloat<kFp8E4M3>);
#endif
#if OFI_DPDK_HAVE_FI_FLOAT8_E5M2
OFI_DPDK_ELEMENT(FI_FLOAT8_E5M2, ReducedFloat<kFp8E5M2>);
#endif
#undef OFI_DPDK_ELEMENT

template <typename T>
inline constexpr bool kIsElement = !std::is_same_v<T, NoElement>;

// std::is_integral is false for __int128 in strict -std=c++20.
template <typename T>
inline constexpr bool kIsInteger =
    std::is_integral_v<T> || std::is_same_v<T, Int128> || std::is_same_v<T, Uint128>;

template <typename T>
inline constexpr bool kIsReal = std::is_floating_point_v<T>;

template <typename T>
struct IsComplex : std::false_type {};
template <typename R>
struct IsComplex<std::complex<R>> : std::true_type {};
template <typename T>
inline constexpr bool kIsComplex = IsComplex<T>::value;

// Types with a total order for MIN/MAX and the ordered CSWAPs (IEEE order for
// reals: NaN compares false either way).
template <typename T>
inline constexpr bool kIsOrdered = kIsInteger<T> || kIsReal<T>;

template <typename T>
inline constexpr bool kIsArithmetic = kIsOrdered<T> || kIsComplex<T>;

// Unsigned type that wrapping arithmetic on T is done in: at least as wide as
// unsigned int, so that integer promotion never turns it back into a signed
// int (uint16_t * uint16_t would overflow int: undefined behaviour).
template <typename T>
struct WrapType {
  using type =
      std::conditional_t<(sizeof(T) < sizeof(unsigned)), unsigned, std::make_unsigned_t<T>>;
};
template <>
struct WrapType<Int128> {
  using type = Uint128;
};
template <>
struct WrapType<Uint128> {
  using type = Uint128;
};

template <typename T>
T wrapping_add(T a, T b) {
  using W = typename WrapType<T>::type;
  // Unsigned to signed conversion is modular since C++20.
  return static_cast<T>(static_cast<W>(static_cast<W>(a) + static_cast<W>(b)));
}

template <typename T>
T wrapping_sub(T a, T b) {
  using W = typename WrapType<T>::type;
  return static_cast<T>(static_cast<W>(static_cast<W>(a) - static_cast<W>(b)));
}

template <typename T>
T wrapping_mul(T a, T b) {
  using W = typename WrapType<T>::type;
  return static_cast<T>(static_cast<W>(static_cast<W>(a) * static_cast<W>(b)));
}

// Bytes of T that carry its value.  x87 long double keeps 80 bits in a 16-byte
// slot; the other 6 bytes are padding that a compare-and-swap must preserve,
// not compute.
template <typename T>
inline constexpr size_t kValueBytes = sizeof(T);
template <>
inline constexpr size_t kValueBytes<long double> = (std::numeric_limits<long double>::digits ==
                                                        64 &&
                                                    sizeof(long double) > 10)
                                                       ? 10
                                                       : sizeof(long double);

}  // namespace ofi_dpdk::atomic::detail
