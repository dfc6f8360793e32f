// dpdk_ipv6_holds.cc: an endpoint's uses of the IPv6 peer table
// (dpdk_ipv6_holds.h).
#include "drivers/ofi/dpdk_ipv6_holds.h"

#include <cstring>

#include "drivers/ofi/dpdk_ipv6_peers.h"
#include "drivers/ofi/dpdk_log.h"

namespace ofi_dpdk::ofi {
namespace {

using Use = ip::Ipv6Peers::Use;

void id_of_key(uint64_t key, uint8_t id[6]) {
  // proto::peer_key: the queue above the six bytes of the link address.
  for (int i = 5; i >= 0; --i, key >>= 8) id[i] = static_cast<uint8_t>(key);
}

}  // namespace

void Ipv6Holds::note_connection(const proto::Engine& engine, uint64_t key) {
  if (engine.peer_session(key) == 0) return;  // no live connection (a stranger's frame)
  last_key_ = key;
  const auto [it, made] = connections_.try_emplace(key, false);
  if (!made) return;
  uint8_t id[6];
  id_of_key(key, id);
  it->second = hold_ipv6_peer(id, Use::kConnection);
  if (!it->second && holds_refused_++ == 0)
    DPDK_WARN(FI_LOG_EP_DATA,
              "the IPv6 peer table holds %zu peers for live connections alone, "
              "its most: a connection with a further one may lose its peer to strangers\n",
              ip::Ipv6Peers::kMaxConnected);
}

void Ipv6Holds::sweep(const proto::Engine& engine, uint64_t now) {
  next_sweep_ns_ = now + kSweepNs;
  last_key_ = 0;
  for (auto it = connections_.begin(); it != connections_.end();) {
    uint8_t id[6];
    id_of_key(it->first, id);
    if (engine.peer_session(it->first) == 0) {
      if (it->second) release_ipv6_peer(id, Use::kConnection);
      it = connections_.erase(it);
      continue;
    }
    if (!it->second) it->second = hold_ipv6_peer(id, Use::kConnection);
    ++it;
  }
}

void Ipv6Holds::adopt_named(const uint8_t id[6]) {
  std::array<uint8_t, 6> kept;
  std::memcpy(kept.data(), id, 6);
  try {
    named_.push_back(kept);
  } catch (const std::bad_alloc&) {
    release_ipv6_peer(id, Use::kNamed);  // not kept: given back at once
  }
}

bool Ipv6Holds::hold_named(const uint8_t id[6]) {
  if (!hold_ipv6_peer(id, Use::kNamed)) return false;
  adopt_named(id);
  return true;
}

void Ipv6Holds::release_named(const uint8_t id[6]) {
  for (auto it = named_.begin(); it != named_.end(); ++it) {
    if (std::memcmp(it->data(), id, 6) != 0) continue;
    release_ipv6_peer(id, Use::kNamed);
    named_.erase(it);
    return;
  }
}

void Ipv6Holds::release_all() {
  for (const auto& [key, held] : connections_) {
    if (!held) continue;
    uint8_t id[6];
    id_of_key(key, id);
    release_ipv6_peer(id, Use::kConnection);
  }
  connections_.clear();
  for (const auto& id : named_) release_ipv6_peer(id.data(), Use::kNamed);
  named_.clear();
  last_key_ = 0;
}

}  // namespace ofi_dpdk::ofi
