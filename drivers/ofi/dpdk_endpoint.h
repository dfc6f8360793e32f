// dpdk_endpoint.h: the endpoint (dpdk_ep.cc), its aliases, and what opens and names one.
#pragma once

#include <rdma/fabric.h>
#include <rdma/fi_atomic.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_rma.h>
#include <sys/types.h>
#include <sys/uio.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
#include <memory>
#include <optional>
#include <utility>
#include <vector>

#include "drivers/ofi/dpdk_domain.h"
#include "drivers/ofi/dpdk_fid.h"
#include "drivers/ofi/dpdk_ipv6_holds.h"
#include "drivers/ofi/dpdk_limits.h"
#include "drivers/ofi/dpdk_port_lock.h"
#include "lib/av/address.h"
#include "lib/proto/transport.h"
#include "lib/remote/target.h"

namespace ofi_dpdk::ofi {

// (The objects it names are declared ahead in dpdk_fid.h.)

// FI_EP_MSG (dpdk_cm.cc): where an endpoint's connection stands.
enum class CmState : uint8_t {
  kIdle,        // not connected (or not FI_EP_MSG)
  kConnecting,  // fi_connect sent CONNECT; waiting for ACCEPT or REJECT
  kAccepting,   // fi_accept sent ACCEPT; connected once the peer has it
  kConnected,   // FI_CONNECTED reported
  kShutdown,    // fi_shutdown, the peer's SHUTDOWN, or a refusal
};

struct Endpoint {
  // A plain endpoint, or a context of a scalable endpoint (dpdk_sep.cc):
  // a context is an endpoint that only sends or only receives, answers to
  // its scalable endpoint's address and uses its AV.
  enum class Role : uint8_t { kEndpoint, kTxContext, kRxContext };

  fid_ep fid;
  Domain* domain;
  fi_info* info;
  Role role = Role::kEndpoint;
  ScalableEp* parent = nullptr;  // contexts only
  int index = 0;                 // contexts: fi_tx_context / fi_rx_context index
  Av* av = nullptr;
  SharedRx* srx = nullptr;  // fi_srx_context bound: receives are its
  SharedTx* stx = nullptr;  // fi_stx_context bound
  Cq* tx_cq = nullptr;
  Cq* rx_cq = nullptr;
  Eq* eq = nullptr;
  // Counters by the fi_ep_bind flag that chose them; the FI_REMOTE_* ones
  // count what peers do to this endpoint's memory (FI_RMA_EVENT).
  Cntr* send_cntr = nullptr;
  Cntr* recv_cntr = nullptr;
  Cntr* read_cntr = nullptr;
  Cntr* write_cntr = nullptr;
  Cntr* remote_read_cntr = nullptr;
  Cntr* remote_write_cntr = nullptr;
  bool tx_selective = false;
  bool rx_selective = false;
  bool enabled = false;
  uint16_t queue = kAnyQueue;  // endpoint queue id at the port
  uint16_t hw_queue = 0;       // the port's queue pair serving it
  // Its lane (PortContext::assign_lanes): the lock its data-path calls take.
  std::atomic<uint16_t> lane{kWholePort};
  // Frames for it read from the device on hw_queue, and on another queue
  // (fi_dpdk.h's ep_steering).
  uint64_t frames_on_own_queue = 0;
  uint64_t frames_on_other_queue = 0;
  uint32_t session = 0;  // this incarnation, random, never 0
  uint64_t tx_op_flags = 0;
  uint64_t rx_op_flags = 0;
  size_t min_multi_recv = kDefaultMinMultiRecv;  // FI_OPT_MIN_MULTI_RECV
  std::unique_ptr<proto::Engine> engine;         // the reliable transport
  // RMA and atomics at this endpoint as a target (lib/remote): its regions,
  // counters and CQ as the target sees them (dpdk_rma.cc), and the target
  // serving the engine's requests.  Declared after the engine: gone first.
  std::unique_ptr<remote::Host> target_host;
  std::unique_ptr<remote::Target> target;
  // Network keys (dpdk_ep_addr.cc): ep_attr->auth_key (0: none); the keys
  // fi_enable took frames with; the one sends carry to an address inserted
  // without a key; the AV key handles held until fi_close.
  uint32_t endpoint_auth_key = 0;
  std::vector<uint32_t> auth_keys;
  uint32_t transmit_key = 0;
  std::vector<fi_addr_t> auth_key_handles;
  uint64_t frames_not_sent = 0;  // mbuf pool empty or TX ring full
  uint64_t payloads_lent = 0;    // frames whose payload the device copied from its place
  uint64_t timeouts_logged = 0;  // engine stats().timeouts already logged (log_timeouts)
  // FI_EP_MSG (dpdk_cm.cc): the connection and the peer it is with (its
  // address; a connecting endpoint's `peer` is the passive endpoint's
  // until the ACCEPT names the new one); the request fi_accept answers;
  // the passive endpoint a listener serves.  Lock held.
  CmState cm_state = CmState::kIdle;
  av::Address peer{};
  // The connection's names, as sockets have them: an accepted endpoint is
  // named by its passive endpoint's address, and a connecting one names
  // its peer by the address it connected to (fi_getname, fi_getpeer).
  // Frames still go between the two endpoints' own queues (`peer`).
  std::optional<av::Address> connection_name;
  std::optional<av::Address> connected_to;
  uint32_t connect_nonce = 0;       // what the answer to our CONNECT echoes
  bool connected_reported = false;  // FI_CONNECTED is on the EQ
  bool shutdown_reported = false;   // FI_SHUTDOWN is on the EQ
  bool shutdown_sent = false;       // our SHUTDOWN is on the stream
  size_t control_in_flight = 0;     // control messages not acknowledged yet
  std::unique_ptr<ConnRequest> conn_request;
  PassiveEp* listener_of = nullptr;
  // The IPv6 peers this endpoint's connections, fi_connect and fi_accept
  // hold in the process's table, given back as they go.  Lock held.
  Ipv6Holds ipv6_holds;
  // A listener's refusals owed (address, nonce), sent at the end of its
  // next flush: the control handler runs inside the engine, which a send
  // from there would re-enter.
  std::vector<std::pair<av::Address, uint32_t>> rejects_due;
  bool is_msg() const { return info->ep_attr->type == FI_EP_MSG; }
  bool is_datagram() const { return info->ep_attr->type == FI_EP_DGRAM; }
  // FI_EP_DGRAM: when the last datagram went out (fi_close gives the peer
  // time to read it before the port may go).
  uint64_t last_datagram_ns = 0;
  // A control message from the peer `source_key` (proto::ControlHandler).
  void on_control(uint64_t source_key, uint32_t session, const uint8_t* body, size_t length);
  // A control message of ours completed (acknowledged, or failed).
  void on_control_sent(const proto::Completion& done);
  // Sends a control message of `kind` with `nonce` and `data` (cut to
  // wire::kMaxConnectionData) to `to`.  Lock held.
  int send_control(const av::Address& to, uint8_t kind, uint32_t nonce, const void* data,
                   size_t length);
  // Sends the refusals owed (rejects_due).  Lock held.
  void send_due_rejects();
  // Whether messages and requests from `source_key` are taken: on a
  // connected endpoint only its peer's (proto::SenderFilter).
  bool accepts_sender(uint64_t source_key) const;

