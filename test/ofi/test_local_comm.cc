// FI_LOCAL_COMM (fi_getinfo(3)): endpoints of one host reach each other.
// Two endpoints on one port that does not hand frames for its own MAC back
// (port a of two crossed net_ring ports, like a NIC or a memif port): the
// provider passes their frames over in software.  What must hold:
//   - fi_getinfo with the caps Open MPI's OFI MTL asks for (FI_TAGGED,
//     FI_DIRECTED_RECV, FI_LOCAL_COMM, FI_REMOTE_COMM) offers the port, and
//     the endpoint it opens has both LOCAL and REMOTE_COMM;
//   - messages of 1 B to 1 MiB go both ways between the two endpoints,
//     byte-exact, tagged and directed;
//   - fi_write and fi_read between them move the bytes;
//   - the port sent none of these frames to the device (its TX counter
//     stays where it was).
// The program owns EAL, as test_threads.cc does: crossed ports need
// rte_eth_from_rings.
#include <fi_dpdk.h>
#include <gtest/gtest.h>
#include <rdma/fi_rma.h>
#include <rdma/fi_tagged.h>

#include <chrono>
#include <cstring>
#include <vector>

#include "test/support/crossed_ports.h"
#include "test/support/fabric_helpers.h"

namespace ofi_dpdk::test {
namespace {

constexpr uint64_t kMpiCaps = FI_TAGGED | FI_DIRECTED_RECV | FI_LOCAL_COMM | FI_REMOTE_COMM;

struct OnePort : testing::Test {
  void SetUp() override {
    info = get_dpdk_info("net_ring_local_a", kMpiCaps | FI_RMA);
    ASSERT_NE(info, nullptr) << "no offer for the OFI MTL's caps";
    ASSERT_EQ(fi_fabric(info->fabric_attr, &fabric, nullptr), 0);
    ASSERT_EQ(fi_domain(fabric, info, &domain, nullptr), 0);
    fi_av_attr av_attr{};
    av_attr.type = FI_AV_TABLE;
    ASSERT_EQ(fi_av_open(domain, &av_attr, &av, nullptr), 0);
    ASSERT_EQ(a.open(domain, av, info, FI_CQ_FORMAT_TAGGED), 0);
    ASSERT_EQ(b.open(domain, av, info, FI_CQ_FORMAT_TAGGED), 0);
    ASSERT_EQ(fi_open_ops(&domain->fid, FI_DPDK_STATS_OPS_NAME, 0, reinterpret_cast<void**>(&stats),
                          nullptr),
              0);
  }
  void TearDown() override {
    a.close();
    b.close();
    if (av) fi_close(&av->fid);
    if (domain) fi_close(&domain->fid);
    if (fabric) fi_close(&fabric->fid);
    fi_freeinfo(info);
  }
  uint64_t tx_frames() {
    fi_dpdk_port_stats s{};
    EXPECT_EQ(stats->port_stats(domain, &s), 0);
    return s.tx_frames;
  }
  // Waits for one entry on each of two CQs (both sides' progress).
  void wait_both(fid_cq* first, fid_cq* second) {
    fi_cq_tagged_entry entry;
    ssize_t one = -FI_EAGAIN, two = -FI_EAGAIN;
    const auto limit = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    while ((one == -FI_EAGAIN || two == -FI_EAGAIN) && std::chrono::steady_clock::now() < limit) {
      if (one == -FI_EAGAIN) one = fi_cq_read(first, &entry, 1);
      if (two == -FI_EAGAIN) two = fi_cq_read(second, &entry, 1);
    }
    ASSERT_EQ(one, 1);
    ASSERT_EQ(two, 1);
  }

  fi_info* info = nullptr;
  fid_fabric* fabric = nullptr;
  fid_domain* domain = nullptr;
  fid_av* av = nullptr;
  fi_dpdk_ops_stats* stats = nullptr;
  TestEndpoint a, b;
};

TEST_F(OnePort, TheMtlCapsAreOffered) {
  EXPECT_TRUE(info->caps & FI_LOCAL_COMM);
  EXPECT_TRUE(info->caps & FI_REMOTE_COMM);
  EXPECT_STREQ(info->domain_attr->name, "net_ring_local_a");
}

TEST_F(OnePort, MessagesGoBothWaysWithoutTheDevice) {
  const uint64_t before = tx_frames();
  for (const size_t size : {size_t{1}, size_t{5000}, size_t{1} << 20}) {
    for (const bool forward : {true, false}) {
      TestEndpoint& from = forward ? a : b;
      TestEndpoint& to = forward ? b : a;
      std::vector<uint8_t> out(size), in(size, 0);
      for (size_t i = 0; i < size; ++i) out[i] = static_cast<uint8_t>(i * 7 + size);
      ASSERT_EQ(fi_trecv(to.ep, in.data(), size, nullptr, from.addr, 0x77, 0, nullptr), 0);
      ssize_t ret;
      while ((ret = fi_tsend(from.ep, out.data(), size, nullptr, to.addr, 0x77, nullptr)) ==
             -FI_EAGAIN) {
      }
      ASSERT_EQ(ret, 0);
      wait_both(from.tx_cq, to.rx_cq);
      EXPECT_EQ(in, out) << size << (forward ? " a->b" : " b->a");
    }
  }
  EXPECT_EQ(tx_frames(), before) << "frames between endpoints of one port went to the device";
}

TEST_F(OnePort, RmaBetweenEndpointsOfOnePort) {
  std::vector<uint8_t> region(4096, 0), out(4096), back(4096, 0);
  for (size_t i = 0; i < out.size(); ++i) out[i] = static_cast<uint8_t>(i * 13 + 1);
  fid_mr* mr = nullptr;
  ASSERT_EQ(fi_mr_reg(domain, region.data(), region.size(), FI_REMOTE_READ | FI_REMOTE_WRITE, 0,
                      0x1234, 0, &mr, nullptr),
            0);
  const uint64_t addr = (info->domain_attr->mr_mode & FI_MR_VIRT_ADDR)
                            ? reinterpret_cast<uintptr_t>(region.data())
                            : 0;
  ASSERT_EQ(fi_write(a.ep, out.data(), out.size(), nullptr, b.addr, addr, fi_mr_key(mr), nullptr),
            0);
  fi_cq_tagged_entry entry;
  ASSERT_EQ(wait_for_completion(a.tx_cq, &entry), 1);  // one port: one progress for both
  EXPECT_EQ(region, out);
  ASSERT_EQ(fi_read(a.ep, back.data(), back.size(), nullptr, b.addr, addr, fi_mr_key(mr), nullptr),
            0);
  ASSERT_EQ(wait_for_completion(a.tx_cq, &entry), 1);
  EXPECT_EQ(back, out);
  fi_close(&mr->fid);
}

}  // namespace
}  // namespace ofi_dpdk::test

int main(int argc, char** argv) {
  return ofi_dpdk::test::run_over_crossed_ports(argc, argv, "local");
}
