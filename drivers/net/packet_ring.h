// packet_ring.h: the MTU of a net_af_packet port, from its kernel interface
// and the size of its ring's frames.
//
// net_af_packet reports MTU 1500 whatever its interface has, and setting it
// would change the host's interface.  What it can carry is the interface's
// MTU within one frame of its PACKET_MMAP rings (devarg framesz, 2048 bytes
// by default): the kernel writes a received frame 66 bytes into a ring
// frame and cuts what does not fit, and the driver refuses a receive queue
// whose ring frame, less 32 bytes, would not fit one mbuf.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace ofi_dpdk::net {

// Bytes before a received Ethernet frame in a ring frame (TPACKET_V2): the
// kernel puts the network header at the 32-byte tpacket2_hdr plus a
// sockaddr_ll plus 16 bytes of link header, aligned to 16 (80), and the
// 14-byte Ethernet header before it.
inline constexpr uint32_t kPacketRingLead = 66;
// Bytes of a ring frame the driver copies into an mbuf at most.
inline constexpr uint32_t kPacketRingCopyLead = 32;
// net_af_packet's default ring frame.
inline constexpr uint32_t kPacketRingDefaultFrame = 2048;

struct PacketRingMtu {
  uint16_t mtu = 0;            // what the port carries
  uint32_t interface_mtu = 0;  // the kernel interface's (0: not read)
  uint32_t frame_size = 0;     // the ring's frames (framesz)
  uint32_t mbuf_room = 0;      // data room (headroom included) an mbuf needs
  std::string note;            // why the MTU is below the interface's, or empty
};

// The largest MTU a ring of `frame_size`-byte frames carries whole.
uint32_t packet_ring_mtu_limit(uint32_t frame_size);

// The devargs that give a ring frames for `interface_mtu` (framesz and
// blocksz, four frames a block), or empty when the default frame holds it.
// Capped at kJumboMtu: a larger interface MTU (lo's 65536) gets jumbo frames.
inline constexpr uint32_t kJumboMtu = 9216;
std::string packet_ring_devargs(uint32_t interface_mtu);

// A kernel interface's MTU, read by name (SIOCGIFMTU in this process's
// network namespace); nullopt when it cannot be read.  (net_af_xdp, which
// also reports 1500 whatever its interface has, follows it too: port.cc.)
std::optional<uint32_t> kernel_interface_mtu(const std::string& interface);

// The port's MTU: the interface's (read by name, SIOCGIFMTU in this
// process's network namespace) within the ring's frames (`framesz`, the
// devarg's text, empty for the default).  nullopt when the interface
// cannot be read.
std::optional<PacketRingMtu> packet_ring_mtu(const std::string& interface,
                                             const std::string& framesz);

}  // namespace ofi_dpdk::net
