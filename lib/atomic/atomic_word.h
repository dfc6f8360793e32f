// atomic_word.h (internal): how one element of type T is read and replaced
// atomically.  Each type gets exactly one Method (method_of<T>), and every op
// on that type goes through it, so all ops on a type are atomic with respect
// to each other:
//   kNative   1/2/4/8-byte types: __atomic builtins on the element's bits;
//             integers use the CPU's fetch-add/or/and/xor/exchange/CAS
//             directly, everything else a compare-and-swap loop.
//   kWideCas  16-byte types when a lock-free 16-byte CAS compiles inline
//             (cmpxchg16b, -mcx16): a compare-and-swap loop, reads included.
//   kLocked   anything else: a read-compute-write under the stripe lock.
// All atomics are sequentially consistent: the table's ops form one order.
#pragma once

#include <cstdint>
#include <cstring>
#include <type_traits>

#include "lib/atomic/atomic_config.h"
#include "lib/atomic/atomic_table.h"
#include "lib/atomic/element_ops.h"
#include "lib/atomic/element_types.h"
#include "lib/atomic/stripe_lock.h"

namespace ofi_dpdk::atomic::detail {

// Target memory belongs to the application and holds its own types; words
// that may alias anything keep the compiler's type-based alias analysis out.
template <size_t kBytes>
struct WordOf;
#define OFI_DPDK_WORD(bytes, integer)                     \
  template <>                                             \
  struct WordOf<bytes> {                                  \
    using type = integer;                                 \
    typedef integer __attribute__((may_alias)) in_memory; \
  }
OFI_DPDK_WORD(1, uint8_t);
OFI_DPDK_WORD(2, uint16_t);
OFI_DPDK_WORD(4, uint32_t);
OFI_DPDK_WORD(8, uint64_t);
OFI_DPDK_WORD(16, Uint128);
#undef OFI_DPDK_WORD

template <typename T>
constexpr Method method_of() {
  constexpr size_t size = sizeof(T);
  if constexpr (size == 1 || size == 2 || size == 4 || size == 8) {
    if (__atomic_always_lock_free(size, 0)) return Method::kNative;
  }
  if constexpr (size == 16 && OFI_DPDK_HAVE_WIDE_CAS) {
    return Method::kWideCas;
  }
  return Method::kLocked;
}

// The bits of `value`, laid over `previous` so that padding bytes (x87 long
// double) keep what memory held and a CAS never fails on them.
template <typename T, typename Word>
Word to_bits(const T& value, Word previous) {
  static_assert(sizeof(Word) == sizeof(T));
  std::memcpy(&previous, &value, kValueBytes<T>);
  return previous;
}

// std::complex is trivially copyable but not trivial: memcpy into it is
// sound, and the void* cast says so to -Wclass-memaccess.
template <typename T, typename Word>
T from_bits(Word bits) {
  static_assert(sizeof(Word) == sizeof(T) && std::is_trivially_copyable_v<T>);
  T value;
  std::memcpy(static_cast<void*>(&value), &bits, sizeof(T));
  return value;
}

// The generic read-modify-write: applies `next` (as in Rule::next) to the
// element at target and returns the value it replaced (or left alone).
template <typename T, typename Next>
T update(void* target, const Next& next) {
  constexpr Method method = method_of<T>();
  T desired_value{};
  if constexpr (method == Method::kNative) {
    using Word = typename WordOf<sizeof(T)>::type;
    auto* word = static_cast<typename WordOf<sizeof(T)>::in_memory*>(target);
    Word expected = __atomic_load_n(word, __ATOMIC_SEQ_CST);
    for (;;) {
      const T current = from_bits<T>(expected);
      // An unchanged element needs no write: the load is the op's moment.
      if (!next(current, desired_value)) return current;
      if (__atomic_compare_exchange_n(word, &expected, to_bits(desired_value, expected),
                                      /*weak=*/true, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST)) {
        return current;
      }
    }
  } else if constexpr (method == Method::kWideCas) {
    using Word = typename WordOf<16>::type;
    auto* word = static_cast<typename WordOf<16>::in_memory*>(target);
    // The two halves, read apart, are only a guess (possibly torn); the
    // first CAS either confirms it or returns the true value.  A plain 16-byte
    // atomic load does not exist: reads are CASes too, so the element must be
    // writable even for FI_ATOMIC_READ.
    const auto* halves = static_cast<const typename WordOf<8>::in_memory*>(target);
    Word expected = (Word{__atomic_load_n(&halves[1], __ATOMIC_RELAXED)} << 64) |
                    Word{__atomic_load_n(&halves[0], __ATOMIC_RELAXED)};
    for (;;) {
      const T current = from_bits<T>(expected);
      const Word desired =
          next(current, desired_value) ? to_bits(desired_value, expected) : expected;
      const Word found = __sync_val_compare_and_swap(word, expected, desired);
      if (found == expected) return current;
      expected = found;
    }
  } else {
    static_assert(sizeof(T) <= kMaxLockedElementSize);
    StripeGuard guard(target, sizeof(T));
    T current;
    std::memcpy(static_cast<void*>(&current), target, sizeof(T));
    if (next(current, desired_value)) std::memcpy(target, &desired_value, kValueBytes<T>);
    return current;
  }
}

// One element of op Op: the CPU's own instruction where there is one for a
// native integer (and for plain reads and writes of any native type), the
// generic update otherwise.  Returns the element's old value.
template <fi_op Op, typename T>
T apply_element(void* target, const T& operand, const T& compare) {
  if constexpr (method_of<T>() == Method::kNative) {
    using Word = typename WordOf<sizeof(T)>::type;
    auto* word = static_cast<typename WordOf<sizeof(T)>::in_memory*>(target);
    [[maybe_unused]] const Word operand_bits = to_bits(operand, Word{});
    if constexpr (Op == FI_ATOMIC_READ) {
      return from_bits<T>(__atomic_load_n(word, __ATOMIC_SEQ_CST));
    } else if constexpr (Op == FI_ATOMIC_WRITE) {
      return from_bits<T>(__atomic_exchange_n(word, operand_bits, __ATOMIC_SEQ_CST));
    } else if constexpr (kIsInteger<T> && Op == FI_SUM) {
      // Unsigned words wrap, which is two's complement addition for signed T.
      return from_bits<T>(__atomic_fetch_add(word, operand_bits, __ATOMIC_SEQ_CST));
    } else if constexpr (kIsInteger<T> && Op == FI_BOR) {
      return from_bits<T>(__atomic_fetch_or(word, operand_bits, __ATOMIC_SEQ_CST));
    } else if constexpr (kIsInteger<T> && Op == FI_BAND) {
      return from_bits<T>(__atomic_fetch_and(word, operand_bits, __ATOMIC_SEQ_CST));
    } else if constexpr (kIsInteger<T> && Op == FI_BXOR) {
      return from_bits<T>(__atomic_fetch_xor(word, operand_bits, __ATOMIC_SEQ_CST));
    } else if constexpr (kIsInteger<T> && Op == FI_CSWAP) {
      // Integer equality is bit equality (not so for floats: NaN, -0.0).
      Word expected = to_bits(compare, Word{});
      __atomic_compare_exchange_n(word, &expected, operand_bits, /*weak=*/false, __ATOMIC_SEQ_CST,
                                  __ATOMIC_SEQ_CST);
      return from_bits<T>(expected);
    }
  }
  return update<T>(target, [&](const T& current, T& out) {
    return next_value<Op>(current, operand, compare, out);
  });
}

}  // namespace ofi_dpdk::atomic::detail
