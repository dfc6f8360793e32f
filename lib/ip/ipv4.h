// ipv4.h: IPv4 addresses as the provider names ports and peers by them:
// host byte order in memory, dotted quads in text, and a port's interface
// (its address and prefix length, FI_DPDK_PORT_ADDR).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace ofi_dpdk::ip {

// Host byte order; 0 (0.0.0.0) means "none".
using Ipv4 = uint32_t;

// "10.0.0.1": four decimal octets, nothing else.  nullopt on any error.
std::optional<Ipv4> parse_ipv4(std::string_view text);
std::string format_ipv4(Ipv4 address);

// A port's own address on its segment, and the router beyond it.
struct Interface {
  Ipv4 address = 0;
  uint8_t prefix_length = 0;  // 0 to 32
  Ipv4 gateway = 0;           // 0: none (the subnet is all it reaches)

  // Whether `other` is on this interface's subnet (a neighbour we can
  // reach without a router).
  bool on_link(Ipv4 other) const;
  // The neighbour a frame for `destination` goes to: itself on the
  // subnet, else the gateway; 0 when there is none.
  Ipv4 next_hop(Ipv4 destination) const;
  // Whether `other` may be a peer: not 0.0.0.0, multicast, reserved or
  // broadcast, nor this subnet's broadcast address.
  bool unicast(Ipv4 other) const;
};

// "10.0.0.1/24" (a missing "/N" means /32), optionally "@GATEWAY"
// ("10.0.1.2/24@10.0.1.1").  nullopt on any error, for 0.0.0.0, multicast,
// or broadcast addresses, which no port may own, and for a gateway off the
// subnet or the address itself.
std::optional<Interface> parse_interface(std::string_view text);
std::string format_interface(const Interface& interface);

}  // namespace ofi_dpdk::ip
