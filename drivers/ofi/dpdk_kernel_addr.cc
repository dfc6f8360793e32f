// dpdk_kernel_addr.cc: the IPv4 address a port takes from the kernel
// interface it shares (net_af_packet, net_af_xdp), when FI_DPDK_PORT_ADDR
// gives it none: the kernel's address and prefix length on that
// interface, and the gateway of its default route through it.  Read once
// per fi_getinfo or port opening, from the process's network namespace.
#include <arpa/inet.h>
#include <ifaddrs.h>
#include <netinet/in.h>

#include <bit>
#include <cstdio>
#include <cstring>

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

}  // namespace

std::optional<ip::Interface> kernel_interface_address(const std::string& interface) {
  if (interface.empty()) return std::nullopt;
  ifaddrs* all = nullptr;
  if (getifaddrs(&all) != 0) return std::nullopt;
  std::optional<ip::Interface> found;
  for (const ifaddrs* a = all; a != nullptr && !found; a = a->ifa_next) {
    if (a->ifa_addr == nullptr || a->ifa_netmask == nullptr ||
        a->ifa_addr->sa_family != AF_INET || interface != a->ifa_name)
      continue;
    ip::Interface address;
    address.address = ntohl(reinterpret_cast<const sockaddr_in*>(a->ifa_addr)->sin_addr.s_addr);
    address.prefix_length = static_cast<uint8_t>(std::popcount(
        reinterpret_cast<const sockaddr_in*>(a->ifa_netmask)->sin_addr.s_addr));
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
