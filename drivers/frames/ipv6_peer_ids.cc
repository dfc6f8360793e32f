// ipv6_peer_ids.cc: the process's IPv6 peer ids, behind one lock
// (ipv6_peer_ids.h).
#include "drivers/frames/ipv6_peer_ids.h"

#include <atomic>
#include <mutex>

namespace ofi_dpdk::frames {
namespace {

std::atomic<size_t> named_capacity{ip::Ipv6Peers::kMaxPinned};

struct PeerRegistry {
  std::mutex lock;
  ip::Ipv6Peers peers{ip::Ipv6Peers::kDefaultStrangerCapacity,
                      named_capacity.load(std::memory_order_relaxed), ip::Ipv6Peers::kMaxConnected};
};

PeerRegistry& registry() {
  static PeerRegistry* const instance = new PeerRegistry;  // never destroyed: ports outlive exit
  return *instance;
}

}  // namespace

void set_ipv6_peer_capacity(size_t named) {
  named_capacity.store(named, std::memory_order_relaxed);
}

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

}  // namespace ofi_dpdk::frames
