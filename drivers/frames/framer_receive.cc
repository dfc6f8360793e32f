// framer_receive.cc: where a received frame goes (framer.h).  Our
// EtherType is decoded and checked by the codec; ARP goes to the neighbour
// table (framer_neighbours.cc); IPv4 and IPv6 are parsed here: UDP to one
// of the endpoints' ports is our header and payload, ICMP's echo requests
// are answered and its packet-too-big words go to path MTU discovery
// (framer_path_mtu.cc).  Everything else is counted as not ours.
#include <rte_mbuf.h>

#include <cstring>

#include "drivers/frames/framer.h"
#include "drivers/frames/ipv6_peer_ids.h"
#include "lib/ip/arp.h"
#include "lib/ip/icmp.h"
#include "lib/ip/icmp6.h"

namespace ofi_dpdk::frames {

bool Framer::take_other(rte_mbuf* frame, uint64_t now, proto::DecodedFrame* out,
                        proto::DecodeResult result) {
  if (result == proto::DecodeResult::kNotOurs) {
    // On a port with an IPv4 address: ARP, IPv4 (our UDP frames, ping);
    // with an IPv6 address, neighbour discovery, our UDP frames and ping.
    // Other protocols are not ours.
    const auto* bytes = rte_pktmbuf_mtod(frame, const uint8_t*);
    const uint16_t type =
        rte_pktmbuf_data_len(frame) >= 14 ? uint16_t(bytes[12] << 8 | bytes[13]) : 0;
    bool segment = false;
    if (interface && frame->nb_segs == 1 && type == ip::kEtherTypeArp)
      take_arp(bytes, rte_pktmbuf_data_len(frame), now);
    else if (interface && frame->nb_segs == 1 && type == ip::kEtherTypeIpv4)
      receive_ipv4(frame, now, out, &segment);
    else if (interface6 && frame->nb_segs == 1 && type == ip::kEtherTypeIpv6)
      receive_ipv6(frame, now, out, &segment);
    else
      ++rx_not_ours;
    return segment;
  }
  if (!refused(result)) ++rx_bad_frames;
  return false;
}

bool Framer::refused(proto::DecodeResult result) {
  switch (result) {
    case proto::DecodeResult::kUnsealed:
      if (rx_unsealed++ == 0) owner_.first_refusal(Owner::Refusal::kUnsealed);
      return true;
    case proto::DecodeResult::kBadTag:
      // Expected of strangers' forgeries: a warning once, the count after.
      if (rx_bad_tags++ == 0) owner_.first_refusal(Owner::Refusal::kBadTag);
      return true;
    case proto::DecodeResult::kKeyed:
    case proto::DecodeResult::kNotKeyed:
      if (rx_key_mismatch++ == 0)
        owner_.first_refusal(result == proto::DecodeResult::kKeyed ? Owner::Refusal::kKeyed
                                                                   : Owner::Refusal::kNotKeyed);
      return true;
    default:
      return false;
  }
}

bool Framer::echo_allowed(uint64_t now) {
  if (now - std::min(now, echo_window_ns_) >= 1'000'000'000) {
    echo_window_ns_ = now;
    echoes_in_window_ = 0;
  }
  return echoes_in_window_++ < kEchoesPerSecond;
}

void Framer::receive_ipv4(rte_mbuf* frame, uint64_t now, proto::DecodedFrame* out, bool* segment) {
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
      std::memcmp(bytes, port_.mac(), 6) != 0 || packet.destination != interface->address) {
    ++rx_not_ours;
    return;
  }
  // What we answer goes back to the source: never to a group MAC or a
  // broadcast, multicast or unset address, and our own address only from
  // our own MAC (a frame looped back).
  const bool own_source = packet.source == interface->address;
  if ((bytes[6] & 1) != 0 || !interface->unicast(packet.source) ||
      (own_source && std::memcmp(bytes + 6, port_.mac(), 6) != 0)) {
    ++rx_bad_frames;
    return;
  }
  if (packet.protocol == ip::kProtocolIcmp) {
    if (ip::TooBig word; ip::parse_fragmentation_needed(packet, &word)) {
      on_too_big(word, now);
      return;
    }
    if (!echo_allowed(now)) return;
    if (send_built(length, [&](uint8_t* reply) {
          return ip::build_echo_reply(bytes, packet, port_.mac(), reply, length);
        }))
      ++echo_requests_answered;
    else
      ++rx_not_ours;
    return;
  }
  ip::UdpDatagram datagram;
  if (!udp || !ip::parse_udp(packet, &datagram)) {
    ++rx_not_ours;
    return;
  }
  if (!take_datagram(datagram, out)) return;
  out->congestion_experienced = packet.ecn == ip::kEcnCongestionExperienced;
  ++rx_udp;
  if (header_checked) ++rx_udp_checked_by_device;
  ip::peer_id_of(packet.source, out->src_mac);
  *segment = true;
}

void Framer::receive_ipv6(rte_mbuf* frame, uint64_t now, proto::DecodedFrame* out, bool* segment) {
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
      (packet.source == interface6->address && std::memcmp(bytes + 6, port_.mac(), 6) != 0)) {
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
    if (send_built(length, [&](uint8_t* reply) {
          return ip::build_echo6_reply(bytes, packet, port_.mac(), reply, length);
        }))
      ++echo6_requests_answered;
    else
      ++rx_not_ours;
    return;
  }
  ip::UdpDatagram datagram;
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
  if (!take_datagram(datagram, out)) return;
  out->congestion_experienced = packet.ecn == ip::kEcnCongestionExperienced;
  if (!ipv6_peer_id(packet.source, false, out->src_mac)) {
    ++rx_strangers_not_named;
    return;
  }
  ++rx_udp6;
  if (checksum_checked) ++rx_udp6_checked_by_device;
  *segment = true;
}

bool Framer::take_datagram(const ip::UdpDatagram& datagram, proto::DecodedFrame* decoded) {
  const uint16_t base = settings_.port_base;
  if (datagram.destination_port < base || datagram.destination_port - base >= settings_.queues) {
    ++rx_not_ours;
    return false;
  }
  const auto result =
      proto::decode_udp_payload(datagram.payload, datagram.payload_length, decoded, frame_check());
  if (refused(result)) return false;
  // The port and the header name the same queue, or a NIC's steering by
  // port would put the frame where its header says it does not belong.
  if (result != proto::DecodeResult::kOk ||
      datagram.destination_port - base != decoded->header.dst_queue) {
    ++rx_bad_frames;
    return false;
  }
  std::memcpy(decoded->dst_mac, port_.mac(), 6);
  return true;
}

}  // namespace ofi_dpdk::frames
