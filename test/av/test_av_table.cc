// lib/av/av_table.h: the address vector's table without libfabric: lowest
// free index, reuse after remove, the reverse index (duplicates, removal,
// growth), user ids, the index limit; and the insertsvc/insertsym parsers
// of address.h.
#include "lib/av/av_table.h"

#include <gtest/gtest.h>

#include <cerrno>
#include <cstring>
#include <random>
#include <set>
#include <unordered_map>
#include <vector>

#include "lib/proto/transport.h"

namespace ofi_dpdk::av {
namespace {

Address make(uint32_t n, uint16_t queue = 0, uint32_t session = 0) {
  Address a;
  const uint8_t mac[6] = {0x02,
                          0x00,
                          static_cast<uint8_t>(n >> 24),
                          static_cast<uint8_t>(n >> 16),
                          static_cast<uint8_t>(n >> 8),
                          static_cast<uint8_t>(n)};
  std::memcpy(a.mac, mac, 6);
  a.queue = queue;
  a.session = session;
  return a;
}

TEST(AvTable, EndpointKeyIsThePeerKeyOfTheTransport) {
  const Address a = make(0x0a0b0c0d, 0x1234);
  EXPECT_EQ(endpoint_key(a), proto::peer_key(a.mac, a.queue));
}

TEST(AvTable, InsertsAtSequentialIndicesAndFindsThem) {
  AddressTable t;
  for (uint32_t i = 0; i < 100; ++i) EXPECT_EQ(t.insert(make(i, 1)), static_cast<int64_t>(i));
  EXPECT_EQ(t.count(), 100u);
  for (uint32_t i = 0; i < 100; ++i) {
    const Entry* e = t.find(i);
    ASSERT_NE(e, nullptr);
    EXPECT_EQ(e->address, make(i, 1));
    EXPECT_EQ(t.find_endpoint(endpoint_key(make(i, 1))), i);
  }
  EXPECT_EQ(t.find(100), nullptr);
  EXPECT_EQ(t.find(~uint64_t{0}), nullptr);
  EXPECT_EQ(t.find_endpoint(endpoint_key(make(5, 2))), AddressTable::kNone);
}

TEST(AvTable, RemovedIndicesAreReusedLowestFirst) {
  AddressTable t;
  for (uint32_t i = 0; i < 10; ++i) t.insert(make(i));
  EXPECT_TRUE(t.remove(7));
  EXPECT_TRUE(t.remove(3));
  EXPECT_FALSE(t.remove(3)) << "removed twice";
  EXPECT_FALSE(t.remove(10)) << "never used";
  EXPECT_EQ(t.find(3), nullptr);
  EXPECT_EQ(t.find_endpoint(endpoint_key(make(3))), AddressTable::kNone);
  EXPECT_EQ(t.insert(make(100)), 3);
  EXPECT_EQ(t.insert(make(101)), 7);
  EXPECT_EQ(t.insert(make(102)), 10);
  EXPECT_EQ(t.find_endpoint(endpoint_key(make(101))), 7u);
}

TEST(AvTable, DuplicatesGetTheirOwnIndexAndTheLowestAnswers) {
  AddressTable t;
  t.insert(make(1));
  EXPECT_EQ(t.insert(make(9, 4)), 1);
  EXPECT_EQ(t.insert(make(9, 4, 0x77)), 2) << "same endpoint, other session";
  EXPECT_EQ(t.insert(make(9, 4)), 3);
  const uint64_t key = endpoint_key(make(9, 4));
  EXPECT_EQ(t.find_endpoint(key), 1u);
  t.remove(1);
  EXPECT_EQ(t.find_endpoint(key), 2u);
  t.remove(3);
  EXPECT_EQ(t.find_endpoint(key), 2u);
  t.remove(2);
  EXPECT_EQ(t.find_endpoint(key), AddressTable::kNone);
}

// An entry named by IPv4 address before its MAC was known: the reverse
// index finds it by its MAC once set_resolved gives it, and no longer by
// the zero MAC it went in with.
TEST(AvTable, AnUnresolvedEntryIsFoundByItsMacOnceResolved) {
  AddressTable table;
  Address named;
  named.queue = 3;
  named.ipv4 = 0x0A000002;
  const int64_t index = table.insert(named);
  ASSERT_GE(index, 0);
  EXPECT_FALSE(table.find(index)->unresolved);
  ASSERT_TRUE(table.mark_unresolved(index));
  EXPECT_TRUE(table.find(index)->unresolved);
  const Address resolved = make(7, 3);
  ASSERT_TRUE(table.set_resolved(index, resolved.mac));
  EXPECT_FALSE(table.find(index)->unresolved);
  EXPECT_EQ(table.find(index)->address.ipv4, 0x0A000002u);
  EXPECT_EQ(table.find_endpoint(endpoint_key(resolved)), static_cast<uint64_t>(index));
  EXPECT_EQ(table.find_endpoint(endpoint_key(named)), AddressTable::kNone);
  EXPECT_FALSE(table.mark_unresolved(99));
  EXPECT_FALSE(table.set_resolved(99, resolved.mac));
  // A reused index starts resolved.
  ASSERT_TRUE(table.mark_unresolved(index));
  ASSERT_TRUE(table.remove(index));
  ASSERT_EQ(table.insert(make(8)), index);
  EXPECT_FALSE(table.find(index)->unresolved);
}

TEST(AvTable, UserIdsAnswerForTheirEntriesOnly) {
  AddressTable t;
  t.insert(make(1));
  EXPECT_EQ(t.insert(make(2), 0xabcdef), 1);
  t.insert(make(3));
  EXPECT_EQ(t.source_id(0), 0u);
  EXPECT_EQ(t.source_id(1), 0xabcdefu);
  EXPECT_EQ(t.source_id(2), 2u);
  EXPECT_EQ(t.source_id(3), AddressTable::kNone);
  t.remove(1);
  EXPECT_EQ(t.insert(make(4)), 1);
  EXPECT_EQ(t.source_id(1), 1u) << "a reused index forgets the old user id";
}

TEST(AvTable, LimitGivesENOSPCAndLeavesTheTableAlone) {
  AddressTable t;
  t.set_limit(2);
  EXPECT_EQ(t.insert(make(1)), 0);
  EXPECT_EQ(t.insert(make(2)), 1);
  EXPECT_EQ(t.insert(make(3)), -ENOSPC);
  EXPECT_EQ(t.count(), 2u);
  t.remove(0);
  EXPECT_EQ(t.insert(make(3)), 0) << "a freed index is within the limit";
}

// Random inserts and removes against a simple model, across many growths
// of the reverse index and backward-shift deletions.
TEST(AvTable, AgreesWithAModelUnderChurn) {
  AddressTable t;
  t.reserve(16);
  std::vector<std::optional<Address>> model;
  std::set<size_t> free;
  std::mt19937 rng(7);
  for (int step = 0; step < 200000; ++step) {
    const bool insert = model.empty() || rng() % 3 != 0;
    if (insert) {
      // Few distinct endpoints, so duplicates are common.
      const Address a = make(rng() % 5000, static_cast<uint16_t>(rng() % 3));
      const int64_t index = t.insert(a);
      ASSERT_GE(index, 0);
      const size_t expected = free.empty() ? model.size() : *free.begin();
      if (!free.empty()) free.erase(free.begin());
      ASSERT_EQ(static_cast<size_t>(index), expected) << "not the lowest free index";
      if (expected == model.size()) model.emplace_back();
      model[expected] = a;
    } else {
      const size_t index = rng() % model.size();
      ASSERT_EQ(t.remove(index), model[index].has_value());
      if (model[index]) free.insert(index);
      model[index].reset();
    }
    if (step % 997 == 0) {
      std::unordered_map<uint64_t, uint64_t> lowest;
      for (size_t i = 0; i < model.size(); ++i)
        if (model[i]) lowest.emplace(endpoint_key(*model[i]), i);
      for (uint32_t n = 0; n < 5000; n += 7)
        for (uint16_t q = 0; q < 3; ++q) {
          const uint64_t key = endpoint_key(make(n, q));
          auto it = lowest.find(key);
          ASSERT_EQ(t.find_endpoint(key), it == lowest.end() ? AddressTable::kNone : it->second);
        }
    }
  }
  EXPECT_GT(t.memory_bytes(), 0u);
}

TEST(AvAddress, QueueIsDecimalBelow65535) {
  EXPECT_EQ(parse_queue("0"), 0);
  EXPECT_EQ(parse_queue("65534"), 65534);
  EXPECT_FALSE(parse_queue("65535"));
  EXPECT_FALSE(parse_queue("-1"));
  EXPECT_FALSE(parse_queue("0x10"));
  EXPECT_FALSE(parse_queue(""));
  EXPECT_FALSE(parse_queue(" 5"));
}

TEST(AvAddress, NodeAndService) {
  auto a = from_node_service("02:00:00:00:00:01", "3");
  ASSERT_TRUE(a);
  EXPECT_EQ(*a, make(1, 3));
  EXPECT_FALSE(from_node_service("02:00:00:00:00:01", nullptr)) << "the queue is needed";
  EXPECT_FALSE(from_node_service("02:00:00:00:00:01", "x"));
  EXPECT_FALSE(from_node_service("host1", "3"));
  EXPECT_FALSE(from_node_service(nullptr, "3"));
  a = from_node_service("fi_dpdk://02:00:00:00:00:02/9/0000abcd", nullptr);
  ASSERT_TRUE(a);
  EXPECT_EQ(*a, make(2, 9, 0xabcd));
  EXPECT_FALSE(from_node_service("fi_dpdk://02:00:00:00:00:02/9", "9"))
      << "fi_av(3): with an FI_ADDR_STR node, service must be NULL";
  EXPECT_FALSE(from_node_service("fi_dpdk://02:00:00:00:00:02/65535", nullptr));
}

TEST(AvAddress, SymmetricRangeCountsTheMacAsA48BitNumber) {
  Address first;
  const uint8_t mac[6] = {0x02, 0x00, 0x00, 0x00, 0x00, 0xfe};
  std::memcpy(first.mac, mac, 6);
  first.queue = 4;
  ASSERT_TRUE(symmetric_range_fits(first, 3, 2));
  const uint8_t expected_macs[3][6] = {
      {0x02, 0, 0, 0, 0, 0xfe}, {0x02, 0, 0, 0, 0, 0xff}, {0x02, 0, 0, 0, 1, 0x00}};
  for (size_t i = 0; i < 6; ++i) {
    const Address a = symmetric_address(first, 2, i);
    EXPECT_EQ(std::memcmp(a.mac, expected_macs[i / 2], 6), 0) << i;
    EXPECT_EQ(a.queue, 4 + i % 2) << i;
    EXPECT_EQ(a.session, 0u);
  }
  EXPECT_FALSE(symmetric_range_fits(first, 0, 1));
  EXPECT_FALSE(symmetric_range_fits(first, 1, 0));
  first.queue = kMaxQueue;
  EXPECT_TRUE(symmetric_range_fits(first, 1, 1));
  EXPECT_FALSE(symmetric_range_fits(first, 1, 2)) << "queue past 65534";
  std::memset(first.mac, 0xff, 6);
  first.queue = 0;
  EXPECT_TRUE(symmetric_range_fits(first, 1, 1));
  EXPECT_FALSE(symmetric_range_fits(first, 2, 1)) << "MAC past ff:ff:ff:ff:ff:ff";
}

// insert_at: the mirror of a shared AV takes indices chosen elsewhere; it
// replaces what was there, and insert() still finds the lowest unused index
// around them.
TEST(AvTable, InsertAtPlacesAndReplacesAndInsertSkipsAround) {
  AddressTable table;
  EXPECT_EQ(table.insert_at(3, make(3), 0x33), 3);
  EXPECT_EQ(table.count(), 1u);
  EXPECT_EQ(table.find(0), nullptr);
  EXPECT_EQ(table.source_id(3), 0x33u);
  EXPECT_EQ(table.find_endpoint(endpoint_key(make(3))), 3u);
  EXPECT_EQ(table.insert_at(3, make(4)), 3) << "replaces";
  EXPECT_EQ(table.count(), 1u);
  EXPECT_EQ(table.source_id(3), 3u) << "the old user id is gone";
  EXPECT_EQ(table.find_endpoint(endpoint_key(make(3))), AddressTable::kNone);
  EXPECT_EQ(table.find_endpoint(endpoint_key(make(4))), 3u);
  EXPECT_EQ(table.insert_at(1, make(1)), 1) << "an index waiting for reuse";
  EXPECT_EQ(table.insert(make(10)), 0);
  EXPECT_EQ(table.insert(make(12)), 2) << "1 was taken by insert_at";
  EXPECT_EQ(table.insert(make(14)), 4);
  table.set_limit(5);
  EXPECT_EQ(table.insert_at(5, make(5)), -ENOSPC);
}

}  // namespace
}  // namespace ofi_dpdk::av
