#include "lib/ip/udp6.h"

#include <bit>
#include <cstring>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include "lib/ip/byte_order.h"

namespace ofi_dpdk::ip {
namespace {

// The sum of the 32-bit words (as the CPU loads them) of the first
// *done bytes of `bytes`, a multiple of 16: four sums of 64 bits, which
// cannot overflow below 64 GiB, so that no add waits for the one before.
uint64_t sum_words_scalar(const uint8_t* bytes, size_t length, size_t* done) {
  uint64_t sums[4] = {};
  size_t i = 0;
  for (; i + 16 <= length; i += 16) {
    uint32_t words[4];
    std::memcpy(words, bytes + i, 16);
    for (int k = 0; k < 4; ++k) sums[k] += words[k];
  }
  *done = i;
  return sums[0] + sums[1] + sums[2] + sums[3];
}

#if defined(__x86_64__)
// The same 32 bytes at a time in AVX2 registers: each 32-bit word widened
// to a 64-bit lane.  A 9000-byte frame on this machine's EPYC: 0.53 us
// scalar (13.9 % of a UDP/IPv6 sender's time in fi_rdm_tagged_bw, against
// 7.5 % for the copy and CRC of the same bytes), 0.13 us so.
__attribute__((target("avx2"))) uint64_t sum_words_avx2(const uint8_t* bytes, size_t length,
                                                        size_t* done) {
  const __m256i zero = _mm256_setzero_si256();
  __m256i low = zero, high = zero;
  size_t i = 0;
  for (; i + 32 <= length; i += 32) {
    const __m256i words = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(bytes + i));
    low = _mm256_add_epi64(low, _mm256_unpacklo_epi32(words, zero));
    high = _mm256_add_epi64(high, _mm256_unpackhi_epi32(words, zero));
  }
  uint64_t lanes[4];
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(lanes), _mm256_add_epi64(low, high));
  *done = i;
  return lanes[0] + lanes[1] + lanes[2] + lanes[3];
}

bool have_avx2() {
  static const bool have = __builtin_cpu_supports("avx2");
  return have;
}
#endif

}  // namespace

void ChecksumSum::add(const uint8_t* bytes, size_t length) {
#if defined(__x86_64__)
  if (have_avx2()) return add_words(bytes, length, sum_words_avx2);
#endif
  add_words(bytes, length, sum_words_scalar);
}

void ChecksumSum::add_scalar(const uint8_t* bytes, size_t length) {
  add_words(bytes, length, sum_words_scalar);
}

void ChecksumSum::add_words(const uint8_t* bytes, size_t length, WordSummer sum_words) {
  // 32-bit words as the CPU loads them: two 16-bit words each, in its byte
  // order, which swapping (below) undoes on a little-endian CPU.
  size_t i = 0;
  uint64_t native = sum_words(bytes, length, &i);
  for (; i + 4 <= length; i += 4) {
    uint32_t word;
    std::memcpy(&word, bytes + i, 4);
    native += word;
  }
  for (; i + 2 <= length; i += 2) {
    uint16_t word;
    std::memcpy(&word, bytes + i, 2);
    native += word;
  }
  while (native >> 16) native = (native & 0xFFFF) + (native >> 16);
  if constexpr (std::endian::native == std::endian::little)
    native = ((native & 0xFF) << 8) | (native >> 8);
  sum_ += native;
  if (i < length) sum_ += uint64_t{bytes[i]} << 8;  // the odd byte, padded with 0
}

void ChecksumSum::add16(uint16_t value) {
  sum_ += value;
}

uint16_t ChecksumSum::folded() const {
  uint64_t folded = sum_;
  while (folded >> 16) folded = (folded & 0xFFFF) + (folded >> 16);
  return static_cast<uint16_t>(folded);
}

uint16_t ChecksumSum::checksum() const {
  return static_cast<uint16_t>(~folded());
}

