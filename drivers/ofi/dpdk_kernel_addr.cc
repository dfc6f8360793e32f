// dpdk_kernel_addr.cc: the IPv4 and IPv6 addresses a port takes from the
// kernel interface it shares (net_af_packet, net_af_xdp), when
// FI_DPDK_PORT_ADDR gives it none: the kernel's address and prefix length
// on that interface, and the gateway of its default route through it.
// Read once per fi_getinfo or port opening, from the process's network
// namespace.
#include <arpa/inet.h>
#include <ifaddrs.h>
#include <netinet/in.h>

#include <bit>
#include <cstdio>
#include <cstring>
#include <string_view>

#include "drivers/ofi/dpdk_params.h"

namespace ofi_dpdk::ofi {
namespace {

// The gateway of the default route through `interface`, from
// /proc/net/route (hex fields in the kernel's byte order); 0: none.
ip::Ipv4 default_gateway(const std::string& interface) {
  FILE* routes = std::fopen("/proc/net/route", "r");
  if (routes == nullptr) return 0;
  char line[256];
  ip::Ipv4 gateway = 0;
  bool header = true;
  while (gateway == 0 && std::fgets(line, sizeof line, routes) != nullptr) {
    if (header) {
      header = false;
      continue;
    }
    char name[64];
    unsigned destination = 0, via = 0, flags = 0, mask = 0;
    // Iface Destination Gateway Flags RefCnt Use Metric Mask ...
    if (std::sscanf(line, "%63s %x %x %x %*d %*d %*d %x", name, &destination, &via, &flags,
                    &mask) != 5)
      continue;
    constexpr unsigned kRouteUp = 0x1, kRouteGateway = 0x2;
    if (interface == name && destination == 0 && mask == 0 &&
        (flags & (kRouteUp | kRouteGateway)) == (kRouteUp | kRouteGateway))
      gateway = ntohl(via);
  }
  std::fclose(routes);
  return gateway;
}

// The router of the IPv6 default route through `interface`, from
// /proc/net/ipv6_route (32 hex digits an address); :: for none.
ip::Ipv6 default_router6(const std::string& interface) {
  FILE* routes = std::fopen("/proc/net/ipv6_route", "r");
  ip::Ipv6 router;
  if (routes == nullptr) return router;
  char line[256];
  while (router.unspecified() && std::fgets(line, sizeof line, routes) != nullptr) {
    char destination[33], next_hop[33], name[64];
    unsigned prefix = 0, flags = 0;
    // destination prefix source source-prefix next-hop metric refs use flags name
    if (std::sscanf(line, "%32s %x %*32s %*x %32s %*x %*x %*x %x %63s", destination, &prefix,
                    next_hop, &flags, name) != 5)
      continue;
    constexpr unsigned kRouteUp = 0x1, kRouteGateway = 0x2;
    if (interface != name || prefix != 0 ||
        std::string_view(destination).find_first_not_of('0') != std::string_view::npos ||
        (flags & (kRouteUp | kRouteGateway)) != (kRouteUp | kRouteGateway))
      continue;
    for (int i = 0; i < 16; ++i) {
      unsigned byte = 0;
      if (std::sscanf(next_hop + 2 * i, "%2x", &byte) != 1) break;
      router.bytes[i] = static_cast<uint8_t>(byte);
    }
  }
  std::fclose(routes);
  return router;
}

}  // namespace

std::optional<ip::Interface6> kernel_interface_address6(const std::string& interface) {
  if (interface.empty()) return std::nullopt;
  ifaddrs* all = nullptr;
  if (getifaddrs(&all) != 0) return std::nullopt;
  std::optional<ip::Interface6> found;
  for (const ifaddrs* a = all; a != nullptr && !found; a = a->ifa_next) {
    if (a->ifa_addr == nullptr || a->ifa_netmask == nullptr || a->ifa_addr->sa_family != AF_INET6 ||
        interface != a->ifa_name)
      continue;
    ip::Interface6 address;
    std::memcpy(address.address.bytes.data(),
                reinterpret_cast<const sockaddr_in6*>(a->ifa_addr)->sin6_addr.s6_addr, 16);
    // Link-local addresses are every interface's; a router forwards none.
    if (address.address.link_local() || address.address.loopback()) continue;
    const uint8_t* mask = reinterpret_cast<const sockaddr_in6*>(a->ifa_netmask)->sin6_addr.s6_addr;
    int prefix = 0;
    for (int i = 0; i < 16; ++i) prefix += std::popcount(mask[i]);
    address.prefix_length = static_cast<uint8_t>(prefix);
    found = address;
  }
  freeifaddrs(all);
  if (found) {
    const ip::Ipv6 router = default_router6(interface);
    if (!router.unspecified() && router != found->address && found->on_link(router))
      found->gateway = router;
  }
  return found;
}

std::optional<ip::Interface> kernel_interface_address(const std::string& interface) {
  if (interface.empty()) return std::nullopt;
  ifaddrs* all = nullptr;
  if (getifaddrs(&all) != 0) return std::nullopt;
  std::optional<ip::Interface> found;
  for (const ifaddrs* a = all; a != nullptr && !found; a = a->ifa_next) {
    if (a->ifa_addr == nullptr || a->ifa_netmask == nullptr || a->ifa_addr->sa_family != AF_INET ||
        interface != a->ifa_name)
      continue;
    ip::Interface address;
    address.address = ntohl(reinterpret_cast<const sockaddr_in*>(a->ifa_addr)->sin_addr.s_addr);
    address.prefix_length = static_cast<uint8_t>(
        std::popcount(reinterpret_cast<const sockaddr_in*>(a->ifa_netmask)->sin_addr.s_addr));
    found = address;
  }
  freeifaddrs(all);
  if (found) {
    const ip::Ipv4 gateway = default_gateway(interface);
    if (gateway != 0 && gateway != found->address && found->on_link(gateway))
      found->gateway = gateway;
  }
  return found;
}

}  // namespace ofi_dpdk::ofi
