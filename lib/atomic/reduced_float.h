// reduced_float.h (internal): libfabric 2.x's 16- and 8-bit floating types
// (FI_FLOAT16, FI_BFLOAT16, FI_FLOAT8_E4M3, FI_FLOAT8_E5M2) as containers of
// their bits, with an exact decoding to float and a round-to-nearest-even
// encoding from float.  The CPU has no arithmetic on them, so element_ops.h
// computes in float and rounds back through these two functions
// (doc/atomics.md, "Reduced-precision floating types").
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <type_traits>

namespace ofi_dpdk::atomic::detail {

// How an encoding spends its bits.  All four have a sign bit, an exponent
// with bias 2^(exponent_bits - 1) - 1 and an implicit leading one (gradual
// underflow through subnormals).
struct FloatFormat {
  unsigned exponent_bits;
  unsigned mantissa_bits;
  // IEEE-like: an all-ones exponent is infinity (mantissa 0) or NaN.  OCP
  // FP8 E4M3 has no infinity: that exponent holds numbers up to 448 and only
  // S.1111.111 is NaN, which is also what overflow rounds to.
  bool has_infinity;
};

inline constexpr FloatFormat kBinary16{5, 10, true};  // IEEE 754 half precision
inline constexpr FloatFormat kBfloat16{8, 7, true};   // float's upper 16 bits
inline constexpr FloatFormat kFp8E4M3{4, 3, false};   // OCP 8-bit floating point
inline constexpr FloatFormat kFp8E5M2{5, 2, true};

template <FloatFormat kSpec>
struct ReducedFloat {
  static constexpr FloatFormat kFormat = kSpec;
  static constexpr unsigned kWidth = 1 + kFormat.exponent_bits + kFormat.mantissa_bits;
  static_assert(kWidth == 8 || kWidth == 16);
  // Rounding shifts a float's 24-bit significand right by at least one.
  static_assert(kFormat.mantissa_bits < 23 && kFormat.exponent_bits <= 8);
  using Bits = std::conditional_t<kWidth == 8, uint8_t, uint16_t>;
  Bits bits;
};

template <typename T>
inline constexpr bool kIsReducedFloat = false;
template <FloatFormat kFormat>
inline constexpr bool kIsReducedFloat<ReducedFloat<kFormat>> = true;

// The exact float value of x (every value of these types is a float value).
// A NaN keeps its sign and its payload, in the float mantissa's top bits,
// so narrow(widen(x)) gives back x's bits for every x.
template <FloatFormat kFormat>
float widen(ReducedFloat<kFormat> x) {
  constexpr unsigned kMantissaBits = kFormat.mantissa_bits;
  constexpr uint32_t kExponentOnes = (1u << kFormat.exponent_bits) - 1;
  constexpr uint32_t kMantissaMask = (1u << kMantissaBits) - 1;
  constexpr int kBias = static_cast<int>(kExponentOnes >> 1);
  const uint32_t bits = x.bits;
  const uint32_t sign = (bits >> (kFormat.exponent_bits + kMantissaBits)) << 31;
  const uint32_t exponent = (bits >> kMantissaBits) & kExponentOnes;
  const uint32_t mantissa = bits & kMantissaMask;
  uint32_t out;
  const bool special =
      exponent == kExponentOnes && (kFormat.has_infinity || mantissa == kMantissaMask);
  if (special) {
    out = sign | 0x7F800000u | (mantissa << (23 - kMantissaBits));
  } else if (exponent != 0) {
    out = sign | ((exponent + 127 - kBias) << 23) | (mantissa << (23 - kMantissaBits));
  } else {
    // Zero or subnormal: mantissa * 2^(1 - bias - M), exact in float
    // (a float subnormal for bfloat16, a normal float for the others).
    const float magnitude =
        std::ldexp(static_cast<float>(mantissa), 1 - kBias - static_cast<int>(kMantissaBits));
    std::memcpy(&out, &magnitude, sizeof out);
    out |= sign;
  }
  float value;
  std::memcpy(&value, &out, sizeof value);
  return value;
}

// value rounded to the nearest kFormat value, ties to the even mantissa, as
// if the exponent range were unbounded above; a result beyond the largest
// finite value (and an infinite value) becomes infinity, or NaN for E4M3.
// Results too small for the smallest subnormal round to a zero of value's
// sign.  A NaN stays NaN with its sign and as much payload as fits (quiet if
// none does; E4M3's one NaN otherwise).
template <typename Result>
requires kIsReducedFloat<Result> Result narrow(float value) {
  constexpr FloatFormat kFormat = Result::kFormat;
  using Bits = typename Result::Bits;
  constexpr unsigned kMantissaBits = kFormat.mantissa_bits;
  constexpr uint32_t kExponentOnes = (1u << kFormat.exponent_bits) - 1;
  constexpr uint32_t kMantissaMask = (1u << kMantissaBits) - 1;
  constexpr int kBias = static_cast<int>(kExponentOnes >> 1);
  constexpr uint32_t kNan = kFormat.has_infinity
                                ? (kExponentOnes << kMantissaBits) | (1u << (kMantissaBits - 1))
                                : (kExponentOnes << kMantissaBits) | kMantissaMask;
  constexpr uint32_t kOverflow = kFormat.has_infinity ? kExponentOnes << kMantissaBits : kNan;

  uint32_t in;
  std::memcpy(&in, &value, sizeof in);
  const uint32_t sign = (in >> 31) << (kFormat.exponent_bits + kMantissaBits);
  const uint32_t exponent = (in >> 23) & 0xFF;
  const uint32_t mantissa = in & 0x7FFFFF;
  auto make = [sign](uint32_t magnitude) { return Result{static_cast<Bits>(sign | magnitude)}; };

  if (exponent == 0xFF) {
    if (mantissa == 0) return make(kOverflow);
    const uint32_t payload = mantissa >> (23 - kMantissaBits);
    if (!kFormat.has_infinity || payload == 0) return make(kNan);
    return make((kExponentOnes << kMantissaBits) | payload);
  }
  if (exponent == 0 && mantissa == 0) return make(0);

  // value = significand * 2^quantum, exactly.
  const uint32_t significand = exponent != 0 ? (mantissa | (1u << 23)) : mantissa;
  const int quantum = (exponent != 0 ? static_cast<int>(exponent) : 1) - 127 - 23;
  const int leading = 31 - __builtin_clz(significand) + quantum;  // 2^leading <= |value|
  constexpr int kMinExponent = 1 - kBias;
  // The result's unit in the last place: that of value's binade, or of the
  // subnormals below the smallest normal.
  int result_quantum =
      (leading > kMinExponent ? leading : kMinExponent) - static_cast<int>(kMantissaBits);
  const int shift = result_quantum - quantum;  // >= 1: kFormat is narrower than float
  uint32_t rounded = 0;
  if (shift <= 25) {  // beyond that, |value| < half the smallest subnormal
    rounded = significand >> shift;
    const uint32_t rest = significand & ((1u << shift) - 1);
    const uint32_t half = 1u << (shift - 1);
    if (rest > half || (rest == half && (rounded & 1))) ++rounded;
  }
  if (rounded <= kMantissaMask) return make(rounded);  // zero or subnormal
  if (rounded == (2u << kMantissaBits)) {              // rounding carried into the next binade
    rounded >>= 1;
    ++result_quantum;
  }
  const auto biased =
      static_cast<uint32_t>(result_quantum + static_cast<int>(kMantissaBits) + kBias);
  const uint32_t fraction = rounded & kMantissaMask;
  const bool overflow =
      kFormat.has_infinity
          ? biased >= kExponentOnes
          : biased > kExponentOnes || (biased == kExponentOnes && fraction == kMantissaMask);
  if (overflow) return make(kOverflow);
  return make((biased << kMantissaBits) | fraction);
}

}  // namespace ofi_dpdk::atomic::detail
