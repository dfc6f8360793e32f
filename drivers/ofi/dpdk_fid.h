// dpdk_fid.h: the provider's objects as libfabric sees them.
//
// One file per fabric object, libfabric style: dpdk_fabric.cc,
// dpdk_domain.cc, dpdk_ep.cc, dpdk_msg.cc, dpdk_cq.cc, dpdk_av.cc,
// dpdk_eq.cc, dpdk_mr.cc; dpdk_progress.cc moves frames between the port
// and the endpoints.  Each object's struct has a header of its own
// (dpdk_fabric.h, dpdk_domain.h, dpdk_port.h, dpdk_endpoint.h, dpdk_cq.h,
// dpdk_av.h, ...), declared ahead here; the constructors are in
// dpdk_objects.h.
//
// Every object struct starts with its libfabric fid struct, so a fid
// pointer from the application converts back with from_fid<T>().
#pragma once

#include <rdma/fi_errno.h>

namespace ofi_dpdk::ofi {

template <typename T, typename F>
T* from_fid(F* fid) {
  return reinterpret_cast<T*>(fid);
}

// Fills a libfabric ops slot the provider does not support, keeping every
// slot non-NULL: the call returns -FI_ENOSYS.
template <typename F>
struct NotSupported;
template <typename R, typename... Args>
struct NotSupported<R (*)(Args...)> {
  static R call(Args...) { return static_cast<R>(-FI_ENOSYS); }
};
#define DPDK_ENOSYS(table, member) ::ofi_dpdk::ofi::NotSupported<decltype(table::member)>::call

// Fills a data-path slot that this kind of object does not offer (a
// receive context's sends): the call returns -FI_EOPNOTSUPP.
template <typename F>
struct NotThisDirection;
template <typename R, typename... Args>
struct NotThisDirection<R (*)(Args...)> {
  static R call(Args...) { return static_cast<R>(-FI_EOPNOTSUPP); }
};
#define DPDK_EOPNOTSUPP(table, member) \
  ::ofi_dpdk::ofi::NotThisDirection<decltype(table::member)>::call

// The provider's objects, each defined in a header of its own.
struct Fabric;
struct Domain;
struct PortContext;
struct Endpoint;
struct ScalableEp;
struct SharedRx;
struct SharedTx;
struct PassiveEp;
struct ConnRequest;
struct Cq;
struct Cntr;
struct Av;
struct Eq;
struct Mr;

}  // namespace ofi_dpdk::ofi
