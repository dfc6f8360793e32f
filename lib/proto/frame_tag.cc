#include "lib/proto/frame_tag.h"

#include <endian.h>

#include <algorithm>
#include <cstring>

#include "lib/proto/token.h"

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace ofi_dpdk::proto {
namespace {

// x^128 = x^7 + x^2 + x + 1 in the field.
constexpr uint64_t kReduction = 0x87;

Block128 load_block(const uint8_t* bytes) {
  uint64_t lo, hi;
  std::memcpy(&lo, bytes, 8);
  std::memcpy(&hi, bytes + 8, 8);
  return {le64toh(lo), le64toh(hi)};
}

// ---------------------------------------------------------------------------
// Portable carry-less arithmetic.

// a * b over GF(2)[x], 64 x 64 -> 128 bits.
Block128 clmul64(uint64_t a, uint64_t b) {
  Block128 r;
  for (int i = 0; i < 64; ++i) {
    if (((b >> i) & 1) == 0) continue;
    r.lo ^= a << i;
    if (i != 0) r.hi ^= a >> (64 - i);
  }
  return r;
}

// The 256-bit product p3:p2:p1:p0 reduced to 128 bits.
Block128 reduce(uint64_t p0, uint64_t p1, uint64_t p2, uint64_t p3) {
  // (p3:p2) * x^128 = (p3:p2) * 0x87: a 135-bit q2:q1:q0, whose q2 (7 bits)
  // folds once more.
  const Block128 a = clmul64(p2, kReduction);
  const Block128 b = clmul64(p3, kReduction);
  const uint64_t q0 = a.lo, q1 = a.hi ^ b.lo, q2 = b.hi;
  const Block128 c = clmul64(q2, kReduction);
  return {p0 ^ q0 ^ c.lo, p1 ^ q1 ^ c.hi};
}

struct Wide {
  uint64_t p0 = 0, p1 = 0, p2 = 0, p3 = 0;
};

void multiply_into(Wide& w, Block128 a, Block128 b) {
  const Block128 ll = clmul64(a.lo, b.lo);
  const Block128 hh = clmul64(a.hi, b.hi);
  const Block128 lh = clmul64(a.lo, b.hi);
  const Block128 hl = clmul64(a.hi, b.lo);
  w.p0 ^= ll.lo;
  w.p1 ^= ll.hi ^ lh.lo ^ hl.lo;
  w.p2 ^= hh.lo ^ lh.hi ^ hl.hi;
  w.p3 ^= hh.hi;
}

Block128 multiply(Block128 a, Block128 b) {
  Wide w;
  multiply_into(w, a, b);
  return reduce(w.p0, w.p1, w.p2, w.p3);
}

Block128 absorb_portable(Block128 acc, const Block128* h, const uint8_t* data, size_t blocks) {
  for (; blocks >= 4; blocks -= 4, data += 64) {
    Block128 m0 = load_block(data);
    m0.lo ^= acc.lo;
    m0.hi ^= acc.hi;
    Wide w;
    multiply_into(w, m0, h[3]);
    multiply_into(w, load_block(data + 16), h[2]);
    multiply_into(w, load_block(data + 32), h[1]);
    multiply_into(w, load_block(data + 48), h[0]);
    acc = reduce(w.p0, w.p1, w.p2, w.p3);
  }
  for (; blocks > 0; --blocks, data += 16) {
    Block128 m = load_block(data);
    m.lo ^= acc.lo;
    m.hi ^= acc.hi;
    acc = multiply(m, h[0]);
  }
  return acc;
}

// ---------------------------------------------------------------------------
// PCLMULQDQ: the same arithmetic, a 64 x 64 multiply an instruction.

#if defined(__x86_64__)
#define OFI_DPDK_TAG_TARGET __attribute__((target("pclmul,sse4.1")))

OFI_DPDK_TAG_TARGET inline __m128i to_m128(Block128 b) {
  return _mm_set_epi64x(static_cast<long long>(b.hi), static_cast<long long>(b.lo));
}

OFI_DPDK_TAG_TARGET inline void multiply_into(__m128i a, __m128i b, __m128i& lo, __m128i& mid,
                                              __m128i& hi) {
  lo = _mm_xor_si128(lo, _mm_clmulepi64_si128(a, b, 0x00));
  hi = _mm_xor_si128(hi, _mm_clmulepi64_si128(a, b, 0x11));
  mid = _mm_xor_si128(
      mid, _mm_xor_si128(_mm_clmulepi64_si128(a, b, 0x01), _mm_clmulepi64_si128(a, b, 0x10)));
}

OFI_DPDK_TAG_TARGET inline __m128i reduce(__m128i lo, __m128i mid, __m128i hi) {
  const __m128i low = _mm_xor_si128(lo, _mm_slli_si128(mid, 8));   // p1:p0
  const __m128i high = _mm_xor_si128(hi, _mm_srli_si128(mid, 8));  // p3:p2
  const __m128i r = _mm_set_epi64x(0, static_cast<long long>(kReduction));
  const __m128i a = _mm_clmulepi64_si128(high, r, 0x00);                  // p2 * 0x87
  const __m128i b = _mm_clmulepi64_si128(high, r, 0x01);                  // p3 * 0x87
  const __m128i c = _mm_clmulepi64_si128(_mm_srli_si128(b, 8), r, 0x00);  // q2 * 0x87
  return _mm_xor_si128(_mm_xor_si128(low, a), _mm_xor_si128(_mm_slli_si128(b, 8), c));
}

OFI_DPDK_TAG_TARGET Block128 absorb_pclmul(Block128 start, const Block128* key, const uint8_t* data,
                                           size_t blocks) {
  const __m128i h1 = to_m128(key[0]), h2 = to_m128(key[1]), h3 = to_m128(key[2]),
                h4 = to_m128(key[3]);
  // Blocks are little-endian words: the host's order on x86.
  __m128i acc = to_m128(start);
  for (; blocks >= 4; blocks -= 4, data += 64) {
    __m128i lo = _mm_setzero_si128(), mid = _mm_setzero_si128(), hi = _mm_setzero_si128();
    const __m128i m0 = _mm_xor_si128(acc, _mm_loadu_si128(reinterpret_cast<const __m128i*>(data)));
    multiply_into(m0, h4, lo, mid, hi);
    multiply_into(_mm_loadu_si128(reinterpret_cast<const __m128i*>(data + 16)), h3, lo, mid, hi);
    multiply_into(_mm_loadu_si128(reinterpret_cast<const __m128i*>(data + 32)), h2, lo, mid, hi);
    multiply_into(_mm_loadu_si128(reinterpret_cast<const __m128i*>(data + 48)), h1, lo, mid, hi);
    acc = reduce(lo, mid, hi);
  }
  for (; blocks > 0; --blocks, data += 16) {
    __m128i lo = _mm_setzero_si128(), mid = _mm_setzero_si128(), hi = _mm_setzero_si128();
    multiply_into(_mm_xor_si128(acc, _mm_loadu_si128(reinterpret_cast<const __m128i*>(data))), h1,
                  lo, mid, hi);
    acc = reduce(lo, mid, hi);
  }
  Block128 out;
  out.lo = static_cast<uint64_t>(_mm_cvtsi128_si64(acc));
  out.hi = static_cast<uint64_t>(_mm_extract_epi64(acc, 1));
  return out;
}

// GCC 12's AVX-512 intrinsics fill lanes from an "undefined" register its
// own flow analysis then calls uninitialised (a false alarm in its headers).
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

// VPCLMULQDQ: four blocks to a 512-bit register, 32 a step against
// H^32..H^1, one reduction per step: only the first block's product waits
// for the step before, so the multiplies of a step run side by side.
#define OFI_DPDK_TAG512_TARGET __attribute__((target("avx512f,avx512bw,vpclmulqdq,pclmul,sse4.1")))

// The key's powers for one register: lane i holds H^(first - i).
OFI_DPDK_TAG512_TARGET inline __m512i powers(const Block128* key, int first) {
  const Block128& a = key[first - 1];
  const Block128& b = key[first - 2];
  const Block128& c = key[first - 3];
  const Block128& d = key[first - 4];
  return _mm512_set_epi64(static_cast<long long>(d.hi), static_cast<long long>(d.lo),
                          static_cast<long long>(c.hi), static_cast<long long>(c.lo),
                          static_cast<long long>(b.hi), static_cast<long long>(b.lo),
                          static_cast<long long>(a.hi), static_cast<long long>(a.lo));
}

// Karatsuba: three multiplies a product, the middle one of the halves'
// sums (`folded` holds lo ^ hi of each key power in its low half); the
// middle terms are completed once a step (mid ^= lo ^ hi, by linearity).
OFI_DPDK_TAG512_TARGET inline void multiply_into(__m512i a, __m512i b, __m512i folded, __m512i& lo,
                                                 __m512i& mid, __m512i& hi) {
  lo = _mm512_xor_si512(lo, _mm512_clmulepi64_epi128(a, b, 0x00));
  hi = _mm512_xor_si512(hi, _mm512_clmulepi64_epi128(a, b, 0x11));
  const __m512i halves = _mm512_xor_si512(a, _mm512_maskz_shuffle_epi32(0xFFFF, a, _MM_PERM_BADC));
  mid = _mm512_xor_si512(mid, _mm512_clmulepi64_epi128(halves, folded, 0x00));
}

// The XOR of a register's four lanes.
OFI_DPDK_TAG512_TARGET inline __m128i fold_lanes(__m512i z) {
  const __m256i y =
      _mm256_xor_si256(_mm512_castsi512_si256(z), _mm512_maskz_extracti64x4_epi64(0xF, z, 1));
  return _mm_xor_si128(_mm256_castsi256_si128(y), _mm256_extracti128_si256(y, 1));
}

OFI_DPDK_TAG512_TARGET Block128 absorb_vpclmul(Block128 start, const Block128* key,
                                               const uint8_t* data, size_t blocks) {
  __m512i k[8], folded[8];
  for (int i = 0; i < 8; ++i) {
    k[i] = powers(key, 32 - 4 * i);
    folded[i] = _mm512_xor_si512(k[i], _mm512_maskz_shuffle_epi32(0xFFFF, k[i], _MM_PERM_BADC));
  }
  __m128i acc = to_m128(start);
  for (; blocks >= 32; blocks -= 32, data += 512) {
    __m512i lo = _mm512_setzero_si512(), mid = _mm512_setzero_si512(), hi = _mm512_setzero_si512();
    for (int i = 1; i < 8; ++i)
      multiply_into(_mm512_loadu_si512(data + 64 * i), k[i], folded[i], lo, mid, hi);
    const __m512i first = _mm512_xor_si512(_mm512_loadu_si512(data), _mm512_zextsi128_si512(acc));
    multiply_into(first, k[0], folded[0], lo, mid, hi);
    const __m128i low = fold_lanes(lo), high = fold_lanes(hi);
    acc = reduce(low, _mm_xor_si128(fold_lanes(mid), _mm_xor_si128(low, high)), high);
  }
  Block128 out;
  out.lo = static_cast<uint64_t>(_mm_cvtsi128_si64(acc));
  out.hi = static_cast<uint64_t>(_mm_extract_epi64(acc, 1));
  return blocks == 0 ? out : absorb_pclmul(out, key, data, blocks);
}

#pragma GCC diagnostic pop

enum class Path : uint8_t { kVpclmul, kPclmul, kPortable };

Path cpu_path() {
  static const Path path = [] {
    if (!__builtin_cpu_supports("pclmul") || !__builtin_cpu_supports("sse4.1"))
      return Path::kPortable;
    if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
        __builtin_cpu_supports("vpclmulqdq"))
      return Path::kVpclmul;
    return Path::kPclmul;
  }();
  return path;
}
#else
enum class Path : uint8_t { kPortable };
Path cpu_path() {
  return Path::kPortable;
}
#endif

Block128 absorb(bool portable_only, Block128 acc, const Block128* h, const uint8_t* data,
                size_t blocks) {
#if defined(__x86_64__)
  if (!portable_only) {
    // The wide path pays its set-up back from a few hundred bytes on.
    if (cpu_path() == Path::kVpclmul && blocks >= 32) return absorb_vpclmul(acc, h, data, blocks);
    if (cpu_path() != Path::kPortable) return absorb_pclmul(acc, h, data, blocks);
  }
#endif
  (void)portable_only;
  return absorb_portable(acc, h, data, blocks);
}

}  // namespace

