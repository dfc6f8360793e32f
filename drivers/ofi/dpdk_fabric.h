// dpdk_fabric.h: the fabric object (dpdk_fabric.cc).
#pragma once

#include <rdma/fabric.h>

#include <atomic>

namespace ofi_dpdk::ofi {

struct Fabric {
  fid_fabric fid;
  std::atomic<int> refs{0};
};

}  // namespace ofi_dpdk::ofi
