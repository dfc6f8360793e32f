// test_port_lock.cc: PortLock (drivers/ofi/dpdk_port_lock.h), the port's
// futex mutex: mutual exclusion between threads that take it millions of
// times, including through the sleeping path; try_lock fails while it is
// held and succeeds once it is given back; a sleeper wakes when the holder
// lets go.  Real threads, no EAL.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <thread>
#include <vector>

#include "drivers/ofi/dpdk_port_lock.h"

namespace ofi_dpdk::ofi {
namespace {

TEST(PortLock, ThreadsThatTakeItNeverOverlap) {
  // Expect: four threads (more than this machine's cores, so holders lose
  // their CPU while others wait and sleep) each add 1 to a plain counter
  // 200,000 times under the lock, and no one finds another inside: the
  // count is exact and the inside flag never seen set.
  PortLock lock;
  uint64_t count = 0;
  std::atomic<bool> inside{false};
  std::atomic<int> overlaps{0};
  constexpr int kThreads = 4, kRounds = 200'000;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < kRounds; ++i) {
        std::lock_guard guard(lock);
        if (inside.exchange(true, std::memory_order_relaxed)) overlaps.fetch_add(1);
        ++count;
        inside.store(false, std::memory_order_relaxed);
      }
    });
  }
  for (auto& thread : threads) thread.join();
  EXPECT_EQ(count, uint64_t{kThreads} * kRounds);
  EXPECT_EQ(overlaps.load(), 0);
}

TEST(PortLock, TryLockFailsWhileHeldAndASleeperWakesWhenItIsGivenBack) {
  // Expect: try_lock on a held lock fails, from this thread and another;
  // a thread that blocks in lock() (past its spin, asleep) gets the lock
  // after the holder gives it back 100 ms later, not before; then try_lock
  // succeeds once that thread is done.
  PortLock lock;
  lock.lock();
  EXPECT_FALSE(lock.try_lock());
  bool other_try = true;
  std::thread([&] { other_try = lock.try_lock(); }).join();
  EXPECT_FALSE(other_try);
  std::atomic<bool> taken{false};
  std::thread sleeper([&] {
    lock.lock();
    taken = true;
    lock.unlock();
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  EXPECT_FALSE(taken.load()) << "taken while held";
  lock.unlock();
  sleeper.join();
  EXPECT_TRUE(taken.load());
  EXPECT_TRUE(lock.try_lock());
  lock.unlock();
}

}  // namespace
}  // namespace ofi_dpdk::ofi
