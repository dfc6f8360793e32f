// test_atomic_table.cc: the dispatch table against a plain sequential
// reference written independently of lib/atomic's rules
// (test/support/atomic_reference.h, shared with the two-process test):
//   - the support matrix (doc/atomics.md) cell by cell: supported cells
//     answer 0 and the element size, the others -FI_EOPNOTSUPP, values outside
//     the table -FI_EINVAL;
//   - every supported cell on every combination of edge values (negative
//     numbers, extremes, NaN, infinities, signed zeros), old values included;
//   - apply()'s checks (alignment, missing buffers, count) and that it leaves
//     the target alone when it refuses.
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
constexpr fi_op kLastPointToPointOp = FI_MSWAP;

CallClass call_class(Class op_class) {
  switch (op_class) {
    case Class::kBase: return CallClass::kBase;
    case Class::kFetch: return CallClass::kFetch;
    case Class::kCompare: return CallClass::kCompare;
  }
  return CallClass::kBase;
}

// The matrix as test/support/atomic_reference.h writes it.
bool expect_supported(Class op_class, int op, int datatype) {
  return ofi_dpdk::test::expect_supported(call_class(op_class), op, datatype);
}

const char* class_name(Class op_class) {
  switch (op_class) {
    case Class::kBase: return "base";
    case Class::kFetch: return "fetch";
    case Class::kCompare: return "compare";
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
    for (int op = 0; op <= kLastPointToPointOp; ++op) {
      if (!expect_supported(op_class, op, datatype)) continue;
      SCOPED_TRACE(std::string(class_name(op_class)) + " op " + std::to_string(op) +
                   " datatype " + std::to_string(datatype));
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
      ASSERT_EQ(0, ofi_dpdk::atomic::apply(static_cast<fi_op>(op), datatype, op_class,
                                           target.data, operand_buffer,
                                           uses_compare ? compare.data() : nullptr,
                                           op_class == Class::kBase ? nullptr : result.data(),
                                           count));
      int failures = 0;
      for (size_t i = 0; i < count && failures < 5; ++i) {
        const std::optional<T> reference_value = reference(op, initial[i], operand[i], compare[i]);
        ASSERT_TRUE(reference_value.has_value()) << "no reference for op " << op;
        const T expected = *reference_value;
        if (!same_value(target.data[i], expected)) {
          ++failures;
          ADD_FAILURE() << "target " << describe(initial[i]) << " operand "
                        << describe(operand[i]) << " compare " << describe(compare[i])
                        << ": got " << describe(target.data[i]) << ", expected "
                        << describe(expected);
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
                    ofi_dpdk::atomic::apply(fop, fdt, op_class, buffer, buffer, buffer,
                                            buffer, 1));
        }
      }
    }
  }
  // 8 or 10 integer types, 3 real, 3 complex (doc/atomics.md's counts).
  const int integers = 8 + OFI_DPDK_HAVE_FI_INT128 + OFI_DPDK_HAVE_FI_UINT128;
  const int base_cells = integers * 11 + 3 * 8 + 3 * 6;
  const int fetch_cells = base_cells + integers + 3 + 3;
  const int compare_cells = integers * 7 + 3 * 6 + 3 * 2;
  EXPECT_EQ(base_cells + fetch_cells + compare_cells, supported);
}

