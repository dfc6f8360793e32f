// dpdk_sep.cc: scalable endpoints (fi_endpoint(3), SCALABLE ENDPOINTS).
// fi_scalable_ep holds rx_ctx_cnt + tx_ctx_cnt contiguous queue ids at its
// port: receive context i answers at queue base + i, transmit context j
// sends from queue base + rx_ctx_cnt + j.  Each context is an Endpoint of
// its own (role kTxContext or kRxContext): its own transport engine, CQs,
// counters and fi_enable, so threads drive contexts without sharing one
// transport's state.  With rte_flow steering every context queue gets its
// own hardware queue pair; with software steering (every virtual device
// here) they share queue pair 0 and the demultiplexer in dpdk_progress.cc.
//
// The scalable endpoint's address is (MAC, base) with no session: each
// context is an incarnation of its own, whose session peers learn from its
// frames, so a context closed and opened again is never taken for the old
// one.  Frames from any of its transmit contexts carry base as
// src_ep_queue, so receivers name the sender by the scalable endpoint's
// address (FI_SOURCE, directed receives).  fi_rx_addr(addr, i, bits)
// reaches (MAC, base + i) (Av::resolve); a plain endpoint is receive
// context 0 of its own address.
//
// Choices where fi_endpoint(3) leaves room:
//   - Contexts are made by fi_tx_context / fi_rx_context and freed by their
//     fi_close; an index already open is -FI_EBUSY, one out of range
//     -FI_EINVAL.  fi_close of the scalable endpoint is -FI_EBUSY while any
//     context is open.
//   - A context gets the endpoint's attributes; an attr narrows its caps
//     (a subset of the endpoint's, else -FI_EINVAL) and sets its op_flags,
//     and gets the attributes given back.  Sizes and limits are the
//     endpoint's: a larger request is -FI_EINVAL.
//   - The scalable endpoint binds only an AV (fi_scalable_ep_bind); a
//     context binds CQs and counters of its own direction only, and no AV.
//   - Data calls on the scalable endpoint itself, and calls of the other
//     direction on a context, return -FI_EOPNOTSUPP.
#include "drivers/ofi/dpdk_sep.h"

#include <rdma/fi_cm.h>
#include <rdma/fi_collective.h>

#include <cstring>
#include <new>

#include "drivers/ofi/dpdk_attr.h"
#include "drivers/ofi/dpdk_av.h"
#include "drivers/ofi/dpdk_domain.h"
#include "drivers/ofi/dpdk_endpoint.h"
#include "drivers/ofi/dpdk_fid.h"
#include "drivers/ofi/dpdk_limits.h"
#include "drivers/ofi/dpdk_log.h"
#include "drivers/ofi/dpdk_objects.h"
#include "drivers/ofi/dpdk_ops.h"
#include "drivers/ofi/dpdk_port.h"

