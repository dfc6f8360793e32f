// The mbuf pool of a net_af_xdp port (drivers/net/umem_pool.h), under EAL
// without hugepages (4 KiB pages, where DPDK 22.11's net_af_xdp registered
// a UMEM shorter than an ordinary pool):
//   - an ordinary rte_pktmbuf_pool_create pool of the provider's shape has
//     mbufs beyond the UMEM that 22.11 would register (so the check below
//     can fail);
//   - create_umem_pool's pool has none, comes in one chunk, and its mbufs
//     carry data as any mbuf does (alloc, append, free, every one of them).
#include <gtest/gtest.h>
#include <rte_mbuf.h>
#include <rte_mempool.h>

#include <string>
#include <vector>

#include "drivers/net/umem_pool.h"
#include "test/support/test_eal.h"

namespace ofi_dpdk::net {
namespace {

constexpr uint32_t kMbufs = 2047;
constexpr uint16_t kRoom = 2048 + RTE_PKTMBUF_HEADROOM;

TEST(UmemPool, AnOrdinaryPoolOverrunsTheUmemWithSmallPages) {
  rte_mempool* pool = rte_pktmbuf_pool_create("ordinary", kMbufs, 256, 0, kRoom, SOCKET_ID_ANY);
  ASSERT_NE(pool, nullptr);
  EXPECT_GT(mbufs_beyond_umem(pool), kMbufs / 4);
  rte_mempool_free(pool);
}

TEST(UmemPool, APackedPoolLiesWholeInsideIt) {
  std::string error;
  rte_mempool* pool = create_umem_pool("packed", kMbufs, 256, kRoom, SOCKET_ID_ANY, &error);
  ASSERT_NE(pool, nullptr) << error;
  EXPECT_EQ(mbufs_beyond_umem(pool), 0u);
  EXPECT_EQ(pool->nb_mem_chunks, 1u);
  EXPECT_EQ(rte_pktmbuf_data_room_size(pool), kRoom);
  std::vector<rte_mbuf*> mbufs(kMbufs);
  ASSERT_EQ(rte_pktmbuf_alloc_bulk(pool, mbufs.data(), kMbufs), 0);
  for (rte_mbuf* m : mbufs) {
    char* data = rte_pktmbuf_append(m, 1500);
    ASSERT_NE(data, nullptr);
    data[0] = 1;
    data[1499] = 2;
    EXPECT_EQ(m->pool, pool);
  }
  for (rte_mbuf* m : mbufs) rte_pktmbuf_free(m);
  EXPECT_EQ(rte_mempool_avail_count(pool), kMbufs);
  rte_mempool_free(pool);
}

}  // namespace
}  // namespace ofi_dpdk::net

int main(int argc, char** argv) {
  testing::InitGoogleTest(&argc, argv);
  if (!ofi_dpdk::test::bring_up_test_eal(argv[0])) return 1;
  return RUN_ALL_TESTS();
}
