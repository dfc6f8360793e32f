// dpdk_path_mtu.cc: path MTU discovery at a port.  A router whose next
// link is narrower than our frame drops it (DF is set) and says so with
// ICMP "fragmentation needed" or ICMPv6 "packet too big", quoting the
// frame's start; the quoted header names the endpoint and the connection
// that sent it, whose engine then cuts smaller segments (and resends what
// did not fit in pieces).  What the port learns, from a router or from a
// connection whose large segments went unanswered (the engine's
// PathLearned), is kept per peer for the connections made later.
#include <algorithm>
#include <cstring>

#include "drivers/ofi/dpdk_endpoint.h"
#include "drivers/ofi/dpdk_ipv6_peers.h"
#include "drivers/ofi/dpdk_limits.h"
#include "drivers/ofi/dpdk_log.h"
#include "drivers/ofi/dpdk_port.h"
#include "lib/proto/frame_codec.h"

namespace ofi_dpdk::ofi {
namespace {

uint64_t key_of(const uint8_t* link) {
  uint64_t key = 0;
  std::memcpy(&key, link, 6);
  return key;
}

std::string format_address(const ip::Ipv6& address) {
  return address.v4_mapped() ? ip::format_ipv4(ip::ipv4_of_mapped(address))
                             : ip::format_ipv6(address);
}

}  // namespace

void PortContext::learn_path(const uint8_t* link, uint32_t payload, uint64_t now) {
  const uint64_t until = now + kLearnedPathLife;
  if (auto it = learned_paths.find(key_of(link)); it != learned_paths.end()) {
    // An expired entry says nothing any more; a live one narrower than
    // this word keeps its size and its time.
    if (it->second.until_ns <= now || payload <= it->second.payload) it->second = {payload, until};
    return;
  }
  if (learned_paths.size() >= kMaxLearnedPaths) {
    // Full: what expired goes; failing that, what expires first.
    std::erase_if(learned_paths, [now](const auto& entry) { return entry.second.until_ns <= now; });
    if (learned_paths.size() >= kMaxLearnedPaths)
      learned_paths.erase(std::min_element(
          learned_paths.begin(), learned_paths.end(),
          [](const auto& a, const auto& b) { return a.second.until_ns < b.second.until_ns; }));
  }
  learned_paths.emplace(key_of(link), LearnedPath{payload, until});
}

uint32_t PortContext::learned_payload(const uint8_t* link, uint64_t now) const {
  if (learned_paths.empty()) return 0;
  const auto it = learned_paths.find(key_of(link));
  return it == learned_paths.end() || it->second.until_ns <= now ? 0 : it->second.payload;
}

void PortContext::on_too_big(const ip::TooBig& word, uint64_t now) {
  // It must quote a frame of ours: from our address, to an endpoint's
  // port, our header far enough to name the sending endpoint and its
  // connection (a router that quotes less, as RFC 792 allows, is not
  // heard: the connection's silence narrows it later).
  const bool ipv6 = !word.destination.v4_mapped();
  const bool from_us = ipv6 ? interface6 && word.source == interface6->address
                            : interface && word.source == ip::mapped_ipv4(interface->address);
  const uint16_t base = params().port_base;
  proto::QuotedHeader quoted;
  uint8_t link[6];
  if (!from_us || word.destination_port < base ||
      word.destination_port - base >= kMaxEndpointsPerPort ||
      !proto::decode_quoted_header(word.quoted, word.quoted_length, &quoted) ||
      quoted.dst_queue != word.destination_port - base || quoted.src_queue >= endpoints.size() ||
      endpoints[quoted.src_queue] == nullptr || !endpoints[quoted.src_queue]->enabled) {
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
  Endpoint& ep = *endpoints[quoted.src_queue];
  bool narrowed = false;
  contain([&] {
    narrowed =
        ep.engine->on_path_too_big(link, quoted.dst_queue, quoted.conn, quoted.token, payload, now);
  });
  if (!narrowed) {
    ++too_big_ignored;
    return;
  }
  ++too_big_taken;
  learn_path(link, payload, now);
  DPDK_INFO(FI_LOG_EP_DATA,
            "%s: a router says the path to %s carries %u-byte packets: frames to it are cut "
            "to fit (%u bytes of payload), and what did not fit goes again in pieces\n",
            port->name().c_str(), format_address(word.destination).c_str(), word.mtu, payload);
}

}  // namespace ofi_dpdk::ofi
