// test_packet_ring.cc: net_af_packet's MTU, the interface's within its
// ring's frames (drivers/net/packet_ring.h).
#include "drivers/net/packet_ring.h"

#include <gtest/gtest.h>
#include <net/if.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstring>

namespace ofi_dpdk::net {
namespace {

// lo's MTU as the kernel says it, or 0.
uint32_t loopback_mtu() {
  const int probe = socket(AF_INET, SOCK_DGRAM, 0);
  if (probe < 0) return 0;
  ifreq request{};
  std::strcpy(request.ifr_name, "lo");
  const int read = ioctl(probe, SIOCGIFMTU, &request);
  close(probe);
  return read == 0 ? static_cast<uint32_t>(request.ifr_mtu) : 0;
}

TEST(PacketRing, TheDefaultFrameCarriesMoreThanEthernetsMtu) {
  EXPECT_EQ(packet_ring_mtu_limit(kPacketRingDefaultFrame), 1968u);
  EXPECT_EQ(packet_ring_mtu_limit(9216), 9136u);
  EXPECT_EQ(packet_ring_mtu_limit(64), 0u);
}

TEST(PacketRing, DevargsOnlyWhereTheDefaultFrameFallsShort) {
  EXPECT_EQ(packet_ring_devargs(1500), "");
  EXPECT_EQ(packet_ring_devargs(1968), "");
  EXPECT_EQ(packet_ring_devargs(1969), "framesz=3072,blocksz=12288");
  EXPECT_EQ(packet_ring_devargs(9000), "framesz=9216,blocksz=36864");
  // lo's 65536 gets a jumbo frame's ring, not a 64 KiB one.
  EXPECT_EQ(packet_ring_devargs(65536), packet_ring_devargs(kJumboMtu));
  // Each frame the devargs give carries the MTU asked for.
  for (uint32_t mtu : {1969u, 4000u, 9000u, 9216u}) {
    const std::string args = packet_ring_devargs(mtu);
    const uint32_t frame = static_cast<uint32_t>(std::stoul(args.substr(args.find('=') + 1)));
    EXPECT_GE(packet_ring_mtu_limit(frame), mtu) << args;
    EXPECT_EQ(frame % 1024, 0u) << args;  // four a block: whole 4 KiB pages
  }
}

TEST(PacketRing, TheInterfacesMtuWithinTheRingsFrames) {
  const uint32_t lo = loopback_mtu();
  if (lo <= 9136) GTEST_SKIP() << "lo's MTU is " << lo << ", expected 65536";
  const auto by_default = packet_ring_mtu("lo", "");
  ASSERT_TRUE(by_default);
  EXPECT_EQ(by_default->interface_mtu, lo);
  EXPECT_EQ(by_default->frame_size, kPacketRingDefaultFrame);
  EXPECT_EQ(by_default->mtu, 1968);
  // The log line says why, and what to give for more.
  EXPECT_NE(by_default->note.find("interface MTU " + std::to_string(lo)), std::string::npos)
      << by_default->note;
  EXPECT_NE(by_default->note.find("framesz=10240,blocksz=40960"), std::string::npos)
      << by_default->note;
  // An mbuf takes what the driver copies of a ring frame.
  EXPECT_GE(by_default->mbuf_room, kPacketRingDefaultFrame - kPacketRingCopyLead);

  const auto jumbo = packet_ring_mtu("lo", "9216");
  ASSERT_TRUE(jumbo);
  EXPECT_EQ(jumbo->mtu, 9136);
  EXPECT_GE(jumbo->mbuf_room, 9216u - kPacketRingCopyLead);
  // A devarg that is no number leaves the default frame.
  const auto odd = packet_ring_mtu("lo", "9k");
  ASSERT_TRUE(odd);
  EXPECT_EQ(odd->frame_size, kPacketRingDefaultFrame);
}

TEST(PacketRing, AnInterfaceThatIsNotThereHasNoMtu) {
  EXPECT_FALSE(packet_ring_mtu("nosuchif0", ""));
  EXPECT_FALSE(packet_ring_mtu("", ""));
  EXPECT_FALSE(packet_ring_mtu(std::string(IFNAMSIZ, 'x'), ""));
}

}  // namespace
}  // namespace ofi_dpdk::net
