#include "lib/ip/ipv6_peers.h"

#include <gtest/gtest.h>

#include <cstring>
#include <set>
#include <string>
#include <vector>

#include "lib/ip/udp4.h"

namespace ofi_dpdk::ip {
namespace {

Ipv6 v6(const std::string& text) {
  return *parse_ipv6(text);
}

TEST(Ipv6Peers, AnAddressKeepsItsIdAndTheIdGivesItBack) {
  Ipv6Peers peers;
  uint8_t id[6], again[6];
  ASSERT_TRUE(peers.id_of(v6("fd00:77:2::2"), true, id));
  EXPECT_TRUE(is_ipv6_peer_id(id));
  EXPECT_FALSE(is_peer_id(id)) << "not an IPv4 peer id";
  EXPECT_EQ(id[0] & 1, 1) << "the group bit, which no sender's MAC has";
  ASSERT_TRUE(peers.id_of(v6("fd00:77:2::2"), false, again));
  EXPECT_EQ(std::memcmp(id, again, 6), 0);
  EXPECT_EQ(peers.address_of(id), v6("fd00:77:2::2"));
  EXPECT_EQ(peers.peek(id), v6("fd00:77:2::2"));
  uint8_t other[6];
  ASSERT_TRUE(peers.id_of(v6("fd00:77:2::3"), false, other));
  EXPECT_NE(std::memcmp(id, other, 6), 0);
  EXPECT_EQ(peers.size(), 2u);
  EXPECT_EQ(peers.pinned(), 1u);
  uint8_t found[6];
  ASSERT_TRUE(peers.find_id(v6("fd00:77:2::3"), found));
  EXPECT_EQ(std::memcmp(found, other, 6), 0);
  EXPECT_FALSE(peers.find_id(v6("fd00:77:2::4"), found)) << "a lookup makes nothing";
  EXPECT_EQ(peers.size(), 2u);
  uint8_t ipv4_id[6];
  peer_id_of(0x0A000001, ipv4_id);
  EXPECT_FALSE(is_ipv6_peer_id(ipv4_id));
  EXPECT_FALSE(peers.address_of(ipv4_id));
}

TEST(Ipv6Peers, StrangersAreBoundedAndTheLeastRecentlyUsedGoes) {
  Ipv6Peers peers(4);
  uint8_t pinned[6];
  ASSERT_TRUE(peers.id_of(v6("fd00::1"), true, pinned));
  uint8_t ids[4][6];
  for (int i = 0; i < 4; ++i)
    ASSERT_TRUE(peers.id_of(v6("fd00:1::" + std::to_string(i + 1)), false, ids[i]));
  EXPECT_TRUE(peers.address_of(ids[0]));  // used: no longer the oldest
  EXPECT_TRUE(peers.peek(ids[1]));        // looked at only: still the oldest
  // A flood of new strangers: each takes the least recently used
  // stranger's place; the pinned entry and the table's size stay.
  for (int i = 0; i < 1000; ++i) {
    uint8_t id[6];
    ASSERT_TRUE(peers.id_of(v6("fd00:2::" + std::to_string(i + 1)), false, id));
    if (i == 0) {
      EXPECT_FALSE(peers.peek(ids[1])) << "the least recently used went first";
      EXPECT_TRUE(peers.peek(ids[0]));
    }
  }
  EXPECT_EQ(peers.size(), 5u);
  EXPECT_EQ(peers.evictions(), 1000u);
  EXPECT_EQ(peers.address_of(pinned), v6("fd00::1"));
  // An evicted address that comes back gets a new id, and its old id
  // names nothing.
  uint8_t back[6];
  ASSERT_TRUE(peers.id_of(v6("fd00:1::2"), false, back));
  EXPECT_NE(std::memcmp(back, ids[1], 6), 0);
  EXPECT_FALSE(peers.peek(ids[1]));
  EXPECT_EQ(peers.peek(back), v6("fd00:1::2"));
}

TEST(Ipv6Peers, AnOldIdNeverNamesANewAddress) {
  // However many strangers come and go, an id once given out names its
  // own address or nothing.
  Ipv6Peers peers(8);
  std::vector<std::pair<std::vector<uint8_t>, Ipv6>> given;
  std::set<std::vector<uint8_t>> distinct;
  for (int i = 0; i < 200000; ++i) {
    Ipv6 address = v6("fd00:3::");
    address.bytes[12] = static_cast<uint8_t>(i >> 24);
    address.bytes[13] = static_cast<uint8_t>(i >> 16);
    address.bytes[14] = static_cast<uint8_t>(i >> 8);
    address.bytes[15] = static_cast<uint8_t>(i);
    uint8_t id[6];
    ASSERT_TRUE(peers.id_of(address, false, id));
    if (i % 1000 == 0) given.emplace_back(std::vector<uint8_t>(id, id + 6), address);
    distinct.emplace(id, id + 6);
  }
  EXPECT_EQ(distinct.size(), 200000u) << "no id handed out twice";
  for (const auto& [id, address] : given) {
    const auto now = peers.peek(id.data());
    EXPECT_TRUE(!now || *now == address);
  }
  EXPECT_EQ(peers.size(), 8u);
}

TEST(Ipv6Peers, AStrangerNamedByTheProviderIsPinnedFromThen) {
  Ipv6Peers peers(1);
  uint8_t first[6], named[6], next[6];
  ASSERT_TRUE(peers.id_of(v6("fd00::a"), false, first));
  ASSERT_TRUE(peers.id_of(v6("fd00::a"), true, named));
  EXPECT_EQ(std::memcmp(first, named, 6), 0);
  ASSERT_TRUE(peers.id_of(v6("fd00::b"), false, next));
  ASSERT_TRUE(peers.id_of(v6("fd00::c"), false, next));
  EXPECT_EQ(peers.peek(first), v6("fd00::a")) << "pinned: never evicted";
  EXPECT_EQ(peers.size(), 2u);
  EXPECT_FALSE(Ipv6Peers(0).id_of(v6("fd00::d"), false, next)) << "no room for strangers";
}

Ipv6 numbered(const std::string& prefix, uint32_t n) {
  Ipv6 address = v6(prefix);
  for (int b = 0; b < 4; ++b) address.bytes[12 + b] = static_cast<uint8_t>(n >> (24 - 8 * b));
  return address;
}

TEST(Ipv6Peers, AnEntryAConnectionHoldsIsNeverEvictedForStrangers) {
  // A server's peer came in as a stranger (its HELLO) and has a live
  // connection now; a flood of strangers comes while it is silent.
  Ipv6Peers peers(4);
  uint8_t live[6];
  ASSERT_TRUE(peers.id_of(v6("fd00:1::1"), false, live));
  ASSERT_TRUE(peers.hold(live, Ipv6Peers::Use::kConnection));
  EXPECT_EQ(peers.connected(), 1u);
  EXPECT_EQ(peers.strangers(), 0u);
  for (uint32_t i = 0; i < 10000; ++i) {
    uint8_t id[6];
    ASSERT_TRUE(peers.id_of(numbered("fd00:66::", i + 1), false, id));
  }
  // Expect: the strangers took each other's places, never the live peer's.
  EXPECT_EQ(peers.peek(live), v6("fd00:1::1"));
  EXPECT_EQ(peers.strangers(), 4u);
  EXPECT_EQ(peers.evictions(), 10000u - 4);
  // Its connection gone, it is the newest stranger, and goes in its turn.
  ASSERT_TRUE(peers.release(live, Ipv6Peers::Use::kConnection));
  EXPECT_FALSE(peers.release(live, Ipv6Peers::Use::kConnection)) << "one use, given back once";
  EXPECT_EQ(peers.connected(), 0u);
  EXPECT_EQ(peers.strangers(), 4u) << "the oldest stranger made room";
  EXPECT_EQ(peers.peek(live), v6("fd00:1::1"));
  for (uint32_t i = 0; i < 4; ++i) {
    uint8_t id[6];
    ASSERT_TRUE(peers.id_of(numbered("fd00:67::", i + 1), false, id));
  }
  EXPECT_FALSE(peers.peek(live));
}

TEST(Ipv6Peers, NamedUsesAreCountedAndTheLastOneUnpins) {
  Ipv6Peers peers(2);
  uint8_t id[6], again[6];
  ASSERT_TRUE(peers.id_of(v6("fd00::5"), true, id));     // an AV entry
  ASSERT_TRUE(peers.id_of(v6("fd00::5"), true, again));  // and an fi_connect
  ASSERT_TRUE(peers.hold(id, Ipv6Peers::Use::kConnection));
  EXPECT_EQ(peers.pinned(), 1u);
  ASSERT_TRUE(peers.release(id, Ipv6Peers::Use::kNamed));
  EXPECT_EQ(peers.pinned(), 1u) << "one named use left";
  ASSERT_TRUE(peers.release(id, Ipv6Peers::Use::kNamed));
  EXPECT_EQ(peers.pinned(), 0u);
  EXPECT_EQ(peers.connected(), 1u) << "its connection holds it still";
  EXPECT_FALSE(peers.release(id, Ipv6Peers::Use::kNamed));
  ASSERT_TRUE(peers.release(id, Ipv6Peers::Use::kConnection));
  EXPECT_EQ(peers.strangers(), 1u);
  uint8_t forged[6] = {0x03, 0x06, 0xFF, 0xFF, 0xFF, 0xFF};
  EXPECT_FALSE(peers.hold(forged, Ipv6Peers::Use::kNamed)) << "names no entry";
  EXPECT_FALSE(peers.release(forged, Ipv6Peers::Use::kConnection));
  // With no room for strangers at all, the last use's end is the entry's.
  Ipv6Peers none(0);
  ASSERT_TRUE(none.id_of(v6("fd00::6"), true, id));
  ASSERT_TRUE(none.release(id, Ipv6Peers::Use::kNamed));
  EXPECT_FALSE(none.peek(id));
  EXPECT_EQ(none.size(), 0u);
}

TEST(Ipv6Peers, AcceptedAndClosedClientsNeverFillTheTable) {
  // Each client: its CONNECT (a stranger's id), the listener's connection
  // with it, fi_accept (a named use), then both gone.  Many more distinct
  // clients than the table names at once.
  Ipv6Peers peers;
  const uint32_t clients = Ipv6Peers::kMaxPinned + 8000;
  for (uint32_t i = 0; i < clients; ++i) {
    const Ipv6 address = numbered("fd00:88::", i + 1);
    uint8_t id[6], accepted[6];
    ASSERT_TRUE(peers.id_of(address, false, id)) << i;
    ASSERT_TRUE(peers.hold(id, Ipv6Peers::Use::kConnection)) << i;
    ASSERT_TRUE(peers.id_of(address, true, accepted)) << "fi_accept of client " << i;
    ASSERT_TRUE(peers.release(accepted, Ipv6Peers::Use::kNamed));
    ASSERT_TRUE(peers.release(id, Ipv6Peers::Use::kConnection));
  }
  EXPECT_EQ(peers.pinned(), 0u);
  EXPECT_EQ(peers.connected(), 0u);
  EXPECT_LE(peers.size(), Ipv6Peers::kDefaultStrangerCapacity);
  uint8_t id[6];
  EXPECT_TRUE(peers.id_of(v6("fd00:99::1"), true, id)) << "an AV insert still goes in";
  // While they stay named, the bound holds: the one past it is refused.
  Ipv6Peers kept;
  for (uint32_t i = 0; i < Ipv6Peers::kMaxPinned; ++i)
    ASSERT_TRUE(kept.id_of(numbered("fd00:89::", i + 1), true, id)) << i;
  EXPECT_FALSE(kept.id_of(v6("fd00:99::2"), true, id));
  EXPECT_EQ(kept.holds_refused(), 1u);
}

TEST(Ipv6Peers, ConnectionsAloneHaveTheirOwnBound) {
  // Strangers that complete handshakes fill the connected class, never the
  // named one the program's own inserts and accepts need.
  Ipv6Peers peers(8, /*max_named=*/2, /*max_connected=*/3);
  uint8_t ids[4][6];
  for (int i = 0; i < 4; ++i) ASSERT_TRUE(peers.id_of(numbered("fd00:70::", i + 1), false, ids[i]));
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(peers.hold(ids[i], Ipv6Peers::Use::kConnection));
  EXPECT_FALSE(peers.hold(ids[3], Ipv6Peers::Use::kConnection));
  EXPECT_EQ(peers.holds_refused(), 1u);
  EXPECT_EQ(peers.connected(), 3u);
  uint8_t named[6];
  EXPECT_TRUE(peers.id_of(v6("fd00:71::1"), true, named));
  EXPECT_TRUE(peers.hold(ids[3], Ipv6Peers::Use::kNamed)) << "a stranger named by the program";
  EXPECT_TRUE(peers.hold(ids[3], Ipv6Peers::Use::kConnection)) << "named: no new class joined";
  EXPECT_FALSE(peers.id_of(v6("fd00:71::2"), true, named)) << "two named at most";
  // A named entry whose names go while connections hold it moves class.
  ASSERT_TRUE(peers.release(ids[3], Ipv6Peers::Use::kNamed));
  EXPECT_EQ(peers.pinned(), 1u);
  EXPECT_EQ(peers.connected(), 4u);
}

TEST(Ipv6Peers, ForgedIdsNameNothing) {
  Ipv6Peers peers;
  uint8_t id[6];
  ASSERT_TRUE(peers.id_of(v6("fd00::1"), true, id));
  for (int b = 2; b < 6; ++b) {
    uint8_t forged[6];
    std::memcpy(forged, id, 6);
    forged[b] ^= 0x5A;
    EXPECT_FALSE(peers.peek(forged)) << "byte " << b;
  }
}

}  // namespace
}  // namespace ofi_dpdk::ip
