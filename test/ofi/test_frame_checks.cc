// How each port checks the frames it takes (doc/wire-protocol.md,
// "Integrity"), through stock libfabric and the stats ops' port_checks:
//   - without FI_DPDK_CHECKSUM, a port that is only memory (net_ring,
//     net_memif) takes frames unchecked and its frames carry no CRC, any
//     other port (net_null here) checks a CRC; FI_DPDK_CHECKSUM=1 makes
//     every port check; with the fault injector corrupting frames
//     (FI_DPDK_FAULT_CORRUPT) memory ports check too;
//   - either way messages of 1 B to 20 kB cross a net_ring port and a
//     net_memif pair byte-exact, and where frames are corrupted the CRC
//     refuses them (rx_bad_frames grows) and the transport resends: not one
//     corrupted byte reaches a receive buffer.
// What each port should say comes from meson.build (OFI_DPDK_EXPECT_CHECKS,
// "port=checks,..."), as does OFI_DPDK_EXPECT_REFUSALS=1 where frames are
// corrupted.
#include <fi_dpdk.h>
#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "test/support/fabric_helpers.h"

namespace ofi_dpdk::test {
namespace {

std::map<std::string, uint32_t> expected_checks() {
  std::map<std::string, uint32_t> expected;
  const char* text = std::getenv("OFI_DPDK_EXPECT_CHECKS");
  if (text == nullptr) return expected;
  std::string rest = text;
  while (!rest.empty()) {
    const size_t comma = rest.find(',');
    const std::string item = rest.substr(0, comma);
    rest = comma == std::string::npos ? "" : rest.substr(comma + 1);
    const size_t equals = item.find('=');
    if (equals == std::string::npos) continue;
    expected[item.substr(0, equals)] = static_cast<uint32_t>(std::stoul(item.substr(equals + 1)));
  }
  return expected;
}

bool refusals_expected() {
  const char* text = std::getenv("OFI_DPDK_EXPECT_REFUSALS");
  return text != nullptr && std::strcmp(text, "1") == 0;
}

// One domain on a port, with its AV and stats ops.
struct PortSide {
  explicit PortSide(const char* port) {
    info = get_dpdk_info(port);
    if (info == nullptr) return;
    if (fi_fabric(info->fabric_attr, &fabric, nullptr) != 0) return;
    if (fi_domain(fabric, info, &domain, nullptr) != 0) return;
    fi_av_attr av_attr{};
    av_attr.type = FI_AV_TABLE;
    if (fi_av_open(domain, &av_attr, &av, nullptr) != 0) return;
    fi_open_ops(&domain->fid, FI_DPDK_STATS_OPS_NAME, 0, reinterpret_cast<void**>(&stats), nullptr);
  }
  ~PortSide() {
    for (TestEndpoint* ep : {&first, &second}) ep->close();
    if (av) fi_close(&av->fid);
    if (domain) fi_close(&domain->fid);
    if (fabric) fi_close(&fabric->fid);
    fi_freeinfo(info);
  }
  bool ready() const { return stats != nullptr && stats->size >= sizeof(fi_dpdk_ops_stats); }
  fi_dpdk_port_checks checks() const {
    fi_dpdk_port_checks out{};
    EXPECT_EQ(stats->port_checks(domain, &out), 0);
    return out;
  }
  // Inserts `ep`'s name into this side's AV; its fi_addr here.
  fi_addr_t insert(const TestEndpoint& ep) {
    fi_addr_t addr = FI_ADDR_NOTAVAIL;
    EXPECT_EQ(fi_av_insert(av, ep.name, 1, &addr, 0, nullptr), 1);
    return addr;
  }

