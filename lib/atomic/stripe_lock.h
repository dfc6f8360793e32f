// stripe_lock.h (internal): the lock table behind Method::kLocked, for element
// types the CPU cannot update with one lock-free instruction (long double
// complex, 32 bytes; 16-byte types where no 16-byte CAS is available).
//
// Memory is divided into 16-byte granules and each granule maps to one of a
// fixed set of stripes; an element holds the stripes of every granule it
// covers, so two requests whose elements overlap (long double complex needs
// only 16-byte alignment, so elements may overlap by half) always share a
// stripe.  Stripes are taken in ascending order, so two elements never
// deadlock.  The table is one per process, per copy of this library.
#pragma once

#include <cstddef>
#include <cstdint>

namespace ofi_dpdk::atomic::detail {

inline constexpr size_t kStripeGranule = 16;
// Elements span at most two granules: 32 bytes at most, aligned to 16.
inline constexpr size_t kMaxLockedElementSize = 2 * kStripeGranule;

class StripeGuard {
 public:
  // Holds the stripes covering [address, address + size) until destroyed.
  StripeGuard(const void* address, size_t size) noexcept;
  ~StripeGuard();
  StripeGuard(const StripeGuard&) = delete;
  StripeGuard& operator=(const StripeGuard&) = delete;

 private:
  uint32_t first_;
  uint32_t second_;  // == first_ when one stripe covers the element
};

}  // namespace ofi_dpdk::atomic::detail
