// dpdk_port_lock.h: the port lock's type, and the lanes' locks the port lock is made of.
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

#include <array>
#include <atomic>
#include <cstdint>

namespace ofi_dpdk::ofi {

// The lane (PortContext) of an endpoint, CQ or counter that has none of its
// own: its calls take the whole port lock.
inline constexpr uint16_t kWholePort = 0xFFFF;

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

// The lanes of a port (see PortContext): a lock per lane, and "the port
// lock" is all of them, taken in lane order.  A port of one lane (every
// port but a net_ring steered by sender) has one lock, as before lanes.
// Each lock has a cache line of its own: two threads on two lanes must not
// pass one line back and forth.
inline constexpr uint16_t kMaxLanes = 16;

class LaneLocks {
 public:
  LaneLocks() = default;
  LaneLocks(const LaneLocks&) = delete;
  LaneLocks& operator=(const LaneLocks&) = delete;

  void lock() {
    for (uint16_t i = 0; i < count_; ++i) locks_[i].lock.lock();
  }
  bool try_lock() {
    for (uint16_t i = 0; i < count_; ++i) {
      if (locks_[i].lock.try_lock()) continue;
      while (i-- > 0) locks_[i].lock.unlock();
      return false;
    }
    return true;
  }
  void unlock() {
    for (uint16_t i = count_; i-- > 0;) locks_[i].lock.unlock();
  }
  PortLock& lane(uint16_t lane) { return locks_[lane].lock; }
  uint16_t count() const { return count_; }
  // Once, when the port opens, before any other thread can see it.
  void set_count(uint16_t lanes) { count_ = lanes < 1 ? 1 : lanes > kMaxLanes ? kMaxLanes : lanes; }

 private:
  struct alignas(64) Slot {
    PortLock lock;
  };
  std::array<Slot, kMaxLanes> locks_;
  uint16_t count_ = 1;
};

struct PortContext;

// For a file that takes a port's lock, or makes a pass for an application
// waiting, without looking inside the port (dpdk_lanes.cc): the port's
// whole lock, and PortContext::progress_if_manual with that lock held.
LaneLocks& whole_lock(PortContext& port);
uint32_t progress_if_manual(PortContext& port);

}  // namespace ofi_dpdk::ofi
