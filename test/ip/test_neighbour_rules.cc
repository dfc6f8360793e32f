#include "lib/ip/neighbour_rules.h"

#include <gtest/gtest.h>

#include <cstring>

namespace ofi_dpdk::ip {
namespace {

constexpr uint8_t kMacA[6] = {0x02, 0, 0, 0, 0, 0x0A};
constexpr uint8_t kMacB[6] = {0x02, 0, 0, 0, 0, 0x0B};
constexpr uint8_t kBroadcast[6] = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff};
constexpr uint8_t kMulticast[6] = {0x33, 0x33, 0, 0, 0, 1};
constexpr uint8_t kZero[6] = {};

ArpMessage request_from(const uint8_t mac[6], Ipv4 sender) {
  return arp_request(mac, sender, 0x0A420001);
}

TEST(NeighbourRules, ArpSenderMustBeTheFrameSourceAndAStation) {
  const Interface interface = *parse_interface("10.66.0.1/16");
  EXPECT_EQ(refuse_arp_sender(request_from(kMacA, 0x0A420002), kMacA, interface), std::nullopt);
  EXPECT_EQ(refuse_arp_sender(request_from(kMacA, 0x0A420002), kMacB, interface),
            Verdict::kForgedSender);
  for (const uint8_t* bad : {kBroadcast, kMulticast, kZero})
    EXPECT_EQ(refuse_arp_sender(request_from(bad, 0x0A420002), bad, interface), Verdict::kBadMac);
}

TEST(NeighbourRules, ArpSenderMustBeANeighbourOnTheSubnet) {
  const Interface interface = *parse_interface("10.66.0.1/16@10.66.0.254");
  EXPECT_EQ(refuse_arp_sender(request_from(kMacA, 0x0A4200FE), kMacA, interface), std::nullopt)
      << "the gateway";
  for (const Ipv4 bad : {Ipv4{0x0A430002}, Ipv4{0}, Ipv4{0x0A42FFFF}, Ipv4{0xFFFFFFFF},
                         Ipv4{0xE0000001}, Ipv4{0x0A420001}})
    EXPECT_EQ(refuse_arp_sender(request_from(kMacA, bad), kMacA, interface), Verdict::kOffLink)
        << format_ipv4(bad);
}

NeighbourMessage solicitation(const char* source, const uint8_t* option) {
  NeighbourMessage m;
  m.kind = NeighbourMessage::Kind::kSolicitation;
  m.source = *parse_ipv6(source);
  m.target = *parse_ipv6("fd00:66::1");
  m.has_link_address = option != nullptr;
  if (option != nullptr) std::memcpy(m.link_address, option, 6);
  return m;
}

NeighbourMessage advertisement(const char* target, const uint8_t* option) {
  NeighbourMessage m;
  m.kind = NeighbourMessage::Kind::kAdvertisement;
  m.source = *parse_ipv6(target);
  m.target = *parse_ipv6(target);
  m.has_link_address = option != nullptr;
  if (option != nullptr) std::memcpy(m.link_address, option, 6);
  return m;
}

TEST(NeighbourRules, NeighbourClaimsNameTheirSenderAndItsFrame) {
  const Interface6 interface = *parse_interface6("fd00:66::1/64@fe80::1");
  const NeighbourClaim s = neighbour_claim(solicitation("fd00:66::2", kMacA), kMacA);
  EXPECT_EQ(s.address, *parse_ipv6("fd00:66::2"));
  EXPECT_EQ(s.mac[5], 0x0A);
  EXPECT_EQ(neighbour_claim(advertisement("fe80::1", nullptr), kMacB).mac[5], 0x0B)
      << "without the option, the frame's source";
  EXPECT_EQ(refuse_neighbour_claim(solicitation("fd00:66::2", kMacA), kMacA, interface),
            std::nullopt);
  EXPECT_EQ(refuse_neighbour_claim(advertisement("fe80::1", kMacA), kMacA, interface), std::nullopt)
      << "a link-local router is on the link";
  EXPECT_EQ(refuse_neighbour_claim(advertisement("fe80::1", nullptr), kMacA, interface),
            std::nullopt);
  EXPECT_EQ(refuse_neighbour_claim(solicitation("fd00:66::2", kMacA), kMacB, interface),
            Verdict::kForgedSender);
  for (const uint8_t* bad : {kBroadcast, kMulticast, kZero}) {
    EXPECT_EQ(refuse_neighbour_claim(solicitation("fd00:66::2", bad), bad, interface),
              Verdict::kBadMac);
    EXPECT_EQ(refuse_neighbour_claim(advertisement("fd00:66::2", nullptr), bad, interface),
              Verdict::kBadMac);
  }
  for (const char* bad : {"fd00:67::2", "::", "ff02::1", "::ffff:10.0.0.1", "fd00:66::1"})
    EXPECT_EQ(refuse_neighbour_claim(solicitation(bad, kMacA), kMacA, interface), Verdict::kOffLink)
        << bad;
}

}  // namespace
}  // namespace ofi_dpdk::ip
