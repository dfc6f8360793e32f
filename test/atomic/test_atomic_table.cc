// test_atomic_table.cc: the dispatch table against a plain sequential
// reference written independently of lib/atomic's rules
// (test/support/atomic_reference.h, shared with the two-process test):
//   - the support matrix (doc/atomics.md) cell by cell: supported cells
//     answer 0 and the element size, the others -FI_EOPNOTSUPP, values outside
//     the table -FI_EINVAL;
//   - every supported cell on every combination of edge values (negative
//     numbers, extremes, NaN, infinities, signed zeros), old values included;
//   - apply()'s checks (alignment, missing buffers, count) and that it leaves
//     the target alone when it refuses;
//   - with libfabric 2.x headers, the reduced-precision floats (FI_FLOAT16,
//     FI_BFLOAT16, FI_FLOAT8_E4M3, FI_FLOAT8_E5M2) and FI_DIFF: the cells
//     above, results stated as bit patterns for hand-worked cases (rounding
//     ties, overflow, subnormals, values not bits), and every bit pattern of
//     each type through SUM, PROD, DIFF and MAX.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <complex>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <limits>
#include <memory>
#include <new>
#include <string>
#include <type_traits>
#include <vector>

#include "lib/atomic/atomic_table.h"
#include "test/support/atomic_reference.h"