std::optional<FrameKey> FrameKey::derive(std::span<const uint8_t> job_key) {
  if (job_key.size() < kMinJobKeyBytes || job_key.size() > kMaxJobKeyBytes) return std::nullopt;
  // The key's bytes as words (zero-padded), behind a label and the length:
  // SipHash under a fixed key, one output per purpose, is the derivation.
  uint64_t words[2 + kMaxJobKeyBytes / 8] = {0x6f66692d64706b64ull /* "ofi-dpkd" */,
                                             job_key.size()};
  // Little-endian words whatever the host: peers derive the same keys.
  std::memcpy(&words[2], job_key.data(), job_key.size());
  for (size_t i = 2; i < 2 + (job_key.size() + 7) / 8; ++i) words[i] = le64toh(words[i]);
  const size_t count = 2 + (job_key.size() + 7) / 8;
  static constexpr uint64_t kDerivation[2] = {0x7461672d6b657973ull, 0x6a6f622d6b657920ull};
  auto output = [&](uint64_t purpose) {
    uint64_t purpose_key[2] = {kDerivation[0] ^ purpose, kDerivation[1] + purpose};
    return keyed_hash(purpose_key, words, count);
  };
  FrameKey key;
  key.h_[0] = {output(1), output(2)};
  if (key.h_[0].lo == 0 && key.h_[0].hi == 0) key.h_[0].lo = 1;  // (2^-128)
  for (int i = 1; i < kPowers; ++i) key.h_[i] = multiply(key.h_[i - 1], key.h_[0]);
  key.prf_key_[0] = output(3);
  key.prf_key_[1] = output(4);
  std::memset(words, 0, sizeof words);
  return key;
}

