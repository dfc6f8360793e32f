// neighbour_rules.h: what a neighbour message must be before the
// neighbour table hears its claim (lib/ip/neighbour_table.h decides what
// the claim may change): its sender a station on the interface's link,
// and the MAC it claims the one its frame came from.  Pure: no state.
#pragma once

#include <cstdint>
#include <optional>

#include "lib/ip/arp.h"
#include "lib/ip/icmp6.h"
#include "lib/ip/neighbour_table.h"

namespace ofi_dpdk::ip {

// Why an ARP message's sender (sender_ip, sender_mac) is not taken, or
// nullopt when it may be: kBadMac for a group or zero sender MAC,
// kForgedSender when it is not `frame_source` (the Ethernet source),
// kOffLink for an address that is no unicast neighbour's on the
// interface's subnet (a broadcast, 0, another subnet's, the interface's
// own).
std::optional<Verdict> refuse_arp_sender(const ArpMessage& message, const uint8_t frame_source[6],
                                         const Interface& interface);

// What a neighbour discovery message claims: a solicitation, that its
// source has the MAC of its source link-layer option; an advertisement,
// that its target has the MAC of its target link-layer option; either,
// without the option, the frame's source MAC.
struct NeighbourClaim {
  Ipv6 address;
  uint8_t mac[6] = {};
};
NeighbourClaim neighbour_claim(const NeighbourMessage& message, const uint8_t frame_source[6]);

// Why that claim is not taken, or nullopt when it may be: kBadMac,
// kForgedSender (an option's MAC that is not the frame's source), kOffLink
// (an address neither on the interface's prefix nor link-local, not
// unicast, or the interface's own; :: among them: a solicitation checking
// for a duplicate teaches nothing).
std::optional<Verdict> refuse_neighbour_claim(const NeighbourMessage& message,
                                              const uint8_t frame_source[6],
                                              const Interface6& interface);

}  // namespace ofi_dpdk::ip
