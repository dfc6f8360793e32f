// dpdk_ops.h: the data-path ops tables (msg, rma, atomic, tagged) and what fills or queries them.
#pragma once

#include <rdma/fabric.h>
#include <rdma/fi_atomic.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_rma.h>
#include <rdma/fi_tagged.h>

#include <cstdint>

namespace ofi_dpdk::ofi {

// The transfer tables of an object that does no RMA or atomics (every call
// -FI_EOPNOTSUPP): scalable endpoints, shared receive contexts.
void set_no_rma_atomic_ops(fid_ep* fid);

extern fi_ops_msg g_msg_ops;
extern fi_ops_rma g_rma_ops;
extern fi_ops_atomic g_atomic_ops;
int query_atomic(fid_domain* domain, fi_datatype datatype, fi_op op, fi_atomic_attr* attr,
                 uint64_t flags);
extern fi_ops_tagged g_tagged_ops;  // dpdk_tagged.cc

}  // namespace ofi_dpdk::ofi
