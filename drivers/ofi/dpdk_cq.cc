// dpdk_cq.cc: fi_cq.  Reading a CQ drives progress on its port (manual
// progress), then hands out completions in the CQ's format.  Completions
// wait in the CQ as long as needed: none is ever dropped (FI_RM_ENABLED).
#include <chrono>
#include <cstddef>
#include <cstring>
#include <thread>

#include "drivers/ofi/dpdk_prov.h"

namespace ofi_dpdk::ofi {
namespace {

size_t entry_size(fi_cq_format format) {
  switch (format) {
    case FI_CQ_FORMAT_CONTEXT: return sizeof(fi_cq_entry);
    case FI_CQ_FORMAT_MSG: return sizeof(fi_cq_msg_entry);
    case FI_CQ_FORMAT_DATA: return sizeof(fi_cq_data_entry);
    case FI_CQ_FORMAT_TAGGED: return sizeof(fi_cq_tagged_entry);
    default: return 0;
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
      *static_cast<fi_cq_tagged_entry*>(out) = {c.op_context, c.flags, c.len, c.buf, c.data,
                                                c.tag};
      break;
    default:
      break;
  }
}

ssize_t cq_readfrom(fid_cq* cq_fid, void* buf, size_t count, fi_addr_t* src_addr) {
  Cq* cq = from_fid<Cq>(cq_fid);
  if (buf == nullptr && count != 0) return -FI_EINVAL;
  PortContext& port = *cq->domain->port;
  std::lock_guard guard(port.lock);
  port.progress_if_manual();
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
  return static_cast<ssize_t>(done);
}

ssize_t cq_read(fid_cq* cq, void* buf, size_t count) {
  return cq_readfrom(cq, buf, count, nullptr);
}

ssize_t cq_readerr(fid_cq* cq_fid, fi_cq_err_entry* buf, uint64_t flags) {
  Cq* cq = from_fid<Cq>(cq_fid);
  if (buf == nullptr) return -FI_EINVAL;
  PortContext& port = *cq->domain->port;
  std::lock_guard guard(port.lock);
  if (cq->errors.empty()) return -FI_EAGAIN;
  fi_cq_err_entry entry = cq->errors.front();
  // Applications of API 1.4 and older pass the shorter struct without
  // err_data_size; write only what they allocated.
  if (FI_VERSION_LT(cq->domain->api_version, FI_VERSION(1, 5))) {
    std::memcpy(buf, &entry, offsetof(fi_cq_err_entry, err_data_size));
  } else {
    entry.err_data = nullptr;
    entry.err_data_size = 0;
    *buf = entry;
  }
  if (!(flags & FI_PEEK)) {
    cq->errors.pop_front();
    cq->error_sources.pop_front();
  }
  return 1;
}

ssize_t cq_sreadfrom(fid_cq* cq_fid, void* buf, size_t count, fi_addr_t* src_addr,
                     const void* cond, int timeout) {
  Cq* cq = from_fid<Cq>(cq_fid);
  if (cq->attr.wait_obj == FI_WAIT_NONE) return -FI_EINVAL;
  (void)cond;  // FI_CQ_COND_NONE only: any one completion ends the wait
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout);
  for (;;) {
    const ssize_t ret = cq_readfrom(cq_fid, buf, count, src_addr);
    if (ret != -FI_EAGAIN) return ret;
    if (timeout >= 0 && std::chrono::steady_clock::now() >= deadline) return -FI_EAGAIN;
    std::this_thread::yield();
  }
}

ssize_t cq_sread(fid_cq* cq, void* buf, size_t count, const void* cond, int timeout) {
  return cq_sreadfrom(cq, buf, count, nullptr, cond, timeout);
}

// prov_errno is one of the transport's ProvErrno values, or an fi_errno.
const char* cq_strerror(fid_cq*, int prov_errno, const void*, char* buf, size_t len) {
  const char* text = prov_errno == proto::kProvPeerTimeout || prov_errno == proto::kProvPeerRestarted
                         ? proto::prov_errno_text(prov_errno)
                         : fi_strerror(prov_errno);
  if (buf != nullptr && len > 0) {
    std::strncpy(buf, text, len - 1);
    buf[len - 1] = '\0';
    return buf;
  }
  return text;
}

int cq_close(fid* fid) {
  Cq* cq = from_fid<Cq>(fid);
  if (cq->refs.load() != 0) return -FI_EBUSY;
  cq->domain->refs--;
  delete cq;
  return 0;
}

fi_ops g_cq_fid_ops = {
    .size = sizeof(fi_ops),
    .close = cq_close,
    .bind = DPDK_ENOSYS(fi_ops, bind),
    .control = DPDK_ENOSYS(fi_ops, control),
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
    .signal = DPDK_ENOSYS(fi_ops_cq, signal),
    .strerror = cq_strerror,
};

}  // namespace

int cq_open(fid_domain* domain_fid, fi_cq_attr* attr, fid_cq** out, void* context) {
  if (attr == nullptr) return -FI_EINVAL;
  fi_cq_attr wanted = *attr;
  if (wanted.format == FI_CQ_FORMAT_UNSPEC) wanted.format = FI_CQ_FORMAT_CONTEXT;
  if (entry_size(wanted.format) == 0) return -FI_ENOSYS;
  if (wanted.wait_obj != FI_WAIT_NONE && wanted.wait_obj != FI_WAIT_UNSPEC) {
    DPDK_INFO(FI_LOG_CQ, "CQ wait object %d not supported yet: FI_WAIT_NONE or FI_WAIT_UNSPEC\n",
              wanted.wait_obj);
    return -FI_ENOSYS;
  }
  if (wanted.wait_cond != FI_CQ_COND_NONE) return -FI_ENOSYS;
  auto* cq = new (std::nothrow) Cq();
  if (cq == nullptr) return -FI_ENOMEM;
  cq->attr = wanted;
  cq->domain = from_fid<Domain>(domain_fid);
  cq->domain->refs++;
  cq->fid.fid.fclass = FI_CLASS_CQ;
  cq->fid.fid.context = context;
  cq->fid.fid.ops = &g_cq_fid_ops;
  cq->fid.ops = &g_cq_ops;
  *out = &cq->fid;
  return 0;
}

}  // namespace ofi_dpdk::ofi
