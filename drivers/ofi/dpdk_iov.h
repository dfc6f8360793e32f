// dpdk_iov.h: the check the data calls make of the caller's buffers
// before they read or write one of them (receives of the untagged calls
// take an entry with no address as holding no bytes: Endpoint::post_recv).
#pragma once

#include <rdma/fi_atomic.h>
#include <sys/uio.h>

#include <cstddef>

#include "drivers/ofi/dpdk_limits.h"

namespace ofi_dpdk::ofi {

// Says why a list is unusable, through libfabric's log (dpdk_msg.cc; off
// the hot path).  A caller that gets -FI_EINVAL without logging on would
// not know why: Open MPI 4.1's MTL posts MPI_BOTTOM itself, address 0, for
// a datatype of absolute addresses, and waits on its request forever.
[[gnu::cold, gnu::noinline]] void report_unusable(const iovec* iov, size_t count, const char* call);
[[gnu::cold, gnu::noinline]] void report_unusable(const fi_ioc* ioc, size_t count,
                                                  const char* call);

// At most kIovLimit entries, and each entry that holds bytes has an
// address: a NULL base with a length would be read or written at address
// 0 (an empty entry may have none: fi_send of 0 bytes with buf NULL).
// (Each refusal returns false here, not from the reporter: the compiler
// then knows a usable list's count is at most kIovLimit.)
inline bool usable_iov(const iovec* iov, size_t count, const char* call) {
  if (count == 1 && iov != nullptr) [[likely]] {  // (fi_send, fi_recv, fi_inject: one buffer)
    if (iov->iov_base != nullptr || iov->iov_len == 0) [[likely]]
      return true;
  } else if (count <= kIovLimit && (iov != nullptr || count == 0)) {
    size_t i = 0;
    while (i < count && (iov[i].iov_base != nullptr || iov[i].iov_len == 0)) ++i;
    if (i == count) return true;
  }
  report_unusable(iov, count, call);
  return false;
}

// The same for an atomic's operands, compare values or results (the count
// of entries is checked by the caller).
inline bool usable_ioc(const fi_ioc* ioc, size_t count, const char* call) {
  for (size_t i = 0; ioc != nullptr && i < count; ++i) {
    if (ioc[i].addr == nullptr && ioc[i].count != 0) [[unlikely]] {
      report_unusable(ioc, count, call);
      return false;
    }
  }
  return true;
}

}  // namespace ofi_dpdk::ofi
