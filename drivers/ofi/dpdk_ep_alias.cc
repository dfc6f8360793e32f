// dpdk_ep_alias.cc: fi_ep_alias (fi_endpoint(3)).  An alias is another
// fid_ep of an endpoint that differs from it only by its default op flags:
// the endpoint's at first, those of the direction fi_ep_alias names
// replaced by its flags.  Its data-path tables are the endpoint's own; they
// find the endpoint and the flags through caller_of.  The endpoint refuses
// to close (-FI_EBUSY) while an alias is open.
#include <rdma/fi_cm.h>

#include <new>

#include "drivers/ofi/dpdk_endpoint.h"
#include "drivers/ofi/dpdk_fid.h"
#include "drivers/ofi/dpdk_port_lock.h"

namespace ofi_dpdk::ofi {
namespace {

EndpointAlias* alias_of(fid* fid) {
  return reinterpret_cast<EndpointAlias*>(fid);
}

int alias_close(fid* fid) {
  EndpointAlias* alias = alias_of(fid);
  {
    std::lock_guard guard(whole_lock(alias->ep->port()));
    --alias->ep->aliases;
  }
  delete alias;
  return 0;
}

int alias_control(fid* fid, int command, void* arg) {
  EndpointAlias* alias = alias_of(fid);
  return op_flags_control(&alias->tx_op_flags, &alias->rx_op_flags, command, arg);
}

ssize_t alias_cancel(fid* fid, void* context) {
  return fi_cancel(&alias_of(fid)->ep->fid.fid, context);
}

int alias_getopt(fid* fid, int level, int name, void* value, size_t* length) {
  return fi_getopt(&alias_of(fid)->ep->fid.fid, level, name, value, length);
}

int alias_setopt(fid* fid, int level, int name, const void* value, size_t length) {
  return fi_setopt(&alias_of(fid)->ep->fid.fid, level, name, value, length);
}

int alias_getname(fid* fid, void* addr, size_t* addrlen) {
  return fi_getname(&alias_of(fid)->ep->fid.fid, addr, addrlen);
}

fi_ops_ep g_alias_ep_ops = {
    .size = sizeof(fi_ops_ep),
    .cancel = alias_cancel,
    .getopt = alias_getopt,
    .setopt = alias_setopt,
    .tx_ctx = DPDK_ENOSYS(fi_ops_ep, tx_ctx),
    .rx_ctx = DPDK_ENOSYS(fi_ops_ep, rx_ctx),
    .rx_size_left = DPDK_ENOSYS(fi_ops_ep, rx_size_left),
    .tx_size_left = DPDK_ENOSYS(fi_ops_ep, tx_size_left),
};

fi_ops_cm g_alias_cm_ops = {
    .size = sizeof(fi_ops_cm),
    .setname = DPDK_ENOSYS(fi_ops_cm, setname),
    .getname = alias_getname,
    .getpeer = DPDK_ENOSYS(fi_ops_cm, getpeer),
    .connect = DPDK_ENOSYS(fi_ops_cm, connect),
    .listen = DPDK_ENOSYS(fi_ops_cm, listen),
    .accept = DPDK_ENOSYS(fi_ops_cm, accept),
    .reject = DPDK_ENOSYS(fi_ops_cm, reject),
    .shutdown = DPDK_ENOSYS(fi_ops_cm, shutdown),
    .join = DPDK_ENOSYS(fi_ops_cm, join),
};

}  // namespace

fi_ops g_alias_fid_ops = {
    .size = sizeof(fi_ops),
    .close = alias_close,
    .bind = DPDK_ENOSYS(fi_ops, bind),
    .control = alias_control,
    .ops_open = DPDK_ENOSYS(fi_ops, ops_open),
    .tostr = DPDK_ENOSYS(fi_ops, tostr),
    .ops_set = DPDK_ENOSYS(fi_ops, ops_set),
};

int open_alias(Endpoint* ep, struct fi_alias* request) {
  if (request == nullptr || request->fid == nullptr) return -FI_EINVAL;
  const uint64_t flags = request->flags;
  // fi_endpoint(3): FI_TRANSMIT or FI_RECV, not both, with the op flags
  // for that direction.
  if (((flags & FI_TRANSMIT) != 0) == ((flags & FI_RECV) != 0)) return -FI_EINVAL;
  auto* alias = new (std::nothrow) EndpointAlias();
  if (alias == nullptr) return -FI_ENOMEM;
  alias->ep = ep;
  alias->tx_op_flags = ep->tx_op_flags;
  alias->rx_op_flags = ep->rx_op_flags;
  uint64_t set = flags;
  if (const int ret =
          op_flags_control(&alias->tx_op_flags, &alias->rx_op_flags, FI_SETOPSFLAG, &set);
      ret != 0) {
    delete alias;
    return ret;
  }
  alias->fid.fid.fclass = FI_CLASS_EP;
  alias->fid.fid.context = ep->fid.fid.context;
  alias->fid.fid.ops = &g_alias_fid_ops;
  alias->fid.ops = &g_alias_ep_ops;
  alias->fid.cm = &g_alias_cm_ops;
  alias->fid.msg = ep->fid.msg;
  alias->fid.rma = ep->fid.rma;
  alias->fid.tagged = ep->fid.tagged;
  alias->fid.atomic = ep->fid.atomic;
  {
    std::lock_guard guard(whole_lock(ep->port()));
    ++ep->aliases;
  }
  *request->fid = &alias->fid.fid;
  return 0;
}

}  // namespace ofi_dpdk::ofi
