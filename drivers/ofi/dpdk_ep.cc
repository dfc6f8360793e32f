// dpdk_ep.cc: fi_endpoint for FI_EP_RDM: binding, enabling, names, options,
// cancel.  An endpoint owns one queue id at its port: the "queue" of its
// address, which frames carry as dst_queue.
#include <rdma/fi_collective.h>

#include <cstring>
#include <new>

#include "drivers/ofi/dpdk_attr.h"
#include "drivers/ofi/dpdk_av.h"
#include "drivers/ofi/dpdk_clock.h"
#include "drivers/ofi/dpdk_cm.h"
#include "drivers/ofi/dpdk_cntr.h"
#include "drivers/ofi/dpdk_cq.h"
#include "drivers/ofi/dpdk_domain.h"
#include "drivers/ofi/dpdk_endpoint.h"
#include "drivers/ofi/dpdk_eq.h"
#include "drivers/ofi/dpdk_fid.h"
#include "drivers/ofi/dpdk_limits.h"
#include "drivers/ofi/dpdk_log.h"
#include "drivers/ofi/dpdk_objects.h"
#include "drivers/ofi/dpdk_ops.h"
#include "drivers/ofi/dpdk_port.h"
#include "drivers/ofi/dpdk_random.h"
#include "drivers/ofi/dpdk_sep.h"
#include "drivers/ofi/dpdk_shared_ctx.h"

