// packet_ring.cc: see packet_ring.h.
#include "drivers/net/packet_ring.h"

#include <net/if.h>
#include <rte_ether.h>
#include <rte_mbuf.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <cstring>

namespace ofi_dpdk::net {

uint32_t packet_ring_mtu_limit(uint32_t frame_size) {
  const uint32_t lead = kPacketRingLead + RTE_ETHER_HDR_LEN;
  return frame_size > lead ? frame_size - lead : 0;
}

std::string packet_ring_devargs(uint32_t interface_mtu) {
  const uint32_t mtu = std::min(interface_mtu, kJumboMtu);
  if (mtu <= packet_ring_mtu_limit(kPacketRingDefaultFrame)) return {};
  // Frames in whole KiB, four to a block: blocks stay whole pages.
  const uint32_t needed = mtu + kPacketRingLead + RTE_ETHER_HDR_LEN;
  const uint32_t frame = (needed + 1023) / 1024 * 1024;
  return "framesz=" + std::to_string(frame) + ",blocksz=" + std::to_string(4 * frame);
}

std::optional<uint32_t> kernel_interface_mtu(const std::string& interface) {
  if (interface.empty() || interface.size() >= IFNAMSIZ) return std::nullopt;
  const int probe = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (probe < 0) return std::nullopt;
  ifreq request{};
  std::memcpy(request.ifr_name, interface.data(), interface.size());
  const int read = ioctl(probe, SIOCGIFMTU, &request);
  close(probe);
  if (read != 0 || request.ifr_mtu <= 0) return std::nullopt;
  return static_cast<uint32_t>(request.ifr_mtu);
}

std::optional<PacketRingMtu> packet_ring_mtu(const std::string& interface,
                                             const std::string& framesz) {
  const std::optional<uint32_t> interface_mtu = kernel_interface_mtu(interface);
  if (!interface_mtu) return std::nullopt;
  PacketRingMtu ring;
  ring.interface_mtu = *interface_mtu;
  ring.frame_size = kPacketRingDefaultFrame;
  uint32_t value = 0;
  const auto [end, error] = std::from_chars(framesz.data(), framesz.data() + framesz.size(), value);
  if (!framesz.empty() && error == std::errc() && end == framesz.data() + framesz.size() &&
      value > 0)
    ring.frame_size = value;
  const uint32_t limit = packet_ring_mtu_limit(ring.frame_size);
  // An mbuf's data room is 16 bits, headroom included.
  const uint32_t mbuf_limit = UINT16_MAX - RTE_PKTMBUF_HEADROOM - RTE_ETHER_HDR_LEN;
  ring.mtu = static_cast<uint16_t>(std::min({ring.interface_mtu, limit, mbuf_limit}));
  ring.mbuf_room = ring.frame_size > kPacketRingCopyLead
                       ? ring.frame_size - kPacketRingCopyLead + RTE_PKTMBUF_HEADROOM
                       : 0;
  if (ring.mtu < ring.interface_mtu && ring.mtu == limit) {
    const std::string wanted = packet_ring_devargs(ring.interface_mtu);
    ring.note = "interface MTU " + std::to_string(ring.interface_mtu) + ", ring frames of " +
                std::to_string(ring.frame_size) + " bytes" +
                (wanted.empty() ? "" : "; " + wanted + " for more, as dpdk-fi-run gives");
  }
  return ring;
}

}  // namespace ofi_dpdk::net
