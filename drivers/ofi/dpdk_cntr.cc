// dpdk_cntr.cc: fi_cntr.  A counter counts the successful completions (and,
// in its error value, the failed ones) of the endpoints it is bound to,
// whether or not they also produce a CQ entry: Endpoint::flush bumps it as
// the transport's completions come out.  Reading or waiting drives manual
// progress on the counter's port, as fi_cq_read does.
#include "drivers/ofi/dpdk_cntr.h"

#include <sched.h>

#include <chrono>
#include <thread>

#include "drivers/ofi/dpdk_clock.h"
#include "drivers/ofi/dpdk_domain.h"
#include "drivers/ofi/dpdk_fid.h"
#include "drivers/ofi/dpdk_log.h"
#include "drivers/ofi/dpdk_objects.h"
#include "drivers/ofi/dpdk_port.h"

namespace ofi_dpdk::ofi {
namespace {

void progress_port(Cntr* cntr) {
  PortContext& port = *cntr->domain->port;
  if (port.auto_progress_users.load(std::memory_order_relaxed) != 0) return;
  LaneGuard guard(port, cntr->lane);
  port.progress_lane(guard.lane(), now_ns());
}

// A read of the counter: progress on its port (manual progress), and a
// yield of the CPU when polling it finds nothing new for a while
// (PortContext::idle_poll).
uint64_t read_value(Cntr* cntr, const std::atomic<uint64_t>& value) {
  PortContext& port = *cntr->domain->port;
  bool yield = false;
  if (port.auto_progress_users.load(std::memory_order_relaxed) == 0) {
    LaneGuard guard(port, cntr->lane);
    const uint64_t now = now_ns();
    const uint32_t received = port.progress_lane(guard.lane(), now);
    const uint64_t total = cntr->value.load() + cntr->errors.load();
    const bool moved = total != cntr->total_read;
    cntr->total_read = total;
    yield = port.idle_poll(guard.lane(), moved || received != 0, now);
  }
  // Drained before the load: a change after it signals again, so a
  // caller's fi_trywait never sleeps past a value it has not read.
  cntr->wait_fd.drain();
  const uint64_t seen = value.load();
  if (yield) sched_yield();
  return seen;
}

uint64_t cntr_read(fid_cntr* fid) {
  Cntr* cntr = from_fid<Cntr>(fid);
  return read_value(cntr, cntr->value);
}

uint64_t cntr_readerr(fid_cntr* fid) {
  Cntr* cntr = from_fid<Cntr>(fid);
  return read_value(cntr, cntr->errors);
}

// A value the application gave may reach a triggered operation's
// threshold: the counter's port posts the ones that are due.
void run_due_triggers(Cntr* cntr) {
  PortContext& port = *cntr->domain->port;
  std::lock_guard guard(port.lock);
  if (!port.triggered.empty()) port.run_due_triggers();
}

int cntr_add(fid_cntr* fid, uint64_t value) {
  Cntr* cntr = from_fid<Cntr>(fid);
  cntr->add(value);
  run_due_triggers(cntr);
  return 0;
}

int cntr_adderr(fid_cntr* fid, uint64_t value) {
  from_fid<Cntr>(fid)->add_error(value);
  return 0;
}

int cntr_set(fid_cntr* fid, uint64_t value) {
  Cntr* cntr = from_fid<Cntr>(fid);
  cntr->value.store(value);
  cntr->wait_fd.signal();
  run_due_triggers(cntr);
  return 0;
}

int cntr_seterr(fid_cntr* fid, uint64_t value) {
  Cntr* cntr = from_fid<Cntr>(fid);
  cntr->errors.store(value);
  cntr->wait_fd.signal();
  return 0;
}

// fi_cntr(3): returns once value >= threshold (0), when the error value
// changes (-FI_EAVAIL, so the caller looks at fi_cntr_readerr), or at the
// timeout (-FI_ETIMEDOUT).  fi_cntr(3) calls a wait on a counter without a
// wait object (FI_WAIT_NONE) invalid; we poll for it as for FI_WAIT_YIELD,
// since progress is ours to drive anyway and programs do call it (fabtests'
// fi_multi_mr and fi_rdm_rma_trigger, on counters opened FI_WAIT_NONE).
int cntr_wait(fid_cntr* fid, uint64_t threshold, int timeout) {
  Cntr* cntr = from_fid<Cntr>(fid);
  const uint64_t errors_before = cntr->errors.load();
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout);
  for (;;) {
    progress_port(cntr);
    if (cntr->value.load() >= threshold) return 0;
    if (cntr->errors.load() != errors_before) return -FI_EAVAIL;
    const auto now = std::chrono::steady_clock::now();
    if (timeout >= 0 && now >= deadline) return -FI_ETIMEDOUT;
    if (cntr->wait_fd.is_open()) {
      // The progress loop signals the descriptor; sleep on it.
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - now);
      cntr->wait_fd.wait(timeout < 0 ? 10
                                     : static_cast<int>(std::min<int64_t>(left.count() + 1, 10)));
      cntr->wait_fd.drain();
    } else {
      std::this_thread::yield();
    }
  }
}

