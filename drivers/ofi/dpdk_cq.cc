// dpdk_cq.cc: fi_cq.  Reading a CQ drives progress on its port (manual
// progress), then hands out completions in the CQ's format.  Completions
// wait in the CQ as long as needed: none is ever dropped (FI_RM_ENABLED).
#include "drivers/ofi/dpdk_cq.h"

#include <sched.h>

#include <algorithm>
#include <chrono>
#include <climits>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <thread>

#include "drivers/ofi/dpdk_clock.h"
#include "drivers/ofi/dpdk_domain.h"
#include "drivers/ofi/dpdk_fid.h"
#include "drivers/ofi/dpdk_log.h"
#include "drivers/ofi/dpdk_objects.h"
#include "drivers/ofi/dpdk_port.h"
#include "drivers/ofi/dpdk_raw_enum.h"
#include "ofi_dpdk_config.h"  // which libfabric features the headers have

namespace ofi_dpdk::ofi {
namespace {

size_t entry_size(fi_cq_format format) {
  switch (format) {
    case FI_CQ_FORMAT_CONTEXT:
      return sizeof(fi_cq_entry);
    case FI_CQ_FORMAT_MSG:
      return sizeof(fi_cq_msg_entry);
    case FI_CQ_FORMAT_DATA:
      return sizeof(fi_cq_data_entry);
    case FI_CQ_FORMAT_TAGGED:
      return sizeof(fi_cq_tagged_entry);
    default:
      return 0;
  }
}

void write_entry(fi_cq_format format, const Completion& c, void* out) {
  switch (format) {
    case FI_CQ_FORMAT_CONTEXT:
      static_cast<fi_cq_entry*>(out)->op_context = c.op_context;
      break;
    case FI_CQ_FORMAT_MSG:
      *static_cast<fi_cq_msg_entry*>(out) = {c.op_context, c.flags, c.len};
      break;
    case FI_CQ_FORMAT_DATA:
      *static_cast<fi_cq_data_entry*>(out) = {c.op_context, c.flags, c.len, c.buf, c.data};
      break;
    case FI_CQ_FORMAT_TAGGED:
      *static_cast<fi_cq_tagged_entry*>(out) = {c.op_context, c.flags, c.len, c.buf, c.data, c.tag};
      break;
    default:
      break;
  }
}

// How recent a progress pass lets fi_cq_read hand out completions it already
// holds without another one.
constexpr uint64_t kCqFreshProgressNs = 20'000;

// fi_cq_readfrom with the port lock held; *yield: the caller should give
// up its CPU once it dropped the lock (PortContext::idle_poll).
ssize_t take_entries(Cq* cq, uint16_t lane, void* buf, size_t count, fi_addr_t* src_addr,
                     bool* yield) {
  PortContext& port = *cq->domain->port;
  // What the caller asks for is already here, from a pass moments ago: a
  // burst of completions is read without polling the device once per
  // entry (that pass sent its acks; the next read that finds too few, or
  // comes later, makes the next one).
  const uint64_t now = now_ns();
  const bool whole = port.effective_lane(lane) == kWholePort;
  PortContext::LaneState& state = port.lane_state[whole ? 0 : lane];
  const uint64_t since_pass =
      now -
      (whole ? port.last_progress_ns : state.last_progress_ns).load(std::memory_order_relaxed);
  const bool served = cq->errors.empty() && cq->entries.size() >= std::max<size_t>(count, 1) &&
                      since_pass < kCqFreshProgressNs;
  // An empty CQ takes the pass another CQ's read just ran as its own, once
  // per such pass: an application that polls its send and receive CQs in
  // turn then makes one pass per round, not one per read.  A CQ read again
  // with nothing between makes the next pass itself, so whoever polls one
  // CQ alone keeps the port moving, and what arrives after a pass waits at
  // most one read of the round.  (By count, not by clock: the same on a
  // busy machine.)
  const bool passed_for_it = cq->errors.empty() && cq->entries.empty() &&
                             state.last_pass_reader != cq && cq->shared_pass != state.reader_passes;
  uint32_t received = 0;
  if (passed_for_it) {
    cq->shared_pass = state.reader_passes;
    ++state.shared_passes;
  } else if (!served) {
    received = port.progress_if_manual(lane, now);
    ++state.reader_passes;
    state.last_pass_reader = cq;
  }
  const bool found = !cq->errors.empty() || !cq->entries.empty();
  *yield = port.idle_poll(lane, found || received != 0, now);
  if (!cq->errors.empty()) return -FI_EAVAIL;
  if (cq->entries.empty()) return -FI_EAGAIN;
  const size_t size = entry_size(cq->attr.format);
  size_t done = 0;
  for (; done < count && !cq->entries.empty(); ++done) {
    const Completion& c = cq->entries.front();
    write_entry(cq->attr.format, c, static_cast<uint8_t*>(buf) + done * size);
    if (src_addr != nullptr) src_addr[done] = c.source;
    cq->entries.pop_front();
  }
  if (cq->empty()) cq->wait_fd.drain();
  return static_cast<ssize_t>(done);
}

ssize_t cq_readfrom(fid_cq* cq_fid, void* buf, size_t count, fi_addr_t* src_addr) {
  Cq* cq = from_fid<Cq>(cq_fid);
  if (buf == nullptr && count != 0) return -FI_EINVAL;
  bool yield = false;
  ssize_t taken;
  {
    LaneGuard guard(*cq->domain->port, cq->lane);
    taken = take_entries(cq, guard.lane(), buf, count, src_addr, &yield);
  }
  if (yield) sched_yield();
  return taken;
}

ssize_t cq_read(fid_cq* cq, void* buf, size_t count) {
  return cq_readfrom(cq, buf, count, nullptr);
}

ssize_t cq_readerr(fid_cq* cq_fid, fi_cq_err_entry* buf, uint64_t flags) {
  Cq* cq = from_fid<Cq>(cq_fid);
  if (buf == nullptr) return -FI_EINVAL;
  LaneGuard guard(*cq->domain->port, cq->lane);
  if (cq->errors.empty()) return -FI_EAGAIN;
  fi_cq_err_entry entry = cq->errors.front();
  const std::vector<uint8_t>& data = cq->error_data.front();
  // fi_cq(3): err_data goes into the application's buffer when it gives
  // one (err_data_size > 0, API 1.5 and later); otherwise err_data points
  // at ours, valid until the next read call on this CQ.
  const bool into_caller = FI_VERSION_GE(cq->domain->api_version, FI_VERSION(1, 5)) &&
                           buf->err_data_size > 0 && buf->err_data != nullptr;
  if (into_caller) {
    const size_t n = std::min(buf->err_data_size, data.size());
    if (n > 0) std::memcpy(buf->err_data, data.data(), n);
    entry.err_data = buf->err_data;
    entry.err_data_size = n;
  } else if (data.empty()) {
    entry.err_data = nullptr;
    entry.err_data_size = 0;
  } else {
    cq->err_data_out = data;
    entry.err_data = cq->err_data_out.data();
    entry.err_data_size = cq->err_data_out.size();
  }
  // Applications of API 1.4 and older pass the shorter struct without
  // err_data_size; write only what they allocated.
  if (FI_VERSION_LT(cq->domain->api_version, FI_VERSION(1, 5))) {
    std::memcpy(buf, &entry, offsetof(fi_cq_err_entry, err_data_size));
  } else {
#if OFI_DPDK_HAVE_CQ_ERR_SRC_ADDR
    // src_addr came with API 1.20; older applications' struct ends before
    // it.  fi_cq(3): for FI_EADDRNOTAVAIL (FI_SOURCE_ERR) it is the key
    // handle, or its user id, the data came with (FI_AV_AUTH_KEY domains),
    // else FI_ADDR_NOTAVAIL; the endpoint pushed that as the error's source.
    // Other errors report none.
    if (FI_VERSION_GE(cq->domain->api_version, FI_VERSION(1, 20))) {
      entry.src_addr = entry.err == FI_EADDRNOTAVAIL ? cq->error_sources.front() : FI_ADDR_NOTAVAIL;
      *buf = entry;
    } else {
      std::memcpy(buf, &entry, offsetof(fi_cq_err_entry, src_addr));
    }
#else
    *buf = entry;
#endif
  }
  if (!(flags & FI_PEEK)) {
    cq->errors.pop_front();
    cq->error_sources.pop_front();
    cq->error_data.pop_front();
    if (cq->empty()) cq->wait_fd.drain();
  }
  return 1;
}

size_t ready(Cq* cq) {
  LaneGuard guard(*cq->domain->port, cq->lane);
  cq->domain->port->progress_if_manual(guard.lane(), now_ns());
  return cq->errors.empty() ? cq->entries.size() : SIZE_MAX;
}

// fi_cq(3): blocks until a completion is there (with FI_CQ_COND_THRESHOLD,
// until `cond` of them are, or an error), fi_cq_signal, or the timeout
// (-FI_EAGAIN).  With a descriptor the progress loop fills the CQ and we
// sleep on it; without, the caller's thread drives progress.
ssize_t cq_sreadfrom(fid_cq* cq_fid, void* buf, size_t count, fi_addr_t* src_addr, const void* cond,
                     int timeout) {
  Cq* cq = from_fid<Cq>(cq_fid);
  if (cq->attr.wait_obj == FI_WAIT_NONE) return -FI_EINVAL;
  size_t threshold = 1;
  // fi_cq(3): with FI_CQ_COND_THRESHOLD "the cond field is interpreted as
  // a size_t threshold value" -- the pointer's value itself, at most count.
  if (cq->attr.wait_cond == FI_CQ_COND_THRESHOLD)
    threshold =
        std::clamp<size_t>(reinterpret_cast<uintptr_t>(cond), 1, std::max<size_t>(count, 1));
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout);
  for (;;) {
    if (cq->signaled.exchange(false)) return -FI_EAGAIN;
    if (ready(cq) >= threshold) return cq_readfrom(cq_fid, buf, count, src_addr);
    const auto now = std::chrono::steady_clock::now();
    if (timeout >= 0 && now >= deadline) return -FI_EAGAIN;
    if (cq->wait_fd.is_open()) {
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - now);
      // Short naps: the threshold and fi_cq_signal are checked between them.
      cq->wait_fd.wait(timeout < 0 ? 10
                                   : static_cast<int>(std::min<int64_t>(left.count() + 1, 10)));
    } else {
      std::this_thread::yield();
    }
  }
}

