#include "lib/ip/icmp6.h"

#include <cstring>

#include "lib/ip/byte_order.h"

namespace ofi_dpdk::ip {
namespace {

constexpr uint8_t kEchoRequest = 128;
constexpr uint8_t kEchoReply = 129;
constexpr uint8_t kSolicitation = 135;
constexpr uint8_t kAdvertisement = 136;
constexpr uint8_t kSourceLinkAddress = 1;
constexpr uint8_t kTargetLinkAddress = 2;
constexpr size_t kNeighbourMessageSize = 24;  // type, code, checksum, flags, target
constexpr uint8_t kFlagSolicited = 0x40, kFlagOverride = 0x20;

Ipv6 all_nodes() {
  Ipv6 group;
  group.bytes = {0xFF, 0x02, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x01};
  return group;
}

// Writes Ethernet and IPv6 headers for an ICMPv6 message of `length` bytes
// and returns where the message goes.
uint8_t* icmp6_headers(uint8_t* out, const uint8_t dst_mac[6], const uint8_t src_mac[6],
                       const Ipv6& source, const Ipv6& destination, size_t length,
                       uint8_t hop_limit) {
  std::memcpy(out, dst_mac, 6);
  std::memcpy(out + 6, src_mac, 6);
  put16(out + 12, kEtherTypeIpv6);
  uint8_t* ip = out + kEthernetHeaderSize;
  ip[0] = 0x60;
  ip[1] = ip[2] = ip[3] = 0;
  put16(ip + 4, static_cast<uint16_t>(length));
  ip[6] = kNextHeaderIcmp6;
  ip[7] = hop_limit;
  std::memcpy(ip + 8, source.bytes.data(), 16);
  std::memcpy(ip + 24, destination.bytes.data(), 16);
  return ip + kIpv6HeaderSize;
}

void seal_icmp6(uint8_t* message, size_t length, const Ipv6& source, const Ipv6& destination) {
  message[2] = message[3] = 0;
  ChecksumSum sum =
      pseudo_header_sum(source, destination, static_cast<uint32_t>(length), kNextHeaderIcmp6);
  sum.add(message, length);
  put16(message + 2, sum.checksum());
}

bool sums_correctly(const Ipv6Packet& packet) {
  ChecksumSum sum =
      pseudo_header_sum(packet.source, packet.destination,
                        static_cast<uint32_t>(packet.payload_length), kNextHeaderIcmp6);
  sum.add(packet.payload, packet.payload_length);
  return sum.verifies();
}

// The neighbour message with its one link-layer option, sealed.
void neighbour_frame(uint8_t type, uint8_t flags, const Ipv6& target, uint8_t option,
                     const uint8_t dst_mac[6], const uint8_t mac[6], const Ipv6& source,
                     const Ipv6& destination, uint8_t out[kNeighbourFrameSize]) {
  constexpr size_t length = kNeighbourMessageSize + 8;
  uint8_t* message =
      icmp6_headers(out, dst_mac, mac, source, destination, length, kNeighbourHopLimit);
  std::memset(message, 0, length);
  message[0] = type;
  message[4] = flags;
  std::memcpy(message + 8, target.bytes.data(), 16);
  message[24] = option;
  message[25] = 1;  // in units of 8 bytes
  std::memcpy(message + 26, mac, 6);
  seal_icmp6(message, length, source, destination);
}

}  // namespace

void build_neighbour_solicitation(const uint8_t mac[6], const Ipv6& source, const Ipv6& target,
                                  uint8_t out[kNeighbourFrameSize]) {
  const Ipv6 group = solicited_node(target);
  uint8_t group_mac[6];
  multicast_mac(group, group_mac);
  neighbour_frame(kSolicitation, 0, target, kSourceLinkAddress, group_mac, mac, source, group, out);
}

void build_unicast_solicitation(const uint8_t mac[6], const Ipv6& source, const Ipv6& target,
                                const uint8_t target_mac[6], uint8_t out[kNeighbourFrameSize]) {
  neighbour_frame(kSolicitation, 0, target, kSourceLinkAddress, target_mac, mac, source, target,
                  out);
}

void build_neighbour_advertisement(const NeighbourMessage& solicitation,
                                   const uint8_t frame_source[6], const uint8_t mac[6],
                                   uint8_t out[kNeighbourFrameSize]) {
  if (solicitation.source.unspecified()) {
    const Ipv6 group = all_nodes();
    uint8_t group_mac[6];
    multicast_mac(group, group_mac);
    neighbour_frame(kAdvertisement, kFlagOverride, solicitation.target, kTargetLinkAddress,
                    group_mac, mac, solicitation.target, group, out);
    return;
  }
  // Its link address as its option says, else as its frame came.
  const uint8_t* to = solicitation.has_link_address ? solicitation.link_address : frame_source;
  neighbour_frame(kAdvertisement, kFlagSolicited | kFlagOverride, solicitation.target,
                  kTargetLinkAddress, to, mac, solicitation.target, solicitation.source, out);
}

bool parse_neighbour_message(const Ipv6Packet& packet, NeighbourMessage* out) {
  if (packet.next_header != kNextHeaderIcmp6 || packet.hop_limit != kNeighbourHopLimit ||
      packet.payload_length < kNeighbourMessageSize)
    return false;
  const uint8_t* message = packet.payload;
  if ((message[0] != kSolicitation && message[0] != kAdvertisement) || message[1] != 0 ||
      !sums_correctly(packet))
    return false;
  NeighbourMessage parsed;
  parsed.kind = message[0] == kSolicitation ? NeighbourMessage::Kind::kSolicitation
                                            : NeighbourMessage::Kind::kAdvertisement;
  parsed.source = packet.source;
  parsed.destination = packet.destination;
  std::memcpy(parsed.target.bytes.data(), message + 8, 16);
  if (parsed.target.multicast()) return false;
  parsed.solicited = (message[4] & kFlagSolicited) != 0;
  parsed.override = (message[4] & kFlagOverride) != 0;
  const uint8_t wanted = parsed.kind == NeighbourMessage::Kind::kSolicitation ? kSourceLinkAddress
                                                                              : kTargetLinkAddress;
  for (size_t at = kNeighbourMessageSize; at < packet.payload_length;) {
    if (packet.payload_length - at < 2) return false;
    const size_t length = size_t{message[at + 1]} * 8;
    if (length == 0 || length > packet.payload_length - at) return false;
    if (message[at] == wanted && length >= 8) {
      parsed.has_link_address = true;
      std::memcpy(parsed.link_address, message + at + 2, 6);
    }
    at += length;
  }
  if (parsed.kind == NeighbourMessage::Kind::kSolicitation && parsed.source.unspecified() &&
      (parsed.destination != solicited_node(parsed.target) || parsed.has_link_address))
    return false;
  if (parsed.kind == NeighbourMessage::Kind::kAdvertisement && parsed.destination.multicast() &&
      parsed.solicited)
    return false;
  *out = parsed;
  return true;
}

size_t build_echo6_reply(const uint8_t* frame, const Ipv6Packet& packet, const uint8_t our_mac[6],
                         uint8_t* out, size_t capacity) {
  if (packet.next_header != kNextHeaderIcmp6 || packet.payload_length < 8 ||
      packet.payload[0] != kEchoRequest || packet.payload[1] != 0 || !sums_correctly(packet))
    return 0;
  const size_t length = kEthernetHeaderSize + kIpv6HeaderSize + packet.payload_length;
  if (length > capacity) return 0;
  uint8_t* message = icmp6_headers(out, frame + 6, our_mac, packet.destination, packet.source,
                                   packet.payload_length, kDefaultHopLimit);
  std::memmove(message, packet.payload, packet.payload_length);
  message[0] = kEchoReply;
  seal_icmp6(message, packet.payload_length, packet.destination, packet.source);
  return length;
}

}  // namespace ofi_dpdk::ip
