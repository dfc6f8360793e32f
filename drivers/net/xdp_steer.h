// xdp_steer.h: the provider's own XDP program on an af_xdp port's
// interface (xdp/ofi_dpdk_steer.bpf.c), told which frames are the port's.
//
// net_af_xdp loads the program named by its xdp_prog= argument (the
// launcher gives ours) and fills its socket map; what the program hands
// the socket (the EtherType, the UDP ports) it reads from its map
// ofi_dpdk_config, filled here once the port is open.
#pragma once

#include <cstdint>
#include <string>

namespace ofi_dpdk::net {

// The map's value (struct config in the program).
struct XdpSteerConfig {
  uint16_t ether_type;  // host order
  uint16_t port_base;
  uint16_t port_count;
  uint16_t unused;
};

enum class XdpSteering {
  kNone,        // no XDP program on the interface, or not ours
  kSteered,     // ours, told the port's EtherType and ports
  kUnwritable,  // ours, but its map could not be written (*why)
};

// Whether the program on `interface` is ours; if so, writes `config`
// into its map.
XdpSteering steer_xdp(const std::string& interface, const XdpSteerConfig& config, std::string* why);

// Whether the XDP program on `interface` is ours.
bool has_steer_program(const std::string& interface);

// The kernel's id of the XDP program on `interface` if it is ours, else 0:
// a program detached and attached again (another process's port) has a
// new id and new, empty maps.
uint32_t steer_program_id(const std::string& interface);

// For a port of another process on the same interface (net_af_packet):
// whether the program there is ours; if so, sets (`passed`) or clears the
// entry of `queue` in its map ofi_dpdk_passed, so that the UDP of that
// queue's port goes to the kernel, and so to this port, not to the
// af_xdp port's socket.
XdpSteering pass_to_kernel(const std::string& interface, uint16_t queue, bool passed,
                           std::string* why);

}  // namespace ofi_dpdk::net
