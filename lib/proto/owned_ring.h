// owned_ring.h: a queue of owned records, in order, as a ring that grows by
// doubling: a connection's messages not fully acknowledged
// (Connection::pending).  Every message is pushed at the back, looked at by
// index while it is cut into segments, and popped at the front when
// acknowledged; std::deque did that with its map of blocks in some 60-70
// instructions a message, where a ring's ends are an index and a mask.
#pragma once

#include <cstddef>
#include <memory>
#include <utility>
#include <vector>

namespace ofi_dpdk::proto {

template <typename T>
class OwnedRing {
 public:
  using Item = std::unique_ptr<T>;

  bool empty() const { return count_ == 0; }
  size_t size() const { return count_; }
  // (front, back and [] only on a ring that has the item.)
  Item& front() { return slots_[head_]; }
  const Item& front() const { return slots_[head_]; }
  Item& back() { return slots_[(head_ + count_ - 1) & mask()]; }
  const Item& back() const { return slots_[(head_ + count_ - 1) & mask()]; }
  Item& operator[](size_t index) { return slots_[(head_ + index) & mask()]; }
  const Item& operator[](size_t index) const { return slots_[(head_ + index) & mask()]; }

  void push_back(Item item) {
    if (count_ == slots_.size()) grow();
    slots_[(head_ + count_) & mask()] = std::move(item);
    ++count_;
  }
  void pop_front() {
    slots_[head_].reset();
    head_ = (head_ + 1) & mask();
    --count_;
  }
  // Puts `item` at `index` (at most size()), the items from there on one
  // place further back.
  void insert(size_t index, Item item) {
    push_back(std::move(item));
    for (size_t at = count_ - 1; at > index; --at) std::swap((*this)[at], (*this)[at - 1]);
  }
  void clear() {
    while (!empty()) pop_front();
    head_ = 0;
  }

  // Front to back.
  class Iterator {
   public:
    Iterator(OwnedRing* ring, size_t index) : ring_(ring), index_(index) {}
    Item& operator*() const { return (*ring_)[index_]; }
    Iterator& operator++() {
      ++index_;
      return *this;
    }
    bool operator!=(const Iterator& other) const { return index_ != other.index_; }

   private:
    OwnedRing* ring_;
    size_t index_;
  };
  Iterator begin() { return {this, 0}; }
  Iterator end() { return {this, count_}; }

 private:
  static constexpr size_t kFirstCapacity = 8;
  size_t mask() const { return slots_.size() - 1; }
  void grow() {
    std::vector<Item> bigger(slots_.empty() ? kFirstCapacity : 2 * slots_.size());
    for (size_t i = 0; i < count_; ++i) bigger[i] = std::move((*this)[i]);
    slots_ = std::move(bigger);
    head_ = 0;
  }

  std::vector<Item> slots_;  // a power of two of them, or none
  size_t head_ = 0;
  size_t count_ = 0;
};

}  // namespace ofi_dpdk::proto
