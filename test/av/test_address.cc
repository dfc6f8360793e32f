// Addresses: the native 16-byte form and the fi_dpdk:// string form agree,
// and malformed input is refused.
#include <gtest/gtest.h>

#include "lib/av/address.h"

namespace ofi_dpdk::av {
namespace {

Address sample() {
  Address a;
  const uint8_t mac[6] = {0x02, 0x00, 0x5e, 0x10, 0xab, 0xcd};
  std::copy(mac, mac + 6, a.mac);
  a.queue = 513;
  a.session = 0x5f3a9c01;
  return a;
}

TEST(Address, NativeRoundTrip) {
  uint8_t bytes[kNativeAddressSize];
  to_native(sample(), bytes);
  EXPECT_EQ(bytes[0], kAddressFormatTag);
  EXPECT_EQ(bytes[8], 0x02);  // queue 513, big-endian
  EXPECT_EQ(bytes[9], 0x01);
  auto back = from_native(bytes, sizeof(bytes));
  ASSERT_TRUE(back);
  EXPECT_EQ(*back, sample());
}

TEST(Address, NativeRefusesShortOrForeignBytes) {
  uint8_t bytes[kNativeAddressSize];
  to_native(sample(), bytes);
  EXPECT_FALSE(from_native(bytes, sizeof(bytes) - 1));
  EXPECT_FALSE(from_native(nullptr, sizeof(bytes)));
  bytes[0] = 0;
  EXPECT_FALSE(from_native(bytes, sizeof(bytes)));
  to_native(sample(), bytes);
  bytes[1] = 2;
  EXPECT_FALSE(from_native(bytes, sizeof(bytes)));
}

TEST(Address, StringForms) {
  EXPECT_EQ(to_string(sample()), "fi_dpdk://02:00:5e:10:ab:cd/513/5f3a9c01");
  Address no_session = sample();
  no_session.session = 0;
  EXPECT_EQ(to_string(no_session), "fi_dpdk://02:00:5e:10:ab:cd/513");
  EXPECT_LE(to_string(sample()).size() + 1, kStringAddressSize);
}

TEST(Address, StringRoundTrip) {
  auto back = from_string(to_string(sample()));
  ASSERT_TRUE(back);
  EXPECT_EQ(*back, sample());
  auto typed = from_string("fi_dpdk://02:00:00:00:00:01/3");
  ASSERT_TRUE(typed);
  EXPECT_EQ(typed->queue, 3);
  EXPECT_EQ(typed->session, 0u);
  EXPECT_EQ(typed->mac[5], 1);
  EXPECT_TRUE(from_string("fi_dpdk://02-00-00-00-00-01/3"));  // dashes too
}

TEST(Address, StringRefusesMalformedInput) {
  for (const char* bad :
       {"", "fi_dpdk://", "fi_dpdk://02:00:00:00:00:01", "fi_dpdk://02:00:00:00:00:01/",
        "fi_dpdk://02:00:00:00:00:01/x", "fi_dpdk://02:00:00:00:00:01/70000",
        "fi_dpdk://02:00:00:00:00/3", "fi_dpdk://02:00:00:00:00:0g/3",
        "fi_dpdk://02:00:00:00:00:01/3/", "fi_dpdk://02:00:00:00:00:01/3/123456789",
        "fi_dpdk://02:00:00:00:00:01/3/zz", "tcp://1.2.3.4:5", "fi_dpdk://02:00:00:00:00:01/-1"}) {
    EXPECT_FALSE(from_string(bad)) << bad;
  }
}

TEST(Address, SameEndpointIgnoresSession) {
  Address a = sample();
  Address b = sample();
  b.session = 7;
  EXPECT_TRUE(a.same_endpoint(b));
  b.queue = 1;
  EXPECT_FALSE(a.same_endpoint(b));
}

}  // namespace
}  // namespace ofi_dpdk::av
