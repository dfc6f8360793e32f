// dpdk_udp.cc: frames in UDP/IPv4 and UDP/IPv6 (FI_DPDK_ENCAP=udp, the
// default on a port with an address).  A peer named by IP address is
// reached in UDP to port_base + its queue, through the gateway when it is
// off the subnet; the next hop's MAC comes from ARP (dpdk_neighbours.cc)
// or neighbour discovery (dpdk_ipv6.cc), and frames wait for it here.
// Received IPv4 frames come here from receive(): UDP to one of our
// endpoints' ports is our header and payload; an echo request is
// answered.  (IPv6 ones go to dpdk_ipv6.cc.)  The wire format is in
// doc/wire-protocol.md.
#include <rte_mbuf.h>

#include <algorithm>
#include <cstring>

#include "drivers/net/mbuf_handoff.h"
#include "drivers/ofi/dpdk_clock.h"
#include "drivers/ofi/dpdk_ipv6_peers.h"
#include "drivers/ofi/dpdk_limits.h"
#include "drivers/ofi/dpdk_log.h"
#include "drivers/ofi/dpdk_port.h"
#include "lib/ip/arp.h"
#include "lib/ip/icmp.h"

namespace ofi_dpdk::ofi {

PortContext::Route PortContext::route_udp(uint8_t* frame, const uint8_t peer[6],
                                          uint16_t source_port, uint16_t dst_queue,
                                          size_t udp_payload, uint64_t now, ip::Ipv6* next_hop,
                                          uint64_t* tx_offloads) {
  *tx_offloads = 0;
  if (ip::is_ipv6_peer_id(peer))
    return route_udp6(frame, peer, source_port, dst_queue, udp_payload, now, next_hop, tx_offloads);
  ip::Udp4Addresses addresses;
  addresses.source = interface->address;
  addresses.destination = ip::address_of_peer_id(peer);
  // One UDP port per queue: a NIC can steer each endpoint's frames to its
  // queue by destination port.  The source port is the path's entropy, or
  // one the peer's RSS steers to its queue.
  addresses.source_port = source_port;
  addresses.destination_port = static_cast<uint16_t>(params().port_base + dst_queue);
  addresses.ecn = params().ecn.value_or(true) ? ip::kEcnCapable0 : ip::kEcnNotCapable;
  // Only an endpoint's port, at a unicast address: a RESET answers the
  // queue a frame named, which a stranger chooses.
  if (dst_queue >= kMaxEndpointsPerPort || !interface->unicast(addresses.destination))
    return Route::kUnreachable;
  uint8_t mac[6] = {};
  Route route = Route::kSend;
  if (addresses.destination == interface->address) {
    std::memcpy(mac, port->mac(), 6);
    route = Route::kLoopBack;
  } else {
    const ip::Ipv4 hop = interface->next_hop(addresses.destination);
    if (hop == 0) return Route::kUnreachable;
    *next_hop = ip::mapped_ipv4(hop);
    bool refresh_due = false;
    if (!neighbours.find(hop, now, mac, &refresh_due)) {
      route = Route::kWait;  // wait_for_neighbour asks
    } else if (refresh_due &&
               !neighbours.asked_since(hop, now - std::min(now, kArpRetryMs * 1'000'000))) {
      // Each next hop at its own pace: one refresh a port would share
      // lets entries lapse where many are in use.
      ask_neighbour_now(hop, now);
      ++neighbour_refreshes;
    }
  }
  // A frame that loops back never meets the device.
  const bool by_device = route != Route::kLoopBack && port->checksum_offloads().tx_ipv4_header;
  ip::encode_udp4(frame, mac, port->mac(), addresses, udp_payload, by_device);
  if (by_device) *tx_offloads = RTE_MBUF_F_TX_IPV4 | RTE_MBUF_F_TX_IP_CKSUM;
  return route;
}

size_t PortContext::reaching_ports(const uint8_t* link, uint16_t peer_queue, uint16_t queue,
                                   uint16_t hw_queue, std::span<uint16_t> out) const {
  if (port->steering() != net::Steering::kRss || !in_udp(link)) return 0;
  const ip::RssConfig& rss = port->rss();
  const auto destination_port = static_cast<uint16_t>(params().port_base + queue);
  // Started where the pair's first path's port would be: each pair of
  // endpoints gets ports of its own (ECMP and per-flow limits tell them
  // apart as before).
  const uint16_t first = ip::flow_source_port(peer_queue, queue, 0);
  if (ip::is_peer_id(link))
    return ip::udp4_reaching_ports(rss, ip::address_of_peer_id(link), interface->address,
                                   destination_port, hw_queue, first, out);
  const auto address = ipv6_of_peer_id(link);
  if (!address) return 0;
  return ip::udp6_reaching_ports(rss, *address, interface6->address, destination_port, hw_queue,
                                 first, out);
}

uint32_t PortContext::path_limit(const uint8_t* link) const {
  // What the path was found to carry, if that is less.
  const uint32_t learned = learned_payload(link, now_ns());
  const uint32_t routed = routed_limit(link);
  if (learned == 0 || (routed != 0 && routed < learned)) return routed;
  return learned;
}

uint32_t PortContext::routed_limit(const uint8_t* link) const {
  const uint32_t routed_mtu = params().routed_mtu;
  if (routed_mtu == 0 || !in_udp(link)) return 0;
  if (ip::is_peer_id(link)) {
    if (interface->on_link(ip::address_of_peer_id(link))) return 0;
  } else {
    const auto address = ipv6_of_peer_id(link);
    if (!address || interface6->on_link(*address)) return 0;
  }
  return routed_mtu - static_cast<uint32_t>(encap_overhead() + sizeof(wire::FrameHeader));
}

ip::Ipv6 PortContext::next_hop_of(const uint8_t link[6]) const {
  if (udp && ip::is_peer_id(link)) {
    const ip::Ipv4 hop = interface->next_hop(ip::address_of_peer_id(link));
    return hop == 0 ? ip::Ipv6{} : ip::mapped_ipv4(hop);
  }
  if (udp6 && ip::is_ipv6_peer_id(link)) {
    if (const auto address = ipv6_of_peer_id(link)) return interface6->next_hop(*address);
  }
  return {};
}

bool PortContext::is_gateway(const ip::Ipv6& next_hop) const {
  if (next_hop.v4_mapped())
    return interface && interface->gateway != 0 &&
           ip::ipv4_of_mapped(next_hop) == interface->gateway;
  return interface6 && !interface6->gateway.unspecified() && next_hop == interface6->gateway;
}

bool PortContext::wait_for_neighbour(const ip::Ipv6& next_hop, rte_mbuf* frame, uint16_t hw_queue,
                                     uint64_t now) {
  const bool asked = std::any_of(resolving.begin(), resolving.end(),
                                 [&](const Resolving& r) { return r.next_hop == next_hop; });
  if (!asked && resolving.size() >= kMaxResolving) return false;
  if (waiting_frames.size() >= kMaxWaitingFrames) {
    net::free_frame(waiting_frames.front().frame);
    waiting_frames.pop_front();
    ++frames_not_resolved;
  }
  waiting_frames.push_back({next_hop, hw_queue, frame});
  if (!asked) {
    resolving.push_back({next_hop, now, now});
    ask_next_hop(next_hop, now);
  }
  return true;
}

void PortContext::ask_next_hop(const ip::Ipv6& next_hop, uint64_t now) {
  if (next_hop.v4_mapped())
    ask_neighbour_now(ip::ipv4_of_mapped(next_hop), now);
  else
    solicit_neighbour(next_hop, now);
}

void PortContext::confirm_next_hop(const ip::Ipv6& next_hop, const uint8_t mac[6], uint64_t now) {
  const uint64_t since = now - std::min(now, kConfirmEveryMs * 1'000'000);
  if (next_hop.v4_mapped()) {
    const ip::Ipv4 hop = ip::ipv4_of_mapped(next_hop);
    if (!interface || neighbours.heard_since(hop, since) || !neighbours.expect(hop, now)) return;
    send_built(ip::kArpFrameSize, [&](uint8_t* out) {
      ip::build_arp(ip::arp_request(port->mac(), interface->address, hop), out, mac);
      return ip::kArpFrameSize;
    });
  } else {
    if (!interface6 || neighbours6.heard_since(next_hop, since) ||
        !neighbours6.expect(next_hop, now))
      return;
    send_built(ip::kNeighbourFrameSize, [&](uint8_t* out) {
      ip::build_unicast_solicitation(port->mac(), interface6->address, next_hop, mac, out);
      return ip::kNeighbourFrameSize;
    });
  }
  ++neighbour_confirmations;
}

bool PortContext::asking_for(const ip::Ipv6& next_hop, uint64_t now) const {
  if (next_hop.v4_mapped())
    return interface && neighbours.asking(ip::ipv4_of_mapped(next_hop), now);
  return interface6 && neighbours6.asking(next_hop, now);
}

void PortContext::send_waiting(const ip::Ipv6& neighbour, const uint8_t mac[6]) {
  std::erase_if(resolving, [&](const Resolving& r) { return r.next_hop == neighbour; });
  std::erase_if(waiting_frames, [&](WaitingFrame& waiting) {
    if (waiting.next_hop != neighbour) return false;
    std::memcpy(rte_pktmbuf_mtod(waiting.frame, uint8_t*), mac, 6);
    if (transmit(waiting.hw_queue, &waiting.frame, 1) == 1) {
      ++frames_waited;
    } else {
      net::free_frame(waiting.frame);
      ++frames_not_resolved;
    }
    return true;
  });
}

void PortContext::chase_neighbours(uint64_t now) {
  // (Stamps from a flush may be a little ahead of this pass's clock.)
  auto elapsed = [now](uint64_t then) { return now > then ? now - then : 0; };
  const uint64_t give_up_ns = uint64_t{params().resolve_timeout_ms} * 1'000'000;
  std::vector<ip::Ipv6> given_up;
  std::erase_if(resolving, [&](Resolving& r) {
    if (elapsed(r.since_ns) < give_up_ns) {
      if (elapsed(r.asked_ns) >= kArpRetryMs * 1'000'000) {
        r.asked_ns = now;
        ask_next_hop(r.next_hop, now);
      }
      return false;
    }
    given_up.push_back(r.next_hop);
    return true;
  });
  for (const ip::Ipv6& dead : given_up) {
    ++next_hops_given_up;
    DPDK_INFO(FI_LOG_EP_DATA,
              "%s: %s did not answer %s within %u ms: operations to peers "
              "behind it fail with FI_EHOSTUNREACH\n",
              port->name().c_str(),
              dead.v4_mapped() ? ip::format_ipv4(ip::ipv4_of_mapped(dead)).c_str()
                               : ip::format_ipv6(dead).c_str(),
              dead.v4_mapped() ? "ARP" : "neighbour discovery", params().resolve_timeout_ms);
    std::erase_if(waiting_frames, [&](const WaitingFrame& waiting) {
      if (waiting.next_hop != dead) return false;
      net::free_frame(waiting.frame);
      ++frames_not_resolved;
      return true;
    });
    fail_peers_behind(dead);
  }
}

bool PortContext::echo_allowed(uint64_t now) {
  if (now - std::min(now, echo_window_ns) >= 1'000'000'000) {
    echo_window_ns = now;
    echoes_in_window = 0;
  }
  return echoes_in_window++ < kEchoesPerSecond;
}

void PortContext::receive_ipv4(rte_mbuf* frame, uint64_t now, uint16_t polled_queue) {
  const auto* bytes = rte_pktmbuf_mtod(frame, const uint8_t*);
  const size_t length = rte_pktmbuf_data_len(frame);
  ip::Ipv4Packet packet;
  // GOOD: the device checked the header's checksum; NONE: it verified the
  // header, whose checksum field it left unfinished (a virtio peer that
  // offloaded it).  A header the device found bad is summed again, and
  // found bad.
  const uint64_t ip_flags = frame->ol_flags & RTE_MBUF_F_RX_IP_CKSUM_MASK;
  const bool header_checked =
      ip_flags == RTE_MBUF_F_RX_IP_CKSUM_GOOD || ip_flags == RTE_MBUF_F_RX_IP_CKSUM_NONE;
  if (ip::parse_ipv4_packet(bytes, length, &packet, header_checked) != ip::Ipv4Result::kOk ||
      std::memcmp(bytes, port->mac(), 6) != 0 || packet.destination != interface->address) {
    ++rx_not_ours;
    return;
  }
  // What we answer goes back to the source: never to a group MAC or a
  // broadcast, multicast or unset address, and our own address only from
  // our own MAC (a frame looped back).
  const bool own_source = packet.source == interface->address;
  if ((bytes[6] & 1) != 0 || !interface->unicast(packet.source) ||
      (own_source && std::memcmp(bytes + 6, port->mac(), 6) != 0)) {
    ++rx_bad_frames;
    return;
  }
  if (packet.protocol == ip::kProtocolIcmp) {
    if (ip::TooBig word; ip::parse_fragmentation_needed(packet, &word)) {
      on_too_big(word, now);
      return;
    }
    if (!echo_allowed(now)) return;
    if (send_built(length, [&](uint8_t* out) {
          return ip::build_echo_reply(bytes, packet, port->mac(), out, length);
        }))
      ++echo_requests_answered;
    else
      ++rx_not_ours;
    return;
  }
  ip::UdpDatagram datagram;
  proto::DecodedFrame decoded;
  if (!udp || !ip::parse_udp(packet, &datagram)) {
    ++rx_not_ours;
    return;
  }
  if (!take_datagram(datagram, &decoded)) return;
  decoded.congestion_experienced = packet.ecn == ip::kEcnCongestionExperienced;
  ++rx_udp;
  if (header_checked) ++rx_udp_checked_by_device;
  ip::peer_id_of(packet.source, decoded.src_mac);
  deliver(decoded, frame, now, polled_queue);
}

bool PortContext::take_datagram(const ip::UdpDatagram& datagram, proto::DecodedFrame* decoded) {
  const uint16_t base = params().port_base;
  if (datagram.destination_port < base ||
      datagram.destination_port - base >= kMaxEndpointsPerPort) {
    ++rx_not_ours;
    return false;
  }
  const auto result =
      proto::decode_udp_payload(datagram.payload, datagram.payload_length, decoded, frame_check());
  if (result == proto::DecodeResult::kUnsealed) {
    warn_unsealed();
    return false;
  }
  if (refused_for_key(result)) return false;
  // The port and the header name the same queue, or a NIC's steering by
  // port would put the frame where its header says it does not belong.
  if (result != proto::DecodeResult::kOk ||
      datagram.destination_port - base != decoded->header.dst_queue) {
    ++rx_bad_frames;
    return false;
  }
  std::memcpy(decoded->dst_mac, port->mac(), 6);
  return true;
}

}  // namespace ofi_dpdk::ofi
