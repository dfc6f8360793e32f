// dpdk_mr.h: the memory region (dpdk_mr.cc).
#pragma once

#include <rdma/fi_domain.h>

#include <cstddef>
#include <cstdint>

namespace ofi_dpdk::ofi {

struct Domain;
struct Cntr;

struct Mr {
  fid_mr fid;
  Domain* domain;
  const void* addr;
  size_t len;
  uint64_t access;
  uint64_t offset;  // fi_mr_reg's offset: the remote address of addr without FI_MR_VIRT_ADDR
  // fi_mr_bind(FI_REMOTE_WRITE): counts remote writes and atomics that modify
  // the region (through endpoints with FI_RMA_EVENT).  Set under the
  // whole port lock (as Domain::regions); holds a reference.
  Cntr* remote_write_cntr = nullptr;
};

}  // namespace ofi_dpdk::ofi