namespace {

using ofi_dpdk::atomic::Class;
using ofi_dpdk::atomic::kDatatypeSlots;
using ofi_dpdk::atomic::kOpSlots;
using ofi_dpdk::atomic::Method;
using ofi_dpdk::test::CallClass;
using ofi_dpdk::test::describe;
using ofi_dpdk::test::edge_values;
using ofi_dpdk::test::for_each_datatype;
using ofi_dpdk::test::reference;
using ofi_dpdk::test::same_value;
using ofi_dpdk::test::TestInt128;
using ofi_dpdk::test::TestUint128;

constexpr Class kClasses[] = {Class::kBase, Class::kFetch, Class::kCompare};

CallClass call_class(Class op_class) {
  switch (op_class) {
    case Class::kBase:
      return CallClass::kBase;
    case Class::kFetch:
      return CallClass::kFetch;
    case Class::kCompare:
      return CallClass::kCompare;
  }
  return CallClass::kBase;
}

// The matrix as test/support/atomic_reference.h writes it.
bool expect_supported(Class op_class, int op, int datatype) {
  return ofi_dpdk::test::expect_supported(call_class(op_class), op, datatype);
}

const char* class_name(Class op_class) {
  switch (op_class) {
    case Class::kBase:
      return "base";
    case Class::kFetch:
      return "fetch";
    case Class::kCompare:
      return "compare";
  }
  return "?";
}

// Target memory aligned well beyond what any datatype requires.
template <typename T>
struct AlignedArray {
  static constexpr std::align_val_t kAlign{64};
  explicit AlignedArray(size_t count)
      : data(static_cast<T*>(::operator new(count * sizeof(T), kAlign))) {}
  ~AlignedArray() { ::operator delete(data, kAlign); }
  AlignedArray(const AlignedArray&) = delete;
  AlignedArray& operator=(const AlignedArray&) = delete;
  T* data;
};

// Every supported op of every class on every (target, operand[, compare])
// combination of the edge values, in one apply() per op.
template <typename T>
void check_datatype_against_reference(fi_datatype datatype) {
  ASSERT_EQ(ofi_dpdk::atomic::datatype_size(datatype), sizeof(T));
  const std::vector<T> values = edge_values<T>();
  for (Class op_class : kClasses) {
    for (int op = 0; op < static_cast<int>(kOpSlots); ++op) {
      if (!expect_supported(op_class, op, datatype)) continue;
      SCOPED_TRACE(std::string(class_name(op_class)) + " op " + std::to_string(op) + " datatype " +
                   std::to_string(datatype));
      const bool uses_compare = op_class == Class::kCompare;
      std::vector<T> initial, operand, compare;
      for (const T& t : values) {
        for (const T& o : values) {
          for (size_t c = 0; c < (uses_compare ? values.size() : 1); ++c) {
            initial.push_back(t);
            operand.push_back(o);
            compare.push_back(values[c]);
          }
        }
      }
      const size_t count = initial.size();
      AlignedArray<T> target(count);
      std::memcpy(static_cast<void*>(target.data), initial.data(), count * sizeof(T));
      std::vector<T> result(count, T(42));
      // The man page lets FI_ATOMIC_READ go without an operand buffer.
      const void* operand_buffer = op == FI_ATOMIC_READ ? nullptr : operand.data();
      ASSERT_EQ(0,
                ofi_dpdk::atomic::apply(static_cast<fi_op>(op), datatype, op_class, target.data,
                                        operand_buffer, uses_compare ? compare.data() : nullptr,
                                        op_class == Class::kBase ? nullptr : result.data(), count));
      int failures = 0;
      for (size_t i = 0; i < count && failures < 5; ++i) {
        const std::optional<T> reference_value = reference(op, initial[i], operand[i], compare[i]);
        ASSERT_TRUE(reference_value.has_value()) << "no reference for op " << op;
        const T expected = *reference_value;
        if (!same_value(target.data[i], expected)) {
          ++failures;
          ADD_FAILURE() << "target " << describe(initial[i]) << " operand " << describe(operand[i])
                        << " compare " << describe(compare[i]) << ": got "
                        << describe(target.data[i]) << ", expected " << describe(expected);
        }
        if (op_class != Class::kBase && !same_value(result[i], initial[i])) {
          ++failures;
          ADD_FAILURE() << "result holds " << describe(result[i]) << ", not the old value "
                        << describe(initial[i]);
        }
      }
    }
  }
}

// ---- Tests ----

TEST(AtomicTable, MatrixMatchesTheSpecCellByCell) {
  int supported = 0;
  for (Class op_class : kClasses) {
    for (size_t op = 0; op < kOpSlots; ++op) {
      for (size_t datatype = 0; datatype < kDatatypeSlots; ++datatype) {
        const auto fop = static_cast<fi_op>(op);
        const auto fdt = static_cast<fi_datatype>(datatype);
        SCOPED_TRACE(std::string(class_name(op_class)) + " op " + std::to_string(op) +
                     " datatype " + std::to_string(datatype));
        size_t size = 0;
        const int rc = ofi_dpdk::atomic::query(fdt, fop, op_class, &size);
        if (expect_supported(op_class, static_cast<int>(op), static_cast<int>(datatype))) {
          ++supported;
          EXPECT_EQ(0, rc);
          EXPECT_EQ(ofi_dpdk::atomic::datatype_size(fdt), size);
          EXPECT_NE(nullptr, ofi_dpdk::atomic::find(fop, fdt, op_class));
        } else {
          EXPECT_EQ(-FI_EOPNOTSUPP, rc);
          EXPECT_EQ(nullptr, ofi_dpdk::atomic::find(fop, fdt, op_class));
          alignas(64) unsigned char buffer[64] = {};
          EXPECT_EQ(-FI_EOPNOTSUPP,
                    ofi_dpdk::atomic::apply(fop, fdt, op_class, buffer, buffer, buffer, buffer, 1));
        }
      }
    }
  }
  // 8 or 10 integer types, 3 or 7 real (the 2.x reduced floats count as
  // real), 3 complex; FI_DIFF where the headers have it (doc/atomics.md's
  // counts).
  const int integers = 8 + OFI_DPDK_HAVE_FI_INT128 + OFI_DPDK_HAVE_FI_UINT128;
  const int reals = 3 + OFI_DPDK_HAVE_FI_FLOAT16 + OFI_DPDK_HAVE_FI_BFLOAT16 +
                    OFI_DPDK_HAVE_FI_FLOAT8_E4M3 + OFI_DPDK_HAVE_FI_FLOAT8_E5M2;
  const int complexes = 3;
  const int diff = OFI_DPDK_HAVE_FI_DIFF * (integers + reals + complexes);
  const int base_cells = integers * 11 + reals * 8 + complexes * 6 + diff;
  const int fetch_cells = base_cells + integers + reals + complexes;
  const int compare_cells = integers * 7 + reals * 6 + complexes * 2;
  EXPECT_EQ(base_cells + fetch_cells + compare_cells, supported);
  std::printf("%d supported cells\n", supported);
}

TEST(AtomicTable, ValuesOutsideTheTableAreInvalid) {
  // Only values inside the enums' ranges (0..511 here): anything else cannot
  // even be formed without undefined behaviour, which is what to_op and
  // to_datatype are for.
  const fi_op bad_ops[] = {static_cast<fi_op>(kOpSlots), FI_NOOP, static_cast<fi_op>(300),
                           static_cast<fi_op>(511)};
  const fi_datatype bad_datatypes[] = {static_cast<fi_datatype>(kDatatypeSlots), FI_VOID,
                                       static_cast<fi_datatype>(300),
                                       static_cast<fi_datatype>(511)};
  size_t size = 7;
  for (fi_op op : bad_ops) {
    EXPECT_EQ(-FI_EINVAL, ofi_dpdk::atomic::query(FI_INT64, op, Class::kBase, &size));
    EXPECT_EQ(nullptr, ofi_dpdk::atomic::find(op, FI_INT64, Class::kBase));
  }
  for (fi_datatype datatype : bad_datatypes) {
    EXPECT_EQ(-FI_EINVAL, ofi_dpdk::atomic::query(datatype, FI_SUM, Class::kBase, &size));
    EXPECT_EQ(nullptr, ofi_dpdk::atomic::find(FI_SUM, datatype, Class::kBase));
    EXPECT_EQ(0u, ofi_dpdk::atomic::datatype_size(datatype));
    EXPECT_EQ(0u, ofi_dpdk::atomic::required_alignment(datatype));
  }
  EXPECT_EQ(-FI_EINVAL, ofi_dpdk::atomic::query(FI_INT64, FI_SUM, static_cast<Class>(3), &size));
  EXPECT_EQ(7u, size);  // untouched on error
  EXPECT_EQ(0, ofi_dpdk::atomic::query(FI_INT64, FI_SUM, Class::kBase, nullptr));
}

TEST(AtomicTable, WireIntegersConvertOnlyInsideTheTable) {
  fi_op op = FI_MIN;
  EXPECT_TRUE(ofi_dpdk::atomic::to_op(FI_MSWAP, &op));
  EXPECT_EQ(FI_MSWAP, op);
  EXPECT_FALSE(ofi_dpdk::atomic::to_op(kOpSlots, &op));
  EXPECT_FALSE(ofi_dpdk::atomic::to_op(UINT64_MAX, &op));
  EXPECT_EQ(FI_MSWAP, op);
  fi_datatype datatype = FI_INT8;
  EXPECT_TRUE(ofi_dpdk::atomic::to_datatype(FI_LONG_DOUBLE_COMPLEX, &datatype));
  EXPECT_EQ(FI_LONG_DOUBLE_COMPLEX, datatype);
  EXPECT_FALSE(ofi_dpdk::atomic::to_datatype(kDatatypeSlots, &datatype));
  EXPECT_FALSE(ofi_dpdk::atomic::to_datatype(uint64_t{1} << 32, &datatype));
  EXPECT_EQ(FI_LONG_DOUBLE_COMPLEX, datatype);
}

TEST(AtomicTable, SizesAndAlignment) {
  EXPECT_EQ(1u, ofi_dpdk::atomic::datatype_size(FI_INT8));
  EXPECT_EQ(8u, ofi_dpdk::atomic::datatype_size(FI_FLOAT_COMPLEX));
  EXPECT_EQ(8u, ofi_dpdk::atomic::required_alignment(FI_FLOAT_COMPLEX));
  EXPECT_EQ(sizeof(long double), ofi_dpdk::atomic::datatype_size(FI_LONG_DOUBLE));
  EXPECT_EQ(2 * sizeof(long double), ofi_dpdk::atomic::datatype_size(FI_LONG_DOUBLE_COMPLEX));
  EXPECT_EQ(std::min<size_t>(2 * sizeof(long double), 16),
            ofi_dpdk::atomic::required_alignment(FI_LONG_DOUBLE_COMPLEX));
}

TEST(AtomicTable, EveryTypeHasOneMethod) {
  Method method;
  ASSERT_TRUE(ofi_dpdk::atomic::atomicity_method(FI_UINT64, &method));
  EXPECT_EQ(Method::kNative, method);
  ASSERT_TRUE(ofi_dpdk::atomic::atomicity_method(FI_DOUBLE, &method));
  EXPECT_EQ(Method::kNative, method);
  ASSERT_TRUE(ofi_dpdk::atomic::atomicity_method(FI_LONG_DOUBLE_COMPLEX, &method));
  EXPECT_EQ(Method::kLocked, method);
  ASSERT_TRUE(ofi_dpdk::atomic::atomicity_method(FI_DOUBLE_COMPLEX, &method));
  EXPECT_EQ(OFI_DPDK_HAVE_WIDE_CAS ? Method::kWideCas : Method::kLocked, method);
  EXPECT_FALSE(ofi_dpdk::atomic::atomicity_method(FI_VOID, &method));
  for (size_t datatype = 0; datatype < kDatatypeSlots; ++datatype) {
    if (ofi_dpdk::atomic::atomicity_method(static_cast<fi_datatype>(datatype), &method)) {
      std::printf("datatype %zu: %zu bytes, %s\n", datatype,
                  ofi_dpdk::atomic::datatype_size(static_cast<fi_datatype>(datatype)),
                  ofi_dpdk::atomic::method_name(method));
    }
  }
}

TEST(AtomicTable, EverySupportedCellMatchesTheReference) {
  for_each_datatype([]<typename T>(fi_datatype datatype) {
    SCOPED_TRACE("datatype " + std::to_string(datatype));
    check_datatype_against_reference<T>(datatype);
  });
}

TEST(AtomicTable, NanAndSignedZeroFollowIeeeComparisons) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  alignas(8) double target = nan;
  double operand = 1.0;
  // MIN/MAX: a NaN target stays (nothing compares less than it) ...
  ASSERT_EQ(0, ofi_dpdk::atomic::apply(FI_MIN, FI_DOUBLE, Class::kBase, &target, &operand, nullptr,
                                       nullptr, 1));
  EXPECT_TRUE(std::isnan(target));
  // ... and a NaN operand is ignored.
  target = 2.0;
  operand = nan;
  ASSERT_EQ(0, ofi_dpdk::atomic::apply(FI_MAX, FI_DOUBLE, Class::kBase, &target, &operand, nullptr,
                                       nullptr, 1));
  EXPECT_EQ(2.0, target);
  // -0.0 is not less than +0.0: MIN keeps the target's zero.
  target = 0.0;
  operand = -0.0;
  ASSERT_EQ(0, ofi_dpdk::atomic::apply(FI_MIN, FI_DOUBLE, Class::kBase, &target, &operand, nullptr,
                                       nullptr, 1));
  EXPECT_FALSE(std::signbit(target));
  // CSWAP compares values: a NaN never equals itself, -0.0 equals +0.0.
  double result = 0;
  double compare = nan;
  target = nan;
  operand = 5.0;
  ASSERT_EQ(0, ofi_dpdk::atomic::apply(FI_CSWAP, FI_DOUBLE, Class::kCompare, &target, &operand,
                                       &compare, &result, 1));
  EXPECT_TRUE(std::isnan(target));
  compare = -0.0;
  target = 0.0;
  ASSERT_EQ(0, ofi_dpdk::atomic::apply(FI_CSWAP, FI_DOUBLE, Class::kCompare, &target, &operand,
                                       &compare, &result, 1));
  EXPECT_EQ(5.0, target);
}