  PortContext& port() { return *domain->port; }
  const PortContext& port() const { return *domain->port; }
  // Where this endpoint's frames come from: its port's MAC, its queue and
  // session (no IPv4 address: write_name adds the port's).
  av::Address own_address() const;  // dpdk_ep_addr.cc
  // dpdk_ep_addr.cc.  Lock held.  Where a transfer to `dest` goes: its
  // peer, the network key and (fi_group_addr) the peer group.  Returns 0 or
  // -FI_EINVAL (unknown address, bad group, a key not enabled here).
  int destination(fi_addr_t dest, proto::PeerAddress* out, uint32_t* group);
  // What a receive posted for `source` takes: a sender (FI_DIRECTED_RECV),
  // an authorization key (FI_AUTH_KEY in flags), a peer group.  Returns 0 or
  // -FI_EINVAL.
  int receive_filter(fi_addr_t source, uint64_t flags, proto::RecvRequest* request);
  // fi_enable: fixes the keys frames are taken with; fi_close releases them.
  int enable_auth_keys();
  void release_auth_keys();
  bool accepts_key(uint32_t key) const;
  bool peer_groups() const;
  // Send path: one message to `dest`.  Lock held.  Returns 0, -FI_EAGAIN
  // when tx_attr->size sends are in progress, -FI_EMSGSIZE, -FI_EINVAL.
  ssize_t send(const iovec* iov, size_t iov_count, fi_addr_t dest, void* context, uint64_t flags,
               uint64_t data, bool tagged, uint64_t tag);
  // Posts a receive; a message that came first completes it at once.
  ssize_t post_recv(const iovec* iov, size_t iov_count, fi_addr_t source, void* context,
                    uint64_t flags, bool tagged, uint64_t tag, uint64_t ignore);
  // fi_read / fi_write and their variants (dpdk_rma.cc).  Lock held.
  ssize_t remote(const fi_msg_rma& msg, uint64_t flags, bool write);
  // fi_atomic and its fetch and compare variants (dpdk_atomic.cc); op_class
  // is an atomic::Class.  Lock held.
  ssize_t atomic_op(const fi_msg_atomic& msg, const fi_ioc* compare, size_t compare_count,
                    fi_ioc* result, size_t result_count, uint64_t flags, int op_class);
  // The transport's frames go to the port, its completions to the CQs.
  // Lock held.  (Inline: most calls, each pass's for each endpoint, find
  // nothing to do.)
  void flush() {
    if (!engine->nothing_to_flush() || !rejects_due.empty()) flush_now();
  }
  void flush_now();
  void send_frames();           // the engine's outbox, built into mbufs and sent
  void hand_out_completions();  // the engine's completions, to the CQs and counters
  // After a send: flush(), unless the engine holds the outbox for company
  // and a progress pass will come without the application.  Lock held.
  void flush_unless_held();
  // FI_SOURCE_ERR's err_data: the sender's address in the info's format.
  std::vector<uint8_t> sender_address(uint64_t source_key) const;
  bool has_cap(uint64_t cap) const { return (info->caps & cap) != 0; }
  // An operation posted with FI_TRIGGER (dpdk_trigger.cc): `post` posts it
  // (lock held, without FI_TRIGGER) once the counter of the
  // fi_triggered_context `context` reaches its threshold, now if it has.
  // 0, -FI_EAGAIN with tx_attr->size of them waiting, -FI_EINVAL,
  // -FI_EOPNOTSUPP (no FI_TRIGGER, or not a threshold trigger).  Lock held.
  ssize_t trigger(void* context, std::function<ssize_t(Endpoint&)> post);
  size_t triggered_waiting = 0;  // this endpoint's in PortContext::triggered
  int aliases = 0;               // fi_ep_alias fids open on it (port lock)
};

// fi_ep_alias (dpdk_ep_alias.cc): another fid_ep for an endpoint, which
// differs from it only by its default op flags (fi_endpoint(3)).  The data
// path takes either through caller_of.
struct EndpointAlias {
  fid_ep fid;
  Endpoint* ep;
  uint64_t tx_op_flags;
  uint64_t rx_op_flags;
};
extern fi_ops g_alias_fid_ops;
int open_alias(Endpoint* ep, struct fi_alias* alias);
// FI_GETOPSFLAG / FI_SETOPSFLAG on an endpoint's or an alias's flags.
int op_flags_control(uint64_t* tx_op_flags, uint64_t* rx_op_flags, int command, void* arg);

// The endpoint a data-path call names and the op flags that apply when the
// call gives none: the endpoint's own, or its alias's.
struct Caller {
  Endpoint* ep;
  uint64_t tx_op_flags;
  uint64_t rx_op_flags;
};
inline Caller caller_of(fid_ep* fid) {
  if (fid->fid.ops == &g_alias_fid_ops) {
    const auto* alias = reinterpret_cast<EndpointAlias*>(fid);
    return {alias->ep, alias->tx_op_flags, alias->rx_op_flags};
  }
  Endpoint* ep = from_fid<Endpoint>(fid);
  return {ep, ep->tx_op_flags, ep->rx_op_flags};
}
inline Endpoint* endpoint_of(fid_ep* fid) {
  return caller_of(fid).ep;
}

// Opens an endpoint whose queue id `claim` picks and records under the port
// lock (it returns the queue id or a negative fabric errno); shared by
// fi_endpoint and the contexts of a scalable endpoint.  Takes a domain
// reference.  Returns 0 or the error.
int open_endpoint(Domain* domain, const fi_info* info, void* context,
                  const std::function<int(PortContext&, Endpoint*)>& claim, Endpoint** out);
// A context's fi_close tells its scalable endpoint.  Port lock held.
void forget_context(Endpoint* context);
// fi_ep_bind of an AV, for endpoints and contexts alike.  Port lock held.
int bind_av(Endpoint* ep, Av* av);
// Warns of the engine's last peer timeout and marks the count logged
// (dpdk_progress.cc); called when stats().timeouts != timeouts_logged.
// Lock held.
void log_timeouts(Endpoint* ep);
// The queue id info->src_addr asks for: kAnyQueue without one, -FI_EINVAL
// for a malformed one.
int requested_queue(const fi_info* info);
// fi_getname, fi_getpeer: `address` (of port's endpoint, or with the port
// lock held of a peer) in the info's address format, truncated to
// *addrlen (-FI_ETOOSMALL then); *addrlen gets the full size.
// -FI_EADDRNOTAVAIL when the format cannot carry it.
int write_name(const fi_info* info, const PortContext& port, av::Address address, void* addr,
               size_t* addrlen);

// The endpoint as lib/remote's target sees it (dpdk_rma.cc): its caps,
// its domain's regions, its remote counters and its receive CQ.  Called
// with the port lock held.
std::unique_ptr<remote::Host> make_target_host(Endpoint* ep);

}  // namespace ofi_dpdk::ofi
