#include "lib/ip/icmp.h"

#include <cstring>

#include "lib/ip/byte_order.h"

namespace ofi_dpdk::ip {
namespace {

constexpr uint8_t kEchoReply = 0;
constexpr uint8_t kEchoRequest = 8;
constexpr size_t kIcmpHeaderSize = 8;

}  // namespace

size_t build_echo_reply(const uint8_t* frame, const Ipv4Packet& packet, const uint8_t our_mac[6],
                        uint8_t* out, size_t capacity) {
  if (packet.protocol != kProtocolIcmp || packet.payload_length < kIcmpHeaderSize ||
      packet.payload[0] != kEchoRequest || packet.payload[1] != 0 ||
      internet_checksum(packet.payload, packet.payload_length) != 0)
    return 0;
  const size_t length = kEthernetHeaderSize + kIpv4HeaderSize + packet.payload_length;
  if (length > capacity) return 0;
  std::memcpy(out, frame + 6, 6);
  std::memcpy(out + 6, our_mac, 6);
  out[12] = kEtherTypeIpv4 >> 8;
  out[13] = kEtherTypeIpv4 & 0xFF;
  uint8_t* ip = out + kEthernetHeaderSize;
  const size_t total = kIpv4HeaderSize + packet.payload_length;
  const uint8_t header[kIpv4HeaderSize] = {0x45,
                                           0,
                                           static_cast<uint8_t>(total >> 8),
                                           static_cast<uint8_t>(total),
                                           0,
                                           0,
                                           0x40,
                                           0,
                                           kDefaultTtl,
                                           kProtocolIcmp,
                                           0,
                                           0,
                                           static_cast<uint8_t>(packet.destination >> 24),
                                           static_cast<uint8_t>(packet.destination >> 16),
                                           static_cast<uint8_t>(packet.destination >> 8),
                                           static_cast<uint8_t>(packet.destination),
                                           static_cast<uint8_t>(packet.source >> 24),
                                           static_cast<uint8_t>(packet.source >> 16),
                                           static_cast<uint8_t>(packet.source >> 8),
                                           static_cast<uint8_t>(packet.source)};
  std::memcpy(ip, header, kIpv4HeaderSize);
  const uint16_t ip_checksum = internet_checksum(ip, kIpv4HeaderSize);
  put16(ip + 10, ip_checksum);
  uint8_t* icmp = ip + kIpv4HeaderSize;
  std::memcpy(icmp, packet.payload, packet.payload_length);
  icmp[0] = kEchoReply;
  icmp[2] = icmp[3] = 0;
  const uint16_t icmp_checksum = internet_checksum(icmp, packet.payload_length);
  put16(icmp + 2, icmp_checksum);
  return length;
}

}  // namespace ofi_dpdk::ip
