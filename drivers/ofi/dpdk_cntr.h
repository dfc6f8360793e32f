// dpdk_cntr.h: the counter object (dpdk_cntr.cc).
#pragma once

#include <rdma/fi_domain.h>
#include <rdma/fi_eq.h>

#include <atomic>
#include <cstdint>

#include "drivers/ofi/dpdk_port_lock.h"
#include "drivers/ofi/dpdk_wait.h"

namespace ofi_dpdk::ofi {

struct Domain;

struct Cntr {
  fid_cntr fid;
  Domain* domain;
  fi_cntr_attr attr;
  std::atomic<uint64_t> value{0};
  std::atomic<uint64_t> errors{0};
  WaitFd wait_fd;  // FI_WAIT_FD: signalled on every change
  std::atomic<int> refs{0};
  std::atomic<uint16_t> lane{kWholePort};  // as Cq::lane
  uint64_t total_read = 0;                 // value + errors at the last read; port lock

  void add(uint64_t n) {
    value.fetch_add(n);
    wait_fd.signal();
  }
  void add_error(uint64_t n) {
    errors.fetch_add(n);
    wait_fd.signal();
  }
};

}  // namespace ofi_dpdk::ofi
