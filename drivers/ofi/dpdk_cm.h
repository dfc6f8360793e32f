// dpdk_cm.h: FI_EP_MSG's connection management: passive endpoints and connection requests.
#pragma once

#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <unordered_set>

#include "lib/av/address.h"

namespace ofi_dpdk::ofi {

struct Fabric;
struct ConnRequest;
struct Domain;
struct Endpoint;
struct Eq;

// FI_EP_MSG (dpdk_cm.cc).  A passive endpoint listens on a queue of its
// port through an endpoint of its own (the listener, on a domain of its
// own), whose control handler turns CONNECTs into FI_CONNREQ events.
struct PassiveEp {
  fid_pep fid;
  Fabric* fabric;
  fi_info* info;
  Eq* eq = nullptr;
  fid_domain* domain = nullptr;
  Endpoint* listener = nullptr;
  bool listening = false;
  // Requests handed out, and those accepted or refused by an endpoint that
  // still holds them (port lock).  At most kMaxPendingConnRequests are
  // unanswered, kMaxPendingPerSource of them from one source; fi_close
  // ends the unclaimed ones.
  std::unordered_set<ConnRequest*> requests;
  uint64_t refused_full = 0, refused_per_source = 0;  // CONNECTs refused so
};
// The handle of an FI_CONNREQ event (info->handle): who asked.  fi_endpoint
// of that info moves it into the new endpoint; fi_reject ends it.
// Requests are shared by a passive endpoint and the endpoint that takes
// one, which may be on another port: they have a lock of their own
// (conn_request_lock()), taken after any port lock.
struct ConnRequest {
  ::fid fid;
  PassiveEp* pep;  // null once the passive endpoint closed
  av::Address client;
  av::Address listener;   // the passive endpoint's address, which it asked
  uint32_t nonce = 0;     // the CONNECT's, which the answer echoes
  bool claimed = false;   // an endpoint holds it (one fi_endpoint per request)
  bool answered = false;  // accepted or rejected
};
std::mutex& conn_request_lock();
// The most connection requests a passive endpoint holds unanswered, and
// from one source (a client's link address, MAC or IP: its queues are its
// to choose); more are refused (a stranger's flood costs no more, and
// leaves room for the others).
inline constexpr size_t kMaxPendingConnRequests = 1024;
inline constexpr size_t kMaxPendingPerSource = 16;
fi_ops_cm* msg_cm_ops();  // an FI_EP_MSG endpoint's fid_ep::cm
int passive_ep_open(fid_fabric* fabric, fi_info* info, fid_pep** pep, void* context);
// Forgets a request its passive endpoint counted (accepted, or its endpoint
// closed).
void release_conn_request(std::unique_ptr<ConnRequest> request);
// fi_endpoint of an FI_CONNREQ info: claims the request the endpoint
// answers (*request; null when info->handle is no live request) or returns
// -FI_EINVAL when another endpoint claimed it.
int claim_conn_request(const fi_info* info, ConnRequest** request);
// fi_endpoint(3): an active endpoint opened with info->handle a passive
// endpoint acquires its address.  When info->handle is one: frees the
// passive endpoint's queue on `domain`'s port (it is bound to nothing
// after) and returns it, for the new endpoint to claim; -FI_EINVAL when it
// listens, gave its address away already, or is on another port; its
// session (the address's incarnation) in *session.  Returns kAnyQueue + 1
// when info->handle is no passive endpoint.  No locks held.
int take_passive_address(Domain* domain, const fi_info* info, uint32_t* session);

}  // namespace ofi_dpdk::ofi
