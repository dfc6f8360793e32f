// dpdk_neighbours.cc: addresses the program names by IP, made link
// addresses.  In UDP (FI_DPDK_ENCAP=udp) a peer named by address needs
// nothing resolved up front: it is named by its peer id, and its frames
// wait for the next hop's answer in the framer
// (drivers/frames/framer_neighbours.cc, which answers and asks ARP and
// neighbour discovery).  With FI_DPDK_ENCAP=l2 the peer itself is
// resolved when it is inserted (fi_av_insert, fi_connect), and frames
// travel with our EtherType to its MAC: one subnet, no further.  Also the
// static neighbours a port starts with, and the kernel's copies of
// neighbour frames on an af_xdp port.
#include <chrono>
#include <cstring>
#include <thread>

#include "drivers/ofi/dpdk_attr.h"
#include "drivers/ofi/dpdk_clock.h"
#include "drivers/ofi/dpdk_ipv6_peers.h"
#include "drivers/ofi/dpdk_log.h"
#include "drivers/ofi/dpdk_params.h"
#include "drivers/ofi/dpdk_port.h"

namespace ofi_dpdk::ofi {
namespace {

bool mac_is_zero(const uint8_t mac[6]) {
  static constexpr uint8_t kZero[6] = {};
  return std::memcmp(mac, kZero, 6) == 0;
}

}  // namespace

void PortContext::take_neighbour_copies(uint64_t now) {
  neighbour_copies_read_ns = now;
  // A few per pass: the socket's buffer bounds what waits, and what a
  // flood leaves there waits for the next passes.
  uint8_t frame[1514];
  for (int taken = 0; taken < 64; ++taken) {
    const size_t length = neighbour_copies.next(frame, sizeof frame);
    if (length == 0) return;
    framer->take_neighbour_frame(frame, length, now);
  }
}

namespace {

// Pins each (address, MAC) on the link of `interface` in `table`; returns
// how many.
template <typename Table, typename Interface, typename Entries>
size_t pin_on_link(Table& table, const std::optional<Interface>& interface, const Entries& entries,
                   const char* source, const std::string& port_name) {
  size_t pinned = 0;
  for (const auto& [address, mac] : entries) {
    if (!interface || !interface->on_link(address) || address == interface->address) continue;
    if (table.pin(address, mac.data()))
      ++pinned;
    else
      DPDK_WARN(FI_LOG_DOMAIN,
                "%s: static neighbour from %s not taken: %zu of them already, "
                "the most\n",
                port_name.c_str(), source, table.pinned());
  }
  return pinned;
}

}  // namespace

void PortContext::pin_static_neighbours(const KernelNeighbours& kernel,
                                        const std::string& kernel_interface) {
  const std::string& name = port->name();
  // The kernel's first: what FI_DPDK_NEIGHBOURS says of the same address
  // replaces it.
  const size_t from_kernel =
      pin_on_link(framer->neighbours, framer->interface, kernel.ipv4, "the kernel", name) +
      pin_on_link(framer->neighbours6, framer->interface6, kernel.ipv6, "the kernel", name);
  const size_t from_params = pin_on_link(framer->neighbours, framer->interface, params().neighbours,
                                         "FI_DPDK_NEIGHBOURS", name) +
                             pin_on_link(framer->neighbours6, framer->interface6,
                                         params().neighbours6, "FI_DPDK_NEIGHBOURS", name);
  if (from_kernel + from_params != 0)
    DPDK_INFO(FI_LOG_DOMAIN,
              "%s: %zu static neighbours from FI_DPDK_NEIGHBOURS, %zu the "
              "kernel's permanent ones on %s\n",
              name.c_str(), from_params, from_kernel,
              kernel_interface.empty() ? "(no interface)" : kernel_interface.c_str());
}

int PortContext::name_ipv6_peer(av::Address& a) const {
  const ip::Ipv6 address{a.ipv6};
  const std::string text = ip::format_ipv6(address);
  if (!framer->interface6) {
    DPDK_INFO(FI_LOG_AV, "%s has no IPv6 address (FI_DPDK_PORT_ADDR): cannot reach %s\n",
              port->name().c_str(), text.c_str());
    return -FI_EADDRNOTAVAIL;
  }
  if (!framer->interface6->unicast(address)) {
    DPDK_INFO(FI_LOG_AV,
              "%s names no peer: unspecified, loopback, multicast or "
              "IPv4-mapped\n",
              text.c_str());
    return -FI_EINVAL;
  }
  if (!framer->udp6) {
    DPDK_INFO(FI_LOG_AV, "%s: peers named by IPv6 address travel in UDP, and %s\n", text.c_str(),
              port->shared() ? "a shared port carries our EtherType only" : "FI_DPDK_ENCAP=l2");
    return -FI_EHOSTUNREACH;
  }
  if (framer->interface6->next_hop(address).unspecified()) {
    DPDK_INFO(FI_LOG_AV,
              "%s is not on %s's prefix %s, and it has no router "
              "(FI_DPDK_PORT_ADDR=IPV6/N@ROUTER)\n",
              text.c_str(), port->name().c_str(),
              ip::format_interface6(*framer->interface6).c_str());
    return -FI_EHOSTUNREACH;
  }
  // Its frames wait for the next hop's advertisement, if they must.
  if (!ipv6_peer_id(address, true, a.mac)) {
    DPDK_WARN(FI_LOG_AV, "%s: the process names %zu IPv6 peers already, the most it can\n",
              text.c_str(), ip::Ipv6Peers::kMaxPinned);
    return -FI_ENOSPC;
  }
  return 0;
}

std::vector<int> PortContext::resolve(const std::vector<av::Address*>& addresses) {
  std::vector<int> results(addresses.size(), 0);
  std::vector<size_t> waiting;
  for (size_t i = 0; i < addresses.size(); ++i) {
    av::Address& a = *addresses[i];
    if (a.ipv4 == 0 && a.has_ipv6() && mac_is_zero(a.mac)) {
      results[i] = name_ipv6_peer(a);
      continue;
    }
    // Named by MAC, or resolved already.  (A MAC may be zero: net_ring's.)
    if (a.ipv4 == 0 || !mac_is_zero(a.mac)) continue;
    if (framer->interface && !framer->interface->unicast(a.ipv4)) {
      DPDK_INFO(FI_LOG_AV, "%s names no peer: a broadcast or multicast address\n",
                ip::format_ipv4(a.ipv4).c_str());
      results[i] = -FI_EINVAL;
    } else if (framer->udp && framer->interface->next_hop(a.ipv4) != 0) {
      ip::peer_id_of(a.ipv4, a.mac);  // its frames wait for ARP, if they must
    } else if (!framer->interface) {
      DPDK_INFO(FI_LOG_AV, "%s has no IPv4 address (FI_DPDK_PORT_ADDR): cannot reach %s\n",
                port->name().c_str(), ip::format_ipv4(a.ipv4).c_str());
      results[i] = -FI_EADDRNOTAVAIL;
    } else if (a.ipv4 == framer->interface->address) {
      std::memcpy(a.mac, port->mac(), 6);
    } else if (!framer->interface->on_link(a.ipv4)) {
      DPDK_INFO(FI_LOG_AV,
                "%s is not on %s's subnet %s, and nothing reaches beyond it (that "
                "takes a gateway, FI_DPDK_PORT_ADDR=A.B.C.D/N@GW, and FI_DPDK_ENCAP=udp)\n",
                ip::format_ipv4(a.ipv4).c_str(), port->name().c_str(),
                ip::format_interface(*framer->interface).c_str());
      results[i] = -FI_EHOSTUNREACH;
    } else {
      waiting.push_back(i);
    }
  }
  const uint64_t start = now_ns();
  const uint64_t deadline = start + uint64_t{params().resolve_timeout_ms} * 1'000'000;
  uint64_t next_ask = start;
  while (!waiting.empty()) {
    const uint64_t now = now_ns();
    {
      std::lock_guard guard(lock);
      std::erase_if(waiting, [&](size_t i) {
        return framer->neighbours.find(addresses[i]->ipv4, now, addresses[i]->mac);
      });
      if (waiting.empty()) break;
      if (now >= deadline) break;
      if (now >= next_ask) {
        for (size_t i : waiting) framer->ask_neighbour_now(addresses[i]->ipv4, now);
        next_ask = now + frames::Framer::kArpRetryMs * 1'000'000;
      }
      progress();
    }
    std::this_thread::sleep_for(std::chrono::microseconds(20));
  }
  for (size_t i : waiting) {
    DPDK_INFO(FI_LOG_AV, "%s: no ARP answer from %s within %u ms\n", port->name().c_str(),
              ip::format_ipv4(addresses[i]->ipv4).c_str(), params().resolve_timeout_ms);
    results[i] = -FI_ETIMEDOUT;
  }
  return results;
}

}  // namespace ofi_dpdk::ofi
