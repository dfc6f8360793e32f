// dpdk_msg.cc: fi_msg(3) on RDM endpoints, and the glue between an
// endpoint's transport engine and the port: operations go into the engine,
// the frames it produces are built into mbufs here, and its completions go
// to the endpoint's CQs.
#include <fi_dpdk.h>
#include <rte_cycles.h>
#include <rte_mbuf.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <ctime>

#include "drivers/net/mbuf_handoff.h"
#include "drivers/ofi/dpdk_attr.h"
#include "drivers/ofi/dpdk_av.h"
#include "drivers/ofi/dpdk_clock.h"
#include "drivers/ofi/dpdk_cntr.h"
#include "drivers/ofi/dpdk_cq.h"
#include "drivers/ofi/dpdk_endpoint.h"
#include "drivers/ofi/dpdk_engine_errno.h"
#include "drivers/ofi/dpdk_eq.h"
#include "drivers/ofi/dpdk_iov.h"
#include "drivers/ofi/dpdk_limits.h"
#include "drivers/ofi/dpdk_log.h"
#include "drivers/ofi/dpdk_op_flags.h"
#include "drivers/ofi/dpdk_ops.h"
#include "drivers/ofi/dpdk_port.h"
#include "drivers/ofi/dpdk_shared_ctx.h"
#include "drivers/ofi/dpdk_trigger.h"
#include "lib/proto/frame_codec.h"

