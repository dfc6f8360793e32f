// dpdk_port_lock.h: the port lock's type.
//
// Every fi_* call and progress pass takes the port lock, six times per
// small message in a polling loop.  Uncontended, glibc's pthread mutex
// costs about 30 instructions to take and 25 to give back (its type and
// owner checks); this lock costs one compare-exchange and one exchange.
// A thread that finds it taken sleeps in the kernel (a futex) as with
// std::mutex, so a holder that lost its CPU is not spun against (two
// cores, the safety net and the application's threads).
//
// The states: 0 free, 1 taken, 2 taken with possible sleepers.  Whoever
// gives back a lock in state 2 wakes one sleeper, which takes it in state
// 2 (there may be more).
#pragma once

#include <atomic>
#include <cstdint>

namespace ofi_dpdk::ofi {

class PortLock {
 public:
  PortLock() = default;
  PortLock(const PortLock&) = delete;
  PortLock& operator=(const PortLock&) = delete;

  void lock() {
    uint32_t seen = kFree;
    if (state_.compare_exchange_strong(seen, kTaken, std::memory_order_acquire,
                                       std::memory_order_relaxed)) [[likely]]
      return;
    lock_contended(seen);
  }

  bool try_lock() {
    uint32_t seen = kFree;
    return state_.compare_exchange_strong(seen, kTaken, std::memory_order_acquire,
                                          std::memory_order_relaxed);
  }

  void unlock() {
    if (state_.exchange(kFree, std::memory_order_release) == kTakenWithSleepers) [[unlikely]]
      wake_one();
  }

 private:
  static constexpr uint32_t kFree = 0, kTaken = 1, kTakenWithSleepers = 2;
  void lock_contended(uint32_t seen);  // dpdk_port_lock.cc
  void wake_one();
  std::atomic<uint32_t> state_{kFree};
};

}  // namespace ofi_dpdk::ofi
