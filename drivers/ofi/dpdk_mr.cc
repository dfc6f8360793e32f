// dpdk_mr.cc: fi_mr_reg.  Messaging needs no registration (mr_mode has no
// FI_MR_LOCAL), but applications may register anyway; the region and its
// access are recorded for the RMA issue to enforce.  Keys are provider-made.
#include <random>

#include "drivers/ofi/dpdk_prov.h"

namespace ofi_dpdk::ofi {
namespace {

int mr_close(fid* fid) {
  Mr* mr = from_fid<Mr>(fid);
  mr->domain->refs--;
  delete mr;
  return 0;
}

fi_ops g_mr_fid_ops = {
    .size = sizeof(fi_ops),
    .close = mr_close,
    .bind = DPDK_ENOSYS(fi_ops, bind),
    .control = DPDK_ENOSYS(fi_ops, control),
    .ops_open = DPDK_ENOSYS(fi_ops, ops_open),
    .tostr = DPDK_ENOSYS(fi_ops, tostr),
    .ops_set = DPDK_ENOSYS(fi_ops, ops_set),
};

uint64_t random_key() {
  static thread_local std::mt19937_64 generator{std::random_device{}()};
  return generator();
}

}  // namespace

int mr_regattr(fid* fid, const fi_mr_attr* attr, uint64_t flags, fid_mr** out) {
  if (fid == nullptr || attr == nullptr || out == nullptr || flags != 0) return -FI_EINVAL;
  if (fid->fclass != FI_CLASS_DOMAIN) return -FI_EINVAL;
  if (attr->iov_count > 1) return -FI_EINVAL;  // mr_iov_limit is 1
  auto* mr = new (std::nothrow) Mr();
  if (mr == nullptr) return -FI_ENOMEM;
  mr->domain = from_fid<Domain>(reinterpret_cast<fid_domain*>(fid));
  mr->domain->refs++;
  mr->addr = attr->iov_count ? attr->mr_iov[0].iov_base : nullptr;
  mr->len = attr->iov_count ? attr->mr_iov[0].iov_len : 0;
  mr->access = attr->access;
  mr->fid.fid.fclass = FI_CLASS_MR;
  mr->fid.fid.context = attr->context;
  mr->fid.fid.ops = &g_mr_fid_ops;
  mr->fid.mem_desc = mr;
  mr->fid.key = random_key();
  *out = &mr->fid;
  return 0;
}

int mr_regv(fid* fid, const iovec* iov, size_t count, uint64_t access, uint64_t offset,
            uint64_t requested_key, uint64_t flags, fid_mr** mr, void* context) {
  fi_mr_attr attr{};
  attr.mr_iov = iov;
  attr.iov_count = count;
  attr.access = access;
  attr.offset = offset;
  attr.requested_key = requested_key;
  attr.context = context;
  return mr_regattr(fid, &attr, flags, mr);
}

int mr_reg(fid* fid, const void* buf, size_t len, uint64_t access, uint64_t offset,
           uint64_t requested_key, uint64_t flags, fid_mr** mr, void* context) {
  iovec iov{const_cast<void*>(buf), len};
  return mr_regv(fid, &iov, 1, access, offset, requested_key, flags, mr, context);
}

}  // namespace ofi_dpdk::ofi