ChecksumSum pseudo_header_sum(const Ipv6& source, const Ipv6& destination, uint32_t length,
                              uint8_t next_header) {
  ChecksumSum sum;
  sum.add(source.bytes.data(), 16);
  sum.add(destination.bytes.data(), 16);
  sum.add16(static_cast<uint16_t>(length >> 16));
  sum.add16(static_cast<uint16_t>(length));
  sum.add16(next_header);
  return sum;
}

void encode_udp6(uint8_t* out, const uint8_t dst_mac[6], const uint8_t src_mac[6],
                 const Udp6Addresses& a, size_t payload_length, bool checksum_by_device) {
  std::memcpy(out, dst_mac, 6);
  std::memcpy(out + 6, src_mac, 6);
  put16(out + 12, kEtherTypeIpv6);
  uint8_t* ip = out + kEthernetHeaderSize;
  const auto udp_length = static_cast<uint16_t>(kUdpHeaderSize + payload_length);
  // Version 6, traffic class (DSCP 0, ECN), flow label 0.
  ip[0] = 0x60;
  ip[1] = static_cast<uint8_t>((a.ecn & 3) << 4);
  ip[2] = ip[3] = 0;
  put16(ip + 4, udp_length);
  ip[6] = kProtocolUdp;
  ip[7] = a.hop_limit;
  std::memcpy(ip + 8, a.source.bytes.data(), 16);
  std::memcpy(ip + 24, a.destination.bytes.data(), 16);
  uint8_t* udp = ip + kIpv6HeaderSize;
  put16(udp, a.source_port);
  put16(udp + 2, a.destination_port);
  put16(udp + 4, udp_length);
  put16(udp + 6, 0);
  ChecksumSum sum = pseudo_header_sum(a.source, a.destination, udp_length, kProtocolUdp);
  if (checksum_by_device) {
    put16(udp + 6, sum.folded());
    return;
  }
  sum.add(udp, udp_length);
  const uint16_t checksum = sum.checksum();
  put16(udp + 6, checksum == 0 ? 0xFFFF : checksum);  // 0 means "none", which IPv6 forbids
}

Ipv6Result parse_ipv6_packet(const uint8_t* frame, size_t length, Ipv6Packet* out) {
  if (length < kEthernetHeaderSize || get16(frame + 12) != kEtherTypeIpv6)
    return Ipv6Result::kNotIpv6;
  const uint8_t* ip = frame + kEthernetHeaderSize;
  const size_t available = length - kEthernetHeaderSize;
  if (available < kIpv6HeaderSize || (ip[0] >> 4) != 6) return Ipv6Result::kMalformed;
  const size_t payload_length = get16(ip + 4);  // 0 with a jumbogram's option: not taken
  if (payload_length == 0 || payload_length > available - kIpv6HeaderSize)
    return Ipv6Result::kMalformed;
  out->next_header = ip[6];
  out->ecn = (ip[1] >> 4) & 3;
  out->hop_limit = ip[7];
  std::memcpy(out->source.bytes.data(), ip + 8, 16);
  std::memcpy(out->destination.bytes.data(), ip + 24, 16);
  out->header = ip;
  out->payload = ip + kIpv6HeaderSize;
  out->payload_length = payload_length;
  return Ipv6Result::kOk;
}

bool parse_udp6(const Ipv6Packet& packet, UdpDatagram* out, bool checksum_checked) {
  if (packet.next_header != kProtocolUdp || packet.payload_length < kUdpHeaderSize) return false;
  const uint8_t* udp = packet.payload;
  const size_t udp_length = get16(udp + 4);
  if (udp_length < kUdpHeaderSize || udp_length > packet.payload_length || get16(udp + 6) == 0)
    return false;
  if (!checksum_checked) {
    ChecksumSum sum = pseudo_header_sum(packet.source, packet.destination,
                                        static_cast<uint32_t>(udp_length), kProtocolUdp);
    sum.add(udp, udp_length);
    if (!sum.verifies()) return false;
  }
  out->source_port = get16(udp);
  out->destination_port = get16(udp + 2);
  out->payload = udp + kUdpHeaderSize;
  out->payload_length = udp_length - kUdpHeaderSize;
  return true;
}

}  // namespace ofi_dpdk::ip
