// atomic_table.cc: the dispatch table, generated at compile time from the op
// rules (element_ops.h) and the element types (element_types.h): a cell holds
// run<class, op, T> exactly when the op belongs to the class and its rule is
// defined on T.  No cell is written by hand.
#include "lib/atomic/atomic_table.h"

#include <array>
#include <cstring>
#include <utility>

#include "lib/atomic/atomic_word.h"
#include "lib/atomic/element_ops.h"
#include "lib/atomic/element_types.h"

namespace ofi_dpdk::atomic {
namespace detail {
namespace {

// The kernel of one cell.  Operand, compare and result are packet buffers
// without alignment, hence memcpy; the target is aligned (apply() checks).
template <Class kClass, fi_op Op, typename T>
void run(void* target, const void* operand, const void* compare, void* result, size_t count) {
  auto* target_bytes = static_cast<unsigned char*>(target);
  for (size_t i = 0; i < count; ++i) {
    const size_t offset = i * sizeof(T);
    T operand_value{};
    T compare_value{};
    if constexpr (Op != FI_ATOMIC_READ) {
      std::memcpy(static_cast<void*>(&operand_value),
                  static_cast<const unsigned char*>(operand) + offset, sizeof(T));
    }
    if constexpr (kClass == Class::kCompare) {
      std::memcpy(static_cast<void*>(&compare_value),
                  static_cast<const unsigned char*>(compare) + offset, sizeof(T));
    }
    const T old_value = apply_element<Op, T>(target_bytes + offset, operand_value, compare_value);
    if constexpr (kClass != Class::kBase) {
      std::memcpy(static_cast<unsigned char*>(result) + offset, &old_value, sizeof(T));
    }
  }
}

template <Class kClass, size_t kOp, size_t kDatatype>
constexpr AtomicFn make_cell() {
  constexpr auto op = static_cast<fi_op>(kOp);
  using T = typename ElementOf<static_cast<fi_datatype>(kDatatype)>::type;
  if constexpr (kIsElement<T> && is_in_class(kClass, op) && kOpDefinedOn<op, T>) {
    return &run<kClass, op, T>;
  } else {
    return nullptr;
  }
}

using Row = std::array<AtomicFn, kDatatypeSlots>;
using Grid = std::array<Row, kOpSlots>;

template <Class kClass, size_t kOp, size_t... kDatatypes>
constexpr Row make_row(std::index_sequence<kDatatypes...>) {
  return Row{make_cell<kClass, kOp, kDatatypes>()...};
}

template <Class kClass, size_t... kOps>
constexpr Grid make_grid(std::index_sequence<kOps...>) {
  return Grid{make_row<kClass, kOps>(std::make_index_sequence<kDatatypeSlots>{})...};
}

template <Class kClass>
constexpr Grid kGrid = make_grid<kClass>(std::make_index_sequence<kOpSlots>{});

constexpr std::array<const Grid*, kClassCount> kTable = {
    &kGrid<Class::kBase>, &kGrid<Class::kFetch>, &kGrid<Class::kCompare>};

// What the table knows about each datatype slot.
struct TypeInfo {
  size_t size = 0;  // 0: no element type in this slot
  Method method = Method::kLocked;
};

template <size_t kDatatype>
constexpr TypeInfo make_type_info() {
  using T = typename ElementOf<static_cast<fi_datatype>(kDatatype)>::type;
  if constexpr (kIsElement<T>) {
    static_assert(sizeof(T) <= kMaxLockedElementSize, "element wider than the lock stripes");
    return TypeInfo{sizeof(T), method_of<T>()};
  } else {
    return TypeInfo{};
  }
}

template <size_t... kDatatypes>
constexpr std::array<TypeInfo, kDatatypeSlots> make_type_infos(std::index_sequence<kDatatypes...>) {
  return {make_type_info<kDatatypes>()...};
}

constexpr auto kTypeInfo = make_type_infos(std::make_index_sequence<kDatatypeSlots>{});

// Complex types are pairs of their real type; the wire and the man page
// assume that layout.
static_assert(sizeof(std::complex<float>) == 2 * sizeof(float));
static_assert(sizeof(std::complex<double>) == 2 * sizeof(double));
static_assert(sizeof(std::complex<long double>) == 2 * sizeof(long double));

// Enum values come from the wire: compare them as integers before indexing.
bool in_table(fi_op op, fi_datatype datatype, Class op_class) {
  const auto op_index = static_cast<long long>(op);
  const auto datatype_index = static_cast<long long>(datatype);
  const auto class_index = static_cast<unsigned>(op_class);
  return op_index >= 0 && op_index < static_cast<long long>(kOpSlots) && datatype_index >= 0 &&
         datatype_index < static_cast<long long>(kDatatypeSlots) && class_index < kClassCount;
}

const TypeInfo* type_info(fi_datatype datatype) {
  const auto index = static_cast<long long>(datatype);
  if (index < 0 || index >= static_cast<long long>(kDatatypeSlots)) return nullptr;
  return &kTypeInfo[static_cast<size_t>(index)];
}

}  // namespace
}  // namespace detail

bool to_op(uint64_t raw, fi_op* out) noexcept {
  if (raw >= kOpSlots) return false;
  *out = static_cast<fi_op>(raw);
  return true;
}

bool to_datatype(uint64_t raw, fi_datatype* out) noexcept {
  if (raw >= kDatatypeSlots) return false;
  *out = static_cast<fi_datatype>(raw);
  return true;
}

AtomicFn find(fi_op op, fi_datatype datatype, Class op_class) noexcept {
  if (!detail::in_table(op, datatype, op_class)) return nullptr;
  const detail::Grid& grid = *detail::kTable[static_cast<size_t>(op_class)];
  return grid[static_cast<size_t>(op)][static_cast<size_t>(datatype)];
}

size_t datatype_size(fi_datatype datatype) noexcept {
  const detail::TypeInfo* info = detail::type_info(datatype);
  return info ? info->size : 0;
}

size_t required_alignment(fi_datatype datatype) noexcept {
  const size_t size = datatype_size(datatype);
  return size < detail::kStripeGranule ? size : detail::kStripeGranule;
}

bool atomicity_method(fi_datatype datatype, Method* method_out) noexcept {
  const detail::TypeInfo* info = detail::type_info(datatype);
  if (!info || info->size == 0) return false;
  if (method_out) *method_out = info->method;
  return true;
}

const char* method_name(Method method) noexcept {
  switch (method) {
    case Method::kNative:
      return "native";
    case Method::kWideCas:
      return "wide-cas";
    case Method::kLocked:
      return "locked";
  }
  return "unknown";
}

int query(fi_datatype datatype, fi_op op, Class op_class, size_t* size_out) noexcept {
  if (!detail::in_table(op, datatype, op_class)) return -FI_EINVAL;
  if (!find(op, datatype, op_class)) return -FI_EOPNOTSUPP;
  if (size_out) *size_out = datatype_size(datatype);
  return 0;
}

int apply(fi_op op, fi_datatype datatype, Class op_class, void* target, const void* operand,
          const void* compare, void* result, size_t count) noexcept {
  if (!detail::in_table(op, datatype, op_class)) return -FI_EINVAL;
  const AtomicFn kernel = find(op, datatype, op_class);
  if (!kernel) return -FI_EOPNOTSUPP;
  const size_t size = datatype_size(datatype);
  if (count == 0 || count > SIZE_MAX / size) return -FI_EINVAL;
  if (!target || reinterpret_cast<uintptr_t>(target) % required_alignment(datatype) != 0) {
    return -FI_EINVAL;
  }
  if (op != FI_ATOMIC_READ && !operand) return -FI_EINVAL;
  if (op_class == Class::kCompare && !compare) return -FI_EINVAL;
  if (op_class != Class::kBase && !result) return -FI_EINVAL;
  kernel(target, operand, compare, result, count);
  return 0;
}

}  // namespace ofi_dpdk::atomic