namespace ofi_dpdk::ofi {
namespace {

// The most frames handed to the device at a time; a port asks for fewer
// (net::Port::burst_frames) where the peer starts on the first ones while
// we build the rest (a memif peer polls the ring as we fill it).
constexpr uint16_t kTxBatch = 32;
// Tries in a row that send nothing before the rest of a batch is dropped.
constexpr int kTxRetries = 64;

}  // namespace

namespace {

uint64_t monotonic_ns() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1'000'000'000ull + static_cast<uint64_t>(ts.tv_nsec);
}

// The TSC against the monotonic clock, measured once EAL knows the TSC's
// rate: reading the TSC costs a few nanoseconds, where clock_gettime was a
// tenth of a busy progress loop.
// Nanoseconds per tick in fixed point, kTickShift bits of fraction: a
// multiply and a shift per reading, where a double took two conversions.
constexpr unsigned kTickShift = 40;
__extension__ using WideProduct = unsigned __int128;

struct TscClock {
  uint64_t tsc0 = 0;
  uint64_t ns0 = 0;
  uint64_t ns_per_tick_fixed = 0;
};

const TscClock* tsc_clock() {
  static const TscClock* clock = []() -> const TscClock* {
    const uint64_t hz = rte_get_tsc_hz();
    if (hz == 0) return nullptr;
    static TscClock c;
    c.ns0 = monotonic_ns();
    c.tsc0 = rte_get_tsc_cycles();
    c.ns_per_tick_fixed = static_cast<uint64_t>((WideProduct{1'000'000'000} << kTickShift) / hz);
    return &c;
  }();
  return clock;
}

}  // namespace

uint64_t now_ns() {
  // Only after EAL is up (it measures the TSC's rate); before, and where
  // there is no TSC, the monotonic clock.
  static std::atomic<const TscClock*> ready{nullptr};
  const TscClock* clock = ready.load(std::memory_order_acquire);
  if (clock == nullptr) {
    if (!fi_dpdk_eal_ready()) return monotonic_ns();
    clock = tsc_clock();
    if (clock == nullptr) return monotonic_ns();
    ready.store(clock, std::memory_order_release);
  }
  const uint64_t ticks = rte_get_tsc_cycles() - clock->tsc0;
  return clock->ns0 +
         static_cast<uint64_t>((WideProduct{ticks} * clock->ns_per_tick_fixed) >> kTickShift);
}

void report_unusable(const iovec* iov, size_t count, const char* call) {
  if (iov == nullptr) {
    DPDK_WARN(FI_LOG_EP_DATA, "%s: -FI_EINVAL: a count of %zu and no list\n", call, count);
    return;
  }
  if (count > kIovLimit) {
    DPDK_WARN(FI_LOG_EP_DATA, "%s: -FI_EINVAL: %zu entries in its list, at most %zu\n", call, count,
              kIovLimit);
    return;
  }
  for (size_t i = 0; i < count; ++i) {
    if (iov[i].iov_base == nullptr && iov[i].iov_len != 0) {
      DPDK_WARN(FI_LOG_EP_DATA,
                "%s: -FI_EINVAL: entry %zu of its list has %zu bytes at address 0\n", call, i,
                iov[i].iov_len);
      return;
    }
  }
}

void report_unusable(const fi_ioc* ioc, size_t count, const char* call) {
  for (size_t i = 0; i < count; ++i) {
    if (ioc[i].addr == nullptr && ioc[i].count != 0) {
      DPDK_WARN(FI_LOG_EP_DATA,
                "%s: -FI_EINVAL: entry %zu of its list has %zu elements at address 0\n", call, i,
                ioc[i].count);
      return;
    }
  }
}

ssize_t Endpoint::send(const iovec* iov, size_t iov_count, fi_addr_t dest, void* context,
                       uint64_t flags, uint64_t data, bool tagged, uint64_t tag) {
  if (!enabled) return -FI_EOPBADSTATE;
  if (!usable_iov(iov, iov_count, "a send")) return -FI_EINVAL;
  if (flags & FI_TRIGGER) {
    return trigger(context, [kept = keep_iov(iov, iov_count, flags), dest, context, flags, data,
                             tagged, tag](Endpoint& ep) {
      return ep.send(kept.parts.data(), kept.parts.size(), dest, context, flags & ~FI_TRIGGER, data,
                     tagged, tag);
    });
  }
  proto::PeerAddress address;
  proto::SendRequest request;
  if (const int ret = destination(dest, &address, &request.group); ret != 0) return ret;
  if (is_datagram()) last_datagram_ns = now_ns();
  request.iov = iov;
  request.iov_count = iov_count;
  request.context = context;
  request.user_flags = FI_SEND | (tagged ? FI_TAGGED : FI_MSG);
  request.tagged = tagged;
  request.tag = tag;
  request.has_data = flags & FI_REMOTE_CQ_DATA;
  request.cq_data = data;
  request.copy = flags & FI_INJECT;
  const bool cq_entry = tx_cq != nullptr && wants_completion(tx_selective, flags);
  request.completion = cq_entry || send_cntr != nullptr;
  if (!cq_entry) request.user_flags |= kNoCqEntry;
  // Nobody hears of the send: no reason to wait for the receiver.
  // FI_MATCH_COMPLETE (fi_tsendmsg only) rides on the same notice.
  request.delivery_complete =
      (flags & (FI_DELIVERY_COMPLETE | FI_MATCH_COMPLETE)) && request.completion;
  const int ret = engine_call([&] { return engine->send(address, request, now_ns()); });
  if (ret == -EAGAIN) port().progress_if_manual(lane.load(std::memory_order_relaxed), now_ns());
  flush_unless_held();
  return engine_errno(ret);
}

void Endpoint::flush_unless_held() {
  // A small send behind unacknowledged ones may wait for the next progress
  // pass (the application's, the progress loop's or the safety net's): the
  // sends made meanwhile join its frame (proto::Engine::holding_bundle).
  if (!(port().passes_come_anyway() && engine->holding_bundle())) flush();
}

ssize_t Endpoint::post_recv(const iovec* iov, size_t iov_count, fi_addr_t source, void* context,
                            uint64_t flags, bool tagged, uint64_t tag, uint64_t ignore) {
  if (!enabled) return -FI_EOPBADSTATE;
  if (iov_count > kIovLimit || (iov == nullptr && iov_count != 0)) {
    report_unusable(iov, iov_count, "a receive");
    return -FI_EINVAL;
  }
  if (flags & FI_TRIGGER) {
    return trigger(context, [kept = keep_iov(iov, iov_count, 0), source, context, flags, tagged,
                             tag, ignore](Endpoint& ep) {
      return ep.post_recv(kept.parts.data(), kept.parts.size(), source, context,
                          flags & ~FI_TRIGGER, tagged, tag, ignore);
    });
  }
  proto::RecvRequest request;
  // An entry with no address holds no bytes: a message with bytes for it
  // is truncated (FI_ETRUNC), not written at address 0.  (Posting one is
  // not refused: fabtests' fi_shared_ctx -e msg posts buf NULL with 1 KiB
  // for its empty messages, as other providers take.)
  for (size_t i = 0; i < iov_count; ++i)
    request.iov[i] = {iov[i].iov_base, iov[i].iov_base != nullptr ? iov[i].iov_len : 0};
  request.iov_count = iov_count;
  request.context = context;
  request.user_flags = FI_RECV | (tagged ? FI_TAGGED : FI_MSG);
  request.tagged = tagged;
  request.tag = tag;
  request.ignore = ignore;
  const bool cq_entry = rx_cq != nullptr && wants_completion(rx_selective, flags);
  request.completion = cq_entry || recv_cntr != nullptr;
  if (!cq_entry) request.user_flags |= kNoCqEntry;
  if (const int ret = receive_filter(source, flags, &request); ret != 0) return ret;
  // fi_msg(3) FI_MULTI_RECV: untagged receives of an endpoint with the cap;
  // fi_tagged(3) 2.x: tagged ones with FI_TAGGED_MULTI_RECV.
  if (flags & FI_MULTI_RECV) {
    if (!has_cap(tagged ? kTaggedMultiRecvCap : FI_MULTI_RECV)) return -FI_EBADFLAGS;
    try {
      request.multi = std::make_shared<proto::MultiRecv>();
    } catch (const std::bad_alloc&) {
      return -FI_ENOMEM;
    }
    for (size_t i = 0; i < iov_count; ++i) request.multi->capacity += request.iov[i].iov_len;
    request.multi->min_free = min_multi_recv;
  }
  // Bound to a shared receive context: the receive is the context's.
  if (srx != nullptr) {
    if (request.multi) return -FI_EBADFLAGS;  // not shared (Engine::share_receives)
    const int ret = srx->post(request);
    return ret == -FI_EOPBADSTATE ? ret : engine_errno(ret);
  }
  const int ret = engine_call([&] { return engine->post_recv(request, now_ns()); });
  flush();
  return engine_errno(ret);
}

std::vector<uint8_t> Endpoint::sender_address(uint64_t source_key) const {
  // peer_key packs the queue above the MAC (proto::peer_key).
  av::Address sender;
  for (int i = 5; i >= 0; --i, source_key >>= 8) sender.mac[i] = static_cast<uint8_t>(source_key);
  sender.queue = static_cast<uint16_t>(source_key);
  sender.session = engine->peer_session(proto::peer_key(sender.mac, sender.queue));
  port().name_by_ip(&sender);
  return encode_address(info->addr_format, sender);
}

void Endpoint::flush_now() {
  // (Apart: a receive's flush has only completions, and skips the set-up
  // of a burst.)
  if (!engine->outbox().empty()) send_frames();
  engine->frames_sent();
  if (!engine->completions().empty()) hand_out_completions();
  if (!rejects_due.empty()) send_due_rejects();  // a listener's, owed since its frames came
}

void Endpoint::send_frames() {
  net::Port& nic = *port().port;
  auto& outbox = engine->outbox();
  rte_mbuf* batch[kTxBatch];
  const uint16_t batch_frames = std::min(nic.burst_frames(), kTxBatch);
  uint16_t count = 0;
  // On a port of lanes a frame goes into its destination's queue, which
  // other lanes may write too (PortContext); else into this endpoint's.
  const bool by_destination = !port().one_lane;
  const uint16_t own_queue = port().own_transmit_queue(hw_queue);
  uint16_t batch_queue = own_queue;
  auto transmit = [&]() __attribute__((always_inline)) {
    // A full TX ring (the peer's PMD is behind: memif, af_packet) empties
    // as the peer reads it: a few more tries cost less than the
    // retransmission a dropped frame takes.
    uint16_t sent = 0;
    if (by_destination) port().transmit_locks[batch_queue].lock.lock();
    for (int idle = 0; sent < count && idle < kTxRetries;) {
      const uint16_t more = port().transmit(batch_queue, batch + sent, count - sent);
      sent += more;
      idle = more == 0 ? idle + 1 : 0;
    }
    if (by_destination) port().transmit_locks[batch_queue].lock.unlock();
    // What the port still did not take is lost like a dropped frame; the
    // transport's timers repair it.
    for (uint16_t i = sent; i < count; ++i) net::free_frame(batch[i]);
    frames_not_sent += count - sent;
    count = 0;
  };
  uint64_t now = 0;  // read once, for the first frame in UDP
  frames::Framer& framer = *port().framer;
  for (const proto::OutFrame& frame : outbox) {
    rte_mbuf* mbuf = nic.alloc_frame(hw_queue);  // its lane's cache, on a port of lanes
    if (mbuf == nullptr) {
      ++frames_not_sent;
      continue;
    }
    bool lent = false;
    switch (framer.build(mbuf, frame, hw_queue, own_queue, now, &lent)) {
      case frames::Framer::Built::kSend:
        break;
      case frames::Framer::Built::kLoopBack:
        if (!port().loop_back(mbuf)) {
          net::free_frame(mbuf);
          ++frames_not_sent;
        }
        continue;
      case frames::Framer::Built::kHeld:
        continue;  // the framer's until its next hop answers
      case frames::Framer::Built::kDropped:
        net::free_frame(mbuf);
        ++frames_not_sent;
        continue;
    }
    if (lent) ++payloads_lent;
    if (by_destination) {
      const uint16_t queue = port().queue_pair_of(frame.header.dst_queue);
      if (queue != batch_queue && count != 0) transmit();
      batch_queue = queue;
    }
    batch[count++] = mbuf;
    if (count == batch_frames) transmit();
  }
  if (count != 0) transmit();
}

void Endpoint::hand_out_completions() {
  for (const proto::Completion& done : engine->completions()) {
    const bool is_send = done.kind == proto::Completion::Kind::kSend;
    if (is_send && (done.user_flags & kControlSend)) {
      on_control_sent(done);  // connection management: no CQ entry
      continue;
    }
    if (done.error != 0 && cm_state == CmState::kConnected &&
        (done.error == proto::kErrTimedOut || done.error == proto::kErrPeerReset)) {
      // fi_cm(3): a connected peer that went away ends the connection.
      cm_state = CmState::kShutdown;
      if (eq != nullptr) {
        fi_eq_cm_entry entry{};
        entry.fid = &fid.fid;
        eq->push_event(FI_SHUTDOWN, &entry, sizeof(entry));
      }
    }
    // fi_cntr(3): counters count every completion, with or without a CQ
    // entry; errors go to the error value.
    Cntr* cntr = !is_send                       ? recv_cntr
                 : (done.user_flags & FI_READ)  ? read_cntr
                 : (done.user_flags & FI_WRITE) ? write_cntr
                                                : send_cntr;
    if (cntr != nullptr && !done.release_only) {  // a release is no operation
      if (done.error != 0)
        cntr->add_error(1);
      else
        cntr->add(1);
    }
    Cq* cq = is_send ? tx_cq : rx_cq;
    if (cq == nullptr) continue;
    // fi_cq(3): a multi-recv buffer's release is always reported; alone
    // (flags FI_MULTI_RECV only) when the message's entry is not wanted.
    const bool suppressed = done.error == 0 && (done.user_flags & kNoCqEntry);
    if (done.multi_released && (suppressed || done.release_only)) {
      cq->push({done.context, FI_MULTI_RECV, 0, nullptr, 0, 0, FI_ADDR_NOTAVAIL});
      continue;
    }
    // Errors always reach the CQ (fi_cq(3)), successes only when asked for.
    if (suppressed) continue;
    const fi_addr_t source =
        done.kind == proto::Completion::Kind::kRecv && av != nullptr && has_cap(FI_SOURCE)
            ? av->lookup_source(done.source_key)
            : FI_ADDR_NOTAVAIL;
    uint64_t flags = done.user_flags & ~kPrivateOpFlags;
    if (done.kind == proto::Completion::Kind::kRecv && done.has_data) flags |= FI_REMOTE_CQ_DATA;
    if (done.multi_released) flags |= FI_MULTI_RECV;
    // (A known sender may have FI_ADDR_NOTAVAIL as its user id.)
    if (done.error == 0 && done.kind == proto::Completion::Kind::kRecv && has_cap(FI_SOURCE_ERR) &&
        av != nullptr && !av->knows_sender(done.source_key)) {
      // fi_cq(3) FI_SOURCE_ERR: a sender the AV does not know is reported
      // as an error whose err_data is its address, ready for fi_av_insert.
      fi_cq_err_entry error{};
      error.op_context = done.context;
      error.flags = flags;
      error.len = done.len;
      error.buf = done.buf;
      error.data = done.has_data ? done.cq_data : 0;
      error.tag = done.tag;
      error.err = FI_EADDRNOTAVAIL;
      error.prov_errno = FI_EADDRNOTAVAIL;
      // fi_av(3): with authorization keys, src_addr (API 1.20) names the
      // key the sender used: its handle, or the handle's user id.
      const fi_addr_t key_source =
          done.auth_key != 0 ? av->lookup_source_key(done.auth_key) : FI_ADDR_NOTAVAIL;
      cq->push_error(error, key_source, sender_address(done.source_key));
      continue;
    }
    if (done.error != 0) {
      DPDK_INFO(
          FI_LOG_EP_DATA, "%s ends in error %d (%s), context %p\n",
          is_send ? "an operation" : "a receive", done.error,
          done.prov_errno != 0 ? proto::prov_errno_text(done.prov_errno) : fi_strerror(done.error),
          done.context);
      fi_cq_err_entry error{};
      error.op_context = done.context;
      error.flags = flags;
      error.len = done.len;
      error.buf = done.buf;
      error.data = done.cq_data;
      error.tag = done.tag;
      error.olen = done.overflow;
      error.err = done.error;
      error.prov_errno = done.prov_errno != 0 ? done.prov_errno : done.error;
      cq->push_error(error, source);
      continue;
    }
    cq->push({done.context, flags, done.len, done.buf, done.has_data ? done.cq_data : 0, done.tag,
              source});
  }
  engine->completions().clear();
}

namespace {

// The fi_msg(3) calls: each takes the port lock and calls the endpoint.
ssize_t msg_recvv(fid_ep* ep_fid, const iovec* iov, void** /*desc*/, size_t count,
                  fi_addr_t src_addr, void* context) {
  const Caller caller = caller_of(ep_fid);
  Endpoint* ep = caller.ep;
  LaneGuard guard(ep->port(), ep->lane);
  return ep->post_recv(iov, count, src_addr, context, caller.rx_op_flags, false, 0, 0);
}

ssize_t msg_recv(fid_ep* ep, void* buf, size_t len, void* desc, fi_addr_t src_addr, void* context) {
  iovec iov{buf, len};
  return msg_recvv(ep, &iov, &desc, 1, src_addr, context);
}

ssize_t msg_recvmsg(fid_ep* ep_fid, const fi_msg* msg, uint64_t flags) {
  if (msg == nullptr) return -FI_EINVAL;
  Endpoint* ep = endpoint_of(ep_fid);
  // fi_msg(3) lists the completion levels for both calls; on a receive
  // they ask nothing more than its completion, which we give.
  constexpr uint64_t kAllowed = FI_COMPLETION | FI_MORE | FI_REMOTE_CQ_DATA | FI_INJECT_COMPLETE |
                                FI_TRANSMIT_COMPLETE | FI_MULTI_RECV | kAuthKeyFlag | FI_TRIGGER;
  if (flags & ~kAllowed) return -FI_EBADFLAGS;
  LaneGuard guard(ep->port(), ep->lane);
  return ep->post_recv(msg->msg_iov, msg->iov_count, msg->addr, msg->context, flags, false, 0, 0);
}

ssize_t msg_sendv(fid_ep* ep_fid, const iovec* iov, void** /*desc*/, size_t count,
                  fi_addr_t dest_addr, void* context) {
  const Caller caller = caller_of(ep_fid);
  Endpoint* ep = caller.ep;
  LaneGuard guard(ep->port(), ep->lane);
  return ep->send(iov, count, dest_addr, context, caller.tx_op_flags, 0, false, 0);
}

ssize_t msg_send(fid_ep* ep, const void* buf, size_t len, void* desc, fi_addr_t dest_addr,
                 void* context) {
  iovec iov{const_cast<void*>(buf), len};
  return msg_sendv(ep, &iov, &desc, 1, dest_addr, context);
}

ssize_t msg_sendmsg(fid_ep* ep_fid, const fi_msg* msg, uint64_t flags) {
  if (msg == nullptr) return -FI_EINVAL;
  Endpoint* ep = endpoint_of(ep_fid);
  constexpr uint64_t kAllowed = FI_COMPLETION | FI_INJECT | FI_INJECT_COMPLETE |
                                FI_TRANSMIT_COMPLETE | FI_DELIVERY_COMPLETE | FI_REMOTE_CQ_DATA |
                                FI_MORE | FI_TRIGGER;
  if (flags & ~kAllowed) return -FI_EBADFLAGS;
  if (!usable_iov(msg->msg_iov, msg->iov_count, "fi_sendmsg")) return -FI_EINVAL;
  if (flags & FI_INJECT) {
    size_t length = 0;
    for (size_t i = 0; i < msg->iov_count; ++i) length += msg->msg_iov[i].iov_len;
    if (length > ep->info->tx_attr->inject_size) return -FI_EMSGSIZE;
  }
  LaneGuard guard(ep->port(), ep->lane);
  return ep->send(msg->msg_iov, msg->iov_count, msg->addr, msg->context, flags, msg->data, false,
                  0);
}

ssize_t msg_senddata(fid_ep* ep_fid, const void* buf, size_t len, void*, uint64_t data,
                     fi_addr_t dest_addr, void* context) {
  const Caller caller = caller_of(ep_fid);
  Endpoint* ep = caller.ep;
  iovec iov{const_cast<void*>(buf), len};
  LaneGuard guard(ep->port(), ep->lane);
  return ep->send(&iov, 1, dest_addr, context, caller.tx_op_flags | FI_REMOTE_CQ_DATA, data, false,
                  0);
}

ssize_t msg_inject(fid_ep* ep_fid, const void* buf, size_t len, fi_addr_t dest_addr) {
  Endpoint* ep = endpoint_of(ep_fid);
  if (len > ep->info->tx_attr->inject_size) return -FI_EMSGSIZE;
  iovec iov{const_cast<void*>(buf), len};
  LaneGuard guard(ep->port(), ep->lane);
  return ep->send(&iov, 1, dest_addr, nullptr, FI_INJECT | kNoCompletion, 0, false, 0);
}

ssize_t msg_injectdata(fid_ep* ep_fid, const void* buf, size_t len, uint64_t data,
                       fi_addr_t dest_addr) {
  Endpoint* ep = endpoint_of(ep_fid);
  if (len > ep->info->tx_attr->inject_size) return -FI_EMSGSIZE;
  iovec iov{const_cast<void*>(buf), len};
  LaneGuard guard(ep->port(), ep->lane);
  return ep->send(&iov, 1, dest_addr, nullptr, FI_INJECT | FI_REMOTE_CQ_DATA | kNoCompletion, data,
                  false, 0);
}

}  // namespace

fi_ops_msg g_msg_ops = {
    .size = sizeof(fi_ops_msg),
    .recv = msg_recv,
    .recvv = msg_recvv,
    .recvmsg = msg_recvmsg,
    .send = msg_send,
    .sendv = msg_sendv,
    .sendmsg = msg_sendmsg,
    .inject = msg_inject,
    .senddata = msg_senddata,
    .injectdata = msg_injectdata,
};

}  // namespace ofi_dpdk::ofi
