// udp6.h: the UDP/IPv6 encapsulation (FI_DPDK_ENCAP=udp on a port with an
// IPv6 address).  Our header and payload travel as the payload of a UDP
// datagram in an IPv6 packet, as over IPv4 (udp4.h), except that IPv6
// makes the UDP checksum mandatory (RFC 8200 section 8.1), so it is
// computed over the datagram and checked on receipt.  Pure byte work: no
// DPDK, no state.
#pragma once

#include <cstddef>
#include <cstdint>

#include "lib/ip/ipv6.h"
#include "lib/ip/udp4.h"

namespace ofi_dpdk::ip {

inline constexpr uint16_t kEtherTypeIpv6 = 0x86DD;
inline constexpr uint8_t kNextHeaderIcmp6 = 58;
inline constexpr size_t kIpv6HeaderSize = 40;  // we send no extension headers
// Bytes before our header in a frame we send: Ethernet, IPv6, UDP.
inline constexpr size_t kUdp6Lead = kEthernetHeaderSize + kIpv6HeaderSize + kUdpHeaderSize;
// What UDP/IPv6 costs per frame against our own EtherType.
inline constexpr size_t kUdp6Overhead = kIpv6HeaderSize + kUdpHeaderSize;
// The hop limit of the packets we send (the kernel's default).
inline constexpr uint8_t kDefaultHopLimit = 64;

// The ones'-complement sum of RFC 1071, in pieces: add() each piece in
// order (only the last may have an odd length), then checksum().  The sum
// is the same in any byte order, so words are added as the CPU loads them
// and turned to network order once at the end.
class ChecksumSum {
 public:
  void add(const uint8_t* bytes, size_t length);
  // The same without SIMD, whatever the CPU (tests compare the two).
  void add_scalar(const uint8_t* bytes, size_t length);
  void add16(uint16_t value);  // one word, host order
  // The checksum to write (network order in two bytes): the complement of
  // the folded sum.
  uint16_t checksum() const;
  // The folded sum itself, not complemented: what a device that finishes
  // the checksum wants in the field (the pseudo-header's, DPDK's
  // RTE_MBUF_F_TX_UDP_CKSUM).
  uint16_t folded() const;
  // Whether a message that carries its checksum sums correctly.
  bool verifies() const { return checksum() == 0; }

 private:
  using WordSummer = uint64_t (*)(const uint8_t*, size_t, size_t*);
  void add_words(const uint8_t* bytes, size_t length, WordSummer sum_words);
  uint64_t sum_ = 0;  // network-order words, as 16-bit values
};

// The sum of the IPv6 pseudo-header (RFC 8200 section 8.1) for an upper
// layer message of `length` bytes with next header `next_header`.
ChecksumSum pseudo_header_sum(const Ipv6& source, const Ipv6& destination, uint32_t length,
                              uint8_t next_header);

struct Udp6Addresses {
  Ipv6 source;
  Ipv6 destination;
  uint16_t source_port = 0;
  uint16_t destination_port = 0;
  uint8_t hop_limit = kDefaultHopLimit;
  uint8_t ecn = kEcnNotCapable;  // the traffic class's low two bits (udp4.h)
};

// Writes the Ethernet, IPv6 and UDP headers (kUdp6Lead bytes) of a frame
// whose UDP payload is `payload_length` bytes (at most 65527), which must
// already be in place after them: the UDP checksum covers it.  With
// `checksum_by_device` the checksum field gets the pseudo-header's folded
// sum alone, for the device to finish over the datagram (the payload is
// not read).
void encode_udp6(uint8_t* out, const uint8_t dst_mac[6], const uint8_t src_mac[6],
                 const Udp6Addresses& addresses, size_t payload_length,
                 bool checksum_by_device = false);

enum class Ipv6Result : uint8_t {
  kOk,
  kNotIpv6,    // another EtherType
  kMalformed,  // too short, not version 6, a payload length beyond the frame
};

// An IPv6 packet in an Ethernet frame: its fixed header, checked against
// the frame (Ethernet may pad).  Extension headers are not walked: a
// packet that has one shows its type in next_header, which no caller
// takes (we send none; fragments among them).
struct Ipv6Packet {
  Ipv6 source;
  Ipv6 destination;
  uint8_t next_header = 0;
  uint8_t hop_limit = 0;
  uint8_t ecn = 0;  // the traffic class's ECN field
  const uint8_t* header = nullptr;
  const uint8_t* payload = nullptr;
  size_t payload_length = 0;
};
Ipv6Result parse_ipv6_packet(const uint8_t* frame, size_t length, Ipv6Packet* out);

// A UDP datagram in `packet` (next header 17): its ports and payload.
// False when the lengths do not fit or the checksum is absent (0, which
// IPv6 forbids) or wrong; `checksum_checked`: the device verified it
// (RTE_MBUF_F_RX_L4_CKSUM_GOOD), so it is not summed again.
bool parse_udp6(const Ipv6Packet& packet, UdpDatagram* out, bool checksum_checked = false);

}  // namespace ofi_dpdk::ip
