// dpdk_lanes.cc: which lane each endpoint, CQ and counter of a port is in
// (see PortContext in dpdk_port.h).
#include <numeric>
#include <unordered_map>

#include "drivers/ofi/dpdk_cntr.h"
#include "drivers/ofi/dpdk_cq.h"
#include "drivers/ofi/dpdk_endpoint.h"
#include "drivers/ofi/dpdk_log.h"
#include "drivers/ofi/dpdk_port.h"

namespace ofi_dpdk::ofi {
namespace {

// Queue pairs joined into lanes: each lane is named by its lowest queue pair.
class QueueUnion {
 public:
  QueueUnion() { std::iota(parent_.begin(), parent_.end(), uint16_t{0}); }
  uint16_t find(uint16_t queue) {
    while (parent_[queue] != queue) queue = parent_[queue] = parent_[parent_[queue]];
    return queue;
  }
  void unite(uint16_t a, uint16_t b) {
    a = find(a);
    b = find(b);
    if (a < b) parent_[b] = a;
    if (b < a) parent_[a] = b;
  }

 private:
  std::array<uint16_t, kMaxLanes> parent_;
};

// Whether the endpoint reaches state lanes do not keep apart: connection
// management (listeners, requests, the EQ's flow), contexts that share a
// scalable endpoint's or a shared context's queues, triggered operations
// (the port's list), a domain whose application promised one thread at a
// time, or no completion object at all (nothing the
// application reads would progress it: Open MPI's one-sided BTL opens such
// an endpoint for RMA targets).
bool needs_one_lane(const Endpoint& ep) {
  // FI_THREAD_DOMAIN: the application makes one call at a time on the
  // whole domain, so one lock is all it needs.
  if (ep.domain->info->domain_attr->threading == FI_THREAD_DOMAIN) return true;
  const bool completes_somewhere = ep.tx_cq != nullptr || ep.rx_cq != nullptr ||
                                   ep.send_cntr != nullptr || ep.recv_cntr != nullptr ||
                                   ep.read_cntr != nullptr || ep.write_cntr != nullptr;
  return ep.is_msg() || ep.role != Endpoint::Role::kEndpoint || ep.srx != nullptr ||
         ep.stx != nullptr || ep.has_cap(FI_TRIGGER) || !completes_somewhere;
}

}  // namespace

void PortContext::assign_lanes() {
  if (lanes() == 1) return;  // the whole port is the one lane
  // IP on the port (neighbour tables, held frames, the peer table) and
  // triggered operations are the port's.
  bool single = !lanes_wanted || has_ip() || framer->udp || framer->udp6 || !triggered.empty();
  QueueUnion lanes_of;
  std::unordered_map<const void*, uint16_t> bound_at;  // a CQ or counter: a queue of its lane
  const auto bind = [&](const void* object, uint16_t queue) {
    if (object == nullptr) return;
    const auto [at, first] = bound_at.emplace(object, queue);
    if (!first) lanes_of.unite(at->second, queue);
  };
  uint32_t occupied = 0;
  for (Endpoint* ep : open_endpoints()) {
    if (ep == nullptr || !ep->enabled) continue;
    single |= needs_one_lane(*ep);
    const uint16_t queue = ep->hw_queue;
    occupied |= uint32_t{1} << queue;
    for (const void* object :
         {static_cast<const void*>(ep->tx_cq), static_cast<const void*>(ep->rx_cq),
          static_cast<const void*>(ep->send_cntr), static_cast<const void*>(ep->recv_cntr),
          static_cast<const void*>(ep->read_cntr), static_cast<const void*>(ep->write_cntr),
          static_cast<const void*>(ep->remote_read_cntr),
          static_cast<const void*>(ep->remote_write_cntr)})
      bind(object, queue);
  }
  bool all_in_zero = true;
  for (uint16_t queue = 0; queue < lanes(); ++queue) {
    lane_of_queue[queue] = single ? 0 : lanes_of.find(queue);
    all_in_zero &= lane_of_queue[queue] == 0;
  }
  one_lane = all_in_zero;
  occupied_queues = occupied;
  uint32_t leaders = 0;
  for (uint16_t queue = 0; queue < lanes(); ++queue)
    if (leads_lane(queue)) leaders |= uint32_t{1} << queue;
  leading_lanes.store(leaders, std::memory_order_relaxed);
  const auto set = [](auto* object, uint16_t lane) {
    if (object != nullptr) object->lane.store(lane, std::memory_order_relaxed);
  };
  for (Endpoint* ep : open_endpoints()) {
    if (ep == nullptr) continue;
    // A disabled endpoint's calls fail before they touch anything shared;
    // it takes the whole port until it is enabled.
    const uint16_t lane = ep->enabled ? lane_of_queue[ep->hw_queue] : kWholePort;
    set(ep, lane);
    if (!ep->enabled) continue;
    set(ep->tx_cq, lane);
    set(ep->rx_cq, lane);
    for (Cntr* cntr : {ep->send_cntr, ep->recv_cntr, ep->read_cntr, ep->write_cntr,
                       ep->remote_read_cntr, ep->remote_write_cntr})
      set(cntr, lane);
  }
}

bool PortContext::split_lanes() {
  // Lane 0's lock is held: the others, in order, make the whole port lock.
  for (uint16_t lane = 1; lane < lanes(); ++lane) lock.lane(lane).lock();
  // What still waits on queue pair 0, where every frame went until now, is
  // handed to its endpoints first: once split, a lane takes only frames for
  // its own endpoints off its queues.
  const uint64_t now = now_ns();
  rte_mbuf* frames[32];
  for (uint16_t count; (count = port->rx_burst(0, frames, 32)) != 0;)
    for (uint16_t i = 0; i < count; ++i) receive(frames[i], now);
  lanes_wanted = true;
  assign_lanes();
  for (uint16_t lane = lanes(); lane-- > 1;) lock.lane(lane).unlock();
  DPDK_INFO(FI_LOG_DOMAIN,
            "%s: two threads met on its lock: its %u queue pairs are now "
            "lanes of their own where nothing binds their endpoints together\n",
            port->name().c_str(), static_cast<unsigned>(lanes()));
  return !one_lane;
}

LaneLocks& whole_lock(PortContext& port) {
  return port.lock;
}
uint32_t progress_if_manual(PortContext& port) {
  return port.progress_if_manual();
}

}  // namespace ofi_dpdk::ofi
