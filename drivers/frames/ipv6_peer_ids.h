// ipv6_peer_ids.h: the process's table of IPv6 peer ids
// (lib/ip/ipv6_peers.h): one table for every port, behind its own lock, as
// an AV entry's id must name its peer on whichever port sends.  The
// framer names the senders of the UDP/IPv6 frames it receives here and
// reads the address of the peers it sends to; the provider names the peers
// the program inserts.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>

#include "lib/ip/ipv6.h"
#include "lib/ip/ipv6_peers.h"

namespace ofi_dpdk::frames {

// The most peers the program may name at once (FI_DPDK_IPV6_PEERS): read
// when the table is first used, so set before (acquire_port sets it as
// each port opens, before any address can be inserted).
void set_ipv6_peer_capacity(size_t named);

// The id of `address`, made if needed.  `pinned` for addresses the program
// names (AV inserts, connects): one named use taken, which its taker gives
// back with release_ipv6_peer (fi_av_remove, the endpoint's close); the
// receive path's strangers take none.  False: the table is full.
bool ipv6_peer_id(const ip::Ipv6& address, bool pinned, uint8_t id[6]);
// One more use of the peer `id` names (Ipv6Peers::hold), and giving one
// back.
bool hold_ipv6_peer(const uint8_t id[6], ip::Ipv6Peers::Use use);
void release_ipv6_peer(const uint8_t id[6], ip::Ipv6Peers::Use use);
struct Ipv6PeerCounts {
  size_t named, connected, strangers;
  uint64_t evictions;
};
Ipv6PeerCounts ipv6_peer_counts();  // for the logs
// The id of an address the table holds, making none.
bool find_ipv6_peer_id(const ip::Ipv6& address, uint8_t id[6]);
std::optional<ip::Ipv6> ipv6_of_peer_id(const uint8_t id[6]);

}  // namespace ofi_dpdk::frames
