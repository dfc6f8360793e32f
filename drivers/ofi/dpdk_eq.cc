// dpdk_eq.cc: fi_eq.  Events are written by the provider (asynchronous AV
// inserts: per failed address an error entry whose data is the address's
// index within the call, then one FI_AV_COMPLETE; connection management of
// FI_EP_MSG endpoints, dpdk_cm.cc) or by the application with
// fi_eq_write.  Connection events arrive through a port: reading the EQ
// progresses the ports of the endpoints bound to it.  Errors are read first: fi_eq_read returns
// -FI_EAVAIL while any is queued.  fi_eq_sread sleeps on the FI_WAIT_FD descriptor when the EQ has
// one, and naps between checks otherwise.
#include "drivers/ofi/dpdk_eq.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <new>
#include <thread>

#include "drivers/ofi/dpdk_fabric.h"
#include "drivers/ofi/dpdk_fid.h"
#include "drivers/ofi/dpdk_log.h"
#include "drivers/ofi/dpdk_objects.h"
#include "drivers/ofi/dpdk_port_lock.h"

namespace ofi_dpdk::ofi {

int Eq::push_event(uint32_t type, const void* data, size_t len) {
  const auto* bytes = static_cast<const uint8_t*>(data);
  try {
    std::lock_guard guard(lock);
    events.push_back({type, std::vector<uint8_t>(bytes, bytes + len)});
    wait_fd.signal();
  } catch (const std::bad_alloc&) {
    DPDK_WARN(FI_LOG_EQ, "EQ event %u lost: out of memory\n", type);
    return -FI_ENOMEM;
  }
  return 0;
}

int Eq::push_error(const fi_eq_err_entry& error, std::vector<uint8_t> err_data) {
  try {
    std::lock_guard guard(lock);
    // Both or neither: readerr pairs them by position.
    error_data.push_back(std::move(err_data));
    try {
      errors.push_back(error);
    } catch (const std::bad_alloc&) {
      error_data.pop_back();
      throw;
    }
    wait_fd.signal();
  } catch (const std::bad_alloc&) {
    DPDK_WARN(FI_LOG_EQ, "EQ error entry lost: out of memory\n");
    return -FI_ENOMEM;
  }
  return 0;
}

void Eq::watch(std::shared_ptr<PortContext> port) {
  std::lock_guard guard(lock);
  watched.push_back(std::move(port));
}

void Eq::unwatch(const PortContext* port) {
  std::lock_guard guard(lock);
  auto it = std::find_if(watched.begin(), watched.end(),
                         [port](const auto& p) { return p.get() == port; });
  if (it != watched.end()) watched.erase(it);
}

void Eq::progress_watched() {
  // Copies of the references: a port stays open while this pass uses it,
  // whatever another thread closes meanwhile.
  std::vector<std::shared_ptr<PortContext>> ports;
  {
    std::lock_guard guard(lock);
    if (watched.empty()) return;
    ports = watched;
  }
  std::sort(ports.begin(), ports.end());
  ports.erase(std::unique(ports.begin(), ports.end()), ports.end());
  for (const auto& port : ports) {
    std::lock_guard guard(whole_lock(*port));
    progress_if_manual(*port);
  }
}

namespace {

// Lock held.  The descriptor stays readable while anything is left to read.
void drain_if_empty(Eq* eq) {
  if (eq->events.empty() && eq->errors.empty()) eq->wait_fd.drain();
}

int eq_close(fid* fid) {
  Eq* eq = from_fid<Eq>(fid);
  if (eq->refs.load() != 0) return -FI_EBUSY;
  if (eq->attr.wait_set != nullptr) leave_wait_set(eq->attr.wait_set, &eq->fid.fid);
  eq->fabric->refs--;
  delete eq;
  return 0;
}

ssize_t eq_read(fid_eq* eq_fid, uint32_t* event, void* buf, size_t len, uint64_t flags) {
  Eq* eq = from_fid<Eq>(eq_fid);
  eq->progress_watched();
  std::lock_guard guard(eq->lock);
  if (!eq->errors.empty()) return -FI_EAVAIL;
  if (eq->events.empty()) return -FI_EAGAIN;
  Eq::Event& head = eq->events.front();
  if (len < head.data.size()) return -FI_ETOOSMALL;
  if (event != nullptr) *event = head.type;
  if (buf != nullptr) std::memcpy(buf, head.data.data(), head.data.size());
  const auto size = static_cast<ssize_t>(head.data.size());
  if (!(flags & FI_PEEK)) {
    eq->events.pop_front();
    drain_if_empty(eq);
  }
  return size;
}

ssize_t eq_readerr(fid_eq* eq_fid, fi_eq_err_entry* buf, uint64_t flags) {
  Eq* eq = from_fid<Eq>(eq_fid);
  std::lock_guard guard(eq->lock);
  if (eq->errors.empty()) return -FI_EAGAIN;
  if (buf == nullptr) return -FI_EINVAL;
  // fi_eq(3): err_data stays valid until the next read of the EQ's errors.
  const void* app_data = buf->err_data;
  const size_t app_size = buf->err_data_size;
  *buf = eq->errors.front();
  const std::vector<uint8_t>& data = eq->error_data.front();
  buf->err_data = nullptr;
  buf->err_data_size = 0;
  if (!data.empty()) {
    if (app_data != nullptr && app_size != 0) {
      // An application's own buffer (1.5 and later) gets a copy.
      std::memcpy(const_cast<void*>(app_data), data.data(), std::min(app_size, data.size()));
      buf->err_data = const_cast<void*>(app_data);
      buf->err_data_size = std::min(app_size, data.size());
    } else {
      eq->err_data_out = data;
      buf->err_data = eq->err_data_out.data();
      buf->err_data_size = eq->err_data_out.size();
    }
  }
  if (!(flags & FI_PEEK)) {
    eq->errors.pop_front();
    eq->error_data.pop_front();
    drain_if_empty(eq);
  }
  return sizeof(fi_eq_err_entry);
}

ssize_t eq_write(fid_eq* eq_fid, uint32_t event, const void* buf, size_t len, uint64_t flags) {
  Eq* eq = from_fid<Eq>(eq_fid);
  if (!(eq->attr.flags & FI_WRITE)) return -FI_EINVAL;
  if (buf == nullptr && len != 0) return -FI_EINVAL;
  std::lock_guard guard(eq->lock);
  if (flags != 0) return -FI_EINVAL;
  const auto* bytes = static_cast<const uint8_t*>(buf);
  eq->events.push_back({event, std::vector<uint8_t>(bytes, bytes + len)});
  eq->wait_fd.signal();
  return static_cast<ssize_t>(len);
}

ssize_t eq_sread(fid_eq* eq_fid, uint32_t* event, void* buf, size_t len, int timeout,
                 uint64_t flags) {
  Eq* eq = from_fid<Eq>(eq_fid);
  if (eq->attr.wait_obj == FI_WAIT_NONE) return -FI_EINVAL;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout);
  for (;;) {
    const ssize_t ret = eq_read(eq_fid, event, buf, len, flags);
    if (ret != -FI_EAGAIN) return ret;
    const auto now = std::chrono::steady_clock::now();
    if (timeout >= 0 && now >= deadline) return -FI_EAGAIN;
    bool watching;
    {
      std::lock_guard guard(eq->lock);
      watching = !eq->watched.empty();
    }
    if (eq->wait_fd.is_open()) {
      // Watched ports need passes (eq_read makes them): wake each ms.
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - now);
      int wait_ms = timeout < 0 ? -1 : static_cast<int>(left.count() + 1);
      if (watching && (wait_ms < 0 || wait_ms > 1)) wait_ms = 1;
      eq->wait_fd.wait(wait_ms);
    } else {
      std::this_thread::sleep_for(std::chrono::microseconds(100));
    }
  }
}

