// unmap_guard.h: keeps a driver from unmapping its shared memory while one
// of our threads is inside a burst on it.
//
// net_memif (22.11 and 24.11) tears a connection down on EAL's interrupt
// thread the moment its peer's socket closes: it marks the port
// disconnected, then munmap()s the regions that hold its rings and buffers.
// A poller that checked the mark just before is still reading and writing
// those rings, and faults (multiproc_peer_death saw it about once in 15
// runs).  The driver gives no event to wait on, so the guard stands in its
// munmap: the driver's call to munmap is redirected, through its own import
// table, to a function that first waits until no guarded burst is in
// flight.  A burst that starts after that sees the disconnected mark and
// touches nothing.  A burst costs two plain stores to a slot of the thread's
// own; the unmapping thread pays a membarrier(2).
#pragma once

#include <cstddef>

namespace ofi_dpdk::net {

// Redirects the munmap calls of the loaded shared object whose file name
// contains `library` (e.g. "librte_net_memif.so").  Idempotent per library.
// Returns false when no such object is loaded or its imports could not be
// changed (a static DPDK build): bursts then go unguarded.
bool guard_unmaps_of(const char* library);

struct BurstSlot;

// Marks this thread inside a burst on a guarded device while it lives.
// (Inline: an unguarded device, every one but memif, pays a test.)
class GuardedBurst {
 public:
  explicit GuardedBurst(bool guarded) : guarded_(guarded) {
    if (guarded_) enter();
  }
  ~GuardedBurst() {
    if (guarded_) leave();
  }
  GuardedBurst(const GuardedBurst&) = delete;
  GuardedBurst& operator=(const GuardedBurst&) = delete;

 private:
  void enter();
  void leave();
  bool guarded_;
  BurstSlot* slot_ = nullptr;  // this thread's; nullptr: the shared counter
};

// What the redirected munmap does; exposed for the unit test.
int guarded_munmap(void* address, size_t length);

}  // namespace ofi_dpdk::net
