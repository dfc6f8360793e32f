// dpdk_neighbour_copies.h: copies of the ARP and neighbour discovery frames
// the kernel receives on an af_xdp port's interface.
//
// An af_xdp port whose XDP program is the provider's own
// (drivers/net/xdp/ofi_dpdk_steer.bpf.c) gets only its own frames; ARP and
// neighbour discovery go to the kernel, which shares the interface, its MAC
// and its addresses, and answers the questions asked of them itself.  The
// port still has to learn its peers' MACs from the answers to its own
// questions: it reads copies of those frames from an AF_PACKET socket
// bound to the interface, with a filter that takes ARP and ICMPv6
// neighbour solicitations and advertisements only.  Those copies go
// through the port's own rules (drivers/frames/framer_neighbours.cc): an
// answer is heard only when the port asked.  Where the XDP program hands
// the port every frame (net_af_xdp's default), no copy arrives and the
// frames come through the device as before.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <string>

namespace ofi_dpdk::ofi {

class NeighbourCopies {
 public:
  NeighbourCopies() = default;
  NeighbourCopies(const NeighbourCopies&) = delete;
  NeighbourCopies& operator=(const NeighbourCopies&) = delete;
  ~NeighbourCopies();

  // Opens the socket on `interface`; false (with *why) when it cannot.
  bool open(const std::string& interface, std::string* why);
  bool is_open() const { return fd_ >= 0; }
  // The next frame the interface received into `frame` (at most
  // `capacity` bytes): its length, or 0 when there is none now.
  size_t next(uint8_t* frame, size_t capacity);

 private:
  int fd_ = -1;
};

}  // namespace ofi_dpdk::ofi
