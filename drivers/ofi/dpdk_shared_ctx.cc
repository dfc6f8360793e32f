// dpdk_shared_ctx.cc: shared transmit and receive contexts
// (fi_stx_context, fi_srx_context; fi_endpoint(3)).  See SharedRx and
// SharedTx in dpdk_shared_ctx.h for what is shared and how.
#include "drivers/ofi/dpdk_shared_ctx.h"

#include <rdma/fi_cm.h>
#include <rdma/fi_tagged.h>

#include <algorithm>
#include <new>

#include "drivers/ofi/dpdk_clock.h"
#include "drivers/ofi/dpdk_domain.h"
#include "drivers/ofi/dpdk_endpoint.h"
#include "drivers/ofi/dpdk_engine_errno.h"
#include "drivers/ofi/dpdk_fid.h"
#include "drivers/ofi/dpdk_ops.h"
#include "drivers/ofi/dpdk_port_lock.h"

namespace ofi_dpdk::ofi {

int SharedRx::post(const proto::RecvRequest& request) {
  const uint64_t now = now_ns();
  Endpoint* first = nullptr;
  for (Endpoint* ep : endpoints) {
    if (!ep->enabled) continue;
    if (first == nullptr) first = ep;
    bool taken = false;
    engine_call([&] {
      taken = ep->engine->take_early(request, now);
      return 0;
    });
    if (taken) {
      ep->flush();
      return 0;
    }
  }
  if (first == nullptr) return -FI_EOPBADSTATE;
  const int ret = engine_call([&] { return first->engine->keep_receive(request); });
  if (ret != 0) return ret;
  // Messages held back for want of a receive may take this one now.
  for (Endpoint* ep : endpoints) {
    if (!ep->enabled || ep == first) continue;
    engine_call([&] {
      ep->engine->receives_changed();
      return 0;
    });
    ep->flush();
  }
  return 0;
}

namespace {

// The endpoint that posts for the context: the first enabled one bound
// (receives are built from its CQ and AV bindings, which fi_endpoint(3)
// has its peers share).  Null when none is.
Endpoint* poster(SharedRx* srx) {
  std::lock_guard guard(whole_lock(*srx->domain->port));
  for (Endpoint* ep : srx->endpoints)
    if (ep->enabled) return ep;
  return nullptr;
}

ssize_t srx_recv(fid_ep* fid, void* buf, size_t len, void* desc, fi_addr_t src, void* context) {
  Endpoint* ep = poster(from_fid<SharedRx>(fid));
  return ep == nullptr ? -FI_EOPBADSTATE : fi_recv(&ep->fid, buf, len, desc, src, context);
}

ssize_t srx_recvv(fid_ep* fid, const iovec* iov, void** desc, size_t count, fi_addr_t src,
                  void* context) {
  Endpoint* ep = poster(from_fid<SharedRx>(fid));
  return ep == nullptr ? -FI_EOPBADSTATE : fi_recvv(&ep->fid, iov, desc, count, src, context);
}

ssize_t srx_recvmsg(fid_ep* fid, const fi_msg* msg, uint64_t flags) {
  if (flags & FI_MULTI_RECV) return -FI_EBADFLAGS;  // not shared (Engine::share_receives)
  Endpoint* ep = poster(from_fid<SharedRx>(fid));
  return ep == nullptr ? -FI_EOPBADSTATE : fi_recvmsg(&ep->fid, msg, flags);
}

ssize_t srx_trecv(fid_ep* fid, void* buf, size_t len, void* desc, fi_addr_t src, uint64_t tag,
                  uint64_t ignore, void* context) {
  Endpoint* ep = poster(from_fid<SharedRx>(fid));
  return ep == nullptr ? -FI_EOPBADSTATE
                       : fi_trecv(&ep->fid, buf, len, desc, src, tag, ignore, context);
}

ssize_t srx_trecvv(fid_ep* fid, const iovec* iov, void** desc, size_t count, fi_addr_t src,
                   uint64_t tag, uint64_t ignore, void* context) {
  Endpoint* ep = poster(from_fid<SharedRx>(fid));
  return ep == nullptr ? -FI_EOPBADSTATE
                       : fi_trecvv(&ep->fid, iov, desc, count, src, tag, ignore, context);
}

ssize_t srx_trecvmsg(fid_ep* fid, const fi_msg_tagged* msg, uint64_t flags) {
  // A peek or claim looks at one endpoint's early messages: not shared.
  if (flags & (FI_PEEK | FI_CLAIM | FI_MULTI_RECV)) return -FI_EBADFLAGS;
  Endpoint* ep = poster(from_fid<SharedRx>(fid));
  return ep == nullptr ? -FI_EOPBADSTATE : fi_trecvmsg(&ep->fid, msg, flags);
}

// fi_cancel: the receive is in the shared list (any bound engine finds it)
// or claimed by one engine's early message.
ssize_t srx_cancel(fid* fid, void* context) {
  auto* srx = from_fid<SharedRx>(fid);
  std::lock_guard guard(whole_lock(*srx->domain->port));
  for (Endpoint* ep : srx->endpoints) {
    if (!ep->enabled) continue;
    if (ep->engine->cancel_recv(context) == 0) {
      ep->flush();
      return 0;
    }
  }
  return -FI_ENOENT;
}

int srx_close(fid* fid) {
  auto* srx = from_fid<SharedRx>(fid);
  {
    std::lock_guard guard(whole_lock(*srx->domain->port));
    if (!srx->endpoints.empty()) return -FI_EBUSY;
  }
  srx->domain->refs--;
  delete srx;
  return 0;
}

int stx_close(fid* fid) {
  auto* stx = from_fid<SharedTx>(fid);
  if (stx->refs.load() != 0) return -FI_EBUSY;
  stx->domain->refs--;
  delete stx;
  return 0;
}

fi_ops g_srx_fid_ops = {
    .size = sizeof(fi_ops),
    .close = srx_close,
    .bind = DPDK_ENOSYS(fi_ops, bind),
    .control = DPDK_ENOSYS(fi_ops, control),
    .ops_open = DPDK_ENOSYS(fi_ops, ops_open),
    .tostr = DPDK_ENOSYS(fi_ops, tostr),
    .ops_set = DPDK_ENOSYS(fi_ops, ops_set),
};

fi_ops_ep g_srx_ep_ops = {
    .size = sizeof(fi_ops_ep),
    .cancel = srx_cancel,
    .getopt = DPDK_ENOSYS(fi_ops_ep, getopt),
    .setopt = DPDK_ENOSYS(fi_ops_ep, setopt),
    .tx_ctx = DPDK_ENOSYS(fi_ops_ep, tx_ctx),
    .rx_ctx = DPDK_ENOSYS(fi_ops_ep, rx_ctx),
    .rx_size_left = DPDK_ENOSYS(fi_ops_ep, rx_size_left),
    .tx_size_left = DPDK_ENOSYS(fi_ops_ep, tx_size_left),
};

fi_ops_cm g_srx_cm_ops = {
    .size = sizeof(fi_ops_cm),
    .setname = DPDK_ENOSYS(fi_ops_cm, setname),
    .getname = DPDK_ENOSYS(fi_ops_cm, getname),
    .getpeer = DPDK_ENOSYS(fi_ops_cm, getpeer),
    .connect = DPDK_ENOSYS(fi_ops_cm, connect),
    .listen = DPDK_ENOSYS(fi_ops_cm, listen),
    .accept = DPDK_ENOSYS(fi_ops_cm, accept),
    .reject = DPDK_ENOSYS(fi_ops_cm, reject),
    .shutdown = DPDK_ENOSYS(fi_ops_cm, shutdown),
    .join = DPDK_ENOSYS(fi_ops_cm, join),
};

// A receive context sends nothing.
fi_ops_msg g_srx_msg_ops = {
    .size = sizeof(fi_ops_msg),
    .recv = srx_recv,
    .recvv = srx_recvv,
    .recvmsg = srx_recvmsg,
    .send = DPDK_EOPNOTSUPP(fi_ops_msg, send),
    .sendv = DPDK_EOPNOTSUPP(fi_ops_msg, sendv),
    .sendmsg = DPDK_EOPNOTSUPP(fi_ops_msg, sendmsg),
    .inject = DPDK_EOPNOTSUPP(fi_ops_msg, inject),
    .senddata = DPDK_EOPNOTSUPP(fi_ops_msg, senddata),
    .injectdata = DPDK_EOPNOTSUPP(fi_ops_msg, injectdata),
};

fi_ops_tagged g_srx_tagged_ops = {
    .size = sizeof(fi_ops_tagged),
    .recv = srx_trecv,
    .recvv = srx_trecvv,
    .recvmsg = srx_trecvmsg,
    .send = DPDK_EOPNOTSUPP(fi_ops_tagged, send),
    .sendv = DPDK_EOPNOTSUPP(fi_ops_tagged, sendv),
    .sendmsg = DPDK_EOPNOTSUPP(fi_ops_tagged, sendmsg),
    .inject = DPDK_EOPNOTSUPP(fi_ops_tagged, inject),
    .senddata = DPDK_EOPNOTSUPP(fi_ops_tagged, senddata),
    .injectdata = DPDK_EOPNOTSUPP(fi_ops_tagged, injectdata),
};

fi_ops g_stx_fid_ops = {
    .size = sizeof(fi_ops),
    .close = stx_close,
    .bind = DPDK_ENOSYS(fi_ops, bind),
    .control = DPDK_ENOSYS(fi_ops, control),
    .ops_open = DPDK_ENOSYS(fi_ops, ops_open),
    .tostr = DPDK_ENOSYS(fi_ops, tostr),
    .ops_set = DPDK_ENOSYS(fi_ops, ops_set),
};

fi_ops_ep g_stx_ep_ops = {
    .size = sizeof(fi_ops_ep),
    .cancel = DPDK_ENOSYS(fi_ops_ep, cancel),
    .getopt = DPDK_ENOSYS(fi_ops_ep, getopt),
    .setopt = DPDK_ENOSYS(fi_ops_ep, setopt),
    .tx_ctx = DPDK_ENOSYS(fi_ops_ep, tx_ctx),
    .rx_ctx = DPDK_ENOSYS(fi_ops_ep, rx_ctx),
    .rx_size_left = DPDK_ENOSYS(fi_ops_ep, rx_size_left),
    .tx_size_left = DPDK_ENOSYS(fi_ops_ep, tx_size_left),
};

}  // namespace

int srx_open(fid_domain* domain_fid, fi_rx_attr* attr, fid_ep** out, void* context) {
  if (out == nullptr) return -FI_EINVAL;
  Domain* domain = from_fid<Domain>(domain_fid);
  auto* srx = new (std::nothrow) SharedRx();
  if (srx == nullptr) return -FI_ENOMEM;
  srx->domain = domain;
  srx->op_flags = attr != nullptr ? attr->op_flags : 0;
  domain->refs++;
  srx->fid.fid.fclass = FI_CLASS_SRX_CTX;
  srx->fid.fid.context = context;
  srx->fid.fid.ops = &g_srx_fid_ops;
  srx->fid.ops = &g_srx_ep_ops;
  srx->fid.cm = &g_srx_cm_ops;
  srx->fid.msg = &g_srx_msg_ops;
  srx->fid.tagged = &g_srx_tagged_ops;
  set_no_rma_atomic_ops(&srx->fid);
  *out = &srx->fid;
  return 0;
}

int stx_open(fid_domain* domain_fid, fi_tx_attr* /*attr*/, fid_stx** out, void* context) {
  if (out == nullptr) return -FI_EINVAL;
  Domain* domain = from_fid<Domain>(domain_fid);
  auto* stx = new (std::nothrow) SharedTx();
  if (stx == nullptr) return -FI_ENOMEM;
  stx->domain = domain;
  domain->refs++;
  stx->fid.fid.fclass = FI_CLASS_STX_CTX;
  stx->fid.fid.context = context;
  stx->fid.fid.ops = &g_stx_fid_ops;
  stx->fid.ops = &g_stx_ep_ops;
  *out = &stx->fid;
  return 0;
}

}  // namespace ofi_dpdk::ofi
