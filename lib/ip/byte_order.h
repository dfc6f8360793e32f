// byte_order.h: network-order (big-endian) fields read from and written
// to frame bytes, for the headers lib/ip builds and parses.  Byte by byte:
// the fields are not aligned, and the compiler makes one load or store
// and a bswap of it.
#pragma once

#include <cstdint>

namespace ofi_dpdk::ip {

inline void put16(uint8_t* out, uint16_t value) {
  out[0] = static_cast<uint8_t>(value >> 8);
  out[1] = static_cast<uint8_t>(value);
}

inline void put32(uint8_t* out, uint32_t value) {
  put16(out, static_cast<uint16_t>(value >> 16));
  put16(out + 2, static_cast<uint16_t>(value));
}

inline uint16_t get16(const uint8_t* in) {
  return static_cast<uint16_t>(in[0] << 8 | in[1]);
}

inline uint32_t get32(const uint8_t* in) {
  return uint32_t{get16(in)} << 16 | get16(in + 2);
}

}  // namespace ofi_dpdk::ip