TEST(AtomicTable, RefusesBadRequestsWithoutTouchingTheTarget) {
  alignas(16) unsigned char memory[64];
  std::memset(memory, 0x11, sizeof memory);
  unsigned char before[sizeof memory];
  std::memcpy(before, memory, sizeof memory);
  uint64_t operand[2] = {1, 1};
  uint64_t result[2] = {};
  using ofi_dpdk::atomic::apply;
  // Misaligned target, for a native and a locked type.
  EXPECT_EQ(-FI_EINVAL,
            apply(FI_SUM, FI_UINT64, Class::kBase, memory + 4, operand, nullptr, nullptr, 1));
  EXPECT_EQ(-FI_EINVAL, apply(FI_SUM, FI_FLOAT_COMPLEX, Class::kBase, memory + 4, operand, nullptr,
                              nullptr, 1));
  EXPECT_EQ(-FI_EINVAL, apply(FI_SUM, FI_LONG_DOUBLE_COMPLEX, Class::kBase, memory + 8, operand,
                              nullptr, nullptr, 1));
  // count 0 and a count whose byte length wraps.
  EXPECT_EQ(-FI_EINVAL,
            apply(FI_SUM, FI_UINT64, Class::kBase, memory, operand, nullptr, nullptr, 0));
  EXPECT_EQ(-FI_EINVAL, apply(FI_SUM, FI_UINT64, Class::kBase, memory, operand, nullptr, nullptr,
                              SIZE_MAX / 4));
  // Missing buffers.
  EXPECT_EQ(-FI_EINVAL,
            apply(FI_SUM, FI_UINT64, Class::kBase, nullptr, operand, nullptr, nullptr, 1));
  EXPECT_EQ(-FI_EINVAL,
            apply(FI_SUM, FI_UINT64, Class::kBase, memory, nullptr, nullptr, nullptr, 1));
  EXPECT_EQ(-FI_EINVAL,
            apply(FI_SUM, FI_UINT64, Class::kFetch, memory, operand, nullptr, nullptr, 1));
  EXPECT_EQ(-FI_EINVAL,
            apply(FI_CSWAP, FI_UINT64, Class::kCompare, memory, operand, nullptr, result, 1));
  EXPECT_EQ(-FI_EINVAL,
            apply(FI_CSWAP, FI_UINT64, Class::kCompare, memory, operand, operand, nullptr, 1));
  // The right op in the wrong class is an empty cell, not a bad value.
  EXPECT_EQ(-FI_EOPNOTSUPP,
            apply(FI_ATOMIC_READ, FI_UINT64, Class::kBase, memory, operand, nullptr, nullptr, 1));
  EXPECT_EQ(-FI_EOPNOTSUPP,
            apply(FI_SUM, FI_UINT64, Class::kCompare, memory, operand, operand, result, 1));
  EXPECT_EQ(0, std::memcmp(before, memory, sizeof memory));
}

