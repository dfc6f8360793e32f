// framer_neighbours.cc: a port's neighbours (framer.h).  A port with an
// IPv4 address answers ARP requests for it and asks for the MACs of its
// next hops; one with an IPv6 address does the same with neighbour
// discovery (RFC 4861: IPv6's ARP).  A table hears a neighbour only as the
// answer to a question of ours (lib/ip/neighbour_table.h).  Frames whose
// next hop has not answered wait here, and go when it does.
#include <rte_mbuf.h>

#include <algorithm>
#include <cstring>

#include "drivers/frames/framer.h"
#include "drivers/frames/ipv6_peer_ids.h"
#include "drivers/net/mbuf_handoff.h"
#include "lib/ip/arp.h"
#include "lib/ip/icmp6.h"
#include "lib/ip/neighbour_rules.h"

namespace ofi_dpdk::frames {

Framer::~Framer() {
  for (const WaitingFrame& waiting : waiting_frames_) net::free_frame(waiting.frame);
}

bool Framer::send_built(size_t capacity, const std::function<size_t(uint8_t*)>& build) {
  rte_mbuf* frame = port_.alloc_frame();
  if (frame == nullptr) return false;
  auto* bytes =
      reinterpret_cast<uint8_t*>(rte_pktmbuf_append(frame, static_cast<uint16_t>(capacity)));
  const size_t length = bytes == nullptr ? 0 : build(bytes);
  if (length != 0) {
    rte_pktmbuf_trim(frame, static_cast<uint16_t>(capacity - length));
    if (transmit(0, &frame, 1) == 1) return true;
  }
  net::free_frame(frame);
  return false;
}

bool Framer::send_arp(const ip::ArpMessage& message) {
  return send_built(ip::kArpFrameSize, [&](uint8_t* out) {
    ip::build_arp(message, out);
    return ip::kArpFrameSize;
  });
}

void Framer::take_arp(const uint8_t* frame, size_t length, uint64_t now) {
  const auto message = ip::parse_arp(frame, length);
  if (!message || !interface || message->target_ip != interface->address) {
    ++arp_ignored;
    return;
  }
  // A sender we would not send to is neither answered nor heard (a
  // group or zero MAC, one its frame did not come from, an address off
  // the subnet).
  if (const auto refusal = ip::refuse_arp_sender(*message, frame + 6, *interface)) {
    neighbours.refuse(*refusal);
    return;
  }
  const ip::Ipv4 sender = message->sender_ip;
  ip::Verdict verdict;
  if (message->op == ip::ArpOp::kRequest) {
    // Answered whatever it claims, so that the asker can reach us; heard
    // only as the answer to a question of ours.  An asker we do not know
    // is asked back, one that disagrees with a live entry makes us ask
    // again.
    if (send_arp(ip::arp_reply(*message, port_.mac()))) ++arp_requests_answered;
    bool ask_now = false;
    verdict = neighbours.take_request(sender, message->sender_mac, now, &ask_now);
    if (ask_now) send_arp(ip::arp_request(port_.mac(), interface->address, sender));
  } else if (std::memcmp(message->target_mac, port_.mac(), 6) != 0 ||
             std::memcmp(frame, port_.mac(), 6) != 0) {
    ++arp_ignored;
    return;
  } else {
    verdict = neighbours.take_answer(sender, message->sender_mac, now);
  }
  if (verdict == ip::Verdict::kLearned && !waiting_frames_.empty())
    send_waiting(ip::mapped_ipv4(sender), message->sender_mac);
}

void Framer::take_neighbour_message(const ip::NeighbourMessage& message, const uint8_t* frame,
                                    bool to_us, uint64_t now) {
  const uint8_t* frame_source = frame + 6;
  const bool advertisement = message.kind == ip::NeighbourMessage::Kind::kAdvertisement;
  // An advertisement only to our MAC, a solicitation only for our address,
  // neither our own frame seen again.
  if (std::memcmp(frame_source, port_.mac(), 6) == 0 ||
      (advertisement ? !to_us : message.target != interface6->address)) {
    ++neighbour_messages_ignored;
    return;
  }
  const auto answer = [&] {
    if (send_built(ip::kNeighbourFrameSize, [&](uint8_t* out) {
          ip::build_neighbour_advertisement(message, frame_source, port_.mac(), out);
          return ip::kNeighbourFrameSize;
        }))
      ++neighbour_solicitations_answered;
  };
  if (!advertisement && message.source.unspecified()) {
    // Another node checking for a duplicate of our address: told it is
    // ours (to all nodes); it teaches nothing.
    if (ip::station_mac(frame_source))
      answer();
    else
      ++neighbour_messages_ignored;
    return;
  }
  // Heard only from a station on the link whose frame carries the MAC it
  // claims, and only as the answer to a question of ours, as ARP.
  if (const auto refusal = ip::refuse_neighbour_claim(message, frame_source, *interface6)) {
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
    if (ask_now) send_solicitation(claim.address);
  }
  if (verdict == ip::Verdict::kLearned && !waiting_frames_.empty())
    send_waiting(claim.address, claim.mac);
}

Framer::Ipv6Frame Framer::take_ipv6_neighbour(const uint8_t* bytes, size_t length, uint64_t now,
                                              ip::Ipv6Packet* packet, bool* to_us) {
  if (!interface6 || ip::parse_ipv6_packet(bytes, length, packet) != ip::Ipv6Result::kOk)
    return Ipv6Frame::kNotOurs;
  // To our MAC, or to the group where solicitations for our address go.
  uint8_t group_mac[6];
  ip::multicast_mac(ip::solicited_node(interface6->address), group_mac);
  *to_us = std::memcmp(bytes, port_.mac(), 6) == 0;
  if (!*to_us && std::memcmp(bytes, group_mac, 6) != 0) return Ipv6Frame::kNotOurs;
  ip::NeighbourMessage message;
  if (packet->next_header == ip::kNextHeaderIcmp6 &&
      ip::parse_neighbour_message(*packet, &message)) {
    take_neighbour_message(message, bytes, *to_us, now);
    return Ipv6Frame::kNeighbour;
  }
  return Ipv6Frame::kOther;
}

void Framer::take_neighbour_frame(const uint8_t* frame, size_t length, uint64_t now) {
  const uint16_t type = length >= 14 ? uint16_t(frame[12] << 8 | frame[13]) : 0;
  if (type == ip::kEtherTypeArp) {
    take_arp(frame, length, now);
  } else if (type == ip::kEtherTypeIpv6) {
    ip::Ipv6Packet packet;
    bool to_us = false;
    take_ipv6_neighbour(frame, length, now, &packet, &to_us);
  }
}

void Framer::solicit_neighbour(const ip::Ipv6& target, uint64_t now) {
  if (interface6 && neighbours6.expect(target, now)) send_solicitation(target);
}

void Framer::send_solicitation(const ip::Ipv6& target) {
  send_built(ip::kNeighbourFrameSize, [&](uint8_t* out) {
    ip::build_neighbour_solicitation(port_.mac(), interface6->address, target, out);
    return ip::kNeighbourFrameSize;
  });
}

bool Framer::ask_neighbour(uint32_t ip, uint64_t now) {
  if (!interface || now - last_neighbour_ask_ns_ < kArpRetryMs * 1'000'000) return false;
  last_neighbour_ask_ns_ = now;
  ask_neighbour_now(ip, now);
  return true;
}

void Framer::ask_neighbour_now(uint32_t ip, uint64_t now) {
  if (interface && neighbours.expect(ip, now))
    send_arp(ip::arp_request(port_.mac(), interface->address, ip));
}

void Framer::name_by_ip(av::Address* address, uint64_t now) const {
  if (std::memcmp(address->mac, port_.mac(), 6) == 0) {
    if (interface && address->ipv4 == 0) address->ipv4 = interface->address;
    if (interface6 && !address->has_ipv6()) address->ipv6 = interface6->address.bytes;
    return;
  }
  if (address->has_ip()) return;
  if (ip::is_ipv6_peer_id(address->mac)) {
    if (const auto known = ipv6_of_peer_id(address->mac)) address->ipv6 = known->bytes;
    return;
  }
  if (!interface) return;
  if (ip::is_peer_id(address->mac)) {
    address->ipv4 = ip::address_of_peer_id(address->mac);
  } else if (auto known = neighbours.address_of(address->mac, now)) {
    address->ipv4 = *known;
  }
}

bool Framer::wait_for_neighbour(const ip::Ipv6& next_hop, rte_mbuf* frame, uint16_t hw_queue,
                                uint64_t now) {
  const bool asked = std::any_of(resolving_.begin(), resolving_.end(),
                                 [&](const Resolving& r) { return r.next_hop == next_hop; });
  if (!asked && resolving_.size() >= kMaxResolving) return false;
  if (waiting_frames_.size() >= kMaxWaitingFrames) {
    net::free_frame(waiting_frames_.front().frame);
    waiting_frames_.pop_front();
    ++frames_not_resolved;
  }
  waiting_frames_.push_back({next_hop, hw_queue, frame});
  if (!asked) {
    resolving_.push_back({next_hop, now, now});
    ask_next_hop(next_hop, now);
  }
  return true;
}

void Framer::ask_next_hop(const ip::Ipv6& next_hop, uint64_t now) {
  if (next_hop.v4_mapped())
    ask_neighbour_now(ip::ipv4_of_mapped(next_hop), now);
  else
    solicit_neighbour(next_hop, now);
}

void Framer::confirm_next_hop(const ip::Ipv6& next_hop, const uint8_t mac[6], uint64_t now) {
  const uint64_t since = now - std::min(now, kConfirmEveryMs * 1'000'000);
  if (next_hop.v4_mapped()) {
    const ip::Ipv4 hop = ip::ipv4_of_mapped(next_hop);
    if (!interface || neighbours.heard_since(hop, since) || !neighbours.expect(hop, now)) return;
    send_built(ip::kArpFrameSize, [&](uint8_t* out) {
      ip::build_arp(ip::arp_request(port_.mac(), interface->address, hop), out, mac);
      return ip::kArpFrameSize;
    });
  } else {
    if (!interface6 || neighbours6.heard_since(next_hop, since) ||
        !neighbours6.expect(next_hop, now))
      return;
    send_built(ip::kNeighbourFrameSize, [&](uint8_t* out) {
      ip::build_unicast_solicitation(port_.mac(), interface6->address, next_hop, mac, out);
      return ip::kNeighbourFrameSize;
    });
  }
  ++neighbour_confirmations;
}

bool Framer::asking_for(const ip::Ipv6& next_hop, uint64_t now) const {
  if (next_hop.v4_mapped())
    return interface && neighbours.asking(ip::ipv4_of_mapped(next_hop), now);
  return interface6 && neighbours6.asking(next_hop, now);
}

void Framer::send_waiting(const ip::Ipv6& neighbour, const uint8_t mac[6]) {
  std::erase_if(resolving_, [&](const Resolving& r) { return r.next_hop == neighbour; });
  std::erase_if(waiting_frames_, [&](WaitingFrame& waiting) {
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

void Framer::chase_neighbours(uint64_t now) {
  // (Stamps from a flush may be a little ahead of this pass's clock.)
  auto elapsed = [now](uint64_t then) { return now > then ? now - then : 0; };
  const uint64_t give_up_ns = uint64_t{settings_.resolve_timeout_ms} * 1'000'000;
  std::vector<ip::Ipv6> given_up;
  std::erase_if(resolving_, [&](Resolving& r) {
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
    std::erase_if(waiting_frames_, [&](const WaitingFrame& waiting) {
      if (waiting.next_hop != dead) return false;
      net::free_frame(waiting.frame);
      ++frames_not_resolved;
      return true;
    });
    owner_.next_hop_silent(dead);
  }
}

}  // namespace ofi_dpdk::frames