ssize_t cq_sread(fid_cq* cq, void* buf, size_t count, const void* cond, int timeout) {
  return cq_sreadfrom(cq, buf, count, nullptr, cond, timeout);
}

// prov_errno is one of the transport's ProvErrno values, or an fi_errno.
const char* cq_strerror(fid_cq*, int prov_errno, const void*, char* buf, size_t len) {
  const char* text = proto::prov_errno_known(prov_errno) ? proto::prov_errno_text(prov_errno)
                                                         : fi_strerror(prov_errno);
  if (buf != nullptr && len > 0) {
    std::strncpy(buf, text, len - 1);
    buf[len - 1] = '\0';
    return buf;
  }
  return text;
}

int cq_signal(fid_cq* cq_fid) {
  Cq* cq = from_fid<Cq>(cq_fid);
  cq->signaled.store(true);
  cq->wait_fd.signal();
  return 0;
}

int cq_control(fid* fid, int command, void* arg) {
  Cq* cq = from_fid<Cq>(fid);
  return wait_control(cq->attr.wait_obj, cq->wait_fd, command, arg);
}

int cq_close(fid* fid) {
  Cq* cq = from_fid<Cq>(fid);
  if (cq->refs.load() != 0) return -FI_EBUSY;
  if (cq->wait_fd.is_open()) auto_progress_remove(cq->domain->port.get());
  if (cq->attr.wait_set != nullptr) leave_wait_set(cq->attr.wait_set, &cq->fid.fid);
  cq->domain->refs--;
  delete cq;
  return 0;
}

