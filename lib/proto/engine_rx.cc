// engine_rx.cc: the receive side of a connection, once its handshake opened
// it (engine_handshake.cc).  Segments are delivered strictly in sequence
// order: the next expected one goes straight to its message (receiver.cc);
// later ones wait, copied into chunks of the engine's bounded reorder pool,
// until the gap closes; earlier ones are duplicates and only prompt an ack.
// The receive window closes when a new message finds neither a posted
// receive nor room in the unexpected-message budget (or a request finds too
// many of our responses unacknowledged): the segment waits and the sender
// stops.
#include <algorithm>
#include <cstring>
#include <new>

#include "lib/proto/engine_state.h"
#include "lib/proto/seq.h"

namespace ofi_dpdk::proto {
namespace {

constexpr uint32_t kAckEvery = 8;

HeldSegment*& slot_of(Connection& c, uint32_t seq) {
  return c.rx_slots[seq & (kMaxWindow - 1)];
}

const uint8_t* payload_of(const HeldSegment* held) {
  return held->frame != nullptr ? held->payload : reinterpret_cast<const uint8_t*>(held + 1);
}

}  // namespace

HeldSegment* Engine::take_chunk(Connection& c) {
  if (!free_chunks_.empty()) {
    HeldSegment* chunk = free_chunks_.back();
    free_chunks_.pop_back();
    return chunk;
  }
  if ((chunks_allocated_ + 1) * chunk_size() > config_.reorder_bytes) return reclaim_chunk(c);
  if (free_chunks_.capacity() <= chunks_allocated_) {
    // Room to give every chunk back without allocating then.
    try {
      free_chunks_.reserve(std::max<size_t>(2 * chunks_allocated_, 64));
    } catch (const std::bad_alloc&) {
      return nullptr;
    }
  }
  auto* chunk = static_cast<HeldSegment*>(::operator new(chunk_size(), std::nothrow));
  if (chunk != nullptr) ++chunks_allocated_;
  if (chunk == nullptr) ++stats_.no_memory;
  return chunk;
}

HeldSegment* Engine::reclaim_chunk(const Connection& c) {
  // Shared max-min: a connection may hold more than another only while the
  // pool has room, so stations that park segments ahead of gaps cannot
  // keep a peer with a real gap from holding its share.  The segment given
  // up is the richest connection's furthest ahead (the least urgent); its
  // sender resends it (its SACK is forgotten at its RTO).  A scan of the
  // connections, only while the pool is spent.
  Connection* richest = nullptr;
  for (auto& [key, other] : connections_)
    if (other.get() != &c && (richest == nullptr || other->rx_buffered > richest->rx_buffered))
      richest = other.get();
  if (richest == nullptr || richest->rx_buffered <= c.rx_buffered + 1) return nullptr;
  for (uint32_t ahead = kMaxWindow - 1; ahead > 0; --ahead) {
    HeldSegment*& slot = slot_of(*richest, richest->next_expected + ahead);
    if (slot == nullptr) continue;
    HeldSegment* chunk = slot;
    slot = nullptr;
    --richest->rx_buffered;
    if (chunk->frame != nullptr) frame_keeper_->release(chunk->frame);
    ++stats_.held_reclaimed;
    return chunk;
  }
  return nullptr;
}

void Engine::give_back(HeldSegment* chunk) {
  if (chunk->frame != nullptr) frame_keeper_->release(chunk->frame);
  free_chunks_.push_back(chunk);
}

void Engine::release_held(Connection& c) {
  if (c.rx_slots) {
    for (uint32_t i = 0; i < kMaxWindow; ++i) {
      if (c.rx_slots[i] != nullptr) give_back(c.rx_slots[i]);
      c.rx_slots[i] = nullptr;
    }
  }
  c.rx_buffered = 0;
}

void Engine::set_stalled(Connection& c, bool stalled) {
  if (c.rx_stalled == stalled) return;
  c.rx_stalled = stalled;
  // A stall is ours, not the sender's: its progress clock starts again.
  if (!stalled) c.rx_progress_ns = clock_ns_;
  if (stalled)
    ++stalled_count_;
  else
    --stalled_count_;
}

void Engine::ack_soon(Connection& c) {
  if (c.ack_at_poll == 0) c.ack_at_poll = polls_ + 2;
}

bool Engine::responses_full(const Connection& c) const {
  return c.responses_pending >= config_.max_pending_responses ||
         c.response_bytes >= config_.connection_response_bytes ||
         response_bytes_ >= config_.response_bytes;
}

uint16_t Engine::receive_window(const Connection& c) const {
  if (c.rx_stalled) return 0;
  return static_cast<uint16_t>(kMaxWindow - std::min(c.rx_buffered, kMaxWindow));
}

uint64_t Engine::sack_bits(const Connection& c) const {
  if (!c.rx_slots || c.rx_buffered == 0) return 0;
  uint64_t bits = 0;
  for (int i = 0; i < wire::kSackBits; ++i) {
    const HeldSegment* held =
        c.rx_slots[(c.next_expected + 1 + static_cast<uint32_t>(i)) & (kMaxWindow - 1)];
    if (held != nullptr && held->whole()) bits |= uint64_t{1} << i;
  }
  return bits;
}

void Engine::reset_receive(Connection& c, int error, int prov_errno) {
  const size_t unexpected_before = unexpected_bytes_;
  if (c.inbound != nullptr) {
    InboundMessage* in = c.inbound;
    c.inbound = nullptr;
    if (in->discard) {
      // A refused sender's: no receive to fail.
    } else if (in->to_user) {
      fail_recv(&c, in->recv, error, prov_errno, in->sender);
    } else {
      UnexpectedMessage& u = *in->unexpected;
      if (u.claimed) fail_recv(&c, u.claim, error, prov_errno, in->sender);
      erase_unexpected(in->unexpected);
    }
    free_inbound(in);
  }
  release_held(c);
  c.next_expected = wire::kInitialSeq;
  c.congestion_unechoed = false;
  // The token of the closed half is never accepted again (offer_token).
  if (c.rx_open) {
    ++c.rx_gen;
    c.closed_session = c.peer_session;
    c.closed_conn = c.rx_conn;
  }
  c.rx_open = false;
  c.rx_token = 0;
  set_stalled(c, false);
  c.ack_owed = 0;
  c.ack_now = false;
  c.ack_at_poll = 0;
  // A response half received is lost with the stream.  Other requests
  // waiting for their answers may still get them, on the peer's next
  // stream: one answered there shows which were lost (finish_remote), and
  // the awaiting timer ends the rest.  The peer's requests we deferred go
  // with its stream too (its timer ends them).
  drop_remote(c, error, prov_errno);
  drop_deferred(c);
  // Pulls of our announced sends come on this half: one the peer sent and
  // we did not take is gone with it, and the peer fails its receive.  Our
  // sends fail too, rather than wait for a pull that will not come.
  fail_rendezvous_waits(c, error, prov_errno);
  // Budget freed by a dropped unexpected message may unblock other senders.
  if (unexpected_bytes_ < unexpected_before) wake_stalled();
}

namespace {

// One more copy of segment `seq`, which we had already, for the next ACK.
void note_duplicate(Connection& c, uint32_t seq) {
  if (c.duplicate_copies != 0 && c.duplicate_seq == seq) {
    if (c.duplicate_copies < UINT16_MAX) ++c.duplicate_copies;
  } else {
    c.duplicate_seq = seq;
    c.duplicate_copies = 1;
  }
}

}  // namespace

void Engine::on_data(Connection& c, const Segment& s, uint64_t now_ns) {
  const wire::FrameHeader& h = *s.header;
  answer_later(c);
  if (h.payload_len > config_.max_payload || h.msg_len > config_.max_msg_size) {
    ++stats_.bad_frames;
    return;
  }
  // A marked segment (or piece of one) not yet taken, within the window.
  if (s.congestion_experienced && seq_ge(h.seq, c.next_expected) &&
      h.seq - c.next_expected < kMaxWindow)
    note_congestion_mark(c, h.seq);
  if (h.flags & wire::kFlagPiece) {
    on_piece(c, s, now_ns);
    return;
  }
  const uint32_t seq = h.seq;
  if (seq_lt(seq, c.next_expected)) {
    if (c.next_expected - seq > kMaxWindow) {
      // Older than anything the sender can still have in flight.
      ++stats_.out_of_window;
      return;
    }
    ++stats_.duplicates;
    c.ack_now = true;  // our ack may have been lost
    note_duplicate(c, seq);
    return;
  }
  const uint32_t distance = seq - c.next_expected;
  if (distance >= kMaxWindow) {
    ++stats_.out_of_window;
    return;
  }

  if (c.rx_slots) {
    // The whole segment makes its pieces held so far needless.
    HeldSegment*& held = slot_of(c, seq);
    if (held != nullptr && !held->whole()) {
      give_back(held);
      held = nullptr;
      --c.rx_buffered;
    }
  }
  if (distance == 0 && !c.rx_stalled && !continues(c, h)) {
    // In-order segments of one sender always continue its stream; this one
    // is forged or belongs to another connection.  Drop it and keep its seq
    // for the real segment.
    ++stats_.bad_frames;
    return;
  }
  if (distance == 0 && !c.rx_stalled && deliver(c, h, s.payload)) {
    ++c.next_expected;
    c.rx_progress_ns = now_ns;
    drain_reorder(c);
    if (++c.ack_owed >= kAckEvery) {
      c.ack_now = true;
    } else {
      if (h.flags & wire::kFlagAckNow) ack_soon(c);
      if (c.ack_owed == 1) c.ack_due_ns = now_ns + config_.ack_delay_ns;
    }
    return;
  }
  // Ahead of a gap, or the next one while we cannot take it: keep it.
  if (!c.rx_slots) c.rx_slots = std::make_unique<HeldSegment*[]>(kMaxWindow);
  HeldSegment*& slot = slot_of(c, seq);
  if (slot != nullptr) {
    ++stats_.duplicates;
    c.ack_now = true;
    note_duplicate(c, seq);
  } else if (HeldSegment* chunk = take_chunk(c)) {
    chunk->header = h;
    chunk->in_pieces = false;
    if (s.frame != nullptr && frame_keeper_ != nullptr && frame_keeper_->keep(s.frame)) {
      chunk->frame = s.frame;
      chunk->payload = s.payload;
    } else {
      chunk->frame = nullptr;
      std::memcpy(chunk + 1, s.payload, h.payload_len);
    }
    slot = chunk;
    if (c.rx_buffered++ == 0) c.held_since_ns = now_ns;
  } else {
    // The pool is spent: the sender resends it once the gap closes.
    ++stats_.reorder_full;
  }
  if (distance == 0) set_stalled(c, true);  // deliver() refused it
  if (c.rx_stalled) ++stats_.stalled_no_buffer;
  c.ack_now = true;  // a duplicate ack with SACK bits: the sender repairs the gap
}

namespace {

// Adds [begin, begin + length) to the ranges of `held`, a segment of
// `segment_len` bytes arriving in pieces; false when it would need more
// ranges than a chunk keeps.  The segment is whole once one range covers
// it.
bool add_piece(HeldSegment& held, uint16_t begin, uint16_t length, uint16_t segment_len) {
  using Range = HeldSegment::PieceRange;
  Range merged{begin, static_cast<uint16_t>(begin + length)};
  Range kept[HeldSegment::kMaxPieceRanges + 1];
  uint8_t count = 0;
  bool placed = false;
  for (uint8_t i = 0; i < held.piece_ranges; ++i) {
    const Range r = held.pieces[i];
    if (r.end < merged.begin) {
      kept[count++] = r;
    } else if (merged.end < r.begin) {
      if (!placed) kept[count++] = merged;
      placed = true;
      kept[count++] = r;
    } else {  // touching or overlapping: one range
      merged.begin = std::min(merged.begin, r.begin);
      merged.end = std::max(merged.end, r.end);
    }
  }
  if (!placed) kept[count++] = merged;
  if (count > HeldSegment::kMaxPieceRanges) return false;
  if (count == 1 && kept[0].begin == 0 && kept[0].end == segment_len) {
    held.in_pieces = false;
    held.piece_ranges = 0;
    return true;
  }
  std::copy(kept, kept + count, held.pieces);
  held.piece_ranges = count;
  return true;
}

// Whether two frames of one seq carry the same segment.  Of the flags only
// the segment's own count: the frame's (kFlagAckValid, kFlagAckRequest)
// and kFlagAckNow (set while nothing is queued behind the message) may
// change between one round of pieces and the next.
bool same_segment(const wire::FrameHeader& a, const wire::FrameHeader& b) {
  constexpr uint16_t kSame = wire::kSegmentFlags & ~wire::kFlagAckNow;
  return a.opcode == b.opcode && (a.flags & kSame) == (b.flags & kSame) && a.msg_id == b.msg_id &&
         a.msg_len == b.msg_len && a.offset == b.offset && a.payload_len == b.payload_len &&
         a.tag == b.tag && a.cq_data == b.cq_data && a.group == b.group;
}

}  // namespace

void Engine::on_piece(Connection& c, const Segment& s, uint64_t now_ns) {
  // A segment cut before its path proved narrower comes again in pieces:
  // they are gathered in a chunk of the reorder pool (bounded as held
  // segments are), which counts as held only once they cover it.
  const wire::FrameHeader& h = *s.header;
  const uint32_t seq = h.seq;
  if (h.segment_len > config_.max_payload) {
    ++stats_.bad_frames;
    return;
  }
  if (seq_lt(seq, c.next_expected)) {
    if (c.next_expected - seq > kMaxWindow) {
      ++stats_.out_of_window;
      return;
    }
    ++stats_.duplicates;
    c.ack_now = true;
    return;
  }
  const uint32_t distance = seq - c.next_expected;
  if (distance >= kMaxWindow) {
    ++stats_.out_of_window;
    return;
  }
  // The segment as a frame of its own would have named it.
  wire::FrameHeader whole = h;
  whole.flags &= static_cast<uint16_t>(~wire::kFlagPiece);
  whole.offset = h.offset - h.piece_offset;
  whole.payload_len = h.segment_len;
  whole.segment_len = 0;
  whole.piece_offset = 0;
  if (!c.rx_slots) c.rx_slots = std::make_unique<HeldSegment*[]>(kMaxWindow);
  HeldSegment*& slot = slot_of(c, seq);
  if (slot == nullptr) {
    HeldSegment* chunk = take_chunk(c);
    if (chunk == nullptr) {
      ++stats_.reorder_full;
      return;
    }
    chunk->header = whole;
    chunk->frame = nullptr;
    chunk->payload = nullptr;
    chunk->in_pieces = true;
    chunk->piece_ranges = 0;
    slot = chunk;
    if (c.rx_buffered++ == 0) c.held_since_ns = now_ns;
  } else if (slot->whole()) {
    ++stats_.duplicates;
    c.ack_now = true;
    return;
  } else if (!same_segment(slot->header, whole)) {
    ++stats_.bad_frames;
    return;
  }
  if (!add_piece(*slot, static_cast<uint16_t>(h.piece_offset), h.payload_len, h.segment_len)) {
    ++stats_.reorder_full;
    return;
  }
  std::memcpy(reinterpret_cast<uint8_t*>(slot + 1) + h.piece_offset, s.payload, h.payload_len);
  if (!slot->whole()) return;
  ++stats_.segments_from_pieces;
  c.ack_now = true;
  if (distance == 0 && !c.rx_stalled) {
    const uint32_t before = c.next_expected;
    drain_reorder(c);
    if (c.next_expected != before) c.rx_progress_ns = now_ns;
  }
}

void Engine::drain_reorder(Connection& c) {
  if (!c.rx_slots) return;
  while (c.rx_buffered > 0) {
    HeldSegment*& slot = slot_of(c, c.next_expected);
    if (slot == nullptr || !slot->whole()) return;
    if (!continues(c, slot->header)) {
      // Kept while ahead of a gap, but does not fit the stream (see
      // on_data): drop it; the sender's copy comes again (RTO or probe).
      ++stats_.bad_frames;
      give_back(slot);
      slot = nullptr;
      --c.rx_buffered;
      return;
    }
    if (!deliver(c, slot->header, payload_of(slot))) {
      set_stalled(c, true);
      return;
    }
    give_back(slot);
    slot = nullptr;
    --c.rx_buffered;
    ++c.next_expected;
    ++c.ack_owed;
  }
}

bool Engine::continues(const Connection& c, const wire::FrameHeader& h) const {
  if (c.remote != nullptr)
    return h.opcode == (c.remote->is_response ? static_cast<uint8_t>(wire::Opcode::kResponse)
                                              : static_cast<uint8_t>(wire::Opcode::kRequest)) &&
           h.msg_id == c.remote->msg_id && h.msg_len == c.remote->length &&
           h.offset == c.remote->received;
  if (c.inbound == nullptr) return h.offset == 0;
  const InboundMessage& in = *c.inbound;
  return h.msg_id == in.msg_id && h.msg_len == in.length && h.offset == in.received;
}

bool Engine::deliver(Connection& c, const wire::FrameHeader& h, const uint8_t* payload) {
  // Each request, and each message that wants a delivery notice, will make
  // a response.  A request is taken while the initiator leaves too many of
  // ours, or too many bytes of them, unacknowledged, and runs once it does
  // not (serve_request): the stream must go on, since what frees the budget
  // may be behind it.  Only past the deferred requests' bounds does it wait
  // here; a message that wants a notice is taken and its notice owed.
  if (c.inbound == nullptr && c.remote == nullptr) {
    const auto opcode = static_cast<wire::Opcode>(h.opcode);
    if (opcode == wire::Opcode::kRequest) {
      if (c.deferred_requests.size() >= kMaxDeferredPerConnection ||
          deferred_requests_ >= kMaxDeferredRequests)
        return false;
    } else if (opcode != wire::Opcode::kResponse) {
      // A message runs after the requests sent before it (doc/rma.md,
      // FI_FENCE).  Behind deferred requests it is taken all the same, and
      // its completion held until they have run (a barrier in recv_order):
      // stopping the stream here would also stop the answers behind it,
      // and the peer, stopped the same way, the acks that free our budget
      // (fi_rma_bw -o write both ways).  Only one past the barriers' bound
      // still waits; serve_deferred wakes it.  Answers to our requests
      // never wait.
      if (!c.deferred_requests.empty() && !hold_behind_deferred(c)) return false;
      // One that wants a delivery notice is taken too, its notice owed
      // while the budget is full (notice_delivery); past the owed
      // notices' bound it waits.
      if ((h.flags & wire::kFlagDeliveryNotice) &&
          (c.owed_notices.size() >= kMaxDeferredPerConnection ||
           owed_notices_ >= kMaxDeferredRequests))
        return false;
    }
  }
  if (h.opcode == static_cast<uint8_t>(wire::Opcode::kRequest) ||
      h.opcode == static_cast<uint8_t>(wire::Opcode::kResponse))
    return deliver_remote(c, h, payload);
  if (c.inbound == nullptr && (h.flags & wire::kFlagControl)) {
    take_control(c, h, payload);
    return true;
  }
  if (c.inbound == nullptr && sender_filter_ && !sender_filter_(c.source_key)) {
    // Consumed segment by segment and dropped: the stream goes on.
    InboundMessage* in = new_inbound();
    in->length = h.msg_len;
    in->msg_id = h.msg_id;
    in->to_user = true;  // into a receive of no bytes
    in->discard = true;
    c.inbound = in;
  }
  if (c.inbound == nullptr && (h.flags & wire::kFlagRendezvous))
    return take_rendezvous(c, h, payload);
  bool look_for_receive = true;
  if (c.inbound == nullptr && h.offset == 0 && h.payload_len == h.msg_len &&
      !(h.flags & wire::kFlagDeliveryNotice)) {
    const Whole whole = deliver_whole(c, h, payload);
    if (whole == Whole::kDelivered) {
      if (h.flags & wire::kFlagAckNow) ack_soon(c);  // as for any whole message, below
      return true;
    }
    look_for_receive = whole == Whole::kMultiRecv;
  }
  if (c.inbound == nullptr && !begin_message(c, h, look_for_receive)) return false;
  InboundMessage& in = *c.inbound;
  place(in, h.offset, payload, h.payload_len);
  in.received += h.payload_len;
  if (in.received == in.length) {
    finish_message(c);
    // Ack a whole message the sender waits on soon: with manual progress
    // the application may not call in again for a while, and its peer's
    // send completes on this ack; but if it answers at once, the answer
    // carries it.  (One nobody waits on is acked with the next kAckEvery
    // or after the ack delay.)
    if (h.flags & wire::kFlagAckNow) ack_soon(c);
  }
  return true;
}

void Engine::take_control(Connection& c, const wire::FrameHeader& h, const uint8_t* payload) {
  // Consumed whatever it holds: the stream goes on.  Only a whole untagged
  // message fits the protocol; a sender that splits one stalls its own
  // stream (its next segment continues nothing).
  const bool whole = h.opcode == static_cast<uint8_t>(wire::Opcode::kMsg) && h.offset == 0 &&
                     h.payload_len == h.msg_len && h.msg_len >= sizeof(wire::ControlBody) &&
                     h.msg_len <= sizeof(wire::ControlBody) + wire::kMaxConnectionData;
  if (!whole || !control_handler_) {
    ++stats_.bad_frames;
    return;
  }
  ++stats_.control_messages;
  // Acked within this pass, not the next: the sender's connection event
  // waits on the ack (an accepting side's FI_CONNECTED), and the handler's
  // own event here may make the application open the next connection at
  // once; that one's request must not reach the peer before this ack.
  c.ack_now = true;
  answer_later(c);
  control_handler_(c.source_key, c.peer_session, payload, h.payload_len);
}

}  // namespace ofi_dpdk::proto
