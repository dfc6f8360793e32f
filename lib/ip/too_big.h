// too_big.h: a router's word that one of our packets did not fit its next
// link, for path MTU discovery: ICMP "fragmentation needed" (RFC 1191,
// type 3 code 4, to packets sent with DF) and ICMPv6 "packet too big"
// (RFC 8201, type 2).  Both quote the start of the packet that did not
// fit, whose UDP payload names the connection it belonged to.  Pure byte
// work: no DPDK, no state.
#pragma once

#include <cstddef>
#include <cstdint>

#include "lib/ip/icmp6.h"
#include "lib/ip/udp4.h"

namespace ofi_dpdk::ip {

struct TooBig {
  // The MTU of the link the packet did not fit, as the router says (an
  // IPv4 router from before RFC 1191 says 0: not taken).
  uint32_t mtu = 0;
  // The quoted packet's addresses (IPv4 ones mapped) and UDP ports.
  Ipv6 source;
  Ipv6 destination;
  uint16_t source_port = 0;
  uint16_t destination_port = 0;
  // The quoted UDP payload: as much of it as the router kept.
  const uint8_t* quoted = nullptr;
  size_t quoted_length = 0;
};

// The ICMP message in `packet` (protocol 1) if it is a whole, correctly
// summed "fragmentation needed" with a next-hop MTU that quotes a UDP
// packet (its IPv4 header and at least its UDP header); false otherwise.
bool parse_fragmentation_needed(const Ipv4Packet& packet, TooBig* out);

// The ICMPv6 message in `packet` (next header 58) if it is a whole,
// correctly summed "packet too big" that quotes a UDP packet (its IPv6
// header, no extension header, and at least its UDP header); false
// otherwise.
bool parse_packet_too_big(const Ipv6Packet& packet, TooBig* out);

}  // namespace ofi_dpdk::ip
