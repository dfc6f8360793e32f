// engine_poll.cc: the progress pass's side of the Engine: which connections
// it visits (active_, activate, quiescent), the answers owed within a pass
// (answer_later, answer), and each connection's timers (poll_connection:
// handshake and retransmission timeouts, tail-loss probes, persist probes,
// delivery and receive timeouts, delayed acks, and link_restored, which
// brings the retransmission timeouts forward), with the sweep that tends
// idle connections a few at a time.
#include <algorithm>
#include <cstdint>

#include "lib/proto/engine_state.h"

namespace ofi_dpdk::proto {
namespace {

// Tail loss probes per ack advance (see Engine::poll).
constexpr uint8_t kMaxProbes = 4;
// A connection silent this long with nothing in flight gives back its slot
// tables (12 KiB), which the next segment allocates again: thousands of
// peers that talked once cost their records, not their windows.
constexpr uint64_t kIdleSlotRelease = 100'000'000;
// The sweep of idle connections (sweep_idle): this many every interval, so
// a table of 4096 is seen in 64 ms of passes.
constexpr uint64_t kSweepIntervalNs = 1'000'000;
constexpr size_t kSweepBatch = 64;

}  // namespace

void Engine::answer_later(Connection& c) {
  activate(c);
  if (c.answer_listed) return;
  c.answer_listed = true;
  answer_due_.push_back(c.key);
}

void Engine::answer(uint64_t now_ns) {
  clock_ns_ = std::max(clock_ns_, now_ns);
  for (const uint64_t key : answer_due_) {
    auto it = connections_.find(key);
    if (it == connections_.end()) continue;
    Connection& c = *it->second;
    c.answer_listed = false;
    // Data first: it carries the ack (as in poll).
    pump(c, now_ns);
    if (c.ack_now) emit_ack(c);
  }
  answer_due_.clear();
}

void Engine::link_restored(uint64_t now_ns) {
  for (auto& [key, connection] : connections_) {
    Connection& c = *connection;
    const bool hello_out = c.tx_state == TxState::kHello && c.rto_deadline_ns != 0;
    if (c.una == c.next_seq && !hello_out) continue;
    c.rto_ns = c.srtt_ns != 0
                   ? std::clamp(c.srtt_ns + 4 * c.rttvar_ns,
                                config_.min_rto_ns + config_.ack_delay_ns, config_.max_rto_ns)
                   : config_.initial_rto_ns;
    c.rto_deadline_ns = now_ns;
    activate(c);
  }
  touched_ = true;
}

void Engine::activate(Connection& c) {
  if (c.active) return;
  c.active = true;
  active_.push_back(&c);
}

// (Inlined into poll, which calls it for every connection it visits.)
[[gnu::always_inline]] inline bool Engine::quiescent(const Connection& c) const {
  // Nothing a timer or the next pass would do: no segment in flight or
  // message queued, no ack due, no HELLO waiting for its answer, nothing
  // awaited, held, assembled, deferred or owed.  The likeliest to hold
  // first.
  return c.una == c.next_seq && c.pending.empty() && c.ack_owed == 0 && c.ack_at_poll == 0 &&
         !c.ack_now && c.awaiting_response.empty() && c.awaiting_delivery.empty() &&
         (c.tx_state != TxState::kHello || c.rto_deadline_ns == 0) && c.rx_buffered == 0 &&
         c.inbound == nullptr && c.remote == nullptr && c.deferred_requests.empty() &&
         c.owed_notices.empty() && !c.rx_stalled && c.recv_order.empty() && c.pulls_out == 0 &&
         !c.answer_listed;
}

void Engine::visit_connections(uint64_t now_ns) {
  touched_ = false;
  next_visit_ns_ = now_ns + quiet_poll_ns_;
  ++polls_;
  // The pass below answers every connection that has anything to answer
  // (answer_later activated them).
  answer_due_.clear();
  // By index: a connection's work may activate others (appended, and
  // visited in this pass too).
  for (size_t i = 0; i < active_.size();) {
    Connection& c = *active_[i];
    c.answer_listed = false;
    poll_connection(c, now_ns);
    if (c.ack_at_poll != 0 || c.ack_now) touched_ = true;  // counted in polls
    if (quiescent(c)) {
      c.active = false;
      active_[i] = active_.back();
      active_.pop_back();
    } else {
      ++i;
    }
  }
  if (now_ns - last_sweep_ns_ >= kSweepIntervalNs) {
    last_sweep_ns_ = now_ns;
    sweep_idle(now_ns);
  }
}

void Engine::sweep_idle(uint64_t now_ns) {
  if (connections_.empty()) return;
  auto it = sweep_started_ ? connections_.find(sweep_key_) : connections_.end();
  if (it == connections_.end()) it = connections_.begin();
  sweep_started_ = true;
  for (size_t visited = 0; visited < kSweepBatch && visited < connections_.size(); ++visited) {
    if (it == connections_.end()) it = connections_.begin();
    Connection& c = *it->second;
    auto next = std::next(it);
    if (!c.active) {
      if (!quiescent(c)) {
        activate(c);  // work nothing announced: poll takes it from now on
      } else if (now_ns - c.last_heard_ns >= kIdleSlotRelease) {
        if (c.tx_slots) c.tx_slots.reset();
        if (c.rx_slots) c.rx_slots.reset();
        // A receive half that opened and never took its first segment,
        // from a peer silent since, to which we have nothing open: an
        // honest sender repairs its first segment within peer_timeout_ns.
        // Its record goes (as evicted: nothing of it opens again).
        if (c.rx_open && c.next_expected == wire::kInitialSeq && c.tx_state != TxState::kOpen &&
            now_ns - c.last_heard_ns >= config_.peer_timeout_ns) {
          ++stats_.unproven_forgotten;
          evict(it);
        }
      }
    }
    it = next;
  }
  sweep_key_ = it == connections_.end() ? 0 : it->first;
  sweep_started_ = it != connections_.end();
}

[[gnu::always_inline]] inline void Engine::poll_connection(Connection& c, uint64_t now_ns) {
  const bool in_flight = c.una != c.next_seq;
  if (c.tx_state == TxState::kHello && c.rto_deadline_ns != 0 && now_ns >= c.rto_deadline_ns) {
    if (c.hello_unasked && c.pending.empty()) {
      // The way back, opened when the peer's receive half opened, has not
      // been needed yet and was not answered: it is not asked again (a
      // station that completed a handshake and went silent would draw a
      // HELLO every RTO until connect_timeout_ns).  A late answer still
      // opens it; the first send asks again (pump).
      c.rto_deadline_ns = 0;
    } else if (now_ns - c.waiting_since_ns >= config_.connect_timeout_ns) {
      // Nobody answers the HELLO: what waits for the connection fails
      // (nothing of it reached the peer), and the next send starts over.
      if (!c.pending.empty())
        note_timeout(c, TimeoutReport::Wait::kHandshake, c.waiting_since_ns, now_ns);
      fail_transmit(c, kErrTimedOut, kProvPeerTimeout);
    } else {
      emit_hello(c, now_ns);
    }
  } else if (in_flight && c.rto_deadline_ns != 0 && now_ns >= c.rto_deadline_ns) {
    // Our data must make progress; only a receiver that closed its
    // window (it is alive, just slow) may keep us waiting by merely
    // answering, and that for stall_timeout_ns at most.  A peer that
    // talks but never acks (it drops our segments) times out.
    const bool stalled = c.peer_window == 0 && c.stalled_since_ns != 0 &&
                         now_ns - c.stalled_since_ns < config_.stall_timeout_ns;
    const uint64_t since =
        stalled ? std::max(c.last_heard_ns, c.waiting_since_ns) : c.waiting_since_ns;
    if (now_ns - since >= config_.peer_timeout_ns) {
      note_timeout(c, TimeoutReport::Wait::kAcknowledge, since, now_ns);
      fail_connection(c, kErrTimedOut, kProvPeerTimeout);
      return;
    }
    // Timeout: the oldest segment again, a collapsed window, doubled RTO.
    // Under a closed window it is only a probe: the receiver holds back,
    // the network lost nothing, and the window stays for when it reopens.
    // What the receiver reported holding beyond the hole it may have
    // dropped since (hold_timeout_ns, a reclaim): its SACK is forgotten,
    // so the next acks tell anew what is missing.
    // Or the oldest segment's size (while its SACK marks still tell
    // whether large ones arrive).  Under a closed window nothing is
    // lost: what probes told before says nothing of what follows.
    if (c.peer_window == 0) {
      c.size_probe_ns = 0;
      c.size_probes_answered = 0;
    }
    const SilentPath size = c.peer_window != 0 ? assess_silent_path(c) : SilentPath::kNotInQuestion;
    forget_sacks(c);
    ++(c.peer_window != 0 ? stats_.retransmit_timeouts : stats_.window_probes);
    // What the cut below takes, should the peer prove it needless.
    const uint32_t cwnd_x256_before = c.cwnd_x256, ssthresh_before = c.ssthresh;
    const uint64_t rto_before = c.rto_ns;
    if (c.peer_window != 0) {
      const uint32_t cwnd = std::max<uint32_t>(c.cwnd_x256 / 256, 1);
      c.ssthresh = std::max<uint32_t>(cwnd / 2, 2);
      c.cwnd_x256 = 256;
      ++c.cuts_timeout;
      c.recovery_seq = c.next_seq;
      // This loss event has had its cut (on_loss): holes SACK reports
      // before una passes recovery_seq take nothing more.
      c.cwnd_before_loss = cwnd;
      c.loss_cut = 2;
      // Nothing else repaired the loss: the path may be what dropped it.
      change_path(c);
    }
    if (size == SilentPath::kNarrow) {
      silent_narrow(c, now_ns);  // the oldest goes again, in pieces
    } else {
      emit_segment(c, c.una, now_ns, true);
      if (!outbox_.empty()) outbox_.back().unanswered = true;
    }
    // The resend armed it, or a tail loss probe of this segment did.
    Connection::TimeoutUndo& undo = c.timeout_undo;
    if (c.peer_window != 0 && undo.armed && undo.seq == c.una && !undo.cut_saved) {
      undo.cut_saved = true;
      undo.cwnd_x256 = cwnd_x256_before;
      undo.ssthresh = ssthresh_before;
      undo.rto_ns = rto_before;
    }
    // A small frame a live peer answers whatever the path's MTU: the
    // answer tells a narrow path from a dead one at the next timeout.
    if (size == SilentPath::kProbe) {
      emit_probe(c);
      c.size_probe_ns = now_ns;
    }
    c.rto_ns = std::min(c.rto_ns * 2, config_.max_rto_ns);
    c.rto_deadline_ns = now_ns + c.rto_ns;
  } else if (in_flight && c.srtt_ns != 0 && c.probes < kMaxProbes &&
             now_ns -
                     std::max(c.last_heard_ns, c.tx_slots[c.una & (kMaxWindow - 1)].last_sent_ns) >=
                 (2 * c.srtt_ns + 2 * config_.ack_delay_ns) << c.probes) {
    // Tail loss probe: nothing heard for two RTTs while data is out.  The
    // last segments or their acks were lost and no later ack will report
    // it; resend the oldest, so the receiver's answer (an ack, with SACK)
    // drives the repair instead of the much longer RTO.  A few probes,
    // each waiting twice as long, then only the RTO.
    ++c.probes;
    ++stats_.tail_loss_probes;
    emit_segment(c, c.una, now_ns, true);
  } else if (!in_flight && c.peer_window == 0 && c.pending_cut < c.pending.size()) {
    // Persist: the receiver closed its window; probe with one segment so a
    // lost window update cannot stall us forever.
    if (c.rto_deadline_ns == 0) {
      c.rto_deadline_ns = now_ns + c.rto_ns;
    } else if (now_ns >= c.rto_deadline_ns) {
      ++stats_.window_probes;
      c.peer_window = 1;
      c.rto_deadline_ns = 0;
    }
  }
  // While we hold our receive window closed the answers wait behind what
  // we refuse: that silence is ours, not the target's.
  if (c.rx_stalled) c.awaiting_since_ns = now_ns;
  if (!c.awaiting_response.empty() && now_ns - c.awaiting_since_ns >= config_.peer_timeout_ns) {
    // Delivered requests whose answers stopped coming: the target died,
    // or dropped our connection's state.  Whether they ran is unknown;
    // they are reported failed, never repeated.  (Sends waiting for
    // delivery notices have their own probes.)
    note_timeout(c, TimeoutReport::Wait::kResponses, c.awaiting_since_ns, now_ns);
    fail_requests(c, kErrTimedOut, kProvPeerTimeout);
  }
  if (!c.awaiting_delivery.empty()) {
    // The receiver's application may take its time to post a receive;
    // meanwhile the receiver must keep answering our probes, and a
    // receive must take the message within delivery_timeout_ns.
    const uint64_t probe_every = std::max<uint64_t>(config_.peer_timeout_ns / 8, 1);
    const uint64_t quiet = now_ns - c.last_heard_ns;
    if (quiet >= config_.peer_timeout_ns) {
      note_timeout(c, TimeoutReport::Wait::kDelivery, c.last_heard_ns, now_ns);
      fail_delivery_waits(c, kErrTimedOut, kProvPeerTimeout);
    } else if (quiet >= probe_every && now_ns - c.probe_sent_ns >= probe_every) {
      ++stats_.delivery_probes;
      emit_probe(c);
      c.probe_sent_ns = now_ns;
    }
    if (config_.delivery_timeout_ns != 0 && now_ns >= c.next_delivery_check_ns) {
      c.next_delivery_check_ns = now_ns + std::max<uint64_t>(config_.delivery_timeout_ns / 64, 1);
      fail_untaken(c, now_ns);
    }
  }
  if (c.rx_buffered != 0 &&
      now_ns - std::max(c.rx_progress_ns, c.held_since_ns) >= config_.hold_timeout_ns) {
    // Segments parked ahead of a gap the stream has not closed: an honest
    // sender repairs a gap within its RTO, so these are a dead or
    // misbehaving sender's.  The sender resends what it still has.
    stats_.held_expired += c.rx_buffered;
    release_held(c);
  }
  if ((c.inbound != nullptr || c.remote != nullptr) && !c.rx_stalled &&
      now_ns - c.rx_progress_ns >= config_.peer_timeout_ns) {
    // A sender that stopped in the middle of a message or request (gone
    // quiet, or still sending acks but no more of it): the receive it was
    // filling, or the unexpected budget it holds, must not wait forever.
    note_timeout(c, TimeoutReport::Wait::kReceive, c.rx_progress_ns, now_ns);
    reset_receive(c, kErrTimedOut, kProvPeerTimeout);
  }
  // Deferred requests whose budget came back by another way than an ack
  // (a RESET, a failed transmit half, another connection's answers).
  if ((!c.deferred_requests.empty() || !c.owed_notices.empty()) && !responses_full(c))
    serve_deferred(c);
  // Data first: a segment going back (a response, a message) carries the
  // ack, and only an ack still owed goes alone.
  pump(c, now_ns);
  const bool ack_without_timer = c.ack_now || (c.ack_at_poll != 0 && polls_ >= c.ack_at_poll);
  if (ack_without_timer || (c.ack_owed != 0 && now_ns >= c.ack_due_ns)) {
    if (!ack_without_timer) ++stats_.delayed_acks;
    emit_ack(c);
  }
}

}  // namespace ofi_dpdk::proto
