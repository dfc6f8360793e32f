#include "lib/ip/arp.h"

#include <cstring>

#include "lib/ip/byte_order.h"

namespace ofi_dpdk::ip {
namespace {

constexpr uint16_t kHardwareEthernet = 1;
constexpr uint16_t kProtocolIpv4 = 0x0800;
constexpr uint8_t kBroadcast[6] = {0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF};

// Offsets of the ARP body's fields from the frame's start.
constexpr size_t kBody = 14;
constexpr size_t kHardwareType = kBody + 0;
constexpr size_t kProtocolType = kBody + 2;
constexpr size_t kHardwareLength = kBody + 4;
constexpr size_t kProtocolLength = kBody + 5;
constexpr size_t kOperation = kBody + 6;
constexpr size_t kSenderMac = kBody + 8;
constexpr size_t kSenderIp = kBody + 14;
constexpr size_t kTargetMac = kBody + 18;
constexpr size_t kTargetIp = kBody + 24;

}  // namespace

ArpMessage arp_request(const uint8_t mac[6], Ipv4 ip, Ipv4 target) {
  ArpMessage request;
  request.op = ArpOp::kRequest;
  std::memcpy(request.sender_mac, mac, 6);
  request.sender_ip = ip;
  request.target_ip = target;
  return request;
}

ArpMessage arp_reply(const ArpMessage& request, const uint8_t mac[6]) {
  ArpMessage reply;
  reply.op = ArpOp::kReply;
  std::memcpy(reply.sender_mac, mac, 6);
  reply.sender_ip = request.target_ip;
  std::memcpy(reply.target_mac, request.sender_mac, 6);
  reply.target_ip = request.sender_ip;
  return reply;
}

void build_arp(const ArpMessage& message, uint8_t out[kArpFrameSize], const uint8_t* to) {
  std::memset(out, 0, kArpFrameSize);
  const uint8_t* destination = message.op == ArpOp::kRequest ? kBroadcast : message.target_mac;
  std::memcpy(out, message.op == ArpOp::kRequest && to != nullptr ? to : destination, 6);
  std::memcpy(out + 6, message.sender_mac, 6);
  put16(out + 12, kEtherTypeArp);
  put16(out + kHardwareType, kHardwareEthernet);
  put16(out + kProtocolType, kProtocolIpv4);
  out[kHardwareLength] = 6;
  out[kProtocolLength] = 4;
  put16(out + kOperation, static_cast<uint16_t>(message.op));
  std::memcpy(out + kSenderMac, message.sender_mac, 6);
  put32(out + kSenderIp, message.sender_ip);
  std::memcpy(out + kTargetMac, message.target_mac, 6);
  put32(out + kTargetIp, message.target_ip);
}

std::optional<ArpMessage> parse_arp(const uint8_t* frame, size_t length) {
  if (frame == nullptr || length < kArpLength) return std::nullopt;
  if (get16(frame + 12) != kEtherTypeArp || get16(frame + kHardwareType) != kHardwareEthernet ||
      get16(frame + kProtocolType) != kProtocolIpv4 || frame[kHardwareLength] != 6 ||
      frame[kProtocolLength] != 4)
    return std::nullopt;
  const uint16_t op = get16(frame + kOperation);
  if (op != static_cast<uint16_t>(ArpOp::kRequest) && op != static_cast<uint16_t>(ArpOp::kReply))
    return std::nullopt;
  ArpMessage message;
  message.op = static_cast<ArpOp>(op);
  std::memcpy(message.sender_mac, frame + kSenderMac, 6);
  message.sender_ip = get32(frame + kSenderIp);
  std::memcpy(message.target_mac, frame + kTargetMac, 6);
  message.target_ip = get32(frame + kTargetIp);
  return message;
}

}  // namespace ofi_dpdk::ip
