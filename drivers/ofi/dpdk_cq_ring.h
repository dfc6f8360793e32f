// dpdk_cq_ring.h: a CQ's completions, in a ring allocated when the CQ opens
// (attr.size entries, up to kMaxPreallocated), so writing and reading
// completions allocates nothing.  Entries a CQ does not count against its
// size (multi-recv parts, peeks, errors) may overfill it: the ring then
// doubles, and keeps the larger size.
#pragma once

#include <cstddef>
#include <utility>
#include <vector>

namespace ofi_dpdk::ofi {

template <typename T>
class Ring {
 public:
  static constexpr size_t kMaxPreallocated = 4096;

  void reserve(size_t capacity) {
    size_t size = 16;
    while (size < capacity && size < kMaxPreallocated) size *= 2;
    if (size > slots_.size()) grow(size);
  }
  bool empty() const { return count_ == 0; }
  size_t size() const { return count_; }
  const T& front() const { return slots_[head_]; }
  void push_back(const T& value) {
    if (count_ == slots_.size()) grow(slots_.empty() ? 16 : 2 * slots_.size());
    slots_[(head_ + count_) & (slots_.size() - 1)] = value;
    ++count_;
  }
  void pop_front() {
    head_ = (head_ + 1) & (slots_.size() - 1);
    --count_;
  }

 private:
  // Sizes are powers of two; the entries keep their order, from slot 0.
  void grow(size_t size) {
    std::vector<T> bigger(size);
    for (size_t i = 0; i < count_; ++i) bigger[i] = slots_[(head_ + i) & (slots_.size() - 1)];
    slots_ = std::move(bigger);
    head_ = 0;
  }

  std::vector<T> slots_;
  size_t head_ = 0;
  size_t count_ = 0;
};

}  // namespace ofi_dpdk::ofi