fi_ops g_cq_fid_ops = {
    .size = sizeof(fi_ops),
    .close = cq_close,
    .bind = DPDK_ENOSYS(fi_ops, bind),
    .control = cq_control,
    .ops_open = DPDK_ENOSYS(fi_ops, ops_open),
    .tostr = DPDK_ENOSYS(fi_ops, tostr),
    .ops_set = DPDK_ENOSYS(fi_ops, ops_set),
};

fi_ops_cq g_cq_ops = {
    .size = sizeof(fi_ops_cq),
    .read = cq_read,
    .readfrom = cq_readfrom,
    .readerr = cq_readerr,
    .sread = cq_sread,
    .sreadfrom = cq_sreadfrom,
    .signal = cq_signal,
    .strerror = cq_strerror,
};

}  // namespace

int cq_open(fid_domain* domain_fid, fi_cq_attr* attr, fid_cq** out, void* context) {
  if (attr == nullptr) return -FI_EINVAL;
  fi_cq_attr wanted = *attr;
  const auto format = raw_value(wanted.format);
  if (format == FI_CQ_FORMAT_UNSPEC)
    wanted.format = FI_CQ_FORMAT_CONTEXT;
  else if (format < FI_CQ_FORMAT_CONTEXT || format > FI_CQ_FORMAT_TAGGED)
    return -FI_ENOSYS;
  if (entry_size(wanted.format) == 0) return -FI_ENOSYS;
  if (!wait_object_supported(wanted.wait_obj, wanted.wait_set)) {
    DPDK_INFO(FI_LOG_CQ,
              "CQ wait object %d not supported: FI_WAIT_NONE, UNSPEC, YIELD, FD, or SET with "
              "a wait set of this provider\n",
              wanted.wait_obj);
    return -FI_ENOSYS;
  }
  if (wanted.wait_cond != FI_CQ_COND_NONE && wanted.wait_cond != FI_CQ_COND_THRESHOLD)
    return -FI_EINVAL;
  auto* cq = new (std::nothrow) Cq();
  if (cq == nullptr) return -FI_ENOMEM;
  cq->attr = wanted;
  if (wanted.size != 0) cq->capacity = wanted.size;
  cq->entries.reserve(cq->capacity);
  cq->domain = from_fid<Domain>(domain_fid);
  if (wanted.wait_obj != FI_WAIT_SET) wanted.wait_set = nullptr;
  cq->attr.wait_set = wanted.wait_set;
  // Whole before a wait set can see it (join_wait_set).
  cq->fid.fid.fclass = FI_CLASS_CQ;
  cq->fid.fid.context = context;
  cq->fid.fid.ops = &g_cq_fid_ops;
  cq->fid.ops = &g_cq_ops;
  const int opened = wanted.wait_obj == FI_WAIT_FD ? cq->wait_fd.open()
                     : wanted.wait_obj == FI_WAIT_SET
                         ? join_wait_set(wanted.wait_set, &cq->fid.fid, &cq->wait_fd)
                         : 0;
  if (opened != 0) {
    delete cq;
    return opened;
  }
  // An application asleep on the descriptor makes no calls: the progress
  // loop must fill the CQ meanwhile.
  if (cq->wait_fd.is_open()) auto_progress_add(cq->domain->port.get());
  cq->domain->refs++;
  *out = &cq->fid;
  return 0;
}

}  // namespace ofi_dpdk::ofi