int eq_control(fid* fid, int command, void* arg) {
  Eq* eq = from_fid<Eq>(fid);
  return wait_control(eq->attr.wait_obj, eq->wait_fd, command, arg);
}

const char* eq_strerror(fid_eq*, int prov_errno, const void*, char* buf, size_t len) {
  const char* text = fi_strerror(prov_errno);
  if (buf != nullptr && len > 0) {
    std::strncpy(buf, text, len - 1);
    buf[len - 1] = '\0';
    return buf;
  }
  return text;
}

fi_ops g_eq_fid_ops = {
    .size = sizeof(fi_ops),
    .close = eq_close,
    .bind = DPDK_ENOSYS(fi_ops, bind),
    .control = eq_control,
    .ops_open = DPDK_ENOSYS(fi_ops, ops_open),
    .tostr = DPDK_ENOSYS(fi_ops, tostr),
    .ops_set = DPDK_ENOSYS(fi_ops, ops_set),
};

fi_ops_eq g_eq_ops = {
    .size = sizeof(fi_ops_eq),
    .read = eq_read,
    .readerr = eq_readerr,
    .write = eq_write,
    .sread = eq_sread,
    .strerror = eq_strerror,
};

}  // namespace

int eq_open(fid_fabric* fabric_fid, fi_eq_attr* attr, fid_eq** out, void* context) {
  if (attr == nullptr) return -FI_EINVAL;
  if (!wait_object_supported(attr->wait_obj, attr->wait_set)) {
    DPDK_INFO(FI_LOG_EQ,
              "EQ wait object %d not supported: FI_WAIT_NONE, UNSPEC, YIELD, FD, or SET with "
              "a wait set of this provider\n",
              attr->wait_obj);
    return -FI_ENOSYS;
  }
  if (attr->flags & ~static_cast<uint64_t>(FI_WRITE)) return -FI_EINVAL;
  auto* eq = new (std::nothrow) Eq();
  if (eq == nullptr) return -FI_ENOMEM;
  eq->attr = *attr;
  if (attr->wait_obj != FI_WAIT_SET) eq->attr.wait_set = nullptr;
  // Whole before a wait set can see it (join_wait_set).
  eq->fid.fid.fclass = FI_CLASS_EQ;
  eq->fid.fid.context = context;
  eq->fid.fid.ops = &g_eq_fid_ops;
  eq->fid.ops = &g_eq_ops;
  const int opened = attr->wait_obj == FI_WAIT_FD ? eq->wait_fd.open()
                     : attr->wait_obj == FI_WAIT_SET
                         ? join_wait_set(attr->wait_set, &eq->fid.fid, &eq->wait_fd)
                         : 0;
  if (opened != 0) {
    delete eq;
    return opened;
  }
  eq->fabric = from_fid<Fabric>(fabric_fid);
  eq->fabric->refs++;
  *out = &eq->fid;
  return 0;
}

}  // namespace ofi_dpdk::ofi
