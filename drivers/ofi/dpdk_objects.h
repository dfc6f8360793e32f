// dpdk_objects.h: the object constructors (fi_fabric, fi_domain, fi_cq_open, ...), one per file.
#pragma once

#include <rdma/fabric.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_eq.h>
#include <sys/uio.h>

#include <cstddef>
#include <cstdint>

namespace ofi_dpdk::ofi {

// Object constructors, one per file.
int fabric_open(fi_fabric_attr* attr, fid_fabric** fabric, void* context);
int domain_open(fid_fabric* fabric, fi_info* info, fid_domain** domain, void* context);
int eq_open(fid_fabric* fabric, fi_eq_attr* attr, fid_eq** eq, void* context);
int cq_open(fid_domain* domain, fi_cq_attr* attr, fid_cq** cq, void* context);
int cntr_open(fid_domain* domain, fi_cntr_attr* attr, fid_cntr** cntr, void* context);
int poll_open(fid_domain* domain, fi_poll_attr* attr, fid_poll** pollset);
int av_open(fid_domain* domain, fi_av_attr* attr, fid_av** av, void* context);
int endpoint_open(fid_domain* domain, fi_info* info, fid_ep** ep, void* context);
int scalable_ep_open(fid_domain* domain, fi_info* info, fid_ep** sep, void* context);
int mr_reg(fid* fid, const void* buf, size_t len, uint64_t access, uint64_t offset,
           uint64_t requested_key, uint64_t flags, fid_mr** mr, void* context);
int mr_regv(fid* fid, const iovec* iov, size_t count, uint64_t access, uint64_t offset,
            uint64_t requested_key, uint64_t flags, fid_mr** mr, void* context);
int mr_regattr(fid* fid, const fi_mr_attr* attr, uint64_t flags, fid_mr** mr);

}  // namespace ofi_dpdk::ofi
