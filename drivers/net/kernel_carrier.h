// kernel_carrier.h: whether the kernel interface under a port has its link.
//
// net_af_packet and net_af_xdp call their link up from the port's start to
// its stop whatever the interface does: `ip link set IF down`, or a veth
// whose peer went down (no carrier), leaves the driver saying "up" while
// every frame sent is dropped.  The port asks the kernel too: the
// interface is up (IFF_UP) and has its carrier (IFF_RUNNING).
#pragma once

#include <string>

namespace ofi_dpdk::net {

class KernelCarrier {
 public:
  // For interface `name`; an invalid carrier (valid() false) where no
  // socket can be had or the name does not fit, which then says "up".
  explicit KernelCarrier(const std::string& name);
  ~KernelCarrier();
  KernelCarrier(const KernelCarrier&) = delete;
  KernelCarrier& operator=(const KernelCarrier&) = delete;

  bool valid() const { return fd_ >= 0; }
  // One SIOCGIFFLAGS: up and running.  An interface that is gone, or an
  // ioctl that fails, is not up.
  bool up() const;

 private:
  int fd_ = -1;
  char name_[16] = {};  // IFNAMSIZ
};

}  // namespace ofi_dpdk::net
