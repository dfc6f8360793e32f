// dpdk_op_flags.h: the provider's own bits in an operation's flags.
#pragma once

#include <rdma/fabric.h>

#include <cstdint>

namespace ofi_dpdk::ofi {

// Private bits in an operation's flags (above every FI_* op flag):
// fi_inject and friends make no completion at all, and an operation a
// counter counts may still want no CQ entry.
inline constexpr uint64_t kNoCompletion = 1ull << 63;
inline constexpr uint64_t kNoCqEntry = 1ull << 62;
// A connection-management message of an FI_EP_MSG endpoint (dpdk_cm.cc):
// its completion goes to the endpoint's connection state, not to a CQ.
inline constexpr uint64_t kControlSend = 1ull << 61;
inline constexpr uint64_t kPrivateOpFlags = kNoCompletion | kNoCqEntry | kControlSend;
inline bool wants_completion(bool selective, uint64_t flags) {
  return !(flags & kNoCompletion) && (!selective || (flags & FI_COMPLETION));
}

}  // namespace ofi_dpdk::ofi
