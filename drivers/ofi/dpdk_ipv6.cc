// dpdk_ipv6.cc: a port's IPv6 address.  A port with one (FI_DPDK_PORT_ADDR,
// or the kernel's global address on its interface) answers neighbour
// solicitations for it (RFC 4861: IPv6's ARP), so that routers and hosts
// on its link can reach it, and echo requests to it, so that `ping`
// diagnoses it.  No peer is reached by IPv6 yet: the data path is UDP/IPv4
// (dpdk_udp.cc) or our EtherType.  The frames are in lib/ip/icmp6.h.
#include <rte_mbuf.h>

#include <cstring>

#include "drivers/net/mbuf_handoff.h"
#include "drivers/ofi/dpdk_prov.h"
#include "lib/ip/icmp6.h"

namespace ofi_dpdk::ofi {

bool PortContext::send_built(size_t capacity, const std::function<size_t(uint8_t*)>& build) {
  rte_mbuf* frame = port->alloc_frame();
  if (frame == nullptr) return false;
  auto* bytes = reinterpret_cast<uint8_t*>(rte_pktmbuf_append(frame, static_cast<uint16_t>(capacity)));
  const size_t length = bytes == nullptr ? 0 : build(bytes);
  if (length != 0) {
    rte_pktmbuf_trim(frame, static_cast<uint16_t>(capacity - length));
    if (transmit(0, &frame, 1) == 1) return true;
  }
  net::free_frame(frame);
  return false;
}

void PortContext::receive_ipv6(rte_mbuf* frame, uint64_t now) {
  const auto* bytes = rte_pktmbuf_mtod(frame, const uint8_t*);
  const size_t length = rte_pktmbuf_data_len(frame);
  ip::Ipv6Packet packet;
  if (!interface6 || ip::parse_ipv6_packet(bytes, length, &packet) != ip::Ipv6Result::kOk ||
      packet.next_header != ip::kNextHeaderIcmp6) {
    ++rx_not_ours;  // UDP/IPv6 is not built yet
    return;
  }
  // To our MAC, or to the group where solicitations for our address go.
  uint8_t group_mac[6];
  ip::multicast_mac(ip::solicited_node(interface6->address), group_mac);
  const bool to_us = std::memcmp(bytes, port->mac(), 6) == 0;
  if (!to_us && std::memcmp(bytes, group_mac, 6) != 0) {
    ++rx_not_ours;
    return;
  }
  ip::NeighbourMessage message;
  if (ip::parse_neighbour_message(packet, &message)) {
    // A solicitation for our address from a sender that is not a group:
    // the advertisement goes back to it.  (Advertisements are for the
    // resolution of next hops, which IPv6 does not do yet.)
    if (message.kind != ip::NeighbourMessage::Kind::kSolicitation ||
        message.target != interface6->address || (bytes[6] & 1) != 0 ||
        (message.has_link_address && (message.link_address[0] & 1) != 0)) {
      ++neighbour_messages_ignored;
      return;
    }
    if (send_built(ip::kNeighbourFrameSize, [&](uint8_t* out) {
          ip::build_neighbour_advertisement(message, bytes + 6, port->mac(), out);
          return ip::kNeighbourFrameSize;
        }))
      ++neighbour_solicitations_answered;
    return;
  }
  // An echo request to our address, from a unicast sender: answered to
  // the MAC it came from (the router, for a sender beyond it).
  if (!to_us || packet.destination != interface6->address || (bytes[6] & 1) != 0 ||
      !interface6->unicast(packet.source) || packet.source == interface6->address) {
    ++rx_not_ours;
    return;
  }
  if (!echo_allowed(now)) return;
  if (send_built(length, [&](uint8_t* out) {
        return ip::build_echo6_reply(bytes, packet, port->mac(), out, length);
      }))
    ++echo6_requests_answered;
}

}  // namespace ofi_dpdk::ofi
