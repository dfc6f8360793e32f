#include "lib/ip/neighbour_table.h"

#include <gtest/gtest.h>

namespace ofi_dpdk::ip {
namespace {

constexpr uint64_t kSecond = 1'000'000'000;
constexpr uint8_t kMacA[6] = {0x02, 0, 0, 0, 0, 0x0A};
constexpr uint8_t kMacB[6] = {0x02, 0, 0, 0, 0, 0x0B};
constexpr uint8_t kBroadcast[6] = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff};
constexpr uint8_t kMulticast[6] = {0x01, 0x00, 0x5e, 0, 0, 1};
constexpr uint8_t kZero[6] = {};
constexpr Ipv4 kPeer = 0x0A000002;

// Asks for `ip` and takes `mac` as its answer.
void resolve(NeighbourTable& table, Ipv4 ip, const uint8_t mac[6], uint64_t now) {
  ASSERT_TRUE(table.expect(ip, now));
  ASSERT_EQ(table.take_answer(ip, mac, now), Verdict::kLearned);
}

TEST(NeighbourTable, LearnedEntriesExpire) {
  NeighbourTable table(8, 60 * kSecond);
  resolve(table, kPeer, kMacA, 1 * kSecond);
  uint8_t mac[6];
  ASSERT_TRUE(table.find(kPeer, 2 * kSecond, mac));
  EXPECT_EQ(mac[5], 0x0A);
  EXPECT_EQ(table.address_of(kMacA, 2 * kSecond), kPeer);
  EXPECT_FALSE(table.find(kPeer + 1, 2 * kSecond, mac));
  EXPECT_FALSE(table.find(kPeer, 62 * kSecond, mac));
  EXPECT_FALSE(table.address_of(kMacA, 62 * kSecond));
  // Lapsed, asked again: a new MAC is taken (a NIC replaced).
  resolve(table, kPeer, kMacB, 62 * kSecond);
  ASSERT_TRUE(table.find(kPeer, 63 * kSecond, mac));
  EXPECT_EQ(mac[5], 0x0B);
  EXPECT_EQ(table.address_of(kMacB, 63 * kSecond), kPeer);
  EXPECT_FALSE(table.address_of(kMacA, 63 * kSecond)) << "the old MAC names nobody";
}

TEST(NeighbourTable, EntriesInUseAreAskedAgainBeforeTheyLapse) {
  NeighbourTable table(8, 60 * kSecond);
  resolve(table, kPeer, kMacA, 1 * kSecond);
  uint8_t mac[6];
  bool refresh_due = true;
  ASSERT_TRUE(table.find(kPeer, 30 * kSecond, mac, &refresh_due));
  EXPECT_FALSE(refresh_due);
  ASSERT_TRUE(table.find(kPeer, 32 * kSecond, mac, &refresh_due)) << "still usable";
  EXPECT_TRUE(refresh_due);
  // Asked for once: the pace of the next ask is the asker's.
  EXPECT_FALSE(table.asked_since(kPeer, 2 * kSecond));
  ASSERT_TRUE(table.expect(kPeer, 32 * kSecond));
  EXPECT_TRUE(table.asked_since(kPeer, 32 * kSecond));
  EXPECT_FALSE(table.asked_since(kPeer, 33 * kSecond));
  // The answer that agrees confirms it for another lifetime.
  EXPECT_EQ(table.take_answer(kPeer, kMacA, 32 * kSecond), Verdict::kLearned);
  EXPECT_TRUE(table.find(kPeer, 91 * kSecond, mac));
}

TEST(NeighbourTable, HeardSinceCountsQuestionsAndAnswers) {
  NeighbourTable table(8, 60 * kSecond);
  EXPECT_FALSE(table.heard_since(kPeer, 0));
  resolve(table, kPeer, kMacA, 1 * kSecond);
  // Answered: the question is closed, the confirmation counts.
  EXPECT_FALSE(table.asked_since(kPeer, 1 * kSecond));
  EXPECT_TRUE(table.heard_since(kPeer, 1 * kSecond));
  EXPECT_FALSE(table.heard_since(kPeer, 2 * kSecond));
  // Asked again and not answered yet: the question counts.
  ASSERT_TRUE(table.expect(kPeer, 5 * kSecond));
  EXPECT_TRUE(table.heard_since(kPeer, 5 * kSecond));
  EXPECT_FALSE(table.heard_since(kPeer, 6 * kSecond));
}

TEST(NeighbourTable, StampsAheadOfTheClockDoNotWrap) {
  // An ask stamped by a later clock reading than the reply's: the reply
  // is still the answer, and the entry fresh.
  NeighbourTable table(8, 60 * kSecond);
  ASSERT_TRUE(table.expect(kPeer, 10 * kSecond));
  EXPECT_EQ(table.take_answer(kPeer, kMacA, 9 * kSecond), Verdict::kLearned);
  uint8_t mac[6];
  bool refresh_due = true;
  EXPECT_TRUE(table.find(kPeer, 8 * kSecond, mac, &refresh_due));
  EXPECT_FALSE(refresh_due);
}

TEST(NeighbourTable, TakesOnlyAnswersItAskedFor) {
  NeighbourTable table;
  uint8_t mac[6];
  EXPECT_EQ(table.take_answer(kPeer, kMacA, kSecond), Verdict::kNotAsked);
  EXPECT_FALSE(table.find(kPeer, kSecond, mac));
  EXPECT_EQ(table.count(Verdict::kNotAsked), 1u);
  ASSERT_TRUE(table.expect(kPeer, kSecond));
  EXPECT_EQ(table.take_answer(kPeer, kMacA, 2 * kSecond), Verdict::kLearned);
  EXPECT_TRUE(table.find(kPeer, 2 * kSecond, mac));
  // One answer per question: a second one is a stranger's.
  EXPECT_EQ(table.take_answer(kPeer, kMacB, 2 * kSecond), Verdict::kNotAsked);
  ASSERT_TRUE(table.find(kPeer, 2 * kSecond, mac));
  EXPECT_EQ(mac[5], 0x0A);
  // A question goes stale.
  ASSERT_TRUE(table.expect(0x0A000009, 3 * kSecond));
  EXPECT_EQ(table.take_answer(0x0A000009, kMacA, 3 * kSecond + NeighbourTable::kExpectNs + 1),
            Verdict::kNotAsked);
}

TEST(NeighbourTable, RefusesGroupAndZeroMacs) {
  NeighbourTable table;
  uint8_t mac[6];
  for (const uint8_t* bad : {kBroadcast, kMulticast, kZero}) {
    ASSERT_TRUE(table.expect(kPeer, kSecond));
    EXPECT_EQ(table.take_answer(kPeer, bad, kSecond), Verdict::kBadMac);
    bool ask = true;
    EXPECT_EQ(table.take_request(kPeer, bad, kSecond, &ask), Verdict::kBadMac);
    EXPECT_FALSE(ask);
    EXPECT_FALSE(table.find(kPeer, kSecond, mac));
    EXPECT_FALSE(table.pin(kPeer, bad));
  }
  EXPECT_EQ(table.count(Verdict::kBadMac), 6u);
  // The question stayed open for the real answer.
  EXPECT_EQ(table.take_answer(kPeer, kMacA, kSecond), Verdict::kLearned);
}

// Issue 42, finding 2: one ARP request claiming a live peer's address
// redirected its frames.
TEST(NeighbourTable, UnsolicitedRequestsNeverReplaceALiveEntry) {
  NeighbourTable table(8, 60 * kSecond);
  resolve(table, kPeer, kMacA, kSecond);
  uint8_t mac[6];
  bool ask = false;
  // A request claiming the peer's address from another MAC: kept, and the
  // peer asked again.
  EXPECT_EQ(table.take_request(kPeer, kMacB, 2 * kSecond, &ask), Verdict::kConflict);
  EXPECT_TRUE(ask);
  EXPECT_TRUE(table.asking(kPeer, 2 * kSecond));
  ASSERT_TRUE(table.find(kPeer, 2 * kSecond, mac));
  EXPECT_EQ(mac[5], 0x0A);
  // Another within kReaskNs: not asked again (a flood asks once a pace).
  EXPECT_EQ(table.take_request(kPeer, kMacB, 2 * kSecond + 1000, &ask), Verdict::kConflict);
  EXPECT_FALSE(ask);
  // An answer to the re-probe that disagrees does not replace it either;
  // the question stays open for the peer's own answer.
  EXPECT_EQ(table.take_answer(kPeer, kMacB, 2 * kSecond + 2000), Verdict::kConflict);
  ASSERT_TRUE(table.find(kPeer, 2 * kSecond + 2000, mac));
  EXPECT_EQ(mac[5], 0x0A);
  EXPECT_EQ(table.take_answer(kPeer, kMacA, 2 * kSecond + 3000), Verdict::kLearned);
  EXPECT_FALSE(table.asking(kPeer, 2 * kSecond + 3000));
  // One that agrees changes nothing and asks nothing.
  EXPECT_EQ(table.take_request(kPeer, kMacA, 3 * kSecond, &ask), Verdict::kKnown);
  EXPECT_FALSE(ask);
  EXPECT_EQ(table.count(Verdict::kConflict), 3u);
}

TEST(NeighbourTable, RequestsFromStrangersAreAskedBackNotLearned) {
  NeighbourTable table(8, 60 * kSecond);
  uint8_t mac[6];
  bool ask = false;
  EXPECT_EQ(table.take_request(kPeer, kMacA, kSecond, &ask), Verdict::kNotAsked);
  EXPECT_TRUE(ask) << "we ask it ourselves, to be able to answer it";
  EXPECT_EQ(table.refusals(), 0u) << "a first contact is not a refusal";
  EXPECT_FALSE(table.find(kPeer, kSecond, mac)) << "nothing learned from the request";
  EXPECT_EQ(table.size(), 0u);
  // Its answer to our question is learned.
  EXPECT_EQ(table.take_answer(kPeer, kMacA, kSecond + 1000), Verdict::kLearned);
  ASSERT_TRUE(table.find(kPeer, kSecond + 2000, mac));
  EXPECT_EQ(mac[5], 0x0A);
  // A request from the address we are resolving, whose sender checks
  // passed, is as good as its answer (rule b).
  ASSERT_TRUE(table.expect(kPeer + 1, 2 * kSecond));
  EXPECT_EQ(table.take_request(kPeer + 1, kMacB, 2 * kSecond, &ask), Verdict::kLearned);
  EXPECT_FALSE(ask);
  EXPECT_TRUE(table.find(kPeer + 1, 2 * kSecond, mac));
  // An asked-back question lives kAskBackNs.
  EXPECT_EQ(table.take_request(kPeer + 2, kMacB, 3 * kSecond, &ask), Verdict::kNotAsked);
  ASSERT_TRUE(ask);
  EXPECT_EQ(table.take_answer(kPeer + 2, kMacB, 3 * kSecond + NeighbourTable::kAskBackNs + 1),
            Verdict::kNotAsked);
}

TEST(NeighbourTable, AskersCannotCrowdOutOurOwnQuestions) {
  NeighbourTable table(8, 60 * kSecond);
  bool ask = false;
  size_t asked_back = 0;
  for (uint32_t i = 0; i < 1000; ++i) {
    table.take_request(0x0B000000 + i, kMacB, kSecond, &ask);
    asked_back += ask;
  }
  EXPECT_EQ(asked_back, NeighbourTable::kMaxAskedBack) << "the ask-back pool is bounded";
  // An asked-back question becomes ours when we need it.
  EXPECT_TRUE(table.expect(0x0B000000, kSecond));
  for (uint32_t i = 1; i < NeighbourTable::kMaxExpected; ++i)
    EXPECT_TRUE(table.expect(0x0C000000 + i, kSecond)) << "our own pool is whole";
  EXPECT_FALSE(table.expect(0x0D000000, kSecond));
  EXPECT_FALSE(table.expect(0x0B000001, kSecond)) << "nor when our pool is full";
  // An asker never demotes one of ours: its request is its answer.
  EXPECT_EQ(table.take_request(0x0C000001, kMacA, kSecond, &ask), Verdict::kLearned);
  // The ask-back pool empties as its questions go stale.
  table.take_request(0x0E000000, kMacB, kSecond + NeighbourTable::kAskBackNs + 1, &ask);
  EXPECT_TRUE(ask);
}

// A flood of made-up askers, each asking once, keeps the ask-back pool
// full; a real neighbour refused asks again (it polls until answered) and
// takes the oldest question's place, so it is asked back while the flood
// lasts.  One-shot askers never displace anything.
TEST(NeighbourTable, ARefusedAskerAskingAgainDisplacesTheOldestQuestion) {
  NeighbourTable table(8, 60 * kSecond);
  bool ask = false;
  uint32_t flooder = 0x0B000000;
  const auto flood = [&](uint64_t at_ns, uint32_t count) {
    size_t asked_back = 0;
    for (uint32_t i = 0; i < count; ++i) {
      table.take_request(flooder++, kMacB, at_ns, &ask);
      asked_back += ask;
    }
    return asked_back;
  };
  EXPECT_EQ(flood(kSecond, 1000), NeighbourTable::kMaxAskedBack);
  EXPECT_EQ(table.displaced(), 0u) << "one-shot askers displace nothing";
  const uint32_t oldest = 0x0B000000;
  EXPECT_EQ(table.take_request(kPeer, kMacA, kSecond, &ask), Verdict::kNotAsked);
  EXPECT_FALSE(ask) << "the pool is full";
  // Asked again (after kReaskNs): asked back in place of the oldest.
  const uint64_t again = kSecond + NeighbourTable::kReaskNs + 1;
  EXPECT_EQ(table.take_request(kPeer, kMacA, again, &ask), Verdict::kNotAsked);
  EXPECT_TRUE(ask) << "a refused asker asking again is asked back";
  EXPECT_EQ(table.displaced(), 1u);
  EXPECT_EQ(table.take_answer(oldest, kMacB, again), Verdict::kNotAsked)
      << "the oldest question gave way";
  EXPECT_EQ(table.take_answer(kPeer, kMacA, again + 1000), Verdict::kLearned);
  uint8_t mac[6];
  EXPECT_TRUE(table.find(kPeer, again + 1000, mac));
  EXPECT_EQ(flood(again, 1000), 1u) << "the one place the peer's answer freed";
  EXPECT_EQ(table.displaced(), 1u) << "one-shot askers still displace nothing";
}

// Issue 42, finding 2: 1024 made-up senders evicted the gateway's entry.
TEST(NeighbourTable, EntriesInUseAreNeverEvictedByStrangers) {
  NeighbourTable table(16, 60 * kSecond);
  resolve(table, kPeer, kMacA, kSecond);
  uint8_t mac[6];
  ASSERT_TRUE(table.find(kPeer, kSecond, mac));  // in use
  // Strangers that answer what they make us ask: 10000 of them.
  bool ask = false;
  size_t refused = 0;
  for (uint32_t i = 0; i < 10000; ++i) {
    const uint64_t now = 2 * kSecond + i * 1000;
    const Ipv4 stranger = 0x0A010000 + i;
    table.take_request(stranger, kMacB, now, &ask);
    ASSERT_TRUE(ask) << i;
    refused += table.take_answer(stranger, kMacB, now) != Verdict::kLearned;
    // The pair keeps using its entry.
    if (i % 100 == 0) {
      ASSERT_TRUE(table.find(kPeer, now, mac)) << i;
    }
  }
  EXPECT_EQ(refused, 0u) << "unused entries make room";
  EXPECT_EQ(table.size(), 16u);
  ASSERT_TRUE(table.find(kPeer, 3 * kSecond, mac));
  EXPECT_EQ(mac[5], 0x0A);
  EXPECT_EQ(table.address_of(kMacA, 3 * kSecond), kPeer);
  // A table whose every entry is in use refuses newcomers instead.
  NeighbourTable busy(2, 60 * kSecond);
  resolve(busy, kPeer, kMacA, kSecond);
  resolve(busy, kPeer + 1, kMacA, kSecond);
  ASSERT_TRUE(busy.find(kPeer, kSecond, mac));
  ASSERT_TRUE(busy.find(kPeer + 1, kSecond, mac));
  ASSERT_TRUE(busy.expect(kPeer + 2, kSecond));
  EXPECT_EQ(busy.take_answer(kPeer + 2, kMacB, kSecond), Verdict::kFull);
  EXPECT_EQ(busy.evictions(), 0u);
  // Entries unused for a lifetime make room again.
  EXPECT_EQ(busy.take_answer(kPeer + 2, kMacB, 62 * kSecond), Verdict::kNotAsked);
  ASSERT_TRUE(busy.expect(kPeer + 2, 62 * kSecond));
  EXPECT_EQ(busy.take_answer(kPeer + 2, kMacB, 62 * kSecond), Verdict::kLearned);
  EXPECT_EQ(busy.evictions(), 1u);
}

TEST(NeighbourTable, BoundedUnderAFlood) {
  // Strangers that answer what their requests make us ask back.
  NeighbourTable table(16);
  bool ask = false;
  for (uint32_t i = 0; i < 10000; ++i) {
    table.take_request(0x0A000000 + i, kMacA, kSecond + i, &ask);
    ASSERT_TRUE(ask);
    table.take_answer(0x0A000000 + i, kMacA, kSecond + i);
  }
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

TEST(NeighbourTable, StaticEntriesWinOverTheWire) {
  NeighbourTable table(8, 60 * kSecond);
  ASSERT_TRUE(table.pin(kPeer, kMacA));
  EXPECT_EQ(table.pinned(), 1u);
  uint8_t mac[6];
  bool refresh_due = true;
  ASSERT_TRUE(table.find(kPeer, 1000 * kSecond, mac, &refresh_due)) << "never lapses";
  EXPECT_EQ(mac[5], 0x0A);
  EXPECT_FALSE(refresh_due) << "never asked for";
  EXPECT_EQ(table.address_of(kMacA, 1000 * kSecond), kPeer);
  bool ask = true;
  EXPECT_EQ(table.take_request(kPeer, kMacB, kSecond, &ask), Verdict::kConflict);
  EXPECT_FALSE(ask) << "nothing to ask: the operator said";
  ASSERT_TRUE(table.expect(kPeer, kSecond));
  EXPECT_EQ(table.take_answer(kPeer, kMacB, kSecond), Verdict::kConflict);
  ASSERT_TRUE(table.find(kPeer, kSecond, mac));
  EXPECT_EQ(mac[5], 0x0A);
  // Bounded like the learned ones.
  for (uint32_t i = 1; i < 8; ++i) EXPECT_TRUE(table.pin(kPeer + i, kMacB));
  EXPECT_FALSE(table.pin(kPeer + 8, kMacB));
  EXPECT_TRUE(table.pin(kPeer, kMacB)) << "the same address again replaces it";
}

TEST(NeighbourTable, ReverseLookupNamesTheLatestHolder) {
  NeighbourTable table(8, 60 * kSecond);
  resolve(table, kPeer, kMacA, kSecond);
  resolve(table, kPeer + 1, kMacA, 2 * kSecond);  // one MAC, two addresses (a router's)
  EXPECT_EQ(table.address_of(kMacA, 2 * kSecond), kPeer + 1);
  EXPECT_FALSE(table.address_of(kMacB, 2 * kSecond));
}

// The IPv6 table (neighbour discovery) is the same code on Ipv6 keys.
TEST(NeighbourTable, Ipv6KeysFollowTheSameRules) {
  Neighbour6Table table(8);
  const Ipv6 router = *parse_ipv6("fe80::1");
  uint8_t mac[6];
  EXPECT_EQ(table.take_answer(router, kMacA, kSecond), Verdict::kNotAsked);
  ASSERT_TRUE(table.expect(router, kSecond));
  EXPECT_TRUE(table.asked_since(router, kSecond));
  EXPECT_EQ(table.take_answer(router, kMacA, kSecond), Verdict::kLearned);
  ASSERT_TRUE(table.find(router, kSecond, mac));
  EXPECT_EQ(mac[5], 0x0A);
  EXPECT_EQ(table.address_of(kMacA, kSecond), router);
  // A solicitation claiming the router from another MAC: kept.
  bool ask = false;
  EXPECT_EQ(table.take_request(router, kMacB, 2 * kSecond, &ask), Verdict::kConflict);
  EXPECT_TRUE(ask);
  ASSERT_TRUE(table.find(router, 2 * kSecond, mac));
  EXPECT_EQ(mac[5], 0x0A);
  // Strangers that answer fill the table around it, never over it.
  for (int i = 0; i < 100; ++i) {
    Ipv6 other = router;
    other.bytes[15] = static_cast<uint8_t>(i + 2);
    table.take_request(other, kMacB, 3 * kSecond + i, &ask);
    table.take_answer(other, kMacB, 3 * kSecond + i);
  }
  EXPECT_EQ(table.size(), 8u);
  EXPECT_TRUE(table.find(router, 4 * kSecond, mac)) << "in use: never evicted";
}

// The refused askers of the IPv6 table are remembered by the whole
// address: askers that differ in the prefix alone or in the interface
// identifier alone are told apart, and one asking again displaces.
TEST(NeighbourTable, Ipv6RefusedAskerAskingAgainDisplaces) {
  Neighbour6Table table(8);
  bool ask = false;
  size_t asked_back = 0;
  for (int i = 0; i < 1000; ++i) {
    Ipv6 asker = *parse_ipv6(i % 2 ? "fd00:66::" : "fe80::");
    asker.bytes[14] = static_cast<uint8_t>(i >> 8);
    asker.bytes[15] = static_cast<uint8_t>(i);
    table.take_request(asker, kMacB, kSecond, &ask);
    asked_back += ask;
  }
  EXPECT_EQ(asked_back, Neighbour6Table::kMaxAskedBack);
  EXPECT_EQ(table.displaced(), 0u) << "1000 different askers, each once";
  const Ipv6 peer = *parse_ipv6("fd00:66::4");  // asked before as fe80::4 alone
  table.take_request(peer, kMacA, kSecond, &ask);
  EXPECT_FALSE(ask);
  EXPECT_EQ(table.displaced(), 0u);
  table.take_request(peer, kMacA, kSecond + Neighbour6Table::kReaskNs + 1, &ask);
  EXPECT_TRUE(ask) << "a refused asker asking again is asked back";
  EXPECT_EQ(table.displaced(), 1u);
}

}  // namespace
}  // namespace ofi_dpdk::ip
