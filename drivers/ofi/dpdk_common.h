// dpdk_common.h: what every file of drivers/ofi shares: logging, constants, helpers.
// One file per fabric object, libfabric style: dpdk_fabric.cc, dpdk_domain.cc,
// dpdk_ep.cc, dpdk_msg.cc, dpdk_cq.cc, dpdk_av.cc, dpdk_eq.cc, dpdk_mr.cc;
// dpdk_progress.cc moves frames between the port and the endpoints.  Each
// object's struct has a header of its own (dpdk_fabric.h, dpdk_domain.h,
// dpdk_port.h, dpdk_endpoint.h, dpdk_cq.h, dpdk_av.h, ...), which this one
// declares ahead; the constructors are in dpdk_objects.h.
//
// Every object struct starts with its libfabric fid struct, so a fid pointer
// from the application converts back with from_fid<T>().
#pragma once

#include <rdma/fabric.h>
#include <rdma/fi_errno.h>
#include <rdma/providers/fi_log.h>
#include <rdma/providers/fi_prov.h>
#include <sys/types.h>

#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <new>

namespace ofi_dpdk::ofi {

extern fi_provider g_provider;

#define DPDK_WARN(subsys, ...) FI_WARN(&::ofi_dpdk::ofi::g_provider, subsys, __VA_ARGS__)
#define DPDK_INFO(subsys, ...) FI_INFO(&::ofi_dpdk::ofi::g_provider, subsys, __VA_ARGS__)
#define DPDK_DBG(subsys, ...) FI_DBG(&::ofi_dpdk::ofi::g_provider, subsys, __VA_ARGS__)

inline constexpr const char* kProviderName = "dpdk";
inline constexpr const char* kFabricName = "dpdk";
inline constexpr uint32_t kProviderVersion = FI_VERSION(0, 1);
inline constexpr uint16_t kMaxEndpointsPerPort = 64;
// Transmit, and receive, contexts of one scalable endpoint (domain_attr
// max_ep_tx_ctx, max_ep_rx_ctx): any mix of the two fits a free port.
inline constexpr uint16_t kMaxEpContexts = kMaxEndpointsPerPort / 2;
inline constexpr uint16_t kAnyQueue = 0xFFFF;
// The lane (PortContext) of an endpoint, CQ or counter that has none of its
// own: its calls take the whole port lock.
inline constexpr uint16_t kWholePort = 0xFFFF;
inline constexpr size_t kIovLimit = 8;
// Peer groups (2.x): any 32-bit id but all ones, which with an all-ones
// index would be FI_ADDR_UNSPEC.
inline constexpr uint32_t kMaxGroupId = 0xFFFF'FFFEu;
inline constexpr size_t kQueueDepth = 1024;  // tx_attr->size and rx_attr->size
// fi_av(3) 2.x: a receive's source is an authorization key fi_addr.
#ifdef FI_AUTH_KEY
inline constexpr uint64_t kAuthKeyFlag = FI_AUTH_KEY;
#else
inline constexpr uint64_t kAuthKeyFlag = 0;
#endif
inline constexpr size_t kMaxMsgSize = size_t{1} << 30;  // ep_attr->max_msg_size
inline constexpr size_t kInjectSize = 4096;             // copied at the call
// FI_OPT_MIN_MULTI_RECV until the application sets it.
inline constexpr size_t kDefaultMinMultiRecv = 64;
// A CQ opened with attr.size 0: room for every operation of 64 endpoints
// at the advertised tx_attr/rx_attr size (1024).
inline constexpr size_t kDefaultCqSize = 65536;

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

// Nanoseconds of a monotonic clock: the transport's timers run on it.
uint64_t now_ns();

// Private bits in an operation's flags (above every FI_* op flag):
// fi_inject and friends make no completion at all, and an operation a
// counter counts may still want no CQ entry.
inline constexpr uint64_t kNoCompletion = 1ull << 63;
inline constexpr uint64_t kNoCqEntry = 1ull << 62;
// A connection-management message of an FI_EP_MSG endpoint (dpdk_cm.cc):
// its completion goes to the endpoint's connection state, not to a CQ.
inline constexpr uint64_t kControlSend = 1ull << 61;
inline constexpr uint64_t kPrivateOpFlags = kNoCompletion | kNoCqEntry | kControlSend;
inline bool wants_completion(bool selective, uint64_t flags) {
  return !(flags & kNoCompletion) && (!selective || (flags & FI_COMPLETION));
}

// What lib/proto's calls return (0 or a negative errno: -EAGAIN when the
// send or receive queue is full, -EMSGSIZE above the message size, -ENOENT
// for nothing to cancel or claim, -EINVAL for a bad iov) as an fi_errno.
// Runs an engine call from an fi_* entry point.  The engine answers a
// failed allocation of a buffer itself (-ENOMEM, an error response); one
// of a record or a queue node throws std::bad_alloc, which stops here: no
// exception crosses into the application's C code.
template <typename Call>
int engine_call(Call&& call) {
  try {
    return call();
  } catch (const std::bad_alloc&) {
    return -ENOMEM;
  }
}

inline ssize_t engine_errno(int ret) {
  switch (ret) {
    case 0:
      return 0;
    case -EAGAIN:
      return -FI_EAGAIN;
    case -ENOMEM:
      return -FI_ENOMEM;
    case -EMSGSIZE:
      return -FI_EMSGSIZE;
    case -ENOENT:
      return -FI_ENOENT;
    default:
      return -FI_EINVAL;
  }
}

}  // namespace ofi_dpdk::ofi
