#include "lib/ip/too_big.h"

#include <cstring>

#include "lib/ip/byte_order.h"

namespace ofi_dpdk::ip {
namespace {

constexpr uint8_t kDestinationUnreachable = 3;
constexpr uint8_t kFragmentationNeeded = 4;
constexpr uint8_t kPacketTooBig = 2;
constexpr size_t kIcmpHeaderSize = 8;  // type, code, checksum, 4 bytes of the type's own

// The UDP header at `udp`, with `available` bytes from it on, into `out`.
bool take_quoted_udp(const uint8_t* udp, size_t available, TooBig* out) {
  if (available < kUdpHeaderSize) return false;
  out->source_port = get16(udp);
  out->destination_port = get16(udp + 2);
  out->quoted = udp + kUdpHeaderSize;
  out->quoted_length = available - kUdpHeaderSize;
  return true;
}

}  // namespace

bool parse_fragmentation_needed(const Ipv4Packet& packet, TooBig* out) {
  const uint8_t* icmp = packet.payload;
  const size_t length = packet.payload_length;
  if (packet.protocol != kProtocolIcmp || length < kIcmpHeaderSize + kIpv4HeaderSize ||
      icmp[0] != kDestinationUnreachable || icmp[1] != kFragmentationNeeded ||
      internet_checksum(icmp, length) != 0)
    return false;
  out->mtu = get16(icmp + 6);
  const uint8_t* quoted = icmp + kIcmpHeaderSize;
  const size_t available = length - kIcmpHeaderSize;
  const size_t header_length = static_cast<size_t>(quoted[0] & 0x0F) * 4;
  if (out->mtu == 0 || (quoted[0] >> 4) != 4 || header_length < kIpv4HeaderSize ||
      header_length > available || quoted[9] != kProtocolUdp)
    return false;
  out->source = mapped_ipv4(get32(quoted + 12));
  out->destination = mapped_ipv4(get32(quoted + 16));
  return take_quoted_udp(quoted + header_length, available - header_length, out);
}

bool parse_packet_too_big(const Ipv6Packet& packet, TooBig* out) {
  const uint8_t* icmp = packet.payload;
  const size_t length = packet.payload_length;
  if (packet.next_header != kNextHeaderIcmp6 || length < kIcmpHeaderSize + kIpv6HeaderSize ||
      icmp[0] != kPacketTooBig || icmp[1] != 0)
    return false;
  ChecksumSum sum = pseudo_header_sum(packet.source, packet.destination,
                                      static_cast<uint32_t>(length), kNextHeaderIcmp6);
  sum.add(icmp, length);
  if (!sum.verifies()) return false;
  out->mtu = get32(icmp + 4);
  const uint8_t* quoted = icmp + kIcmpHeaderSize;
  if ((quoted[0] >> 4) != 6 || quoted[6] != kProtocolUdp) return false;
  std::memcpy(out->source.bytes.data(), quoted + 8, 16);
  std::memcpy(out->destination.bytes.data(), quoted + 24, 16);
  return take_quoted_udp(quoted + kIpv6HeaderSize, length - kIcmpHeaderSize - kIpv6HeaderSize, out);
}

}  // namespace ofi_dpdk::ip
