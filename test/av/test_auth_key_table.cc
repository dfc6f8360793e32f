// lib/av/auth_key_table.h and the authorization-key side of av_table.h,
// without libfabric: handles in their own range, one handle per key, the
// kMaxAuthKeys limit, removal refused while endpoints use a key, user ids
// of handles; an address's network key and fi_av_set_user_id on the table.
#include "lib/av/auth_key_table.h"

#include <gtest/gtest.h>

#include <cerrno>
#include <cstring>

#include "lib/av/av_table.h"

namespace ofi_dpdk::av {
namespace {

Address make(uint32_t n, uint16_t queue = 0) {
  Address a;
  const uint8_t mac[6] = {0x02,
                          0x00,
                          static_cast<uint8_t>(n >> 24),
                          static_cast<uint8_t>(n >> 16),
                          static_cast<uint8_t>(n >> 8),
                          static_cast<uint8_t>(n)};
  std::memcpy(a.mac, mac, 6);
  a.queue = queue;
  return a;
}

TEST(AuthKeyTable, HandlesStartAtTheBaseAndAreNotAddressIndices) {
  AuthKeyTable t;
  EXPECT_EQ(t.insert(0x1111), static_cast<int64_t>(kAuthKeyHandleBase));
  EXPECT_EQ(t.insert(0x2222), static_cast<int64_t>(kAuthKeyHandleBase + 1));
  EXPECT_TRUE(t.valid(kAuthKeyHandleBase));
  EXPECT_FALSE(t.valid(0)) << "an address index is no handle";
  EXPECT_FALSE(t.valid(kAuthKeyHandleBase + 2)) << "in range but unused";
  EXPECT_EQ(t.key(kAuthKeyHandleBase + 1), 0x2222u);
  EXPECT_EQ(t.key(1), kNoAuthKey);
  EXPECT_EQ(t.count(), 2u);
}

TEST(AuthKeyTable, AKeyAlreadyInKeepsItsHandle) {
  AuthKeyTable t;
  const int64_t first = t.insert(7);
  ASSERT_GE(first, 0);
  EXPECT_EQ(t.insert(8), first + 1);
  EXPECT_EQ(t.insert(7), first);
  EXPECT_EQ(t.count(), 2u);
  EXPECT_EQ(t.handle_of(7), static_cast<uint64_t>(first));
  EXPECT_EQ(t.handle_of(9), AuthKeyTable::kNone);
  EXPECT_EQ(t.handle_of(kNoAuthKey), AuthKeyTable::kNone);
}

TEST(AuthKeyTable, KeyZeroIsRefused) {
  AuthKeyTable t;
  EXPECT_EQ(t.insert(kNoAuthKey), -EINVAL);
  EXPECT_EQ(t.count(), 0u);
}

TEST(AuthKeyTable, FullAtMaxKeysThenRemovedSlotsAreReusedLowestFirst) {
  AuthKeyTable t;
  for (uint32_t i = 0; i < kMaxAuthKeys; ++i)
    ASSERT_EQ(t.insert(100 + i), static_cast<int64_t>(kAuthKeyHandleBase + i));
  EXPECT_EQ(t.insert(999), -ENOSPC);
  EXPECT_EQ(t.insert(105), static_cast<int64_t>(kAuthKeyHandleBase + 5))
      << "already in: no space needed";
  EXPECT_EQ(t.remove(kAuthKeyHandleBase + 9), 0);
  EXPECT_EQ(t.remove(kAuthKeyHandleBase + 3), 0);
  EXPECT_EQ(t.insert(999), static_cast<int64_t>(kAuthKeyHandleBase + 3));
  EXPECT_EQ(t.insert(998), static_cast<int64_t>(kAuthKeyHandleBase + 9));
  EXPECT_EQ(t.insert(997), -ENOSPC);
}

TEST(AuthKeyTable, RemoveIsRefusedWhileUsedAndForNonHandles) {
  AuthKeyTable t;
  const uint64_t h = static_cast<uint64_t>(t.insert(42));
  t.use(h, +1);
  t.use(h, +1);
  EXPECT_EQ(t.users(h), 2u);
  EXPECT_EQ(t.remove(h), -EBUSY);
  t.use(h, -1);
  EXPECT_EQ(t.remove(h), -EBUSY);
  t.use(h, -1);
  t.use(h, -1);  // never below zero
  EXPECT_EQ(t.users(h), 0u);
  EXPECT_EQ(t.remove(h), 0);
  EXPECT_FALSE(t.valid(h));
  EXPECT_EQ(t.remove(h), -ENOENT);
  EXPECT_EQ(t.remove(0), -ENOENT);
  t.use(h, +1);  // ignored: no key there
  EXPECT_EQ(t.users(h), 0u);
}

TEST(AuthKeyTable, UserIdsDefaultToNoneAndResetWithTheSlot) {
  AuthKeyTable t;
  const uint64_t h = static_cast<uint64_t>(t.insert(5));
  EXPECT_EQ(t.user_id(h), AuthKeyTable::kNone);
  EXPECT_TRUE(t.set_user_id(h, 1234));
  EXPECT_EQ(t.user_id(h), 1234u);
  EXPECT_FALSE(t.set_user_id(h + 1, 1)) << "no key at that handle";
  ASSERT_EQ(t.remove(h), 0);
  EXPECT_EQ(t.insert(6), static_cast<int64_t>(h));
  EXPECT_EQ(t.user_id(h), AuthKeyTable::kNone) << "a new key starts without an id";
}

TEST(AuthKeyTable, EntriesListsHandleAndKeyInHandleOrder) {
  AuthKeyTable t;
  t.insert(30);
  t.insert(10);
  t.insert(20);
  t.remove(kAuthKeyHandleBase + 1);
  const auto entries = t.entries();
  ASSERT_EQ(entries.size(), 2u);
  EXPECT_EQ(entries[0], std::make_pair(kAuthKeyHandleBase, uint32_t{30}));
  EXPECT_EQ(entries[1], std::make_pair(kAuthKeyHandleBase + 2, uint32_t{20}));
}

TEST(AvTableNetworkKey, AnAddressKeepsTheKeyItWasInsertedWith) {
  AddressTable t;
  EXPECT_EQ(t.insert(make(1)), 0);
  EXPECT_EQ(t.insert(make(2), std::nullopt, 0xabcd), 1);
  EXPECT_EQ(t.insert(make(3)), 2);
  EXPECT_EQ(t.network_key(0), 0u) << "inserted before any key: none";
  EXPECT_EQ(t.network_key(1), 0xabcdu);
  EXPECT_EQ(t.network_key(2), 0u);
  EXPECT_EQ(t.network_key(7), 0u) << "unused index";
  ASSERT_TRUE(t.remove(1));
  EXPECT_EQ(t.network_key(1), 0u);
  EXPECT_EQ(t.insert(make(4)), 1) << "reused index";
  EXPECT_EQ(t.network_key(1), 0u) << "the old key does not stick to the index";
  EXPECT_EQ(t.insert_at(9, make(5), std::nullopt, 77), 9);
  EXPECT_EQ(t.network_key(9), 77u);
  EXPECT_EQ(t.insert_at(9, make(6)), 9);
  EXPECT_EQ(t.network_key(9), 0u) << "replaced without a key";
}

TEST(AvTableUserId, SetUserIdOnAnInsertedIndexOnly) {
  AddressTable t;
  ASSERT_EQ(t.insert(make(1, 3)), 0);
  EXPECT_EQ(t.source_id(0), 0u);
  EXPECT_TRUE(t.set_user_id(0, 555));
  EXPECT_EQ(t.source_id(0), 555u);
  EXPECT_TRUE(t.set_user_id(0, 556)) << "replaces";
  EXPECT_EQ(t.source_id(0), 556u);
  EXPECT_FALSE(t.set_user_id(1, 1));
  ASSERT_TRUE(t.remove(0));
  EXPECT_FALSE(t.set_user_id(0, 1));
  ASSERT_EQ(t.insert(make(2, 3)), 0);
  EXPECT_EQ(t.source_id(0), 0u) << "a new address at the index has no id";
}

}  // namespace
}  // namespace ofi_dpdk::av
