// dpdk_kernel_ports.h: the UDP ports a port's endpoints are reached on,
// held with kernel sockets where the kernel shares the port's address.
//
// An af_packet or af_xdp port shares a kernel interface and, by default,
// its address: the kernel sees the frames the port sees.  Peers reach an
// endpoint in UDP to FI_DPDK_PORT_BASE + its queue; with nothing bound
// there, any local user could bind that port and read the pair's frames
// (tokens and all), or send from it in our address's name, and the kernel
// answers each frame with a port unreachable.  So while an endpoint (or a
// scalable endpoint's run of queues) has a queue, the port holds base +
// queue on each of its addresses the kernel has: a UDP socket bound without
// SO_REUSEADDR or SO_REUSEPORT, so no one else can bind that port on that
// address or the wildcard, with a filter that takes nothing, so the kernel
// drops what arrives there without queueing it or answering it.  The
// provider still reads its frames from the device: af_packet hands them
// over before the kernel's UDP sees them.  Control path only (fi_endpoint,
// fi_close); doc/wire-protocol.md, "Local users".
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>

#include "lib/ip/ipv4.h"
#include "lib/ip/ipv6.h"

namespace ofi_dpdk::ofi {

// Whether the kernel of this process's network namespace has `address`
// on any interface (it then takes a datagram for it on any interface,
// the shared one included).
bool kernel_has_ipv4(ip::Ipv4 address);
bool kernel_has_ipv6(const ip::Ipv6& address);

// Interfaces whose af_xdp port this process left to another process (its
// ports there go on af_packet, dpdk_init.cc): that process's XDP program
// may not be attached yet when this process opens its port.
void note_beside_af_xdp(const std::string& interface);
bool is_beside_af_xdp(const std::string& interface);

class KernelPorts {
 public:
  static constexpr uint16_t kQueues = 64;  // queues an endpoint may have

  KernelPorts() = default;
  KernelPorts(const KernelPorts&) = delete;
  KernelPorts& operator=(const KernelPorts&) = delete;
  ~KernelPorts();  // lets every port go

  // The addresses to hold ports on (each nullopt, or one the kernel has)
  // and the port of queue 0.  `port_name` names the port in messages.
  void hold_on(const std::string& port_name, std::optional<ip::Ipv4> ipv4,
               std::optional<ip::Ipv6> ipv6, uint16_t port_base);
  // Whether there is an address to hold ports on.
  bool active() const { return ipv4_.has_value() || ipv6_.has_value(); }
  // The addresses and ports held, for the log ("10.0.0.1 and fd00::1,
  // UDP ports 9228 + queue").
  std::string describe() const;

  // Holds base + queue on each address (again: nothing more).  Returns 0,
  // or -FI_EADDRINUSE when another socket has the port on one of them, or
  // the negative errno of a socket that cannot be made (-FI_EMFILE ...);
  // *why then says which address and port, and who holds it where /proc
  // tells (uid, pid and program).  On failure nothing is held.  A port
  // below the kernel's unprivileged range that this process may not bind
  // is left alone: other users may not bind it either.
  int hold(uint16_t queue, std::string* why);
  void release(uint16_t queue);
  bool holds(uint16_t queue) const;
  // An af_packet port on an interface whose XDP program is ours, or is
  // about to be (an af_xdp port of another process; `passes`): each queue
  // held also has the program pass its UDP to the kernel
  // (net::pass_to_kernel), until released.  The af_xdp port itself (not
  // `passes`) takes each queue it holds back, in case a process that passed
  // it died holding it.
  void pass_through_xdp(const std::string& interface, bool passes) {
    xdp_interface_ = interface;
    xdp_passes_ = passes;
  }
  bool passes_through_xdp() const { return xdp_passes_; }
  // For a port that passes: when the program on the interface is not the
  // one its queues were written into, writes them into the one there now.
  // A program attached after this port held its queues (two processes of
  // a fork open their ports at once, and the af_packet one is first) or
  // attached again (a new af_xdp port) starts with an empty map, and would
  // hand this port's frames to the af_xdp port's socket.  Control path (a
  // few system calls); the port's pass calls it every kXdpRecheckNs.
  // Returns false, with *why, when the program there cannot be told.
  bool recheck_xdp(std::string* why);
  static constexpr uint64_t kXdpRecheckNs = 200'000'000;

 private:
  struct Held {
    int ipv4 = -1;
    int ipv6 = -1;
    bool taken = false;
  };
  std::string port_name_;
  std::optional<ip::Ipv4> ipv4_;
  std::optional<ip::Ipv6> ipv6_;
  uint16_t port_base_ = 0;
  std::array<Held, kQueues> held_{};
  std::string xdp_interface_;
  bool xdp_passes_ = false;
  uint32_t passed_program_ = 0;  // the program recheck_xdp last wrote into
  int hold_sockets(uint16_t queue, std::string* why);
  bool pass(uint16_t queue, bool passed, std::string* why);
};

}  // namespace ofi_dpdk::ofi