int cntr_close(fid* fid) {
  Cntr* cntr = from_fid<Cntr>(fid);
  if (cntr->refs.load() != 0) return -FI_EBUSY;
  if (cntr->wait_fd.is_open()) auto_progress_remove(cntr->domain->port.get());
  if (cntr->attr.wait_set != nullptr) leave_wait_set(cntr->attr.wait_set, &cntr->fid.fid);
  cntr->domain->refs--;
  delete cntr;
  return 0;
}

int cntr_control(fid* fid, int command, void* arg) {
  Cntr* cntr = from_fid<Cntr>(fid);
  return wait_control(cntr->attr.wait_obj, cntr->wait_fd, command, arg);
}

fi_ops g_cntr_fid_ops = {
    .size = sizeof(fi_ops),
    .close = cntr_close,
    .bind = DPDK_ENOSYS(fi_ops, bind),
    .control = cntr_control,
    .ops_open = DPDK_ENOSYS(fi_ops, ops_open),
    .tostr = DPDK_ENOSYS(fi_ops, tostr),
    .ops_set = DPDK_ENOSYS(fi_ops, ops_set),
};

fi_ops_cntr g_cntr_ops = {
    .size = sizeof(fi_ops_cntr),
    .read = cntr_read,
    .readerr = cntr_readerr,
    .add = cntr_add,
    .set = cntr_set,
    .wait = cntr_wait,
    .adderr = cntr_adderr,
    .seterr = cntr_seterr,
};

}  // namespace

int cntr_open(fid_domain* domain_fid, fi_cntr_attr* attr, fid_cntr** out, void* context) {
  if (domain_fid == nullptr || out == nullptr) return -FI_EINVAL;
  fi_cntr_attr wanted{};
  wanted.events = FI_CNTR_EVENTS_COMP;
  wanted.wait_obj = FI_WAIT_NONE;  // fi_cntr(3): the default
  if (attr != nullptr) wanted = *attr;
  if (wanted.events != FI_CNTR_EVENTS_COMP) return -FI_EINVAL;
  if (wanted.flags != 0) return -FI_EINVAL;
  if (!wait_object_supported(wanted.wait_obj, wanted.wait_set)) {
    DPDK_INFO(FI_LOG_CNTR,
              "counter wait object %d not supported: FI_WAIT_NONE, UNSPEC, YIELD, FD, or SET "
              "with a wait set of this provider\n",
              wanted.wait_obj);
    return -FI_ENOSYS;
  }
  auto* cntr = new (std::nothrow) Cntr();
  if (cntr == nullptr) return -FI_ENOMEM;
  cntr->attr = wanted;
  cntr->domain = from_fid<Domain>(domain_fid);
  if (wanted.wait_obj != FI_WAIT_SET) cntr->attr.wait_set = nullptr;
  // Whole before a wait set can see it (join_wait_set).
  cntr->fid.fid.fclass = FI_CLASS_CNTR;
  cntr->fid.fid.context = context;
  cntr->fid.fid.ops = &g_cntr_fid_ops;
  cntr->fid.ops = &g_cntr_ops;
  const int opened = wanted.wait_obj == FI_WAIT_FD ? cntr->wait_fd.open()
                     : wanted.wait_obj == FI_WAIT_SET
                         ? join_wait_set(wanted.wait_set, &cntr->fid.fid, &cntr->wait_fd)
                         : 0;
  if (opened != 0) {
    delete cntr;
    return opened;
  }
  // Nothing else would progress the port while the application sleeps on
  // the descriptor.
  if (cntr->wait_fd.is_open()) auto_progress_add(cntr->domain->port.get());
  cntr->domain->refs++;
  *out = &cntr->fid;
  return 0;
}

}  // namespace ofi_dpdk::ofi
