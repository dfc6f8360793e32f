// fi_av(3), FI_AV_TABLE, through stock libfabric on one net_ring port:
// insert, insertsvc, remove, lookup, straddr and the AV's life cycle.
// Addresses are built with lib/av/address.h, the provider's documented
// native form (16 bytes: tag 0xDF, version, MAC, queue, session).
#include <gtest/gtest.h>

#include <array>
#include <cstring>
#include <string>
#include <vector>

#include "lib/av/address.h"
#include "test/support/messaging.h"

namespace ofi_dpdk::test {
namespace {

using Native = std::array<uint8_t, av::kNativeAddressSize>;

av::Address make_address(uint8_t last_mac_byte, uint16_t queue, uint32_t session = 0) {
  av::Address address;
  const uint8_t mac[6] = {0x02, 0x00, 0x00, 0xaa, 0xbb, last_mac_byte};
  std::memcpy(address.mac, mac, 6);
  address.queue = queue;
  address.session = session;
  return address;
}

Native native(const av::Address& address) {
  Native bytes;
  av::to_native(address, bytes.data());
  return bytes;
}

// Several native addresses back to back, as fi_av_insert takes them.
std::vector<uint8_t> packed(std::initializer_list<Native> addresses) {
  std::vector<uint8_t> bytes;
  for (const Native& a : addresses) bytes.insert(bytes.end(), a.begin(), a.end());
  return bytes;
}

class AvTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_EQ(domain_.open(), 0) << "no dpdk provider on the net_ring port"; }
  void TearDown() override { domain_.close(); }

  // The address at fi_addr, or an empty vector if lookup fails.
  std::vector<uint8_t> lookup(fi_addr_t fi_addr) {
    std::vector<uint8_t> bytes(64);
    size_t length = bytes.size();
    if (fi_av_lookup(av(), fi_addr, bytes.data(), &length) != 0) return {};
    bytes.resize(length);
    return bytes;
  }

  fid_av* av() { return domain_.av; }
  TestDomain domain_;
};

std::vector<uint8_t> as_vector(const Native& n) {
  return {n.begin(), n.end()};
}

TEST_F(AvTest, InsertReturnsTheCountAndAssignsIndicesInOrder) {
  const Native a = native(make_address(1, 1)), b = native(make_address(2, 2)),
               c = native(make_address(3, 3)), d = native(make_address(4, 4));
  const std::vector<uint8_t> three = packed({a, b, c});
  fi_addr_t fi_addrs[3] = {99, 99, 99};
  EXPECT_EQ(fi_av_insert(av(), three.data(), 3, fi_addrs, 0, nullptr), 3);
  EXPECT_EQ(fi_addrs[0], 0u);
  EXPECT_EQ(fi_addrs[1], 1u);
  EXPECT_EQ(fi_addrs[2], 2u);
  // Indices carry on across calls.
  fi_addr_t next = 99;
  EXPECT_EQ(fi_av_insert(av(), d.data(), 1, &next, 0, nullptr), 1);
  EXPECT_EQ(next, 3u);
  EXPECT_EQ(lookup(0), as_vector(a));
  EXPECT_EQ(lookup(2), as_vector(c));
  EXPECT_EQ(lookup(3), as_vector(d));
  // Zero addresses: nothing inserted.
  EXPECT_EQ(fi_av_insert(av(), three.data(), 0, fi_addrs, 0, nullptr), 0);
}

TEST_F(AvTest, NullFiAddrIsAccepted) {
  const Native a = native(make_address(1, 7)), b = native(make_address(2, 8));
  const std::vector<uint8_t> two = packed({a, b});
  EXPECT_EQ(fi_av_insert(av(), two.data(), 2, nullptr, 0, nullptr), 2);
  EXPECT_EQ(lookup(0), as_vector(a));
  EXPECT_EQ(lookup(1), as_vector(b));
}

TEST_F(AvTest, InvalidAddressGetsFI_ADDR_NOTAVAILAndIsNotCounted) {
  const Native good1 = native(make_address(1, 1)), good2 = native(make_address(2, 2));
  Native bad = native(make_address(9, 9));
  bad[0] = 0x00;  // not the provider's format tag
  const std::vector<uint8_t> three = packed({good1, bad, good2});
  fi_addr_t fi_addrs[3] = {99, 99, 99};
  EXPECT_EQ(fi_av_insert(av(), three.data(), 3, fi_addrs, 0, nullptr), 2);
  EXPECT_EQ(fi_addrs[0], 0u);
  EXPECT_EQ(fi_addrs[1], FI_ADDR_NOTAVAIL);
  EXPECT_EQ(fi_addrs[2], 1u);
  EXPECT_EQ(lookup(1), as_vector(good2));
  EXPECT_TRUE(lookup(2).empty()) << "the bad address took a slot";
}

