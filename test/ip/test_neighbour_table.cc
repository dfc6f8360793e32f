#include "lib/ip/neighbour_table.h"

#include <gtest/gtest.h>

namespace ofi_dpdk::ip {
namespace {

constexpr uint64_t kSecond = 1'000'000'000;
constexpr uint8_t kMacA[6] = {0x02, 0, 0, 0, 0, 0x0A};
constexpr uint8_t kMacB[6] = {0x02, 0, 0, 0, 0, 0x0B};

TEST(NeighbourTable, LearnedEntriesExpire) {
  NeighbourTable table(8, 60 * kSecond);
  table.learn(0x0A000002, kMacA, 1 * kSecond);
  uint8_t mac[6];
  ASSERT_TRUE(table.find(0x0A000002, 2 * kSecond, mac));
  EXPECT_EQ(mac[5], 0x0A);
  EXPECT_EQ(table.address_of(kMacA, 2 * kSecond), 0x0A000002u);
  EXPECT_FALSE(table.find(0x0A000003, 2 * kSecond, mac));
  EXPECT_FALSE(table.find(0x0A000002, 62 * kSecond, mac));
  EXPECT_FALSE(table.address_of(kMacA, 62 * kSecond));
  // Confirmed again: trusted again.
  table.learn(0x0A000002, kMacB, 62 * kSecond);
  ASSERT_TRUE(table.find(0x0A000002, 63 * kSecond, mac));
  EXPECT_EQ(mac[5], 0x0B);
}

TEST(NeighbourTable, EntriesInUseAreAskedAgainBeforeTheyLapse) {
  NeighbourTable table(8, 60 * kSecond);
  table.learn(0x0A000002, kMacA, 1 * kSecond);
  uint8_t mac[6];
  bool refresh_due = true;
  ASSERT_TRUE(table.find(0x0A000002, 30 * kSecond, mac, &refresh_due));
  EXPECT_FALSE(refresh_due);
  ASSERT_TRUE(table.find(0x0A000002, 32 * kSecond, mac, &refresh_due)) << "still usable";
  EXPECT_TRUE(refresh_due);
  // Asked for once: the pace of the next ask is the asker's.
  EXPECT_FALSE(table.asked_since(0x0A000002, 0));
  ASSERT_TRUE(table.expect(0x0A000002, 32 * kSecond));
  EXPECT_TRUE(table.asked_since(0x0A000002, 32 * kSecond));
  EXPECT_FALSE(table.asked_since(0x0A000002, 33 * kSecond));
}

TEST(NeighbourTable, StampsAheadOfTheClockDoNotWrap) {
  // An ask stamped by a later clock reading than the reply's: the reply
  // is still the answer, and the entry fresh.
  NeighbourTable table(8, 60 * kSecond);
  ASSERT_TRUE(table.expect(0x0A000002, 10 * kSecond));
  EXPECT_TRUE(table.take_reply(0x0A000002, kMacA, 9 * kSecond));
  uint8_t mac[6];
  bool refresh_due = true;
  EXPECT_TRUE(table.find(0x0A000002, 8 * kSecond, mac, &refresh_due));
  EXPECT_FALSE(refresh_due);
}

TEST(NeighbourTable, TakesOnlyRepliesItAskedFor) {
  NeighbourTable table;
  uint8_t mac[6];
  EXPECT_FALSE(table.take_reply(0x0A000002, kMacA, kSecond));
  EXPECT_FALSE(table.find(0x0A000002, kSecond, mac));
  EXPECT_EQ(table.ignored_replies(), 1u);
  ASSERT_TRUE(table.expect(0x0A000002, kSecond));
  EXPECT_TRUE(table.take_reply(0x0A000002, kMacA, 2 * kSecond));
  EXPECT_TRUE(table.find(0x0A000002, 2 * kSecond, mac));
  // One reply per question: a second one is a stranger's.
  EXPECT_FALSE(table.take_reply(0x0A000002, kMacB, 2 * kSecond));
  ASSERT_TRUE(table.find(0x0A000002, 2 * kSecond, mac));
  EXPECT_EQ(mac[5], 0x0A);
  // A question goes stale.
  ASSERT_TRUE(table.expect(0x0A000009, 3 * kSecond));
  EXPECT_FALSE(table.take_reply(0x0A000009, kMacA, 3 * kSecond + NeighbourTable::kExpectNs + 1));
}

TEST(NeighbourTable, BoundedUnderAFlood) {
  NeighbourTable table(16);
  for (uint32_t i = 0; i < 10000; ++i) table.learn(0x0A000000 + i, kMacA, kSecond + i);
  EXPECT_EQ(table.size(), 16u);
  EXPECT_EQ(table.evictions(), 10000u - 16u);
  uint8_t mac[6];
  // The newest stay, the oldest went.
  EXPECT_TRUE(table.find(0x0A000000 + 9999, 2 * kSecond, mac));
  EXPECT_FALSE(table.find(0x0A000000, 2 * kSecond, mac));
  for (uint32_t i = 0; i < NeighbourTable::kMaxExpected; ++i)
    EXPECT_TRUE(table.expect(0x0B000000 + i, kSecond));
  EXPECT_FALSE(table.expect(0x0C000000, kSecond));
  // Questions already asked may be asked again; stale ones make room.
  EXPECT_TRUE(table.expect(0x0B000000, kSecond));
  EXPECT_TRUE(table.expect(0x0C000000, kSecond + NeighbourTable::kExpectNs + 1));
}

// The IPv6 table (neighbour discovery) is the same code on Ipv6 keys.
TEST(NeighbourTable, Ipv6KeysTakeOnlyAnsweredQuestionsAndStayBounded) {
  Neighbour6Table table(8);
  const Ipv6 router = *parse_ipv6("fe80::1");
  uint8_t mac[6];
  EXPECT_FALSE(table.take_reply(router, kMacA, kSecond));
  ASSERT_TRUE(table.expect(router, kSecond));
  EXPECT_TRUE(table.asked_since(router, kSecond));
  EXPECT_TRUE(table.take_reply(router, kMacA, kSecond));
  ASSERT_TRUE(table.find(router, kSecond, mac));
  EXPECT_EQ(mac[5], 0x0A);
  EXPECT_EQ(table.address_of(kMacA, kSecond), router);
  for (int i = 0; i < 100; ++i) {
    Ipv6 other = router;
    other.bytes[15] = static_cast<uint8_t>(i + 2);
    table.learn(other, kMacB, 2 * kSecond + i);
  }
  EXPECT_EQ(table.size(), 8u);
  EXPECT_FALSE(table.find(router, 3 * kSecond, mac)) << "the oldest went";
}

}  // namespace
}  // namespace ofi_dpdk::ip
