#include "lib/ip/arp.h"

#include <gtest/gtest.h>

#include <cstring>
#include <vector>

namespace ofi_dpdk::ip {
namespace {

constexpr uint8_t kAsker[6] = {0x02, 0, 0, 0, 0, 0x01};
constexpr uint8_t kOwner[6] = {0x02, 0, 0, 0, 0, 0x02};

TEST(Arp, RequestIsBroadcastAndParsesBack) {
  const ArpMessage request = arp_request(kAsker, 0x0A000001, 0x0A000002);
  uint8_t frame[kArpFrameSize];
  build_arp(request, frame);
  for (int i = 0; i < 6; ++i) EXPECT_EQ(frame[i], 0xFF);
  EXPECT_EQ(std::memcmp(frame + 6, kAsker, 6), 0);
  EXPECT_EQ(frame[12], 0x08);
  EXPECT_EQ(frame[13], 0x06);
  // RFC 826 for Ethernet/IPv4: htype 1, ptype 0x0800, 6, 4, op 1.
  const uint8_t fixed[] = {0, 1, 0x08, 0x00, 6, 4, 0, 1};
  EXPECT_EQ(std::memcmp(frame + 14, fixed, sizeof(fixed)), 0);
  const uint8_t target_ip[] = {10, 0, 0, 2};
  EXPECT_EQ(std::memcmp(frame + 38, target_ip, 4), 0);
  for (size_t i = kArpLength; i < kArpFrameSize; ++i) EXPECT_EQ(frame[i], 0) << i;

  const auto parsed = parse_arp(frame, sizeof(frame));
  ASSERT_TRUE(parsed);
  EXPECT_EQ(parsed->op, ArpOp::kRequest);
  EXPECT_EQ(std::memcmp(parsed->sender_mac, kAsker, 6), 0);
  EXPECT_EQ(parsed->sender_ip, 0x0A000001u);
  EXPECT_EQ(parsed->target_ip, 0x0A000002u);
}

TEST(Arp, RequestToAKnownMacGoesThereAlone) {
  uint8_t frame[kArpFrameSize];
  build_arp(arp_request(kAsker, 0x0A000001, 0x0A000002), frame, kOwner);
  EXPECT_EQ(std::memcmp(frame, kOwner, 6), 0);
  const auto parsed = parse_arp(frame, sizeof(frame));
  ASSERT_TRUE(parsed);
  EXPECT_EQ(parsed->op, ArpOp::kRequest);
  EXPECT_EQ(parsed->target_ip, 0x0A000002u);
  for (const uint8_t byte : parsed->target_mac) EXPECT_EQ(byte, 0) << "asked, not told";
  // A reply goes to its asker whatever `to` says.
  build_arp(arp_reply(arp_request(kAsker, 0x0A000001, 0x0A000002), kOwner), frame, kOwner);
  EXPECT_EQ(std::memcmp(frame, kAsker, 6), 0);
}

TEST(Arp, ReplyGoesToTheAskerWithTheOwnersMac) {
  const ArpMessage request = arp_request(kAsker, 0x0A000001, 0x0A000002);
  const ArpMessage reply = arp_reply(request, kOwner);
  uint8_t frame[kArpFrameSize];
  build_arp(reply, frame);
  EXPECT_EQ(std::memcmp(frame, kAsker, 6), 0);
  EXPECT_EQ(std::memcmp(frame + 6, kOwner, 6), 0);
  const auto parsed = parse_arp(frame, kArpLength);  // unpadded is whole too
  ASSERT_TRUE(parsed);
  EXPECT_EQ(parsed->op, ArpOp::kReply);
  EXPECT_EQ(std::memcmp(parsed->sender_mac, kOwner, 6), 0);
  EXPECT_EQ(parsed->sender_ip, 0x0A000002u);
  EXPECT_EQ(std::memcmp(parsed->target_mac, kAsker, 6), 0);
  EXPECT_EQ(parsed->target_ip, 0x0A000001u);
}

TEST(Arp, RefusesOtherFrames) {
  uint8_t frame[kArpFrameSize];
  build_arp(arp_request(kAsker, 1, 2), frame);
  EXPECT_FALSE(parse_arp(frame, kArpLength - 1));
  EXPECT_FALSE(parse_arp(nullptr, kArpLength));
  auto broken = [&](size_t at, uint8_t value) {
    std::vector<uint8_t> copy(frame, frame + sizeof(frame));
    copy[at] = value;
    return parse_arp(copy.data(), copy.size()).has_value();
  };
  EXPECT_FALSE(broken(13, 0x00));  // EtherType 0x0800
  EXPECT_FALSE(broken(15, 6));     // hardware type 6
  EXPECT_FALSE(broken(16, 0x86));  // protocol 0x86DD
  EXPECT_FALSE(broken(18, 8));     // hardware length
  EXPECT_FALSE(broken(19, 16));    // protocol length
  EXPECT_FALSE(broken(21, 3));     // RARP request
  EXPECT_TRUE(broken(21, 2));      // a reply is fine
}

}  // namespace
}  // namespace ofi_dpdk::ip
