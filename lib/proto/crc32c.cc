// crc32c.cc: see crc32c.h.
//
// The folding path.  A CRC is the remainder of the message polynomial
// (times x^32) modulo P.  Sixteen message bytes loaded little-endian into a
// 128-bit lane are, bit j, the coefficient of x^(127 - j) of a chunk X; the
// low 64-bit half H holds x^127..x^64 and the high half L x^63..x^0, so
// X = H x^64 + L.  Moving X forward by D bits, to where a later chunk sits,
// keeps the remainder if X is replaced by anything congruent to X x^D:
//   H (x^(64+D) mod P) + L (x^D mod P).
// A carry-less multiply of a half by a constant whose bit i stands for
// x^(63 - i) yields, read as a lane, that product times x, so the constants
// are x^(64+D-1) mod P and x^(D-1) mod P; folding is two multiplies and an
// XOR into the chunk D bits on.  Four 512-bit accumulators take 256 bytes a
// round (D = 2048); at the end they fold into one lane, and the CRC32
// instruction finishes that lane and the bytes left.  The constants are
// computed here at start-up from P.  The starting CRC is XORed into the
// first four bytes, which is what a CRC register holds.
#include "lib/proto/crc32c.h"

#include <array>
#include <cstring>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace ofi_dpdk::proto {
namespace {

// Reflected polynomial 0x82F63B78: one table step per byte.
constexpr std::array<uint32_t, 256> make_crc_table() {
  std::array<uint32_t, 256> table{};
  for (uint32_t i = 0; i < 256; ++i) {
    uint32_t crc = i;
    for (int bit = 0; bit < 8; ++bit) crc = (crc >> 1) ^ (0x82F63B78u & (0u - (crc & 1u)));
    table[i] = crc;
  }
  return table;
}
constexpr std::array<uint32_t, 256> kCrcTable = make_crc_table();

#if defined(__x86_64__)
// lib/proto is built without DPDK's -march: the instructions are asked for
// per function and used only where the CPU has them.
__attribute__((target("sse4.2"))) uint32_t crc32c_sse42(uint32_t crc, const uint8_t* data,
                                                        size_t length) {
  uint64_t wide = crc;
  for (; length >= 8; length -= 8, data += 8) {
    uint64_t word;
    std::memcpy(&word, data, 8);
    wide = __builtin_ia32_crc32di(wide, word);
  }
  crc = static_cast<uint32_t>(wide);
  // The last bytes one at a time.  (Steps of 4, 2 and 1 bytes, a few
  // instructions fewer a frame and 2 ns faster a call alone, took
  // dpdk-fi-bench's 8-byte message rate between two processes from 2.9 to
  // 1.9 M/s, repeatably and with the same frames sent; why is not known.)
  for (; length > 0; --length, ++data) crc = __builtin_ia32_crc32qi(crc, *data);
  return crc;
}

// crc32c_zero8_at's instruction path: the three pieces in one call, the
// hole as one CRC step of a zero word.
__attribute__((target("sse4.2"))) uint32_t crc32c_sse42_zero8_at(uint32_t crc, const uint8_t* data,
                                                                 size_t length, size_t hole) {
  crc = crc32c_sse42(crc, data, hole);
  crc = static_cast<uint32_t>(__builtin_ia32_crc32di(crc, 0));
  return crc32c_sse42(crc, data + hole + 8, length - hole - 8);
}

// x^n mod P (P = x^32 + 0x1EDC6F41, normal bit order: bit d is x^d), placed
// for the carry-less multiply: bit 63 - d for each x^d.
uint64_t fold_constant(unsigned n) {
  uint32_t rest = 1;  // x^0
  for (unsigned i = 0; i < n; ++i) {
    const bool carry = rest & 0x80000000u;
    rest <<= 1;
    if (carry) rest ^= 0x1EDC6F41u;
  }
  uint64_t placed = 0;
  for (int d = 0; d < 32; ++d)
    if (rest >> d & 1) placed |= uint64_t{1} << (63 - d);
  return placed;
}

struct FoldConstants {
  // Lanes of (x^(64+D-1), x^(D-1)) mod P, for folding by D bits.
  uint64_t by_2048[2], by_1536[2], by_1024[2], by_512[2], by_384[2], by_256[2], by_128[2];
};

FoldConstants make_fold_constants() {
  FoldConstants k{};
  auto set = [](uint64_t* pair, unsigned d) {
    pair[0] = fold_constant(64 + d - 1);
    pair[1] = fold_constant(d - 1);
  };
  set(k.by_2048, 2048);
  set(k.by_1536, 1536);
  set(k.by_1024, 1024);
  set(k.by_512, 512);
  set(k.by_384, 384);
  set(k.by_256, 256);
  set(k.by_128, 128);
  return k;
}

const FoldConstants& fold_constants() {
  static const FoldConstants k = make_fold_constants();
  return k;
}

constexpr size_t kFoldRound = 256;  // bytes per round of four 512-bit lanes
constexpr size_t kFoldMinimum = 2 * kFoldRound;

#define OFI_DPDK_FOLD_TARGET __attribute__((target("avx512f,avx512bw,vpclmulqdq,pclmul,sse4.2")))

OFI_DPDK_FOLD_TARGET inline __m512i fold512(__m512i acc, __m512i by) {
  // Per lane: low half times by[0], high half times by[1].
  const __m512i low = _mm512_clmulepi64_epi128(acc, by, 0x00);
  const __m512i high = _mm512_clmulepi64_epi128(acc, by, 0x11);
  return _mm512_xor_si512(low, high);
}

OFI_DPDK_FOLD_TARGET inline __m128i fold128(__m128i acc, const uint64_t by[2]) {
  const __m128i k = _mm_set_epi64x(static_cast<long long>(by[1]), static_cast<long long>(by[0]));
  return _mm_xor_si128(_mm_clmulepi64_si128(acc, k, 0x00), _mm_clmulepi64_si128(acc, k, 0x11));
}

// (GCC 12 warns about the "undefined" vectors inside the broadcast,
// extract and zero-extend intrinsics: plain sets and stores instead.)
OFI_DPDK_FOLD_TARGET __m512i broadcast(const uint64_t by[2]) {
  const auto lo = static_cast<long long>(by[0]), hi = static_cast<long long>(by[1]);
  return _mm512_set_epi64(hi, lo, hi, lo, hi, lo, hi, lo);
}

// The 64 bytes at `data + at`, stored at `out + at` too when copying
// (`out` is null otherwise).
template <bool kCopy>
OFI_DPDK_FOLD_TARGET inline __m512i load_64(uint8_t* out, const uint8_t* data, size_t at) {
  const __m512i bytes = _mm512_loadu_si512(data + at);
  if constexpr (kCopy) _mm512_storeu_si512(out + at, bytes);
  return bytes;
}

// The folding CRC of `length` bytes; with kCopy it also stores each 64 bytes
// it loads at `out`, the copy and the checksum in one pass over the source
// (the bytes after the last whole round are copied first, then checksummed
// where they landed).
template <bool kCopy>
OFI_DPDK_FOLD_TARGET uint32_t fold512_pass(uint32_t crc, uint8_t* out, const uint8_t* data,
                                           size_t length) {
  if (length < kFoldMinimum) {
    if constexpr (!kCopy) return crc32c_sse42(crc, data, length);
    std::memcpy(out, data, length);
    return crc32c_sse42(crc, out, length);
  }
  const FoldConstants& k = fold_constants();
  const size_t rounds = length / kFoldRound;
  __m512i acc0 = load_64<kCopy>(out, data, 0);
  __m512i acc1 = load_64<kCopy>(out, data, 64);
  __m512i acc2 = load_64<kCopy>(out, data, 128);
  __m512i acc3 = load_64<kCopy>(out, data, 192);
  acc0 = _mm512_xor_si512(acc0, _mm512_set_epi64(0, 0, 0, 0, 0, 0, 0, crc));
  const __m512i by_2048 = broadcast(k.by_2048);
  for (size_t round = 1; round < rounds; ++round) {
    const size_t at = round * kFoldRound;
    acc0 = _mm512_xor_si512(fold512(acc0, by_2048), load_64<kCopy>(out, data, at));
    acc1 = _mm512_xor_si512(fold512(acc1, by_2048), load_64<kCopy>(out, data, at + 64));
    acc2 = _mm512_xor_si512(fold512(acc2, by_2048), load_64<kCopy>(out, data, at + 128));
    acc3 = _mm512_xor_si512(fold512(acc3, by_2048), load_64<kCopy>(out, data, at + 192));
  }
  // Four accumulators into the last: each by its distance from it.
  __m512i acc = _mm512_xor_si512(acc3, fold512(acc2, broadcast(k.by_512)));
  acc = _mm512_xor_si512(acc, fold512(acc1, broadcast(k.by_1024)));
  acc = _mm512_xor_si512(acc, fold512(acc0, broadcast(k.by_1536)));
  // Four lanes into the last.
  alignas(64) uint8_t lanes[64];
  _mm512_store_si512(lanes, acc);
  auto lane_at = [&](int i) {
    return _mm_load_si128(reinterpret_cast<const __m128i*>(lanes + 16 * i));
  };
  __m128i lane = lane_at(3);
  lane = _mm_xor_si128(lane, fold128(lane_at(2), k.by_128));
  lane = _mm_xor_si128(lane, fold128(lane_at(1), k.by_256));
  lane = _mm_xor_si128(lane, fold128(lane_at(0), k.by_384));
  // The lane stands for all bytes folded so far: its CRC from 0, then the rest.
  uint64_t halves[2];
  _mm_storeu_si128(reinterpret_cast<__m128i*>(halves), lane);
  uint64_t wide = __builtin_ia32_crc32di(0, halves[0]);
  wide = __builtin_ia32_crc32di(wide, halves[1]);
  const size_t done = rounds * kFoldRound;
  if constexpr (!kCopy)
    return crc32c_sse42(static_cast<uint32_t>(wide), data + done, length - done);
  std::memcpy(out + done, data + done, length - done);
  return crc32c_sse42(static_cast<uint32_t>(wide), out + done, length - done);
}

uint32_t crc32c_fold512(uint32_t crc, const uint8_t* data, size_t length) {
  return fold512_pass<false>(crc, nullptr, data, length);
}

uint32_t crc32c_copy_fold512(uint32_t crc, uint8_t* out, const uint8_t* data, size_t length) {
  return fold512_pass<true>(crc, out, data, length);
}

// The same with four 128-bit accumulators (PCLMULQDQ, no AVX-512): 64
// bytes a round, D = 512.
#define OFI_DPDK_FOLD128_TARGET __attribute__((target("pclmul,sse4.2")))

OFI_DPDK_FOLD128_TARGET inline __m128i fold128_sse(__m128i acc, __m128i by) {
  return _mm_xor_si128(_mm_clmulepi64_si128(acc, by, 0x00), _mm_clmulepi64_si128(acc, by, 0x11));
}

OFI_DPDK_FOLD128_TARGET __m128i pair(const uint64_t by[2]) {
  return _mm_set_epi64x(static_cast<long long>(by[1]), static_cast<long long>(by[0]));
}

OFI_DPDK_FOLD128_TARGET uint32_t crc32c_fold128(uint32_t crc, const uint8_t* data, size_t length) {
  constexpr size_t kRound = 64;
  if (length < 4 * kRound) return crc32c_sse42(crc, data, length);
  const FoldConstants& k = fold_constants();
  const size_t rounds = length / kRound;
  auto load = [](const uint8_t* p) { return _mm_loadu_si128(reinterpret_cast<const __m128i*>(p)); };
  __m128i acc0 = _mm_xor_si128(load(data), _mm_cvtsi32_si128(static_cast<int>(crc)));
  __m128i acc1 = load(data + 16), acc2 = load(data + 32), acc3 = load(data + 48);
  const __m128i by_512 = pair(k.by_512);
  for (size_t round = 1; round < rounds; ++round) {
    const uint8_t* next = data + round * kRound;
    acc0 = _mm_xor_si128(fold128_sse(acc0, by_512), load(next));
    acc1 = _mm_xor_si128(fold128_sse(acc1, by_512), load(next + 16));
    acc2 = _mm_xor_si128(fold128_sse(acc2, by_512), load(next + 32));
    acc3 = _mm_xor_si128(fold128_sse(acc3, by_512), load(next + 48));
  }
  __m128i lane = _mm_xor_si128(acc3, fold128_sse(acc2, pair(k.by_128)));
  lane = _mm_xor_si128(lane, fold128_sse(acc1, pair(k.by_256)));
  lane = _mm_xor_si128(lane, fold128_sse(acc0, pair(k.by_384)));
  uint64_t halves[2];
  _mm_storeu_si128(reinterpret_cast<__m128i*>(halves), lane);
  uint64_t wide = __builtin_ia32_crc32di(0, halves[0]);
  wide = __builtin_ia32_crc32di(wide, halves[1]);
  const size_t done = rounds * kRound;
  return crc32c_sse42(static_cast<uint32_t>(wide), data + done, length - done);
}

enum class Path : uint8_t { kTable, kInstruction, kFold128, kFold512 };

Path pick_path() {
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
      __builtin_cpu_supports("vpclmulqdq") && __builtin_cpu_supports("pclmul") &&
      __builtin_cpu_supports("sse4.2"))
    return Path::kFold512;
  if (__builtin_cpu_supports("pclmul") && __builtin_cpu_supports("sse4.2")) return Path::kFold128;
  if (__builtin_cpu_supports("sse4.2")) return Path::kInstruction;
  return Path::kTable;
}

