#include "lib/ip/udp4.h"

#include <cstring>

#include "lib/ip/byte_order.h"

namespace ofi_dpdk::ip {
namespace {

constexpr uint8_t kPeerIdMark = 0x03;  // group bit and local bit set

}  // namespace

void peer_id_of(Ipv4 address, uint8_t id[6]) {
  id[0] = kPeerIdMark;
  id[1] = 0;
  put32(id + 2, address);
}

bool is_peer_id(const uint8_t id[6]) {
  return id[0] == kPeerIdMark && id[1] == 0;
}

Ipv4 address_of_peer_id(const uint8_t id[6]) {
  return get32(id + 2);
}

uint16_t flow_source_port(uint16_t src_queue, uint16_t dst_queue, uint8_t path) {
  // A 32-bit mix of the pair (multiply, xor-shift), then an odd stride per
  // path: odd, so that 256 steps never meet again in 2^14 ports.
  uint32_t pair = (uint32_t{src_queue} << 16 | dst_queue) * 0x9E3779B1u;
  pair ^= pair >> 15;
  pair *= 0x85EBCA77u;
  pair ^= pair >> 13;
  constexpr uint32_t kPathStride = 0x2F1B;
  return static_cast<uint16_t>(0xC000 | ((pair + path * kPathStride) & 0x3FFF));
}

uint16_t internet_checksum(const uint8_t* bytes, size_t length) {
  uint32_t sum = 0;
  for (size_t i = 0; i + 1 < length; i += 2) sum += get16(bytes + i);
  if (length & 1) sum += uint32_t{bytes[length - 1]} << 8;
  while (sum >> 16) sum = (sum & 0xFFFF) + (sum >> 16);
  return static_cast<uint16_t>(~sum);
}

void encode_udp4(uint8_t* out, const uint8_t dst_mac[6], const uint8_t src_mac[6],
                 const Udp4Addresses& a, size_t payload_length, bool header_checksum_by_device) {
  std::memcpy(out, dst_mac, 6);
  std::memcpy(out + 6, src_mac, 6);
  put16(out + 12, kEtherTypeIpv4);
  uint8_t* ip = out + kEthernetHeaderSize;
  ip[0] = 0x45;       // version 4, 5 words
  ip[1] = a.ecn & 3;  // DSCP 0, ECN
  put16(ip + 2, static_cast<uint16_t>(kIpv4HeaderSize + kUdpHeaderSize + payload_length));
  put16(ip + 4, 0);       // identification: no fragments, so none needed (RFC 6864)
  put16(ip + 6, 0x4000);  // don't fragment
  ip[8] = a.ttl;
  ip[9] = kProtocolUdp;
  put16(ip + 10, 0);
  put32(ip + 12, a.source);
  put32(ip + 16, a.destination);
  if (!header_checksum_by_device) put16(ip + 10, internet_checksum(ip, kIpv4HeaderSize));
  uint8_t* udp = ip + kIpv4HeaderSize;
  put16(udp, a.source_port);
  put16(udp + 2, a.destination_port);
  put16(udp + 4, static_cast<uint16_t>(kUdpHeaderSize + payload_length));
  put16(udp + 6, 0);
}

Ipv4Result parse_ipv4_packet(const uint8_t* frame, size_t length, Ipv4Packet* out,
                             bool header_checked) {
  if (length < kEthernetHeaderSize || get16(frame + 12) != kEtherTypeIpv4)
    return Ipv4Result::kNotIpv4;
  const uint8_t* ip = frame + kEthernetHeaderSize;
  const size_t available = length - kEthernetHeaderSize;
  if (available < kIpv4HeaderSize || (ip[0] >> 4) != 4) return Ipv4Result::kMalformed;
  const size_t header_length = static_cast<size_t>(ip[0] & 0x0F) * 4;
  const size_t total_length = get16(ip + 2);
  if (header_length < kIpv4HeaderSize || total_length < header_length || total_length > available)
    return Ipv4Result::kMalformed;
  if (!header_checked && internet_checksum(ip, header_length) != 0) return Ipv4Result::kBadChecksum;
  // More-fragments set, or an offset: part of a larger packet.
  if (get16(ip + 6) & 0x3FFF) return Ipv4Result::kFragment;
  out->ecn = ip[1] & 3;
  out->ttl = ip[8];
  out->protocol = ip[9];
  out->source = get32(ip + 12);
  out->destination = get32(ip + 16);
  out->header = ip;
  out->header_length = header_length;
  out->payload = ip + header_length;
  out->payload_length = total_length - header_length;
  return Ipv4Result::kOk;
}

bool parse_udp(const Ipv4Packet& packet, UdpDatagram* out) {
  if (packet.protocol != kProtocolUdp || packet.payload_length < kUdpHeaderSize) return false;
  const uint8_t* udp = packet.payload;
  const size_t udp_length = get16(udp + 4);
  if (udp_length < kUdpHeaderSize || udp_length > packet.payload_length) return false;
  out->source_port = get16(udp);
  out->destination_port = get16(udp + 2);
  out->payload = udp + kUdpHeaderSize;
  out->payload_length = udp_length - kUdpHeaderSize;
  return true;
}

}  // namespace ofi_dpdk::ip
