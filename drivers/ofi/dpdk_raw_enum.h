// dpdk_raw_enum.h: reading an enum field that an application filled in.
// A C program may store any int in an fi_* enum field (a bad-input test puts
// 1000 in fi_cq_attr::format).  In C++, loading an enum object whose value
// lies outside the enum's range is undefined behaviour (UBSan: "not a valid
// value for type"), so the provider checks such fields through their
// underlying integer before it uses them as enums.
#pragma once

#include <cstring>
#include <type_traits>

namespace ofi_dpdk::ofi {

template <typename E>
std::underlying_type_t<E> raw_value(const E& field) {
  static_assert(std::is_enum_v<E>);
  std::underlying_type_t<E> raw;
  std::memcpy(&raw, &field, sizeof(raw));
  return raw;
}

}  // namespace ofi_dpdk::ofi
