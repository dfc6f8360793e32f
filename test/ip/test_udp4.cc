#include "lib/ip/udp4.h"

#include <gtest/gtest.h>

#include <set>
#include <vector>

namespace ofi_dpdk::ip {
namespace {

constexpr uint8_t kRouterMac[6] = {0x02, 0, 0, 0, 0, 0xAA};
constexpr uint8_t kOurMac[6] = {0x02, 0, 0, 0, 0, 0x01};

TEST(Udp4, InternetChecksumMatchesKnownValues) {
  // RFC 1071's example sum.
  const uint8_t words[] = {0x00, 0x01, 0xF2, 0x03, 0xF4, 0xF5, 0xF6, 0xF7};
  EXPECT_EQ(internet_checksum(words, sizeof words), 0x220D);
  // A captured IPv4 header whose checksum field holds 0xB861: sums to 0.
  const uint8_t header[] = {0x45, 0x00, 0x00, 0x73, 0x00, 0x00, 0x40, 0x00, 0x40, 0x11,
                            0xB8, 0x61, 0xC0, 0xA8, 0x00, 0x01, 0xC0, 0xA8, 0x00, 0xC7};
  EXPECT_EQ(internet_checksum(header, sizeof header), 0);
}

TEST(Udp4, PeerIdsCarryTheAddressAndNoMacLooksLikeOne) {
  uint8_t id[6];
  peer_id_of(*parse_ipv4("10.0.2.2"), id);
  EXPECT_TRUE(is_peer_id(id));
  EXPECT_EQ(address_of_peer_id(id), *parse_ipv4("10.0.2.2"));
  EXPECT_EQ(id[0] & 1, 1) << "the group bit, which no sender's MAC has";
  EXPECT_FALSE(is_peer_id(kOurMac));
}

TEST(Udp4, SourcePortsAreEntropyPerPairAndPath) {
  // Stable: every frame of a path has the same port.
  EXPECT_EQ(flow_source_port(1, 2, 0), flow_source_port(1, 2, 0));
  std::set<uint16_t> paths;
  for (int path = 0; path < 256; ++path) {
    const uint16_t port = flow_source_port(1, 2, static_cast<uint8_t>(path));
    EXPECT_GE(port, 49152);
    paths.insert(port);
  }
  EXPECT_EQ(paths.size(), 256u) << "every path of a pair has its own port";
  // Pairs of queues spread over the range.
  std::set<uint16_t> pairs;
  for (uint16_t src = 0; src < 64; ++src)
    for (uint16_t dst = 0; dst < 64; ++dst) pairs.insert(flow_source_port(src, dst, 0));
  EXPECT_GT(pairs.size(), 3500u) << "of 4096 pairs over 16384 ports";
  EXPECT_NE(flow_source_port(1, 2, 0), flow_source_port(2, 1, 0));
}

std::vector<uint8_t> frame_with_payload(const Udp4Addresses& a, size_t payload) {
  std::vector<uint8_t> frame(kUdp4Lead + payload, 0x5A);
  encode_udp4(frame.data(), kRouterMac, kOurMac, a, payload);
  return frame;
}

TEST(Udp4, EncodedFrameParsesBack) {
  Udp4Addresses a;
  a.source = *parse_ipv4("10.0.1.2");
  a.destination = *parse_ipv4("10.0.2.2");
  a.source_port = 9229;
  a.destination_port = 9230;
  auto frame = frame_with_payload(a, 100);
  EXPECT_EQ(frame[12], 0x08);
  EXPECT_EQ(frame[13], 0x00);
  EXPECT_EQ(frame[14 + 6] & 0x40, 0x40) << "don't fragment";
  EXPECT_EQ(internet_checksum(frame.data() + 14, kIpv4HeaderSize), 0);

  Ipv4Packet packet;
  ASSERT_EQ(parse_ipv4_packet(frame.data(), frame.size(), &packet), Ipv4Result::kOk);
  EXPECT_EQ(packet.source, a.source);
  EXPECT_EQ(packet.destination, a.destination);
  EXPECT_EQ(packet.ttl, kDefaultTtl);
  UdpDatagram datagram;
  ASSERT_TRUE(parse_udp(packet, &datagram));
  EXPECT_EQ(datagram.source_port, 9229);
  EXPECT_EQ(datagram.destination_port, 9230);
  EXPECT_EQ(datagram.payload, frame.data() + kUdp4Lead);
  EXPECT_EQ(datagram.payload_length, 100u);

  // Ethernet pads a short frame: trailing bytes beyond the lengths are fine.
  frame.resize(frame.size() + 20, 0);
  ASSERT_EQ(parse_ipv4_packet(frame.data(), frame.size(), &packet), Ipv4Result::kOk);
  ASSERT_TRUE(parse_udp(packet, &datagram));
  EXPECT_EQ(datagram.payload_length, 100u);
}

TEST(Udp4, LeavesTheHeaderChecksumToADeviceThatOffersIt) {
  // Expect: with header_checksum_by_device the IPv4 checksum is 0 for the
  // device to write, the rest of the frame as the provider writes it; a
  // header the device checked is taken, unchecked it is refused.
  Udp4Addresses a;
  a.source = 0x0A000001;
  a.destination = 0x0A000002;
  a.source_port = 50000;
  a.destination_port = 9230;
  std::vector<uint8_t> own(kUdp4Lead + 16, 0), by_device(kUdp4Lead + 16, 0);
  encode_udp4(own.data(), kRouterMac, kOurMac, a, 16);
  encode_udp4(by_device.data(), kRouterMac, kOurMac, a, 16, true);
  uint8_t* ip = by_device.data() + kEthernetHeaderSize;
  EXPECT_EQ(ip[10], 0);
  EXPECT_EQ(ip[11], 0);
  Ipv4Packet packet;
  EXPECT_EQ(parse_ipv4_packet(by_device.data(), by_device.size(), &packet),
            Ipv4Result::kBadChecksum);
  EXPECT_EQ(parse_ipv4_packet(by_device.data(), by_device.size(), &packet, true), Ipv4Result::kOk);
  const uint16_t finished = internet_checksum(ip, kIpv4HeaderSize);
  ip[10] = static_cast<uint8_t>(finished >> 8);
  ip[11] = static_cast<uint8_t>(finished);
  EXPECT_EQ(own, by_device);
}

TEST(Udp4, ForwardedFrameStillParses) {
  // A router lowers the TTL and updates the checksum (RFC 1624).
  Udp4Addresses a;
  a.source = *parse_ipv4("10.0.1.2");
  a.destination = *parse_ipv4("10.0.2.2");
  auto frame = frame_with_payload(a, 10);
  uint8_t* ip = frame.data() + 14;
  ip[8] -= 1;
  ip[10] = ip[11] = 0;
  const uint16_t sum = internet_checksum(ip, kIpv4HeaderSize);
  ip[10] = static_cast<uint8_t>(sum >> 8);
  ip[11] = static_cast<uint8_t>(sum);
  Ipv4Packet packet;
  ASSERT_EQ(parse_ipv4_packet(frame.data(), frame.size(), &packet), Ipv4Result::kOk);
  EXPECT_EQ(packet.ttl, kDefaultTtl - 1);
}

TEST(Udp4, RefusesWhatNoCorrectSenderSends) {
  Udp4Addresses a;
  a.source = 1;
  a.destination = 2;
  const auto good = frame_with_payload(a, 40);
  Ipv4Packet packet;
  UdpDatagram datagram;
  auto bad = good;
  bad[12] = 0x88;
  EXPECT_EQ(parse_ipv4_packet(bad.data(), bad.size(), &packet), Ipv4Result::kNotIpv4);
  EXPECT_EQ(parse_ipv4_packet(good.data(), 20, &packet), Ipv4Result::kMalformed);
  bad = good;
  bad[14] = 0x65;  // version 6
  EXPECT_EQ(parse_ipv4_packet(bad.data(), bad.size(), &packet), Ipv4Result::kMalformed);
  bad = good;
  bad[14] = 0x44;  // header of 16 bytes
  EXPECT_EQ(parse_ipv4_packet(bad.data(), bad.size(), &packet), Ipv4Result::kMalformed);
  bad = good;
  bad[14 + 3] += 1;  // total length beyond the frame
  EXPECT_NE(parse_ipv4_packet(bad.data(), bad.size(), &packet), Ipv4Result::kOk);
  bad = good;
  bad[14 + 15] ^= 1;  // a flipped source address bit
  EXPECT_EQ(parse_ipv4_packet(bad.data(), bad.size(), &packet), Ipv4Result::kBadChecksum);
  bad = good;
  bad[14 + 6] |= 0x20;  // more fragments
  bad[14 + 10] = bad[14 + 11] = 0;
  const uint16_t sum = internet_checksum(bad.data() + 14, kIpv4HeaderSize);
  bad[14 + 10] = static_cast<uint8_t>(sum >> 8);
  bad[14 + 11] = static_cast<uint8_t>(sum);
  EXPECT_EQ(parse_ipv4_packet(bad.data(), bad.size(), &packet), Ipv4Result::kFragment);

  bad = good;
  ASSERT_EQ(parse_ipv4_packet(bad.data(), bad.size(), &packet), Ipv4Result::kOk);
  bad[14 + 20 + 4] = 0xFF;  // UDP length beyond the packet
  EXPECT_FALSE(parse_udp(packet, &datagram));
  bad[14 + 20 + 4] = 0;
  bad[14 + 20 + 5] = 4;  // shorter than its own header
  EXPECT_FALSE(parse_udp(packet, &datagram));
  packet.protocol = kProtocolIcmp;
  EXPECT_FALSE(parse_udp(packet, &datagram));
}

}  // namespace
}  // namespace ofi_dpdk::ip
