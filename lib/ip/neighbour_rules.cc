#include "lib/ip/neighbour_rules.h"

#include <cstring>

namespace ofi_dpdk::ip {

std::optional<Verdict> refuse_arp_sender(const ArpMessage& message, const uint8_t frame_source[6],
                                         const Interface& interface) {
  if (!station_mac(message.sender_mac)) return Verdict::kBadMac;
  if (std::memcmp(message.sender_mac, frame_source, 6) != 0) return Verdict::kForgedSender;
  if (!interface.on_link(message.sender_ip) || !interface.unicast(message.sender_ip) ||
      message.sender_ip == interface.address)
    return Verdict::kOffLink;
  return std::nullopt;
}

NeighbourClaim neighbour_claim(const NeighbourMessage& message, const uint8_t frame_source[6]) {
  NeighbourClaim claim;
  claim.address =
      message.kind == NeighbourMessage::Kind::kSolicitation ? message.source : message.target;
  std::memcpy(claim.mac, message.has_link_address ? message.link_address : frame_source, 6);
  return claim;
}

std::optional<Verdict> refuse_neighbour_claim(const NeighbourMessage& message,
                                              const uint8_t frame_source[6],
                                              const Interface6& interface) {
  const NeighbourClaim claim = neighbour_claim(message, frame_source);
  if (!station_mac(claim.mac) || !station_mac(frame_source)) return Verdict::kBadMac;
  if (std::memcmp(claim.mac, frame_source, 6) != 0) return Verdict::kForgedSender;
  if (!interface.unicast(claim.address) || !interface.on_link(claim.address) ||
      claim.address == interface.address)
    return Verdict::kOffLink;
  return std::nullopt;
}

}  // namespace ofi_dpdk::ip