TEST_F(AvTest, LookupReturnsTheInsertedBytesAndTruncatesIntoAShortBuffer) {
  const Native a = native(make_address(5, 300, 0xdeadbeef));
  fi_addr_t fi_addr = 99;
  ASSERT_EQ(fi_av_insert(av(), a.data(), 1, &fi_addr, 0, nullptr), 1);

  uint8_t full[32];
  size_t length = sizeof(full);
  ASSERT_EQ(fi_av_lookup(av(), fi_addr, full, &length), 0);
  EXPECT_EQ(length, av::kNativeAddressSize);
  EXPECT_EQ(std::memcmp(full, a.data(), a.size()), 0);

  uint8_t short_buffer[8];
  std::memset(short_buffer, 0x77, sizeof(short_buffer));
  length = 4;
  EXPECT_EQ(fi_av_lookup(av(), fi_addr, short_buffer, &length), -FI_ETOOSMALL);
  EXPECT_EQ(length, av::kNativeAddressSize) << "addrlen: the size needed";
  EXPECT_EQ(std::memcmp(short_buffer, a.data(), 4), 0) << "the first 4 bytes, truncated";
  for (size_t i = 4; i < sizeof(short_buffer); ++i)
    EXPECT_EQ(short_buffer[i], 0x77) << "wrote past addrlen at " << i;
}

TEST_F(AvTest, StraddrGivesTheStringFormAndTheSizeItNeeds) {
  const av::Address address = make_address(0x42, 17, 0x5f3a9c01);
  const Native a = native(address);
  const std::string expected = av::to_string(address);
  ASSERT_EQ(expected.rfind("fi_dpdk://", 0), 0u);

  char text[128];
  size_t length = sizeof(text);
  const char* ret = fi_av_straddr(av(), a.data(), text, &length);
  ASSERT_EQ(ret, text);
  EXPECT_EQ(std::string(text), expected);
  EXPECT_EQ(length, expected.size() + 1);

  char short_text[12];
  std::memset(short_text, '#', sizeof(short_text));
  length = 8;
  ret = fi_av_straddr(av(), a.data(), short_text, &length);
  EXPECT_EQ(ret, short_text);
  EXPECT_EQ(length, expected.size() + 1) << "len: the size needed";
  EXPECT_EQ(std::string(short_text, 7), expected.substr(0, 7)) << "truncated";
  EXPECT_EQ(short_text[8], '#') << "wrote past len";
}

TEST_F(AvTest, InsertsvcTakesAMacAndAQueue) {
  fi_addr_t fi_addr = 99;
  ASSERT_EQ(fi_av_insertsvc(av(), "02:00:00:aa:bb:07", "5", &fi_addr, 0, nullptr), 1);
  EXPECT_EQ(fi_addr, 0u);
  const std::vector<uint8_t> stored = lookup(fi_addr);
  const auto parsed = av::from_native(stored.data(), stored.size());
  ASSERT_TRUE(parsed);
  EXPECT_EQ(*parsed, make_address(7, 5));
  // An fi_dpdk:// string as node, with service NULL, as fi_av(3) allows.
  const av::Address full = make_address(8, 12, 0x01020304);
  ASSERT_EQ(fi_av_insertsvc(av(), av::to_string(full).c_str(), nullptr, &fi_addr, 0, nullptr), 1);
  EXPECT_EQ(fi_addr, 1u);
  EXPECT_EQ(lookup(fi_addr), as_vector(native(full)));
  // Not a MAC: refused.
  EXPECT_LT(fi_av_insertsvc(av(), "not-a-mac", "5", &fi_addr, 0, nullptr), 1);
}

