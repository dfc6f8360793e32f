// dpdk_ipv6_holds.h: what one endpoint holds of the process's IPv6 peer
// table (lib/ip/ipv6_peers.h, drivers/frames/ipv6_peer_ids.h), so that no stranger's frame
// can take the place of a peer the endpoint still works with.
//   - Its connections: once the transport holds a live connection with a
//     peer named by an IPv6 peer id (it completed a handshake with us, or
//     answered ours), the id takes a connection use, one per (peer, queue);
//     a sweep every kSweepNs gives back those whose connection is gone or
//     closed (Engine::peer_session is 0: never live, reset, dropped,
//     unreachable).  Seen after each frame the engine took from such a
//     peer: one hash lookup per frame, the table's lock only when a
//     connection first appears and in the sweep.
//   - Its names: fi_connect's server and fi_accept's client take a named
//     use, given back when the endpoint closes.
// Everything is given back when the endpoint goes (the destructor).
#pragma once

#include <array>
#include <cstdint>
#include <unordered_map>
#include <vector>

#include "lib/ip/ipv6_peers.h"
#include "lib/proto/transport.h"

namespace ofi_dpdk::ofi {

class Ipv6Holds {
 public:
  static constexpr uint64_t kSweepNs = 1'000'000'000;

  Ipv6Holds() = default;
  Ipv6Holds(const Ipv6Holds&) = delete;
  Ipv6Holds& operator=(const Ipv6Holds&) = delete;
  ~Ipv6Holds() { release_all(); }

  // The engine took a frame from (link, queue): while it holds a live
  // connection with an IPv6 peer, the peer's id stays.  Port lock held.
  void after_frame(const proto::Engine& engine, const uint8_t link[6], uint16_t queue) {
    if (!ip::is_ipv6_peer_id(link)) return;
    const uint64_t key = proto::peer_key(link, queue);
    if (key != last_key_) note_connection(engine, key);
  }
  // Every kSweepNs: gives back the uses of connections that went, and
  // tries again those the table had no room for.  Port lock held.
  void sweep_if_due(const proto::Engine& engine, uint64_t now) {
    if (!connections_.empty() && now >= next_sweep_ns_) sweep(engine, now);
  }
  // A named use of `id` that ipv6_peer_id(..., true, id) took for this
  // endpoint: given back with the others.
  void adopt_named(const uint8_t id[6]);
  // Takes a named use of `id` for this endpoint; false when the id names
  // no peer any more, or the table names its most.
  bool hold_named(const uint8_t id[6]);
  // Gives back one named use of `id` this endpoint holds (a call that took
  // it failed after all).
  void release_named(const uint8_t id[6]);
  void release_all();

  size_t connections_held() const { return connections_.size(); }
  uint64_t holds_refused() const { return holds_refused_; }

 private:
  void note_connection(const proto::Engine& engine, uint64_t key);
  void sweep(const proto::Engine& engine, uint64_t now);

  // (peer, queue) key -> whether its id holds a use for it (false: the
  // table had no room; tried again at each sweep).  Only keys of live
  // connections: at most the engine's max_connections.
  std::unordered_map<uint64_t, bool> connections_;
  std::vector<std::array<uint8_t, 6>> named_;
  uint64_t last_key_ = 0;  // the last key noted (0 is no IPv6 peer's)
  uint64_t next_sweep_ns_ = 0;
  uint64_t holds_refused_ = 0;
};

}  // namespace ofi_dpdk::ofi
