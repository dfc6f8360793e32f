#include "lib/ip/udp6.h"

#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <vector>

namespace ofi_dpdk::ip {
namespace {

constexpr uint8_t kRouterMac[6] = {0x02, 0, 0, 0, 0, 0xAA};
constexpr uint8_t kOurMac[6] = {0x02, 0, 0, 0, 0, 0x01};

Udp6Addresses addresses() {
  Udp6Addresses a;
  a.source = *parse_ipv6("fd00:77:1::2");
  a.destination = *parse_ipv6("fd00:77:2::2");
  a.source_port = 49999;
  a.destination_port = 9230;
  return a;
}

// The datagram's checksum the plain way (internet_checksum, udp4.h): the
// pseudo-header written out in bytes, then the datagram.
uint16_t reference_checksum(const Ipv6& source, const Ipv6& destination, const uint8_t* udp,
                            size_t length) {
  std::vector<uint8_t> bytes(40 + length);
  std::memcpy(bytes.data(), source.bytes.data(), 16);
  std::memcpy(bytes.data() + 16, destination.bytes.data(), 16);
  bytes[32] = static_cast<uint8_t>(length >> 24);
  bytes[33] = static_cast<uint8_t>(length >> 16);
  bytes[34] = static_cast<uint8_t>(length >> 8);
  bytes[35] = static_cast<uint8_t>(length);
  bytes[39] = kProtocolUdp;
  std::memcpy(bytes.data() + 40, udp, length);
  return internet_checksum(bytes.data(), bytes.size());
}

TEST(Udp6, ChecksumSumMatchesTheBytewaySum) {
  // RFC 1071's example, whole and in pieces.
  const uint8_t words[] = {0x00, 0x01, 0xF2, 0x03, 0xF4, 0xF5, 0xF6, 0xF7};
  ChecksumSum whole;
  whole.add(words, sizeof words);
  EXPECT_EQ(whole.checksum(), 0x220D);
  ChecksumSum pieces;
  pieces.add(words, 2);
  pieces.add(words + 2, 6);
  EXPECT_EQ(pieces.checksum(), 0x220D);
  // Lengths and starting offsets of every residue, odd ends, carries.
  std::mt19937 random(7);
  std::vector<uint8_t> data(9100);
  for (auto& byte : data) byte = static_cast<uint8_t>(random());
  for (size_t start : {0, 1, 2, 3}) {
    for (size_t length : {0, 1, 2, 3, 5, 8, 15, 16, 17, 31, 32, 33, 63, 1500, 8999, 9000}) {
      ChecksumSum sum, scalar;
      sum.add(data.data() + start, length);
      scalar.add_scalar(data.data() + start, length);
      EXPECT_EQ(sum.checksum(), internet_checksum(data.data() + start, length))
          << start << " " << length;
      EXPECT_EQ(scalar.checksum(), sum.checksum()) << start << " " << length;
    }
  }
  std::vector<uint8_t> ones(9000, 0xFF);
  ChecksumSum all_ones;
  all_ones.add(ones.data(), ones.size());
  EXPECT_EQ(all_ones.checksum(), internet_checksum(ones.data(), ones.size()));
}

TEST(Udp6, EncodesHeadersAndAChecksumOverThePayload) {
  const size_t payload = 1001;  // odd
  std::vector<uint8_t> frame(kUdp6Lead + payload);
  for (size_t i = 0; i < payload; ++i) frame[kUdp6Lead + i] = static_cast<uint8_t>(i * 7);
  const Udp6Addresses a = addresses();
  encode_udp6(frame.data(), kRouterMac, kOurMac, a, payload);
  EXPECT_EQ(std::memcmp(frame.data(), kRouterMac, 6), 0);
  EXPECT_EQ(std::memcmp(frame.data() + 6, kOurMac, 6), 0);
  EXPECT_EQ(frame[12], 0x86);
  EXPECT_EQ(frame[13], 0xDD);
  const uint8_t* ip = frame.data() + kEthernetHeaderSize;
  EXPECT_EQ(ip[0], 0x60);
  EXPECT_EQ(ip[4] << 8 | ip[5], static_cast<int>(kUdpHeaderSize + payload));
  EXPECT_EQ(ip[6], kProtocolUdp);
  EXPECT_EQ(ip[7], kDefaultHopLimit);
  const uint8_t* udp = ip + kIpv6HeaderSize;
  EXPECT_EQ(udp[0] << 8 | udp[1], 49999);
  EXPECT_EQ(udp[2] << 8 | udp[3], 9230);
  EXPECT_NE(udp[6] << 8 | udp[7], 0);
  EXPECT_EQ(reference_checksum(a.source, a.destination, udp, kUdpHeaderSize + payload), 0)
      << "the checksum written makes the datagram sum to zero";

  Ipv6Packet packet;
  ASSERT_EQ(parse_ipv6_packet(frame.data(), frame.size(), &packet), Ipv6Result::kOk);
  EXPECT_EQ(packet.source, a.source);
  EXPECT_EQ(packet.destination, a.destination);
  EXPECT_EQ(packet.hop_limit, kDefaultHopLimit);
  UdpDatagram datagram;
  ASSERT_TRUE(parse_udp6(packet, &datagram));
  EXPECT_EQ(datagram.source_port, 49999);
  EXPECT_EQ(datagram.destination_port, 9230);
  EXPECT_EQ(datagram.payload, frame.data() + kUdp6Lead);
  EXPECT_EQ(datagram.payload_length, payload);
}

TEST(Udp6, RefusesAWrongOrMissingChecksum) {
  std::vector<uint8_t> frame(kUdp6Lead + 64, 0x5A);
  encode_udp6(frame.data(), kRouterMac, kOurMac, addresses(), 64);
  Ipv6Packet packet;
  UdpDatagram datagram;
  // One payload bit flipped.
  frame[kUdp6Lead + 10] ^= 0x01;
  ASSERT_EQ(parse_ipv6_packet(frame.data(), frame.size(), &packet), Ipv6Result::kOk);
  EXPECT_FALSE(parse_udp6(packet, &datagram));
  frame[kUdp6Lead + 10] ^= 0x01;
  ASSERT_TRUE(parse_udp6(packet, &datagram));
  // A checksum of 0: "none", which IPv6 does not allow.
  uint8_t* checksum = frame.data() + kEthernetHeaderSize + kIpv6HeaderSize + 6;
  checksum[0] = checksum[1] = 0;
  EXPECT_FALSE(parse_udp6(packet, &datagram));
}

TEST(Udp6, LeavesTheChecksumToADeviceThatOffersIt) {
  // Expect: with checksum_by_device the field holds the pseudo-header's
  // folded sum and the payload is not read; a device that then sums the
  // datagram over it (as RTE_MBUF_F_TX_UDP_CKSUM asks) writes the very
  // checksum the provider would have.  A datagram the device checked is
  // taken as it is; unchecked, a wrong one is refused.
  const size_t payload = 333;
  std::vector<uint8_t> own(kUdp6Lead + payload), by_device(kUdp6Lead + payload);
  for (size_t i = 0; i < payload; ++i) own[kUdp6Lead + i] = by_device[kUdp6Lead + i] = i * 13 + 7;
  const Udp6Addresses a = addresses();
  encode_udp6(own.data(), kRouterMac, kOurMac, a, payload);
  encode_udp6(by_device.data(), kRouterMac, kOurMac, a, payload, true);
  uint8_t* udp = by_device.data() + kEthernetHeaderSize + kIpv6HeaderSize;
  const size_t udp_length = kUdpHeaderSize + payload;
  const uint16_t pseudo =
      pseudo_header_sum(a.source, a.destination, static_cast<uint32_t>(udp_length), kProtocolUdp)
          .folded();
  EXPECT_EQ((udp[6] << 8) | udp[7], pseudo);
  // The device: the complement of the ones' complement sum of the datagram.
  const uint16_t finished = internet_checksum(udp, udp_length);
  udp[6] = static_cast<uint8_t>(finished >> 8);
  udp[7] = static_cast<uint8_t>(finished);
  EXPECT_EQ(own, by_device);

  Ipv6Packet packet;
  UdpDatagram datagram;
  by_device[kUdp6Lead + 5] ^= 0x40;
  ASSERT_EQ(parse_ipv6_packet(by_device.data(), by_device.size(), &packet), Ipv6Result::kOk);
  EXPECT_FALSE(parse_udp6(packet, &datagram));
  EXPECT_TRUE(parse_udp6(packet, &datagram, true));
  EXPECT_EQ(datagram.payload_length, payload);
}

TEST(Udp6, RefusesPacketsThatDoNotFitTheirFrame) {
  std::vector<uint8_t> frame(kUdp6Lead + 32, 0);
  encode_udp6(frame.data(), kRouterMac, kOurMac, addresses(), 32);
  Ipv6Packet packet;
  // Ethernet padding after the packet is fine.
  std::vector<uint8_t> padded = frame;
  padded.resize(frame.size() + 10, 0);
  EXPECT_EQ(parse_ipv6_packet(padded.data(), padded.size(), &packet), Ipv6Result::kOk);
  EXPECT_EQ(parse_ipv6_packet(frame.data(), frame.size() - 1, &packet), Ipv6Result::kMalformed);
  EXPECT_EQ(parse_ipv6_packet(frame.data(), kEthernetHeaderSize + 39, &packet),
            Ipv6Result::kMalformed);
  std::vector<uint8_t> v4 = frame;
  v4[kEthernetHeaderSize] = 0x45;
  EXPECT_EQ(parse_ipv6_packet(v4.data(), v4.size(), &packet), Ipv6Result::kMalformed);
  std::vector<uint8_t> other = frame;
  other[12] = 0x08;
  other[13] = 0x00;
  EXPECT_EQ(parse_ipv6_packet(other.data(), other.size(), &packet), Ipv6Result::kNotIpv6);
  // A UDP length beyond the IPv6 payload.
  std::vector<uint8_t> long_udp = frame;
  long_udp[kEthernetHeaderSize + kIpv6HeaderSize + 5] += 1;
  ASSERT_EQ(parse_ipv6_packet(long_udp.data(), long_udp.size(), &packet), Ipv6Result::kOk);
  UdpDatagram datagram;
  EXPECT_FALSE(parse_udp6(packet, &datagram));
  // An extension header: not taken as UDP.
  std::vector<uint8_t> extended = frame;
  extended[kEthernetHeaderSize + 6] = 0;  // hop-by-hop options
  ASSERT_EQ(parse_ipv6_packet(extended.data(), extended.size(), &packet), Ipv6Result::kOk);
  EXPECT_EQ(packet.next_header, 0);
  EXPECT_FALSE(parse_udp6(packet, &datagram));
}

}  // namespace
}  // namespace ofi_dpdk::ip
