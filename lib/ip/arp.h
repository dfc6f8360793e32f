// arp.h: ARP for IPv4 over Ethernet (RFC 826), the frames a port with an
// IPv4 address sends and answers so that peers can name it by that address
// and it can name them.  Pure byte work: no DPDK, no state.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>

#include "lib/ip/ipv4.h"

namespace ofi_dpdk::ip {

inline constexpr uint16_t kEtherTypeArp = 0x0806;
// Ethernet header (14) and the ARP body for Ethernet/IPv4 (28).
inline constexpr size_t kArpLength = 42;
// What build_arp writes: the body padded to Ethernet's minimum frame
// (without its FCS), as every sender must.
inline constexpr size_t kArpFrameSize = 60;

enum class ArpOp : uint16_t { kRequest = 1, kReply = 2 };

struct ArpMessage {
  ArpOp op = ArpOp::kRequest;
  uint8_t sender_mac[6] = {};
  Ipv4 sender_ip = 0;
  uint8_t target_mac[6] = {};  // zero in a request
  Ipv4 target_ip = 0;
};

// A request for `target` from (mac, ip), to the broadcast address.
ArpMessage arp_request(const uint8_t mac[6], Ipv4 ip, Ipv4 target);
// The reply of (mac, ip), the address `request` asked for, to its sender.
ArpMessage arp_reply(const ArpMessage& request, const uint8_t mac[6]);

// Writes the frame (kArpFrameSize bytes) to `out`: from message.sender_mac,
// to the broadcast address for a request, to target_mac for a reply.  A
// request with `to` goes to that MAC alone (RFC 1122 2.3.2.1's unicast
// poll of a neighbour whose address we hold).
void build_arp(const ArpMessage& message, uint8_t out[kArpFrameSize], const uint8_t* to = nullptr);

// The message of an ARP frame for Ethernet and IPv4, whole; nullopt for
// any other frame, a short one, another hardware or protocol type, or an
// operation other than request and reply.
std::optional<ArpMessage> parse_arp(const uint8_t* frame, size_t length);

}  // namespace ofi_dpdk::ip
