// datagram_share.h: each sender's share of a datagram endpoint's
// unexpected budget (datagram.cc).  Anyone can send datagrams from any
// address, so without shares one sender (one forged address) could fill
// the whole budget with datagrams no receive wants, and every other
// sender's would be dropped.  Senders are counted by link address (the
// MAC, or the peer id of an IP address: the queue in a frame's header is
// the sender's to choose, so it does not make another sender) in
// kBuckets buckets chosen by a keyed hash (token.h, the endpoint's secret):
// no one can pick addresses that land in another sender's bucket.  Fixed
// memory, no allocation per datagram.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <utility>

#include "lib/proto/token.h"

namespace ofi_dpdk::proto {

class DatagramShares {
 public:
  static constexpr size_t kBuckets = 1024;
  // A bucket holding budget / kShareDivisor or more takes no more once the
  // budget is half in use (datagram.cc).
  static constexpr size_t kShareDivisor = 8;

  // The bytes charged to the bucket of the sender with link address
  // `link` (6 bytes).
  size_t* bucket(const uint64_t secret[2], const uint8_t* link) {
    uint64_t word = 0;
    for (int i = 0; i < 6; ++i) word = word << 8 | link[i];
    return &bytes_[keyed_hash(secret, &word, 1) % kBuckets];
  }

 private:
  std::array<size_t, kBuckets> bytes_{};
};

// What one unexpected datagram holds of its sender's bucket: given back
// when its record is cleared or destroyed, however the datagram ends (a
// receive took it, it was discarded, the endpoint closed).
class ShareMark {
 public:
  ShareMark() = default;
  ShareMark(const ShareMark&) = delete;
  ShareMark& operator=(ShareMark&& other) noexcept {
    clear();
    bucket_ = std::exchange(other.bucket_, nullptr);
    bytes_ = std::exchange(other.bytes_, 0);
    return *this;
  }
  ~ShareMark() { clear(); }
  void set(size_t* bucket, size_t bytes) {
    clear();
    bucket_ = bucket;
    bytes_ = bytes;
    *bucket_ += bytes;
  }
  void clear() {
    if (bucket_ != nullptr) *bucket_ -= bytes_;
    bucket_ = nullptr;
    bytes_ = 0;
  }

 private:
  size_t* bucket_ = nullptr;
  size_t bytes_ = 0;
};

}  // namespace ofi_dpdk::proto