TEST(AtomicTable, PacketBuffersNeedNoAlignment) {
  alignas(8) double target[3] = {1.0, 2.0, 3.0};
  unsigned char operand_packet[1 + sizeof target];
  unsigned char result_packet[3 + sizeof target];
  const double operand[3] = {0.5, -4.0, 1e300};
  std::memcpy(operand_packet + 1, operand, sizeof operand);
  ASSERT_EQ(0, ofi_dpdk::atomic::apply(FI_SUM, FI_DOUBLE, Class::kFetch, target, operand_packet + 1,
                                       nullptr, result_packet + 3, 3));
  double old_values[3];
  std::memcpy(old_values, result_packet + 3, sizeof old_values);
  EXPECT_EQ(1.0, old_values[0]);
  EXPECT_EQ(3.0, old_values[2]);
  EXPECT_EQ(1.5, target[0]);
  EXPECT_EQ(-2.0, target[1]);
  EXPECT_EQ(1e300, target[2]);
}

TEST(AtomicTable, SignedIntegersWrapLikeTwosComplement) {
  alignas(8) int64_t target[2] = {std::numeric_limits<int64_t>::max(),
                                  std::numeric_limits<int64_t>::min()};
  const int64_t operand[2] = {1, -1};
  ASSERT_EQ(0, ofi_dpdk::atomic::apply(FI_SUM, FI_INT64, Class::kBase, target, operand, nullptr,
                                       nullptr, 2));
  EXPECT_EQ(std::numeric_limits<int64_t>::min(), target[0]);
  EXPECT_EQ(std::numeric_limits<int64_t>::max(), target[1]);
  alignas(2) int16_t product = -32768;
  const int16_t minus_one = -1;
  ASSERT_EQ(0, ofi_dpdk::atomic::apply(FI_PROD, FI_INT16, Class::kBase, &product, &minus_one,
                                       nullptr, nullptr, 1));
  EXPECT_EQ(-32768, product);
}

