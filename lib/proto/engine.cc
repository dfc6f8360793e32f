// engine.cc: the Engine's front door: queueing sends and receives, and
// handing each frame to the path that owns it.  engine_handshake.cc opens and
// closes connections (HELLO, tokens, RESET, admission), engine_tx.cc sends
// and retransmits, engine_rx.cc receives in order, receiver.cc matches
// messages to receives, engine_rma.cc carries requests and responses,
// engine_poll.cc runs the timers of each progress pass.
#include <endian.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <new>

#include "lib/proto/crc32c.h"
#include "lib/proto/engine_state.h"
#include "lib/proto/frame_codec.h"
#include "lib/proto/seq.h"

namespace ofi_dpdk::proto {

const char* prov_errno_text(int prov_errno) {
  switch (prov_errno) {
    case kProvPeerTimeout:
      return "peer did not acknowledge within the peer timeout (FI_DPDK_PEER_TIMEOUT_MS)";
    case kProvPeerRestarted:
      return "peer restarted: its new incarnation does not know this connection";
    case kProvAnswerLost:
      return "the peer took the request, but its answer was lost when its connection to us was "
             "reset";
    case kProvSendGone:
      return "the sender no longer holds the announced message (its send failed or was given up)";
    case kProvMaybeDelivered:
      return "the peer received the whole message, then its connection failed before it confirmed "
             "delivery: a receive there may have taken it (resending may deliver it twice)";
    case kProvNotTaken:
      return "the peer is alive, but no receive took the message within "
             "FI_DPDK_DELIVERY_TIMEOUT_MS";
    case kProvNoRoute:
      return "no route to the peer: the next hop toward its IPv4 address did not answer ARP within "
             "FI_DPDK_RESOLVE_TIMEOUT_MS";
    default:
      return "no provider-specific error";
  }
}

const char* timeout_wait_text(TimeoutReport::Wait wait) {
  switch (wait) {
    case TimeoutReport::Wait::kHandshake:
      return "handshake not answered";
    case TimeoutReport::Wait::kAcknowledge:
      return "data not acknowledged";
    case TimeoutReport::Wait::kResponses:
      return "answers to requests stopped";
    case TimeoutReport::Wait::kDelivery:
      return "peer silent while sends wait for its receives";
    case TimeoutReport::Wait::kReceive:
      return "peer stopped sending in the middle of a message";
    case TimeoutReport::Wait::kNone:
      break;
  }
  return "none";
}

bool prov_errno_known(int prov_errno) {
  switch (prov_errno) {
    case kProvPeerTimeout:
    case kProvPeerRestarted:
    case kProvAnswerLost:
    case kProvSendGone:
    case kProvMaybeDelivered:
    case kProvNotTaken:
    case kProvNoRoute:
      return true;
    default:
      return false;
  }
}

namespace {

// `length` bytes of `message`'s wire payload from `offset` on, each piece
// through `copy` (memcpy's signature).
template <typename Copy>
void copy_from(const TxMessage& message, uint32_t offset, size_t length, uint8_t* out,
               Copy&& copy) {
  if (message.inline_body) {
    copy(out, message.body + offset, std::min<size_t>(length, sizeof(message.body) - offset));
    return;
  }
  size_t skip = offset;
  size_t left = length;
  if (message.iov_count == 0) {  // the whole payload is in message.copy
    if (left != 0) copy(out, message.copy.get() + offset, left);
    return;
  }
  for (size_t i = 0; i < message.iov_count && left > 0; ++i) {
    const iovec& part = message.iov[i];
    if (skip >= part.iov_len) {
      skip -= part.iov_len;
      continue;
    }
    const size_t n = std::min(part.iov_len - skip, left);
    copy(out, static_cast<const uint8_t*>(part.iov_base) + skip, n);
    out += n;
    left -= n;
    skip = 0;
  }
}

void copy_from(const TxMessage& message, uint32_t offset, size_t length, uint8_t* out) {
  copy_from(message, offset, length, out,
            [](uint8_t* to, const uint8_t* from, size_t n) { std::memcpy(to, from, n); });
}

}  // namespace

void OutFrame::copy_payload(uint8_t* out) const {
  if (bundled != 0) {
    for (uint16_t i = 0; i < bundled; ++i) {
      const BundledSegment& segment = bundle[i];
      out += encode_bundle_entry(out, segment.entry);
      copy_from(*segment.message, segment.offset, segment.entry.payload_len, out);
      out += segment.entry.payload_len;
    }
    return;
  }
  if (message == nullptr) {
    std::memcpy(out, body, std::min<size_t>(header.payload_len, sizeof(body)));
    return;
  }
  copy_from(*message, offset, header.payload_len, out);
}

const uint8_t* OutFrame::payload_in_one_piece() const {
  if (bundled != 0 || message == nullptr) return nullptr;
  const TxMessage& m = *message;
  if (m.inline_body) return m.body + offset;
  if (m.iov_count == 0) return m.copy ? m.copy.get() + offset : nullptr;
  size_t skip = offset;
  for (size_t i = 0; i < m.iov_count; ++i) {
    const iovec& part = m.iov[i];
    if (skip >= part.iov_len) {
      skip -= part.iov_len;
      continue;
    }
    return part.iov_len - skip >= header.payload_len
               ? static_cast<const uint8_t*>(part.iov_base) + skip
               : nullptr;
  }
  return nullptr;
}

uint32_t OutFrame::copy_payload(uint8_t* out, uint32_t crc) const {
  if (bundled != 0 || message == nullptr) {  // small: copied, then checksummed
    copy_payload(out);
    return crc32c(crc, out, header.payload_len);
  }
  copy_from(
      *message, offset, header.payload_len, out,
      [&](uint8_t* to, const uint8_t* from, size_t n) { crc = crc32c_copy(crc, to, from, n); });
  return crc;
}

Engine::Engine(const TransportConfig& config, const uint8_t local_mac[6], uint16_t local_queue,
               uint32_t session)
    : config_(config), queue_(local_queue), address_queue_(local_queue), session_(session) {
  config_.spray_paths = std::clamp<uint32_t>(config_.spray_paths, 1, kMaxSprayPaths);
  std::memcpy(mac_, local_mac, 6);
  outbox_.reserve(2 * kMaxWindow);
  answer_due_.reserve(64);
  quiet_poll_ns_ = config_.ack_delay_ns / 8;
}

Engine::~Engine() {
  // A message still being assembled is held through a raw pointer.
  for (auto& [key, connection] : connections_) {
    delete connection->inbound;
    delete connection->remote;  // nothing to give back: the budget goes too
    for (RemoteInbound* request : connection->deferred_requests) delete request;
    release_held(*connection);
  }
  for (HeldSegment* chunk : free_chunks_) ::operator delete(chunk);
}

const Connection* Engine::find(uint64_t key) const {
  auto it = connections_.find(key);
  return it == connections_.end() ? nullptr : it->second.get();
}

uint32_t Engine::peer_session(uint64_t key) const {
  const Connection* c = find(key);
  return c != nullptr ? c->peer_session : 0;
}

size_t Engine::unexpected_messages() const {
  return unexpected_.size();
}
size_t Engine::chunk_size() const {
  return sizeof(HeldSegment) + config_.max_payload;
}
size_t Engine::reorder_pool_bytes() const {
  return chunks_allocated_ * chunk_size();
}

uint32_t Engine::payload_offer(const uint8_t* link) const {
  const uint32_t limit = path_limit_ ? path_limit_(link) : 0;
  return limit == 0 ? config_.max_payload : std::min(config_.max_payload, limit);
}

Connection& Engine::connection(const uint8_t mac[6], uint16_t queue) {
  const uint64_t key = peer_key(mac, queue);
  // A sender sends to the same peer many times in a row: no hash lookup
  // then.  (evict forgets it.)
  if (last_connection_ != nullptr && last_connection_->key == key) return *last_connection_;
  auto& slot = connections_[key];
  if (!slot) {
    slot = std::make_unique<Connection>();
    slot->key = key;
    std::memcpy(slot->mac, mac, 6);
    slot->queue = queue;
    slot->source_key = key;  // until a handshake names the peer's address
    slot->payload_offer = payload_offer(mac);
    reset_transmit(*slot);
    // An evicted record's memory of its receive halves goes on in the new
    // one, however it is made (a handshake, or a send of ours): the old
    // connections stay closed.
    const ReceiveMemory memory = receive_memory(key, nullptr);
    slot->rx_gen = memory.gen;
    slot->closed_session = memory.closed_session;
    slot->closed_conn = memory.closed_conn;
    evicted_gen_.erase(key);
    activate(*slot);
  }
  last_connection_ = slot.get();
  return *slot;
}

Connection* Engine::connection_at(uint64_t key) {
  if (last_connection_ != nullptr && last_connection_->key == key) return last_connection_;
  auto it = connections_.find(key);
  if (it == connections_.end()) return nullptr;
  last_connection_ = it->second.get();
  return last_connection_;
}

int Engine::send(const PeerAddress& peer, const SendRequest& request, uint64_t now_ns) {
  const bool visit_owed = touched_;
  touched_ = true;
  if (request.iov_count > kMaxIov || (request.iov == nullptr && request.iov_count != 0))
    return -EINVAL;
  clock_ns_ = std::max(clock_ns_, now_ns);
  if (outstanding_sends_ >= config_.max_outstanding_sends) return -EAGAIN;
  size_t length = 0;
  for (size_t i = 0; i < request.iov_count; ++i) length += request.iov[i].iov_len;
  if (length > config_.max_msg_size) return -EMSGSIZE;
  if (config_.datagrams) return send_datagram(peer, request, length);

  // Large messages are announced and pulled by the receive that takes them;
  // a copy (inject) has no reason to wait, a request has its own answer.
  const bool rendezvous = config_.rendezvous_bytes != 0 && length >= config_.rendezvous_bytes &&
                          !request.copy && !request.request && !request.internal &&
                          !request.control;
  Connection& c = connection(peer.mac, peer.queue);
  activate(c);
  // Sends that wait for the peer's receives hold their buffers and a place
  // in the budget for as long as the peer answers: one peer may hold half.
  const bool waits_for_receiver = rendezvous || request.delivery_complete;
  if (waits_for_receiver &&
      c.receiver_waits >= std::max<size_t>(config_.max_outstanding_sends / 2, 1)) {
    ++stats_.sends_refused_peer_share;
    return -EAGAIN;
  }
  // A request waits here rather than at the peer: one it could neither run
  // nor defer would stop its stream, and with it the acks of its answers
  // and ours (test_crossed_requests.cc).
  const bool counted_request = request.request && !request.internal;
  if (counted_request && c.requests_unanswered >= kMaxDeferredPerConnection) {
    ++stats_.sends_refused_peer_share;
    return -EAGAIN;
  }
  c.auth_key = peer.auth_key;
  if (peer.session != 0 && c.peer_session != peer.session) {
    // The address names another incarnation than the one we talk to: the
    // application re-inserted the peer after a restart.  Start over.
    if (c.peer_session != 0) fail_connection(c, kErrPeerReset, kProvPeerRestarted);
    c.peer_session = peer.session;
  }
  std::unique_ptr<TxMessage> message = new_message();
  message->length = length;
  message->wire_length = length;
  copy_request(message->request, request);
  message->request.iov = nullptr;
  message->waits_for_receiver = waits_for_receiver;
  if (rendezvous) {
    message->rendezvous = true;
    message->inline_body = true;
    message->wire_length = sizeof(wire::RendezvousBody);
    message->extra_flags = wire::kFlagRendezvous;
    wire::RendezvousBody body{};
    body.length = htobe64(length);
    std::memcpy(message->body, &body, sizeof(body));
    ++stats_.rendezvous_sent;
  } else if (request.delivery_complete) {
    message->extra_flags = wire::kFlagDeliveryNotice;
  }
  if (request.control) message->extra_flags |= wire::kFlagControl;
  if (!take_payload(*message, request, length)) return refuse_no_memory(std::move(message));
  if (!request.copy && request.copy_header && request.iov_count != 0) {
    // A request's header, made on the caller's stack.
    const size_t header = request.iov[0].iov_len;
    message->copy = take_copy_buffer(header, &message->copy_capacity);
    if (!message->copy) return refuse_no_memory(std::move(message));
    std::memcpy(message->copy.get(), request.iov[0].iov_base, header);
    message->iov[0].iov_base = message->copy.get();
  }
  message->msg_id = c.next_msg_id++;
  if (c.next_seq == c.una && c.pending_cut == c.pending.size()) c.last_heard_ns = now_ns;
  c.pending.push_back(std::move(message));
  ++outstanding_sends_;
  if (waits_for_receiver) ++c.receiver_waits;
  if (counted_request) {
    c.pending.back()->unanswered_request = true;
    ++c.requests_unanswered;
  }
  pump(c, now_ns);
  // Sent whole, its timer armed: the next poll would only look at timers,
  // which its quiet visits serve.
  // (Only what the send changed matters: untouched, the last visit left
  // nothing owed at the poll.)
  if (!visit_owed && c.tx_state == TxState::kOpen && c.pending.back()->fully_segmented)
    touched_ = false;
  return 0;
}

bool Engine::take_payload(TxMessage& message, const SendRequest& request, size_t length) {
  if (!request.copy) {
    std::copy(request.iov, request.iov + request.iov_count, message.iov);
    message.iov_count = request.iov_count;
    return true;
  }
  // A small copy (an fi_inject of up to 64 bytes, an atomic's request)
  // rides in the record itself, not in a buffer taken and given back.
  const bool small = !message.inline_body && length <= sizeof(message.body);
  if (small) {
    message.inline_body = true;
  } else {
    message.copy = take_copy_buffer(length, &message.copy_capacity);
    if (!message.copy) return false;
  }
  uint8_t* out = small ? message.body : message.copy.get();
  size_t at = 0;
  for (size_t i = 0; i < request.iov_count; ++i) {
    // An empty iov may have no base (fi_send of 0 bytes with buf NULL).
    if (request.iov[i].iov_len != 0)
      std::memcpy(out + at, request.iov[i].iov_base, request.iov[i].iov_len);
    at += request.iov[i].iov_len;
  }
  message.iov_count = 0;
  return true;
}

bool Engine::accepts_key(uint32_t key) const {
  // One key, or a few: a plain loop (std::find's unrolled one costs more
  // before it reaches the first).
  for (const uint32_t accepted : accepted_keys_)
    if (accepted == key) return true;
  return false;
}

void Engine::on_frame(const Segment& segment, uint64_t now_ns) {
  const bool visit_owed = touched_;
  touched_ = true;
  others_given_work_ = false;
  const wire::FrameHeader& h = *segment.header;
  ++stats_.frames_received;
  clock_ns_ = std::max(clock_ns_, now_ns);
  const uint8_t opcode = h.opcode;
  if (!accepts_key(h.auth_key)) {
    // Another job's traffic: not even a RESET tells it we are here.
    ++stats_.wrong_key;
    return;
  }
  // Every sender has a session, and names as its address its own queue or,
  // for a context of a scalable endpoint, one a little below it.
  if (h.src_session == 0 || h.src_ep_queue > h.src_queue ||
      h.src_queue - h.src_ep_queue >= kMaxAddressSpan) {
    ++stats_.bad_frames;
    return;
  }
  if (config_.datagrams || opcode == static_cast<uint8_t>(wire::Opcode::kDatagram)) {
    // Datagrams and connections never meet: each endpoint takes one kind.
    on_datagram(segment);
    return;
  }
  if (h.dst_session != 0 && h.dst_session != session_) {
    // Meant for an earlier incarnation of this endpoint: tell the sender.
    ++stats_.stale_session;
    if (opcode != static_cast<uint8_t>(wire::Opcode::kReset) &&
        may_answer(connection_by_key(peer_key(segment.src_mac, h.src_queue))))
      emit_reset(segment.src_mac, h);
    return;
  }
  if (opcode == static_cast<uint8_t>(wire::Opcode::kHello)) {
    on_hello(segment);
    return;
  }
  Connection* c = connection_at(peer_key(segment.src_mac, h.src_queue));
  if (c != nullptr) activate(*c);
  if (c != nullptr && h.auth_key != c->auth_key) {
    // A connection carries one network key: a frame with another is not
    // this peer's, whatever its addresses say.
    ++stats_.wrong_key;
    return;
  }
  if (opcode == static_cast<uint8_t>(wire::Opcode::kHelloAck)) {
    on_hello_ack(c, segment, now_ns);
    return;
  }
  if (opcode == static_cast<uint8_t>(wire::Opcode::kReset)) {
    on_reset(c, h);
    return;
  }

  // An ack counts only for our open transmit connection it names, with the
  // token the peer granted it.
  const bool acks_us = c != nullptr && c->tx_state == TxState::kOpen &&
                       (h.flags & wire::kFlagAckValid) && h.dst_session == session_ &&
                       h.src_session == c->peer_session && h.ack_conn == c->tx_conn &&
                       h.ack_token == c->tx_token;
  if (acks_us) {
    c->last_heard_ns = now_ns;
    if (opcode == static_cast<uint8_t>(wire::Opcode::kAck) && !(h.flags & wire::kFlagAckRequest))
      c->last_pure_ack_ns = now_ns;
    on_ack(*c, h, now_ns);
  }
  if (opcode == static_cast<uint8_t>(wire::Opcode::kAck)) {
    if (h.flags & wire::kFlagAckRequest) {
      // A sender asks whether we hold its connection (it waits for a
      // delivery notice, or its large segments go unanswered): an ACK says
      // we do, a RESET that we do not (its wait fails).  The probe proves
      // the handshake as a segment would, so it opens a receive half no
      // segment reached yet (all of them too large for the path).
      if (Connection* half = receive_half_for(c, segment, now_ns)) {
        half->last_heard_ns = now_ns;
        emit_ack(*half);
      }
    } else if (!acks_us) {
      ++stats_.stale_session;
    }
    return;
  }
  if (opcode == static_cast<uint8_t>(wire::Opcode::kBundle)) {
    on_bundle(c, segment, now_ns);
    return;
  }
  if (!wire::opcode_is_data(opcode)) return;
  Connection* const acked = c;
  c = receive_half_for(c, segment, now_ns);
  if (c == nullptr) return;
  c->last_heard_ns = now_ns;
  last_data_ns_ = now_ns;
  on_data(*c, segment, now_ns);
  // A segment taken in order, its ack delayed: as after a send, unless
  // the frame gave other connections work (its ack freed the response
  // budget, or its message a stalled window).
  if (!visit_owed && !others_given_work_ && c == acked && settled(*c)) touched_ = false;
}

void Engine::drop_peer(uint64_t key, uint32_t session, uint64_t named_at_ns) {
  touched_ = true;
  auto it = connections_.find(key);
  if (it == connections_.end()) return;
  // Another incarnation holds the connection: the removed address never
  // named it (a process that took over a departed one's address), and what
  // the old one had failed when its restart was seen.
  const Connection& c = *it->second;
  const bool other_named = session != 0 && c.peer_session != 0 && c.peer_session != session;
  const bool restarted_since = named_at_ns != 0 && c.restarted_ns > named_at_ns;
  if (other_named || restarted_since) {
    ++stats_.drops_of_other_incarnations;
    return;
  }
  // What the peer sent us arrived: an application that removes the peer's
  // address as soon as its receive completed (fabtests' fi_av_xfer) must
  // not leave the peer's send to fail on our RESET of its retransmission
  // (a delayed ack was still owed).  Messages it holds unexpected stay.
  activate(*it->second);
  if (it->second->rx_open) emit_ack(*it->second);
  fail_connection(*it->second, kErrPeerReset, kProvPeerRestarted);
  it->second->peer_session = 0;
}

void Engine::change_path(Connection& c) {
  if (config_.spray_paths > 1 && c.lanes_ready && c.una != c.next_seq && c.tx_slots) {
    // The lane the oldest segment was lost on.
    move_lane(c, c.tx_slots[c.una & (kMaxWindow - 1)].lane);
    return;
  }
  ++c.path;
  ++stats_.path_changes;
}

uint8_t Engine::next_path(Connection& c, uint8_t* lane) {
  if (config_.spray_paths <= 1) {
    *lane = 0;
    return c.path;
  }
  if (!c.lanes_ready) {
    // First use: lanes on paths path, path + 1, ...
    for (uint32_t i = 0; i < config_.spray_paths; ++i)
      c.lane_paths[i] = static_cast<uint8_t>(c.path + i);
    c.fresh_path = static_cast<uint8_t>(c.path + config_.spray_paths);
    c.lanes_ready = true;
  }
  *lane = static_cast<uint8_t>(c.next_lane++ % config_.spray_paths);
  return c.lane_paths[*lane];
}

void Engine::move_lane(Connection& c, uint8_t lane) {
  if (config_.spray_paths <= 1 || !c.lanes_ready) {
    ++c.path;
    ++stats_.path_changes;
    return;
  }
  c.lane_paths[lane % config_.spray_paths] = c.fresh_path++;
  ++stats_.path_changes;
}

void Engine::fail_unreachable(const std::function<bool(const uint8_t* link)>& unreachable) {
  touched_ = true;
  for (auto& [key, connection] : connections_) {
    if (!unreachable(connection->mac)) continue;
    fail_connection(*connection, kErrHostUnreachable, kProvNoRoute);
    connection->peer_session = 0;
  }
  // Frames already built for those peers would only send the provider to
  // look for their next hop once more (another resolution, for nothing).
  const auto before = outbox_.size();
  std::erase_if(outbox_, [&](const OutFrame& frame) { return unreachable(frame.dst_mac); });
  if (outbox_.size() != before) open_bundle_ = {};
}

void Engine::frames_sent() {
  // (Every flush calls it, most with nothing sent: a receive's.)
  if (outbox_.empty() && retired_.empty() && open_bundle_.connection == nullptr &&
      bundle_used_ == 0)
    return;
  outbox_.clear();
  open_bundle_ = {};
  bundle_used_ = 0;
  // (By index: a response that carried a pulled send retires that send too.)
  for (size_t i = 0; i < retired_.size(); ++i) {
    std::unique_ptr<TxMessage> message = std::move(retired_[i]);
    // (Checked here: most records hold no buffer, and the call costs more.)
    if (message->copy) keep_spare(std::move(message->copy), message->copy_capacity);
    if (message->pull) free_inbound(message->pull.release());
    if (message->pulled_send) retired_.push_back(std::move(message->pulled_send));
    if (spare_messages_.size() < kSpareRecords) {
      message->recycle();
      spare_messages_.push_back(std::move(message));
    }
  }
  retired_.clear();
}

int Engine::refuse_no_memory(std::unique_ptr<TxMessage> message) {
  ++stats_.no_memory;
  message->recycle();
  if (spare_messages_.size() < kSpareRecords) spare_messages_.push_back(std::move(message));
  return -ENOMEM;
}

std::unique_ptr<TxMessage> Engine::new_message() {
  if (spare_messages_.empty()) return std::make_unique<TxMessage>();
  std::unique_ptr<TxMessage> message = std::move(spare_messages_.back());
  spare_messages_.pop_back();
  return message;
}

InboundMessage* Engine::new_inbound() {
  if (spare_inbound_.empty()) return new InboundMessage();
  InboundMessage* in = spare_inbound_.back().release();
  spare_inbound_.pop_back();
  return in;
}

RemoteInbound* Engine::new_remote() {
  if (spare_remote_.empty()) return new RemoteInbound();
  RemoteInbound* in = spare_remote_.back().release();
  spare_remote_.pop_back();
  return in;
}

void Engine::free_remote(RemoteInbound* in) {
  if (spare_remote_.size() >= kSpareRecords) {
    delete in;
    return;
  }
  if (in->bytes) keep_spare(std::move(in->bytes), in->capacity);
  *in = RemoteInbound{};
  spare_remote_.emplace_back(in);
}

void Engine::free_inbound(InboundMessage* in) {
  if (spare_inbound_.size() >= kSpareRecords) {
    delete in;
    return;
  }
  in->recycle();
  spare_inbound_.emplace_back(in);
}

namespace {

// The class of a copy buffer of at most half kMinSpareCopy: the smallest
// kSmallCopy << class that holds `length` bytes.
size_t copy_class(size_t length) {
  size_t c = 0;
  while ((kSmallCopy << c) < length) ++c;
  return c;
}

}  // namespace

void Engine::keep_spare(std::unique_ptr<uint8_t[]> buffer, size_t capacity) {
  if (!buffer) return;
  if (capacity < kMinSpareCopy) {
    // Only the sizes take_copy_buffer makes (a ResponseBytes may have grown
    // to another).
    if (capacity > kMinSpareCopy / 2) return;
    const size_t c = copy_class(capacity);
    auto& spares = spare_class_copies_[c];
    if ((kSmallCopy << c) == capacity && (spares.size() + 1) * capacity <= kSpareClassBytes)
      spares.push_back(std::move(buffer));
    return;
  }
  if (capacity > kMaxSpareCopy || spare_copy_bytes_ + capacity > kSpareCopyBytes) return;
  spare_copy_bytes_ += capacity;
  spare_copies_.emplace_back(capacity, std::move(buffer));
}

std::unique_ptr<uint8_t[]> Engine::take_copy_buffer(size_t length, size_t* capacity) {
  // A spare that fits, else a new buffer; neither is zeroed (the caller
  // fills the length it asked for).  Up to half kMinSpareCopy, buffers come
  // in powers of two (a spare megabyte is not spent on a 40-byte request);
  // above, the smallest spare that fits, or a new one of kMinSpareCopy or
  // more.
  if (length <= kMinSpareCopy / 2) {
    const size_t c = copy_class(length);
    *capacity = kSmallCopy << c;
    auto& spares = spare_class_copies_[c];
    if (spares.empty()) return std::unique_ptr<uint8_t[]>(new (std::nothrow) uint8_t[*capacity]);
    std::unique_ptr<uint8_t[]> buffer = std::move(spares.back());
    spares.pop_back();
    return buffer;
  }
  auto best = spare_copies_.end();
  for (auto it = spare_copies_.begin(); it != spare_copies_.end(); ++it)
    if (it->first >= length && (best == spare_copies_.end() || it->first < best->first)) best = it;
  if (best != spare_copies_.end()) {
    *capacity = best->first;
    std::unique_ptr<uint8_t[]> buffer = std::move(best->second);
    spare_copy_bytes_ -= best->first;
    *best = std::move(spare_copies_.back());
    spare_copies_.pop_back();
    return buffer;
  }
  *capacity = std::max(length, kMinSpareCopy);
  return std::unique_ptr<uint8_t[]>(new (std::nothrow) uint8_t[*capacity]);
}

ResponseBytes Engine::response_bytes(size_t length) {
  touched_ = true;
  size_t capacity = 0;
  std::unique_ptr<uint8_t[]> buffer = take_copy_buffer(length, &capacity);
  if (!buffer) {
    ++stats_.no_memory;
    return {};
  }
  return ResponseBytes(std::move(buffer), capacity, length);
}

}  // namespace ofi_dpdk::proto