TEST(AtomicTable, ValuesOutsideTheTableAreInvalid) {
  // Only values inside the enums' ranges (0..511 here): anything else cannot
  // even be formed without undefined behaviour, which is what to_op and
  // to_datatype are for.
  const fi_op bad_ops[] = {static_cast<fi_op>(kOpSlots), FI_NOOP,
                           static_cast<fi_op>(300), static_cast<fi_op>(511)};
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
  EXPECT_EQ(-FI_EINVAL,
            ofi_dpdk::atomic::query(FI_INT64, FI_SUM, static_cast<Class>(3), &size));
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
  EXPECT_EQ(2 * sizeof(long double),
            ofi_dpdk::atomic::datatype_size(FI_LONG_DOUBLE_COMPLEX));
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
  ASSERT_EQ(0, ofi_dpdk::atomic::apply(FI_MIN, FI_DOUBLE, Class::kBase, &target, &operand,
                                       nullptr, nullptr, 1));
  EXPECT_TRUE(std::isnan(target));
  // ... and a NaN operand is ignored.
  target = 2.0;
  operand = nan;
  ASSERT_EQ(0, ofi_dpdk::atomic::apply(FI_MAX, FI_DOUBLE, Class::kBase, &target, &operand,
                                       nullptr, nullptr, 1));
  EXPECT_EQ(2.0, target);
  // -0.0 is not less than +0.0: MIN keeps the target's zero.
  target = 0.0;
  operand = -0.0;
  ASSERT_EQ(0, ofi_dpdk::atomic::apply(FI_MIN, FI_DOUBLE, Class::kBase, &target, &operand,
                                       nullptr, nullptr, 1));
  EXPECT_FALSE(std::signbit(target));
  // CSWAP compares values: a NaN never equals itself, -0.0 equals +0.0.
  double result = 0;
  double compare = nan;
  target = nan;
  operand = 5.0;
  ASSERT_EQ(0, ofi_dpdk::atomic::apply(FI_CSWAP, FI_DOUBLE, Class::kCompare, &target,
                                       &operand, &compare, &result, 1));
  EXPECT_TRUE(std::isnan(target));
  compare = -0.0;
  target = 0.0;
  ASSERT_EQ(0, ofi_dpdk::atomic::apply(FI_CSWAP, FI_DOUBLE, Class::kCompare, &target,
                                       &operand, &compare, &result, 1));
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
  EXPECT_EQ(-FI_EINVAL, apply(FI_SUM, FI_UINT64, Class::kBase, memory + 4, operand, nullptr,
                              nullptr, 1));
  EXPECT_EQ(-FI_EINVAL, apply(FI_SUM, FI_FLOAT_COMPLEX, Class::kBase, memory + 4, operand,
                              nullptr, nullptr, 1));
  EXPECT_EQ(-FI_EINVAL, apply(FI_SUM, FI_LONG_DOUBLE_COMPLEX, Class::kBase, memory + 8,
                              operand, nullptr, nullptr, 1));
  // count 0 and a count whose byte length wraps.
  EXPECT_EQ(-FI_EINVAL, apply(FI_SUM, FI_UINT64, Class::kBase, memory, operand, nullptr,
                              nullptr, 0));
  EXPECT_EQ(-FI_EINVAL, apply(FI_SUM, FI_UINT64, Class::kBase, memory, operand, nullptr,
                              nullptr, SIZE_MAX / 4));
  // Missing buffers.
  EXPECT_EQ(-FI_EINVAL, apply(FI_SUM, FI_UINT64, Class::kBase, nullptr, operand, nullptr,
                              nullptr, 1));
  EXPECT_EQ(-FI_EINVAL, apply(FI_SUM, FI_UINT64, Class::kBase, memory, nullptr, nullptr,
                              nullptr, 1));
  EXPECT_EQ(-FI_EINVAL, apply(FI_SUM, FI_UINT64, Class::kFetch, memory, operand, nullptr,
                              nullptr, 1));
  EXPECT_EQ(-FI_EINVAL, apply(FI_CSWAP, FI_UINT64, Class::kCompare, memory, operand, nullptr,
                              result, 1));
  EXPECT_EQ(-FI_EINVAL, apply(FI_CSWAP, FI_UINT64, Class::kCompare, memory, operand, operand,
                              nullptr, 1));
  // The right op in the wrong class is an empty cell, not a bad value.
  EXPECT_EQ(-FI_EOPNOTSUPP, apply(FI_ATOMIC_READ, FI_UINT64, Class::kBase, memory, operand,
                                  nullptr, nullptr, 1));
  EXPECT_EQ(-FI_EOPNOTSUPP, apply(FI_SUM, FI_UINT64, Class::kCompare, memory, operand,
                                  operand, result, 1));
  EXPECT_EQ(0, std::memcmp(before, memory, sizeof memory));
}

TEST(AtomicTable, PacketBuffersNeedNoAlignment) {
  alignas(8) double target[3] = {1.0, 2.0, 3.0};
  unsigned char operand_packet[1 + sizeof target];
  unsigned char result_packet[3 + sizeof target];
  const double operand[3] = {0.5, -4.0, 1e300};
  std::memcpy(operand_packet + 1, operand, sizeof operand);
  ASSERT_EQ(0, ofi_dpdk::atomic::apply(FI_SUM, FI_DOUBLE, Class::kFetch, target,
                                       operand_packet + 1, nullptr, result_packet + 3, 3));
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
  ASSERT_EQ(0, ofi_dpdk::atomic::apply(FI_SUM, FI_INT64, Class::kBase, target, operand,
                                       nullptr, nullptr, 2));
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

}  // namespace