// x87 long double: 10 value bytes in a 16-byte slot; an update must not
// depend on or disturb the 6 padding bytes.
TEST(AtomicTable, LongDoublePaddingIsPreserved) {
  if (std::numeric_limits<long double>::digits != 64 || sizeof(long double) != 16) {
    GTEST_SKIP() << "long double is not x87 extended precision here";
  }
  alignas(16) unsigned char slot[16];
  std::memset(slot, 0xAB, sizeof slot);
  const long double one = 1.0L;
  std::memcpy(slot, &one, 10);
  const long double operand = 2.5L;
  ASSERT_EQ(0, ofi_dpdk::atomic::apply(FI_SUM, FI_LONG_DOUBLE, Class::kBase, slot, &operand,
                                       nullptr, nullptr, 1));
  long double value;
  std::memcpy(&value, slot, sizeof value);
  EXPECT_EQ(3.5L, value);
  for (size_t i = 10; i < 16; ++i) EXPECT_EQ(0xAB, slot[i]) << "padding byte " << i;
}

// ---- libfabric 2.x: the reduced-precision floats and FI_DIFF ----

#if OFI_DPDK_HAVE_FI_DIFF
TEST(AtomicTable, DiffSubtractsTheOperand) {
  alignas(8) int32_t ints[3] = {10, INT32_MIN, 0};
  const int32_t int_operands[3] = {3, 1, INT32_MIN};
  int32_t old_ints[3] = {};
  ASSERT_EQ(0, ofi_dpdk::atomic::apply(FI_DIFF, FI_INT32, Class::kFetch, ints, int_operands,
                                       nullptr, old_ints, 3));
  EXPECT_EQ(7, ints[0]);
  EXPECT_EQ(INT32_MAX, ints[1]);  // wraps like two's complement
  EXPECT_EQ(INT32_MIN, ints[2]);
  EXPECT_EQ(10, old_ints[0]);
  alignas(8) double real = 1.0;
  const double real_operand = 0.25;
  ASSERT_EQ(0, ofi_dpdk::atomic::apply(FI_DIFF, FI_DOUBLE, Class::kBase, &real, &real_operand,
                                       nullptr, nullptr, 1));
  EXPECT_EQ(0.75, real);
  alignas(16) std::complex<double> complex(1, 2);
  const std::complex<double> complex_operand(3, -1);
  ASSERT_EQ(0, ofi_dpdk::atomic::apply(FI_DIFF, FI_DOUBLE_COMPLEX, Class::kBase, &complex,
                                       &complex_operand, nullptr, nullptr, 1));
  EXPECT_EQ(std::complex<double>(-2, 3), complex);
  // A base and fetch op, like FI_SUM: not a compare one.
  size_t size = 0;
  EXPECT_EQ(-FI_EOPNOTSUPP, ofi_dpdk::atomic::query(FI_INT32, FI_DIFF, Class::kCompare, &size));
}
#endif

#if OFI_DPDK_HAVE_FI_FLOAT16 || OFI_DPDK_HAVE_FI_BFLOAT16 || OFI_DPDK_HAVE_FI_FLOAT8_E4M3 || \
    OFI_DPDK_HAVE_FI_FLOAT8_E5M2

// One element worked out by hand: the bits the target must hold afterwards
// (kAnyNan: any NaN pattern of the type).
struct StatedCase {
  fi_op op;
  unsigned target;
  unsigned operand;
  unsigned compare;  // read by the compare ops only
  unsigned expected;
  const char* why;
};
constexpr unsigned kAnyNan = ~0u;

std::string hex(unsigned bits) {
  char text[16];
  std::snprintf(text, sizeof text, "0x%04x", bits);
  return text;
}

template <typename S>
void check_stated_cases(fi_datatype datatype, const std::vector<StatedCase>& cases) {
  using Bits = typename S::Bits;
  for (const StatedCase& c : cases) {
    SCOPED_TRACE(std::string(c.why) + ": op " + std::to_string(c.op) + " target " + hex(c.target) +
                 " operand " + hex(c.operand));
    const Class op_class = c.op >= FI_CSWAP && c.op <= FI_MSWAP ? Class::kCompare : Class::kFetch;
    alignas(8) Bits target = static_cast<Bits>(c.target);
    const Bits operand = static_cast<Bits>(c.operand);
    const Bits compare = static_cast<Bits>(c.compare);
    Bits old = 0;
    ASSERT_EQ(0,
              ofi_dpdk::atomic::apply(c.op, datatype, op_class, &target, &operand,
                                      op_class == Class::kCompare ? &compare : nullptr, &old, 1));
    EXPECT_EQ(hex(c.target), hex(old)) << "the fetched old value";
    if (c.expected == kAnyNan) {
      EXPECT_TRUE(S::of(target).is_nan()) << "got " << hex(target) << ", expected a NaN";
    } else {
      EXPECT_EQ(hex(c.expected), hex(target));
    }
    // The reference must agree with the hand-worked value, or it is wrong
    // too; it tells NaNs apart from numbers only, not by payload.
    const std::optional<S> reference_value =
        reference(c.op, S::of(c.target), S::of(c.operand), S::of(c.compare));
    ASSERT_TRUE(reference_value.has_value());
    if (c.expected == kAnyNan || S::of(c.expected).is_nan()) {
      EXPECT_TRUE(reference_value->is_nan()) << "the reference says " << describe(*reference_value);
    } else {
      EXPECT_EQ(hex(c.expected), hex(reference_value->bits)) << "the reference disagrees";
    }
  }
}

