// kernel_carrier.cc: the kernel interface's IFF_UP and IFF_RUNNING
// (kernel_carrier.h).
#include "drivers/net/kernel_carrier.h"

#include <net/if.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstring>

namespace ofi_dpdk::net {

static_assert(sizeof(ifreq{}.ifr_name) == 16);

KernelCarrier::KernelCarrier(const std::string& name) {
  if (name.empty() || name.size() >= sizeof(name_)) return;
  std::memcpy(name_, name.data(), name.size());
  fd_ = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
}

KernelCarrier::~KernelCarrier() {
  if (fd_ >= 0) close(fd_);
}

bool KernelCarrier::up() const {
  if (fd_ < 0) return true;
  ifreq request{};
  std::memcpy(request.ifr_name, name_, sizeof(name_));
  if (ioctl(fd_, SIOCGIFFLAGS, &request) != 0) return false;
  const short flags = request.ifr_flags;
  return (flags & IFF_UP) != 0 && (flags & IFF_RUNNING) != 0;
}

}  // namespace ofi_dpdk::net
