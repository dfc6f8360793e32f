// element_ops.h (internal): what each fi_op computes for one element, and on
// which element types it is defined.  Pure functions of (current, operand,
// compare); how the result reaches memory atomically is atomic_word.h's job.
//
// Rule<op>::next(current, operand, compare, out) returns false when the
// element must stay as it is (a failed compare, a MIN that loses, a READ), and
// true with the new value in `out` otherwise.  Comparisons follow fi_atomic(3)
// literally, with C semantics, so IEEE rules decide NaN and signed zeros
// (doc/atomics.md, "NaN and signed zeros").
//
// The table and atomic_word.h ask kOpDefinedOn / next_value (at the end), not
// the rules: that is where the reduced-precision floats of libfabric 2.x get
// float's rules and the rounding back to their own type.
#pragma once

#include <rdma/fi_atomic.h>

#include "lib/atomic/atomic_table.h"
#include "lib/atomic/element_types.h"

namespace ofi_dpdk::atomic::detail {

constexpr bool is_in_class(Class op_class, fi_op op) {
  switch (op) {
    case FI_MIN:
    case FI_MAX:
    case FI_SUM:
    case FI_PROD:
    case FI_LOR:
    case FI_LAND:
    case FI_BOR:
    case FI_BAND:
    case FI_LXOR:
    case FI_BXOR:
    case FI_ATOMIC_WRITE:
#if OFI_DPDK_HAVE_FI_DIFF
    // fi_atomic(3) (2.1) lists no class for it; it has FI_SUM's shape.
    case FI_DIFF:
#endif
      return op_class == Class::kBase || op_class == Class::kFetch;
    case FI_ATOMIC_READ:
      return op_class == Class::kFetch;
    case FI_CSWAP:
    case FI_CSWAP_NE:
    case FI_CSWAP_LE:
    case FI_CSWAP_LT:
    case FI_CSWAP_GE:
    case FI_CSWAP_GT:
    case FI_MSWAP:
      return op_class == Class::kCompare;
    default:
      return false;
  }
}

// C's truth value of a scalar: nonzero is true, NaN included; a complex
// number is true if either part is nonzero.
template <typename T>
bool truth(const T& value) {
  return value != T(0);
}

template <typename T>
T from_truth(bool value) {
  return value ? T(1) : T(0);
}

// Ops without a rule are defined on nothing.
template <fi_op Op>
struct Rule {
  template <typename T>
  static constexpr bool kDefinedOn = false;
  template <typename T>
  static bool next(const T&, const T&, const T&, T&) {
    return false;
  }
};

template <>
struct Rule<FI_MIN> {
  template <typename T>
  static constexpr bool kDefinedOn = kIsOrdered<T>;
  template <typename T>
  static bool next(const T& current, const T& operand, const T&, T& out) {
    if (!(operand < current)) return false;
    out = operand;
    return true;
  }
};

template <>
struct Rule<FI_MAX> {
  template <typename T>
  static constexpr bool kDefinedOn = kIsOrdered<T>;
  template <typename T>
  static bool next(const T& current, const T& operand, const T&, T& out) {
    if (!(operand > current)) return false;
    out = operand;
    return true;
  }
};

template <>
struct Rule<FI_SUM> {
  template <typename T>
  static constexpr bool kDefinedOn = kIsArithmetic<T>;
  template <typename T>
  static bool next(const T& current, const T& operand, const T&, T& out) {
    if constexpr (kIsInteger<T>) {
      out = wrapping_add(current, operand);
    } else {
      out = current + operand;
    }
    return true;
  }
};

#if OFI_DPDK_HAVE_FI_DIFF
template <>
struct Rule<FI_DIFF> {
  template <typename T>
  static constexpr bool kDefinedOn = kIsArithmetic<T>;
  template <typename T>
  static bool next(const T& current, const T& operand, const T&, T& out) {
    if constexpr (kIsInteger<T>) {
      out = wrapping_sub(current, operand);
    } else {
      out = current - operand;
    }
    return true;
  }
};
#endif

template <>
struct Rule<FI_PROD> {
  template <typename T>
  static constexpr bool kDefinedOn = kIsArithmetic<T>;
  template <typename T>
  static bool next(const T& current, const T& operand, const T&, T& out) {
    if constexpr (kIsInteger<T>) {
      out = wrapping_mul(current, operand);
    } else {
      out = current * operand;
    }
    return true;
  }
};

// Logical ops: the man page's `addr = addr || buf` is valid C for every
// arithmetic type, complex included, so they are offered on all of them.
template <>
struct Rule<FI_LOR> {
  template <typename T>
  static constexpr bool kDefinedOn = kIsArithmetic<T>;
  template <typename T>
  static bool next(const T& current, const T& operand, const T&, T& out) {
    out = from_truth<T>(truth(current) || truth(operand));
    return true;
  }
};

template <>
struct Rule<FI_LAND> {
  template <typename T>
  static constexpr bool kDefinedOn = kIsArithmetic<T>;
  template <typename T>
  static bool next(const T& current, const T& operand, const T&, T& out) {
    out = from_truth<T>(truth(current) && truth(operand));
    return true;
  }
};

template <>
struct Rule<FI_LXOR> {
  template <typename T>
  static constexpr bool kDefinedOn = kIsArithmetic<T>;
  template <typename T>
  static bool next(const T& current, const T& operand, const T&, T& out) {
    out = from_truth<T>(truth(current) != truth(operand));
    return true;
  }
};

template <>
struct Rule<FI_BOR> {
  template <typename T>
  static constexpr bool kDefinedOn = kIsInteger<T>;
  template <typename T>
  static bool next(const T& current, const T& operand, const T&, T& out) {
    out = static_cast<T>(current | operand);
    return true;
  }
};

template <>
struct Rule<FI_BAND> {
  template <typename T>
  static constexpr bool kDefinedOn = kIsInteger<T>;
  template <typename T>
  static bool next(const T& current, const T& operand, const T&, T& out) {
    out = static_cast<T>(current & operand);
    return true;
  }
};

template <>
struct Rule<FI_BXOR> {
  template <typename T>
  static constexpr bool kDefinedOn = kIsInteger<T>;
  template <typename T>
  static bool next(const T& current, const T& operand, const T&, T& out) {
    out = static_cast<T>(current ^ operand);
    return true;
  }
};

template <>
struct Rule<FI_ATOMIC_READ> {
  template <typename T>
  static constexpr bool kDefinedOn = kIsArithmetic<T>;
  template <typename T>
  static bool next(const T&, const T&, const T&, T&) {
    return false;
  }
};

template <>
struct Rule<FI_ATOMIC_WRITE> {
  template <typename T>
  static constexpr bool kDefinedOn = kIsArithmetic<T>;
  template <typename T>
  static bool next(const T&, const T& operand, const T&, T& out) {
    out = operand;
    return true;
  }
};

// The compare ops swap in the operand when `compare <relation> current`, in
// that order (fi_atomic(3): "if (compare[i] <= addr[i])").
template <typename Relation, bool kOrderedOnly>
struct CompareRule {
  template <typename T>
  static constexpr bool kDefinedOn = kOrderedOnly ? kIsOrdered<T> : kIsArithmetic<T>;
  template <typename T>
  static bool next(const T& current, const T& operand, const T& compare, T& out) {
    if (!Relation{}(compare, current)) return false;
    out = operand;
    return true;
  }
};

struct Equal {
  template <typename T>
  bool operator()(const T& a, const T& b) const {
    return a == b;
  }
};
struct NotEqual {
  template <typename T>
  bool operator()(const T& a, const T& b) const {
    return a != b;
  }
};
struct LessEqual {
  template <typename T>
  bool operator()(const T& a, const T& b) const {
    return a <= b;
  }
};
struct Less {
  template <typename T>
  bool operator()(const T& a, const T& b) const {
    return a < b;
  }
};
struct GreaterEqual {
  template <typename T>
  bool operator()(const T& a, const T& b) const {
    return a >= b;
  }
};
struct Greater {
  template <typename T>
  bool operator()(const T& a, const T& b) const {
    return a > b;
  }
};

template <>
struct Rule<FI_CSWAP> : CompareRule<Equal, false> {};
template <>
struct Rule<FI_CSWAP_NE> : CompareRule<NotEqual, false> {};
template <>
struct Rule<FI_CSWAP_LE> : CompareRule<LessEqual, true> {};
template <>
struct Rule<FI_CSWAP_LT> : CompareRule<Less, true> {};
template <>
struct Rule<FI_CSWAP_GE> : CompareRule<GreaterEqual, true> {};
template <>
struct Rule<FI_CSWAP_GT> : CompareRule<Greater, true> {};

template <>
struct Rule<FI_MSWAP> {
  template <typename T>
  static constexpr bool kDefinedOn = kIsInteger<T>;
  // compare is the mask: its set bits take the operand's bits.
  template <typename T>
  static bool next(const T& current, const T& operand, const T& mask, T& out) {
    out = static_cast<T>((operand & mask) | (current & static_cast<T>(~mask)));
    return true;
  }
};

// ---- What the table runs: the rules, widened for the reduced floats ----

// FI_FLOAT16, FI_BFLOAT16 and the FP8 types take float's op set: no bitwise
// ops and no MSWAP (their bits are no integer), every other op float has.
template <fi_op Op, typename T>
inline constexpr bool kOpDefinedOn = Rule<Op>::template kDefinedOn<T>;
template <fi_op Op, FloatFormat kFormat>
inline constexpr bool kOpDefinedOn<Op, ReducedFloat<kFormat>> =
    Rule<Op>::template kDefinedOn<float>;

// Rule<Op>::next for any element type.  A reduced float is decoded to float
// (exactly), the rule runs in float, so comparisons compare values (NaN
// unordered, -0 == +0), and a new value is rounded to the type to nearest,
// ties to even (reduced_float.h: overflow gives infinity, NaN for E4M3).
// Values that are only copied (WRITE, the swapped-in operand, MIN's winner)
// come back with their bits, since narrow(widen(x)) == x.
template <fi_op Op, typename T>
bool next_value(const T& current, const T& operand, const T& compare, T& out) {
  if constexpr (kIsReducedFloat<T>) {
    float result = 0;
    if (!Rule<Op>::next(widen(current), widen(operand), widen(compare), result)) return false;
    out = narrow<T>(result);
    return true;
  } else {
    return Rule<Op>::next(current, operand, compare, out);
  }
}

}  // namespace ofi_dpdk::atomic::detail
