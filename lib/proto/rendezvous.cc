// rendezvous.cc: large messages, sent only once a receive is there for them.
// A send of TransportConfig::rendezvous_bytes or more puts an announcement
// (kFlagRendezvous, a RendezvousBody with the data's length) in its place in
// the stream; the receiver matches it exactly as it would the message, so
// ordering and tag matching are unchanged.  The receive that takes it, at
// once or when posted later, sends a pull (a REQUEST with kFlagPull) naming
// the announcement; the sender answers with a RESPONSE whose bytes come
// straight from the application's buffer, and the receiver places them
// straight into the receive.  One copy on each side (into the frame, out of
// it), and an unexpected large message holds only its record.
//
//   sender                                    receiver
//   send(1 MiB)  -- MSG|kFlagRendezvous -->   match, or keep the record
//   (waits in awaiting_delivery)              receive taken
//                <-- REQUEST|kFlagPull ---    pull(msg_id, conn, capacity)
//   data         -- RESPONSE (1 MiB) ---->    placed in the receive
//   send done on its ack                      receive done when whole
//
// A pull of length 0 discards the message (FI_DISCARD): the send completes
// without its data moving.  Whatever fails on the way fails the send (it
// completes with an error) and the receive (FI_EIO, kProvSendGone or the
// connection's error); neither waits forever.
#include <endian.h>

#include <algorithm>
#include <cstring>

#include "lib/proto/engine_state.h"

