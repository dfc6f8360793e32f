// framer_transmit.cc: a segment's frame, built (framer.h).  A peer named
// by MAC gets Ethernet with our EtherType before our header; a peer named
// by IP address (a peer id, on a port with FI_DPDK_ENCAP=udp) gets
// Ethernet, IPv4 or IPv6 and UDP to port_base + its queue, through the
// gateway when it is off the subnet, and waits for its next hop's MAC
// (framer_neighbours.cc) when the table has none yet.  The frame is sealed
// as the payload is copied in (one pass over it), keyed with the job key,
// or marked unsealed where the port cannot corrupt.
#include <rte_mbuf.h>

#include <algorithm>
#include <cstring>

#include "drivers/frames/framer.h"
#include "drivers/frames/ipv6_peer_ids.h"
#include "drivers/net/lent_payload.h"
#include "drivers/net/mbuf_handoff.h"
#include "lib/ip/rss.h"

namespace ofi_dpdk::frames {
namespace {

// Frames that answer a sender we may know nothing of: a HELLO's answer, a
// RESET.
bool answers_a_stranger(const wire::FrameHeader& header) {
  return header.opcode == static_cast<uint8_t>(wire::Opcode::kHelloAck) ||
         header.opcode == static_cast<uint8_t>(wire::Opcode::kReset);
}

}  // namespace

Framer::Built Framer::build_other(rte_mbuf* mbuf, const proto::OutFrame& frame, uint16_t hw_queue,
                                  uint16_t tx_queue, uint64_t& now, bool* lent_used) {
  const size_t ours = sizeof(wire::FrameHeader) + frame.header.payload_len;
  if (in_udp(frame.dst_mac)) {
    const size_t lead = ip::is_ipv6_peer_id(frame.dst_mac) ? ip::kUdp6Lead : ip::kUdp4Lead;
    auto* bytes =
        reinterpret_cast<uint8_t*>(rte_pktmbuf_append(mbuf, static_cast<uint16_t>(lead + ours)));
    if (bytes == nullptr) return Built::kDropped;
    return build_udp(mbuf, bytes, frame, ours, tx_queue, now);
  }
  // A raw frame to another station on a device that copies it at
  // transmit: the device's copy is the only one.
  const bool to_us = same_mac(frame.dst_mac, port_.mac());
  rte_mbuf* lent = nullptr;
  if (!to_us) {
    if (const uint8_t* piece = frame.payload_in_one_piece()) {
      lent = port_.alloc_frame(hw_queue);
      if (lent != nullptr) net::lend_payload(lent, piece, frame.header.payload_len);
    }
  }
  const size_t in_frame = lent != nullptr ? sizeof(wire::FrameHeader) : ours;
  auto* bytes = reinterpret_cast<uint8_t*>(
      rte_pktmbuf_append(mbuf, static_cast<uint16_t>(sizeof(wire::EtherHeader) + in_frame)));
  if (bytes == nullptr) {
    if (lent != nullptr) net::free_frame(lent);
    return Built::kDropped;
  }
  proto::encode_headers(bytes, frame.dst_mac, port_.mac(), port_.ether_type(), frame.header);
  if (lent != nullptr) {
    proto::mark_unsealed(bytes);
    rte_pktmbuf_chain(mbuf, lent);  // (two segments: cannot overflow)
    *lent_used = true;
  } else {
    seal_ethernet(bytes, frame);
  }
  return !loops_back && to_us ? Built::kLoopBack : Built::kSend;
}

Framer::Built Framer::build_udp(rte_mbuf* mbuf, uint8_t* bytes, const proto::OutFrame& frame,
                                size_t ours, uint16_t tx_queue, uint64_t& now) {
  uint8_t* header = bytes + (ip::is_ipv6_peer_id(frame.dst_mac) ? ip::kUdp6Lead : ip::kUdp4Lead);
  uint8_t* payload = header + sizeof(wire::FrameHeader);
  proto::encode_header(header, frame.header);
  if (frame_key) {
    frame.copy_payload(payload);
    proto::seal_keyed_udp(header, ours, *frame_key);
  } else if (checksums) {
    proto::finish_seal_udp(header, frame.copy_payload(payload, proto::begin_seal_udp(header)));
  } else {
    frame.copy_payload(payload);
    proto::mark_unsealed_udp(header);
  }
  if (now == 0) now = settings_.clock_ns();
  ip::Ipv6 next_hop;
  // The port the peer's RSS wants (its HELLO_ACK said), else the path's.
  const uint16_t source_port =
      frame.source_port != 0
          ? frame.source_port
          : ip::flow_source_port(frame.header.src_queue, frame.header.dst_queue, frame.path);
  uint64_t tx_offloads = 0;
  const Route route = route_udp(bytes, frame.dst_mac, source_port, frame.header.dst_queue, ours,
                                now, &next_hop, &tx_offloads);
  if (tx_offloads != 0) {
    mbuf->ol_flags |= tx_offloads;
    mbuf->l2_len = sizeof(wire::EtherHeader);
    mbuf->l3_len = (tx_offloads & RTE_MBUF_F_TX_IPV6) ? ip::kIpv6HeaderSize : ip::kIpv4HeaderSize;
  }
  switch (route) {
    case Route::kSend:
      // No answer in time: perhaps the peer cannot reach us (it lost or
      // never learned our MAC); asking for it shows it ours.
      if (frame.unanswered) confirm_next_hop(next_hop, bytes, now);
      return Built::kSend;
    case Route::kWait:
      // An answer to a sender we know nothing of (a HELLO's, a RESET)
      // starts no resolution on the subnet, which strangers could fill
      // with made-up sources: a real neighbour asked for us (ARP,
      // neighbour discovery), and we are asking it back.  The gateway we
      // may have to ask for ourselves (the router may know us from the
      // kernel's traffic, and never ask).
      if ((!answers_a_stranger(frame.header) || is_gateway(next_hop) ||
           asking_for(next_hop, now)) &&
          wait_for_neighbour(next_hop, mbuf, tx_queue, now))
        return Built::kHeld;
      return Built::kDropped;
    case Route::kUnreachable:
      return Built::kDropped;
    case Route::kLoopBack:
      return loops_back ? Built::kSend : Built::kLoopBack;
  }
  return Built::kDropped;
}

Framer::Route Framer::route_udp(uint8_t* frame, const uint8_t peer[6], uint16_t source_port,
                                uint16_t dst_queue, size_t udp_payload, uint64_t now,
                                ip::Ipv6* next_hop, uint64_t* tx_offloads) {
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
  addresses.destination_port = static_cast<uint16_t>(settings_.port_base + dst_queue);
  addresses.ecn = settings_.ecn ? ip::kEcnCapable0 : ip::kEcnNotCapable;
  // Only an endpoint's port, at a unicast address: a RESET answers the
  // queue a frame named, which a stranger chooses.
  if (dst_queue >= settings_.queues || !interface->unicast(addresses.destination))
    return Route::kUnreachable;
  uint8_t mac[6] = {};
  Route route = Route::kSend;
  if (addresses.destination == interface->address) {
    std::memcpy(mac, port_.mac(), 6);
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
  const bool by_device = route != Route::kLoopBack && port_.checksum_offloads().tx_ipv4_header;
  ip::encode_udp4(frame, mac, port_.mac(), addresses, udp_payload, by_device);
  if (by_device) *tx_offloads = RTE_MBUF_F_TX_IPV4 | RTE_MBUF_F_TX_IP_CKSUM;
  return route;
}

Framer::Route Framer::route_udp6(uint8_t* frame, const uint8_t peer[6], uint16_t source_port,
                                 uint16_t dst_queue, size_t udp_payload, uint64_t now,
                                 ip::Ipv6* next_hop, uint64_t* tx_offloads) {
  const auto destination = ipv6_of_peer_id(peer);
  // A peer id the table let go (a stranger's, evicted), or a queue no
  // endpoint has: as if off every route.
  if (!destination || !udp6 || dst_queue >= settings_.queues) return Route::kUnreachable;
  ip::Udp6Addresses addresses;
  addresses.source = interface6->address;
  addresses.destination = *destination;
  addresses.source_port = source_port;
  addresses.destination_port = static_cast<uint16_t>(settings_.port_base + dst_queue);
  addresses.ecn = settings_.ecn ? ip::kEcnCapable0 : ip::kEcnNotCapable;
  uint8_t mac[6] = {};
  Route route = Route::kSend;
  if (*destination == interface6->address) {
    std::memcpy(mac, port_.mac(), 6);
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
  const bool by_device = route != Route::kLoopBack && port_.checksum_offloads().tx_udp;
  ip::encode_udp6(frame, mac, port_.mac(), addresses, udp_payload, by_device);
  if (by_device) *tx_offloads = RTE_MBUF_F_TX_IPV6 | RTE_MBUF_F_TX_UDP_CKSUM;
  return route;
}

size_t Framer::reaching_ports(const uint8_t* link, uint16_t peer_queue, uint16_t queue,
                              uint16_t hw_queue, std::span<uint16_t> out) const {
  if (port_.steering() != net::Steering::kRss || !in_udp(link)) return 0;
  const ip::RssConfig& rss = port_.rss();
  const auto destination_port = static_cast<uint16_t>(settings_.port_base + queue);
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

ip::Ipv6 Framer::next_hop_of(const uint8_t link[6]) const {
  if (udp && ip::is_peer_id(link)) {
    const ip::Ipv4 hop = interface->next_hop(ip::address_of_peer_id(link));
    return hop == 0 ? ip::Ipv6{} : ip::mapped_ipv4(hop);
  }
  if (udp6 && ip::is_ipv6_peer_id(link)) {
    if (const auto address = ipv6_of_peer_id(link)) return interface6->next_hop(*address);
  }
  return {};
}

bool Framer::is_gateway(const ip::Ipv6& next_hop) const {
  if (next_hop.v4_mapped())
    return interface && interface->gateway != 0 &&
           ip::ipv4_of_mapped(next_hop) == interface->gateway;
  return interface6 && !interface6->gateway.unspecified() && next_hop == interface6->gateway;
}

}  // namespace ofi_dpdk::frames