TEST_F(AvTest, RemovedAddressCannotBeLookedUp) {
  const Native a = native(make_address(1, 1)), b = native(make_address(2, 2));
  const std::vector<uint8_t> two = packed({a, b});
  fi_addr_t fi_addrs[2];
  ASSERT_EQ(fi_av_insert(av(), two.data(), 2, fi_addrs, 0, nullptr), 2);
  ASSERT_EQ(fi_av_remove(av(), &fi_addrs[0], 1, 0), 0);
  uint8_t buffer[32];
  size_t length = sizeof(buffer);
  EXPECT_LT(fi_av_lookup(av(), fi_addrs[0], buffer, &length), 0);
  EXPECT_EQ(lookup(fi_addrs[1]), as_vector(b)) << "the other address is untouched";
  // Removing it again, or an index never used, is an error.
  EXPECT_LT(fi_av_remove(av(), &fi_addrs[0], 1, 0), 0);
  fi_addr_t never = 40;
  EXPECT_LT(fi_av_remove(av(), &never, 1, 0), 0);
}

TEST_F(AvTest, ReinsertionAfterRemoveReusesTheLowestFreeIndex) {
  std::vector<Native> natives;
  for (uint8_t i = 0; i < 4; ++i) natives.push_back(native(make_address(i, i)));
  const std::vector<uint8_t> four = packed({natives[0], natives[1], natives[2], natives[3]});
  fi_addr_t fi_addrs[4];
  ASSERT_EQ(fi_av_insert(av(), four.data(), 4, fi_addrs, 0, nullptr), 4);
  fi_addr_t remove[2] = {2, 1};
  ASSERT_EQ(fi_av_remove(av(), remove, 2, 0), 0);
  const Native x = native(make_address(0x10, 1)), y = native(make_address(0x11, 2)),
               z = native(make_address(0x12, 3));
  fi_addr_t fi_addr = 99;
  ASSERT_EQ(fi_av_insert(av(), x.data(), 1, &fi_addr, 0, nullptr), 1);
  EXPECT_EQ(fi_addr, 1u);
  ASSERT_EQ(fi_av_insert(av(), y.data(), 1, &fi_addr, 0, nullptr), 1);
  EXPECT_EQ(fi_addr, 2u);
  ASSERT_EQ(fi_av_insert(av(), z.data(), 1, &fi_addr, 0, nullptr), 1);
  EXPECT_EQ(fi_addr, 4u);
  EXPECT_EQ(lookup(1), as_vector(x));
  EXPECT_EQ(lookup(2), as_vector(y));
  EXPECT_EQ(lookup(3), as_vector(natives[3]));
  // The same address removed and inserted again (fi_av(3) requires this).
  fi_addr_t first = 0;
  ASSERT_EQ(fi_av_remove(av(), &first, 1, 0), 0);
  ASSERT_EQ(fi_av_insert(av(), natives[0].data(), 1, &fi_addr, 0, nullptr), 1);
  EXPECT_EQ(fi_addr, 0u);
  EXPECT_EQ(lookup(0), as_vector(natives[0]));
}

TEST_F(AvTest, ReinsertedPeerIsReachableAgain) {
  TestEndpoint a, b;
  ASSERT_EQ(a.open(domain_.domain, av(), domain_.info), 0);
  ASSERT_EQ(b.open(domain_.domain, av(), domain_.info), 0);
  expect_message_delivered(a, b.addr, b, "before remove");
  ASSERT_EQ(fi_av_remove(av(), &b.addr, 1, 0), 0);
  fi_addr_t again = FI_ADDR_NOTAVAIL;
  ASSERT_EQ(fi_av_insert(av(), b.name, 1, &again, 0, nullptr), 1);
  EXPECT_EQ(again, b.addr) << "the lowest free index";
  expect_message_delivered(a, again, b, "after reinsert");
  a.close();
  b.close();
}

TEST_F(AvTest, ClosingAnAvBoundToAnEndpointIsEBUSY) {
  fi_av_attr attr{};
  attr.type = FI_AV_TABLE;
  fid_av* bound = nullptr;
  ASSERT_EQ(fi_av_open(domain_.domain, &attr, &bound, nullptr), 0);
  fid_ep* ep = nullptr;
  ASSERT_EQ(fi_endpoint(domain_.domain, domain_.info, &ep, nullptr), 0);
  ASSERT_EQ(fi_ep_bind(ep, &bound->fid, 0), 0);
  EXPECT_EQ(fi_close(&bound->fid), -FI_EBUSY);
  // Still usable after the refused close.
  const Native a = native(make_address(1, 1));
  EXPECT_EQ(fi_av_insert(bound, a.data(), 1, nullptr, 0, nullptr), 1);
  EXPECT_EQ(fi_close(&ep->fid), 0);
  EXPECT_EQ(fi_close(&bound->fid), 0);
}

}  // namespace
}  // namespace ofi_dpdk::test
