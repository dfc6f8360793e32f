// frame_tag.h: the keyed tag of authenticated frames.  With a job key
// (FI_DPDK_AUTH_KEY; libfabric's 4-byte auth_key is a network key, not
// this) every frame carries, in place of its CRC, 64 bits that only a holder of the key
// can compute over what the CRC covers (frame_codec.h).  Nobody without
// the key can then forge, reset or redirect anything: a frame it made or
// changed is dropped at the decoder.
//
// Hash, then a pseudo-random function: a polynomial hash over GF(2^128)
// keyed by H (x^128 + x^7 + x^2 + x + 1, bits in their natural order,
// carry-less multiplies where the CPU has them, four blocks a step), and
// SipHash-2-4 of that hash and the length under a second key.  A forgery
// must make two covers of one length hash alike (probability at most
// blocks / 2^128 for any pair) or guess the 64-bit tag.  Costs a pass over
// the frame at a fraction of a cycle per byte.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>

namespace ofi_dpdk::proto {

// Job keys shorter than this are refused: 128 bits is what no one guesses.
inline constexpr size_t kMinJobKeyBytes = 16;
inline constexpr size_t kMaxJobKeyBytes = 64;

struct Block128 {
  uint64_t lo = 0, hi = 0;  // coefficients of x^0..x^63 and x^64..x^127
};

class FrameKey {
 public:
  // The tag keys a job key of kMinJobKeyBytes to kMaxJobKeyBytes derives
  // (any two keys that differ derive unrelated ones); nothing otherwise.
  static std::optional<FrameKey> derive(std::span<const uint8_t> job_key);

  // A tag over several spans in order, as over their concatenation.
  class Tagger {
   public:
    explicit Tagger(const FrameKey& key) : key_(key) {}
    void add(const uint8_t* data, size_t length);
    void add_zeros(size_t length);
    uint64_t finish();

   private:
    void absorb_blocks(const uint8_t* data, size_t blocks);
    const FrameKey& key_;
    Block128 acc_;
    uint8_t partial_[16] = {};
    size_t partial_length_ = 0;
    uint64_t total_ = 0;
  };

  uint64_t tag(const uint8_t* data, size_t length) const {
    Tagger t(*this);
    t.add(data, length);
    return t.finish();
  }

  // The same with the portable multiply only, on any CPU (tests compare).
  uint64_t tag_portable(const uint8_t* data, size_t length) const;

 private:
  FrameKey() = default;
  static constexpr int kPowers = 32;
  Block128 h_[kPowers];    // H, H^2, ... H^32
  uint64_t prf_key_[2]{};  // SipHash key of the last step
  bool portable_only_ = false;
};

// Which multiply tags take on this CPU: "vpclmulqdq" (32 blocks a step in
// 512-bit registers), "pclmulqdq" or "portable".
const char* frame_tag_path();

// Constant-time comparison of two tags: the time a wrong tag takes to be
// refused says nothing of how much of it was right.
inline bool tags_equal(uint64_t a, uint64_t b) {
  volatile uint64_t difference = a ^ b;
  return difference == 0;
}

}  // namespace ofi_dpdk::proto
