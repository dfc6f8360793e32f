// dpdk_cm.cc: FI_EP_MSG connection management (fi_cm(3)) over the reliable
// transport.  A connection is the transport's own connection made visible:
// the CM messages are control messages (wire::kFlagControl,
// doc/wire-protocol.md "Connected endpoints") on the same streams as the
// data, so they are never lost, never doubled, and keep their order with
// the data around them.
//
//   client endpoint                 passive endpoint (its listener)
//   fi_connect  -- CONNECT(data) -->  FI_CONNREQ event, info->handle
//                                     fi_endpoint(info) -> new endpoint
//               <-- ACCEPT(data) --  fi_accept on the new endpoint
//   FI_CONNECTED(data)               FI_CONNECTED once the ACCEPT is acked
//               <-- REJECT(data) --  fi_reject: FI_ECONNREFUSED at the client
//   fi_shutdown -- SHUTDOWN -->      FI_SHUTDOWN at the peer
//
// The connected peer is whoever sent the ACCEPT: the endpoint fi_accept was
// called on, not the passive endpoint.  A CONNECT carries a random nonce
// that its ACCEPT or REJECT echoes, so no third party can answer for the
// passive endpoint.  Every request is answered: a passive endpoint that
// cannot take one (not listening, full, closing) and an endpoint closed
// before accepting refuse it.  Every handler here runs under the port
// lock; EQ entries take the EQ's lock inside it, requests their own lock
// inside that.
#include "drivers/ofi/dpdk_cm.h"

#include <endian.h>

#include <algorithm>
#include <cstring>
#include <mutex>
#include <new>
#include <unordered_set>

#include "drivers/ofi/dpdk_random.h"

#include "drivers/ofi/dpdk_attr.h"
#include "drivers/ofi/dpdk_clock.h"
#include "drivers/ofi/dpdk_domain.h"
#include "drivers/ofi/dpdk_endpoint.h"
#include "drivers/ofi/dpdk_engine_errno.h"
#include "drivers/ofi/dpdk_eq.h"
#include "drivers/ofi/dpdk_fabric.h"
#include "drivers/ofi/dpdk_fid.h"
#include "drivers/ofi/dpdk_ipv6_peers.h"
#include "drivers/ofi/dpdk_limits.h"
#include "drivers/ofi/dpdk_log.h"
#include "drivers/ofi/dpdk_objects.h"
#include "drivers/ofi/dpdk_op_flags.h"
#include "drivers/ofi/dpdk_port.h"