  fi_info* info = nullptr;
  fid_fabric* fabric = nullptr;
  fid_domain* domain = nullptr;
  fid_av* av = nullptr;
  fi_dpdk_ops_stats* stats = nullptr;
  TestEndpoint first, second;
};

TEST(FrameChecks, EachPortChecksWhatItsRuleSays) {
  const auto expected = expected_checks();
  ASSERT_FALSE(expected.empty()) << "OFI_DPDK_EXPECT_CHECKS is not set (meson.build)";
  for (const auto& [port, checks] : expected) {
    PortSide side(port.c_str());
    ASSERT_TRUE(side.ready()) << port;
    EXPECT_EQ(side.checks().checks, checks) << port;
  }
}

// Sends `count` messages of cycling sizes from `from` to `to` (each side
// progressing its own port) and compares every byte.
void exchange(const TestEndpoint& from, fi_addr_t to_addr, const TestEndpoint& to, int count) {
  static constexpr size_t kSizes[] = {1, 63, 1000, 4096, 8000, 20000};
  for (int i = 0; i < count; ++i) {
    const size_t size = kSizes[i % std::size(kSizes)];
    std::vector<uint8_t> out(size), in(size, 0);
    for (size_t b = 0; b < size; ++b) out[b] = static_cast<uint8_t>(b * 31 + i);
    ASSERT_EQ(fi_recv(to.ep, in.data(), size, nullptr, FI_ADDR_UNSPEC, nullptr), 0);
    ASSERT_EQ(fi_send(from.ep, out.data(), size, nullptr, to_addr, nullptr), 0);
    bool sent = false, received = false;
    const auto limit = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    while (!(sent && received) && std::chrono::steady_clock::now() < limit) {
      fi_cq_data_entry entry;
      if (!sent) {
        const ssize_t ret = fi_cq_read(from.tx_cq, &entry, 1);
        ASSERT_TRUE(ret == 1 || ret == -FI_EAGAIN) << ret;
        sent = ret == 1;
      }
      if (!received) {
        const ssize_t ret = fi_cq_read(to.rx_cq, &entry, 1);
        ASSERT_TRUE(ret == 1 || ret == -FI_EAGAIN) << ret;
        received = ret == 1;
      }
    }
    ASSERT_TRUE(sent && received) << "message " << i << " of " << size << " B did not complete";
    ASSERT_EQ(in, out) << "message " << i << " of " << size << " B arrived changed";
  }
}

TEST(FrameChecks, MessagesCrossANetRingPortIntact) {
  PortSide ring("net_ring0");
  ASSERT_TRUE(ring.ready());
  ASSERT_EQ(ring.first.open(ring.domain, ring.av, ring.info), 0);
  ASSERT_EQ(ring.second.open(ring.domain, ring.av, ring.info), 0);
  exchange(ring.first, ring.second.addr, ring.second, 300);
  if (refusals_expected())
    EXPECT_GT(ring.checks().rx_bad_frames, 0u) << "no corrupted frame was refused";
  else
    EXPECT_EQ(ring.checks().rx_bad_frames, 0u);
}

TEST(FrameChecks, MessagesCrossAMemifPairIntact) {
  PortSide server("net_memif0"), client("net_memif1");
  ASSERT_TRUE(server.ready() && client.ready());
  ASSERT_EQ(server.first.open(server.domain, server.av, server.info), 0);
  ASSERT_EQ(client.first.open(client.domain, client.av, client.info), 0);
  const fi_addr_t server_at_client = client.insert(server.first);
  const fi_addr_t client_at_server = server.insert(client.first);
  exchange(client.first, server_at_client, server.first, 150);
  exchange(server.first, client_at_server, client.first, 150);
  const uint64_t refused = server.checks().rx_bad_frames + client.checks().rx_bad_frames;
  if (refusals_expected())
    EXPECT_GT(refused, 0u) << "no corrupted frame was refused";
  else
    EXPECT_EQ(refused, 0u);
  EXPECT_EQ(server.checks().rx_unsealed + client.checks().rx_unsealed, 0u)
      << "the two ends of the pair disagree on checksums";
}

}  // namespace
}  // namespace ofi_dpdk::test
