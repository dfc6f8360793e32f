// dpdk_ipv6_peers.h: the process's table of IPv6 peer ids, which the
// framer keeps (drivers/frames/ipv6_peer_ids.h), as the provider names it.
#pragma once

#include "drivers/frames/ipv6_peer_ids.h"

namespace ofi_dpdk::ofi {

using frames::find_ipv6_peer_id;
using frames::hold_ipv6_peer;
using frames::ipv6_of_peer_id;
using frames::ipv6_peer_counts;
using frames::ipv6_peer_id;
using frames::Ipv6PeerCounts;
using frames::release_ipv6_peer;

}  // namespace ofi_dpdk::ofi