namespace ofi_dpdk::proto {

bool Engine::take_rendezvous(Connection& c, const wire::FrameHeader& h, const uint8_t* payload) {
  if (h.offset != 0 || h.msg_len != sizeof(wire::RendezvousBody) ||
      h.payload_len != sizeof(wire::RendezvousBody)) {
    // Not an announcement we can read (only a broken or hostile peer sends
    // one): consumed without effect.
    ++stats_.bad_frames;
    return true;
  }
  wire::RendezvousBody body;
  std::memcpy(&body, payload, sizeof(body));
  const uint64_t length = be64toh(body.length);
  if (length == 0 || length > config_.max_msg_size) {
    ++stats_.bad_frames;
    return true;
  }
  if (c.pulls_out >= config_.max_outstanding_sends) {
    // More announcements pulled and unanswered than a sender may have sends
    // outstanding: not an honest peer's.  Each pull holds memory here, so
    // the rest are consumed without effect.
    ++stats_.bad_frames;
    return true;
  }
  // Back to the spares with its pull (frames_sent), or below.
  std::unique_ptr<InboundMessage> in(new_inbound());
  in->length = length;
  in->msg_id = h.msg_id;
  in->tagged = h.opcode == static_cast<uint8_t>(wire::Opcode::kTagged);
  in->tag = h.tag;
  in->has_data = h.flags & wire::kFlagRemoteData;
  in->cq_data = h.cq_data;
  in->sender.source_key = c.source_key;
  in->sender.auth_key = c.auth_key;
  in->sender.group = h.group;
  if (match_posted(*in)) {
    send_pull(c, h.msg_id, c.rx_conn, std::move(in), false);
    return true;
  }
  const InboundMessage record = *in;
  free_inbound(in.release());
  // Unexpected: its record is all it costs, however large the message.
  if (unexpected_bytes_ + unexpected_cost(0) > config_.unexpected_bytes) return false;
  UnexpectedMessage& u = *new_unexpected(0, false);  // its data stays at the sender
  u.sender = record.sender;
  u.connection_key = c.key;
  u.tagged = record.tagged;
  u.tag = record.tag;
  u.has_data = record.has_data;
  u.cq_data = record.cq_data;
  u.length = length;
  u.complete = true;
  u.rendezvous = true;
  u.msg_id = h.msg_id;
  u.session = c.peer_session;
  u.conn = c.rx_conn;
  u.charged = unexpected_cost(0);
  unexpected_bytes_ += u.charged;
  return true;
}

void Engine::send_pull(Connection& c, uint32_t msg_id, uint16_t conn,
                       std::unique_ptr<InboundMessage> into, bool discard) {
  std::unique_ptr<TxMessage> pull = new_message();
  const uint64_t wanted = discard ? 0 : std::min<uint64_t>(into->capacity, into->length);
  wire::PullBody body{};
  body.msg_id = htobe32(msg_id);
  body.conn = htobe16(conn);
  body.length = htobe64(wanted);
  std::memcpy(pull->body, &body, sizeof(body));
  pull->inline_body = true;
  pull->length = pull->wire_length = sizeof(body);
  pull->extra_flags = wire::kFlagPull;
  pull->iov_count = 0;
  pull->request.request = true;
  pull->request.internal = true;
  pull->request.completion = false;
  if (!discard) {
    std::copy(into->recv.iov, into->recv.iov + into->recv.iov_count, pull->request.response_iov);
    pull->request.response_iov_count = into->recv.iov_count;
  }
  into->to_user = !discard;
  pull->pull = std::move(into);
  pull->msg_id = c.next_msg_id++;
  ++c.pulls_out;
  if (!discard) {
    // Its receive completes in its turn among this peer's messages.
    OrderedCompletion slot;
    slot.pull_id = pull->msg_id;
    c.recv_order.push_back(slot);
  }
  c.pending.push_back(std::move(pull));
  ++stats_.pulls_sent;
}

void Engine::serve_pull(Connection& c, uint32_t request_id, const uint8_t* bytes, size_t length) {
  wire::PullBody body{};
  std::memcpy(&body, bytes, std::min(length, sizeof(body)));
  const uint32_t msg_id = be32toh(body.msg_id);
  const uint16_t conn = be16toh(body.conn);
  auto found = c.awaiting_delivery.find(msg_id);
  if (length != sizeof(body) || conn != c.tx_conn || found == c.awaiting_delivery.end() ||
      !found->second->rendezvous) {
    // Not a send we hold: failed, or never made.  The puller's receive
    // fails; nothing else changes.
    Response refused;
    refused.status = kErrNoMessage;
    send_response(c, request_id, std::move(refused));
    return;
  }
  std::unique_ptr<TxMessage> sent = stop_waiting(c.awaiting_delivery, found);
  // The response is sent from the application's buffer, which the send
  // holds until this response is acknowledged (complete_send).
  std::unique_ptr<TxMessage> data = new_message();
  size_t left = std::min<uint64_t>(be64toh(body.length), sent->length);
  data->length = data->wire_length = left;
  data->iov_count = 0;
  for (size_t i = 0; i < sent->iov_count && left > 0; ++i) {
    const size_t n = std::min(sent->iov[i].iov_len, left);
    data->iov[data->iov_count++] = {sent->iov[i].iov_base, n};
    left -= n;
  }
  data->request.internal = true;
  data->request.completion = false;
  data->request.has_data = true;  // status 0 in cq_data
  data->request.cq_data = 0;
  data->response = true;
  data->response_to = request_id;
  data->request.tag = request_id;
  data->msg_id = c.next_msg_id++;
  data->pulled_send = std::move(sent);
  ++c.responses_pending;
  // Queued, sent by the next poll: a segment cut here, inside on_frame,
  // would carry an ack from before this pull, and the puller would take the
  // answer for one to a request it does not know was delivered.
  queue_response(c, std::move(data));
  ++stats_.pulls_served;
}

void Engine::finish_pull(Connection& c, TxMessage& pull, int error, int prov_errno) {
  --c.pulls_out;
  const InboundMessage& in = *pull.pull;
  if (!in.to_user) return;  // a discard: nothing to report
  // By index: reporting a receive may add to recv_order (when the slot is
  // gone, bound_order gave its turn up), which moves its elements.
  const auto found = std::find_if(
      c.recv_order.begin(), c.recv_order.end(),
      [&](const OrderedCompletion& o) { return !o.ready && o.pull_id == pull.msg_id; });
  const bool has_slot = found != c.recv_order.end();
  const size_t slot = static_cast<size_t>(found - c.recv_order.begin());
  if (has_slot) filling_ = &c.recv_order[slot];
  if (error == 0) {
    complete_recv(&c, in.recv, in, nullptr);  // its bytes are in place already
  } else {
    // An error status from the sender means it holds no such message.
    if (prov_errno == kProvNone) {
      error = kErrPeerReset;
      prov_errno = kProvSendGone;
    }
    fail_recv(&c, in.recv, error, prov_errno, in.sender);
  }
  filling_ = nullptr;
  if (!has_slot) return;
  c.recv_order[slot].ready = true;
  release_ordered(c);
}

void Engine::release_ordered(Connection& c) {
  size_t ready = 0;
  while (ready < c.recv_order.size() && c.recv_order[ready].ready) {
    OrderedCompletion& o = c.recv_order[ready];
    settle_recv(o.multi, o.done, o.wanted);
    ++ready;
  }
  c.recv_order.erase(c.recv_order.begin(), c.recv_order.begin() + ready);
}

void Engine::bound_order(Connection& c) {
  if (c.recv_order.size() <= kMaxOrderedCompletions) return;
  // A pull held out while its peer sends on: its receive gives up its turn
  // (it completes when its data is in, after what is queued now) rather
  // than the queue growing without bound.
  // (A barrier keeps its place: deliver() adds none past the bound.)
  auto pending = std::find_if(c.recv_order.begin(), c.recv_order.end(),
                              [](const OrderedCompletion& o) { return !o.ready && !o.barrier; });
  if (pending != c.recv_order.end()) c.recv_order.erase(pending);
  release_ordered(c);
}

}  // namespace ofi_dpdk::proto
