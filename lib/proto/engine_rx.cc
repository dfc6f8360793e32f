// engine_rx.cc: the receive side of a connection.  Segments are delivered
// strictly in sequence order: the next expected one goes straight to its
// message (receiver.cc); later ones wait in the reorder slots until the gap
// closes; earlier ones are duplicates and only prompt an ack.  The receive
// window closes when a new message finds neither a posted receive nor room
// in the unexpected-message budget: the segment waits and the sender stops.
#include <algorithm>
#include <cstring>

#include "lib/proto/seq.h"
#include "lib/proto/transport.h"

namespace ofi_dpdk::proto {
namespace {

constexpr uint32_t kAckEvery = 8;

RxSlot& slot_of(Connection& c, uint32_t seq) { return c.rx_slots[seq & (kMaxWindow - 1)]; }

}  // namespace

uint16_t Engine::receive_window(const Connection& c) const {
  if (c.rx_stalled) return 0;
  return static_cast<uint16_t>(kMaxWindow - std::min(c.rx_buffered, kMaxWindow));
}

uint64_t Engine::sack_bits(const Connection& c) const {
  if (!c.rx_slots || c.rx_buffered == 0) return 0;
  uint64_t bits = 0;
  for (int i = 0; i < wire::kSackBits; ++i)
    if (c.rx_slots[(c.next_expected + 1 + static_cast<uint32_t>(i)) & (kMaxWindow - 1)].present)
      bits |= uint64_t{1} << i;
  return bits;
}

void Engine::reset_receive(Connection& c, int error, int prov_errno) {
  const size_t unexpected_before = unexpected_bytes_;
  if (c.inbound != nullptr) {
    InboundMessage* in = c.inbound;
    c.inbound = nullptr;
    if (in->to_user) {
      Completion failed{};
      failed.kind = Completion::Kind::kRecv;
      failed.context = in->recv.context;
      failed.user_flags = in->recv.user_flags;
      failed.error = error;
      failed.prov_errno = prov_errno;
      failed.buf = in->recv.iov_count ? in->recv.iov[0].iov_base : nullptr;
      failed.source_key = c.source_key;
      failed.auth_key = c.auth_key;
      push_recv_completion(in->recv, failed, true);
    } else {
      UnexpectedMessage& u = *in->unexpected;
      if (u.claimed) {
        Completion failed{};
        failed.kind = Completion::Kind::kRecv;
        failed.context = u.claim.context;
        failed.user_flags = u.claim.user_flags;
        failed.error = kErrPeerReset;
        failed.prov_errno = kProvPeerRestarted;
        failed.source_key = c.source_key;
        failed.auth_key = c.auth_key;
        push_recv_completion(u.claim, failed, true);
      }
      unexpected_bytes_ -= u.length;
      unexpected_.erase(in->unexpected);
    }
    delete in;
  }
  if (c.rx_slots) std::fill(c.rx_slots.get(), c.rx_slots.get() + kMaxWindow, RxSlot{});
  c.rx_buffered = 0;
  c.next_expected = wire::kInitialSeq;
  c.rx_open = false;
  c.rx_stalled = false;
  c.ack_owed = 0;
  c.ack_now = false;
  // The responses to our requests were in the stream we just dropped.
  drop_remote(c);
  fail_awaiting(c, error, prov_errno);
  // Budget freed by a dropped unexpected message may unblock other senders.
  if (unexpected_bytes_ < unexpected_before) wake_stalled();
}

void Engine::on_data(Connection& c, const Segment& s, uint64_t now_ns) {
  const wire::FrameHeader& h = *s.header;
  if (h.payload_len > config_.max_payload || h.msg_len > config_.max_msg_size) {
    ++stats_.bad_frames;
    return;
  }
  const bool syn = h.flags & wire::kFlagSyn;
  if (c.rx_open && h.conn != c.rx_conn) {
    if (!syn || !conn_newer(h.conn, c.rx_conn)) {
      // A straggler of a connection the sender has given up on; or a newer
      // one whose opening we never saw, which the sender must start over.
      ++stats_.stale_session;
      if (conn_newer(h.conn, c.rx_conn)) emit_reset(s.src_mac, h.src_queue, h.src_session, h.conn, h.auth_key);
      return;
    }
    // The sender gave up on its old connection (it timed us out) and opens
    // the next one: whatever it had half sent on the old one is gone (it
    // failed those sends), and its sequence numbers start again.
    reset_receive(c);
  }
  if (!c.rx_open) {
    if (!syn) {
      // We hold no receive state for this sender's connection: it must
      // start over (we restarted or timed it out, or it never opened it).
      ++stats_.stale_session;
      emit_reset(s.src_mac, h.src_queue, h.src_session, h.conn, h.auth_key);
      return;
    }
    c.rx_open = true;
    c.rx_conn = h.conn;
    c.next_expected = wire::kInitialSeq;
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
    return;
  }
  const uint32_t distance = seq - c.next_expected;
  if (distance >= kMaxWindow) {
    ++stats_.out_of_window;
    return;
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
    drain_reorder(c);
    if (++c.ack_owed >= kAckEvery || (h.flags & wire::kFlagAckNow)) {
      c.ack_now = true;
    } else if (c.ack_owed == 1) {
      c.ack_due_ns = now_ns + config_.ack_delay_ns;
    }
    return;
  }
  // Ahead of a gap, or the next one while we cannot take it: keep a copy.
  if (!c.rx_slots) {
    c.rx_slots = std::make_unique<RxSlot[]>(kMaxWindow);
    c.rx_payload = std::make_unique<uint8_t[]>(size_t{kMaxWindow} * config_.max_payload);
  }
  RxSlot& slot = slot_of(c, seq);
  if (slot.present) {
    ++stats_.duplicates;
  } else {
    slot.present = true;
    slot.header = h;
    slot.payload_index = seq & (kMaxWindow - 1);
    std::memcpy(c.rx_payload.get() + size_t{slot.payload_index} * config_.max_payload, s.payload,
                h.payload_len);
    ++c.rx_buffered;
  }
  if (distance == 0 && !c.rx_stalled) c.rx_stalled = true;  // deliver() refused it
  if (c.rx_stalled) ++stats_.stalled_no_buffer;
  c.ack_now = true;  // a duplicate ack with SACK bits: the sender repairs the gap
}

void Engine::drain_reorder(Connection& c) {
  if (!c.rx_slots) return;
  while (c.rx_buffered > 0) {
    RxSlot& slot = slot_of(c, c.next_expected);
    if (!slot.present) return;
    const uint8_t* payload =
        c.rx_payload.get() + size_t{slot.payload_index} * config_.max_payload;
    if (!continues(c, slot.header)) {
      // Kept while ahead of a gap, but does not fit the stream (see
      // on_data): drop it; the sender's copy comes again (RTO or probe).
      ++stats_.bad_frames;
      slot.present = false;
      --c.rx_buffered;
      return;
    }
    if (!deliver(c, slot.header, payload)) {
      c.rx_stalled = true;
      return;
    }
    slot.present = false;
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
  if (h.opcode == static_cast<uint8_t>(wire::Opcode::kRequest) ||
      h.opcode == static_cast<uint8_t>(wire::Opcode::kResponse))
    return deliver_remote(c, h, payload);
  if (c.inbound == nullptr && !begin_message(c, h)) return false;
  InboundMessage& in = *c.inbound;
  place(in, h.offset, payload, h.payload_len);
  in.received += h.payload_len;
  if (in.received == in.length) {
    finish_message(c);
    // Ack a whole message at once: with manual progress the application
    // may not call in again soon, and its peer's send completes on this ack.
    c.ack_now = true;
  }
  return true;
}

}  // namespace ofi_dpdk::proto
