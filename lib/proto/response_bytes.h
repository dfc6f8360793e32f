// response_bytes.h: the bytes a response returns when it is not sent from
// the region (fetched values; a read's bytes only when they may not be lent,
// Response::lent_bytes).  The target fills a buffer the engine lends it
// (Engine::response_bytes) and the response adopts that buffer as its copy
// to send from: none between the request handler and the wire, and no
// zero-filling first.  Tests and small
// answers use it like a byte vector.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <utility>

namespace ofi_dpdk::proto {

class ResponseBytes {
 public:
  ResponseBytes() = default;
  ResponseBytes(std::unique_ptr<uint8_t[]> buffer, size_t capacity, size_t size)
      : buffer_(std::move(buffer)), capacity_(capacity), size_(size) {}

  uint8_t* data() { return buffer_.get(); }
  const uint8_t* data() const { return buffer_.get(); }
  size_t size() const { return size_; }
  size_t capacity() const { return capacity_; }
  bool empty() const { return size_ == 0; }
  uint8_t& operator[](size_t i) { return buffer_[i]; }

  // New bytes are not zeroed: callers write what they size.
  void resize(size_t size) {
    if (size > capacity_) {
      std::unique_ptr<uint8_t[]> grown(new uint8_t[size]);
      if (size_ != 0) std::memcpy(grown.get(), buffer_.get(), size_);
      buffer_ = std::move(grown);
      capacity_ = size;
    }
    size_ = size;
  }
  void assign(const uint8_t* first, const uint8_t* last) {
    resize(static_cast<size_t>(last - first));
    if (size_ != 0) std::memcpy(buffer_.get(), first, size_);
  }
  void assign(size_t size, uint8_t value) {
    resize(size);
    std::fill(buffer_.get(), buffer_.get() + size, value);
  }
  void push_back(uint8_t value) {
    if (size_ == capacity_) {
      const size_t size = size_;
      resize(std::max<size_t>(2 * capacity_, 16));
      size_ = size;
    }
    buffer_[size_++] = value;
  }
  void clear() { size_ = 0; }

  // Hands the buffer over (to the response's message); empty afterwards.
  std::unique_ptr<uint8_t[]> release(size_t* capacity) {
    *capacity = capacity_;
    capacity_ = size_ = 0;
    return std::move(buffer_);
  }

 private:
  std::unique_ptr<uint8_t[]> buffer_;
  size_t capacity_ = 0;
  size_t size_ = 0;
};

}  // namespace ofi_dpdk::proto
