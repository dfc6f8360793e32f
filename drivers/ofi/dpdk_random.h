// dpdk_random.h: random bytes from the kernel (getrandom(2)), for what a
// peer must not guess: endpoint sessions, the transport's token secret and
// provider-chosen memory keys.
#pragma once

#include <sys/random.h>

#include <cerrno>
#include <cstddef>
#include <cstdint>

namespace ofi_dpdk::ofi {

// Fills `out` with `length` bytes; false when the kernel gives none
// (getrandom missing or failing for another reason than a signal).
inline bool kernel_random(void* out, size_t length) {
  auto* bytes = static_cast<uint8_t*>(out);
  while (length > 0) {
    const ssize_t got = getrandom(bytes, length, 0);
    if (got < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    bytes += got;
    length -= static_cast<size_t>(got);
  }
  return true;
}

}  // namespace ofi_dpdk::ofi
