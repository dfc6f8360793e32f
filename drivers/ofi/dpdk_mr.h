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
  // Its memory, access and offset are its entry in Domain::regions (by
  // fid.key), which close takes out.
  // fi_mr_bind(FI_REMOTE_WRITE): counts remote writes and atomics that modify
  // the region (through endpoints with FI_RMA_EVENT).  Set under the
  // whole port lock (as Domain::regions); holds a reference.
  Cntr* remote_write_cntr = nullptr;
};

}  // namespace ofi_dpdk::ofi
