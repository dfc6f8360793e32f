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

// A port's own address on its segment.
struct Interface {
  Ipv4 address = 0;
  uint8_t prefix_length = 0;  // 0 to 32

  // Whether `other` is on this interface's subnet (a neighbour we can
  // reach without a router).
  bool on_link(Ipv4 other) const;
};

// "10.0.0.1/24" (a missing "/N" means /32).  nullopt on any error, and for
// 0.0.0.0, multicast, or broadcast addresses, which no port may own.
std::optional<Interface> parse_interface(std::string_view text);
std::string format_interface(const Interface& interface);

}  // namespace ofi_dpdk::ip
