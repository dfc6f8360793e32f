// dpdk_cq.h: the completion queue (dpdk_cq.cc) and the completions it keeps.
#pragma once

#include <rdma/fabric.h>
#include <rdma/fi_eq.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <utility>
#include <vector>

#include "drivers/ofi/dpdk_cq_ring.h"
#include "drivers/ofi/dpdk_limits.h"
#include "drivers/ofi/dpdk_port_lock.h"
#include "drivers/ofi/dpdk_wait.h"

namespace ofi_dpdk::ofi {

struct Domain;

// A completion as the provider keeps it until the application reads it.
struct Completion {
  void* op_context;
  uint64_t flags;
  size_t len;
  void* buf;
  uint64_t data;
  uint64_t tag;
  fi_addr_t source;
};

struct Cq {
  fid_cq fid;
  Domain* domain;
  fi_cq_attr attr;
  Ring<Completion> entries;  // reserved for attr.size at fi_cq_open
  std::deque<fi_cq_err_entry> errors;
  std::deque<fi_addr_t> error_sources;
  // Per error entry, its err_data (FI_SOURCE_ERR: the sender's address);
  // err_data_out holds the last one fi_cq_readerr lent the application.
  std::deque<std::vector<uint8_t>> error_data;
  std::vector<uint8_t> err_data_out;
  std::atomic<int> refs{0};
  // The lane of the endpoints bound to it (PortContext::assign_lanes): the
  // lock a read takes and the queues its progress polls.
  std::atomic<uint16_t> lane{kWholePort};
  // fi_cq(3) attr.size (kDefaultCqSize for 0), a minimum: completions of
  // operations that were posted are never refused nor lost, past it too
  // (they are bounded by the endpoints' queue depths, tx_attr and
  // rx_attr->size); refusing posts while the CQ held its size of them
  // deadlocked Open MPI's OFI MTL, whose CQ holds 100 while it posts
  // receives for answers to requests it has not sent yet.  What no posted
  // operation stands for, remote CQ data, is refused past it (full()).
  // Port lock held.
  size_t capacity = kDefaultCqSize;
  bool full() const { return entries.size() + errors.size() >= capacity; }
  WaitFd wait_fd;                     // FI_WAIT_FD: readable while not empty
  std::atomic<bool> signaled{false};  // fi_cq_signal: the next sread returns
  // The lane pass (LaneState::reader_passes) whose progress a read of this
  // CQ last took as its own instead of making one (take_entries).  Lane
  // lock held.
  uint64_t shared_pass = 0;

  bool empty() const { return entries.empty() && errors.empty(); }
  void push(const Completion& completion) {
    if (empty()) wait_fd.signal();
    entries.push_back(completion);
  }
  void push_error(const fi_cq_err_entry& error, fi_addr_t source,
                  std::vector<uint8_t> err_data = {}) {
    if (empty()) wait_fd.signal();
    errors.push_back(error);
    error_sources.push_back(source);
    error_data.push_back(std::move(err_data));
  }
};

}  // namespace ofi_dpdk::ofi
