// dpdk_ipv6.cc: a port's IPv6 address.  A port with one (FI_DPDK_PORT_ADDR,
// or the kernel's global address on its interface) answers neighbour
// solicitations for it (RFC 4861: IPv6's ARP), so that routers and hosts
// on its link can reach it, and echo requests to it, so that `ping`
// diagnoses it.  With FI_DPDK_ENCAP=udp its endpoints reach peers named by
// IPv6 address in UDP/IPv6 (the frames are UDP/IPv4's with an IPv6 header
// and the UDP checksum IPv6 requires): route_udp6 addresses them, asking
// neighbour discovery for the next hop (the frames wait in dpdk_udp.cc),
// and receive_ipv6 delivers what arrives.  The frames are in lib/ip.
#include <rte_mbuf.h>

#include <cstring>
#include <mutex>

#include "drivers/net/mbuf_handoff.h"
#include "drivers/ofi/dpdk_ipv6_peers.h"
#include "drivers/ofi/dpdk_limits.h"
#include "drivers/ofi/dpdk_port.h"
#include "lib/ip/icmp6.h"
#include "lib/ip/neighbour_rules.h"

namespace ofi_dpdk::ofi {
namespace {

struct PeerRegistry {
  std::mutex lock;
  ip::Ipv6Peers peers{ip::Ipv6Peers::kDefaultStrangerCapacity, params().ipv6_peers,
                      ip::Ipv6Peers::kMaxConnected};
};

PeerRegistry& registry() {
  static PeerRegistry* const instance = new PeerRegistry;  // never destroyed: ports outlive exit
  return *instance;
}

}  // namespace

bool ipv6_peer_id(const ip::Ipv6& address, bool pinned, uint8_t id[6]) {
  PeerRegistry& r = registry();
  std::lock_guard guard(r.lock);
  return r.peers.id_of(address, pinned, id);
}

bool hold_ipv6_peer(const uint8_t id[6], ip::Ipv6Peers::Use use) {
  PeerRegistry& r = registry();
  std::lock_guard guard(r.lock);
  return r.peers.hold(id, use);
}

void release_ipv6_peer(const uint8_t id[6], ip::Ipv6Peers::Use use) {
  PeerRegistry& r = registry();
  std::lock_guard guard(r.lock);
  r.peers.release(id, use);
}

Ipv6PeerCounts ipv6_peer_counts() {
  PeerRegistry& r = registry();
  std::lock_guard guard(r.lock);
  return {r.peers.pinned(), r.peers.connected(), r.peers.strangers(), r.peers.evictions()};
}

bool find_ipv6_peer_id(const ip::Ipv6& address, uint8_t id[6]) {
  PeerRegistry& r = registry();
  std::lock_guard guard(r.lock);
  return r.peers.find_id(address, id);
}

std::optional<ip::Ipv6> ipv6_of_peer_id(const uint8_t id[6]) {
  if (!ip::is_ipv6_peer_id(id)) return std::nullopt;
  PeerRegistry& r = registry();
  std::lock_guard guard(r.lock);
  return r.peers.address_of(id);
}

void PortContext::solicit_neighbour(const ip::Ipv6& target, uint64_t now) {
  if (interface6 && neighbours6.expect(target, now)) send_solicitation(target);
}

void PortContext::send_solicitation(const ip::Ipv6& target) {
  send_built(ip::kNeighbourFrameSize, [&](uint8_t* out) {
    ip::build_neighbour_solicitation(port->mac(), interface6->address, target, out);
    return ip::kNeighbourFrameSize;
  });
}

PortContext::Route PortContext::route_udp6(uint8_t* frame, const uint8_t peer[6],
                                           uint16_t source_port, uint16_t dst_queue,
                                           size_t udp_payload, uint64_t now, ip::Ipv6* next_hop,
                                           uint64_t* tx_offloads) {
  const auto destination = ipv6_of_peer_id(peer);
  // A peer id the table let go (a stranger's, evicted), or a queue no
  // endpoint has: as if off every route.
  if (!destination || !udp6 || dst_queue >= kMaxEndpointsPerPort) return Route::kUnreachable;
  ip::Udp6Addresses addresses;
  addresses.source = interface6->address;
  addresses.destination = *destination;
  addresses.source_port = source_port;
  addresses.destination_port = static_cast<uint16_t>(params().port_base + dst_queue);
  addresses.ecn = params().ecn.value_or(true) ? ip::kEcnCapable0 : ip::kEcnNotCapable;
  uint8_t mac[6] = {};
  Route route = Route::kSend;
  if (*destination == interface6->address) {
    std::memcpy(mac, port->mac(), 6);
    route = Route::kLoopBack;
  } else {
    *next_hop = interface6->next_hop(*destination);
    if (next_hop->unspecified()) return Route::kUnreachable;
    bool refresh_due = false;
    if (!neighbours6.find(*next_hop, now, mac, &refresh_due)) {
      route = Route::kWait;  // wait_for_neighbour asks
    } else if (refresh_due &&
               !neighbours6.asked_since(*next_hop, now - std::min(now, kArpRetryMs * 1'000'000))) {
      solicit_neighbour(*next_hop, now);
      ++neighbour_refreshes;
    }
  }
  // The checksum IPv6 requires is a pass over the datagram, which a device
  // that offers it makes instead (a frame that loops back never meets it).
  const bool by_device = route != Route::kLoopBack && port->checksum_offloads().tx_udp;
  ip::encode_udp6(frame, mac, port->mac(), addresses, udp_payload, by_device);
  if (by_device) *tx_offloads = RTE_MBUF_F_TX_IPV6 | RTE_MBUF_F_TX_UDP_CKSUM;
  return route;
}

namespace {

// A neighbour discovery message (receive_ipv6), heard as take_arp hears
// ARP; `to_us`: its frame went to our MAC.  Lock held.
void take_neighbour_message(PortContext& ctx, const ip::NeighbourMessage& message,
                            const uint8_t* frame, bool to_us, uint64_t now) {
  net::Port* const port = ctx.port.get();
  const ip::Interface6& interface6 = *ctx.interface6;
  ip::Neighbour6Table& neighbours6 = ctx.neighbours6;
  const uint8_t* frame_source = frame + 6;
  const bool advertisement = message.kind == ip::NeighbourMessage::Kind::kAdvertisement;
  // An advertisement only to our MAC, a solicitation only for our address,
  // neither our own frame seen again.
  if (std::memcmp(frame_source, port->mac(), 6) == 0 ||
      (advertisement ? !to_us : message.target != interface6.address)) {
    ++ctx.neighbour_messages_ignored;
    return;
  }
  const auto answer = [&] {
    if (ctx.send_built(ip::kNeighbourFrameSize, [&](uint8_t* out) {
          ip::build_neighbour_advertisement(message, frame_source, port->mac(), out);
          return ip::kNeighbourFrameSize;
        }))
      ++ctx.neighbour_solicitations_answered;
  };
  if (!advertisement && message.source.unspecified()) {
    // Another node checking for a duplicate of our address: told it is
    // ours (to all nodes); it teaches nothing.
    if (ip::station_mac(frame_source))
      answer();
    else
      ++ctx.neighbour_messages_ignored;
    return;
  }
  // Heard only from a station on the link whose frame carries the MAC it
  // claims, and only as the answer to a question of ours, as ARP
  // (lib/ip/neighbour_table.h).
  if (const auto refusal = ip::refuse_neighbour_claim(message, frame_source, interface6)) {
    neighbours6.refuse(*refusal);
    return;
  }
  const ip::NeighbourClaim claim = ip::neighbour_claim(message, frame_source);
  ip::Verdict verdict;
  if (advertisement) {
    verdict = neighbours6.take_answer(claim.address, claim.mac, now);
  } else {
    // Answered whatever it claims; a solicitor we do not know is asked
    // back, one that disagrees with a live entry asked again.
    answer();
    bool ask_now = false;
    verdict = neighbours6.take_request(claim.address, claim.mac, now, &ask_now);
    if (ask_now) ctx.send_solicitation(claim.address);
  }
  if (verdict == ip::Verdict::kLearned && !ctx.waiting_frames.empty())
    ctx.send_waiting(claim.address, claim.mac);
}

}  // namespace

PortContext::Ipv6Frame PortContext::take_ipv6_neighbour(const uint8_t* bytes, size_t length,
                                                        uint64_t now, ip::Ipv6Packet* packet,
                                                        bool* to_us) {
  if (!interface6 || ip::parse_ipv6_packet(bytes, length, packet) != ip::Ipv6Result::kOk)
    return Ipv6Frame::kNotOurs;
  // To our MAC, or to the group where solicitations for our address go.
  uint8_t group_mac[6];
  ip::multicast_mac(ip::solicited_node(interface6->address), group_mac);
  *to_us = std::memcmp(bytes, port->mac(), 6) == 0;
  if (!*to_us && std::memcmp(bytes, group_mac, 6) != 0) return Ipv6Frame::kNotOurs;
  ip::NeighbourMessage message;
  if (packet->next_header == ip::kNextHeaderIcmp6 &&
      ip::parse_neighbour_message(*packet, &message)) {
    take_neighbour_message(*this, message, bytes, *to_us, now);
    return Ipv6Frame::kNeighbour;
  }
  return Ipv6Frame::kOther;
}

void PortContext::receive_ipv6(rte_mbuf* frame, uint64_t now, uint16_t polled_queue) {
  const auto* bytes = rte_pktmbuf_mtod(frame, const uint8_t*);
  const size_t length = rte_pktmbuf_data_len(frame);
  ip::Ipv6Packet packet;
  bool to_us = false;
  const Ipv6Frame kind = take_ipv6_neighbour(bytes, length, now, &packet, &to_us);
  if (kind == Ipv6Frame::kNotOurs) ++rx_not_ours;
  if (kind != Ipv6Frame::kOther) return;
  // The rest is to our address alone, from a unicast sender (our own
  // address only from our own MAC: a frame looped back).
  if (!to_us || packet.destination != interface6->address || (bytes[6] & 1) != 0 ||
      !interface6->unicast(packet.source) ||
      (packet.source == interface6->address && std::memcmp(bytes + 6, port->mac(), 6) != 0)) {
    ++rx_not_ours;
    return;
  }
  if (packet.next_header == ip::kNextHeaderIcmp6) {
    if (ip::TooBig word; ip::parse_packet_too_big(packet, &word)) {
      on_too_big(word, now);
      return;
    }
    // An echo request: answered to the MAC it came from (the router, for
    // a sender beyond it).
    if (!echo_allowed(now)) return;
    if (send_built(length, [&](uint8_t* out) {
          return ip::build_echo6_reply(bytes, packet, port->mac(), out, length);
        }))
      ++echo6_requests_answered;
    else
      ++rx_not_ours;
    return;
  }
  ip::UdpDatagram datagram;
  proto::DecodedFrame decoded;
  // GOOD: the device checked the checksum; NONE: it verified the data,
  // whose checksum field still holds the pseudo-header's sum alone (a
  // virtio peer whose device was to finish it: QEMU hands the datagram on
  // unfinished).  A datagram the device found bad is summed again, and
  // found bad.
  const uint64_t l4_flags = frame->ol_flags & RTE_MBUF_F_RX_L4_CKSUM_MASK;
  const bool checksum_checked =
      l4_flags == RTE_MBUF_F_RX_L4_CKSUM_GOOD || l4_flags == RTE_MBUF_F_RX_L4_CKSUM_NONE;
  if (!udp6 || !ip::parse_udp6(packet, &datagram, checksum_checked)) {
    ++rx_not_ours;
    return;
  }
  // Checked whole before it costs a place in the peer table.
  if (!take_datagram(datagram, &decoded)) return;
  decoded.congestion_experienced = packet.ecn == ip::kEcnCongestionExperienced;
  if (!ipv6_peer_id(packet.source, false, decoded.src_mac)) {
    ++rx_strangers_not_named;
    return;
  }
  ++rx_udp6;
  if (checksum_checked) ++rx_udp6_checked_by_device;
  deliver(decoded, frame, now, polled_queue);
}

}  // namespace ofi_dpdk::ofi
