// mbuf_handoff.h: allocating and freeing frames, and telling ThreadSanitizer
// about the mbuf handoffs it cannot see.
//
// An mbuf that one thread filled reaches another thread through DPDK code
// built without TSan: the rte_ring of net_ring between one port's TX and
// another's RX, and the mempool's ring driver between a free and the next
// alloc (two ports in one process have two port locks, so nothing else
// orders those threads).  The ring's atomics order them, but TSan sees only
// instrumented atomics and locks, and would report every later access to
// the frame as a race.  So each point where an mbuf leaves our code for
// DPDK releases it, and each point where one comes back acquires it: the
// order the ring guarantees, no more.  Without TSan the annotations are
// empty and the helpers are plain rte_pktmbuf_alloc / rte_pktmbuf_free.
#pragma once

#include <rte_mbuf.h>

#include <cstdint>

#if defined(__SANITIZE_THREAD__)
extern "C" void __tsan_acquire(void* addr);
extern "C" void __tsan_release(void* addr);
#endif

namespace ofi_dpdk::net {

// Before mbufs go to DPDK (a TX burst).
inline void handoff_release([[maybe_unused]] rte_mbuf* const* frames,
                            [[maybe_unused]] uint32_t count) {
#if defined(__SANITIZE_THREAD__)
  // Each segment: a lent payload's (lent_payload.h) goes back to the pool
  // from the driver too.
  // (Each `next` read before its segment is released: after the release
  // another thread may take the segment and write it.)
  for (uint32_t i = 0; i < count; ++i)
    for (rte_mbuf* m = frames[i]; m != nullptr;) {
      rte_mbuf* const next = m->next;
      __tsan_release(m);
      m = next;
    }
#endif
}

// After mbufs come from DPDK (an RX burst, an RX callback).
inline void handoff_acquire([[maybe_unused]] rte_mbuf* const* frames,
                            [[maybe_unused]] uint32_t count) {
#if defined(__SANITIZE_THREAD__)
  for (uint32_t i = 0; i < count; ++i) __tsan_acquire(frames[i]);
#endif
}

// rte_pktmbuf_alloc, acquiring the mbuf between the pool's get and the
// header reset.  Returns nullptr when the pool is empty.
inline rte_mbuf* alloc_frame(rte_mempool* pool) {
#if defined(__SANITIZE_THREAD__)
  rte_mbuf* m = rte_mbuf_raw_alloc(pool);
  if (m != nullptr) {
    __tsan_acquire(m);
    rte_pktmbuf_reset(m);
  }
  return m;
#else
  return rte_pktmbuf_alloc(pool);
#endif
}

// rte_pktmbuf_free, releasing each segment after the last write to its
// header and before the pool's put.
inline void free_frame(rte_mbuf* m) {
#if defined(__SANITIZE_THREAD__)
  while (m != nullptr) {
    rte_mbuf* next = m->next;
    rte_mbuf* last_ref = rte_pktmbuf_prefree_seg(m);
    if (last_ref != nullptr) {
      __tsan_release(last_ref);
      rte_mbuf_raw_free(last_ref);
    }
    m = next;
  }
#else
  rte_pktmbuf_free(m);
#endif
}

// The same through `cache`, a mempool cache of the caller's own (one
// user at a time): gets and puts reach the pool's shared ring only once per
// cache's worth, in bulk.  Frames of another pool are freed plainly.
inline rte_mbuf* alloc_frame(rte_mempool* pool, rte_mempool_cache* cache) {
  void* object = nullptr;
  if (rte_mempool_generic_get(pool, &object, 1, cache) != 0) return nullptr;
  auto* m = static_cast<rte_mbuf*>(object);
#if defined(__SANITIZE_THREAD__)
  __tsan_acquire(m);
#endif
  rte_pktmbuf_reset(m);
  return m;
}

inline void free_frame(rte_mbuf* m, rte_mempool* pool, rte_mempool_cache* cache) {
  while (m != nullptr) {
    rte_mbuf* next = m->next;
    rte_mbuf* last_ref = rte_pktmbuf_prefree_seg(m);
    if (last_ref != nullptr) {
#if defined(__SANITIZE_THREAD__)
      __tsan_release(last_ref);
#endif
      if (last_ref->pool == pool)
        rte_mempool_generic_put(pool, reinterpret_cast<void**>(&last_ref), 1, cache);
      else
        rte_mbuf_raw_free(last_ref);
    }
    m = next;
  }
}

}  // namespace ofi_dpdk::net
