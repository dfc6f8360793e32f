#include "lib/ip/icmp.h"

#include <gtest/gtest.h>

#include <cstring>
#include <vector>

namespace ofi_dpdk::ip {
namespace {

constexpr uint8_t kPingerMac[6] = {0x02, 0, 0, 0, 0, 0xAA};
constexpr uint8_t kOurMac[6] = {0x02, 0, 0, 0, 0, 0x01};

// An echo request from 10.0.1.1 to 10.0.1.2: identifier 7, sequence 3,
// `data` bytes of 0x61.
std::vector<uint8_t> echo_request(size_t data) {
  const size_t icmp_length = 8 + data;
  std::vector<uint8_t> frame(kEthernetHeaderSize + kIpv4HeaderSize + icmp_length, 0x61);
  uint8_t* ip = frame.data() + kEthernetHeaderSize;
  uint8_t* icmp = ip + kIpv4HeaderSize;
  const uint8_t head[] = {8, 0, 0, 0, 0, 7, 0, 3};
  std::memcpy(icmp, head, sizeof head);
  const uint16_t sum = internet_checksum(icmp, icmp_length);
  icmp[2] = static_cast<uint8_t>(sum >> 8);
  icmp[3] = static_cast<uint8_t>(sum);
  // An IPv4 header as encode_udp4 writes it, then made ICMP.
  Udp4Addresses a;
  a.source = *parse_ipv4("10.0.1.1");
  a.destination = *parse_ipv4("10.0.1.2");
  std::vector<uint8_t> udp(kUdp4Lead + icmp_length - kUdpHeaderSize);
  encode_udp4(udp.data(), kOurMac, kPingerMac, a, icmp_length - kUdpHeaderSize);
  std::memcpy(frame.data(), udp.data(), kEthernetHeaderSize + kIpv4HeaderSize);
  ip[9] = kProtocolIcmp;
  ip[10] = ip[11] = 0;
  const uint16_t ip_sum = internet_checksum(ip, kIpv4HeaderSize);
  ip[10] = static_cast<uint8_t>(ip_sum >> 8);
  ip[11] = static_cast<uint8_t>(ip_sum);
  return frame;
}

TEST(Icmp, AnswersAnEchoRequestToItsSender) {
  const auto request = echo_request(56);
  Ipv4Packet packet;
  ASSERT_EQ(parse_ipv4_packet(request.data(), request.size(), &packet), Ipv4Result::kOk);
  std::vector<uint8_t> reply(request.size());
  ASSERT_EQ(build_echo_reply(request.data(), packet, kOurMac, reply.data(), reply.size()),
            request.size());
  EXPECT_EQ(std::memcmp(reply.data(), kPingerMac, 6), 0);
  EXPECT_EQ(std::memcmp(reply.data() + 6, kOurMac, 6), 0);
  Ipv4Packet answer;
  ASSERT_EQ(parse_ipv4_packet(reply.data(), reply.size(), &answer), Ipv4Result::kOk);
  EXPECT_EQ(answer.source, *parse_ipv4("10.0.1.2"));
  EXPECT_EQ(answer.destination, *parse_ipv4("10.0.1.1"));
  EXPECT_EQ(answer.protocol, kProtocolIcmp);
  EXPECT_EQ(answer.payload[0], 0) << "echo reply";
  EXPECT_EQ(internet_checksum(answer.payload, answer.payload_length), 0);
  // Identifier, sequence and data come back as they were.
  EXPECT_EQ(std::memcmp(answer.payload + 4, packet.payload + 4, packet.payload_length - 4), 0);
}

TEST(Icmp, IgnoresAnythingButAWholeEchoRequest) {
  auto request = echo_request(8);
  Ipv4Packet packet;
  ASSERT_EQ(parse_ipv4_packet(request.data(), request.size(), &packet), Ipv4Result::kOk);
  std::vector<uint8_t> reply(request.size());
  EXPECT_EQ(build_echo_reply(request.data(), packet, kOurMac, reply.data(), reply.size() - 1), 0u)
      << "no room";
  request[kEthernetHeaderSize + kIpv4HeaderSize + 10] ^= 1;  // data changed, checksum not
  EXPECT_EQ(build_echo_reply(request.data(), packet, kOurMac, reply.data(), reply.size()), 0u);
  request = echo_request(8);
  ASSERT_EQ(parse_ipv4_packet(request.data(), request.size(), &packet), Ipv4Result::kOk);
  request[kEthernetHeaderSize + kIpv4HeaderSize] = 0;  // an echo reply: not answered
  EXPECT_EQ(build_echo_reply(request.data(), packet, kOurMac, reply.data(), reply.size()), 0u);
}

}  // namespace
}  // namespace ofi_dpdk::ip
