// dpdk_eq.h: the event queue (dpdk_eq.cc).
#pragma once

#include <rdma/fi_eq.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <vector>

#include "drivers/ofi/dpdk_wait.h"

namespace ofi_dpdk::ofi {

struct Fabric;
struct PortContext;

struct Eq {
  fid_eq fid;
  Fabric* fabric;
  fi_eq_attr attr;
  std::mutex lock;
  struct Event {
    uint32_t type;
    std::vector<uint8_t> data;
  };
  std::deque<Event> events;
  std::deque<fi_eq_err_entry> errors;
  // Per error entry, its err_data (a refused connection's data);
  // err_data_out holds the last one fi_eq_readerr lent the application.
  std::deque<std::vector<uint8_t>> error_data;
  std::vector<uint8_t> err_data_out;
  // The ports of the FI_EP_MSG endpoints and passive endpoints bound to
  // it: reading the EQ progresses them (connection events arrive there),
  // one entry per binding.  Under `lock`.
  std::vector<std::shared_ptr<PortContext>> watched;
  void watch(std::shared_ptr<PortContext> port);
  void unwatch(const PortContext* port);
  // Runs a progress pass on each watched port (manual progress); takes
  // each port's lock, never the EQ's while holding one.
  void progress_watched();
  std::atomic<int> refs{0};
  // FI_WAIT_FD: readable while an event or error is queued; whoever writes
  // an entry (an fi_* call, or a progress pass with a connection event)
  // signals it.
  WaitFd wait_fd;

  // Provider-made entries (dpdk_eq.cc); each takes the EQ lock.  Return
  // -FI_ENOMEM when the entry could not be queued.
  int push_event(uint32_t type, const void* data, size_t len);
  int push_error(const fi_eq_err_entry& error, std::vector<uint8_t> err_data = {});
};

}  // namespace ofi_dpdk::ofi