// Chosen once when the library loads, so a call reads a constant instead
// of testing a function-local static's guard.  (A checksum asked for by
// another library's start-up code before this runs takes the table, which
// gives the same value.)
const Path chosen_path = pick_path();

Path path() {
  return chosen_path;
}
#endif

}  // namespace

uint32_t crc32c_portable(uint32_t crc, const uint8_t* data, size_t length) {
  for (; length > 0; --length, ++data) crc = kCrcTable[(crc ^ *data) & 0xFFu] ^ (crc >> 8);
  return crc;
}

uint32_t crc32c_fold128_path(uint32_t crc, const uint8_t* data, size_t length) {
#if defined(__x86_64__)
  if (path() == Path::kFold128 || path() == Path::kFold512)
    return crc32c_fold128(crc, data, length);
#endif
  return crc32c_instruction(crc, data, length);
}

uint32_t crc32c_instruction(uint32_t crc, const uint8_t* data, size_t length) {
#if defined(__x86_64__)
  if (path() != Path::kTable) return crc32c_sse42(crc, data, length);
#endif
  return crc32c_portable(crc, data, length);
}

uint32_t crc32c(uint32_t crc, const uint8_t* data, size_t length) {
#if defined(__x86_64__)
  switch (path()) {
    case Path::kFold512:
      return crc32c_fold512(crc, data, length);
    case Path::kFold128:
      return crc32c_fold128(crc, data, length);
    case Path::kInstruction:
      return crc32c_sse42(crc, data, length);
    case Path::kTable:
      break;
  }
#endif
  return crc32c_portable(crc, data, length);
}

