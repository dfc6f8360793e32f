// framer_path_mtu.cc: path MTU discovery at a port (framer.h).  A router
// whose next link is narrower than our frame drops it (DF is set) and says
// so with ICMP "fragmentation needed" or ICMPv6 "packet too big", quoting
// the frame's start; the quoted header names the endpoint and the
// connection that sent it, whose engine then cuts smaller segments (and
// resends what did not fit in pieces: Owner::narrow_path).  What the port
// learns, from a router or from a connection whose large segments went
// unanswered (the engine's PathLearned), is kept per peer for the
// connections made later.
#include <algorithm>
#include <cstring>

#include "drivers/frames/framer.h"
#include "drivers/frames/ipv6_peer_ids.h"

namespace ofi_dpdk::frames {
namespace {

uint64_t key_of(const uint8_t* link) {
  uint64_t key = 0;
  std::memcpy(&key, link, 6);
  return key;
}

}  // namespace

void Framer::learn_path(const uint8_t* link, uint32_t payload, uint64_t now) {
  const uint64_t until = now + kLearnedPathLife;
  if (auto it = learned_paths_.find(key_of(link)); it != learned_paths_.end()) {
    // An expired entry says nothing any more; a live one narrower than
    // this word keeps its size and its time.
    if (it->second.until_ns <= now || payload <= it->second.payload) it->second = {payload, until};
    return;
  }
  if (learned_paths_.size() >= kMaxLearnedPaths) {
    // Full: what expired goes; failing that, what expires first.
    std::erase_if(learned_paths_,
                  [now](const auto& entry) { return entry.second.until_ns <= now; });
    if (learned_paths_.size() >= kMaxLearnedPaths)
      learned_paths_.erase(std::min_element(
          learned_paths_.begin(), learned_paths_.end(),
          [](const auto& a, const auto& b) { return a.second.until_ns < b.second.until_ns; }));
  }
  learned_paths_.emplace(key_of(link), LearnedPath{payload, until});
}

uint32_t Framer::learned_payload(const uint8_t* link, uint64_t now) const {
  if (learned_paths_.empty()) return 0;
  const auto it = learned_paths_.find(key_of(link));
  return it == learned_paths_.end() || it->second.until_ns <= now ? 0 : it->second.payload;
}

uint32_t Framer::path_limit(const uint8_t* link, uint64_t now) const {
  // What the path was found to carry, if that is less.
  const uint32_t learned = learned_payload(link, now);
  const uint32_t routed = routed_limit(link);
  if (learned == 0 || (routed != 0 && routed < learned)) return routed;
  return learned;
}

uint32_t Framer::routed_limit(const uint8_t* link) const {
  const uint32_t routed_mtu = settings_.routed_mtu;
  if (routed_mtu == 0 || !in_udp(link)) return 0;
  if (ip::is_peer_id(link)) {
    if (interface->on_link(ip::address_of_peer_id(link))) return 0;
  } else {
    const auto address = ipv6_of_peer_id(link);
    if (!address || interface6->on_link(*address)) return 0;
  }
  return routed_mtu - static_cast<uint32_t>(encap_overhead() + sizeof(wire::FrameHeader));
}

void Framer::on_too_big(const ip::TooBig& word, uint64_t now) {
  // It must quote a frame of ours: from our address, to an endpoint's
  // port, our header far enough to name the sending endpoint and its
  // connection (a router that quotes less, as RFC 792 allows, is not
  // heard: the connection's silence narrows it later).
  const bool ipv6 = !word.destination.v4_mapped();
  const bool from_us = ipv6 ? interface6 && word.source == interface6->address
                            : interface && word.source == ip::mapped_ipv4(interface->address);
  const uint16_t base = settings_.port_base;
  proto::QuotedHeader quoted;
  uint8_t link[6];
  if (!from_us || word.destination_port < base ||
      word.destination_port - base >= settings_.queues ||
      !proto::decode_quoted_header(word.quoted, word.quoted_length, &quoted) ||
      quoted.dst_queue != word.destination_port - base) {
    ++too_big_ignored;
    return;
  }
  if (ipv6) {
    if (!find_ipv6_peer_id(word.destination, link)) {
      ++too_big_ignored;
      return;
    }
  } else {
    ip::peer_id_of(ip::ipv4_of_mapped(word.destination), link);
  }
  // No path is believed narrower than each family's minimum (RFC 791's
  // 576 bytes, RFC 8200's 1280).
  const uint32_t mtu = std::max<uint32_t>(word.mtu, ipv6 ? 1280 : 576);
  const uint32_t payload =
      mtu - encap_overhead() - static_cast<uint32_t>(sizeof(wire::FrameHeader));
  if (!owner_.narrow_path(quoted, link, word.destination, word.mtu, payload, now)) {
    ++too_big_ignored;
    return;
  }
  ++too_big_taken;
  learn_path(link, payload, now);
}

}  // namespace ofi_dpdk::frames
