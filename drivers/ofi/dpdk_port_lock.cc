// dpdk_port_lock.cc: PortLock's slow path (see dpdk_port_lock.h).
#include "drivers/ofi/dpdk_port_lock.h"

#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace ofi_dpdk::ofi {
namespace {

long futex(std::atomic<uint32_t>* word, int op, uint32_t value) {
  static_assert(sizeof(std::atomic<uint32_t>) == sizeof(uint32_t));
  return syscall(SYS_futex, reinterpret_cast<uint32_t*>(word), op, value, nullptr, nullptr, 0);
}

}  // namespace

void PortLock::lock_contended(uint32_t seen) {
  // A short spin first: most holders are a progress pass of a few
  // microseconds on the other core.
  for (int spin = 0; spin < 64 && seen != kFree; ++spin) {
#if defined(__x86_64__)
    _mm_pause();
#endif
    seen = state_.load(std::memory_order_relaxed);
    if (seen == kFree && try_lock()) return;
  }
  // Then sleep: announce a sleeper (state 2) and wait while it stays so.
  // Taking it from here leaves state 2: another sleeper may wait, and the
  // extra wake when none does is harmless.
  while (state_.exchange(kTakenWithSleepers, std::memory_order_acquire) != kFree)
    futex(&state_, FUTEX_WAIT_PRIVATE, kTakenWithSleepers);
}

void PortLock::wake_one() {
  futex(&state_, FUTEX_WAKE_PRIVATE, 1);
}

}  // namespace ofi_dpdk::ofi
