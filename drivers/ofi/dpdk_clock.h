// dpdk_clock.h: the clock the transport's timers run on.
#pragma once

#include <cstdint>

namespace ofi_dpdk::ofi {

// Nanoseconds of a monotonic clock (dpdk_msg.cc).
uint64_t now_ns();

}  // namespace ofi_dpdk::ofi