namespace ofi_dpdk::ofi {
namespace {

// A random incarnation number, never 0.  Without the kernel's random bytes
// the clock and the endpoint's address stand in: distinct across restarts,
// though guessable.
uint32_t new_session(const void* endpoint) {
  uint32_t session = 0;
  if (!kernel_random(&session, sizeof(session))) {
    DPDK_WARN(FI_LOG_EP_CTRL, "getrandom failed: the session comes from the clock\n");
    session =
        static_cast<uint32_t>(now_ns() ^ (now_ns() >> 32) ^ reinterpret_cast<uintptr_t>(endpoint));
  }
  return session != 0 ? session : 1;
}

// Claims `wanted` (or the lowest free queue id for kAnyQueue) and its UDP
// port where the kernel shares the port's address (a queue whose port
// another socket has is passed over, or refused when wanted).  Lock held.
int claim_queue(PortContext& port, Endpoint* ep, uint16_t wanted) {
  const std::string& name = port.port->name();
  if (wanted != kAnyQueue) {
    if (wanted >= port.endpoints.size() || port.endpoints[wanted] != nullptr || port.held[wanted]) {
      const net::Port& nic = *port.port;
      if (wanted < port.endpoints.size() && nic.shared() && port.endpoints[wanted] == nullptr)
        DPDK_INFO(FI_LOG_EP_CTRL,
                  "queue %u of shared port %s is another process's: this one has %u to %u\n",
                  wanted, nic.name().c_str(), nic.endpoint_queue_first(),
                  nic.endpoint_queue_first() + nic.endpoint_queue_count() - 1);
      return -FI_EADDRINUSE;
    }
    std::string why;
    if (const int ret = port.kernel_ports.hold(wanted, &why); ret != 0) {
      DPDK_WARN(FI_LOG_EP_CTRL, "%s: endpoint queue %u refused: %s\n", name.c_str(), wanted,
                why.c_str());
      return ret;
    }
    port.place_endpoint(wanted, ep);
    return wanted;
  }
  int refused = -FI_ENOSPC;
  for (uint16_t q = 0; q < port.endpoints.size(); ++q) {
    if (port.endpoints[q] != nullptr || port.held[q]) continue;
    std::string why;
    if (const int ret = port.kernel_ports.hold(q, &why); ret == -FI_EADDRINUSE) {
      DPDK_INFO(FI_LOG_EP_CTRL, "%s: queue %u passed over: %s\n", name.c_str(), q, why.c_str());
      refused = ret;
      continue;
    } else if (ret != 0) {
      DPDK_WARN(FI_LOG_EP_CTRL, "%s: endpoint queue %u: %s\n", name.c_str(), q, why.c_str());
      return ret;
    }
    port.place_endpoint(q, ep);
    return q;
  }
  if (refused == -FI_EADDRINUSE)
    DPDK_WARN(FI_LOG_EP_CTRL, "%s: every free queue's UDP port is another socket's\n",
              name.c_str());
  return refused;
}

void release(Endpoint* ep) {
  if (ep->av) ep->av->refs--;
  if (ep->tx_cq) ep->tx_cq->refs--;  // each binding took its own reference
  if (ep->rx_cq) ep->rx_cq->refs--;
  if (ep->eq) ep->eq->refs--;
  for (Cntr* cntr : {ep->send_cntr, ep->recv_cntr, ep->read_cntr, ep->write_cntr,
                     ep->remote_read_cntr, ep->remote_write_cntr})
    if (cntr) cntr->refs--;
  ep->domain->refs--;
  fi_freeinfo(ep->info);
}

void log_stats(const Endpoint* ep) {
  const proto::TransportStats& s = ep->engine->stats();
  DPDK_INFO(FI_LOG_EP_DATA,
            "endpoint queue %u: frames sent %lu (payload lent to the device %lu) received %lu "
            "not sent %lu, retransmitted %lu "
            "(fast %lu), acks %lu, resets %lu, duplicates %lu, out of window %lu, stale %lu, "
            "bad %lu, stalled %lu, timeouts %lu, messages sent %lu received %lu\n",
            ep->queue, s.frames_sent, ep->payloads_lent, s.frames_received, ep->frames_not_sent,
            s.retransmitted, s.fast_retransmits, s.acks_sent, s.resets_sent, s.duplicates,
            s.out_of_window, s.stale_session, s.bad_frames, s.stalled_no_buffer, s.timeouts,
            s.messages_sent, s.messages_received);
  DPDK_INFO(FI_LOG_EP_DATA,
            "endpoint queue %u: waits for a timer: retransmission timeouts %lu (cuts undone "
            "%lu), tail loss "
            "probes %lu, window probes %lu, delayed acks %lu, delivery probes %lu; path "
            "changes %lu; window cuts for a loss %lu, deepened for a run of losses %lu, for "
            "congestion marks %lu, for queueing delay %lu (slowdowns %lu; delay ignored %lu "
            "times: a queue others kept full); the port's idle reads that yielded the CPU %lu\n",
            ep->queue, s.retransmit_timeouts, s.timeout_cuts_undone, s.tail_loss_probes,
            s.window_probes, s.delayed_acks, s.delivery_probes, s.path_changes, s.window_cuts_loss,
            s.window_cuts_deepened, s.window_cuts_marks, s.window_cuts_delay, s.delay_slowdowns,
            s.delay_yields, ep->domain->port->idle_yields.get());
  // ECN: what routers' queues marked (UDP frames only; doc/wire-protocol.md).
  if (s.congestion_marks_received != 0 || s.congestion_echoes_received != 0)
    DPDK_INFO(FI_LOG_EP_DATA,
              "endpoint queue %u: congestion marks: segments received marked %lu, acks that "
              "echoed them %lu, echoes received %lu\n",
              ep->queue, s.congestion_marks_received, s.congestion_echoes_sent,
              s.congestion_echoes_received);
  // The round trips the transport measured (ack delay included).
  if (s.round_trips.samples() != 0)
    DPDK_INFO(FI_LOG_EP_DATA,
              "endpoint queue %u: round trips measured %lu: p50 %lu ns, p90 %lu ns, p99 %lu ns, "
              "largest %lu ns\n",
              ep->queue, s.round_trips.samples(), s.round_trips.percentile(500),
              s.round_trips.percentile(900), s.round_trips.percentile(990), s.round_trips.max_ns());
  // Pacing (FI_DPDK_PACE_FROM_US): how often a segment waited for its pace.
  if (s.paced_waits != 0)
    DPDK_INFO(FI_LOG_EP_DATA, "endpoint queue %u: pacing: waits for the pace %lu\n", ep->queue,
              s.paced_waits);
  // What peers and strangers cost: the handshakes, the answers the budget
  // held back, the connections made and dropped, and the receive buffers.
  DPDK_INFO(FI_LOG_EP_DATA,
            "endpoint queue %u: peers: hellos sent %lu answered %lu, answers withheld %lu, "
            "connections opened %lu evicted %lu refused %lu, unproven forgotten %lu, left to a "
            "newer incarnation on AV removal %lu, bad tokens %lu, wrong key %lu, bad resets "
            "%lu, resets challenged %lu; held segments expired %lu reclaimed %lu, reorder "
            "pool full %lu, no memory %lu\n",
            ep->queue, s.hellos_sent, s.hellos_answered, s.answers_withheld, s.connections_opened,
            s.connections_evicted, s.connections_refused, s.unproven_forgotten,
            s.drops_of_other_incarnations, s.bad_tokens, s.wrong_key, s.bad_resets,
            s.reset_challenges, s.held_expired, s.held_reclaimed, s.reorder_full, s.no_memory);
  const frames::Framer& framer = *ep->domain->port->framer;
  if (framer.frame_key || framer.rx_bad_tags + framer.rx_key_mismatch != 0)
    DPDK_INFO(FI_LOG_EP_DATA,
              "endpoint queue %u: the port %s a job key (FI_DPDK_AUTH_KEY); frames refused "
              "for a wrong keyed tag %lu, for a key one side lacks %lu\n",
              ep->queue, framer.frame_key ? "has" : "has no", framer.rx_bad_tags.get(),
              framer.rx_key_mismatch.get());
  if (ep->is_datagram())
    DPDK_INFO(FI_LOG_EP_DATA,
              "endpoint queue %u: datagrams sent %lu received %lu dropped %lu (no room in the "
              "unexpected budget, or over their sender's share of it: %lu)\n",
              ep->queue, s.datagrams_sent, s.datagrams_received, s.datagrams_dropped,
              s.datagrams_over_share);
  if (s.path_narrowed_by_icmp + s.path_narrowed_by_silence + s.segments_from_pieces != 0)
    DPDK_INFO(FI_LOG_EP_DATA,
              "endpoint queue %u: path MTU: connections narrowed by a router's ICMP %lu, by "
              "unanswered large segments %lu; pieces sent %lu; segments taken from pieces %lu\n",
              ep->queue, s.path_narrowed_by_icmp, s.path_narrowed_by_silence, s.pieces_sent,
              s.segments_from_pieces);
}

// A peer whose last message we received may not have our ack for it: keep
// answering its retransmissions until it has been quiet long enough, as
// TCP's TIME_WAIT does.  On a clean path a short quiet will do; once the
// path has lost or delayed frames (a peer retransmitted to us, or we to it:
// a memif ring that overflowed, a drop), the peer may have backed its
// retransmission timer off to the transport's longest, so we wait that long
// and a margin before its last retransmission could have come and gone
// unanswered (fabtests' fi_bw -T 1 lost its last ack so).  Lock held.
void linger(Endpoint* ep) {
  constexpr uint64_t kCleanQuietNs = 20'000'000;
  const uint64_t lossy_quiet_ns = proto::TransportConfig{}.max_rto_ns + 50'000'000;
  if (!ep->enabled || ep->engine->last_data_ns() == 0) return;
  const proto::TransportStats& seen = ep->engine->stats();
  const bool lossy = seen.duplicates != 0 || seen.retransmitted != 0 || ep->frames_not_sent != 0;
  const uint64_t quiet_ns = lossy ? lossy_quiet_ns : kCleanQuietNs;
  const uint64_t longest_ns = 4 * quiet_ns;
  const uint64_t start = now_ns();
  for (uint64_t now = start; now - start < longest_ns; now = now_ns()) {
    if (now - ep->engine->last_data_ns() >= quiet_ns) break;
    ep->port().progress();
  }
}

// A datagram is sent once its frame is in the device's ring: its send
// completes at once, and a program may close and exit right after.  On
// net_memif the peer reads that ring from our memory, and our exit takes the
// ring away with every frame it has not read yet (fabtests' fi_dgram lost
// its one greeting so, one run in ten on a busy machine; with 100 ms here
// one in twenty still, with 1 s none in twenty-five).  A datagram endpoint
// that sent in the last kDatagramDrainNs waits out the rest of it,
// progressing the port, before it closes.  Lock held.
void drain_datagrams(Endpoint* ep) {
  constexpr uint64_t kDatagramDrainNs = 1'000'000'000;
  if (!ep->enabled || ep->last_datagram_ns == 0) return;
  while (now_ns() - ep->last_datagram_ns < kDatagramDrainNs) ep->port().progress();
}

// FI_EP_MSG at close: a peer still connected hears that we went (fi_cm(3))
// and a request never answered is refused, while the endpoint still takes
// the acknowledgements: the control messages are resent for a while (a
// first one to a peer waits for the handshake).  Lock held.
void say_goodbye(Endpoint* ep) {
  constexpr uint64_t kGoodbyeNs = 500'000'000;
  const bool connected = ep->cm_state == CmState::kConnected || ep->cm_state == CmState::kAccepting;
  if (ep->enabled && connected &&
      ep->send_control(ep->peer, static_cast<uint8_t>(wire::ControlKind::kShutdown), 0, nullptr,
                       0) == 0)
    ep->cm_state = CmState::kShutdown;
  if (ep->conn_request) {
    bool refuse = false;
    {
      std::lock_guard requests(conn_request_lock());
      refuse = !ep->conn_request->answered;
      ep->conn_request->answered = true;
    }
    if (refuse && ep->enabled)
      ep->send_control(ep->conn_request->client, static_cast<uint8_t>(wire::ControlKind::kReject),
                       ep->conn_request->nonce, nullptr, 0);
    release_conn_request(std::move(ep->conn_request));
  }
  for (const uint64_t start = now_ns(); ep->control_in_flight > 0 && now_ns() - start < kGoodbyeNs;)
    ep->port().progress();
}

int ep_close(fid* fid) {
  Endpoint* ep = from_fid<Endpoint>(fid);
  {
    PortContext& port = ep->port();
    std::lock_guard guard(port.lock);
    if (ep->aliases != 0) return -FI_EBUSY;  // fi_endpoint(3): aliases close first
    port.drop_triggers(ep);                  // triggered operations that never ran
    if (ep->is_msg()) say_goodbye(ep);
    // Sends held for company (proto::Engine::holding_bundle) go now: a
    // sender that closes right after a burst has no later pass to wait for.
    if (ep->enabled) ep->flush();
    linger(ep);
    drain_datagrams(ep);
    log_stats(ep);
    if (ep->queue < port.endpoints.size() && port.endpoints[ep->queue] == ep) {
      port.remove_endpoint(ep->queue);
      port.release_queue_port(ep->queue);
      port.assign_lanes();
    }
    port.port->unbind_endpoint_queue(ep->queue);
    ep->release_auth_keys();
    if (ep->is_msg()) say_goodbye(ep);
    if (ep->av != nullptr) std::erase(ep->av->endpoints, ep);
    if (ep->srx != nullptr) std::erase(ep->srx->endpoints, ep);
    if (ep->stx != nullptr) ep->stx->refs--;
    if (ep->parent != nullptr) forget_context(ep);
    // The engine gives back the mbufs it keeps (PortContext::release) while
    // the port is surely there: after release() the domain may close it.
    ep->target.reset();
    ep->engine.reset();
  }
  if (ep->eq != nullptr && ep->is_msg()) ep->eq->unwatch(&ep->port());
  release(ep);
  delete ep;
  return 0;
}

// fi_endpoint(3): a counter is bound for the events its flags name; each
// kind of event has at most one counter.  Lock held.
int bind_counter(Endpoint* ep, Cntr* cntr, uint64_t flags) {
  if (cntr->domain != ep->domain) return -FI_EINVAL;
  struct Slot {
    uint64_t flag;
    Cntr* Endpoint::*member;
  };
  static constexpr Slot kSlots[] = {
      {FI_SEND, &Endpoint::send_cntr},
      {FI_RECV, &Endpoint::recv_cntr},
      {FI_READ, &Endpoint::read_cntr},
      {FI_WRITE, &Endpoint::write_cntr},
      {FI_REMOTE_READ, &Endpoint::remote_read_cntr},
      {FI_REMOTE_WRITE, &Endpoint::remote_write_cntr},
  };
  uint64_t known = 0;
  for (const Slot& slot : kSlots) known |= slot.flag;
  if (flags == 0 || (flags & ~known)) return -FI_EBADFLAGS;
  // fi_endpoint(3) has counting remote reads and writes "require" an
  // endpoint created with FI_RMA_EVENT: that is the application's promise,
  // not a refusal the provider owes.  libfabric's own fi_ubertest binds its
  // receive counter for FI_RECV | FI_REMOTE_READ | FI_REMOTE_WRITE on every
  // endpoint, and its utility providers take that; so do we, and a counter
  // bound so counts what peers do, as one on an FI_RMA_EVENT endpoint.
  if ((flags & (FI_REMOTE_READ | FI_REMOTE_WRITE)) && !ep->has_cap(FI_RMA_EVENT))
    DPDK_INFO(FI_LOG_EP_CTRL,
              "a counter bound for remote reads or writes on an endpoint without "
              "FI_RMA_EVENT: it counts them all the same\n");
  for (const Slot& slot : kSlots)
    if ((flags & slot.flag) && ep->*slot.member != nullptr) return -FI_EALREADY;
  for (const Slot& slot : kSlots) {
    if (!(flags & slot.flag)) continue;
    ep->*slot.member = cntr;
    cntr->refs++;
  }
  return 0;
}

// A context only sends or only receives: binding it for events of the
// other direction is -FI_EINVAL, and so is an AV (its scalable endpoint's
// AV is its own, fi_endpoint(3)).
bool bind_fits_role(const Endpoint* ep, const fid* bfid, uint64_t flags) {
  switch (ep->role) {
    case Endpoint::Role::kEndpoint:
      return true;
    case Endpoint::Role::kTxContext:
      return bfid->fclass != FI_CLASS_AV && !(flags & (FI_RECV | FI_REMOTE_READ | FI_REMOTE_WRITE));
    case Endpoint::Role::kRxContext:
      return bfid->fclass != FI_CLASS_AV && !(flags & (FI_TRANSMIT | FI_READ | FI_WRITE));
  }
  return false;
}

int ep_bind(fid* ep_fid, fid* bfid, uint64_t flags) {
  Endpoint* ep = from_fid<Endpoint>(ep_fid);
  if (bfid == nullptr) return -FI_EINVAL;
  std::lock_guard guard(ep->port().lock);
  if (ep->enabled) return -FI_EOPBADSTATE;
  if (!bind_fits_role(ep, bfid, flags)) return -FI_EINVAL;
  switch (bfid->fclass) {
    case FI_CLASS_AV: {
      Av* av = from_fid<Av>(bfid);
      if (flags != 0 || av->domain != ep->domain) return -FI_EINVAL;
      return bind_av(ep, av);
    }
    case FI_CLASS_CQ: {
      Cq* cq = from_fid<Cq>(bfid);
      if (cq->domain != ep->domain) return -FI_EINVAL;
      if (flags & ~(FI_TRANSMIT | FI_RECV | FI_SELECTIVE_COMPLETION)) return -FI_EBADFLAGS;
      if (!(flags & (FI_TRANSMIT | FI_RECV))) return -FI_EBADFLAGS;
      if (((flags & FI_TRANSMIT) && ep->tx_cq) || ((flags & FI_RECV) && ep->rx_cq))
        return -FI_EALREADY;
      if (flags & FI_TRANSMIT) {
        ep->tx_cq = cq;
        ep->tx_selective = flags & FI_SELECTIVE_COMPLETION;
        cq->refs++;
      }
      if (flags & FI_RECV) {
        ep->rx_cq = cq;
        ep->rx_selective = flags & FI_SELECTIVE_COMPLETION;
        cq->refs++;
      }
      return 0;
    }
    case FI_CLASS_EQ: {
      if (ep->eq != nullptr) return -FI_EALREADY;
      ep->eq = from_fid<Eq>(bfid);
      ep->eq->refs++;
      // Connection events arrive through the port: reading the EQ drives it.
      if (ep->is_msg()) ep->eq->watch(ep->domain->port);
      return 0;
    }
    case FI_CLASS_CNTR:
      return bind_counter(ep, from_fid<Cntr>(bfid), flags);
    case FI_CLASS_SRX_CTX: {
      // fi_endpoint(3): one shared receive context per endpoint, of its
      // domain.  (Scalable endpoints' contexts have their own receives.)
      auto* srx = from_fid<SharedRx>(bfid);
      if (flags != 0 || srx->domain != ep->domain || ep->parent != nullptr) return -FI_EINVAL;
      if (ep->srx != nullptr) return -FI_EALREADY;
      try {
        srx->endpoints.push_back(ep);
      } catch (const std::bad_alloc&) {
        return -FI_ENOMEM;
      }
      ep->srx = srx;
      ep->engine->share_receives(&srx->posted);
      return 0;
    }
    case FI_CLASS_STX_CTX: {
      auto* stx = from_fid<SharedTx>(bfid);
      if (flags != 0 || stx->domain != ep->domain || ep->parent != nullptr) return -FI_EINVAL;
      if (ep->stx != nullptr) return -FI_EALREADY;
      ep->stx = stx;
      stx->refs++;
      return 0;
    }
    default:
      return -FI_EINVAL;
  }
}

int ep_enable(Endpoint* ep) {
  std::lock_guard guard(ep->port().lock);
  if (ep->enabled) return 0;
  // A connected endpoint's one peer comes from the connection, not an AV.
  if (ep->av == nullptr && !ep->is_msg()) return -FI_ENOAV;
  // No CQ is needed (fi_endpoint(3): only what an endpoint uses must be
  // bound first): a receive context that only serves RMA has none, as
  // Open MPI's one-sided BTL opens it.
  std::string refused;
  ep->hw_queue = ep->port().port->bind_endpoint_queue(ep->queue, &refused);
  // A queue beyond the device's is expected with many endpoints; a rule
  // the device took for the probe and refuses now is not.
  if (!refused.empty() && ep->queue < ep->port().port->queue_pairs())
    DPDK_WARN(FI_LOG_EP_CTRL,
              "%s: endpoint queue %u: steering rule refused (%s); its "
              "frames are found in software\n",
              ep->port().port->name().c_str(), ep->queue, refused.c_str());
  else if (!refused.empty())
    DPDK_INFO(FI_LOG_EP_CTRL, "%s: %s: its frames are found in software\n",
              ep->port().port->name().c_str(), refused.c_str());
  if (const int ret = ep->enable_auth_keys(); ret != 0) {
    ep->port().port->unbind_endpoint_queue(ep->queue);
    return ret;
  }
  ep->enabled = true;
  ep->port().assign_lanes();
  return 0;
}

int ep_control(fid* fid, int command, void* arg) {
  Endpoint* ep = from_fid<Endpoint>(fid);
  switch (command) {
    case FI_ENABLE:
      return ep_enable(ep);
    case FI_GETOPSFLAG:
    case FI_SETOPSFLAG:
      return op_flags_control(&ep->tx_op_flags, &ep->rx_op_flags, command, arg);
    case FI_ALIAS:
      return open_alias(ep, static_cast<struct fi_alias*>(arg));
    default:
      return -FI_ENOSYS;
  }
}

int ep_getname(fid* fid, void* addr, size_t* addrlen) {
  Endpoint* ep = from_fid<Endpoint>(fid);
  if (addrlen == nullptr) return -FI_EINVAL;
  av::Address self = ep->own_address();
  if (ep->parent != nullptr) {
    // Contexts share their scalable endpoint's address (fi_endpoint(3)),
    // which names no session: each context is an incarnation of its own.
    self.queue = ep->parent->base;
    self.session = 0;
  }
  return write_name(ep->info, ep->port(), self, addr, addrlen);
}

ssize_t ep_cancel(fid* fid, void* context) {
  Endpoint* ep = from_fid<Endpoint>(fid);
  std::lock_guard guard(ep->port().lock);
  if (!ep->enabled) return -FI_ENOENT;
  const int ret = ep->engine->cancel_recv(context);
  ep->flush();
  return ret == 0 ? 0 : -FI_ENOENT;
}

// fi_endpoint(3) options: FI_OPT_MIN_MULTI_RECV (a size_t) is the one that
// applies; every other option or level is -FI_ENOPROTOOPT.  A value buffer
// of the wrong size is -FI_EINVAL on set, and -FI_ETOOSMALL on get (with
// *optlen set to the size needed).
int ep_getopt(fid* fid, int level, int optname, void* optval, size_t* optlen) {
  Endpoint* ep = from_fid<Endpoint>(fid);
  // FI_OPT_CM_DATA_SIZE: the connection data a connected endpoint's
  // fi_connect and fi_accept carry.
  const bool cm_data = optname == FI_OPT_CM_DATA_SIZE && ep->is_msg();
  if (level != FI_OPT_ENDPOINT || (optname != FI_OPT_MIN_MULTI_RECV && !cm_data))
    return -FI_ENOPROTOOPT;
  if (optval == nullptr || optlen == nullptr) return -FI_EINVAL;
  if (*optlen < sizeof(size_t)) {
    *optlen = sizeof(size_t);
    return -FI_ETOOSMALL;
  }
  std::lock_guard guard(ep->port().lock);
  *static_cast<size_t*>(optval) = cm_data ? wire::kMaxConnectionData : ep->min_multi_recv;
  *optlen = sizeof(size_t);
  return 0;
}

int ep_setopt(fid* fid, int level, int optname, const void* optval, size_t optlen) {
  if (level != FI_OPT_ENDPOINT || optname != FI_OPT_MIN_MULTI_RECV) return -FI_ENOPROTOOPT;
  if (optval == nullptr || optlen != sizeof(size_t)) return -FI_EINVAL;
  Endpoint* ep = from_fid<Endpoint>(fid);
  std::lock_guard guard(ep->port().lock);
  // Receives posted from now on use it (fi_endpoint(3)).
  ep->min_multi_recv = *static_cast<const size_t*>(optval);
  return 0;
}

ssize_t ep_rx_size_left(fid_ep* ep_fid) {
  Endpoint* ep = from_fid<Endpoint>(ep_fid);
  std::lock_guard guard(ep->port().lock);
  if (!ep->enabled) return -FI_EOPBADSTATE;
  return static_cast<ssize_t>(ep->engine->config().max_posted_recvs - ep->engine->posted_recvs());
}

ssize_t ep_tx_size_left(fid_ep* ep_fid) {
  Endpoint* ep = from_fid<Endpoint>(ep_fid);
  std::lock_guard guard(ep->port().lock);
  if (!ep->enabled) return -FI_EOPBADSTATE;
  return static_cast<ssize_t>(ep->engine->config().max_outstanding_sends -
                              ep->engine->outstanding_sends());
}

fi_ops g_ep_fid_ops = {
    .size = sizeof(fi_ops),
    .close = ep_close,
    .bind = ep_bind,
    .control = ep_control,
    .ops_open = DPDK_ENOSYS(fi_ops, ops_open),
    .tostr = DPDK_ENOSYS(fi_ops, tostr),
    .ops_set = DPDK_ENOSYS(fi_ops, ops_set),
};

fi_ops_ep g_ep_ops = {
    .size = sizeof(fi_ops_ep),
    .cancel = ep_cancel,
    .getopt = ep_getopt,
    .setopt = ep_setopt,
    .tx_ctx = DPDK_ENOSYS(fi_ops_ep, tx_ctx),
    .rx_ctx = DPDK_ENOSYS(fi_ops_ep, rx_ctx),
    .rx_size_left = ep_rx_size_left,
    .tx_size_left = ep_tx_size_left,
};

fi_ops_cm g_cm_ops = {
    .size = sizeof(fi_ops_cm),
    .setname = DPDK_ENOSYS(fi_ops_cm, setname),
    .getname = ep_getname,
    .getpeer = DPDK_ENOSYS(fi_ops_cm, getpeer),
    .connect = DPDK_ENOSYS(fi_ops_cm, connect),
    .listen = DPDK_ENOSYS(fi_ops_cm, listen),
    .accept = DPDK_ENOSYS(fi_ops_cm, accept),
    .reject = DPDK_ENOSYS(fi_ops_cm, reject),
    .shutdown = DPDK_ENOSYS(fi_ops_cm, shutdown),
    .join = DPDK_ENOSYS(fi_ops_cm, join),
};

fi_ops_collective g_collective_ops = {
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

int op_flags_control(uint64_t* tx_op_flags, uint64_t* rx_op_flags, int command, void* arg) {
  if (arg == nullptr) return -FI_EINVAL;
  auto* flags = static_cast<uint64_t*>(arg);
  if ((*flags & FI_TRANSMIT) && (*flags & FI_RECV)) return -FI_EINVAL;
  if (!(*flags & (FI_TRANSMIT | FI_RECV))) return -FI_EINVAL;
  uint64_t* own = (*flags & FI_TRANSMIT) ? tx_op_flags : rx_op_flags;
  if (command == FI_GETOPSFLAG) {
    *flags = *own;
  } else {
    *own = *flags & ~(FI_TRANSMIT | FI_RECV);
  }
  return 0;
}

int write_name(const fi_info* info, const PortContext& port, av::Address address, void* addr,
               size_t* addrlen) {
  port.name_by_ip(&address);
  return write_address(info->addr_format, address, addr, addrlen);
}

int requested_queue(const fi_info* info) {
  if (info->src_addr == nullptr) return kAnyQueue;
  const auto source = info_address(info, true);
  return source ? source->queue : -FI_EINVAL;
}

int bind_av(Endpoint* ep, Av* av) {
  if (ep->av != nullptr) return -FI_EALREADY;
  try {
    av->endpoints.push_back(ep);  // fi_av_remove drops peers in this ep's engine
  } catch (const std::bad_alloc&) {
    return -FI_ENOMEM;
  }
  ep->av = av;
  av->refs++;
  return 0;
}

int open_endpoint(Domain* domain, const fi_info* info, void* context,
                  const std::function<int(PortContext&, Endpoint*)>& claim, Endpoint** out) {
  // fi_endpoint(3): auth_key counts from API 1.5 on; with FI_AV_AUTH_KEY
  // the domain's endpoints take their keys from the AV only.
  uint32_t auth_key = 0;
  if (FI_VERSION_GE(domain->api_version, FI_VERSION(1, 5)) && info->ep_attr != nullptr &&
      info->ep_attr->auth_key_size != 0) {
    auth_key = endpoint_network_key(info->ep_attr->auth_key, info->ep_attr->auth_key_size);
    if (auth_key == 0 || domain->av_auth_keys) {
      DPDK_INFO(FI_LOG_EP_CTRL,
                "ep_attr->auth_key: 4 bytes, a nonzero network key, and none "
                "in a domain with FI_AV_AUTH_KEY\n");
      return -FI_EINVAL;
    }
  }
  auto* ep = new (std::nothrow) Endpoint();
  if (ep == nullptr) return -FI_ENOMEM;
  ep->info = fi_dupinfo(info);
  if (ep->info == nullptr) {
    delete ep;
    return -FI_ENOMEM;
  }
  ep->domain = domain;
  ep->endpoint_auth_key = auth_key;
  ep->session = new_session(ep);
  ep->tx_op_flags = info->tx_attr ? info->tx_attr->op_flags : 0;
  ep->rx_op_flags = info->rx_attr ? info->rx_attr->op_flags : 0;
  {
    std::lock_guard guard(domain->port->lock);
    const int queue = claim(*domain->port, ep);
    if (queue < 0) {
      fi_freeinfo(ep->info);
      delete ep;
      return queue;
    }
    ep->queue = static_cast<uint16_t>(queue);
  }
  proto::TransportConfig transport;
  // IPv4 and UDP take their share of every frame where the port speaks UDP.
  transport.max_payload =
      domain->port->port->max_frame_payload() - domain->port->framer->encap_overhead();
  transport.max_msg_size = kMaxMsgSize;
  if (info->ep_attr->type == FI_EP_DGRAM) {
    // One frame a message, the size fi_getinfo promised on every port.
    transport.datagrams = true;
    transport.max_payload = std::min<uint32_t>(
        transport.max_payload,
        static_cast<uint32_t>(datagram_max_msg_size(domain->port->framer->encap_overhead())));
    transport.max_msg_size = transport.max_payload;
  }
  transport.unexpected_bytes = params().unexpected_bytes;
  transport.spray_paths = params().spray_paths;
  transport.rendezvous_bytes = params().rendezvous_bytes;
  transport.bundle_bytes = params().bundle_bytes;
  transport.max_outstanding_sends = kQueueDepth;
  transport.max_posted_recvs = kQueueDepth;
  transport.peer_timeout_ns = params().peer_timeout_ms * 1'000'000ull;
  transport.ack_delay_ns = params().ack_delay_us * 1'000ull;
  transport.pace_from_ns = params().pace_from_us * 1'000ull;
  transport.delay_target_ns = params().delay_target_us * 1'000ull;
  transport.max_connections = params().max_peers;
  transport.connect_timeout_ns = params().connect_timeout_ms * 1'000'000ull;
  transport.delivery_timeout_ns = params().delivery_timeout_ms * 1'000'000ull;
  transport.response_bytes = params().response_bytes;
  transport.connection_response_bytes = params().response_bytes / 4;
  // Tokens are keyed per endpoint: a peer that learned one learns nothing
  // of another endpoint's.
  if (!kernel_random(transport.token_secret, sizeof(transport.token_secret))) {
    transport.token_secret[0] ^= now_ns() ^ ep->session;
    transport.token_secret[1] ^= reinterpret_cast<uintptr_t>(ep);
  }
  frames::Framer* framer = domain->port->framer.get();
  transport.encap_overhead = framer->encap_overhead();
  ep->engine =
      std::make_unique<proto::Engine>(transport, domain->port->port->mac(), ep->queue, ep->session);
  ep->engine->set_frame_keeper(domain->port.get());
  // Beyond the gateway, frames fit FI_DPDK_ROUTED_MTU: a router's links
  // need not carry what ours do (DF is set: it would drop them).  And a
  // path found narrower (drivers/frames/framer_path_mtu.cc) binds the
  // connections made after.
  ep->engine->set_path_limit(
      [framer](const uint8_t* link) { return framer->path_limit(link, now_ns()); });
  ep->engine->set_path_learned([framer](const uint8_t* link, uint32_t payload) {
    framer->learn_path(link, payload, now_ns());
  });
  if (framer->udp || framer->udp6) {
    ep->engine->set_reaching_ports(
        [framer, ep](const uint8_t* link, uint16_t peer_queue, std::span<uint16_t> out) {
          return framer->reaching_ports(link, peer_queue, ep->queue, ep->hw_queue, out);
        });
  }
  if (ep->is_msg()) {
    ep->engine->set_control_handler(
        [ep](uint64_t source_key, uint32_t session, const uint8_t* body, size_t length) {
          ep->on_control(source_key, session, body, length);
        });
    // A stranger's messages never reach a connected endpoint's receives,
    // nor its requests its memory.
    ep->engine->set_sender_filter(
        [ep](uint64_t source_key) { return ep->accepts_sender(source_key); });
  }
  ep->target_host = make_target_host(ep);
  ep->target = std::make_unique<remote::Target>(*ep->target_host, ep->domain->regions, *ep->engine);
  domain->refs++;
  ep->fid.fid.fclass = FI_CLASS_EP;
  ep->fid.fid.context = context;
  ep->fid.fid.ops = &g_ep_fid_ops;
  ep->fid.ops = &g_ep_ops;
  ep->fid.cm = ep->is_msg() ? msg_cm_ops() : &g_cm_ops;
  ep->fid.msg = &g_msg_ops;
  ep->fid.rma = &g_rma_ops;
  ep->fid.tagged = &g_tagged_ops;
  ep->fid.atomic = &g_atomic_ops;
  ep->fid.collective = &g_collective_ops;
  *out = ep;
  return 0;
}

int endpoint_open(fid_domain* domain_fid, fi_info* info, fid_ep** out, void* context) {
  if (info == nullptr || info->ep_attr == nullptr) return -FI_EINVAL;
  const fi_ep_type type = info->ep_attr->type;
  if (type != FI_EP_RDM && type != FI_EP_DGRAM && type != FI_EP_MSG) {
    DPDK_INFO(FI_LOG_EP_CTRL, "fi_endpoint: only FI_EP_RDM, FI_EP_MSG and FI_EP_DGRAM\n");
    return -FI_EINVAL;
  }
  if (info->caps & ~caps_of(type)) return -FI_EINVAL;
  Domain* domain = from_fid<Domain>(domain_fid);
  // fi_endpoint of an FI_CONNREQ's info: the endpoint that accepts it, on
  // any free queue (src_addr names the passive endpoint's).
  ConnRequest* request = nullptr;
  if (type == FI_EP_MSG)
    if (const int ret = claim_conn_request(info, &request); ret != 0) return ret;
  int requested = request != nullptr ? kAnyQueue : requested_queue(info);
  // A passive endpoint's address, queue and session, when info->handle is one.
  uint32_t inherited_session = 0;
  if (request == nullptr) {
    const int inherited = take_passive_address(domain, info, &inherited_session);
    if (inherited < 0) return inherited;
    if (inherited <= kAnyQueue) requested = inherited;
  }
  if (requested < 0) return requested;
  const auto wanted = static_cast<uint16_t>(requested);
  Endpoint* ep = nullptr;
  const int ret = open_endpoint(
      domain, info, context,
      [wanted, inherited_session](PortContext& port, Endpoint* opened) {
        if (inherited_session != 0) opened->session = inherited_session;
        return claim_queue(port, opened, wanted);
      },
      &ep);
  if (ret != 0) {
    if (request != nullptr) {
      std::lock_guard requests(conn_request_lock());
      request->claimed = false;
    }
    return ret;
  }
  if (request != nullptr) {
    std::lock_guard guard(ep->port().lock);
    ep->conn_request.reset(request);
  }
  *out = &ep->fid;
  return 0;
}

}  // namespace ofi_dpdk::ofi
