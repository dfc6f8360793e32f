// seq.h: comparisons of 32-bit sequence numbers that wrap.
#pragma once

#include <cstdint>

namespace ofi_dpdk::proto {

inline bool seq_lt(uint32_t a, uint32_t b) {
  return static_cast<int32_t>(a - b) < 0;
}
inline bool seq_le(uint32_t a, uint32_t b) {
  return static_cast<int32_t>(a - b) <= 0;
}
inline bool seq_gt(uint32_t a, uint32_t b) {
  return seq_lt(b, a);
}
inline bool seq_ge(uint32_t a, uint32_t b) {
  return seq_le(b, a);
}

// Connection numbers (wire::FrameHeader::conn) wrap at 16 bits.
inline bool conn_newer(uint16_t a, uint16_t b) {
  return static_cast<int16_t>(a - b) > 0;
}

}  // namespace ofi_dpdk::proto