uint32_t crc32c_zero8_at(uint32_t crc, const uint8_t* data, size_t length, size_t hole) {
#if defined(__x86_64__)
  // Below the folding paths' thresholds (256 bytes after the hole) the CRC
  // instruction is what crc32c() would use for each piece anyway.
  if (path() != Path::kTable && length - hole - 8 < 256)
    return crc32c_sse42_zero8_at(crc, data, length, hole);
#endif
  static constexpr uint8_t kZero[8] = {};
  crc = crc32c(crc, data, hole);
  crc = crc32c(crc, kZero, sizeof(kZero));
  return crc32c(crc, data + hole + 8, length - hole - 8);
}

uint32_t crc32c_copy(uint32_t crc, uint8_t* out, const uint8_t* data, size_t length) {
#if defined(__x86_64__)
  if (path() == Path::kFold512) return crc32c_copy_fold512(crc, out, data, length);
#endif
  if (length != 0) std::memcpy(out, data, length);
  return crc32c(crc, out, length);
}

const char* crc32c_path() {
#if defined(__x86_64__)
  switch (path()) {
    case Path::kFold512:
      return "vpclmulqdq";
    case Path::kFold128:
      return "pclmulqdq";
    case Path::kInstruction:
      return "sse4.2";
    case Path::kTable:
      break;
  }
#endif
  return "table";
}

}  // namespace ofi_dpdk::proto
