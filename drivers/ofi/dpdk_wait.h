// dpdk_wait.h: the wait objects behind FI_WAIT_FD and FI_WAIT_UNSPEC on CQs
// and counters.  DPDK queues raise no interrupt, so nothing wakes a blocked
// application by itself: an object with a file descriptor puts its port in
// the progress loop (dpdk_auto_progress.cc), and the loop signals the
// descriptor (an eventfd) when it queues a completion or bumps a counter.
#pragma once

#include <rdma/fabric.h>
#include <rdma/fi_eq.h>

#include <cstdint>

namespace ofi_dpdk::ofi {

struct PortContext;

class WaitFd {
 public:
  WaitFd() = default;
  WaitFd(const WaitFd&) = delete;
  WaitFd& operator=(const WaitFd&) = delete;
  ~WaitFd();

  // Creates the eventfd (non-blocking); 0 or -FI_errno.
  int open();
  bool is_open() const { return fd_ >= 0; }
  int fd() const { return fd_; }
  // Makes the descriptor readable (level-triggered until drain()).
  void signal();
  // Makes it unreadable again: the object it stands for has nothing left.
  void drain();
  // Waits until readable or `timeout_ms` passes (<0: forever).  True when
  // readable.
  bool wait(int timeout_ms) const;

 private:
  int fd_ = -1;
};

// Which wait objects a CQ or counter takes: FI_WAIT_NONE, FI_WAIT_UNSPEC,
// FI_WAIT_YIELD and FI_WAIT_FD.  Wait sets and mutex/cond pairs are not
// built.
inline bool wait_object_supported(fi_wait_obj wait_obj) {
  return wait_obj == FI_WAIT_NONE || wait_obj == FI_WAIT_UNSPEC || wait_obj == FI_WAIT_YIELD ||
         wait_obj == FI_WAIT_FD;
}

// fi_control(FI_GETWAIT / FI_GETWAITOBJ) for an object with `wait_obj`
// and `fd`: 0, -FI_ENODATA without a descriptor, -FI_ENOSYS for other
// commands.
int wait_control(fi_wait_obj wait_obj, const WaitFd& fd, int command, void* arg);

}  // namespace ofi_dpdk::ofi