namespace ofi_dpdk::ofi {
namespace {

// The requests not freed yet, by handle (conn_request_lock()): a handle the
// application passes is looked up here before it is read.
std::unordered_set<const fid*>& live_conn_requests() {
  static std::unordered_set<const fid*> live;
  return live;
}

av::Address address_of(uint64_t source_key, uint32_t session) {
  // proto::peer_key packs the queue above the MAC.
  av::Address address;
  for (int i = 5; i >= 0; --i, source_key >>= 8) address.mac[i] = static_cast<uint8_t>(source_key);
  address.queue = static_cast<uint16_t>(source_key);
  address.session = session;
  return address;
}

// A client's address for the log: its IP address if the port knows it.
std::string address_text(const av::Address& a) {
  if (a.ipv4 != 0) return ip::format_ipv4(a.ipv4);
  if (a.has_ipv6()) return ip::format_ipv6(ip::Ipv6{a.ipv6});
  return av::format_mac(a.mac);
}

bool same_peer(const av::Address& a, const av::Address& b) {
  return std::memcmp(a.mac, b.mac, 6) == 0 && a.queue == b.queue;
}

// An FI_CONNREQ / FI_CONNECTED entry: fi_eq_cm_entry and the connection data.
std::vector<uint8_t> cm_entry(fid* fid, fi_info* info, const uint8_t* data, size_t length) {
  std::vector<uint8_t> entry(sizeof(fi_eq_cm_entry) + length);
  fi_eq_cm_entry head{};
  head.fid = fid;
  head.info = info;
  std::memcpy(entry.data(), &head, sizeof(head));
  if (length != 0) std::memcpy(entry.data() + sizeof(head), data, length);
  return entry;
}

void push_cm_event(Eq* eq, uint32_t type, fid* fid, fi_info* info, const uint8_t* data,
                   size_t length) {
  if (eq == nullptr) {
    fi_freeinfo(info);
    return;
  }
  const std::vector<uint8_t> entry = cm_entry(fid, info, data, length);
  if (eq->push_event(type, entry.data(), entry.size()) != 0) fi_freeinfo(info);
}

void push_cm_error(Eq* eq, fid* fid, int error, const uint8_t* data, size_t length) {
  if (eq == nullptr) return;
  fi_eq_err_entry entry{};
  entry.fid = fid;
  entry.err = error;
  entry.prov_errno = error;
  eq->push_error(entry, std::vector<uint8_t>(data, data + length));
}

// fi_connect / fi_accept / fi_reject's param: fi_cm(3) lets them cut what
// does not fit (FI_OPT_CM_DATA_SIZE), silently.
bool connection_data_ok(const void* param, size_t length) {
  return length == 0 || param != nullptr;
}

uint32_t new_nonce() {
  uint32_t nonce = 0;
  if (!kernel_random(&nonce, sizeof(nonce))) nonce = static_cast<uint32_t>(now_ns());
  return nonce != 0 ? nonce : 1;
}

// The passive endpoint's listener: a CONNECT becomes an FI_CONNREQ event,
// or a refusal when there is no room or no one to tell.
void on_connect_request(Endpoint* listener, PassiveEp* pep, const av::Address& client,
                        uint32_t nonce, const uint8_t* data, size_t length) {
  auto refuse = [&] {
    try {
      if (listener->rejects_due.size() < kMaxPendingConnRequests)
        listener->rejects_due.emplace_back(client, nonce);
    } catch (const std::bad_alloc&) {
    }
  };
  if (!pep->listening || pep->eq == nullptr) return refuse();
  std::lock_guard guard(conn_request_lock());
  // Requests accepted or refused stay with their endpoints (requests):
  // only those still unanswered count.
  size_t pending = 0, from_source = 0;
  for (const ConnRequest* r : pep->requests) {
    if (r->answered) continue;
    ++pending;
    if (std::memcmp(r->client.mac, client.mac, 6) == 0) ++from_source;
  }
  if (pending >= kMaxPendingConnRequests) {
    if (pep->refused_full++ == 0)
      DPDK_WARN(FI_LOG_EP_CTRL,
                "passive endpoint: %zu connection requests unanswered; more are "
                "refused\n",
                pending);
    return refuse();
  }
  if (from_source >= kMaxPendingPerSource) {
    if (pep->refused_per_source++ == 0) {
      av::Address named = client;
      listener->port().name_by_ip(&named);
      DPDK_WARN(FI_LOG_EP_CTRL,
                "passive endpoint: %zu connection requests from %s unanswered, "
                "the most from one source; more from it are refused\n",
                from_source, address_text(named).c_str());
    }
    return refuse();
  }
  fi_info* info = fi_dupinfo(pep->info);
  auto* request = new (std::nothrow) ConnRequest();
  // (A client that named us by IPv4 address asked ARP first: we know its.)
  av::Address named = client;
  listener->port().name_by_ip(&named);
  if (info == nullptr || request == nullptr ||
      set_info_address(info, /*source=*/false, named) != 0) {
    fi_freeinfo(info);
    delete request;
    return refuse();
  }
  request->fid.fclass = FI_CLASS_CONNREQ;
  request->pep = pep;
  request->client = client;
  request->listener = listener->own_address();
  request->nonce = nonce;
  info->handle = &request->fid;
  try {
    pep->requests.insert(request);
    live_conn_requests().insert(&request->fid);
  } catch (const std::bad_alloc&) {
    pep->requests.erase(request);
    fi_freeinfo(info);
    delete request;
    return refuse();
  }
  const std::vector<uint8_t> entry = cm_entry(&pep->fid.fid, info, data, length);
  if (pep->eq->push_event(FI_CONNREQ, entry.data(), entry.size()) != 0) {
    pep->requests.erase(request);
    live_conn_requests().erase(&request->fid);
    fi_freeinfo(info);
    delete request;
    refuse();
  }
}

}  // namespace

std::mutex& conn_request_lock() {
  static std::mutex lock;
  return lock;
}

int claim_conn_request(const fi_info* info, ConnRequest** request) {
  *request = nullptr;
  if (info == nullptr || info->handle == nullptr) return 0;
  // A handle fi_reject or a closed passive endpoint already freed is not
  // read: only a live request's address is in the set.
  std::lock_guard guard(conn_request_lock());
  if (live_conn_requests().count(info->handle) == 0) return 0;
  auto* live = reinterpret_cast<ConnRequest*>(info->handle);
  if (live->claimed) return -FI_EINVAL;
  live->claimed = true;  // this call's, until the endpoint closes
  *request = live;
  return 0;
}

void release_conn_request(std::unique_ptr<ConnRequest> request) {
  if (!request) return;
  std::lock_guard guard(conn_request_lock());
  live_conn_requests().erase(&request->fid);
  if (request->pep != nullptr) request->pep->requests.erase(request.get());
}

int Endpoint::send_control(const av::Address& to, uint8_t kind, uint32_t nonce, const void* data,
                           size_t length) {
  length = std::min(length, wire::kMaxConnectionData);
  uint8_t message[sizeof(wire::ControlBody) + wire::kMaxConnectionData];
  wire::ControlBody body{};
  body.kind = kind;
  body.data_len = htobe16(static_cast<uint16_t>(length));
  body.nonce = htobe32(nonce);
  std::memcpy(message, &body, sizeof(body));
  if (length != 0) std::memcpy(message + sizeof(body), data, length);
  iovec iov{message, sizeof(body) + length};
  proto::PeerAddress address;
  std::memcpy(address.mac, to.mac, 6);
  address.queue = to.queue;
  address.session = to.session;
  address.auth_key = transmit_key;
  proto::SendRequest request;
  request.iov = &iov;
  request.iov_count = 1;
  request.copy = true;
  request.control = true;
  request.completion = true;
  request.user_flags = kControlSend | kind;
  const int ret = engine_call([&] { return engine->send(address, request, now_ns()); });
  if (ret == 0) ++control_in_flight;
  flush();
  return static_cast<int>(engine_errno(ret));
}

bool Endpoint::accepts_sender(uint64_t source_key) const {
  // A listener takes only CONNECTs (control messages pass the filter);
  // before it is connected an endpoint expects nothing from anyone.
  if (listener_of != nullptr || cm_state == CmState::kIdle || cm_state == CmState::kConnecting)
    return false;
  return source_key == proto::peer_key(peer.mac, peer.queue);
}

void Endpoint::send_due_rejects() {
  std::vector<std::pair<av::Address, uint32_t>> due;
  due.swap(rejects_due);
  for (const auto& [client, nonce] : due)
    send_control(client, static_cast<uint8_t>(wire::ControlKind::kReject), nonce, nullptr, 0);
}

void Endpoint::on_control(uint64_t source_key, uint32_t session, const uint8_t* message,
                          size_t length) {
  wire::ControlBody body;
  std::memcpy(&body, message, sizeof(body));
  const size_t data_len = be16toh(body.data_len);
  if (data_len != length - sizeof(body)) return;  // malformed: nothing to act on
  const uint8_t* data = message + sizeof(body);
  const uint32_t nonce = be32toh(body.nonce);
  const av::Address from = address_of(source_key, session);
  const auto kind = static_cast<wire::ControlKind>(body.kind);
  if (listener_of != nullptr) {
    if (kind == wire::ControlKind::kConnect)
      on_connect_request(this, listener_of, from, nonce, data, data_len);
    return;
  }
  switch (kind) {
    case wire::ControlKind::kAccept:
      // The answer to our CONNECT, from the endpoint that accepted it.
      if (cm_state != CmState::kConnecting || nonce != connect_nonce) return;
      peer = from;
      cm_state = CmState::kConnected;
      connected_reported = true;
      push_cm_event(eq, FI_CONNECTED, &fid.fid, nullptr, data, data_len);
      return;
    case wire::ControlKind::kReject:
      if (cm_state != CmState::kConnecting || nonce != connect_nonce) return;
      cm_state = CmState::kShutdown;
      push_cm_error(eq, &fid.fid, FI_ECONNREFUSED, data, data_len);
      return;
    case wire::ControlKind::kShutdown:
      // Also after our own fi_shutdown: each side hears of the other's.
      if (cm_state == CmState::kIdle || cm_state == CmState::kConnecting || shutdown_reported ||
          !same_peer(from, peer))
        return;
      if (!connected_reported) {
        // Our ACCEPT arrived (the peer shut the connection down), though
        // its acknowledgement has not been taken yet.
        connected_reported = true;
        push_cm_event(eq, FI_CONNECTED, &fid.fid, nullptr, nullptr, 0);
      }
      cm_state = CmState::kShutdown;
      shutdown_reported = true;
      push_cm_event(eq, FI_SHUTDOWN, &fid.fid, nullptr, nullptr, 0);
      return;
    case wire::ControlKind::kConnect:
      return;  // only a passive endpoint takes these
  }
}

void Endpoint::on_control_sent(const proto::Completion& done) {
  const auto kind = static_cast<wire::ControlKind>(done.user_flags & 0xFF);
  if (control_in_flight > 0) --control_in_flight;
  if (done.error != 0) {
    // The peer is gone or never answered: the connection did not happen,
    // or ends here.
    if (cm_state == CmState::kConnecting || cm_state == CmState::kAccepting) {
      const int error = cm_state == CmState::kConnecting ? FI_ECONNREFUSED : FI_ECONNABORTED;
      cm_state = CmState::kShutdown;
      push_cm_error(eq, &fid.fid, error, nullptr, 0);
    }
    return;
  }
  if (kind == wire::ControlKind::kAccept && !connected_reported &&
      cm_state == CmState::kAccepting) {
    cm_state = CmState::kConnected;
    connected_reported = true;
    push_cm_event(eq, FI_CONNECTED, &fid.fid, nullptr, nullptr, 0);
  }
}

namespace {

Endpoint* msg_endpoint(fid_ep* ep_fid) {
  Endpoint* ep = from_fid<Endpoint>(ep_fid);
  return ep->is_msg() ? ep : nullptr;
}

int ep_connect(fid_ep* ep_fid, const void* addr, const void* param, size_t paramlen) {
  Endpoint* ep = msg_endpoint(ep_fid);
  if (ep == nullptr || !connection_data_ok(param, paramlen)) return -FI_EINVAL;
  std::optional<av::Address> server;
  if (addr != nullptr) {
    const uint32_t format = ep->info->addr_format;
    server = decode_address(format, addr,
                            format == FI_ADDR_STR ? std::strlen(static_cast<const char*>(addr)) + 1
                                                  : address_size(format));
  } else {
    server = info_address(ep->info, /*source=*/false);
  }
  if (!server || server->queue == kAnyQueue ||
      (is_sockaddr_format(ep->info->addr_format) && !server->has_ip())) {
    DPDK_INFO(FI_LOG_EP_CTRL, "fi_connect: no address, or not one of this provider\n");
    return -FI_EINVAL;
  }
  // Named by IPv4 address: its MAC first (ARP).  Named by IPv6 address:
  // its peer id, with a named use of it taken (PortContext::name_ipv6_peer).
  const bool named_by_ipv6 = server->named_by_ipv6_alone();
  if (const int ret = ep->port().resolve(&*server); ret != 0)
    return ret == -FI_ETIMEDOUT ? -FI_EHOSTUNREACH : ret;
  std::lock_guard guard(ep->port().lock);
  // The server's IPv6 peer id is the endpoint's to keep while it lives (a
  // stranger's frames cannot take its place, ipv6_peers.h).
  const bool ipv6_peer = ip::is_ipv6_peer_id(server->mac);
  if (ipv6_peer && named_by_ipv6) {
    ep->ipv6_holds.adopt_named(server->mac);
  } else if (ipv6_peer && !ep->ipv6_holds.hold_named(server->mac)) {
    DPDK_INFO(FI_LOG_EP_CTRL,
              "fi_connect: %s names no IPv6 peer this process still knows: "
              "connect to its sockaddr_in6\n",
              av::format_mac(server->mac).c_str());
    return -FI_EINVAL;
  }
  const auto refuse = [&](int error) {
    if (ipv6_peer) ep->ipv6_holds.release_named(server->mac);
    return error;
  };
  if (!ep->enabled) return refuse(-FI_EOPBADSTATE);
  if (ep->eq == nullptr) return refuse(-FI_ENOEQ);
  if (ep->cm_state != CmState::kIdle) return refuse(-FI_EISCONN);
  ep->peer = *server;
  ep->connected_to = *server;
  ep->connect_nonce = new_nonce();
  ep->cm_state = CmState::kConnecting;
  const int ret = ep->send_control(*server, static_cast<uint8_t>(wire::ControlKind::kConnect),
                                   ep->connect_nonce, param, paramlen);
  if (ret != 0) {
    ep->cm_state = CmState::kIdle;
    return refuse(ret);
  }
  return 0;
}

int ep_accept(fid_ep* ep_fid, const void* param, size_t paramlen) {
  Endpoint* ep = msg_endpoint(ep_fid);
  if (ep == nullptr || !connection_data_ok(param, paramlen)) return -FI_EINVAL;
  std::lock_guard guard(ep->port().lock);
  if (!ep->enabled) return -FI_EOPBADSTATE;
  if (ep->eq == nullptr) return -FI_ENOEQ;
  if (!ep->conn_request || ep->cm_state != CmState::kIdle) return -FI_EINVAL;
  uint32_t nonce;
  {
    std::lock_guard requests(conn_request_lock());
    if (ep->conn_request->answered) return -FI_EINVAL;  // fi_reject came first
    // A client named by IPv6 address came in as a stranger of the peer
    // table (ipv6_peers.h), kept there by the listener's connection with
    // it: accepted, it is this endpoint's peer, its id held until the
    // endpoint closes, and given back then.
    if (ip::is_ipv6_peer_id(ep->conn_request->client.mac) &&
        !ep->ipv6_holds.hold_named(ep->conn_request->client.mac)) {
      const bool known = ipv6_of_peer_id(ep->conn_request->client.mac).has_value();
      DPDK_INFO(FI_LOG_EP_CTRL, "fi_accept: the IPv6 client is no longer known (%s)\n",
                known ? "the process names its most IPv6 peers at once (FI_DPDK_IPV6_PEERS)"
                      : "its place went to newer strangers");
      return -FI_ECONNABORTED;
    }
    ep->conn_request->answered = true;
    ep->peer = ep->conn_request->client;
    ep->connection_name = ep->conn_request->listener;
    nonce = ep->conn_request->nonce;
  }
  ep->cm_state = CmState::kAccepting;
  // The request stays the endpoint's until it closes: the application may
  // still name it (fabtests' fi_reject after a failed connection).
  const int ret = ep->send_control(ep->peer, static_cast<uint8_t>(wire::ControlKind::kAccept),
                                   nonce, param, paramlen);
  if (ret != 0) {
    ep->cm_state = CmState::kIdle;
    if (ip::is_ipv6_peer_id(ep->peer.mac)) ep->ipv6_holds.release_named(ep->peer.mac);
    std::lock_guard requests(conn_request_lock());
    ep->conn_request->answered = false;
  }
  return ret;
}

int ep_shutdown(fid_ep* ep_fid, uint64_t flags) {
  Endpoint* ep = msg_endpoint(ep_fid);
  if (ep == nullptr || flags != 0) return -FI_EINVAL;
  std::lock_guard guard(ep->port().lock);
  // The peer's FI_SHUTDOWN comes from our SHUTDOWN, also when its own came
  // first: both sides of fabtests' fi_cm_data shut down and wait for the
  // other's, and on a busy machine the client's arrived before the server
  // called fi_shutdown, which then sent nothing and left the client waiting.
  const bool shut_by_peer = ep->cm_state == CmState::kShutdown && ep->shutdown_reported &&
                            ep->connected_reported && !ep->shutdown_sent;
  if (ep->cm_state != CmState::kConnected && ep->cm_state != CmState::kAccepting && !shut_by_peer)
    return ep->cm_state == CmState::kShutdown ? 0 : -FI_ENOTCONN;
  // Behind everything sent before it on the stream: the peer reads its
  // data first.  (Our own later sends are refused: -FI_ENOTCONN.)
  const int ret =
      ep->send_control(ep->peer, static_cast<uint8_t>(wire::ControlKind::kShutdown), 0, nullptr, 0);
  if (ret == 0) {
    ep->cm_state = CmState::kShutdown;
    ep->shutdown_sent = true;
  }
  return shut_by_peer ? 0 : ret;
}

int ep_getpeer(fid_ep* ep_fid, void* addr, size_t* addrlen) {
  Endpoint* ep = msg_endpoint(ep_fid);
  if (ep == nullptr || addrlen == nullptr) return -FI_EINVAL;
  std::lock_guard guard(ep->port().lock);
  if (ep->cm_state != CmState::kConnected && ep->cm_state != CmState::kAccepting)
    return -FI_ENOTCONN;
  return write_name(ep->info, ep->port(), ep->connected_to.value_or(ep->peer), addr, addrlen);
}

int ep_getname_cm(fid* fid, void* addr, size_t* addrlen) {
  Endpoint* ep = from_fid<Endpoint>(fid);
  if (addrlen == nullptr) return -FI_EINVAL;
  std::lock_guard guard(ep->port().lock);
  return write_name(ep->info, ep->port(), ep->connection_name.value_or(ep->own_address()), addr,
                    addrlen);
}

fi_ops_cm g_msg_cm_ops = {
    .size = sizeof(fi_ops_cm),
    .setname = DPDK_ENOSYS(fi_ops_cm, setname),
    .getname = ep_getname_cm,
    .getpeer = ep_getpeer,
    .connect = ep_connect,
    .listen = DPDK_ENOSYS(fi_ops_cm, listen),
    .accept = ep_accept,
    .reject = DPDK_ENOSYS(fi_ops_cm, reject),
    .shutdown = ep_shutdown,
    .join = DPDK_ENOSYS(fi_ops_cm, join),
};

// ---- passive endpoints ----

int pep_close(fid* fid) {
  auto* pep = from_fid<PassiveEp>(fid);
  if (pep->listener != nullptr) {
    if (pep->eq != nullptr) pep->eq->unwatch(&pep->listener->port());
    {
      std::lock_guard guard(pep->listener->port().lock);
      pep->listener->listener_of = nullptr;
      std::vector<std::pair<av::Address, uint32_t>> refused;
      {
        // Claimed requests belong to their endpoints; the others end here,
        // refused: their clients hear of it.
        std::lock_guard requests(conn_request_lock());
        for (ConnRequest* request : pep->requests) {
          if (request->claimed) {
            request->pep = nullptr;
            continue;
          }
          if (!request->answered) refused.emplace_back(request->client, request->nonce);
          live_conn_requests().erase(&request->fid);
          delete request;
        }
        pep->requests.clear();
      }
      for (const auto& [client, nonce] : refused)
        pep->listener->send_control(client, static_cast<uint8_t>(wire::ControlKind::kReject), nonce,
                                    nullptr, 0);
    }
    if (pep->refused_full + pep->refused_per_source != 0)
      DPDK_INFO(FI_LOG_EP_CTRL,
                "passive endpoint: connection requests refused %lu with %zu "
                "unanswered, %lu with %zu unanswered from their source\n",
                pep->refused_full, kMaxPendingConnRequests, pep->refused_per_source,
                kMaxPendingPerSource);
    fi_close(&pep->listener->fid.fid);
  }
  if (pep->domain != nullptr) fi_close(&pep->domain->fid);
  if (pep->eq != nullptr) {
    pep->eq->refs--;
  }
  pep->fabric->refs--;
  fi_freeinfo(pep->info);
  delete pep;
  return 0;
}

int pep_bind(fid* pep_fid, fid* bfid, uint64_t flags) {
  auto* pep = from_fid<PassiveEp>(pep_fid);
  if (pep->listener == nullptr) return -FI_EOPBADSTATE;  // its address went
  if (bfid == nullptr || bfid->fclass != FI_CLASS_EQ || flags != 0) return -FI_EINVAL;
  if (pep->eq != nullptr) return -FI_EALREADY;
  pep->eq = from_fid<Eq>(reinterpret_cast<fid_eq*>(bfid));
  pep->eq->refs++;
  pep->eq->watch(pep->listener->domain->port);
  return 0;
}

int pep_listen(fid_pep* pep_fid) {
  auto* pep = from_fid<PassiveEp>(pep_fid);
  if (pep->listener == nullptr) return -FI_EOPBADSTATE;
  if (pep->eq == nullptr) return -FI_ENOEQ;
  if (const int ret = fi_enable(&pep->listener->fid); ret != 0) return ret;
  std::lock_guard guard(pep->listener->port().lock);
  pep->listening = true;
  return 0;
}

int pep_reject(fid_pep* pep_fid, fid_t handle, const void* param, size_t paramlen) {
  auto* pep = from_fid<PassiveEp>(pep_fid);
  if (handle == nullptr || !connection_data_ok(param, paramlen)) return -FI_EINVAL;
  if (pep->listener == nullptr) return -FI_EOPBADSTATE;
  std::lock_guard guard(pep->listener->port().lock);
  av::Address client;
  uint32_t nonce;
  {
    std::lock_guard requests(conn_request_lock());
    // Only a live request of this passive endpoint, not answered yet
    // (one fi_endpoint took and did not accept may still be refused).  A
    // handle already refused may be freed: it is looked up, never read.
    if (live_conn_requests().count(handle) == 0) return -FI_EINVAL;
    auto* request = reinterpret_cast<ConnRequest*>(handle);
    if (pep->requests.count(request) == 0 || request->answered) return -FI_EINVAL;
    request->answered = true;
    client = request->client;
    nonce = request->nonce;
    if (!request->claimed) {
      pep->requests.erase(request);
      live_conn_requests().erase(handle);
      delete request;
    }
  }
  return pep->listener->send_control(client, static_cast<uint8_t>(wire::ControlKind::kReject),
                                     nonce, param, paramlen);
}

// fi_setname before fi_listen: the address must be the port's own; a queue
// other than the passive endpoint's moves it there (-FI_EADDRINUSE when
// another endpoint has it; -FI_EOPBADSTATE once listening).
int pep_setname(fid* fid, void* addr, size_t addrlen) {
  auto* pep = from_fid<PassiveEp>(fid);
  if (pep->listener == nullptr) return -FI_EOPBADSTATE;
  const auto wanted = decode_address(pep->info->addr_format, addr, addrlen);
  if (!wanted) return -FI_EINVAL;
  const PortContext& port = pep->listener->port();
  static constexpr uint8_t kNoMac[6] = {};
  const bool other_mac = std::memcmp(wanted->mac, kNoMac, 6) != 0 &&
                         std::memcmp(wanted->mac, port.port->mac(), 6) != 0;
  const bool other_ip =
      (wanted->ipv4 != 0 &&
       (!port.framer->interface || wanted->ipv4 != port.framer->interface->address)) ||
      (wanted->has_ipv6() &&
       (!port.framer->interface6 || ip::Ipv6{wanted->ipv6} != port.framer->interface6->address));
  if (other_mac || other_ip) {
    DPDK_INFO(FI_LOG_EP_CTRL, "fi_setname: not an address of port %s\n", port.port->name().c_str());
    return -FI_EADDRNOTAVAIL;
  }
  if (wanted->queue == kAnyQueue || wanted->queue == pep->listener->queue) return 0;
  if (pep->listening) return -FI_EOPBADSTATE;
  // Another queue: a listener there (its engine is built for its queue),
  // in place of the one that has not listened yet.
  av::Address moved_to = pep->listener->own_address();
  moved_to.queue = wanted->queue;
  port.name_by_ip(&moved_to);
  fi_info* moved = fi_dupinfo(pep->info);
  if (moved == nullptr) return -FI_ENOMEM;
  fid_ep* listener = nullptr;
  int ret = set_info_address(moved, /*source=*/true, moved_to);
  if (ret == 0) ret = endpoint_open(pep->domain, moved, &listener, nullptr);
  if (ret != 0) {
    fi_freeinfo(moved);
    return ret;  // -FI_EADDRINUSE: the queue is another endpoint's
  }
  Endpoint* old = pep->listener;
  {
    std::lock_guard guard(old->port().lock);
    old->listener_of = nullptr;
    pep->listener = from_fid<Endpoint>(listener);
    pep->listener->listener_of = pep;
  }
  fi_close(&old->fid.fid);
  fi_freeinfo(pep->info);
  pep->info = moved;
  return 0;
}

int pep_getname(fid* fid, void* addr, size_t* addrlen) {
  auto* pep = from_fid<PassiveEp>(fid);
  if (pep->listener == nullptr) return -FI_EOPBADSTATE;
  return ep_getname_cm(&pep->listener->fid.fid, addr, addrlen);
}

// FI_OPT_CM_DATA_SIZE, the one option of a passive endpoint.
int pep_getopt(fid*, int level, int optname, void* optval, size_t* optlen) {
  if (level != FI_OPT_ENDPOINT || optname != FI_OPT_CM_DATA_SIZE) return -FI_ENOPROTOOPT;
  if (optval == nullptr || optlen == nullptr) return -FI_EINVAL;
  if (*optlen < sizeof(size_t)) {
    *optlen = sizeof(size_t);
    return -FI_ETOOSMALL;
  }
  *static_cast<size_t*>(optval) = wire::kMaxConnectionData;
  *optlen = sizeof(size_t);
  return 0;
}

fi_ops g_pep_fid_ops = {
    .size = sizeof(fi_ops),
    .close = pep_close,
    .bind = pep_bind,
    .control = DPDK_ENOSYS(fi_ops, control),
    .ops_open = DPDK_ENOSYS(fi_ops, ops_open),
    .tostr = DPDK_ENOSYS(fi_ops, tostr),
    .ops_set = DPDK_ENOSYS(fi_ops, ops_set),
};

fi_ops_ep g_pep_ep_ops = {
    .size = sizeof(fi_ops_ep),
    .cancel = DPDK_ENOSYS(fi_ops_ep, cancel),
    .getopt = pep_getopt,
    .setopt = DPDK_ENOSYS(fi_ops_ep, setopt),
    .tx_ctx = DPDK_ENOSYS(fi_ops_ep, tx_ctx),
    .rx_ctx = DPDK_ENOSYS(fi_ops_ep, rx_ctx),
    .rx_size_left = DPDK_ENOSYS(fi_ops_ep, rx_size_left),
    .tx_size_left = DPDK_ENOSYS(fi_ops_ep, tx_size_left),
};

fi_ops_cm g_pep_cm_ops = {
    .size = sizeof(fi_ops_cm),
    .setname = pep_setname,
    .getname = pep_getname,
    .getpeer = DPDK_ENOSYS(fi_ops_cm, getpeer),
    .connect = DPDK_ENOSYS(fi_ops_cm, connect),
    .listen = pep_listen,
    .accept = DPDK_ENOSYS(fi_ops_cm, accept),
    .reject = pep_reject,
    .shutdown = DPDK_ENOSYS(fi_ops_cm, shutdown),
    .join = DPDK_ENOSYS(fi_ops_cm, join),
};

}  // namespace

fi_ops_cm* msg_cm_ops() {
  return &g_msg_cm_ops;
}

int take_passive_address(Domain* domain, const fi_info* info, uint32_t* session) {
  if (info == nullptr || info->handle == nullptr || info->handle->fclass != FI_CLASS_PEP)
    return kAnyQueue + 1;
  auto* pep = reinterpret_cast<PassiveEp*>(info->handle);
  Endpoint* listener = pep->listener;
  if (listener == nullptr || &listener->port() != domain->port.get()) {
    DPDK_INFO(FI_LOG_EP_CTRL,
              "fi_endpoint: info->handle is a passive endpoint whose address "
              "went to another endpoint, or of another port\n");
    return -FI_EINVAL;
  }
  uint16_t queue;
  {
    std::lock_guard guard(listener->port().lock);
    if (pep->listening) {
      DPDK_INFO(FI_LOG_EP_CTRL, "fi_endpoint: info->handle is a listening passive endpoint\n");
      return -FI_EINVAL;
    }
    queue = listener->queue;
    *session = listener->session;
    listener->listener_of = nullptr;
  }
  // (Not listening: it holds no requests.)
  if (pep->eq != nullptr) pep->eq->unwatch(&listener->port());
  pep->listener = nullptr;
  fi_close(&listener->fid.fid);
  return queue;
}

int passive_ep_open(fid_fabric* fabric_fid, fi_info* info, fid_pep** out, void* context) {
  if (info == nullptr || info->ep_attr == nullptr || info->ep_attr->type != FI_EP_MSG)
    return -FI_EINVAL;
  auto* pep = new (std::nothrow) PassiveEp();
  if (pep == nullptr) return -FI_ENOMEM;
  pep->fabric = from_fid<Fabric>(fabric_fid);
  pep->info = fi_dupinfo(info);
  if (pep->info == nullptr) {
    delete pep;
    return -FI_ENOMEM;
  }
  // Its listener: an endpoint of a domain of its own on the info's port, at
  // the queue info->src_addr names (fi_getname tells clients).
  int ret = domain_open(fabric_fid, pep->info, &pep->domain, nullptr);
  fid_ep* listener = nullptr;
  if (ret == 0) ret = endpoint_open(pep->domain, pep->info, &listener, nullptr);
  if (ret != 0) {
    if (pep->domain != nullptr) fi_close(&pep->domain->fid);
    fi_freeinfo(pep->info);
    delete pep;
    return ret;
  }
  pep->listener = from_fid<Endpoint>(listener);
  {
    std::lock_guard guard(pep->listener->port().lock);
    pep->listener->listener_of = pep;
  }
  pep->fabric->refs++;
  pep->fid.fid.fclass = FI_CLASS_PEP;
  pep->fid.fid.context = context;
  pep->fid.fid.ops = &g_pep_fid_ops;
  pep->fid.ops = &g_pep_ep_ops;
  pep->fid.cm = &g_pep_cm_ops;
  *out = &pep->fid;
  return 0;
}

}  // namespace ofi_dpdk::ofi
