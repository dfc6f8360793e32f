// dpdk_engine_errno.h: an engine call run from an fi_* entry point, and its
// result as an fi_errno.
#pragma once

#include <rdma/fi_errno.h>
#include <sys/types.h>

#include <cerrno>
#include <new>

namespace ofi_dpdk::ofi {

// What lib/proto's calls return (0 or a negative errno: -EAGAIN when the
// send or receive queue is full, -EMSGSIZE above the message size, -ENOENT
// for nothing to cancel or claim, -EINVAL for a bad iov) as an fi_errno.
// Runs an engine call from an fi_* entry point.  The engine answers a
// failed allocation of a buffer itself (-ENOMEM, an error response); one
// of a record or a queue node throws std::bad_alloc, which stops here: no
// exception crosses into the application's C code.
template <typename Call>
int engine_call(Call&& call) {
  try {
    return call();
  } catch (const std::bad_alloc&) {
    return -ENOMEM;
  }
}

inline ssize_t engine_errno(int ret) {
  switch (ret) {
    case 0:
      return 0;
    case -EAGAIN:
      return -FI_EAGAIN;
    case -ENOMEM:
      return -FI_ENOMEM;
    case -EMSGSIZE:
      return -FI_EMSGSIZE;
    case -ENOENT:
      return -FI_ENOENT;
    default:
      return -FI_EINVAL;
  }
}

}  // namespace ofi_dpdk::ofi
