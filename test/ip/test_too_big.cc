// A router's "fragmentation needed" (IPv4) and "packet too big" (IPv6),
// built here as Linux builds them: the router's own header, the ICMP
// header with the next link's MTU, then the start of the packet that did
// not fit.  The parsers must give back that packet's addresses, ports and
// quoted payload, and refuse anything else.
#include "lib/ip/too_big.h"

#include <gtest/gtest.h>

#include <cstring>
#include <memory>
#include <random>
#include <vector>

namespace ofi_dpdk::ip {
namespace {

constexpr uint8_t kRouterMac[6] = {0x02, 0, 0, 0, 0, 0xAA};
constexpr uint8_t kOurMac[6] = {0x02, 0, 0, 0, 0, 0x01};
constexpr Ipv4 kUs = 0x0A4D0102;      // 10.77.1.2
constexpr Ipv4 kPeer = 0x0A4D0202;    // 10.77.2.2
constexpr Ipv4 kRouter = 0x0A4D0101;  // 10.77.1.1

Ipv6 v6(const char* text) {
  return *parse_ipv6(text);
}

// Our UDP/IPv4 frame of `payload` bytes, the payload a counting pattern.
std::vector<uint8_t> our_frame4(size_t payload) {
  std::vector<uint8_t> frame(kUdp4Lead + payload);
  for (size_t i = 0; i < payload; ++i) frame[kUdp4Lead + i] = static_cast<uint8_t>(i);
  Udp4Addresses addresses{kUs, kPeer, 50000, 9229};
  encode_udp4(frame.data(), kRouterMac, kOurMac, addresses, payload);
  return frame;
}

// The router's answer to `sent`, quoting `quote` bytes of its IP packet.
std::vector<uint8_t> fragmentation_needed(const std::vector<uint8_t>& sent, size_t quote,
                                          uint16_t mtu, uint8_t code = 4) {
  const uint8_t* ip = sent.data() + kEthernetHeaderSize;
  std::vector<uint8_t> icmp(8 + quote);
  icmp[0] = 3;
  icmp[1] = code;
  icmp[6] = static_cast<uint8_t>(mtu >> 8);
  icmp[7] = static_cast<uint8_t>(mtu);
  std::memcpy(icmp.data() + 8, ip, quote);
  const uint16_t sum = internet_checksum(icmp.data(), icmp.size());
  icmp[2] = static_cast<uint8_t>(sum >> 8);
  icmp[3] = static_cast<uint8_t>(sum);
  std::vector<uint8_t> frame(kEthernetHeaderSize + kIpv4HeaderSize + icmp.size());
  std::memcpy(frame.data(), kOurMac, 6);
  std::memcpy(frame.data() + 6, kRouterMac, 6);
  frame[12] = 0x08;
  uint8_t* header = frame.data() + kEthernetHeaderSize;
  const size_t total = kIpv4HeaderSize + icmp.size();
  const uint8_t fixed[kIpv4HeaderSize] = {0x45,
                                          0xC0,
                                          static_cast<uint8_t>(total >> 8),
                                          static_cast<uint8_t>(total),
                                          0,
                                          0,
                                          0,
                                          0,
                                          64,
                                          kProtocolIcmp,
                                          0,
                                          0,
                                          0x0A,
                                          0x4D,
                                          0x01,
                                          0x01,
                                          0x0A,
                                          0x4D,
                                          0x01,
                                          0x02};
  std::memcpy(header, fixed, sizeof(fixed));
  const uint16_t header_sum = internet_checksum(header, kIpv4HeaderSize);
  header[10] = static_cast<uint8_t>(header_sum >> 8);
  header[11] = static_cast<uint8_t>(header_sum);
  std::memcpy(header + kIpv4HeaderSize, icmp.data(), icmp.size());
  return frame;
}

bool parse4(const std::vector<uint8_t>& frame, TooBig* out) {
  Ipv4Packet packet;
  if (parse_ipv4_packet(frame.data(), frame.size(), &packet) != Ipv4Result::kOk) return false;
  EXPECT_EQ(packet.source, kRouter);
  return parse_fragmentation_needed(packet, out);
}

TEST(TooBig, FragmentationNeededGivesTheQuotedPacketBack) {
  // Linux quotes up to 576 bytes of ICMP: the frame's first 548 bytes.
  const std::vector<uint8_t> sent = our_frame4(8912);
  TooBig got;
  const std::vector<uint8_t> word = fragmentation_needed(sent, 548, 1500);  // got points into it
  ASSERT_TRUE(parse4(word, &got));
  EXPECT_EQ(got.mtu, 1500u);
  EXPECT_EQ(got.source, mapped_ipv4(kUs));
  EXPECT_EQ(got.destination, mapped_ipv4(kPeer));
  EXPECT_EQ(got.source_port, 50000);
  EXPECT_EQ(got.destination_port, 9229);
  ASSERT_EQ(got.quoted_length, 548u - kIpv4HeaderSize - kUdpHeaderSize);
  EXPECT_EQ(std::memcmp(got.quoted, sent.data() + kUdp4Lead, got.quoted_length), 0);
}

TEST(TooBig, FragmentationNeededRefusesWhatItCannotTrust) {
  const std::vector<uint8_t> sent = our_frame4(2000);
  TooBig got;
  // RFC 792's minimum quote (the IP header and 8 bytes) still names the
  // ports, with nothing of our header.
  ASSERT_TRUE(parse4(fragmentation_needed(sent, kIpv4HeaderSize + 8, 1400), &got));
  EXPECT_EQ(got.quoted_length, 0u);
  EXPECT_FALSE(parse4(fragmentation_needed(sent, kIpv4HeaderSize + 4, 1400), &got))
      << "no whole UDP header";
  EXPECT_FALSE(parse4(fragmentation_needed(sent, 548, 0), &got)) << "no MTU (before RFC 1191)";
  EXPECT_FALSE(parse4(fragmentation_needed(sent, 548, 1400, 1), &got)) << "host unreachable";
  std::vector<uint8_t> corrupt = fragmentation_needed(sent, 548, 1400);
  corrupt.back() ^= 1;
  EXPECT_FALSE(parse4(corrupt, &got)) << "ICMP checksum";
  std::vector<uint8_t> tcp = sent;
  tcp[kEthernetHeaderSize + 9] = 6;
  EXPECT_FALSE(parse4(fragmentation_needed(tcp, 548, 1400), &got)) << "not UDP";
}

const Ipv6 kUs6 = v6("fd00:77:1::2");
const Ipv6 kPeer6 = v6("fd00:77:2::2");
const Ipv6 kRouter6 = v6("fd00:77:1::1");

std::vector<uint8_t> our_frame6(size_t payload) {
  std::vector<uint8_t> frame(kUdp6Lead + payload);
  for (size_t i = 0; i < payload; ++i) frame[kUdp6Lead + i] = static_cast<uint8_t>(i * 3);
  Udp6Addresses addresses{kUs6, kPeer6, 50001, 9230};
  encode_udp6(frame.data(), kRouterMac, kOurMac, addresses, payload);
  return frame;
}

std::vector<uint8_t> packet_too_big(const std::vector<uint8_t>& sent, size_t quote, uint32_t mtu) {
  std::vector<uint8_t> icmp(8 + quote);
  icmp[0] = 2;
  for (int i = 0; i < 4; ++i) icmp[4 + i] = static_cast<uint8_t>(mtu >> (24 - 8 * i));
  std::memcpy(icmp.data() + 8, sent.data() + kEthernetHeaderSize, quote);
  ChecksumSum sum =
      pseudo_header_sum(kRouter6, kUs6, static_cast<uint32_t>(icmp.size()), kNextHeaderIcmp6);
  sum.add(icmp.data(), icmp.size());
  icmp[2] = static_cast<uint8_t>(sum.checksum() >> 8);
  icmp[3] = static_cast<uint8_t>(sum.checksum());
  std::vector<uint8_t> frame(kEthernetHeaderSize + kIpv6HeaderSize + icmp.size());
  std::memcpy(frame.data(), kOurMac, 6);
  std::memcpy(frame.data() + 6, kRouterMac, 6);
  frame[12] = 0x86;
  frame[13] = 0xDD;
  uint8_t* header = frame.data() + kEthernetHeaderSize;
  header[0] = 0x60;
  header[4] = static_cast<uint8_t>(icmp.size() >> 8);
  header[5] = static_cast<uint8_t>(icmp.size());
  header[6] = kNextHeaderIcmp6;
  header[7] = 64;
  std::memcpy(header + 8, kRouter6.bytes.data(), 16);
  std::memcpy(header + 24, kUs6.bytes.data(), 16);
  std::memcpy(header + kIpv6HeaderSize, icmp.data(), icmp.size());
  return frame;
}

bool parse6(const std::vector<uint8_t>& frame, TooBig* out) {
  Ipv6Packet packet;
  if (parse_ipv6_packet(frame.data(), frame.size(), &packet) != Ipv6Result::kOk) return false;
  return parse_packet_too_big(packet, out);
}

TEST(TooBig, PacketTooBigGivesTheQuotedPacketBack) {
  // Linux quotes as much as fits in 1280 bytes: the frame's first 1232.
  const std::vector<uint8_t> sent = our_frame6(8892);
  TooBig got;
  const std::vector<uint8_t> word = packet_too_big(sent, 1232, 1280);  // got points into it
  ASSERT_TRUE(parse6(word, &got));
  EXPECT_EQ(got.mtu, 1280u);
  EXPECT_EQ(got.source, kUs6);
  EXPECT_EQ(got.destination, kPeer6);
  EXPECT_EQ(got.source_port, 50001);
  EXPECT_EQ(got.destination_port, 9230);
  ASSERT_EQ(got.quoted_length, 1232u - kIpv6HeaderSize - kUdpHeaderSize);
  EXPECT_EQ(std::memcmp(got.quoted, sent.data() + kUdp6Lead, got.quoted_length), 0);
}

TEST(TooBig, PacketTooBigRefusesWhatItCannotTrust) {
  const std::vector<uint8_t> sent = our_frame6(4000);
  TooBig got;
  EXPECT_FALSE(parse6(packet_too_big(sent, kIpv6HeaderSize + 4, 1280), &got))
      << "no whole UDP header";
  std::vector<uint8_t> corrupt = packet_too_big(sent, 600, 1280);
  corrupt.back() ^= 1;
  EXPECT_FALSE(parse6(corrupt, &got)) << "ICMPv6 checksum";
  std::vector<uint8_t> extension = sent;
  extension[kEthernetHeaderSize + 6] = 44;  // a fragment header first
  EXPECT_FALSE(parse6(packet_too_big(extension, 600, 1280), &got)) << "not UDP right away";
}

TEST(TooBig, MangledMessagesNeverReadPastTheirEnd) {
  // Every cut and random byte of a real message: the parsers return
  // whatever they return without reading beyond it (ASan would say).
  std::mt19937 random(7);
  const std::vector<uint8_t> four = fragmentation_needed(our_frame4(3000), 548, 1500);
  const std::vector<uint8_t> six = packet_too_big(our_frame6(3000), 1232, 1280);
  for (const std::vector<uint8_t>* whole : {&four, &six}) {
    for (int round = 0; round < 2000; ++round) {
      std::vector<uint8_t> frame = *whole;
      frame.resize(random() % (frame.size() + 1));
      if (!frame.empty()) frame[random() % frame.size()] = static_cast<uint8_t>(random());
      auto exact = std::make_unique<uint8_t[]>(frame.size() + 1);
      std::memcpy(exact.get(), frame.data(), frame.size());
      TooBig got;
      Ipv4Packet packet4;
      if (parse_ipv4_packet(exact.get(), frame.size(), &packet4) == Ipv4Result::kOk)
        (void)parse_fragmentation_needed(packet4, &got);
      Ipv6Packet packet6;
      if (parse_ipv6_packet(exact.get(), frame.size(), &packet6) == Ipv6Result::kOk)
        (void)parse_packet_too_big(packet6, &got);
    }
  }
}

}  // namespace
}  // namespace ofi_dpdk::ip
