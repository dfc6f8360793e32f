#include "drivers/net/umem_pool.h"

#include <rte_errno.h>
#include <rte_mbuf.h>
#include <rte_mbuf_pool_ops.h>
#include <rte_mempool.h>
#include <unistd.h>

namespace ofi_dpdk::net {
namespace {

struct Span {
  uintptr_t end = 0;
  uint32_t beyond = 0;
};

void count_beyond(rte_mempool* pool, void* arg, void* object, unsigned) {
  auto* span = static_cast<Span*>(arg);
  const uintptr_t end = reinterpret_cast<uintptr_t>(object) + pool->elt_size + pool->trailer_size;
  if (end > span->end) ++span->beyond;
}

}  // namespace

rte_mempool* create_umem_pool(const std::string& name, uint32_t count, uint32_t cache,
                              uint16_t data_room, int socket, std::string* error) {
  rte_pktmbuf_pool_private private_area{};
  private_area.mbuf_data_room_size = data_room;
  private_area.mbuf_priv_size = 0;
  rte_mempool* pool =
      rte_mempool_create_empty(name.c_str(), count, sizeof(rte_mbuf) + data_room, cache,
                               sizeof private_area, socket, RTE_MEMPOOL_F_NO_IOVA_CONTIG);
  if (pool == nullptr) {
    *error = std::string("rte_mempool_create_empty: ") + rte_strerror(rte_errno);
    return nullptr;
  }
  const auto fail = [&](const std::string& why) {
    *error = why;
    rte_mempool_free(pool);
    return nullptr;
  };
  if (const int ret = rte_mempool_set_ops_byname(pool, rte_mbuf_best_mempool_ops(), nullptr);
      ret != 0)
    return fail(std::string("rte_mempool_set_ops_byname: ") + rte_strerror(-ret));
  rte_pktmbuf_pool_init(pool, &private_area);
  if (const int ret = rte_mempool_populate_default(pool); ret < 0)
    return fail(std::string("rte_mempool_populate_default: ") + rte_strerror(-ret));
  rte_mempool_obj_iter(pool, rte_pktmbuf_init, nullptr);
  if (pool->nb_mem_chunks != 1)
    return fail("the pool came in " + std::to_string(pool->nb_mem_chunks) +
                " memory chunks, and net_af_xdp registers one");
  if (const uint32_t beyond = mbufs_beyond_umem(pool); beyond != 0)
    return fail(std::to_string(beyond) + " of its mbufs lie beyond the UMEM net_af_xdp registers");
  return pool;
}

uint32_t mbufs_beyond_umem(rte_mempool* pool) {
  // What 22.11's get_base_addr and xdp_umem_configure register: from the
  // page of the first chunk's start, populated_size objects and the offset.
  const rte_mempool_memhdr* first = STAILQ_FIRST(&pool->mem_list);
  if (first == nullptr) return pool->populated_size;
  const auto start = reinterpret_cast<uintptr_t>(first->addr);
  const uintptr_t page = static_cast<uintptr_t>(getpagesize());
  const uintptr_t base = start & ~(page - 1);
  const uint64_t object = rte_mempool_calc_obj_size(pool->elt_size, pool->flags, nullptr);
  Span span;
  span.end = base + uint64_t{pool->populated_size} * object + (start - base);
  rte_mempool_obj_iter(pool, count_beyond, &span);
  return span.beyond;
}

}  // namespace ofi_dpdk::net
