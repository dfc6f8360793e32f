// test_rss.cc: the Toeplitz hash against the verification vectors of
// Microsoft's RSS specification and against DPDK's own rte_softrss, and
// the search for source ports that a receiver's table puts on a queue.
#include <gtest/gtest.h>
#include <rte_thash.h>

#include <array>
#include <random>
#include <vector>

#include "lib/ip/rss.h"

namespace ofi_dpdk::ip {
namespace {

// The specification's key (also DPDK's default for many drivers).
const std::vector<uint8_t> kKey = {0x6d, 0x5a, 0x56, 0xda, 0x25, 0x5b, 0x0e, 0xc2, 0x41, 0x67,
                                   0x25, 0x3d, 0x43, 0xa3, 0x8f, 0xb0, 0xd0, 0xca, 0x2b, 0xcb,
                                   0xae, 0x7b, 0x30, 0xb4, 0x77, 0xcb, 0x2d, 0xa3, 0x80, 0x30,
                                   0xf2, 0x0c, 0x6a, 0x42, 0xb7, 0x3b, 0xbe, 0xac, 0x01, 0xfa};

Ipv4 v4(uint8_t a, uint8_t b, uint8_t c, uint8_t d) {
  return Ipv4{a} << 24 | Ipv4{b} << 16 | Ipv4{c} << 8 | d;
}

RssConfig config(size_t reta_size, uint16_t queues) {
  RssConfig rss{kKey, {}};
  for (size_t i = 0; i < reta_size; ++i) rss.reta.push_back(static_cast<uint16_t>(i % queues));
  return rss;
}

// DPDK's hash of the same tuple: 32-bit words in host order.
uint32_t softrss(std::span<const uint8_t> tuple) {
  std::vector<uint32_t> words(tuple.size() / 4);
  for (size_t i = 0; i < words.size(); ++i)
    words[i] = uint32_t{tuple[4 * i]} << 24 | uint32_t{tuple[4 * i + 1]} << 16 |
               uint32_t{tuple[4 * i + 2]} << 8 | tuple[4 * i + 3];
  return rte_softrss(words.data(), static_cast<uint32_t>(words.size()), kKey.data());
}

// The specification's IPv4 vectors with ports (TCP there; the tuple is the
// same for UDP): source, destination, their ports, the hash.
TEST(Rss, MatchesTheSpecificationsVectors) {
  const RssConfig rss = config(128, 4);
  EXPECT_EQ(udp4_rss_hash(rss, v4(66, 9, 149, 187), v4(161, 142, 100, 80), 2794, 1766),
            0x51ccc178u);
  EXPECT_EQ(udp4_rss_hash(rss, v4(199, 92, 111, 2), v4(65, 69, 140, 83), 14230, 4739), 0xc626b0eau);
  EXPECT_EQ(udp4_rss_hash(rss, v4(24, 19, 198, 95), v4(12, 22, 207, 184), 12898, 38024),
            0x5c2b394au);
  EXPECT_EQ(udp4_rss_hash(rss, v4(38, 27, 205, 30), v4(209, 142, 163, 6), 48228, 2217),
            0xafc7327fu);
  EXPECT_EQ(udp4_rss_hash(rss, v4(153, 39, 163, 191), v4(202, 188, 127, 2), 44251, 1303),
            0x10e828a2u);
  const auto a = parse_ipv6("3ffe:2501:200:1fff::7"), b = parse_ipv6("3ffe:2501:200:3::1");
  ASSERT_TRUE(a && b);
  EXPECT_EQ(udp6_rss_hash(rss, *a, *b, 2794, 1766), 0x40207d3du);
}

TEST(Rss, AgreesWithDpdksSoftRss) {
  std::mt19937 random(7);
  for (int round = 0; round < 2000; ++round) {
    std::array<uint8_t, 36> tuple{};
    for (auto& byte : tuple) byte = static_cast<uint8_t>(random());
    const size_t length = round % 2 == 0 ? 12 : 36;
    const std::span<const uint8_t> input(tuple.data(), length);
    ASSERT_EQ(toeplitz_hash(kKey, input), softrss(input)) << "round " << round;
  }
}

// Every port found lands on the queue by DPDK's hash, they are the first
// such ports from `first` upward (wrapping in 49152-65535), none is missed.
TEST(Rss, ReachingPortsAreTheFirstThatLandOnTheQueue) {
  const RssConfig rss = config(128, 4);
  const Ipv4 source = v4(10, 9, 0, 2), destination = v4(10, 9, 0, 1);
  for (uint16_t queue = 0; queue < 4; ++queue) {
    std::array<uint16_t, 8> ports{};
    const uint16_t first = 65530;  // wraps
    ASSERT_EQ(udp4_reaching_ports(rss, source, destination, 9229, queue, first, ports), 8u);
    std::vector<uint16_t> expected;
    for (uint32_t i = 0; expected.size() < 8; ++i) {
      const auto port = static_cast<uint16_t>(49152 + (first - 49152 + i) % 16384);
      if (rss.queue_of(udp4_rss_hash(rss, source, destination, port, 9229)) == queue)
        expected.push_back(port);
    }
    EXPECT_EQ(std::vector<uint16_t>(ports.begin(), ports.end()), expected) << "queue " << queue;
    for (uint16_t port : ports) {
      EXPECT_GE(port, 49152);
      std::array<uint8_t, 12> tuple = {
          10, 9, 0, 2, 10, 9, 0, 1, uint8_t(port >> 8), uint8_t(port), 0x24, 0x0d};  // 9229
      EXPECT_EQ(rss.queue_of(softrss(tuple)), queue) << port;
    }
  }
  // IPv6: the same, checked by DPDK's hash.
  const auto a = parse_ipv6("fd00:9::2"), b = parse_ipv6("fd00:9::1");
  ASSERT_TRUE(a && b);
  std::array<uint16_t, 4> ports{};
  ASSERT_EQ(udp6_reaching_ports(rss, *a, *b, 9230, 2, 49152, ports), 4u);
  for (uint16_t port : ports) EXPECT_EQ(rss.queue_of(udp6_rss_hash(rss, *a, *b, port, 9230)), 2);
}

TEST(Rss, AQueueTheTableNeverNamesHasNoPorts) {
  RssConfig rss = config(64, 2);  // queues 0 and 1 only
  std::array<uint16_t, 4> ports{};
  EXPECT_EQ(udp4_reaching_ports(rss, v4(10, 0, 0, 1), v4(10, 0, 0, 2), 9228, 3, 49152, ports), 0u);
  rss.reta.resize(48);  // not a power of two
  EXPECT_FALSE(rss.usable());
  EXPECT_EQ(udp4_reaching_ports(rss, v4(10, 0, 0, 1), v4(10, 0, 0, 2), 9228, 0, 49152, ports), 0u);
}

}  // namespace
}  // namespace ofi_dpdk::ip
