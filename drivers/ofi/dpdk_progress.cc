// dpdk_progress.cc: where a received frame goes next.  The port's queues are
// polled; each frame goes to the port's framer (drivers/frames/framer.h),
// which checks it (length, version, opcode, checksum) and takes what is
// IP's own, and each segment it gives back is handed to the transport
// engine of the endpoint its header names (the software demultiplexer; with rte_flow steering each
// queue already holds one endpoint's frames and the same lookup confirms it). Between bursts of a
// busy queue, and at the end of the pass, every endpoint answers what it took and its frames go
// out; at the end its timers run too.
#include <rte_mbuf.h>

#include <algorithm>
#include <cstdio>
#include <cstring>

#include "drivers/net/mbuf_handoff.h"
#include "drivers/ofi/dpdk_endpoint.h"
#include "drivers/ofi/dpdk_ipv6_peers.h"
#include "drivers/ofi/dpdk_log.h"
#include "drivers/ofi/dpdk_port.h"
#include "lib/ip/ipv4.h"
#include "lib/ip/udp4.h"

namespace ofi_dpdk::ofi {
namespace {

constexpr uint16_t kRxBurst = 32;  // frames per queue per pass

}  // namespace

// Each peer timeout once, as it happens: which wait ran out, at which peer,
// and how the connection looked (the operations it fails say only
// ETIMEDOUT).  Warned, since it fails a user's operations.
void log_timeouts(Endpoint* ep) {
  ep->timeouts_logged = ep->engine->stats().timeouts;
  const proto::TimeoutReport& r = ep->engine->last_timeout();
  const auto name = [](const uint8_t mac[6], unsigned queue, char(&text)[64]) {
    const auto ipv6 = ipv6_of_peer_id(mac);
    if (ip::is_peer_id(mac))
      std::snprintf(text, sizeof text, "%s queue %u",
                    ip::format_ipv4(ip::address_of_peer_id(mac)).c_str(), queue);
    else if (ipv6)
      std::snprintf(text, sizeof text, "%s queue %u", ip::format_ipv6(*ipv6).c_str(), queue);
    else
      std::snprintf(text, sizeof text, "%02x:%02x:%02x:%02x:%02x:%02x queue %u", mac[0], mac[1],
                    mac[2], mac[3], mac[4], mac[5], queue);
  };
  uint8_t peer_mac[6];
  for (int i = 0; i < 6; ++i) peer_mac[i] = static_cast<uint8_t>(r.peer >> (40 - 8 * i));
  char self[64], peer[64];
  name(ep->port().port->mac(), ep->queue, self);
  name(peer_mac, static_cast<unsigned>(r.peer >> 48), peer);
  DPDK_WARN(FI_LOG_EP_DATA,
            "endpoint %s: peer timeout (%s) toward %s after %lu ms, peer last heard "
            "%lu ms ago; %u segments in flight (oldest sent %u more times), peer window %u, "
            "retransmission timeout %lu ms, %zu operations waiting; oldest unacknowledged %u, "
            "receive half %s, next expected %u, %u held; frames not sent %lu, segments met a "
            "closed window %lu\n",
            self, proto::timeout_wait_text(r.wait), peer, r.waited_ns / 1'000'000,
            r.quiet_ns / 1'000'000, r.in_flight, r.retransmits, r.peer_window, r.rto_ns / 1'000'000,
            r.awaiting, r.una, r.rx_stalled ? "stalled" : "open", r.next_expected, r.rx_buffered,
            ep->frames_not_sent, ep->engine->stats().stalled_no_buffer);
}

namespace {

// What a neighbour table refused, by reason, and what it holds.
template <typename Table>
std::string neighbour_summary(const Table& table) {
  std::string text =
      "neighbours learned " + std::to_string(table.size()) + ", static " +
      std::to_string(table.pinned()) + ", evicted " + std::to_string(table.evictions()) +
      ", questions displaced by askers asking again " + std::to_string(table.displaced()) +
      "; claims refused " + std::to_string(table.refusals());
  const char* separator = " (";
  for (size_t i = static_cast<size_t>(ip::Verdict::kNotAsked); i < ip::kVerdicts; ++i) {
    const auto verdict = static_cast<ip::Verdict>(i);
    if (table.count(verdict) == 0) continue;
    text += separator;
    text += ip::verdict_name(verdict);
    text += " " + std::to_string(table.count(verdict));
    separator = ", ";
  }
  if (table.refusals() != 0) text += ")";
  return text;
}

}  // namespace

PortContext::~PortContext() {
  progress_net_remove(this);
  // (No port: its device failed to open, acquire_port said why; nothing
  // was counted.)
  if (port && framer) {
    const frames::Framer& f = *framer;
    if (f.interface)
      DPDK_INFO(FI_LOG_DOMAIN,
                "%s %s: ARP requests answered %lu, ignored %lu; %s; UDP frames in %lu (header "
                "checked by the device %lu); frames "
                "held for ARP %lu, lost unresolved %lu; next hops refreshed %lu, asked again "
                "for a silent peer %lu, given up %lu; pings answered %lu\n",
                port->name().c_str(), ip::format_interface(*f.interface).c_str(),
                f.arp_requests_answered, f.arp_ignored, neighbour_summary(f.neighbours).c_str(),
                f.rx_udp, f.rx_udp_checked_by_device, f.frames_waited,
                f.frames_not_resolved + f.frames_waiting(), f.neighbour_refreshes,
                f.neighbour_confirmations, f.next_hops_given_up, f.echo_requests_answered);
    if (f.interface6) {
      const Ipv6PeerCounts peers = ipv6_peer_counts();
      DPDK_INFO(FI_LOG_DOMAIN,
                "%s %s: neighbour solicitations answered %lu, neighbour messages ignored "
                "%lu; %s; UDP frames in %lu (checksum checked by the device %lu), from "
                "strangers the peer table had no room for %lu; "
                "pings answered %lu; the process's IPv6 peers: named %zu, held by "
                "connections %zu, strangers %zu, strangers evicted %lu\n",
                port->name().c_str(), ip::format_interface6(*f.interface6).c_str(),
                f.neighbour_solicitations_answered, f.neighbour_messages_ignored,
                neighbour_summary(f.neighbours6).c_str(), f.rx_udp6, f.rx_udp6_checked_by_device,
                f.rx_strangers_not_named, f.echo6_requests_answered, peers.named, peers.connected,
                peers.strangers, peers.evictions);
    }
    if (f.too_big_taken + f.too_big_ignored != 0)
      DPDK_INFO(FI_LOG_DOMAIN,
                "%s: routers' packet-too-big words taken %lu, ignored %lu (not naming a "
                "connection of ours, or not narrowing it); paths learned %zu\n",
                port->name().c_str(), f.too_big_taken, f.too_big_ignored, f.paths_learned());
  }
  for (rte_mbuf* frame : looped) net::free_frame(frame);
}

bool PortContext::loop_back(rte_mbuf* frame) {
  if (looped.size() >= kLoopbackFrames) return false;
  looped.push_back(frame);
  return true;
}

void PortContext::warn_no_memory() const {
  DPDK_WARN(FI_LOG_EP_DATA, "%s: out of memory in the transport; frames are being lost\n",
            port->name().c_str());
}

void PortContext::receive(rte_mbuf* frame, uint64_t now, uint16_t polled_queue) {
  proto::DecodedFrame decoded;
  if (framer->take(frame, now, &decoded)) deliver(decoded, frame, now, polled_queue);
  // The queue pair's own cache, on a port of lanes (its lane's lock is held).
  port->free_frame(frame, polled_queue);
}

void PortContext::deliver(const proto::DecodedFrame& decoded, rte_mbuf* frame, uint64_t now,
                          uint16_t polled_queue) {
  const uint16_t queue = decoded.header.dst_queue;
  if (queue >= endpoints.size() || endpoints[queue] == nullptr || !endpoints[queue]->enabled) {
    ++rx_no_endpoint;
    return;
  }
  Endpoint& ep = *endpoints[queue];
  if (polled_queue == ep.hw_queue) {
    ++ep.frames_on_own_queue;
  } else if (polled_queue != kNoPolledQueue) {
    // On a port split in lanes, a frame read off another queue than its
    // endpoint's may be in another lane's pass, which must not touch the
    // endpoint (a sender writes into its destination's queue: none should
    // be).
    if (!one_lane) {
      ++rx_no_endpoint;
      return;
    }
    ++ep.frames_on_other_queue;
  }
  proto::Engine& engine = *ep.engine;
  contain([&] {
    engine.on_frame(
        {decoded.src_mac, &decoded.header, decoded.payload, frame, decoded.congestion_experienced},
        now);
    // A peer named by an IPv6 peer id the engine now holds a connection
    // with keeps its id (dpdk_ipv6_holds.h).
    ep.ipv6_holds.after_frame(engine, decoded.src_mac, decoded.header.src_queue);
  });
}

void PortContext::fail_peers_behind(const ip::Ipv6& next_hop) {
  for (Endpoint* ep : open_endpoints()) {
    if (ep == nullptr || !ep->enabled) continue;
    contain([&] {
      ep->engine->fail_unreachable([&](const uint8_t* link) {
        return framer->in_udp(link) && framer->next_hop_of(link) == next_hop;
      });
    });
  }
}

void PortContext::first_refusal(Refusal refusal) {
  const char* name = port->name().c_str();
  switch (refusal) {
    case Refusal::kUnsealed:
      DPDK_WARN(FI_LOG_EP_DATA,
                "%s: frames without a checksum arrive and are dropped: the sender has "
                "FI_DPDK_CHECKSUM=0, or is on a memory port (net_memif) without the "
                "setting; set FI_DPDK_CHECKSUM the same on both sides\n",
                name);
      break;
    case Refusal::kBadTag:
      DPDK_WARN(FI_LOG_EP_DATA,
                "%s: a frame with a wrong keyed tag was dropped (forged, "
                "changed on the way, or from a process with another FI_DPDK_AUTH_KEY); "
                "such frames are counted from now on\n",
                name);
      break;
    case Refusal::kKeyed:
    case Refusal::kNotKeyed:
      DPDK_WARN(FI_LOG_EP_DATA,
                "%s: frames %s arrive and are dropped: set the same "
                "FI_DPDK_AUTH_KEY in every process of the job\n",
                name,
                refusal == Refusal::kKeyed
                    ? "keyed by a job key (FI_DPDK_AUTH_KEY) this process does not have"
                    : "without the job key's tag this process requires (FI_DPDK_AUTH_KEY)");
      break;
  }
}

void PortContext::next_hop_silent(const ip::Ipv6& next_hop) {
  DPDK_INFO(FI_LOG_EP_DATA,
            "%s: %s did not answer %s within %u ms: operations to peers "
            "behind it fail with FI_EHOSTUNREACH\n",
            port->name().c_str(),
            next_hop.v4_mapped() ? ip::format_ipv4(ip::ipv4_of_mapped(next_hop)).c_str()
                                 : ip::format_ipv6(next_hop).c_str(),
            next_hop.v4_mapped() ? "ARP" : "neighbour discovery", params().resolve_timeout_ms);
  fail_peers_behind(next_hop);
}

bool PortContext::narrow_path(const proto::QuotedHeader& quoted, const uint8_t link[6],
                              const ip::Ipv6& destination, uint32_t mtu, uint32_t payload,
                              uint64_t now) {
  if (quoted.src_queue >= endpoints.size() || endpoints[quoted.src_queue] == nullptr ||
      !endpoints[quoted.src_queue]->enabled)
    return false;
  Endpoint& ep = *endpoints[quoted.src_queue];
  bool narrowed = false;
  contain([&] {
    narrowed =
        ep.engine->on_path_too_big(link, quoted.dst_queue, quoted.conn, quoted.token, payload, now);
  });
  if (!narrowed) return false;
  DPDK_INFO(FI_LOG_EP_DATA,
            "%s: a router says the path to %s carries %u-byte packets: frames to it are cut "
            "to fit (%u bytes of payload), and what did not fit goes again in pieces\n",
            port->name().c_str(),
            destination.v4_mapped() ? ip::format_ipv4(ip::ipv4_of_mapped(destination)).c_str()
                                    : ip::format_ipv6(destination).c_str(),
            mtu, payload);
  return true;
}

bool PortContext::keep(void* frame) {
  auto* mbuf = static_cast<rte_mbuf*>(frame);
  if (!port->owns(mbuf) || kept_frames.load(std::memory_order_relaxed) >= port->pool_size() / 8)
    return false;
  kept_frames.fetch_add(1, std::memory_order_relaxed);
  rte_mbuf_refcnt_update(mbuf, 1);
  return true;
}

void PortContext::release(void* frame) {
  kept_frames.fetch_sub(1, std::memory_order_relaxed);
  net::free_frame(static_cast<rte_mbuf*>(frame));
}

bool PortContext::in_lane(const Endpoint* ep, uint16_t lane) const {
  return ep != nullptr && ep->enabled &&
         (lane == kWholePort || ep->lane.load(std::memory_order_relaxed) == lane);
}

void PortContext::answer(uint16_t lane, uint64_t now) {
  for (Endpoint* ep : open_endpoints()) {
    if (!in_lane(ep, lane)) continue;
    contain([&] { ep->engine->answer(now); });
    ep->flush();
  }
}

uint64_t PortContext::last_progress() const {
  uint64_t latest = last_progress_ns.load(std::memory_order_relaxed);
  for (uint16_t lane = 0; lane < lanes(); ++lane)
    latest = std::max(latest, lane_state[lane].last_progress_ns.load(std::memory_order_relaxed));
  return latest;
}

void PortContext::help_lanes_left_alone(uint16_t lane, uint64_t now) {
  // lane_of_queue changes only under every lane's lock, ours among them.
  for (uint16_t other = 0; other < lanes(); ++other) {
    if (other == lane || !leads_lane(other)) continue;
    const uint64_t last = lane_state[other].last_progress_ns.load(std::memory_order_relaxed);
    if (last >= now || now - last < kLaneLeftAloneNs) continue;
    PortLock& other_lock = lock.lane(other);
    if (!other_lock.try_lock()) continue;
    pass(other, now, true);
    other_lock.unlock();
  }
}

void PortContext::note_link_change(uint64_t now) {
  link_changes_seen = port->link_changes();
  // A kernel interface set down is news; a memif peer that leaves at the
  // end of its run is not.
  const fi_log_level level = port->on_kernel_link() ? FI_LOG_WARN : FI_LOG_INFO;
  if (!port->link_up()) {
    link_down_since_ns = now;
    if (fi_log_enabled(&g_provider, level, FI_LOG_DOMAIN))
      fi_log(&g_provider, level, FI_LOG_DOMAIN, __func__, __LINE__,
             "%s: link down: nothing is sent or received until it comes back (what its "
             "peers do not acknowledge within FI_DPDK_PEER_TIMEOUT_MS fails)\n",
             port->name().c_str());
    return;
  }
  if (link_down_since_ns == 0) return;  // up at start, or a memif peer connecting
  if (fi_log_enabled(&g_provider, level, FI_LOG_DOMAIN))
    fi_log(&g_provider, level, FI_LOG_DOMAIN, __func__, __LINE__,
           "%s: link up again after %lu ms: what waits for an acknowledgement goes again now\n",
           port->name().c_str(),
           static_cast<unsigned long>((now - link_down_since_ns) / 1'000'000));
  link_down_since_ns = 0;
  for (Endpoint* ep : open_endpoints()) contain([&] { ep->engine->link_restored(now); });
}

uint32_t PortContext::pass(uint16_t lane, uint64_t now, bool helping) {
  // A port of one lane has only the whole.
  lane = effective_lane(lane);
  const bool whole = lane == kWholePort;
  net::Port& nic = *port;
  (whole ? last_progress_ns : lane_state[lane].last_progress_ns)
      .store(now, std::memory_order_relaxed);
  uint32_t received = 0;
  // Frames endpoints of this port sent each other (Endpoint::flush): they
  // never went to the device, which would not bring them back.  (Only on a
  // port of one lane: a port of several loops back.)
  std::vector<rte_mbuf*> batch;
  if (!looped.empty()) [[unlikely]] {
    batch.swap(looped);
    looped.reserve(kLoopbackFrames);
  }
  // Frames the endpoints held for later sends to join
  // (Endpoint::flush_unless_held) leave before the read: none will join
  // them now that the application polls, and their answers may be back
  // within this pass (a device that loops back, a fast peer).  (After the
  // swap: frames they loop back find the queue empty, behind the batch.)
  for (Endpoint* ep : open_endpoints())
    if (in_lane(ep, lane) && !ep->engine->outbox().empty()) ep->flush();
  received += static_cast<uint32_t>(batch.size());
  for (rte_mbuf* frame : batch) receive(frame, now);
  // No RX on a port whose link is down: a memif peer that went away.
  if (nic.link_up(now)) {
    // A busy queue is read in bursts of burst_frames(), and what they owe
    // (acks, data their acks let out) leaves before the next: with one
    // answer at the end of 32 frames, the peer would wait while we take
    // them all, and we while it answers.  (Vector PMDs want a multiple of
    // 4 or 8.)
    rte_mbuf* frames[kRxBurst];
    const uint16_t burst = std::min(nic.burst_frames(), kRxBurst);
    const uint16_t queues = lanes() > 1 && one_lane ? 1 : nic.queue_pairs();
    for (uint16_t queue = 0; queue < queues; ++queue) {
      if (!polls(queue) || (!whole && lane_of_queue[queue] != lane)) continue;
      for (uint16_t taken = 0;;) {
        const uint16_t count = nic.rx_burst(queue, frames, burst);
        received += count;
        taken += count;
        for (uint16_t i = 0; i < count; ++i) receive(frames[i], now, queue);
        if (count < burst || taken >= kRxBurst) break;
        answer(lane, now);
      }
    }
  }
  if (whole && nic.link_changes() != link_changes_seen) note_link_change(now);
  // Next hops frames wait for (UDP): asked again, or given up.
  if (whole && neighbour_copies.is_open() &&
      (framer->resolving_any() || now - neighbour_copies_read_ns >= kNeighbourCopiesNs))
    take_neighbour_copies(now);
  if (whole && framer->resolving_any()) framer->chase_neighbours(now);
  if (whole && kernel_ports.passes_through_xdp() &&
      now - xdp_rechecked_ns >= KernelPorts::kXdpRecheckNs) [[unlikely]]
    recheck_xdp(now);
  for (Endpoint* ep : open_endpoints()) {
    if (!in_lane(ep, lane)) continue;
    contain([&] {
      ep->engine->poll(now);
      ep->ipv6_holds.sweep_if_due(*ep->engine, now);
    });
    if (ep->engine->stats().timeouts != ep->timeouts_logged) log_timeouts(ep);
    ep->flush();
  }
  // Completions this pass counted may have reached a trigger's threshold.
  // (A port with triggered operations has one lane: assign_lanes.)
  if (whole && !triggered.empty()) run_due_triggers();
  if (!whole && !helping && received == 0) help_lanes_left_alone(lane, now);
  return received;
}

void PortContext::recheck_xdp(uint64_t now) {
  xdp_rechecked_ns = now;
  std::string why;
  if (!kernel_ports.recheck_xdp(&why))
    DPDK_WARN(FI_LOG_DOMAIN, "%s: its endpoints' frames may go to another process's socket: %s\n",
              port->name().c_str(), why.c_str());
}

bool PortContext::idle_long_enough(uint64_t& idle_since_ns, uint64_t now) {
  if (idle_since_ns == 0) idle_since_ns = now;
  if (now - idle_since_ns < idle_yield_ns) return false;
  ++idle_yields;
  return true;
}

}  // namespace ofi_dpdk::ofi