namespace ofi_dpdk::ofi {
namespace {

constexpr uint64_t kTxModifiers = FI_SEND | FI_READ | FI_WRITE;
constexpr uint64_t kRxModifiers = FI_RECV | FI_REMOTE_READ | FI_REMOTE_WRITE;

// fi_msg(3) for contexts: a transmit context only sends, a receive context
// only receives.  Tagged, RMA and atomic calls check the context's caps,
// whose modifiers say the same (context_caps).
fi_ops_msg* tx_context_msg_ops() {
  static fi_ops_msg ops = [] {
    fi_ops_msg table = g_msg_ops;
    table.recv = DPDK_EOPNOTSUPP(fi_ops_msg, recv);
    table.recvv = DPDK_EOPNOTSUPP(fi_ops_msg, recvv);
    table.recvmsg = DPDK_EOPNOTSUPP(fi_ops_msg, recvmsg);
    return table;
  }();
  return &ops;
}

fi_ops_msg* rx_context_msg_ops() {
  static fi_ops_msg ops = [] {
    fi_ops_msg table = g_msg_ops;
    table.send = DPDK_EOPNOTSUPP(fi_ops_msg, send);
    table.sendv = DPDK_EOPNOTSUPP(fi_ops_msg, sendv);
    table.sendmsg = DPDK_EOPNOTSUPP(fi_ops_msg, sendmsg);
    table.inject = DPDK_EOPNOTSUPP(fi_ops_msg, inject);
    table.senddata = DPDK_EOPNOTSUPP(fi_ops_msg, senddata);
    table.injectdata = DPDK_EOPNOTSUPP(fi_ops_msg, injectdata);
    return table;
  }();
  return &ops;
}

// The caps of a context: the endpoint's, with only this direction's
// modifiers (all of them when the endpoint named none, fi_getinfo(3)),
// narrowed to `requested` when that is non-zero.  Returns false when
// `requested` asks for more than the endpoint has in this direction.
bool context_caps(uint64_t endpoint_caps, Endpoint::Role role, uint64_t requested, uint64_t* out) {
  const bool tx = role == Endpoint::Role::kTxContext;
  const uint64_t direction_caps = tx ? kTxCaps : kRxCaps;
  const uint64_t direction_modifiers = tx ? kTxModifiers : kRxModifiers;
  uint64_t modifiers = endpoint_caps & kModifierCaps;
  if (modifiers == 0) modifiers = kModifierCaps;
  const uint64_t own = (endpoint_caps & ~kModifierCaps) | (modifiers & direction_modifiers);
  if (requested == 0) {
    *out = own;
    return true;
  }
  if (requested & ~(own & direction_caps)) return false;
  if (!(requested & kModifierCaps)) requested |= own & direction_modifiers;
  *out = (own & ~direction_caps) | requested;
  return true;
}

// Checks a context's requested sizes against the endpoint's.
template <typename Attr>
bool sizes_fit(const Attr& requested, const Attr& endpoint) {
  return requested.size <= endpoint.size && requested.iov_limit <= endpoint.iov_limit &&
         (requested.msg_order & ~endpoint.msg_order) == 0 &&
         (requested.comp_order & ~endpoint.comp_order) == 0;
}

bool attr_fits(const fi_tx_attr& requested, const fi_tx_attr& endpoint) {
  return sizes_fit(requested, endpoint) && requested.inject_size <= endpoint.inject_size &&
         requested.rma_iov_limit <= endpoint.rma_iov_limit &&
         (requested.op_flags & ~kSupportedTxOpFlags) == 0;
}

bool attr_fits(const fi_rx_attr& requested, const fi_rx_attr& endpoint) {
  return sizes_fit(requested, endpoint) &&
         requested.total_buffered_recv <= endpoint.total_buffered_recv &&
         (requested.op_flags & ~kSupportedRxOpFlags) == 0;
}

// fi_tx_context / fi_rx_context.  `Attr` is fi_tx_attr or fi_rx_attr and
// `attr_of` picks the info's member of that type.
template <typename Attr, typename AttrOf>
int open_context(fid_ep* sep_fid, int index, Attr* attr, fid_ep** out, void* context,
                 Endpoint::Role role, AttrOf attr_of) {
  ScalableEp* sep = from_fid<ScalableEp>(sep_fid);
  const bool tx = role == Endpoint::Role::kTxContext;
  const uint16_t count = tx ? sep->tx_count : sep->rx_count;
  if (out == nullptr || index < 0 || index >= count) return -FI_EINVAL;
  fi_info* info = fi_dupinfo(sep->info);
  if (info == nullptr) return -FI_ENOMEM;
  Attr* own = attr_of(info);
  uint64_t caps = 0;
  if (!context_caps(info->caps, role, attr != nullptr ? attr->caps : 0, &caps) ||
      (attr != nullptr && own != nullptr && !attr_fits(*attr, *own))) {
    DPDK_INFO(FI_LOG_EP_CTRL, "%s context %d: attributes beyond the scalable endpoint's\n",
              tx ? "transmit" : "receive", index);
    fi_freeinfo(info);
    return -FI_EINVAL;
  }
  info->caps = caps;
  if (own != nullptr) {
    own->caps = caps & (tx ? kTxCaps : kRxCaps);
    if (attr != nullptr) own->op_flags = attr->op_flags;
  }
  const uint16_t queue = static_cast<uint16_t>(sep->base + (tx ? sep->rx_count : 0) + index);
  std::vector<Endpoint*>& slots = tx ? sep->tx : sep->rx;
  Endpoint* ctx = nullptr;
  const int ret = open_endpoint(
      sep->domain, info, context,
      [&](PortContext& port, Endpoint* opened) -> int {
        if (slots[index] != nullptr) return -FI_EBUSY;
        if (port.endpoints[queue] != nullptr) return -FI_EBUSY;
        if (sep->av != nullptr) {
          if (const int bound = bind_av(opened, sep->av); bound != 0) return bound;
        }
        opened->role = role;
        opened->parent = sep;
        opened->index = index;
        slots[index] = opened;
        port.place_endpoint(queue, opened);
        return queue;
      },
      &ctx);
  if (ret == 0 && attr != nullptr && own != nullptr) *attr = *own;
  fi_freeinfo(info);
  if (ret != 0) return ret;
  // Peers name this context's messages by the scalable endpoint's address.
  ctx->engine->set_address_queue(sep->base);
  ctx->fid.fid.fclass = tx ? FI_CLASS_TX_CTX : FI_CLASS_RX_CTX;
  ctx->fid.msg = tx ? tx_context_msg_ops() : rx_context_msg_ops();
  *out = &ctx->fid;
  return 0;
}

int sep_tx_context(fid_ep* sep, int index, fi_tx_attr* attr, fid_ep** tx_ep, void* context) {
  return open_context(sep, index, attr, tx_ep, context, Endpoint::Role::kTxContext,
                      [](fi_info* info) { return info->tx_attr; });
}

int sep_rx_context(fid_ep* sep, int index, fi_rx_attr* attr, fid_ep** rx_ep, void* context) {
  return open_context(sep, index, attr, rx_ep, context, Endpoint::Role::kRxContext,
                      [](fi_info* info) { return info->rx_attr; });
}

int sep_close(fid* fid) {
  ScalableEp* sep = from_fid<ScalableEp>(fid);
  PortContext& port = *sep->domain->port;
  {
    std::lock_guard guard(port.lock);
    for (const auto* slots : {&sep->rx, &sep->tx})
      for (const Endpoint* ctx : *slots)
        if (ctx != nullptr) return -FI_EBUSY;  // fi_endpoint(3): contexts first
    for (uint16_t q = 0; q < sep->rx_count + sep->tx_count; ++q) {
      port.held[sep->base + q] = false;
      port.release_queue_port(static_cast<uint16_t>(sep->base + q));
    }
  }
  if (sep->av != nullptr) sep->av->refs--;
  sep->domain->refs--;
  fi_freeinfo(sep->info);
  delete sep;
  return 0;
}

// fi_scalable_ep_bind: one AV of the domain, flags 0.  Contexts already
// open take it too.
int sep_bind(fid* sep_fid, fid* bfid, uint64_t flags) {
  ScalableEp* sep = from_fid<ScalableEp>(sep_fid);
  if (bfid == nullptr || bfid->fclass != FI_CLASS_AV || flags != 0) return -FI_EINVAL;
  Av* av = from_fid<Av>(bfid);
  if (av->domain != sep->domain) return -FI_EINVAL;
  std::lock_guard guard(sep->domain->port->lock);
  if (sep->av != nullptr) return -FI_EALREADY;
  try {
    av->endpoints.reserve(av->endpoints.size() + sep->rx.size() + sep->tx.size());
  } catch (const std::bad_alloc&) {
    return -FI_ENOMEM;
  }
  sep->av = av;
  av->refs++;
  for (const auto* slots : {&sep->rx, &sep->tx})
    for (Endpoint* ctx : *slots)
      if (ctx != nullptr) bind_av(ctx, av);  // room reserved: cannot fail
  return 0;
}

// fi_enable of the scalable endpoint needs its AV; the contexts are
// enabled one by one, each with its own fi_enable.
int sep_control(fid* fid, int command, void*) {
  ScalableEp* sep = from_fid<ScalableEp>(fid);
  if (command != FI_ENABLE) return -FI_ENOSYS;
  std::lock_guard guard(sep->domain->port->lock);
  if (sep->av == nullptr) return -FI_ENOAV;
  sep->enabled = true;
  return 0;
}

int sep_getname(fid* fid, void* addr, size_t* addrlen) {
  ScalableEp* sep = from_fid<ScalableEp>(fid);
  if (addrlen == nullptr) return -FI_EINVAL;
  av::Address self;
  std::memcpy(self.mac, sep->domain->port->port->mac(), 6);
  self.queue = sep->base;
  self.session = 0;  // see the top of the file
  return write_name(sep->info, *sep->domain->port, self, addr, addrlen);
}

// The lowest `count` free, unheld queue ids in a row from `wanted` (any
// start for kAnyQueue), marked held, with their UDP ports where the kernel
// shares the port's address (a run with a port another socket has is
// passed over, or refused when wanted).  Port lock held.  Returns the
// first, or -FI_EADDRINUSE (wanted is taken, or no free run's ports could
// be held) / -FI_ENOSPC (no such run) / another negative fi_errno.
int hold_queues(PortContext& port, uint16_t count, uint16_t wanted) {
  auto free_run = [&](uint16_t first) {
    if (first + count > kMaxEndpointsPerPort) return false;
    for (uint16_t q = first; q < first + count; ++q)
      if (port.endpoints[q] != nullptr || port.held[q]) return false;
    return true;
  };
  // The run's UDP ports, all or none.
  auto hold_ports = [&](uint16_t first) {
    for (uint16_t q = first; q < first + count; ++q) {
      std::string why;
      if (const int ret = port.kernel_ports.hold(q, &why); ret != 0) {
        for (uint16_t taken = first; taken < q; ++taken) port.kernel_ports.release(taken);
        if (wanted != kAnyQueue)
          DPDK_WARN(FI_LOG_EP_CTRL, "%s: scalable endpoint at queue %u refused: %s\n",
                    port.port->name().c_str(), first, why.c_str());
        else
          DPDK_INFO(FI_LOG_EP_CTRL, "%s: queues %u to %u passed over: %s\n",
                    port.port->name().c_str(), first, first + count - 1, why.c_str());
        return ret;
      }
    }
    return 0;
  };
  int base = -FI_ENOSPC;
  if (wanted != kAnyQueue) {
    base = free_run(wanted) ? wanted : -FI_EADDRINUSE;
    if (base >= 0) {
      if (const int ret = hold_ports(wanted); ret != 0) base = ret;
    }
  } else {
    for (uint16_t first = 0; first + count <= kMaxEndpointsPerPort && base < 0; ++first) {
      if (!free_run(first)) continue;
      const int ret = hold_ports(first);
      if (ret == 0)
        base = first;
      else if (ret == -FI_EADDRINUSE)
        base = ret;  // the next run, perhaps
      else
        return ret;
    }
  }
  if (base < 0) return base;
  for (uint16_t q = 0; q < count; ++q) port.held[base + q] = true;
  return base;
}

fi_ops g_sep_fid_ops = {
    .size = sizeof(fi_ops),
    .close = sep_close,
    .bind = sep_bind,
    .control = sep_control,
    .ops_open = DPDK_ENOSYS(fi_ops, ops_open),
    .tostr = DPDK_ENOSYS(fi_ops, tostr),
    .ops_set = DPDK_ENOSYS(fi_ops, ops_set),
};

fi_ops_ep g_sep_ops = {
    .size = sizeof(fi_ops_ep),
    .cancel = DPDK_EOPNOTSUPP(fi_ops_ep, cancel),
    .getopt = DPDK_ENOSYS(fi_ops_ep, getopt),
    .setopt = DPDK_ENOSYS(fi_ops_ep, setopt),
    .tx_ctx = sep_tx_context,
    .rx_ctx = sep_rx_context,
    .rx_size_left = DPDK_EOPNOTSUPP(fi_ops_ep, rx_size_left),
    .tx_size_left = DPDK_EOPNOTSUPP(fi_ops_ep, tx_size_left),
};

fi_ops_cm g_sep_cm_ops = {
    .size = sizeof(fi_ops_cm),
    .setname = DPDK_ENOSYS(fi_ops_cm, setname),
    .getname = sep_getname,
    .getpeer = DPDK_ENOSYS(fi_ops_cm, getpeer),
    .connect = DPDK_ENOSYS(fi_ops_cm, connect),
    .listen = DPDK_ENOSYS(fi_ops_cm, listen),
    .accept = DPDK_ENOSYS(fi_ops_cm, accept),
    .reject = DPDK_ENOSYS(fi_ops_cm, reject),
    .shutdown = DPDK_ENOSYS(fi_ops_cm, shutdown),
    .join = DPDK_ENOSYS(fi_ops_cm, join),
};

// "Scalable endpoints cannot be used directly for communication
// operations" (fi_endpoint(3)): every data call is -FI_EOPNOTSUPP.
fi_ops_msg g_sep_msg_ops = {
    .size = sizeof(fi_ops_msg),
    .recv = DPDK_EOPNOTSUPP(fi_ops_msg, recv),
    .recvv = DPDK_EOPNOTSUPP(fi_ops_msg, recvv),
    .recvmsg = DPDK_EOPNOTSUPP(fi_ops_msg, recvmsg),
    .send = DPDK_EOPNOTSUPP(fi_ops_msg, send),
    .sendv = DPDK_EOPNOTSUPP(fi_ops_msg, sendv),
    .sendmsg = DPDK_EOPNOTSUPP(fi_ops_msg, sendmsg),
    .inject = DPDK_EOPNOTSUPP(fi_ops_msg, inject),
    .senddata = DPDK_EOPNOTSUPP(fi_ops_msg, senddata),
    .injectdata = DPDK_EOPNOTSUPP(fi_ops_msg, injectdata),
};

fi_ops_tagged g_sep_tagged_ops = {
    .size = sizeof(fi_ops_tagged),
    .recv = DPDK_EOPNOTSUPP(fi_ops_tagged, recv),
    .recvv = DPDK_EOPNOTSUPP(fi_ops_tagged, recvv),
    .recvmsg = DPDK_EOPNOTSUPP(fi_ops_tagged, recvmsg),
    .send = DPDK_EOPNOTSUPP(fi_ops_tagged, send),
    .sendv = DPDK_EOPNOTSUPP(fi_ops_tagged, sendv),
    .sendmsg = DPDK_EOPNOTSUPP(fi_ops_tagged, sendmsg),
    .inject = DPDK_EOPNOTSUPP(fi_ops_tagged, inject),
    .senddata = DPDK_EOPNOTSUPP(fi_ops_tagged, senddata),
    .injectdata = DPDK_EOPNOTSUPP(fi_ops_tagged, injectdata),
};

fi_ops_rma g_sep_rma_ops = {
    .size = sizeof(fi_ops_rma),
    .read = DPDK_EOPNOTSUPP(fi_ops_rma, read),
    .readv = DPDK_EOPNOTSUPP(fi_ops_rma, readv),
    .readmsg = DPDK_EOPNOTSUPP(fi_ops_rma, readmsg),
    .write = DPDK_EOPNOTSUPP(fi_ops_rma, write),
    .writev = DPDK_EOPNOTSUPP(fi_ops_rma, writev),
    .writemsg = DPDK_EOPNOTSUPP(fi_ops_rma, writemsg),
    .inject = DPDK_EOPNOTSUPP(fi_ops_rma, inject),
    .writedata = DPDK_EOPNOTSUPP(fi_ops_rma, writedata),
    .injectdata = DPDK_EOPNOTSUPP(fi_ops_rma, injectdata),
};

fi_ops_atomic g_sep_atomic_ops = {
    .size = sizeof(fi_ops_atomic),
    .write = DPDK_EOPNOTSUPP(fi_ops_atomic, write),
    .writev = DPDK_EOPNOTSUPP(fi_ops_atomic, writev),
    .writemsg = DPDK_EOPNOTSUPP(fi_ops_atomic, writemsg),
    .inject = DPDK_EOPNOTSUPP(fi_ops_atomic, inject),
    .readwrite = DPDK_EOPNOTSUPP(fi_ops_atomic, readwrite),
    .readwritev = DPDK_EOPNOTSUPP(fi_ops_atomic, readwritev),
    .readwritemsg = DPDK_EOPNOTSUPP(fi_ops_atomic, readwritemsg),
    .compwrite = DPDK_EOPNOTSUPP(fi_ops_atomic, compwrite),
    .compwritev = DPDK_EOPNOTSUPP(fi_ops_atomic, compwritev),
    .compwritemsg = DPDK_EOPNOTSUPP(fi_ops_atomic, compwritemsg),
    .writevalid = DPDK_EOPNOTSUPP(fi_ops_atomic, writevalid),
    .readwritevalid = DPDK_EOPNOTSUPP(fi_ops_atomic, readwritevalid),
    .compwritevalid = DPDK_EOPNOTSUPP(fi_ops_atomic, compwritevalid),
};

fi_ops_collective g_sep_collective_ops = {
    .size = sizeof(fi_ops_collective),
    .barrier = DPDK_ENOSYS(fi_ops_collective, barrier),
    .broadcast = DPDK_ENOSYS(fi_ops_collective, broadcast),
    .alltoall = DPDK_ENOSYS(fi_ops_collective, alltoall),
    .allreduce = DPDK_ENOSYS(fi_ops_collective, allreduce),
    .allgather = DPDK_ENOSYS(fi_ops_collective, allgather),
    .reduce_scatter = DPDK_ENOSYS(fi_ops_collective, reduce_scatter),
    .reduce = DPDK_ENOSYS(fi_ops_collective, reduce),
    .scatter = DPDK_ENOSYS(fi_ops_collective, scatter),
    .gather = DPDK_ENOSYS(fi_ops_collective, gather),
    .msg = DPDK_ENOSYS(fi_ops_collective, msg),
    .barrier2 = DPDK_ENOSYS(fi_ops_collective, barrier2),
};

}  // namespace

void set_no_rma_atomic_ops(fid_ep* fid) {
  fid->rma = &g_sep_rma_ops;
  fid->atomic = &g_sep_atomic_ops;
  fid->collective = &g_sep_collective_ops;
}

void forget_context(Endpoint* context) {
  ScalableEp* sep = context->parent;
  std::vector<Endpoint*>& slots = context->role == Endpoint::Role::kTxContext ? sep->tx : sep->rx;
  if (context->index < static_cast<int>(slots.size()) && slots[context->index] == context)
    slots[context->index] = nullptr;
}

// ep_attr->rx_ctx_cnt and tx_ctx_cnt: 0 is one context (fi_endpoint(3));
// FI_SHARED_CONTEXT and more than kMaxEpContexts are -FI_EINVAL.
int scalable_ep_open(fid_domain* domain_fid, fi_info* info, fid_ep** out, void* context) {
  if (info == nullptr || info->ep_attr == nullptr || out == nullptr) return -FI_EINVAL;
  if (info->ep_attr->type != FI_EP_RDM) return -FI_EINVAL;
  if (info->caps & ~kAllCaps) return -FI_EINVAL;
  const size_t rx_count = info->ep_attr->rx_ctx_cnt == 0 ? 1 : info->ep_attr->rx_ctx_cnt;
  const size_t tx_count = info->ep_attr->tx_ctx_cnt == 0 ? 1 : info->ep_attr->tx_ctx_cnt;
  if (rx_count > kMaxEpContexts || tx_count > kMaxEpContexts) {
    DPDK_INFO(FI_LOG_EP_CTRL,
              "scalable endpoint: %zu receive and %zu transmit contexts; at "
              "most %u of each\n",
              rx_count, tx_count, kMaxEpContexts);
    return -FI_EINVAL;
  }
  Domain* domain = from_fid<Domain>(domain_fid);
  const int requested = requested_queue(info);
  if (requested < 0) return requested;
  const auto wanted = static_cast<uint16_t>(requested);
  auto* sep = new (std::nothrow) ScalableEp();
  if (sep == nullptr) return -FI_ENOMEM;
  try {
    sep->rx.assign(rx_count, nullptr);
    sep->tx.assign(tx_count, nullptr);
  } catch (const std::bad_alloc&) {
    delete sep;
    return -FI_ENOMEM;
  }
  sep->info = fi_dupinfo(info);
  if (sep->info == nullptr) {
    delete sep;
    return -FI_ENOMEM;
  }
  sep->domain = domain;
  sep->rx_count = static_cast<uint16_t>(rx_count);
  sep->tx_count = static_cast<uint16_t>(tx_count);
  {
    std::lock_guard guard(domain->port->lock);
    const int base = hold_queues(*domain->port, static_cast<uint16_t>(rx_count + tx_count), wanted);
    if (base < 0) {
      DPDK_INFO(FI_LOG_EP_CTRL, "scalable endpoint: no %zu free queue ids in a row%s\n",
                rx_count + tx_count, wanted != kAnyQueue ? " at the source address" : "");
      fi_freeinfo(sep->info);
      delete sep;
      return base;
    }
    sep->base = static_cast<uint16_t>(base);
  }
  domain->refs++;
  sep->fid.fid.fclass = FI_CLASS_SEP;
  sep->fid.fid.context = context;
  sep->fid.fid.ops = &g_sep_fid_ops;
  sep->fid.ops = &g_sep_ops;
  sep->fid.cm = &g_sep_cm_ops;
  sep->fid.msg = &g_sep_msg_ops;
  sep->fid.rma = &g_sep_rma_ops;
  sep->fid.tagged = &g_sep_tagged_ops;
  sep->fid.atomic = &g_sep_atomic_ops;
  sep->fid.collective = &g_sep_collective_ops;
  *out = &sep->fid;
  return 0;
}

}  // namespace ofi_dpdk::ofi
