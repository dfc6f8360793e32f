// engine_tx.cc: the transmit side of a connection.  Messages are cut into
// segments while the window allows (the smaller of the congestion window and
// the receiver's window); each segment stays in its slot until the
// cumulative ack passes it.  Loss is repaired by fast retransmit (duplicate
// acks and SACK holes) and by the retransmission timer, whose timeout comes
// from the measured RTT and doubles on each expiry.
#include <algorithm>
#include <bit>
#include <cerrno>

#include "lib/proto/engine_state.h"
#include "lib/proto/seq.h"

namespace ofi_dpdk::proto {
namespace {

TxSlot& slot_of(Connection& c, uint32_t seq) {
  return c.tx_slots[seq & (kMaxWindow - 1)];
}

}  // namespace

wire::FrameHeader Engine::base_header(Connection& c, uint8_t opcode, bool may_echo) {
  wire::FrameHeader h{};
  h.version = wire::kWireVersion;
  h.opcode = opcode;
  h.dst_queue = c.queue;
  h.src_queue = queue_;
  h.src_ep_queue = address_queue_;
  h.src_session = session_;
  h.dst_session = c.peer_session;
  h.conn = c.tx_conn;
  h.token = c.tx_token;
  h.auth_key = c.auth_key;
  if (c.rx_open) {
    h.ack_conn = c.rx_conn;
    h.ack_token = c.rx_token;
    h.flags = wire::kFlagAckValid;
    h.ack = c.next_expected;
    h.window = receive_window(c);
    if (may_echo && c.congestion_unechoed && seq_ge(c.next_expected, c.congestion_marked_end)) {
      h.flags |= wire::kFlagCongestionSeen;
      c.congestion_unechoed = false;
      ++stats_.congestion_echoes_sent;
    }
  }
  return h;
}

void Engine::reset_transmit(Connection& c) {
  // Numbers need only differ from the peer's view of our last connection:
  // tokens, not numbers, keep old segments out.
  if (++last_tx_conn_ == 0) ++last_tx_conn_;
  c.tx_conn = last_tx_conn_;
  c.tx_state = TxState::kClosed;
  c.hello_nonce = 0;
  c.tx_token = 0;
  c.tx_max_payload = 0;
  c.peer_port_count = 0;  // the next HELLO_ACK names them again
  c.size_probe_ns = 0;
  c.size_probes_answered = 0;
  c.next_seq = c.una = wire::kInitialSeq;
  c.marks_window_end = c.congestion_cut_until = wire::kInitialSeq;
  c.marks_acked = c.marks_marked = 0;
  c.marked_share_x65536 = 65536;
  c.pending.clear();
  c.pending_cut = 0;
  c.cwnd_x256 = config_.initial_window * 256;
  c.ssthresh = kMaxWindow;
  c.peer_window = kMaxWindow;
  c.srtt_ns = c.rttvar_ns = 0;
  c.rto_ns = config_.initial_rto_ns;
  c.dupacks = 0;
  c.recovery_seq = c.next_seq;
  c.sacked_in_flight = 0;
  c.loss_cut = 0;
  c.cwnd_before_loss = 0;
  c.timeout_undo = {};
  c.slowdown_end_ns = 0;  // (a window it would give back is the old one's)
  c.rto_deadline_ns = 0;
  // The outbox's open frame names this connection's old numbers and token.
  if (open_bundle_.connection == &c) open_bundle_ = {};
  c.probes = 0;
  c.waiting_since_ns = 0;
  c.stalled_since_ns = 0;
  if (c.tx_slots) std::fill(c.tx_slots.get(), c.tx_slots.get() + kMaxWindow, TxSlot{});
}

void Engine::arm_rto(Connection& c, uint64_t now_ns) {
  c.rto_deadline_ns = now_ns + c.rto_ns;
}

void Engine::forget_sacks(Connection& c) {
  if (c.sacked_in_flight == 0) return;
  for (uint32_t seq = c.una; seq != c.next_seq; ++seq) slot_of(c, seq).sacked = false;
  c.sacked_in_flight = 0;
}

void Engine::pump(Connection& c, uint64_t now_ns) {
  // Messages are cut in queue order, and a response joins ahead of the
  // uncut ones (queue_response): all are cut when the last one is.
  if (c.pending.empty() || c.pending.back()->fully_segmented) return;
  if (c.tx_state != TxState::kOpen) {
    // No segment before the handshake: it is what makes a retransmission
    // unable to open a second connection at the peer.
    // (A HELLO sent unasked and no longer timed, too: something waits now.)
    if (c.tx_state == TxState::kClosed || c.rto_deadline_ns == 0) emit_hello(c, now_ns);
    return;
  }
  if (!c.tx_slots) c.tx_slots = std::make_unique<TxSlot[]>(kMaxWindow);
  const uint32_t cwnd = std::max<uint32_t>(c.cwnd_x256 / 256, 1);
  // The congestion window bounds what is in the network: segments the peer
  // already holds beyond a hole do not count (as TCP's SACK "pipe"), so a
  // loss does not stop new data for the round trip its repair takes.  The
  // peer's window and the slot table bound the whole span from una.
  const uint32_t span = std::min(c.peer_window, kMaxWindow);
  // A paced connection's segments leave an interval apart, each its share
  // of a full one's; after a pause the pace restarts from one interval ago
  // (two full segments may leave together, never a window's burst).  Its
  // visits (every quiet_poll_ns_, as it holds uncut data) send the rest.
  const uint64_t interval = pace_interval(c, config_.pace_from_ns, quiet_poll_ns_);
  while (c.next_seq - c.una < span && c.next_seq - c.una - c.sacked_in_flight < cwnd &&
         c.pending_cut < c.pending.size()) {
    if (interval != 0 && now_ns < c.pace_next_ns) {
      ++c.paced_waits;
      ++stats_.paced_waits;
      break;
    }
    TxMessage& m = *c.pending[c.pending_cut];
    const size_t length = std::min<size_t>(c.tx_max_payload, m.wire_length - m.next_offset);
    if (interval != 0)
      c.pace_next_ns = std::max(c.pace_next_ns, now_ns > interval ? now_ns - interval : 0) +
                       interval * length / std::max<uint32_t>(c.tx_max_payload, 1);
    const uint32_t seq = c.next_seq++;
    TxSlot& slot = slot_of(c, seq);
    slot = TxSlot{};
    slot.message = &m;
    slot.offset = static_cast<uint32_t>(m.next_offset);
    slot.length = static_cast<uint16_t>(length);
    m.next_offset += length;
    ++m.segments_unacked;
    if (m.next_offset == m.wire_length) {
      m.fully_segmented = true;
      slot.flags = wire::kFlagLastSegment;
      ++c.pending_cut;
    }
    if (c.una == seq) c.waiting_since_ns = now_ns;
    emit_segment(c, seq, now_ns, false);
  }
  if (c.rto_deadline_ns == 0 && c.una != c.next_seq) arm_rto(c, now_ns);
}

void Engine::emit_segment(Connection& c, uint32_t seq, uint64_t now_ns, bool retransmit) {
  TxSlot& slot = slot_of(c, seq);
  const TxMessage& m = *slot.message;
  const auto opcode = static_cast<uint8_t>(m.opcode());
  wire::FrameHeader h = base_header(c, opcode);
  h.flags |= slot.flags | m.extra_flags;
  if (m.request.has_data) {
    h.flags |= wire::kFlagRemoteData;
    h.cq_data = m.request.cq_data;
  }
  if ((slot.flags & wire::kFlagLastSegment) && m.ack_awaited()) h.flags |= wire::kFlagAckNow;
  // A segment that fills the window asks too: nothing more leaves until an
  // ack comes, and a small window (after a loss, under kAckEvery) would
  // otherwise wait the receiver's ack delay every round trip.
  if (!retransmit) {
    const uint32_t in_flight = c.next_seq - c.una;
    if (in_flight >= std::min(c.peer_window, kMaxWindow) ||
        in_flight - c.sacked_in_flight >= std::max<uint32_t>(c.cwnd_x256 / 256, 1))
      h.flags |= wire::kFlagAckNow;
  }
  h.seq = seq;
  h.msg_id = m.msg_id;
  h.msg_len = static_cast<uint32_t>(m.wire_length);
  h.offset = slot.offset;
  h.payload_len = slot.length;
  h.tag = m.request.tag;
  h.group = m.request.group;
  // A repair goes alone: it is urgent, and a lost bundle would lose it again
  // with its neighbours.
  if (slot.length > c.tx_max_payload) {
    // Cut before the path proved narrower (narrow_path): in pieces that fit.
    emit_pieces(c, seq, h, now_ns);
  } else if (retransmit || !join_bundle(c, h, m)) {
    ++frames_cut_;
    OutFrame& frame = outbox_.emplace_back();  // (in place: no record copied)
    std::copy(c.mac, c.mac + 6, frame.dst_mac);
    frame.path = next_path(c, &slot.lane);
    frame.source_port = c.source_port(frame.path);
    frame.header = h;
    frame.message = &m;
    frame.offset = slot.offset;
    ++stats_.frames_sent;
    open_bundle_.connection = !retransmit && bundles(h) ? &c : nullptr;
    open_bundle_.frame = outbox_.size() - 1;
    open_bundle_.lane = slot.lane;
  } else {
    slot.lane = open_bundle_.lane;  // it went in the open bundle's frame
  }
  if (slot.transmissions == 0) {
    slot.first_sent_ns = now_ns;
    slot.frame = frames_cut_;
  }
  slot.last_sent_ns = now_ns;
  if (slot.transmissions < 255) ++slot.transmissions;
  if (retransmit) ++stats_.retransmitted;
  if (retransmit) {
    Connection::TimeoutUndo& undo = c.timeout_undo;
    if (undo.armed && seq == undo.seq) {
      if (undo.retransmissions < UINT16_MAX) ++undo.retransmissions;
    } else if (slot.transmissions == 2 && (!undo.armed || seq_lt(undo.seq, c.una))) {
      undo = {};  // (one acknowledged since is forgotten)
      undo.armed = true;
      undo.seq = seq;
      undo.retransmissions = 1;
    }
  }
  // The data frame carried our ack: nothing owed any more.
  if (c.rx_open) {
    c.ack_owed = 0;
    c.ack_now = false;
    c.ack_at_poll = 0;
  }
}

void Engine::emit_pieces(Connection& c, uint32_t seq, const wire::FrameHeader& h, uint64_t) {
  TxSlot& slot = slot_of(c, seq);
  ++frames_cut_;
  const uint8_t path = next_path(c, &slot.lane);
  const uint32_t piece = c.tx_max_payload;
  for (uint32_t at = 0; at < slot.length; at += piece) {
    OutFrame frame;
    std::copy(c.mac, c.mac + 6, frame.dst_mac);
    frame.path = path;
    frame.source_port = c.source_port(path);
    frame.header = h;
    frame.header.flags |= wire::kFlagPiece;
    frame.header.segment_len = slot.length;
    frame.header.piece_offset = at;
    frame.header.offset = slot.offset + at;
    frame.header.payload_len = static_cast<uint16_t>(std::min<uint32_t>(piece, slot.length - at));
    frame.message = slot.message;
    frame.offset = slot.offset + at;
    outbox_.push_back(frame);
    ++stats_.frames_sent;
    ++stats_.pieces_sent;
  }
  if (open_bundle_.connection == &c) open_bundle_ = {};
}

uint32_t Engine::fallback_payload(uint32_t payload) const {
  const uint32_t overhead =
      config_.encap_overhead + static_cast<uint32_t>(sizeof(wire::FrameHeader));
  for (const uint32_t mtu : kFallbackMtus)
    if (mtu > overhead && mtu - overhead < payload) return mtu - overhead;
  return 0;
}

void Engine::narrow_path(Connection& c, uint32_t payload, uint64_t now_ns) {
  c.tx_max_payload = payload;
  c.size_probe_ns = 0;
  c.size_probes_answered = 0;
  if (!c.tx_slots) return;
  // What is in flight, not reported arrived, and larger most likely went
  // nowhere: again at once, in pieces (as TCP resends at once what an
  // ICMP said did not fit), as many segments as the window holds; a
  // narrower path is no sign of congestion.  The rest go as repairs.
  uint32_t budget = std::max<uint32_t>(c.cwnd_x256 / 256, 1);
  for (uint32_t seq = c.una; seq != c.next_seq && budget != 0; ++seq) {
    const TxSlot& slot = slot_of(c, seq);
    if (slot.message == nullptr || slot.sacked || slot.length <= payload) continue;
    emit_segment(c, seq, now_ns, true);
    --budget;
  }
}

bool Engine::on_path_too_big(const uint8_t* link, uint16_t peer_queue, uint16_t conn,
                             uint64_t token, uint32_t payload, uint64_t now_ns) {
  touched_ = true;
  auto it = connections_.find(peer_key(link, peer_queue));
  if (it == connections_.end()) return false;
  Connection& c = *it->second;
  activate(c);
  if (c.tx_state != TxState::kOpen || c.tx_conn != conn || c.tx_token != token ||
      payload < kMinPathPayload || payload >= c.tx_max_payload)
    return false;
  ++stats_.path_narrowed_by_icmp;
  narrow_path(c, payload, now_ns);
  return true;
}

Engine::SilentPath Engine::assess_silent_path(Connection& c) {
  // Large frames the path drops without a word (no router's ICMP reaches
  // us, or a switch between hosts of one subnet has a smaller MTU) look
  // like loss, but only the large ones are lost.  So: the oldest segment,
  // larger than the next fallback size, went kSilentTransmissions times;
  // no segment as large is reported arrived (SACK: one between the
  // fallback size and it may well arrive, on a path whose MTU lies
  // between the two); and at kSilentRounds timeouts in a row the peer had
  // answered the small probe of the timeout before with a pure ACK while
  // the segment stayed unacknowledged (its data says nothing: it flows
  // when only our direction is cut).  Random loss of every size meets that as rarely as it
  // loses the same segment at each of those timeouts and not the probe.
  // (RFC 4821 does the like with probes of chosen sizes.)
  const TxSlot& oldest = slot_of(c, c.una);
  const uint32_t smaller = fallback_payload(c.tx_max_payload);
  if (oldest.message == nullptr || smaller == 0 || oldest.length <= smaller)
    return SilentPath::kNotInQuestion;
  for (uint32_t seq = c.una; seq != c.next_seq; ++seq) {
    const TxSlot& slot = slot_of(c, seq);
    if (slot.sacked && slot.length >= oldest.length) {
      // The path carries frames this large: not a size problem.
      c.size_probes_answered = 0;
      return SilentPath::kNotInQuestion;
    }
  }
  if (c.size_probe_ns != 0 && c.last_pure_ack_ns > c.size_probe_ns && c.size_probes_answered < 255)
    ++c.size_probes_answered;
  else
    c.size_probes_answered = 0;
  if (c.size_probes_answered >= kSilentRounds && oldest.transmissions >= kSilentTransmissions)
    return SilentPath::kNarrow;
  return SilentPath::kProbe;
}

void Engine::silent_narrow(Connection& c, uint64_t now_ns) {
  const uint32_t smaller = fallback_payload(c.tx_max_payload);
  ++stats_.path_narrowed_by_silence;
  if (path_learned_) path_learned_(c.mac, smaller);
  narrow_path(c, smaller, now_ns);
}

void Engine::emit_ack(Connection& c) {
  if (!c.rx_open) {
    c.ack_owed = 0;
    c.ack_now = false;
    c.ack_at_poll = 0;
    return;
  }
  wire::FrameHeader h = base_header(c, static_cast<uint8_t>(wire::Opcode::kAck));
  h.seq = c.next_seq;
  h.tag = sack_bits(c);
  if (c.duplicate_copies != 0) {
    const int32_t delta = static_cast<int32_t>(c.duplicate_seq - h.ack);
    if (delta >= INT16_MIN && delta <= INT16_MAX) {
      h.flags |= wire::kFlagDuplicate;
      h.duplicate_delta = static_cast<int16_t>(delta);
      h.duplicate_copies = c.duplicate_copies;
    }
    c.duplicate_copies = 0;
  }
  OutFrame frame;
  std::copy(c.mac, c.mac + 6, frame.dst_mac);
  uint8_t lane;
  frame.path = next_path(c, &lane);
  frame.source_port = c.source_port(frame.path);
  frame.header = h;
  frame.message = nullptr;
  frame.offset = 0;
  outbox_.push_back(frame);
  ++stats_.acks_sent;
  c.ack_owed = 0;
  c.ack_now = false;
  c.ack_at_poll = 0;
}

void Engine::emit_probe(Connection& c) {
  wire::FrameHeader h = base_header(c, static_cast<uint8_t>(wire::Opcode::kAck), false);
  // No ack in it: the peer must not count it as a duplicate ack.
  h.flags = wire::kFlagAckRequest;
  h.ack = 0;
  h.window = 0;
  h.ack_conn = 0;
  h.ack_token = 0;
  h.seq = c.next_seq;
  OutFrame frame;
  std::copy(c.mac, c.mac + 6, frame.dst_mac);
  uint8_t lane;
  frame.path = next_path(c, &lane);
  frame.source_port = c.source_port(frame.path);
  frame.header = h;
  frame.message = nullptr;
  frame.offset = 0;
  outbox_.push_back(frame);
  ++stats_.acks_sent;
}

void Engine::on_ack(Connection& c, const wire::FrameHeader& h, uint64_t now_ns) {
  const uint32_t ack = h.ack;
  if (seq_gt(ack, c.next_seq) || seq_lt(ack, c.una)) {
    // Acknowledges what was never sent, or is older than what we know:
    // neither its window nor its answer to our SYN counts.
    if (seq_gt(ack, c.next_seq)) ++stats_.bad_frames;
    return;
  }
  if ((h.flags & wire::kFlagDuplicate) && c.timeout_undo.armed &&
      ack + static_cast<uint32_t>(static_cast<int32_t>(h.duplicate_delta)) == c.timeout_undo.seq) {
    Connection::TimeoutUndo& undo = c.timeout_undo;
    undo.reported = static_cast<uint16_t>(
        std::min<uint32_t>(uint32_t{undo.reported} + h.duplicate_copies, UINT16_MAX));
    // As many extra copies as we resent: the original arrived too.
    if (undo.cut_saved && undo.reported >= undo.retransmissions) undo_timeout_cut(c);
  }
  const uint32_t previous_window = c.peer_window;
  c.peer_window = h.window;
  if (c.peer_window == 0 && previous_window != 0) c.stalled_since_ns = now_ns;
  if (c.peer_window != 0) c.stalled_since_ns = 0;
  if (!c.tx_slots) return;

  if (seq_gt(ack, c.una)) {
    const bool held_back = responses_full(c);
    const bool endpoint_full = response_bytes_ >= config_.response_bytes;
    uint64_t rtt_sample = 0;
    const uint32_t cwnd_cap = kMaxWindow * 256;
    // Karn: only segments sent once give an RTT sample, and only those the
    // ack was not held back for: past a retransmitted hole, or already
    // reported by SACK, the ack measures the repair, not the path.
    bool clean = true;
    for (uint32_t seq = c.una; seq != ack; ++seq) {
      TxSlot& slot = slot_of(c, seq);
      if (slot.transmissions != 1) {
        clean = false;
      } else if (clean && !slot.sacked) {
        rtt_sample = now_ns - slot.first_sent_ns;
      }
      if (slot.message != nullptr) --slot.message->segments_unacked;
      if (slot.sacked) --c.sacked_in_flight;
      slot = TxSlot{};
      if (c.cwnd_x256 < c.ssthresh * 256) {
        c.cwnd_x256 = std::min(c.cwnd_x256 + 256, cwnd_cap);  // slow start
      } else {
        c.cwnd_x256 = std::min(c.cwnd_x256 + std::max<uint32_t>(65536 / c.cwnd_x256, 1), cwnd_cap);
      }
    }
    const uint32_t newly_acked = ack - c.una;
    c.una = ack;
    // No event open: the bound follows una, so that it never falls 2^31
    // behind and reads as ahead (a loss then would join a stale event).
    if (seq_ge(c.una, c.recovery_seq)) c.recovery_seq = c.una;
    on_congestion_echo(c, newly_acked, (h.flags & wire::kFlagCongestionSeen) != 0);
    c.dupacks = 0;
    c.probes = 0;
    c.size_probe_ns = 0;  // the oldest got through: no size in question
    c.size_probes_answered = 0;
    if (rtt_sample != 0) {
      if (c.srtt_ns == 0) {
        c.srtt_ns = rtt_sample;
        c.rttvar_ns = rtt_sample / 2;
      } else {
        const uint64_t delta =
            c.srtt_ns > rtt_sample ? c.srtt_ns - rtt_sample : rtt_sample - c.srtt_ns;
        c.rttvar_ns = (3 * c.rttvar_ns + delta) / 4;
        c.srtt_ns = (7 * c.srtt_ns + rtt_sample) / 8;
      }
      on_rtt_sample(c, rtt_sample, now_ns);
      stats_.round_trips.add(rtt_sample);
    }
    // Without a sample yet (only retransmitted segments were acked) the
    // initial or backed-off RTO stays: srtt 0 would mean the minimum.
    // (The peer may hold the ack of a message nobody waits on for its ack
    // delay: no timeout before that has passed.)
    if (c.srtt_ns != 0)
      c.rto_ns = std::clamp(c.srtt_ns + 4 * c.rttvar_ns, config_.min_rto_ns + config_.ack_delay_ns,
                            config_.max_rto_ns);
    c.waiting_since_ns = now_ns;
    c.rto_deadline_ns = c.una == c.next_seq ? 0 : now_ns + c.rto_ns;
    // Messages complete in order, when every segment of theirs is acked.
    while (!c.pending.empty() && c.pending.front()->fully_segmented &&
           c.pending.front()->segments_unacked == 0) {
      if (c.pending.front()->request.request) {
        await_response(c, std::move(c.pending.front()));
      } else if (c.pending.front()->rendezvous || c.pending.front()->request.delivery_complete) {
        // Both wait for the receiver: a pull of the data, or the notice
        // that a receive took it.
        start_waiting(c.awaiting_delivery, std::move(c.pending.front()));
      } else {
        complete_send(c, *c.pending.front(), 0, kProvNone);
        retired_.push_back(std::move(c.pending.front()));
      }
      c.pending.pop_front();
      --c.pending_cut;
    }
    // Requests wait while our responses are unacknowledged (engine_rma.cc):
    // this connection's, or, for the endpoint's budget, any connection's.
    if (endpoint_full && response_bytes_ < config_.response_bytes) {
      serve_all_deferred();
      wake_stalled();
    } else if (held_back && !responses_full(c)) {
      serve_deferred(c);
      wake(c);
    }
  } else if (h.opcode == static_cast<uint8_t>(wire::Opcode::kAck) && c.una != c.next_seq &&
             c.peer_window != 0) {
    ++c.dupacks;
  }

  if (h.opcode == static_cast<uint8_t>(wire::Opcode::kAck) && c.una != c.next_seq) {
    // SACK: segments the receiver holds beyond the cumulative ack.
    uint32_t highest_sacked = c.una;
    bool any_sacked = false;
    // Set bits only: most acks carry none.
    static_assert(wire::kSackBits <= 64, "the SACK map is read as one 64-bit word");
    for (uint64_t bits = h.tag; bits != 0; bits &= bits - 1) {
      const int i = std::countr_zero(bits);
      if (i >= wire::kSackBits) break;
      const uint32_t seq = ack + 1 + static_cast<uint32_t>(i);
      if (!seq_lt(seq, c.next_seq)) break;
      TxSlot& sacked = slot_of(c, seq);
      if (!sacked.sacked && sacked.message != nullptr) {
        sacked.sacked = true;
        ++c.sacked_in_flight;
      }
      highest_sacked = seq;
      any_sacked = true;
    }
    // A receiver that closed its window holds what it refused (or will be
    // sent it again when it reopens, below): the hole its SACK shows is
    // not a loss, and neither a resend nor a cut is due, on the acks of
    // the closed window or on the one that reopens it.
    if ((c.dupacks >= 3 || any_sacked) && c.peer_window != 0 && previous_window != 0) {
      // Fast retransmit of the holes below the highest segment that
      // arrived: a hole is lost once kDupThresh later segments arrived (or
      // after three duplicate acks), or when it was sent a smoothed RTT ago.
      // A hole already resent goes again at most once per smoothed RTT.
      constexpr uint32_t kDupThresh = 3;
      const uint64_t spacing = std::max<uint64_t>(c.srtt_ns, config_.ack_delay_ns);
      for (uint32_t seq = c.una; seq_lt(seq, highest_sacked) || seq == c.una; ++seq) {
        TxSlot& slot = slot_of(c, seq);
        if (slot.message == nullptr || slot.sacked) continue;
        const bool by_count = c.dupacks >= 3 || highest_sacked - seq >= kDupThresh;
        const bool by_time = now_ns - slot.last_sent_ns >= spacing;
        if (slot.transmissions == 1 ? !(by_count || by_time) : !by_time) continue;
        if (slot.transmissions == 1) on_loss(c, seq, slot.frame);
        // Spraying: the lane that lost it may be on a path that drops.
        if (config_.spray_paths > 1) move_lane(c, slot.lane);
        emit_segment(c, seq, now_ns, true);
        ++stats_.fast_retransmits;
      }
    }
  }
  if (previous_window == 0 && c.peer_window > 0 && c.una != c.next_seq) {
    // The receiver reopened its window: what it could not take goes again.
    emit_segment(c, c.una, now_ns, true);
  }
  pump(c, now_ns);
}

void Engine::on_loss(Connection& c, uint32_t seq, uint32_t frame) {
  // One decrease per window of loss (the event ends when una passes
  // recovery_seq), by the shape of the loss: a lost frame takes the window
  // to 90 %, and a run of frames lost one after the other to 70 % (CUBIC's
  // beta).  A queue that overflows drops what arrives while it is full, a
  // run of each sender's frames; frames lost here and there (a link that
  // drops one in twenty) say much less, and a window cut by 30 % for each
  // of those stays near ten segments there, which pays the round trip more
  // than the link.  Senders that see the same losses share a bottleneck
  // alike.  The segments of one frame (a BUNDLE) are one loss; the frames
  // of a run may be found by different acks.
  bool run = false;
  if (seq_ge(c.una, c.recovery_seq)) {
    c.cwnd_before_loss = std::max<uint32_t>(c.cwnd_x256 / 256, 2);
    c.loss_cut = 0;
    c.recovery_seq = c.next_seq;
  } else {
    if (frame == c.last_lost_frame) {
      c.last_lost_seq = seq;
      return;
    }
    run = seq == c.last_lost_seq + 1;
  }
  c.last_lost_seq = seq;
  c.last_lost_frame = frame;
  uint32_t target;
  if (c.loss_cut == 0) {
    target = c.cwnd_before_loss * (run ? 7 : 9) / 10;
  } else if (c.loss_cut == 1 && run) {
    target = c.cwnd_before_loss * 7 / 10;
  } else {
    return;  // this event already took its cut
  }
  // (Counted: an event's first cut, or the one that deepens it.)
  ++(c.loss_cut == 0 ? c.cuts_loss : c.cuts_deepened);
  ++(c.loss_cut == 0 ? stats_.window_cuts_loss : stats_.window_cuts_deepened);
  c.loss_cut = run ? 2 : 1;
  c.timeout_undo = {};  // a loss since: the timeout's window is no guide
  target = std::max<uint32_t>(target, 2);
  c.ssthresh = target;
  c.cwnd_x256 = std::min(c.cwnd_x256, target * 256);
}

void Engine::undo_timeout_cut(Connection& c) {
  // The peer had the segment before our timeout resent it: nothing was
  // lost, the cut and the backed-off RTO were for a late answer.  The
  // window comes back (with what it regrew since, if more), and a loss
  // from here on is a new event with a cut of its own.
  const Connection::TimeoutUndo& undo = c.timeout_undo;
  c.cwnd_x256 = std::max(c.cwnd_x256, undo.cwnd_x256);
  c.ssthresh = undo.ssthresh;
  c.rto_ns = undo.rto_ns;  // (for the next timer: the one running stays)
  c.loss_cut = 0;
  c.recovery_seq = c.una;
  c.timeout_undo = {};
  ++c.cuts_undone;
  ++stats_.timeout_cuts_undone;
}

void Engine::complete_send(Connection& c, TxMessage& m, int error, int prov_errno) {
  if (m.pull) {
    finish_pull(c, m, error, prov_errno);
    return;
  }
  if (m.request.internal) {
    // Our own response, acknowledged or given up: room for another request.
    if (m.response) {
      --c.responses_pending;
      c.response_bytes -= m.response_charge;
      response_bytes_ -= m.response_charge;
      m.response_charge = 0;
    }
    // It carried a pulled send's data: that send is done with it.
    if (m.pulled_send) complete_send(c, *m.pulled_send, error, prov_errno);
    return;
  }
  --outstanding_sends_;
  if (m.waits_for_receiver) --c.receiver_waits;
  if (m.unanswered_request) --c.requests_unanswered;
  if (error == 0) ++stats_.messages_sent;
  if (!m.request.completion && error == 0) return;
  Completion done{};
  done.kind = Completion::Kind::kSend;
  done.context = m.request.context;
  done.user_flags = m.request.user_flags;
  done.error = error;
  done.prov_errno = prov_errno;
  done.len = error == 0 ? m.length : 0;
  done.tagged = m.request.tagged;
  done.tag = m.request.tag;
  completions_.push_back(done);
}

void Engine::fail_transmit(Connection& c, int error, int prov_errno) {
  if (!c.pending.empty()) ++stats_.peers_failed;
  for (auto& message : c.pending) {
    complete_send(c, *message, error, prov_errno);
    retired_.push_back(std::move(message));
  }
  fail_awaiting(c, error, prov_errno);
  reset_transmit(c);
}

void Engine::note_timeout(const Connection& c, TimeoutReport::Wait wait, uint64_t since_ns,
                          uint64_t now_ns) {
  ++stats_.timeouts;
  TimeoutReport& r = last_timeout_;
  r.wait = wait;
  r.peer = c.key;
  r.waited_ns = now_ns - std::min(since_ns, now_ns);
  r.quiet_ns = now_ns - std::min(c.last_heard_ns, now_ns);
  r.in_flight = c.next_seq - c.una;
  r.peer_window = c.peer_window;
  r.rto_ns = c.rto_ns;
  r.retransmits = 0;
  if (r.in_flight != 0 && c.tx_slots) {
    const TxSlot& oldest = c.tx_slots[c.una & (kMaxWindow - 1)];
    r.retransmits = oldest.transmissions > 0 ? oldest.transmissions - 1u : 0u;
  }
  r.awaiting = c.awaiting_response.size() + c.awaiting_delivery.size() + c.pending.size();
  r.rx_stalled = c.rx_stalled;
  r.next_expected = c.next_expected;
  r.rx_buffered = c.rx_buffered;
  r.una = c.una;
}

void Engine::fail_connection(Connection& c, int error, int prov_errno) {
  fail_transmit(c, error, prov_errno);
  reset_receive(c, error, prov_errno);
}

// The peer answers as another incarnation than the one c knew: the old
// one's operations fail, and the time is kept for drop_peer.
void Engine::peer_restarted(Connection& c, uint64_t now_ns) {
  fail_connection(c, kErrPeerReset, kProvPeerRestarted);
  c.restarted_ns = now_ns;
}

}  // namespace ofi_dpdk::proto
