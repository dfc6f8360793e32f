// dpdk_shared_ctx.h: shared receive and transmit contexts (dpdk_shared_ctx.cc).
#pragma once

#include <rdma/fabric.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>

#include <atomic>
#include <cstdint>
#include <vector>

#include "lib/proto/transport.h"

namespace ofi_dpdk::ofi {

struct Domain;
struct Endpoint;

// Shared contexts (dpdk_shared_ctx.cc).  A shared receive context holds
// the receives posted to it; the engines of the endpoints bound to it match
// their messages against those (proto::Engine::share_receives), so a
// message to any of them takes the first receive that fits, and completes
// on that endpoint's CQ.  A shared transmit context is a binding only: each
// endpoint still sends from its own queue, which keeps its address, order
// and completions what they would be, the sharing being of resources.
struct SharedRx {
  fid_ep fid;
  Domain* domain;
  uint64_t op_flags = 0;             // rx_attr->op_flags
  proto::PostedReceives posted;      // port lock
  std::vector<Endpoint*> endpoints;  // bound (port lock)
  // A receive for all the bound endpoints (Endpoint::post_recv routes
  // there): an early message of one of them takes it, else it waits for
  // the first.  Port lock held.  0, -EAGAIN, -FI_EOPBADSTATE when no bound
  // endpoint is enabled.
  int post(const proto::RecvRequest& request);
};
struct SharedTx {
  fid_stx fid;
  Domain* domain;
  std::atomic<int> refs{0};  // endpoints bound
};
int stx_open(fid_domain* domain, fi_tx_attr* attr, fid_stx** stx, void* context);
int srx_open(fid_domain* domain, fi_rx_attr* attr, fid_ep** rx_ep, void* context);

}  // namespace ofi_dpdk::ofi
