// umem_pool.h: an mbuf pool net_af_xdp can hand to the kernel whole.
//
// net_af_xdp registers the port's mempool with the kernel as its UMEM, the
// memory an AF_XDP socket's descriptors may point into.  DPDK 22.11 (before
// 24.07's "parse UMEM map info from mempool") gives the kernel a UMEM of
// populated_size * object size + the first object's offset in its page,
// from the first object on: it takes the objects to lie end to end.  A pool
// made by rte_pktmbuf_pool_create does not: objects never cross a page, so
// with 4 KiB pages (--no-huge) each 2.3 KiB mbuf takes a page and 42 % of
// the pool lies beyond that length.  A frame sent from one of those mbufs
// is refused by the kernel as an invalid descriptor, silently: the link
// stalls once the pool's rotation reaches them, and every retransmission
// of the same segment meets the same fate.  Objects laid end to end, one
// memory chunk, make the UMEM cover the whole pool.
#pragma once

#include <cstdint>
#include <string>

struct rte_mempool;

namespace ofi_dpdk::net {

// An mbuf pool of `count` mbufs with `data_room` bytes each (headroom
// included), objects packed end to end (RTE_MEMPOOL_F_NO_IOVA_CONTIG: no
// page boundary respected, which only a device that does not DMA by
// physical page may take) in one chunk.  nullptr with *error set when it
// cannot be made so.
rte_mempool* create_umem_pool(const std::string& name, uint32_t count, uint32_t cache,
                              uint16_t data_room, int socket, std::string* error);

// How many of `pool`'s objects end beyond the UMEM net_af_xdp 22.11 would
// register for it (0: the kernel takes every mbuf).
uint32_t mbufs_beyond_umem(rte_mempool* pool);

}  // namespace ofi_dpdk::net
