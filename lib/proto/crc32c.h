// crc32c.h: CRC-32C (Castagnoli), the frame checksum (frame_codec.cc).
// Chosen at run time by what the CPU has: folding with carry-less
// multiplies over 512-bit registers (AVX-512 VPCLMULQDQ) or 128-bit ones
// (PCLMULQDQ), else the CRC32 instruction (SSE4.2), else a table.  All
// give the same value.
#pragma once

#include <cstddef>
#include <cstdint>

namespace ofi_dpdk::proto {

// CRC-32C of `length` bytes, continuing from `crc` (no inversion in or out:
// callers start from 0xFFFFFFFF and invert the result, as the standard CRC
// does).
uint32_t crc32c(uint32_t crc, const uint8_t* data, size_t length);
// The same by table lookup, on any CPU (tests compare the paths).
uint32_t crc32c_portable(uint32_t crc, const uint8_t* data, size_t length);
// The same with the CRC32 instruction only, or the portable result without it.
uint32_t crc32c_instruction(uint32_t crc, const uint8_t* data, size_t length);
// The same with 128-bit folding where the CPU has PCLMULQDQ (else as above),
// so tests reach that path on CPUs that would take the 512-bit one.
uint32_t crc32c_fold128_path(uint32_t crc, const uint8_t* data, size_t length);
// crc32c(crc, data, length) with the 8 bytes at `hole` (hole + 8 <= length)
// counted as zero: a frame's checksum over its own integrity field, in one
// call per frame.
uint32_t crc32c_zero8_at(uint32_t crc, const uint8_t* data, size_t length, size_t hole);
// Copies `length` bytes from `data` to `out` (not overlapping) and returns
// crc32c(crc, out, length): in one pass over the bytes where the CPU folds
// 512 bits at a time, else a memcpy and then the CRC of the copy.
uint32_t crc32c_copy(uint32_t crc, uint8_t* out, const uint8_t* data, size_t length);
// Which path crc32c() takes on this CPU: "vpclmulqdq", "pclmulqdq",
// "sse4.2" or "table".
const char* crc32c_path();

}  // namespace ofi_dpdk::proto
