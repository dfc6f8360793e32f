// udp4.h: the UDP/IPv4 encapsulation (FI_DPDK_ENCAP=udp).  Our header and
// payload travel as the payload of a UDP datagram in an IPv4 packet, so a
// router forwards them and a NIC can steer them by UDP port.  Pure byte
// work: no DPDK, no state.
//
// The transport names its peers by a 6-byte link address (a MAC on one
// segment).  A peer reached over UDP/IPv4 is named instead by its IPv4
// address, written as a "peer id" that no Ethernet source can carry: the
// group bit of the first octet is set, which a sender's MAC never has.
#pragma once

#include <cstddef>
#include <cstdint>

#include "lib/ip/ipv4.h"

namespace ofi_dpdk::ip {

inline constexpr uint16_t kEtherTypeIpv4 = 0x0800;
inline constexpr uint8_t kProtocolIcmp = 1;
inline constexpr uint8_t kProtocolUdp = 17;
inline constexpr size_t kEthernetHeaderSize = 14;
inline constexpr size_t kIpv4HeaderSize = 20;  // we send no options
inline constexpr size_t kUdpHeaderSize = 8;
// Bytes before our header in a frame we send: Ethernet, IPv4, UDP.
inline constexpr size_t kUdp4Lead = kEthernetHeaderSize + kIpv4HeaderSize + kUdpHeaderSize;
// What UDP/IPv4 costs per frame against our own EtherType.
inline constexpr size_t kUdp4Overhead = kIpv4HeaderSize + kUdpHeaderSize;
// The TTL of the packets we send (RFC 1700's default).
inline constexpr uint8_t kDefaultTtl = 64;
// The ECN field of an IPv4 header's second byte, or an IPv6 traffic class's
// low two bits (RFC 3168): a sender that reacts to congestion marks sends
// ECT(0); a router whose queue builds marks such packets CE instead of
// dropping them.
inline constexpr uint8_t kEcnNotCapable = 0;
inline constexpr uint8_t kEcnCapable0 = 2;
inline constexpr uint8_t kEcnCongestionExperienced = 3;

// The peer id of an IPv4 address: 03:00 then the address, big-endian.
void peer_id_of(Ipv4 address, uint8_t id[6]);
bool is_peer_id(const uint8_t id[6]);
Ipv4 address_of_peer_id(const uint8_t id[6]);  // is_peer_id(id) first

// The UDP source port of frames from queue `src_queue` to queue
// `dst_queue` on path `path`: flow entropy, in the dynamic range
// 49152-65535.  Routers that pick among equal-cost routes by hashing the
// ports then spread pairs of endpoints over them, and a connection that
// moves to another path (OutFrame::path) moves port: the 256 paths of a
// pair have 256 different ports.
uint16_t flow_source_port(uint16_t src_queue, uint16_t dst_queue, uint8_t path);

struct Udp4Addresses {
  Ipv4 source = 0;
  Ipv4 destination = 0;
  uint16_t source_port = 0;
  uint16_t destination_port = 0;
  uint8_t ttl = kDefaultTtl;
  uint8_t ecn = kEcnNotCapable;
};

// Writes the Ethernet, IPv4 and UDP headers (kUdp4Lead bytes) of a frame
// whose UDP payload is `payload_length` bytes (at most 65507).  The IPv4
// header is checksummed and says "don't fragment"; the UDP checksum is 0
// (none: RFC 768 lets IPv4 omit it, and our own CRC covers the payload).
// With `header_checksum_by_device` the IPv4 checksum is left 0 for the
// device to write (RTE_MBUF_F_TX_IP_CKSUM).
void encode_udp4(uint8_t* out, const uint8_t dst_mac[6], const uint8_t src_mac[6],
                 const Udp4Addresses& addresses, size_t payload_length,
                 bool header_checksum_by_device = false);

// The ones'-complement checksum of an IPv4 header (or an ICMP message):
// over `length` bytes, the checksum field included; a correct one sums to 0.
uint16_t internet_checksum(const uint8_t* bytes, size_t length);

enum class Ipv4Result : uint8_t {
  kOk,
  kNotIpv4,      // another EtherType
  kMalformed,    // too short, not version 4, lengths that disagree
  kBadChecksum,  // the IPv4 header's
  kFragment,     // we send none, and take none
};

// An IPv4 packet in an Ethernet frame, checked: its header's length and
// checksum, its total length within the frame (Ethernet may pad), no
// fragment.  payload is what follows the header (options skipped).
struct Ipv4Packet {
  Ipv4 source = 0;
  Ipv4 destination = 0;
  uint8_t protocol = 0;
  uint8_t ttl = 0;
  uint8_t ecn = 0;  // the header's ECN field
  const uint8_t* header = nullptr;
  size_t header_length = 0;
  const uint8_t* payload = nullptr;
  size_t payload_length = 0;
};
// `header_checked`: the device verified the header's checksum
// (RTE_MBUF_F_RX_IP_CKSUM_GOOD), so it is not summed again.
Ipv4Result parse_ipv4_packet(const uint8_t* frame, size_t length, Ipv4Packet* out,
                             bool header_checked = false);

// A UDP datagram in `packet` (protocol 17): its ports and payload, whose
// length the UDP header gives and must fit.  False when it does not.  The
// UDP checksum is not checked: ours covers our header and payload.
struct UdpDatagram {
  uint16_t source_port = 0;
  uint16_t destination_port = 0;
  const uint8_t* payload = nullptr;
  size_t payload_length = 0;
};
bool parse_udp(const Ipv4Packet& packet, UdpDatagram* out);

}  // namespace ofi_dpdk::ip
