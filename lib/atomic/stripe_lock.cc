// stripe_lock.cc: the stripes are short spin locks; the sections they guard
// are one element's read-compute-write, a few dozen instructions, so a
// holder is almost never descheduled, and when it is the waiter yields.
#include "lib/atomic/stripe_lock.h"

#include <array>
#include <atomic>
#include <thread>
#include <utility>

namespace ofi_dpdk::atomic::detail {
namespace {

constexpr unsigned kStripeBits = 8;
constexpr size_t kStripeCount = size_t{1} << kStripeBits;
constexpr unsigned kSpinsBeforeYield = 128;

// One cache line per stripe, so unrelated elements do not contend for lines.
struct alignas(64) Stripe {
  std::atomic<bool> held{false};
};

std::array<Stripe, kStripeCount> g_stripes;

uint32_t stripe_of(uintptr_t address) {
  // Fibonacci hashing spreads neighbouring granules over the table.
  const uint64_t granule = address / kStripeGranule;
  return static_cast<uint32_t>((granule * 0x9E3779B97F4A7C15ull) >> (64 - kStripeBits));
}

void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#endif
}

void lock(uint32_t index) {
  std::atomic<bool>& held = g_stripes[index].held;
  unsigned spins = 0;
  while (held.exchange(true, std::memory_order_acquire)) {
    while (held.load(std::memory_order_relaxed)) {
      if (++spins < kSpinsBeforeYield) {
        cpu_relax();
      } else {
        std::this_thread::yield();
      }
    }
  }
}

void unlock(uint32_t index) {
  g_stripes[index].held.store(false, std::memory_order_release);
}

}  // namespace

StripeGuard::StripeGuard(const void* address, size_t size) noexcept {
  const auto begin = reinterpret_cast<uintptr_t>(address);
  first_ = stripe_of(begin);
  second_ = stripe_of(begin + size - 1);
  if (second_ < first_) std::swap(first_, second_);
  lock(first_);
  if (second_ != first_) lock(second_);
}

StripeGuard::~StripeGuard() {
  if (second_ != first_) unlock(second_);
  unlock(first_);
}

}  // namespace ofi_dpdk::atomic::detail
