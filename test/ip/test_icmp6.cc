#include "lib/ip/icmp6.h"

#include <gtest/gtest.h>

#include <cstring>
#include <memory>
#include <random>
#include <vector>

namespace ofi_dpdk::ip {
namespace {

constexpr uint8_t kRouterMac[6] = {0x02, 0, 0, 0, 0, 0xAA};
constexpr uint8_t kOurMac[6] = {0x02, 0, 0, 0, 0, 0x01};

Ipv6 v6(const char* text) {
  return *parse_ipv6(text);
}

Ipv6Packet packet_of(const uint8_t* frame, size_t length) {
  Ipv6Packet packet;
  EXPECT_EQ(parse_ipv6_packet(frame, length, &packet), Ipv6Result::kOk);
  return packet;
}

// Recomputes the ICMPv6 checksum of a frame edited by a test.
void reseal(uint8_t* frame, size_t length) {
  const Ipv6Packet packet = packet_of(frame, length);
  uint8_t* message = frame + kEthernetHeaderSize + kIpv6HeaderSize;
  message[2] = message[3] = 0;
  ChecksumSum sum =
      pseudo_header_sum(packet.source, packet.destination,
                        static_cast<uint32_t>(packet.payload_length), kNextHeaderIcmp6);
  sum.add(message, packet.payload_length);
  message[2] = static_cast<uint8_t>(sum.checksum() >> 8);
  message[3] = static_cast<uint8_t>(sum.checksum());
}

TEST(Icmp6, SolicitationGoesToTheTargetsGroupAndParsesBack) {
  uint8_t frame[kNeighbourFrameSize];
  build_neighbour_solicitation(kOurMac, v6("fd00:77:1::2"), v6("fd00:77:1::1"), frame);
  const uint8_t group_mac[6] = {0x33, 0x33, 0xFF, 0, 0, 0x01};
  EXPECT_EQ(std::memcmp(frame, group_mac, 6), 0);
  EXPECT_EQ(std::memcmp(frame + 6, kOurMac, 6), 0);
  const Ipv6Packet packet = packet_of(frame, sizeof frame);
  EXPECT_EQ(packet.destination, v6("ff02::1:ff00:1"));
  EXPECT_EQ(packet.hop_limit, 255);
  NeighbourMessage message;
  ASSERT_TRUE(parse_neighbour_message(packet, &message));
  EXPECT_EQ(message.kind, NeighbourMessage::Kind::kSolicitation);
  EXPECT_EQ(message.source, v6("fd00:77:1::2"));
  EXPECT_EQ(message.target, v6("fd00:77:1::1"));
  ASSERT_TRUE(message.has_link_address);
  EXPECT_EQ(std::memcmp(message.link_address, kOurMac, 6), 0);
}

TEST(Icmp6, UnicastSolicitationGoesToTheTargetItself) {
  uint8_t frame[kNeighbourFrameSize];
  build_unicast_solicitation(kOurMac, v6("fd00:77:1::2"), v6("fd00:77:1::1"), kRouterMac, frame);
  EXPECT_EQ(std::memcmp(frame, kRouterMac, 6), 0);
  const Ipv6Packet packet = packet_of(frame, sizeof frame);
  EXPECT_EQ(packet.destination, v6("fd00:77:1::1"));
  NeighbourMessage message;
  ASSERT_TRUE(parse_neighbour_message(packet, &message))
      << "its checksum covers the new destination";
  EXPECT_EQ(message.kind, NeighbourMessage::Kind::kSolicitation);
  EXPECT_EQ(message.target, v6("fd00:77:1::1"));
  ASSERT_TRUE(message.has_link_address);
  EXPECT_EQ(std::memcmp(message.link_address, kOurMac, 6), 0);
}

TEST(Icmp6, AdvertisementAnswersTheSolicitorWithOurLinkAddress) {
  uint8_t asked[kNeighbourFrameSize];
  build_neighbour_solicitation(kRouterMac, v6("fe80::1"), v6("fd00:77:1::2"), asked);
  NeighbourMessage solicitation;
  ASSERT_TRUE(parse_neighbour_message(packet_of(asked, sizeof asked), &solicitation));
  uint8_t answer[kNeighbourFrameSize];
  build_neighbour_advertisement(solicitation, asked + 6, kOurMac, answer);
  EXPECT_EQ(std::memcmp(answer, kRouterMac, 6), 0);
  const Ipv6Packet packet = packet_of(answer, sizeof answer);
  EXPECT_EQ(packet.source, v6("fd00:77:1::2"));
  EXPECT_EQ(packet.destination, v6("fe80::1"));
  NeighbourMessage advertisement;
  ASSERT_TRUE(parse_neighbour_message(packet, &advertisement));
  EXPECT_EQ(advertisement.kind, NeighbourMessage::Kind::kAdvertisement);
  EXPECT_EQ(advertisement.target, v6("fd00:77:1::2"));
  EXPECT_TRUE(advertisement.solicited);
  EXPECT_TRUE(advertisement.override);
  ASSERT_TRUE(advertisement.has_link_address);
  EXPECT_EQ(std::memcmp(advertisement.link_address, kOurMac, 6), 0);
}

TEST(Icmp6, DuplicateAddressCheckIsAnsweredToAllNodes) {
  // A solicitation from :: (RFC 4862's duplicate address detection) for
  // our address: to the target's group, without a link-layer option.
  uint8_t asked[kNeighbourFrameSize];
  build_neighbour_solicitation(kRouterMac, Ipv6{}, v6("fd00:77:1::2"), asked);
  uint8_t* message = asked + kEthernetHeaderSize + kIpv6HeaderSize;
  std::memset(message + 24, 0, 8);
  const size_t length = kNeighbourFrameSize - 8;
  asked[kEthernetHeaderSize + 5] = 24;  // the payload without the option
  reseal(asked, length);
  NeighbourMessage solicitation;
  ASSERT_TRUE(parse_neighbour_message(packet_of(asked, length), &solicitation));
  EXPECT_TRUE(solicitation.source.unspecified());
  uint8_t answer[kNeighbourFrameSize];
  build_neighbour_advertisement(solicitation, asked + 6, kOurMac, answer);
  const Ipv6Packet packet = packet_of(answer, sizeof answer);
  EXPECT_EQ(packet.destination, v6("ff02::1"));
  NeighbourMessage advertisement;
  ASSERT_TRUE(parse_neighbour_message(packet, &advertisement));
  EXPECT_FALSE(advertisement.solicited) << "to a group, never solicited";
}

TEST(Icmp6, RefusesWhatRfc4861SaysToDrop) {
  uint8_t good[kNeighbourFrameSize];
  build_neighbour_solicitation(kRouterMac, v6("fd00:77:1::1"), v6("fd00:77:1::2"), good);
  NeighbourMessage message;
  ASSERT_TRUE(parse_neighbour_message(packet_of(good, sizeof good), &message));
  auto refused = [&](auto edit, bool seal, const char* why) {
    uint8_t frame[kNeighbourFrameSize];
    std::memcpy(frame, good, sizeof frame);
    edit(frame, frame + kEthernetHeaderSize + kIpv6HeaderSize);
    if (seal) reseal(frame, sizeof frame);
    EXPECT_FALSE(parse_neighbour_message(packet_of(frame, sizeof frame), &message)) << why;
  };
  refused([](uint8_t* f, uint8_t*) { f[kEthernetHeaderSize + 7] = 254; }, true,
          "a hop limit below 255: it crossed a router");
  refused([](uint8_t*, uint8_t* m) { m[9] ^= 1; }, false, "a wrong checksum");
  refused([](uint8_t*, uint8_t* m) { m[1] = 1; }, true, "a code other than 0");
  refused([](uint8_t*, uint8_t* m) { m[8] = 0xFF; }, true, "a multicast target");
  refused([](uint8_t*, uint8_t* m) { m[25] = 0; }, true, "an option of length 0");
  refused([](uint8_t*, uint8_t* m) { m[25] = 2; }, true, "an option past the end");
  refused([](uint8_t*, uint8_t* m) { m[0] = 134; }, true, "another ICMPv6 type");
  refused([](uint8_t* f, uint8_t*) { std::memset(f + kEthernetHeaderSize + 8, 0, 16); }, true,
          "from :: with a link-layer option");
  // An advertisement to a group that says it was solicited.
  uint8_t asked[kNeighbourFrameSize];
  build_neighbour_solicitation(kRouterMac, v6("fd00:77:1::1"), v6("fd00:77:1::2"), asked);
  ASSERT_TRUE(parse_neighbour_message(packet_of(asked, sizeof asked), &message));
  uint8_t told[kNeighbourFrameSize];
  build_neighbour_advertisement(message, asked + 6, kOurMac, told);
  std::memcpy(told + kEthernetHeaderSize + 24, v6("ff02::1").bytes.data(), 16);
  reseal(told, sizeof told);
  EXPECT_FALSE(parse_neighbour_message(packet_of(told, sizeof told), &message));
}

// An echo request from fd00:77:2::2 to fd00:77:1::2 with `data` bytes.
std::vector<uint8_t> echo_request(size_t data) {
  const size_t message = 8 + data;
  std::vector<uint8_t> frame(kEthernetHeaderSize + kIpv6HeaderSize + message, 0x61);
  std::memcpy(frame.data(), kOurMac, 6);
  std::memcpy(frame.data() + 6, kRouterMac, 6);
  frame[12] = 0x86;
  frame[13] = 0xDD;
  uint8_t* ip = frame.data() + kEthernetHeaderSize;
  const uint8_t head[8] = {0x60,
                           0,
                           0,
                           0,
                           static_cast<uint8_t>(message >> 8),
                           static_cast<uint8_t>(message),
                           kNextHeaderIcmp6,
                           63};
  std::memcpy(ip, head, 8);
  std::memcpy(ip + 8, v6("fd00:77:2::2").bytes.data(), 16);
  std::memcpy(ip + 24, v6("fd00:77:1::2").bytes.data(), 16);
  const uint8_t echo[8] = {128, 0, 0, 0, 0, 7, 0, 3};
  std::memcpy(ip + kIpv6HeaderSize, echo, 8);
  reseal(frame.data(), frame.size());
  return frame;
}

TEST(Icmp6, AnswersAnEchoRequestToItsSender) {
  const auto request = echo_request(56);
  const Ipv6Packet packet = packet_of(request.data(), request.size());
  std::vector<uint8_t> reply(request.size());
  ASSERT_EQ(build_echo6_reply(request.data(), packet, kOurMac, reply.data(), reply.size()),
            request.size());
  EXPECT_EQ(std::memcmp(reply.data(), kRouterMac, 6), 0);
  const Ipv6Packet answer = packet_of(reply.data(), reply.size());
  EXPECT_EQ(answer.source, v6("fd00:77:1::2"));
  EXPECT_EQ(answer.destination, v6("fd00:77:2::2"));
  EXPECT_EQ(answer.payload[0], 129);
  EXPECT_EQ(std::memcmp(answer.payload + 4, packet.payload + 4, 60), 0) << "id, sequence, data";
  ChecksumSum sum =
      pseudo_header_sum(answer.source, answer.destination,
                        static_cast<uint32_t>(answer.payload_length), kNextHeaderIcmp6);
  sum.add(answer.payload, answer.payload_length);
  EXPECT_TRUE(sum.verifies());
  // Too little room, a wrong checksum, or a reply: nothing.
  EXPECT_EQ(build_echo6_reply(request.data(), packet, kOurMac, reply.data(), reply.size() - 1), 0u);
  auto corrupt = request;
  corrupt.back() ^= 1;
  EXPECT_EQ(build_echo6_reply(corrupt.data(), packet_of(corrupt.data(), corrupt.size()), kOurMac,
                              reply.data(), reply.size()),
            0u);
  EXPECT_EQ(build_echo6_reply(reply.data(), answer, kOurMac, reply.data(), reply.size()), 0u);
}

// Hostile frames: every prefix of good ones, and good ones with random
// bytes changed, each in a buffer of exactly its size (ASan, in a
// sanitizer run, sees a read past it).  Nothing is read beyond the frame,
// and what parses is consistent with it.
TEST(Icmp6, MangledFramesNeverReadPastTheirEnd) {
  std::vector<std::vector<uint8_t>> good;
  uint8_t ns[kNeighbourFrameSize];
  build_neighbour_solicitation(kRouterMac, v6("fd00:77:1::1"), v6("fd00:77:1::2"), ns);
  good.emplace_back(ns, ns + sizeof ns);
  good.push_back(echo_request(40));
  std::vector<uint8_t> udp(kUdp6Lead + 100, 0x42);
  Udp6Addresses a;
  a.source = v6("fd00:77:2::2");
  a.destination = v6("fd00:77:1::2");
  encode_udp6(udp.data(), kOurMac, kRouterMac, a, 100);
  good.push_back(udp);
  std::mt19937 random(11);
  size_t parsed = 0;
  auto try_all = [&](const std::vector<uint8_t>& bytes) {
    auto frame = std::make_unique<uint8_t[]>(bytes.size());
    std::copy(bytes.begin(), bytes.end(), frame.get());
    Ipv6Packet packet;
    if (parse_ipv6_packet(frame.get(), bytes.size(), &packet) != Ipv6Result::kOk) return;
    ++parsed;
    EXPECT_LE(packet.payload + packet.payload_length, frame.get() + bytes.size());
    NeighbourMessage message;
    parse_neighbour_message(packet, &message);
    UdpDatagram datagram;
    if (parse_udp6(packet, &datagram)) {
      EXPECT_LE(datagram.payload + datagram.payload_length, frame.get() + bytes.size());
    }
    std::vector<uint8_t> reply(bytes.size());
    build_echo6_reply(frame.get(), packet, kOurMac, reply.data(), reply.size());
  };
  for (const auto& frame : good) {
    for (size_t length = 0; length <= frame.size(); ++length)
      try_all(std::vector<uint8_t>(frame.begin(), frame.begin() + static_cast<long>(length)));
    for (int round = 0; round < 3000; ++round) {
      std::vector<uint8_t> mangled = frame;
      for (int k = 0; k < 3; ++k)
        mangled[random() % mangled.size()] = static_cast<uint8_t>(random());
      try_all(mangled);
    }
  }
  EXPECT_GT(parsed, 100u) << "the mangled frames reached the parsers behind the IPv6 header";
}

}  // namespace
}  // namespace ofi_dpdk::ip
