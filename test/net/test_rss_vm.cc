// test_rss_vm.cc: RSS as a device really computes it, against lib/ip/rss.h.
// Two virtio-net ports of a VM (test_rss_vm.sh: QEMU's software RSS,
// bridged on the host); port A opens with RSS steering (net::Port reads
// its key and redirection table), port B sends it UDP frames in IPv4 and
// IPv6 with many source ports.  Each frame must arrive on the queue the
// Toeplitz hash of its tuple and A's table predict, the frames must spread
// over several queues (so a device that ignored the hash would fail), and
// frames sent from the source ports udp{4,6}_reaching_ports chose for a
// queue must all arrive on that queue: what choosing source ports by RSS
// rests on.
#include <gtest/gtest.h>
#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_ethdev.h>
#include <rte_mbuf.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "drivers/net/mbuf_handoff.h"
#include "drivers/net/port.h"
#include "lib/ip/rss.h"
#include "lib/ip/udp4.h"
#include "lib/ip/udp6.h"

namespace ofi_dpdk {
namespace {

bool g_eal = false;
constexpr uint16_t kQueues = 4;
constexpr uint16_t kDestinationPort = 9229;
const ip::Ipv4 kSource4 = 0x0A090002, kDestination4 = 0x0A090001;  // 10.9.0.2 -> .1

struct Arrival {
  uint16_t source_port;
  uint16_t queue;
};

// The two ports, opened once for the suite (the device is set up once,
// as the provider does).
class RssSteering : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    if (!g_eal) return;
    const std::vector<uint16_t> ports = net::available_ports();
    ASSERT_GE(ports.size(), 2u);
    net::PortConfig config;
    config.queues_wanted = kQueues;
    config.mbufs = 4095;
    config.mtu = 1500;
    config.steering = net::SteeringRequest::kRss;
    std::string error;
    ASSERT_EQ(net::Port::open(ports[0], config, &receiver_, &error), 0) << error;
    config.steering = net::SteeringRequest::kSoftware;
    ASSERT_EQ(net::Port::open(ports[1], config, &sender_, &error), 0) << error;
    std::printf("%s\n%s\n", receiver_->description().c_str(), sender_->description().c_str());
  }
  static void TearDownTestSuite() {
    receiver_.reset();
    sender_.reset();
  }
  void SetUp() override {
    if (!g_eal) GTEST_SKIP() << "needs OFI_DPDK_RSS_EAL_ARGS (test_rss_vm.sh)";
    ASSERT_NE(receiver_, nullptr);
    ASSERT_NE(sender_, nullptr);
  }

  // Sends one UDP frame per source port, IPv4 or IPv6, and returns where
  // each arrived (frames of other kinds are let go).
  static std::vector<Arrival> send_and_receive(const std::vector<uint16_t>& source_ports,
                                               bool ipv6) {
    const auto source6 = *ip::parse_ipv6("fd00:9::2"), destination6 = *ip::parse_ipv6("fd00:9::1");
    for (uint16_t port : source_ports) {
      rte_mbuf* frame = nullptr;
      for (int tries = 0; frame == nullptr && tries < 1000; ++tries) frame = sender_->alloc_frame();
      EXPECT_NE(frame, nullptr);
      if (frame == nullptr) return {};
      constexpr size_t kPayload = 32;
      const size_t lead = ipv6 ? ip::kUdp6Lead : ip::kUdp4Lead;
      auto* bytes = reinterpret_cast<uint8_t*>(rte_pktmbuf_append(frame, lead + kPayload));
      std::memset(bytes + lead, 0x5a, kPayload);
      if (ipv6) {
        ip::Udp6Addresses addresses{source6, destination6, port, kDestinationPort};
        ip::encode_udp6(bytes, receiver_->mac(), sender_->mac(), addresses, kPayload);
      } else {
        ip::Udp4Addresses addresses{kSource4, kDestination4, port, kDestinationPort};
        ip::encode_udp4(bytes, receiver_->mac(), sender_->mac(), addresses, kPayload);
      }
      while (sender_->tx_burst(0, &frame, 1) == 0) {
      }
    }
    std::vector<Arrival> arrivals;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    while (arrivals.size() < source_ports.size() && std::chrono::steady_clock::now() < deadline) {
      for (uint16_t queue = 0; queue < receiver_->queue_pairs(); ++queue) {
        rte_mbuf* frames[32];
        const uint16_t count = receiver_->rx_burst(queue, frames, 32);
        for (uint16_t i = 0; i < count; ++i) {
          const auto* bytes = rte_pktmbuf_mtod(frames[i], const uint8_t*);
          const size_t udp = ipv6 ? ip::kUdp6Lead - 8 : ip::kUdp4Lead - 8;
          const uint16_t type = uint16_t(bytes[12] << 8 | bytes[13]);
          if (rte_pktmbuf_data_len(frames[i]) > udp + 4 && type == (ipv6 ? 0x86DD : 0x0800) &&
              (uint16_t(bytes[udp + 2] << 8 | bytes[udp + 3]) == kDestinationPort))
            arrivals.push_back({uint16_t(bytes[udp] << 8 | bytes[udp + 1]), queue});
          net::free_frame(frames[i]);
        }
      }
    }
    return arrivals;
  }