void FrameKey::Tagger::absorb_blocks(const uint8_t* data, size_t blocks) {
  acc_ = absorb(key_.portable_only_, acc_, key_.h_, data, blocks);
}

void FrameKey::Tagger::add(const uint8_t* data, size_t length) {
  total_ += length;
  if (partial_length_ != 0) {
    const size_t take = std::min(length, 16 - partial_length_);
    std::memcpy(partial_ + partial_length_, data, take);
    partial_length_ += take;
    data += take;
    length -= take;
    if (partial_length_ < 16) return;
    absorb_blocks(partial_, 1);
    partial_length_ = 0;
  }
  const size_t blocks = length / 16;
  if (blocks != 0) absorb_blocks(data, blocks);
  std::memcpy(partial_, data + blocks * 16, length % 16);
  partial_length_ = length % 16;
}

void FrameKey::Tagger::add_zeros(size_t length) {
  static constexpr uint8_t kZeros[16] = {};
  for (; length > 16; length -= 16) add(kZeros, 16);
  add(kZeros, length);
}

uint64_t FrameKey::Tagger::finish() {
  if (partial_length_ != 0) {
    std::memset(partial_ + partial_length_, 0, 16 - partial_length_);
    absorb_blocks(partial_, 1);
    partial_length_ = 0;
  }
  // The length tells apart covers that zero padding would make one.
  const uint64_t words[3] = {acc_.lo, acc_.hi, total_};
  return keyed_hash(key_.prf_key_, words, 3);
}

uint64_t FrameKey::tag_portable(const uint8_t* data, size_t length) const {
  FrameKey portable = *this;
  portable.portable_only_ = true;
  return portable.tag(data, length);
}

const char* frame_tag_path() {
  switch (cpu_path()) {
#if defined(__x86_64__)
    case Path::kVpclmul:
      return "vpclmulqdq";
    case Path::kPclmul:
      return "pclmulqdq";
#endif
    case Path::kPortable:
      break;
  }
  return "portable";
}

}  // namespace ofi_dpdk::proto
