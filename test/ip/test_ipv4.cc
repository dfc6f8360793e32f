#include "lib/ip/ipv4.h"

#include <gtest/gtest.h>

namespace ofi_dpdk::ip {
namespace {

TEST(Ipv4, ParsesAndFormatsDottedQuads) {
  EXPECT_EQ(parse_ipv4("10.0.0.1"), 0x0A000001u);
  EXPECT_EQ(parse_ipv4("255.255.255.255"), 0xFFFFFFFFu);
  EXPECT_EQ(format_ipv4(0x7F000102), "127.0.1.2");
  EXPECT_EQ(format_ipv4(*parse_ipv4("192.168.10.254")), "192.168.10.254");
}

TEST(Ipv4, RefusesAnythingElse) {
  for (const char* bad :
       {"", "10.0.0", "10.0.0.1.2", "10.0.0.256", "10..0.1", "a.b.c.d", "10.0.0.1 ", "-1.0.0.1",
        "1000.0.0.1", "02:00:00:00:00:01", "10.0.0.01x", "10.0.0.01", "0x0a.0.0.1", "10.1"})
    EXPECT_FALSE(parse_ipv4(bad)) << bad;
  // (inet_pton's rules: no leading zeros, no hex, no short forms.)
  EXPECT_FALSE(parse_ipv4(std::string_view("10.0.0.1\0x", 10)));  // a NUL inside
}

TEST(Ipv4, InterfaceKnowsItsSubnet) {
  const auto interface = parse_interface("10.1.2.3/24");
  ASSERT_TRUE(interface);
  EXPECT_EQ(interface->address, 0x0A010203u);
  EXPECT_EQ(interface->prefix_length, 24);
  EXPECT_TRUE(interface->on_link(*parse_ipv4("10.1.2.200")));
  EXPECT_FALSE(interface->on_link(*parse_ipv4("10.1.3.1")));
  EXPECT_EQ(format_interface(*interface), "10.1.2.3/24");
  const auto host = parse_interface("10.1.2.3");
  ASSERT_TRUE(host);
  EXPECT_EQ(host->prefix_length, 32);
  EXPECT_FALSE(host->on_link(*parse_ipv4("10.1.2.4")));
  EXPECT_TRUE(parse_interface("127.0.0.1/8")->on_link(*parse_ipv4("127.200.0.1")));
  EXPECT_TRUE(parse_interface("10.0.0.1/0")->on_link(*parse_ipv4("192.168.0.1")));
}

TEST(Ipv4, InterfaceRefusesAddressesNoPortMayOwn) {
  for (const char* bad : {"0.0.0.0/8", "255.255.255.255/32", "224.0.0.1/4", "10.0.0.1/33",
                          "10.0.0.1/", "10.0.0.1/x", "/24"})
    EXPECT_FALSE(parse_interface(bad)) << bad;
}

TEST(Ipv4, InterfaceWithGatewaySendsOffLinkFramesToIt) {
  const auto interface = parse_interface("10.0.1.2/24@10.0.1.1");
  ASSERT_TRUE(interface);
  EXPECT_EQ(interface->gateway, *parse_ipv4("10.0.1.1"));
  EXPECT_EQ(interface->next_hop(*parse_ipv4("10.0.1.9")), *parse_ipv4("10.0.1.9"));
  EXPECT_EQ(interface->next_hop(*parse_ipv4("10.0.2.2")), *parse_ipv4("10.0.1.1"));
  EXPECT_EQ(format_interface(*interface), "10.0.1.2/24@10.0.1.1");
  // Without a gateway, off-link has no next hop.
  EXPECT_EQ(parse_interface("10.0.1.2/24")->next_hop(*parse_ipv4("10.0.2.2")), 0u);
}

TEST(Ipv4, UnicastPeersOnly) {
  const auto interface = parse_interface("10.0.1.2/24@10.0.1.1");
  ASSERT_TRUE(interface);
  EXPECT_TRUE(interface->unicast(*parse_ipv4("10.0.1.7")));
  EXPECT_TRUE(interface->unicast(*parse_ipv4("10.0.2.255")))
      << "another subnet's: not ours to know";
  EXPECT_TRUE(interface->unicast(*parse_ipv4("127.0.0.2")));
  EXPECT_FALSE(interface->unicast(0));
  EXPECT_FALSE(interface->unicast(*parse_ipv4("10.0.1.255"))) << "this subnet's broadcast";
  EXPECT_FALSE(interface->unicast(*parse_ipv4("255.255.255.255")));
  EXPECT_FALSE(interface->unicast(*parse_ipv4("224.0.0.1")));
  EXPECT_FALSE(interface->unicast(*parse_ipv4("240.0.0.1")));
  EXPECT_TRUE(parse_interface("10.0.1.2/31")->unicast(*parse_ipv4("10.0.1.3"))) << "RFC 3021";
}

TEST(Ipv4, InterfaceRefusesGatewaysItCannotReach) {
  EXPECT_FALSE(parse_interface("10.0.1.2/24@10.0.2.1"));  // off the subnet
  EXPECT_FALSE(parse_interface("10.0.1.2/24@10.0.1.2"));  // itself
  EXPECT_FALSE(parse_interface("10.0.1.2/24@"));
  EXPECT_FALSE(parse_interface("10.0.1.2/24@255.255.255.255"));
  EXPECT_FALSE(parse_interface("10.0.1.2/24@10.0.1.1@10.0.1.3"));
}

}  // namespace
}  // namespace ofi_dpdk::ip