  static uint16_t predicted(uint16_t source_port, bool ipv6) {
    const ip::RssConfig& rss = receiver_->rss();
    if (!ipv6)
      return rss.queue_of(
          ip::udp4_rss_hash(rss, kSource4, kDestination4, source_port, kDestinationPort));
    return rss.queue_of(ip::udp6_rss_hash(rss, *ip::parse_ipv6("fd00:9::2"),
                                          *ip::parse_ipv6("fd00:9::1"), source_port,
                                          kDestinationPort));
  }

  static std::unique_ptr<net::Port> receiver_, sender_;
};
std::unique_ptr<net::Port> RssSteering::receiver_, RssSteering::sender_;

TEST_F(RssSteering, EachFrameLandsWhereTheHashSays) {
  ASSERT_EQ(receiver_->steering(), net::Steering::kRss);
  ASSERT_EQ(receiver_->queue_pairs(), kQueues);
  ASSERT_TRUE(receiver_->rss().usable());
  for (const bool ipv6 : {false, true}) {
    SCOPED_TRACE(ipv6 ? "IPv6" : "IPv4");
    std::vector<uint16_t> ports;
    for (uint32_t i = 0; i < 256; ++i) ports.push_back(uint16_t(49152 + i * 61 % 16384));
    const std::vector<Arrival> arrivals = send_and_receive(ports, ipv6);
    EXPECT_EQ(arrivals.size(), ports.size());
    std::map<uint16_t, int> per_queue;
    int mispredicted = 0;
    for (const Arrival& a : arrivals) {
      ++per_queue[a.queue];
      if (a.queue != predicted(a.source_port, ipv6)) ++mispredicted;
    }
    EXPECT_EQ(mispredicted, 0);
    EXPECT_GE(per_queue.size(), 3u) << "the device put every frame on few queues";
    for (auto [queue, count] : per_queue) std::printf("queue %u: %d frames\n", queue, count);
  }
}

TEST_F(RssSteering, ReachingPortsLandOnTheirQueue) {
  const ip::RssConfig& rss = receiver_->rss();
  ASSERT_TRUE(rss.usable());
  for (uint16_t queue = 0; queue < kQueues; ++queue) {
    for (const bool ipv6 : {false, true}) {
      std::vector<uint16_t> ports(16);
      const size_t found = ipv6 ? ip::udp6_reaching_ports(rss, *ip::parse_ipv6("fd00:9::2"),
                                                          *ip::parse_ipv6("fd00:9::1"),
                                                          kDestinationPort, queue, 50000, ports)
                                : ip::udp4_reaching_ports(rss, kSource4, kDestination4,
                                                          kDestinationPort, queue, 50000, ports);
      ASSERT_EQ(found, ports.size());
      const std::vector<Arrival> arrivals = send_and_receive(ports, ipv6);
      EXPECT_EQ(arrivals.size(), ports.size());
      for (const Arrival& a : arrivals)
        EXPECT_EQ(a.queue, queue) << (ipv6 ? "IPv6" : "IPv4") << " source port " << a.source_port;
    }
  }
}

}  // namespace
}  // namespace ofi_dpdk

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  if (const char* args = std::getenv("OFI_DPDK_RSS_EAL_ARGS")) {
    static std::vector<std::string> words{"test_rss_vm"};
    std::istringstream in(args);
    for (std::string word; in >> word;) words.push_back(word);
    static std::vector<char*> eal_argv;
    for (std::string& word : words) eal_argv.push_back(word.data());
    if (rte_eal_init(static_cast<int>(eal_argv.size()), eal_argv.data()) < 0) {
      std::fprintf(stderr, "test_rss_vm: rte_eal_init: %s\n", rte_strerror(rte_errno));
      return 1;
    }
    ofi_dpdk::g_eal = true;
  }
  const int result = RUN_ALL_TESTS();
  // No rte_eal_cleanup, as the provider makes none: in this VM it faults
  // closing the virtio ports (DPDK 22.11, uio_pci_generic) after the test
  // passed; the process exits and the guest powers off.
  return result;
}