// Every bit pattern of S as a target, against each edge value as operand,
// through the ops whose results cover all the rounding paths.
template <typename S>
void check_every_pattern(fi_datatype datatype) {
  const size_t patterns = size_t{1} << S::kWidth;
  std::vector<fi_op> ops = {FI_SUM, FI_PROD, FI_MAX};
#if OFI_DPDK_HAVE_FI_DIFF
  ops.push_back(FI_DIFF);
#endif
  AlignedArray<S> target(patterns);
  for (fi_op op : ops) {
    for (const S& operand_value : edge_values<S>()) {
      for (size_t i = 0; i < patterns; ++i) target.data[i] = S::of(static_cast<unsigned>(i));
      const std::vector<S> operand(patterns, operand_value);
      ASSERT_EQ(0, ofi_dpdk::atomic::apply(op, datatype, Class::kBase, target.data, operand.data(),
                                           nullptr, nullptr, patterns));
      int failures = 0;
      for (size_t i = 0; i < patterns && failures < 5; ++i) {
        const S initial = S::of(static_cast<unsigned>(i));
        const S expected = *reference(op, initial, operand_value, operand_value);
        if (!same_value(target.data[i], expected)) {
          ++failures;
          ADD_FAILURE() << "op " << op << " target " << describe(initial) << " operand "
                        << describe(operand_value) << ": got " << describe(target.data[i])
                        << ", expected " << describe(expected);
        }
      }
    }
  }
}

// One or two bytes: a native compare-and-swap on the element itself, so a
// neighbour is never rewritten; float's op set, no bitwise ops or MSWAP.
template <typename S>
void check_method_and_op_set(fi_datatype datatype) {
  Method method;
  ASSERT_TRUE(ofi_dpdk::atomic::atomicity_method(datatype, &method));
  EXPECT_EQ(Method::kNative, method);
  EXPECT_EQ(sizeof(S), ofi_dpdk::atomic::datatype_size(datatype));
  EXPECT_EQ(sizeof(S), ofi_dpdk::atomic::required_alignment(datatype));
  size_t size = 0;
  EXPECT_EQ(-FI_EOPNOTSUPP, ofi_dpdk::atomic::query(datatype, FI_BOR, Class::kBase, &size));
  EXPECT_EQ(-FI_EOPNOTSUPP, ofi_dpdk::atomic::query(datatype, FI_BXOR, Class::kFetch, &size));
  EXPECT_EQ(-FI_EOPNOTSUPP, ofi_dpdk::atomic::query(datatype, FI_MSWAP, Class::kCompare, &size));
  EXPECT_EQ(0, ofi_dpdk::atomic::query(datatype, FI_CSWAP_LT, Class::kCompare, &size));
  EXPECT_EQ(sizeof(S), size);
}
#endif

#if OFI_DPDK_HAVE_FI_FLOAT16
// IEEE binary16: bias 15, 1.0 = 0x3C00, ulp(1) = 2^-10, max 65504 = 0x7BFF.
TEST(AtomicTable, Float16StatedResults) {
  using ofi_dpdk::test::TestFloat16;
  check_method_and_op_set<TestFloat16>(FI_FLOAT16);
  check_stated_cases<TestFloat16>(
      FI_FLOAT16,
      {
          {FI_SUM, 0x3C00, 0x1000, 0, 0x3C00, "1 + 2^-11 ties to even: down to 1"},
          {FI_SUM, 0x3C01, 0x1000, 0, 0x3C02, "1+2^-10 + 2^-11 ties to even: up"},
          {FI_SUM, 0x3C00, 0x1100, 0, 0x3C01, "1 + 1.25*2^-11 is past the tie: up"},
          {FI_SUM, 0x7BFF, 0x4A00, 0, 0x7BFF, "65504 + 12 rounds back to max"},
          {FI_SUM, 0x7BFF, 0x4C00, 0, 0x7C00, "65504 + 16 ties between max (odd) and 2^16: inf"},
          {FI_SUM, 0x7BFF, 0x7BFF, 0, 0x7C00, "max + max overflows to inf"},
          {FI_SUM, 0x7C00, 0xFC00, 0, kAnyNan, "inf + -inf"},
          {FI_SUM, 0x8000, 0x8000, 0, 0x8000, "-0 + -0 = -0"},
          {FI_PROD, 0x0001, 0x3800, 0, 0x0000, "2^-24 * 0.5 ties to even: 0"},
          {FI_PROD, 0x0001, 0xB800, 0, 0x8000, "2^-24 * -0.5: -0"},
          {FI_PROD, 0x0001, 0x3A00, 0, 0x0001, "2^-24 * 0.75 rounds up to the smallest subnormal"},
          {FI_PROD, 0x3555, 0x4200, 0, 0x3C00, "0x3555 * 3 = 1 - 2^-12 ties to even: 1"},
          {FI_DIFF, 0x0400, 0x0001, 0, 0x03FF, "min normal - min subnormal = max subnormal"},
          {FI_DIFF, 0x3C00, 0x3C00, 0, 0x0000, "1 - 1 = +0"},
          {FI_MIN, 0x0000, 0x8000, 0, 0x0000, "-0 is not less than +0"},
          {FI_MIN, 0x3C00, 0xC000, 0, 0xC000, "-2 < 1 (its bits are larger)"},
          {FI_MAX, 0x7E00, 0x3C00, 0, 0x7E00, "a NaN target stays"},
          {FI_MAX, 0x3C00, 0x7E00, 0, 0x3C00, "a NaN operand is ignored"},
          {FI_LOR, 0x0000, 0x8000, 0, 0x0000, "0 || -0 is false: +0"},
          {FI_LAND, 0x7E00, 0x3555, 0, 0x3C00, "NaN && x is true: 1.0"},
          {FI_ATOMIC_WRITE, 0x0000, 0x7D01, 0, 0x7D01, "a write keeps a NaN's bits"},
          {FI_CSWAP, 0x0000, 0x7D01, 0x8000, 0x7D01, "-0 == +0 swaps, the operand's bits kept"},
          {FI_CSWAP, 0x7E00, 0x3C00, 0x7E00, 0x7E00, "NaN never equals NaN"},
          {FI_CSWAP_NE, 0x7E00, 0x3C00, 0x7E00, 0x3C00, "NaN != NaN swaps"},
          {FI_CSWAP_LT, 0xC000, 0x3C00, 0x3C00, 0xC000,
           "1 < -2 is false (0x3C00 < 0xC000 as bits)"},
          {FI_CSWAP_GE, 0x3C00, 0x4000, 0x3C00, 0x4000, "1 >= 1 swaps"},
      });
}

