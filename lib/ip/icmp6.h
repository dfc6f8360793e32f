// icmp6.h: the ICMPv6 a port with an IPv6 address takes part in: neighbour
// discovery (RFC 4861: solicitations and advertisements, IPv6's ARP) and
// echo (RFC 4443, so that `ping` reaches the port).  Pure byte work: no
// DPDK, no state.
#pragma once

#include <cstddef>
#include <cstdint>

#include "lib/ip/udp6.h"

namespace ofi_dpdk::ip {

// Neighbour discovery's hop limit: a message that arrives with less came
// through a router, and is not taken (RFC 4861 section 7.1).
inline constexpr uint8_t kNeighbourHopLimit = 255;
// What build_neighbour_solicitation and build_neighbour_advertisement
// write: Ethernet, IPv6, the 24-byte message and one 8-byte link-layer
// address option.
inline constexpr size_t kNeighbourFrameSize = kEthernetHeaderSize + kIpv6HeaderSize + 24 + 8;

struct NeighbourMessage {
  enum class Kind : uint8_t { kSolicitation, kAdvertisement } kind = Kind::kSolicitation;
  Ipv6 source;       // the IPv6 source (:: in duplicate address detection)
  Ipv6 destination;  // the IPv6 destination
  Ipv6 target;       // whose link address is asked for, or told
  // A solicitation's source link-layer option, an advertisement's target
  // link-layer option, if it has one.
  bool has_link_address = false;
  uint8_t link_address[6] = {};
  bool solicited = false;  // an advertisement's S flag: it answers a solicitation
  bool override = false;   // its O flag: it replaces a cached link address
};

// A solicitation for `target` from (mac, source): to target's
// solicited-node group, with our link address.
void build_neighbour_solicitation(const uint8_t mac[6], const Ipv6& source, const Ipv6& target,
                                  uint8_t out[kNeighbourFrameSize]);
// The same to `target` itself at `target_mac` (RFC 4861 7.2.2's unicast
// solicitation: confirming a neighbour whose link address we hold).
void build_unicast_solicitation(const uint8_t mac[6], const Ipv6& source, const Ipv6& target,
                                const uint8_t target_mac[6], uint8_t out[kNeighbourFrameSize]);
// The advertisement that answers `solicitation` for our address (its
// target), from `mac`: to its sender (frame_source, its Ethernet source),
// or to all nodes (ff02::1) when it came from :: (another node checking
// for a duplicate of our address).
void build_neighbour_advertisement(const NeighbourMessage& solicitation,
                                   const uint8_t frame_source[6], const uint8_t mac[6],
                                   uint8_t out[kNeighbourFrameSize]);

// The neighbour discovery message in `packet`, checked as RFC 4861
// sections 7.1.1 and 7.1.2 ask: hop limit 255, code 0, its ICMPv6
// checksum, its length, a unicast target, options none of which is empty,
// and for a solicitation from ::, a solicited-node destination and no
// link-layer option; an advertisement to a group must not say solicited.
// False for anything else (other ICMPv6 types among them).
bool parse_neighbour_message(const Ipv6Packet& packet, NeighbourMessage* out);

// The reply to an echo request: `frame` is the request's Ethernet frame
// and `packet` its parsed IPv6 packet, addressed to us.  Writes the reply
// frame to `out` (room for `capacity` bytes; the request's length is
// always enough) back to the request's sender MAC, from `our_mac`, and
// returns its length.  0, nothing written, for anything but a whole echo
// request with a correct checksum.
size_t build_echo6_reply(const uint8_t* frame, const Ipv6Packet& packet, const uint8_t our_mac[6],
                         uint8_t* out, size_t capacity);

}  // namespace ofi_dpdk::ip
