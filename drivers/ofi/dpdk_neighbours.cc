// dpdk_neighbours.cc: a port's IPv4 neighbours.  A port with an address
// (FI_DPDK_PORT_ADDR) answers ARP requests for it, so that peers and
// routers can name it by IPv4 address, and asks for the MACs of its next
// hops.  In UDP (FI_DPDK_ENCAP=udp, dpdk_udp.cc) a peer named by address
// needs nothing resolved up front: its frames wait for the next hop's
// answer.  With FI_DPDK_ENCAP=l2 the peer itself is resolved when it is
// inserted (fi_av_insert, fi_connect), and frames travel with our
// EtherType to its MAC: one subnet, no further.
#include <rte_mbuf.h>

#include <chrono>
#include <cstring>
#include <thread>

#include "drivers/net/mbuf_handoff.h"
#include "drivers/ofi/dpdk_attr.h"
#include "drivers/ofi/dpdk_clock.h"
#include "drivers/ofi/dpdk_ipv6_peers.h"
#include "drivers/ofi/dpdk_log.h"
#include "drivers/ofi/dpdk_params.h"
#include "drivers/ofi/dpdk_port.h"
#include "lib/ip/arp.h"
#include "lib/ip/neighbour_rules.h"

namespace ofi_dpdk::ofi {
namespace {

bool mac_is_zero(const uint8_t mac[6]) {
  static constexpr uint8_t kZero[6] = {};
  return std::memcmp(mac, kZero, 6) == 0;
}

// Sends one ARP frame (send_built: false when it could not be sent; the
// caller asks again later, as for a lost frame).
bool send_arp(PortContext& ctx, const ip::ArpMessage& message) {
  return ctx.send_built(ip::kArpFrameSize, [&](uint8_t* out) {
    ip::build_arp(message, out);
    return ip::kArpFrameSize;
  });
}

}  // namespace

bool PortContext::send_built(size_t capacity, const std::function<size_t(uint8_t*)>& build) {
  rte_mbuf* frame = port->alloc_frame();
  if (frame == nullptr) return false;
  auto* bytes =
      reinterpret_cast<uint8_t*>(rte_pktmbuf_append(frame, static_cast<uint16_t>(capacity)));
  const size_t length = bytes == nullptr ? 0 : build(bytes);
  if (length != 0) {
    rte_pktmbuf_trim(frame, static_cast<uint16_t>(capacity - length));
    if (transmit(0, &frame, 1) == 1) return true;
  }
  net::free_frame(frame);
  return false;
}

void PortContext::take_arp(const uint8_t* frame, size_t length, uint64_t now) {
  const auto message = ip::parse_arp(frame, length);
  if (!message || !interface || message->target_ip != interface->address) {
    ++arp_ignored;
    return;
  }
  // A sender we would not send to is neither answered nor heard (a
  // group or zero MAC, one its frame did not come from, an address off
  // the subnet).
  if (const auto refusal = ip::refuse_arp_sender(*message, frame + 6, *interface)) {
    neighbours.refuse(*refusal);
    return;
  }
  const ip::Ipv4 sender = message->sender_ip;
  ip::Verdict verdict;
  if (message->op == ip::ArpOp::kRequest) {
    // Answered whatever it claims, so that the asker can reach us; heard
    // only as the answer to a question of ours (lib/ip/neighbour_table.h).
    // An asker we do not know is asked back, one that disagrees with a
    // live entry makes us ask again.
    if (send_arp(*this, ip::arp_reply(*message, port->mac()))) ++arp_requests_answered;
    bool ask_now = false;
    verdict = neighbours.take_request(sender, message->sender_mac, now, &ask_now);
    if (ask_now) send_arp(*this, ip::arp_request(port->mac(), interface->address, sender));
  } else if (std::memcmp(message->target_mac, port->mac(), 6) != 0 ||
             std::memcmp(frame, port->mac(), 6) != 0) {
    ++arp_ignored;
    return;
  } else {
    verdict = neighbours.take_answer(sender, message->sender_mac, now);
  }
  if (verdict == ip::Verdict::kLearned && !waiting_frames.empty())
    send_waiting(ip::mapped_ipv4(sender), message->sender_mac);
}

void PortContext::take_neighbour_copies(uint64_t now) {
  neighbour_copies_read_ns = now;
  // A few per pass: the socket's buffer bounds what waits, and what a
  // flood leaves there waits for the next passes.
  uint8_t frame[1514];
  for (int taken = 0; taken < 64; ++taken) {
    const size_t length = neighbour_copies.next(frame, sizeof frame);
    if (length == 0) return;
    const uint16_t type = length >= 14 ? uint16_t(frame[12] << 8 | frame[13]) : 0;
    if (type == ip::kEtherTypeArp) {
      take_arp(frame, length, now);
    } else if (type == ip::kEtherTypeIpv6) {
      ip::Ipv6Packet packet;
      bool to_us = false;
      take_ipv6_neighbour(frame, length, now, &packet, &to_us);
    }
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
  const size_t from_kernel = pin_on_link(neighbours, interface, kernel.ipv4, "the kernel", name) +
                             pin_on_link(neighbours6, interface6, kernel.ipv6, "the kernel", name);
  const size_t from_params =
      pin_on_link(neighbours, interface, params().neighbours, "FI_DPDK_NEIGHBOURS", name) +
      pin_on_link(neighbours6, interface6, params().neighbours6, "FI_DPDK_NEIGHBOURS", name);
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
  if (!interface6) {
    DPDK_INFO(FI_LOG_AV, "%s has no IPv6 address (FI_DPDK_PORT_ADDR): cannot reach %s\n",
              port->name().c_str(), text.c_str());
    return -FI_EADDRNOTAVAIL;
  }
  if (!interface6->unicast(address)) {
    DPDK_INFO(FI_LOG_AV,
              "%s names no peer: unspecified, loopback, multicast or "
              "IPv4-mapped\n",
              text.c_str());
    return -FI_EINVAL;
  }
  if (!udp6) {
    DPDK_INFO(FI_LOG_AV, "%s: peers named by IPv6 address travel in UDP, and %s\n", text.c_str(),
              port->shared() ? "a shared port carries our EtherType only" : "FI_DPDK_ENCAP=l2");
    return -FI_EHOSTUNREACH;
  }
  if (interface6->next_hop(address).unspecified()) {
    DPDK_INFO(FI_LOG_AV,
              "%s is not on %s's prefix %s, and it has no router "
              "(FI_DPDK_PORT_ADDR=IPV6/N@ROUTER)\n",
              text.c_str(), port->name().c_str(), ip::format_interface6(*interface6).c_str());
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
    if (interface && !interface->unicast(a.ipv4)) {
      DPDK_INFO(FI_LOG_AV, "%s names no peer: a broadcast or multicast address\n",
                ip::format_ipv4(a.ipv4).c_str());
      results[i] = -FI_EINVAL;
    } else if (udp && interface->next_hop(a.ipv4) != 0) {
      ip::peer_id_of(a.ipv4, a.mac);  // its frames wait for ARP, if they must
    } else if (!interface) {
      DPDK_INFO(FI_LOG_AV, "%s has no IPv4 address (FI_DPDK_PORT_ADDR): cannot reach %s\n",
                port->name().c_str(), ip::format_ipv4(a.ipv4).c_str());
      results[i] = -FI_EADDRNOTAVAIL;
    } else if (a.ipv4 == interface->address) {
      std::memcpy(a.mac, port->mac(), 6);
    } else if (!interface->on_link(a.ipv4)) {
      DPDK_INFO(FI_LOG_AV,
                "%s is not on %s's subnet %s, and nothing reaches beyond it (that "
                "takes a gateway, FI_DPDK_PORT_ADDR=A.B.C.D/N@GW, and FI_DPDK_ENCAP=udp)\n",
                ip::format_ipv4(a.ipv4).c_str(), port->name().c_str(),
                ip::format_interface(*interface).c_str());
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
        return neighbours.find(addresses[i]->ipv4, now, addresses[i]->mac);
      });
      if (waiting.empty()) break;
      if (now >= deadline) break;
      if (now >= next_ask) {
        for (size_t i : waiting) {
          const uint32_t target = addresses[i]->ipv4;
          if (neighbours.expect(target, now))
            send_arp(*this, ip::arp_request(port->mac(), interface->address, target));
        }
        next_ask = now + kArpRetryMs * 1'000'000;
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

bool PortContext::ask_neighbour(uint32_t ip, uint64_t now) {
  if (!interface || now - last_neighbour_ask_ns < kArpRetryMs * 1'000'000) return false;
  last_neighbour_ask_ns = now;
  ask_neighbour_now(ip, now);
  return true;
}

void PortContext::ask_neighbour_now(uint32_t ip, uint64_t now) {
  if (interface && neighbours.expect(ip, now))
    send_arp(*this, ip::arp_request(port->mac(), interface->address, ip));
}

void PortContext::name_by_ip(av::Address* address) const {
  if (std::memcmp(address->mac, port->mac(), 6) == 0) {
    if (interface && address->ipv4 == 0) address->ipv4 = interface->address;
    if (interface6 && !address->has_ipv6()) address->ipv6 = interface6->address.bytes;
    return;
  }
  if (address->has_ip()) return;
  if (ip::is_ipv6_peer_id(address->mac)) {
    if (const auto known = ipv6_of_peer_id(address->mac)) address->ipv6 = known->bytes;
    return;
  }
  if (!interface) return;
  if (ip::is_peer_id(address->mac)) {
    address->ipv4 = ip::address_of_peer_id(address->mac);
  } else if (auto known = neighbours.address_of(address->mac, now_ns())) {
    address->ipv4 = *known;
  }
}

}  // namespace ofi_dpdk::ofi