TEST(AtomicTable, Float16EveryPatternMatchesTheReference) {
  check_every_pattern<ofi_dpdk::test::TestFloat16>(FI_FLOAT16);
}
#endif

#if OFI_DPDK_HAVE_FI_BFLOAT16
// bfloat16: float's upper half, bias 127, 1.0 = 0x3F80, ulp(1) = 2^-7.
TEST(AtomicTable, Bfloat16StatedResults) {
  using ofi_dpdk::test::TestBfloat16;
  check_method_and_op_set<TestBfloat16>(FI_BFLOAT16);
  check_stated_cases<TestBfloat16>(
      FI_BFLOAT16,
      {
          {FI_SUM, 0x3F80, 0x3B80, 0, 0x3F80, "1 + 2^-8 ties to even: down to 1"},
          {FI_SUM, 0x3F81, 0x3B80, 0, 0x3F82, "1+2^-7 + 2^-8 ties to even: up"},
          {FI_SUM, 0x3F80, 0x3BC0, 0, 0x3F81, "1 + 1.5*2^-8 is past the tie: up"},
          {FI_SUM, 0x7F7F, 0x7F7F, 0, 0x7F80, "max + max overflows to inf"},
          {FI_SUM, 0x7F80, 0x3F80, 0, 0x7F80, "inf + 1 = inf"},
          {FI_PROD, 0x0001, 0x3F00, 0, 0x0000, "2^-133 * 0.5 ties to even: 0"},
          {FI_PROD, 0x0001, 0x3F40, 0, 0x0001, "2^-133 * 0.75 rounds up to the smallest subnormal"},
          {FI_PROD, 0x8001, 0x3F00, 0, 0x8000, "-2^-133 * 0.5: -0"},
          {FI_DIFF, 0x0080, 0x0001, 0, 0x007F, "min normal - min subnormal = max subnormal"},
          {FI_DIFF, 0x3F80, 0xBF80, 0, 0x4000, "1 - -1 = 2"},
          {FI_MAX, 0x3F80, 0x7FC0, 0, 0x3F80, "a NaN operand is ignored"},
          {FI_MIN, 0x3F80, 0xBF80, 0, 0xBF80, "-1 < 1"},
          {FI_CSWAP_GT, 0x3F80, 0x4000, 0xBF80, 0x3F80,
           "-1 > 1 is false (0xBF80 > 0x3F80 as bits)"},
          {FI_CSWAP_LE, 0x3F80, 0x4000, 0xBF80, 0x4000, "-1 <= 1 swaps"},
          {FI_CSWAP, 0x8000, 0x3F80, 0x0000, 0x3F80, "+0 == -0 swaps"},
      });
}

TEST(AtomicTable, Bfloat16EveryPatternMatchesTheReference) {
  check_every_pattern<ofi_dpdk::test::TestBfloat16>(FI_BFLOAT16);
}
#endif

