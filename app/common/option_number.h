// option_number.h: the number an option's value names, or nothing.  The
// apps' option parsers turn "nothing" into their own usage error (exit
// status 2) instead of an uncaught exception and a backtrace.
#pragma once

#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <optional>
#include <string>
#include <type_traits>

namespace ofi_dpdk::app {

// The whole of `text` as a T: digits only for integers (no sign for an
// unsigned T, nothing out of T's range), a finite decimal for a double.
template <typename T>
std::optional<T> option_number(const std::string& text) {
  if (text.empty()) return std::nullopt;
  if constexpr (std::is_floating_point_v<T>) {
    char* end = nullptr;
    errno = 0;
    const double value = std::strtod(text.c_str(), &end);
    if (errno != 0 || end != text.c_str() + text.size() || !std::isfinite(value))
      return std::nullopt;
    return static_cast<T>(value);
  } else {
    T value{};
    const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (error != std::errc() || end != text.data() + text.size()) return std::nullopt;
    return value;
  }
}

}  // namespace ofi_dpdk::app
