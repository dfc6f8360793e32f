// dpdk_params.h: every FI_DPDK_* tunable, defined in one place
// (dpdk_params.cc) with fi_param_define so `fi_info -e` documents them.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "drivers/net/port.h"
#include "lib/ip/ipv4.h"
#include "lib/ip/ipv6.h"

struct fi_provider;

namespace ofi_dpdk::ofi {

struct Params {
  std::string eal_args;  // FI_DPDK_EAL_ARGS
  std::string ports;     // FI_DPDK_PORTS: ids or names, comma-separated
  net::SteeringRequest steering = net::SteeringRequest::kAuto;  // FI_DPDK_STEERING
  uint16_t ether_type = 0x88B5;                                 // FI_DPDK_ETHERTYPE
  uint16_t queues = 4;                                          // FI_DPDK_QUEUES
  size_t mbufs = 0;     // FI_DPDK_MBUFS, 0: sized from the attributes
  uint16_t mtu = 9000;  // FI_DPDK_MTU, 0: the device's
  // FI_DPDK_CHECKSUM; unset: on, but for links that are memory
  // (Framer::checksums, doc/wire-protocol.md "Integrity").
  std::optional<bool> checksum;
  // FI_DPDK_ECN; unset: on.  UDP frames say they are ECN-capable (ECT(0)),
  // and the transport reacts to the marks routers put on them.
  std::optional<bool> ecn;
  // FI_DPDK_OFFLOADS; unset: on.  The device computes and checks the IPv4
  // header and UDP checksums of frames in UDP where it offers to.
  std::optional<bool> offloads;
  bool mr_mode_minimal = false;          // FI_DPDK_MR_MODE=minimal (default: offered)
  size_t max_peers = 4096;               // FI_DPDK_MAX_PEERS
  size_t ipv6_peers = 32768;             // FI_DPDK_IPV6_PEERS: IPv6 peers the process names at once
  size_t unexpected_bytes = 64u << 20;   // FI_DPDK_UNEXPECTED_BYTES
  size_t rendezvous_bytes = 64u << 10;   // FI_DPDK_RENDEZVOUS_BYTES, 0: never
  size_t response_bytes = 64u << 20;     // FI_DPDK_RESPONSE_BYTES
  uint32_t bundle_bytes = 1024;          // FI_DPDK_BUNDLE_BYTES, 0: a frame per segment
  uint64_t peer_timeout_ms = 5000;       // FI_DPDK_PEER_TIMEOUT_MS
  uint32_t ack_delay_us = 20;            // FI_DPDK_ACK_DELAY_US
  uint32_t pace_from_us = 0;             // FI_DPDK_PACE_FROM_US, 0: never paced
  uint32_t delay_target_us = 0;          // FI_DPDK_DELAY_TARGET_US, 0: delay not read
  uint32_t connect_timeout_ms = 30000;   // FI_DPDK_CONNECT_TIMEOUT_MS
  uint64_t delivery_timeout_ms = 60000;  // FI_DPDK_DELIVERY_TIMEOUT_MS, 0: no limit
  int progress_lcore = -1;               // FI_DPDK_PROGRESS_LCORE, -1: first idle worker
  // FI_DPDK_PROGRESS_LCORES: a progress loop on each; empty: one loop, on
  // progress_lcore.
  std::vector<int> progress_lcores;
  static constexpr size_t kMaxProgressLoops = 16;
  uint32_t progress_net_ms = 2;  // FI_DPDK_PROGRESS_NET_MS, 0: no safety net
  uint32_t idle_yield_us = 5;    // FI_DPDK_IDLE_YIELD_US, 0: never yield
  net::FaultConfig faults;       // FI_DPDK_FAULT_*
  net::UnmapGuardRequest memif_unmap_guard =
      net::UnmapGuardRequest::kAuto;  // FI_DPDK_MEMIF_UNMAP_GUARD
  // FI_DPDK_PORT_ADDR: ports' IPv4 addresses, by port name ("" for the
  // entry that names none: every other port's).
  std::vector<std::pair<std::string, ip::Interface>> port_addrs;
  std::vector<std::pair<std::string, ip::Interface6>> port_addrs6;  // and IPv6 ones
  uint16_t port_base = 9228;  // FI_DPDK_PORT_BASE: the service port of queue 0
  // FI_DPDK_ENCAP: peers named by IPv4 address are reached in UDP/IPv4
  // (udp, the default) or resolved to MACs and sent our EtherType (l2).
  bool encap_udp = true;
  uint32_t resolve_timeout_ms = 3000;      // FI_DPDK_RESOLVE_TIMEOUT_MS
  uint32_t neighbour_lifetime_ms = 60000;  // FI_DPDK_NEIGHBOUR_LIFETIME_MS
  // FI_DPDK_NEIGHBOURS: static neighbours, pinned on each port whose link
  // they are on (never asked for, never replaced from the wire).
  std::vector<std::pair<ip::Ipv4, std::array<uint8_t, 6>>> neighbours;
  std::vector<std::pair<ip::Ipv6, std::array<uint8_t, 6>>> neighbours6;
  uint32_t routed_mtu = 1500;  // FI_DPDK_ROUTED_MTU, 0: the port's own
  uint32_t spray_paths = 1;    // FI_DPDK_SPRAY_PATHS: paths one connection uses at once
  // FI_DPDK_AUTH_KEY: the job key (16 to 64 bytes), whose keyed tag every
  // frame carries instead of its CRC (lib/proto/frame_tag.h); empty: none.
  std::vector<uint8_t> auth_key;
  bool auth_key_refused = false;  // set, but not a key: fi_domain fails
  std::string errors;             // parameter values that were refused, for the log
};

// The IPv4 interface of the port of that ethdev name: FI_DPDK_PORT_ADDR's
// entry for it, else its entry for every port, else the kernel's address on
// `kernel_interface` (the interface an af_packet or af_xdp port shares;
// net::PortDescription), if any.
std::optional<ip::Interface> port_interface(const std::string& port_name,
                                            const std::string& kernel_interface);
// The kernel's IPv4 address on `interface` with its prefix length, and the
// gateway of a default route through it; nullopt when it has none.
std::optional<ip::Interface> kernel_interface_address(const std::string& interface);
// The same for IPv6, each family on its own: FI_DPDK_PORT_ADDR's IPv6
// entry for the port, else its IPv6 entry for every port, else the
// kernel's global IPv6 address on the interface and its default router.
std::optional<ip::Interface6> port_interface6(const std::string& port_name,
                                              const std::string& kernel_interface);
std::optional<ip::Interface6> kernel_interface_address6(const std::string& interface);

// The neighbours the kernel holds permanent on `interface` (what an
// operator pinned with `ip neigh ... nud permanent`), at most `most` of
// each family, from rtnetlink (dpdk_kernel_neigh.cc); none when the
// interface is unknown or netlink does not answer within a second.
struct KernelNeighbours {
  std::vector<std::pair<ip::Ipv4, std::array<uint8_t, 6>>> ipv4;
  std::vector<std::pair<ip::Ipv6, std::array<uint8_t, 6>>> ipv6;
};
KernelNeighbours kernel_permanent_neighbours(const std::string& interface, size_t most);

// Registers the parameters with libfabric; called from fi_prov_ini.
void define_params(const fi_provider* provider);
// Reads them (once; later calls return the same values).
const Params& params();

// Whether a port reaches peers named by address in UDP/IPv4: it has an
// address, FI_DPDK_ENCAP is udp, and it is not a shared port (whose switch
// passes our EtherType alone).  fi_getinfo's answers and the domain's
// frames follow this one decision.
inline bool port_speaks_udp(bool has_address, bool shared_port) {
  return has_address && params().encap_udp && !shared_port;
}

}  // namespace ofi_dpdk::ofi