#if OFI_DPDK_HAVE_FI_FLOAT8_E4M3
// OCP FP8 E4M3: bias 7, 1.0 = 0x38, ulp(1) = 2^-3, max 448 = 0x7E, no
// infinity, NaN = S.1111.111.  Overflow gives NaN (doc/atomics.md).
TEST(AtomicTable, Float8E4M3StatedResults) {
  using ofi_dpdk::test::TestFloat8E4M3;
  check_method_and_op_set<TestFloat8E4M3>(FI_FLOAT8_E4M3);
  check_stated_cases<TestFloat8E4M3>(
      FI_FLOAT8_E4M3,
      {
          {FI_SUM, 0x38, 0x18, 0, 0x38, "1 + 2^-4 ties to even: down to 1"},
          {FI_SUM, 0x39, 0x18, 0, 0x3A, "1.125 + 2^-4 ties to even: up to 1.25"},
          {FI_SUM, 0x7E, 0x50, 0, 0x7E, "448 + 8 rounds back to 448"},
          {FI_SUM, 0x7E, 0x58, 0, 0x7E, "448 + 16 ties between 448 (even) and 480: 448"},
          {FI_SUM, 0x7E, 0x59, 0, 0x7F, "448 + 18 rounds to 480: overflow, NaN"},
          {FI_SUM, 0x78, 0x78, 0, 0x7F, "256 + 256 overflows: NaN"},
          {FI_SUM, 0xFE, 0xFE, 0, 0xFF, "-448 + -448 overflows: NaN, with the sign"},
          {FI_SUM, 0x7F, 0x38, 0, kAnyNan, "NaN + 1"},
          {FI_PROD, 0x01, 0x30, 0, 0x00, "2^-9 * 0.5 ties to even: 0"},
          {FI_PROD, 0x01, 0xB0, 0, 0x80, "2^-9 * -0.5: -0"},
          {FI_PROD, 0x01, 0x34, 0, 0x01, "2^-9 * 0.75 rounds up to the smallest subnormal"},
          {FI_PROD, 0x7E, 0x40, 0, 0x7F, "448 * 2 overflows: NaN"},
          {FI_DIFF, 0x08, 0x01, 0, 0x07, "min normal - min subnormal = max subnormal"},
          {FI_DIFF, 0x80, 0x00, 0, 0x80, "-0 - +0 = -0"},
          {FI_MIN, 0x38, 0xB8, 0, 0xB8, "-1 < 1 (its bits are larger)"},
          {FI_MAX, 0xFE, 0x01, 0, 0x01, "2^-9 > -448"},
          {FI_MAX, 0x38, 0x7F, 0, 0x38, "a NaN operand is ignored"},
          {FI_LXOR, 0x00, 0x7F, 0, 0x38, "0 xor NaN (true): 1.0"},
          {FI_CSWAP, 0x7F, 0x38, 0x7F, 0x7F, "NaN never equals NaN"},
          {FI_CSWAP_NE, 0x7F, 0x38, 0x7F, 0x38, "NaN != NaN swaps"},
          {FI_CSWAP_LT, 0x38, 0x40, 0xB8, 0x40, "-1 < 1 swaps"},
      });
}

TEST(AtomicTable, Float8E4M3EveryPatternMatchesTheReference) {
  check_every_pattern<ofi_dpdk::test::TestFloat8E4M3>(FI_FLOAT8_E4M3);
}
#endif

#if OFI_DPDK_HAVE_FI_FLOAT8_E5M2
// FP8 E5M2: IEEE-like, bias 15, 1.0 = 0x3C, ulp(1) = 2^-2, max 57344 = 0x7B.
TEST(AtomicTable, Float8E5M2StatedResults) {
  using ofi_dpdk::test::TestFloat8E5M2;
  check_method_and_op_set<TestFloat8E5M2>(FI_FLOAT8_E5M2);
  check_stated_cases<TestFloat8E5M2>(
      FI_FLOAT8_E5M2,
      {
          {FI_SUM, 0x3C, 0x30, 0, 0x3C, "1 + 2^-3 ties to even: down to 1"},
          {FI_SUM, 0x3D, 0x30, 0, 0x3E, "1.25 + 2^-3 ties to even: up to 1.5"},
          {FI_SUM, 0x7B, 0x68, 0, 0x7B, "57344 + 2048 rounds back to max"},
          {FI_SUM, 0x7B, 0x6C, 0, 0x7C, "57344 + 4096 ties between max (odd) and 2^16: inf"},
          {FI_SUM, 0x7C, 0xFC, 0, kAnyNan, "inf + -inf"},
          {FI_PROD, 0x01, 0x38, 0, 0x00, "2^-16 * 0.5 ties to even: 0"},
          {FI_PROD, 0x03, 0x38, 0, 0x02, "3*2^-16 * 0.5 ties to even: 2*2^-16"},
          {FI_PROD, 0xFB, 0x40, 0, 0xFC, "-max * 2 overflows to -inf"},
          {FI_DIFF, 0x04, 0x01, 0, 0x03, "min normal - min subnormal = max subnormal"},
          {FI_DIFF, 0x7C, 0x7C, 0, kAnyNan, "inf - inf"},
          {FI_MIN, 0x3C, 0xFC, 0, 0xFC, "-inf < 1"},
          {FI_MAX, 0x7E, 0x3C, 0, 0x7E, "a NaN target stays"},
          {FI_CSWAP_GE, 0xBC, 0x40, 0x3C, 0x40, "1 >= -1 swaps (0x3C < 0xBC as bits)"},
          {FI_CSWAP, 0x80, 0x3C, 0x00, 0x3C, "+0 == -0 swaps"},
      });
}

TEST(AtomicTable, Float8E5M2EveryPatternMatchesTheReference) {
  check_every_pattern<ofi_dpdk::test::TestFloat8E5M2>(FI_FLOAT8_E5M2);
}
#endif

}  // namespace
