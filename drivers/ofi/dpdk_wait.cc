// dpdk_wait.cc: eventfd wait objects (see dpdk_wait.h).
#include "drivers/ofi/dpdk_wait.h"

#include <fcntl.h>
#include <poll.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_errno.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <cerrno>

namespace ofi_dpdk::ofi {

WaitFd::~WaitFd() {
  if (fd_ >= 0) ::close(fd_);
}

int WaitFd::open() {
  fd_ = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  return fd_ >= 0 ? 0 : -errno;
}

int WaitFd::share(const WaitFd& other) {
  if (other.fd_ < 0) return 0;  // a wait set without a descriptor (FI_WAIT_YIELD)
  fd_ = ::fcntl(other.fd_, F_DUPFD_CLOEXEC, 0);
  if (fd_ < 0) return -errno;
  shared_ = true;
  return 0;
}

void WaitFd::signal() {
  if (fd_ < 0) return;
  const uint64_t one = 1;
  // EAGAIN means the count is at its limit: readable already.
  [[maybe_unused]] const ssize_t written = ::write(fd_, &one, sizeof(one));
}

void WaitFd::drain() {
  if (fd_ < 0 || shared_) return;
  uint64_t count;
  [[maybe_unused]] const ssize_t got = ::read(fd_, &count, sizeof(count));
}

bool WaitFd::wait(int timeout_ms) const {
  if (fd_ < 0) return false;
  pollfd entry{fd_, POLLIN, 0};
  int ret;
  do {
    ret = ::poll(&entry, 1, timeout_ms);
  } while (ret < 0 && errno == EINTR);
  return ret > 0;
}

int wait_control(fi_wait_obj wait_obj, const WaitFd& fd, int command, void* arg) {
  switch (command) {
    case FI_GETWAIT:
      if (arg == nullptr) return -FI_EINVAL;
      if (!fd.is_open()) return -FI_ENODATA;
      *static_cast<int*>(arg) = fd.fd();
      return 0;
    case FI_GETWAITOBJ:
      if (arg == nullptr) return -FI_EINVAL;
      *static_cast<fi_wait_obj*>(arg) = wait_obj;
      return 0;
    default:
      return -FI_ENOSYS;
  }
}

}  // namespace ofi_dpdk::ofi
