#include "lib/ip/ipv6.h"

#include <gtest/gtest.h>

namespace ofi_dpdk::ip {
namespace {

Ipv6 v6(const char* text) {
  const auto address = parse_ipv6(text);
  EXPECT_TRUE(address) << text;
  return address.value_or(Ipv6{});
}

TEST(Ipv6, ParsesEveryTextForm) {
  const Ipv6 full = v6("2001:0db8:0000:0000:0000:ff00:0042:8329");
  const uint8_t want[16] = {0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0xff, 0, 0, 0x42, 0x83, 0x29};
  EXPECT_TRUE(std::equal(full.bytes.begin(), full.bytes.end(), want));
  EXPECT_EQ(v6("2001:db8::ff00:42:8329"), full);
  EXPECT_EQ(v6("2001:DB8::FF00:42:8329"), full);
  EXPECT_TRUE(v6("::").unspecified());
  EXPECT_TRUE(v6("::1").loopback());
  EXPECT_EQ(v6("1::").bytes[1], 1);
  EXPECT_EQ(v6("1::").bytes[15], 0);
  EXPECT_EQ(v6("::ffff:10.0.0.1"), v6("::ffff:a00:1"));
  EXPECT_TRUE(v6("::ffff:10.0.0.1").v4_mapped());
  EXPECT_EQ(v6("1:2:3:4:5:6:1.2.3.4"), v6("1:2:3:4:5:6:102:304"));
  EXPECT_EQ(v6("1:2:3:4:5:6:7::"), v6("1:2:3:4:5:6:7:0")) << ":: may stand for one group";
}

TEST(Ipv6, RefusesAnythingElse) {
  for (const char* bad : {"",
                          ":",
                          ":::",
                          "1:2:3:4:5:6:7",
                          "1:2:3:4:5:6:7:8:9",
                          "1::2::3",
                          "12345::",
                          "g::1",
                          ":1:2:3:4:5:6:7",
                          "1:2:3:4:5:6:7:",
                          "1.2.3.4::",
                          "::1.2.3",
                          "::1.2.3.256",
                          "fe80::1%eth0",
                          "[::1]",
                          "::+1",
                          " ::1",
                          "10.0.0.1",
                          "1:2:3:4:5:6:7:8::",
                          "::1:2:3:4:5:6:7:8",
                          "1:2:3:4:5:6:7:1.2.3.4"})
    EXPECT_FALSE(parse_ipv6(bad)) << bad;
  EXPECT_FALSE(parse_ipv6(std::string_view("::1\0:2", 6)));  // a NUL inside
}

TEST(Ipv6, FormatsAsRfc5952Says) {
  EXPECT_EQ(format_ipv6(v6("2001:0db8:0000:0000:0000:ff00:0042:8329")), "2001:db8::ff00:42:8329");
  EXPECT_EQ(format_ipv6(v6("::")), "::");
  EXPECT_EQ(format_ipv6(v6("::1")), "::1");
  EXPECT_EQ(format_ipv6(v6("1::")), "1::");
  // One zero group is not shortened; of two equal runs the first is.
  EXPECT_EQ(format_ipv6(v6("2001:db8:0:1:1:1:1:1")), "2001:db8:0:1:1:1:1:1");
  EXPECT_EQ(format_ipv6(v6("2001:0:0:1:0:0:1:1")), "2001::1:0:0:1:1");
  // The longest run, wherever it is.
  EXPECT_EQ(format_ipv6(v6("2001:0:0:1:0:0:0:1")), "2001:0:0:1::1");
  EXPECT_EQ(format_ipv6(v6("fd00:77:1::2")), "fd00:77:1::2");
  // The deprecated IPv4-compatible form is not asked for: hex, as any other.
  EXPECT_EQ(format_ipv6(v6("::102:304")), "::102:304");
  EXPECT_EQ(format_ipv6(v6("::1.2.3.4")), "::102:304");
  EXPECT_EQ(format_ipv6(v6("::ffff:0:1")), "::ffff:0.0.0.1");  // mapped: dotted
}

TEST(Ipv6, Ipv4MappedAddressesGoBothWays) {
  const Ipv6 mapped = mapped_ipv4(0x0A4D0102);
  EXPECT_EQ(format_ipv6(mapped), "::ffff:10.77.1.2");
  EXPECT_EQ(mapped, v6("::ffff:10.77.1.2"));
  EXPECT_TRUE(mapped.v4_mapped());
  EXPECT_EQ(ipv4_of_mapped(mapped), 0x0A4D0102u);
}

TEST(Ipv6, SolicitedNodeGroupAndItsMac) {
  const Ipv6 group = solicited_node(v6("fd00:77:1::2:abcd:ef01"));
  EXPECT_EQ(format_ipv6(group), "ff02::1:ffcd:ef01");
  EXPECT_TRUE(group.multicast());
  uint8_t mac[6];
  multicast_mac(group, mac);
  const uint8_t want[6] = {0x33, 0x33, 0xff, 0xcd, 0xef, 0x01};
  EXPECT_TRUE(std::equal(mac, mac + 6, want));
}

TEST(Ipv6, InterfaceKnowsItsPrefixAndRouter) {
  const auto interface = parse_interface6("fd00:77:1::2/64@fd00:77:1::1");
  ASSERT_TRUE(interface);
  EXPECT_EQ(interface->prefix_length, 64);
  EXPECT_TRUE(interface->on_link(v6("fd00:77:1::99")));
  EXPECT_TRUE(interface->on_link(v6("fe80::1"))) << "link-local is always on the link";
  EXPECT_FALSE(interface->on_link(v6("fd00:77:2::2")));
  EXPECT_EQ(interface->next_hop(v6("fd00:77:1::9")), v6("fd00:77:1::9"));
  EXPECT_EQ(interface->next_hop(v6("fd00:77:2::2")), v6("fd00:77:1::1"));
  EXPECT_EQ(format_interface6(*interface), "fd00:77:1::2/64@fd00:77:1::1");
  // A prefix that ends inside a byte.
  const auto odd = parse_interface6("fd00:77:1::2/60");
  ASSERT_TRUE(odd);
  EXPECT_TRUE(odd->on_link(v6("fd00:77:1:f::1")));
  EXPECT_FALSE(odd->on_link(v6("fd00:77:1:10::1")));
  EXPECT_TRUE(odd->next_hop(v6("fd00:77:2::2")).unspecified()) << "no router: no next hop";
  const auto host = parse_interface6("fd00::5");
  ASSERT_TRUE(host);
  EXPECT_EQ(host->prefix_length, 128);
  EXPECT_FALSE(host->on_link(v6("fd00::6")));
  // A link-local router, as router advertisements name it.
  const auto via_link_local = parse_interface6("2001:db8::2/64@fe80::1");
  ASSERT_TRUE(via_link_local);
  EXPECT_EQ(via_link_local->next_hop(v6("2001:db9::1")), v6("fe80::1"));
}

TEST(Ipv6, InterfaceRefusesWhatNoPortMayOwn) {
  for (const char* bad : {"::/0", "::1/128", "ff02::1/16", "::ffff:10.0.0.1/96", "fe80::2/64",
                          "fd00::1/129", "fd00::1/", "fd00::1/x", "/64", "fd00::1/64@fd01::1",
                          "fd00::1/64@fd00::1", "fd00::1/64@ff02::1", "fd00::1/64@"})
    EXPECT_FALSE(parse_interface6(bad)) << bad;
}

TEST(Ipv6, UnicastPeersOnly) {
  const auto interface = parse_interface6("fd00:77:1::2/64@fd00:77:1::1");
  ASSERT_TRUE(interface);
  EXPECT_TRUE(interface->unicast(v6("fd00:77:2::2")));
  EXPECT_TRUE(interface->unicast(v6("fe80::1")));
  for (const char* not_a_peer : {"::", "::1", "ff02::1", "::ffff:10.0.0.1"})
    EXPECT_FALSE(interface->unicast(v6(not_a_peer))) << not_a_peer;
}

TEST(Ipv6, HashesSpreadAddresses) {
  std::hash<Ipv6> hash;
  EXPECT_NE(hash(v6("fd00::1")), hash(v6("fd00::2")));
  EXPECT_NE(hash(v6("fd00::1")), hash(v6("fd01::1")));
  EXPECT_EQ(hash(v6("fd00::1")), hash(v6("fd00:0::1")));
}

}  // namespace
}  // namespace ofi_dpdk::ip
