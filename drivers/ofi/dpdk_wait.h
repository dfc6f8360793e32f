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
  // Makes this a second descriptor of `other`'s eventfd (a wait set's, for
  // a CQ, counter or EQ bound to it): a signal through either is a signal
  // of both.  0 or -FI_errno.
  int share(const WaitFd& other);
  bool is_open() const { return fd_ >= 0; }
  int fd() const { return fd_; }
  // Makes the descriptor readable (level-triggered until drain()).
  void signal();
  // Makes it unreadable again: the object it stands for has nothing left.
  // A shared descriptor (share()) is not drained by its member: another
  // member's signal may be in it; the wait set drains it.
  void drain();
  // Waits until readable or `timeout_ms` passes (<0: forever).  True when
  // readable.
  bool wait(int timeout_ms) const;

 private:
  int fd_ = -1;
  bool shared_ = false;
};

// Which wait objects a CQ, counter or EQ takes: FI_WAIT_NONE,
// FI_WAIT_UNSPEC, FI_WAIT_YIELD, FI_WAIT_FD, and FI_WAIT_SET with a wait
// set of ours.  Mutex/cond pairs and FI_WAIT_POLLFD are not built.
bool wait_object_supported(fi_wait_obj wait_obj, const fid_wait* wait_set = nullptr);

// Wait sets (fi_poll(3), dpdk_wait_set.cc).  fi_wait_open:
int wait_open(fid_fabric* fabric, fi_wait_attr* attr, fid_wait** waitset);
// An object opened with FI_WAIT_SET joins its set: `fd` becomes a second
// descriptor of the set's (when it has one), and the set counts the
// object; fi_close of the set is -FI_EBUSY until every member left.
// 0, or -FI_ENOMEM.
int join_wait_set(fid_wait* set, fid* member, WaitFd* fd);
void leave_wait_set(fid_wait* set, fid* member);
// fi_trywait for a wait set: -FI_EAGAIN when a member has something.
int wait_set_trywait(fid* set);

// fi_control(FI_GETWAIT / FI_GETWAITOBJ) for an object with `wait_obj`
// and `fd`: 0, -FI_ENODATA without a descriptor, -FI_ENOSYS for other
// commands.
int wait_control(fi_wait_obj wait_obj, const WaitFd& fd, int command, void* arg);

}  // namespace ofi_dpdk::ofi
