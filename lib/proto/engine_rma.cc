// engine_rma.cc: requests and responses, the transport under RMA and
// atomics.  A request is a message in the ordinary stream (REQUEST frames),
// so it arrives once and in order with everything else from its sender; the
// target assembles it, hands it to the RequestHandler exactly once, and
// sends the handler's Response back as a RESPONSE message on its own stream,
// retransmitted until acknowledged: its own bytes, or a read's lent from the
// region until recall_lent copies them.  At the initiator the
// request, once fully acknowledged, waits in Connection::awaiting_response
// until the response with its msg_id (in the tag field) completes it.
#include <algorithm>
#include <cstring>
#include <new>

#include "lib/proto/engine_state.h"
#include "lib/proto/seq.h"

namespace ofi_dpdk::proto {

bool Engine::deliver_remote(Connection& c, const wire::FrameHeader& h, const uint8_t* payload) {
  if (c.remote == nullptr) {
    RemoteHold in = hold_remote(new_remote());  // until c.remote takes it
    in->is_response = h.opcode == static_cast<uint8_t>(wire::Opcode::kResponse);
    in->msg_id = h.msg_id;
    in->length = h.msg_len;
    if (in->is_response) {
      // A response to nothing we wait for (forged, or for a request we
      // already failed): consume it without effect.
      in->request = awaited(c, static_cast<uint32_t>(h.tag));
      in->status = static_cast<int>(h.cq_data);
      if (in->request == nullptr) ++stats_.bad_frames;
    } else if (h.msg_len > config_.unexpected_bytes ||
               ((h.flags & wire::kFlagPull) && h.msg_len != sizeof(wire::PullBody))) {
      // Never allocate what one frame announces beyond the budget: the
      // request is consumed and answered kErrTooLarge (a pull is its body).
      in->oversize = true;
    } else {
      // Requests are assembled whole, so the handler checks access before
      // any byte reaches registered memory, unless the placer, shown the
      // first segment (the head, with its key and access), names where the
      // rest goes.  What is assembled shares the unexpected budget with
      // early messages, and waits (window 0) when it is spent.
      in->pull = h.flags & wire::kFlagPull;
      // Not while earlier requests wait, deferred, or this one would: its
      // bytes would land before they ran.
      Placement placement;
      if (request_placer_ && !in->pull && h.offset == 0 && c.deferred_requests.empty() &&
          !responses_full(c))
        placement = request_placer_(c.source_key, payload, h.payload_len, h.msg_len);
      const bool place = placement.target != nullptr && placement.header <= h.payload_len &&
                         placement.header < h.msg_len;
      const size_t kept = place ? placement.header : h.msg_len;
      if (unexpected_bytes_ + kept > config_.unexpected_bytes) return false;
      in->bytes = take_copy_buffer(kept, &in->capacity);
      if (!in->bytes) {
        // The heap has no room for it: consumed and refused like an
        // oversize one (kErrNoMemory), never thrown across the receive path.
        ++stats_.no_memory;
        in->oversize = true;
        in->no_memory = true;
      } else {
        unexpected_bytes_ += kept;
        in->charged = kept;
        in->head = kept;
        in->placed = place ? placement.target : nullptr;
      }
    }
    c.remote = in.release();
  }
  RemoteInbound& in = *c.remote;
  if (in.is_response) {
    // Answers are coming: the target lives.  Only a real one counts: a
    // stream of answers to nothing must not keep our requests waiting.
    if (in.request != nullptr) c.awaiting_since_ns = c.last_heard_ns;
    if (in.request != nullptr) {
      // An answer to a read or an atomic of ours recalls no read the peer
      // has lent from these bytes: the two are two initiators' operations,
      // which nothing orders (fi_rma(3): concurrent access), and one that
      // causally follows the peer's read comes after it completed, when the
      // peer has its bytes.  A pull's answer is a message's data: it
      // recalls, as an eager message does.
      const SendRequest& request = in.request->request;
      write_to_user(request.response_iov, request.response_iov_count, h.offset, payload,
                    h.payload_len, in.request->pull == nullptr);
    }
  } else if (!in.oversize) {
    // Segments come in order: the head first, then (placed) the rest.
    const size_t offset = h.offset;
    const size_t to_head = offset < in.head ? std::min<size_t>(in.head - offset, h.payload_len) : 0;
    if (to_head != 0) std::memcpy(in.bytes.get() + offset, payload, to_head);
    if (to_head < h.payload_len && !in.region_gone) {
      uint8_t* to = in.placed + (offset + to_head - in.head);
      const size_t n = h.payload_len - to_head;
      // A read served since the first segment may send from these bytes:
      // it keeps what it read (as every write into memory does).
      if (lent_out_ != 0) recall_lent(to, n);
      std::memcpy(to, payload + to_head, n);
    }
  }
  in.received += h.payload_len;
  if (in.received == in.length) finish_remote(c);
  return true;
}

void Engine::finish_remote(Connection& c) {
  RemoteHold in = hold_remote(c.remote);
  c.remote = nullptr;
  if (!in->is_response) {
    serve_request(c, std::move(in));
    return;
  }
  if (in->request == nullptr) return;
  auto it = c.awaiting_delivery.find(in->request->msg_id);
  if (it != c.awaiting_delivery.end()) {
    // A delivery notice: the message's length stays what was sent.
    std::unique_ptr<TxMessage> message = stop_waiting(c.awaiting_delivery, it);
    complete_send(c, *message, in->status == 0 ? 0 : kErrPeerReset, kProvNone);
    retired_.push_back(std::move(message));
    return;
  }
  const uint32_t answered = in->request->msg_id;
  it = c.awaiting_response.find(answered);
  if (it == c.awaiting_response.end()) return;
  std::unique_ptr<TxMessage> request = stop_waiting(c.awaiting_response, it);
  // The target answers requests in the order it ran them, which is the
  // order we sent them: one still waiting from before this one had its
  // answer in a stream of the peer's that is gone, and will not get it.
  for (auto earlier = c.awaiting_response.begin(); earlier != c.awaiting_response.end();) {
    if (!seq_lt(earlier->first, answered)) {
      ++earlier;
      continue;
    }
    complete_send(c, *earlier->second, kErrPeerReset, kProvAnswerLost);
    retired_.push_back(std::move(earlier->second));
    earlier = c.awaiting_response.erase(earlier);
  }
  size_t capacity = 0;
  for (size_t i = 0; i < request->request.response_iov_count; ++i)
    capacity += request->request.response_iov[i].iov_len;
  // The completion's length is what the response placed.
  request->length = std::min(in->length, capacity);
  // The status comes off the wire: only a plausible error number passes.
  const int status = in->status >= 0 && in->status < 4096 ? in->status : kErrPeerReset;
  complete_send(c, *request, status, kProvNone);
  retired_.push_back(std::move(request));
}

void Engine::serve_request(Connection& c, RemoteHold in) {
  // Answers go back in the order requests came (the initiator counts on
  // it), so one that finds a deferred one ahead waits behind it.
  if (!c.deferred_requests.empty() || responses_full(c)) {
    try {
      c.deferred_requests.push_back(in.get());
    } catch (const std::bad_alloc&) {
      // No room to queue it: it runs now, one answer past the budget,
      // rather than be lost.
      ++stats_.no_memory;
      run_request(c, std::move(in));
      return;
    }
    in.release();
    ++c.requests_deferred;
    ++deferred_requests_;
    ++stats_.requests_deferred;
    return;
  }
  run_request(c, std::move(in));
}

void Engine::run_request(Connection& c, RemoteHold in) {
  ++stats_.requests_served;
  if (in->pull) {
    serve_pull(c, in->msg_id, in->bytes.get(), in->head);
    release_request(*in);
    return;
  }
  Response response;
  if (in->no_memory)
    response.status = kErrNoMemory;
  else if (in->oversize)
    response.status = kErrTooLarge;
  else if (in->region_gone)
    response.status = kErrKeyRejected;  // as if it had come after the close
  else if (sender_filter_ && !sender_filter_(c.source_key))
    response.status = kErrNoHandler;  // not a peer this endpoint serves
  else if (request_handler_)
    response = request_handler_(c.source_key, in->bytes.get(), in->head, in->length - in->head);
  else
    response.status = kErrNoHandler;
  // The answer is queued before the bytes go back: giving them back wakes
  // stalled connections, this one too, and a request taken then must find
  // this answer ahead of its own.
  send_response(c, in->msg_id, std::move(response));
  release_request(*in);
}

void Engine::serve_deferred(Connection& c) {
  // Notices owed for messages that came before the next deferred request
  // go before it runs, as they came.
  send_owed_notices(c);
  if (c.deferred_requests.empty()) return;
  while (!c.deferred_requests.empty() && !responses_full(c)) {
    RemoteHold in = hold_remote(c.deferred_requests.front());
    c.deferred_requests.pop_front();
    --deferred_requests_;
    run_request(c, std::move(in));
    // The completions of messages that came after it, up to the next
    // request deferred before them, leave now, before that one runs.
    ++c.deferred_done;
    release_barriers(c);
    send_owed_notices(c);
  }
  // Messages that could not be held wait behind deferred requests
  // (deliver): the last one ran.
  if (c.deferred_requests.empty()) wake(c);
}

bool Engine::hold_behind_deferred(Connection& c) {
  // One barrier per set of deferred requests: a message that comes again
  // (deliver refused it later, e.g. no room for it unexpected) adds none.
  if (!c.recv_order.empty() && c.recv_order.back().barrier && !c.recv_order.back().ready &&
      c.recv_order.back().requests_before == c.requests_deferred)
    return true;
  if (c.recv_order.size() >= kMaxOrderedCompletions) return false;
  OrderedCompletion barrier;
  barrier.barrier = true;
  barrier.wanted = false;
  barrier.requests_before = c.requests_deferred;
  c.recv_order.push_back(barrier);
  return true;
}

void Engine::release_barriers(Connection& c) {
  bool any = false;
  for (OrderedCompletion& o : c.recv_order) {
    if (!o.barrier || o.ready) continue;
    if (c.deferred_done < o.requests_before) break;  // later barriers wait longer
    o.ready = true;
    any = true;
  }
  if (any) release_ordered(c);
}

void Engine::serve_all_deferred() {
  if (deferred_requests_ == 0 && owed_notices_ == 0) return;
  others_given_work_ = true;
  for (auto& [key, connection] : connections_) serve_deferred(*connection);
}

void Engine::drop_deferred(Connection& c) {
  for (RemoteInbound* request : c.deferred_requests) {
    RemoteHold in = hold_remote(request);
    release_request(*in);
    --deferred_requests_;
  }
  c.deferred_requests.clear();
  // The notices go with the stream: its sender's waits end by their probes.
  owed_notices_ -= c.owed_notices.size();
  c.owed_notices.clear();
  // Dropped with their connection: what waited behind them goes on.
  c.deferred_done = c.requests_deferred;
  release_barriers(c);
}

void Engine::send_response(Connection& c, uint32_t request_id, Response response) {
  const bool lent = response.lent_bytes != nullptr && response.lent_length != 0;
  const size_t length = lent ? response.lent_length : response.data.size();
  ++c.responses_pending;
  std::unique_ptr<TxMessage> message = new_message();
  if (length > config_.max_msg_size) {
    // A read larger than any message may be: refused, not sent.
    response.status = kErrTooLarge;
    message->length = message->wire_length = 0;
    message->iov_count = 0;
  } else if (lent) {
    message->length = message->wire_length = length;
    message->iov[0] = {const_cast<uint8_t*>(response.lent_bytes), length};
    message->iov_count = 1;
    message->lent.set(&lent_out_);
  } else {
    // The handler's buffer is the bytes sent (and resent) from.
    message->length = message->wire_length = length;
    message->copy = response.data.release(&message->copy_capacity);
    message->iov_count = 0;
  }
  // Held against the budgets until acknowledged (complete_send): a lent
  // read too, which a write into its region makes a copy of.
  message->response_charge = message->length;
  c.response_bytes += message->length;
  response_bytes_ += message->length;
  message->request.internal = true;
  message->request.completion = false;
  message->request.has_data = true;  // the status travels in cq_data
  message->request.cq_data = static_cast<uint64_t>(static_cast<int64_t>(response.status));
  message->response = true;
  message->response_to = request_id;
  message->request.tag = request_id;  // the initiator finds its request by it
  message->msg_id = c.next_msg_id++;
  queue_response(c, std::move(message));
}

size_t Engine::recall_lent(const void* begin, size_t length) {
  if (lent_out_ == 0) return 0;  // the common case, checked before every write
  touched_ = true;
  const auto first = reinterpret_cast<uintptr_t>(begin);
  size_t recalled = 0;
  // False when the bytes are lent from the range and no copy could be had.
  const auto recall = [&](TxMessage& m) {
    if (!m.lent) return true;
    const auto at = reinterpret_cast<uintptr_t>(m.iov[0].iov_base);
    if (at + m.iov[0].iov_len <= first || at >= first + length) return true;
    m.copy = take_copy_buffer(m.length, &m.copy_capacity);
    if (!m.copy) {
      ++stats_.no_memory;
      return false;
    }
    std::memcpy(m.copy.get(), m.iov[0].iov_base, m.length);
    m.iov_count = 0;  // copy_from reads `copy` from now on
    m.lent.clear();
    ++recalled;
    return true;
  };
  for (auto& [key, c] : connections_) {
    if (c->responses_pending == 0) continue;
    bool lost = false;
    for (auto& m : c->pending) lost |= !recall(*m);
    // A response that can neither keep its bytes nor send the old ones
    // must not send the new: its connection gives up (the initiator's
    // request fails when our next connection opens), and its frames not
    // yet gone are taken back below, with the retired.
    if (lost) fail_transmit(*c, kErrNoMemory, kProvNone);
  }
  // Retired, but maybe still in an outbox frame that has not left.
  for (auto& m : retired_)
    if (!recall(*m)) drop_outbox_frames(*m);
  return recalled;
}

void Engine::drop_outbox_frames(const TxMessage& m) {
  const auto carries = [&](const OutFrame& frame) {
    if (frame.message == &m) return true;
    for (uint16_t i = 0; i < frame.bundled; ++i)
      if (frame.bundle[i].message == &m) return true;
    return false;
  };
  outbox_.erase(std::remove_if(outbox_.begin(), outbox_.end(), carries), outbox_.end());
  open_bundle_ = {};
}

size_t Engine::forget_placements(const void* begin, size_t length) {
  const auto first = reinterpret_cast<uintptr_t>(begin);
  size_t forgotten = 0;
  for (auto& [key, c] : connections_) {
    RemoteInbound* in = c->remote;
    if (in == nullptr || in->is_response || in->placed == nullptr) continue;
    const auto at = reinterpret_cast<uintptr_t>(in->placed);
    if (at + (in->length - in->head) <= first || at >= first + length) continue;
    in->placed = nullptr;
    in->region_gone = true;
    ++forgotten;
  }
  // Only a request that lost its region has something new to do.
  if (forgotten != 0) touched_ = true;
  return forgotten;
}

void Engine::write_to_user(const iovec* iov, size_t count, size_t offset, const uint8_t* data,
                           size_t length, bool answer) {
  for (size_t i = 0; i < count && length > 0; ++i) {
    if (offset >= iov[i].iov_len) {
      offset -= iov[i].iov_len;
      continue;
    }
    uint8_t* to = static_cast<uint8_t*>(iov[i].iov_base) + offset;
    const size_t n = std::min(iov[i].iov_len - offset, length);
    if (lent_out_ != 0 && !answer) recall_lent(to, n);  // a read served earlier may send from here
    std::memcpy(to, data, n);
    data += n;
    length -= n;
    offset = 0;
  }
}

void Engine::queue_response(Connection& c, std::unique_ptr<TxMessage> response) {
  // Ahead of the messages not cut yet, behind the responses already there:
  // an answer must not wait behind a stream of messages its requester may
  // not take until it has the answer (a receive waiting for its pulled
  // data while eager messages fill its budget).  Responses keep their order
  // among themselves, which finish_remote relies on.
  size_t at = c.pending_cut;
  if (at < c.pending.size() && c.pending[at]->next_offset != 0) ++at;  // being cut
  while (at < c.pending.size() && c.pending[at]->response) ++at;
  c.pending.insert(at, std::move(response));  // (at the end, the usual case: no move)
}

void Engine::await_response(Connection& c, std::unique_ptr<TxMessage> message) {
  // Called from on_ack, just after on_frame set last_heard_ns to now.
  if (c.awaiting_response.empty()) c.awaiting_since_ns = c.last_heard_ns;
  start_waiting(c.awaiting_response, std::move(message));
}

void Engine::start_waiting(AwaitingMap& waits, std::unique_ptr<TxMessage> message) {
  const uint32_t id = message->msg_id;
  message->waiting_since_ns = clock_ns_;
  if (spare_await_nodes_.empty()) {
    waits.emplace(id, std::move(message));
    return;
  }
  AwaitingMap::node_type node = std::move(spare_await_nodes_.back());
  spare_await_nodes_.pop_back();
  node.key() = id;
  node.mapped() = std::move(message);
  waits.insert(std::move(node));
}

std::unique_ptr<TxMessage> Engine::stop_waiting(AwaitingMap& waits, AwaitingMap::iterator it) {
  AwaitingMap::node_type node = waits.extract(it);
  std::unique_ptr<TxMessage> message = std::move(node.mapped());
  if (spare_await_nodes_.size() < kSpareRecords) spare_await_nodes_.push_back(std::move(node));
  return message;
}

TxMessage* Engine::awaited(Connection& c, uint32_t msg_id) {
  if (auto it = c.awaiting_response.find(msg_id); it != c.awaiting_response.end())
    return it->second.get();
  // A rendezvous send waits for its pull, which no RESPONSE stands for.
  if (auto it = c.awaiting_delivery.find(msg_id);
      it != c.awaiting_delivery.end() && !it->second->rendezvous)
    return it->second.get();
  return nullptr;
}

void Engine::forget_response_target(
    Connection& c, const std::unordered_map<uint32_t, std::unique_ptr<TxMessage>>& failing) {
  // A response half received answers a send about to fail: its later
  // segments are consumed without effect, never written through the
  // failed send into the application's buffer.
  if (c.remote != nullptr && c.remote->is_response && c.remote->request != nullptr &&
      failing.count(c.remote->request->msg_id) != 0)
    c.remote->request = nullptr;
}

void Engine::fail_awaiting(Connection& c, int error, int prov_errno) {
  fail_requests(c, error, prov_errno);
  fail_delivery_waits(c, error, prov_errno);
}

void Engine::fail_requests(Connection& c, int error, int prov_errno) {
  if (c.awaiting_response.empty()) return;
  forget_response_target(c, c.awaiting_response);
  for (auto& [id, message] : c.awaiting_response) {
    complete_send(c, *message, error, prov_errno);
    retired_.push_back(std::move(message));
  }
  c.awaiting_response.clear();
}

void Engine::fail_rendezvous_waits(Connection& c, int error, int prov_errno) {
  for (auto it = c.awaiting_delivery.begin(); it != c.awaiting_delivery.end();) {
    if (!it->second->rendezvous) {
      ++it;
      continue;
    }
    complete_send(c, *it->second, error, prov_errno);
    retired_.push_back(std::move(it->second));
    it = c.awaiting_delivery.erase(it);
  }
}

namespace {

// Why a send waiting in awaiting_delivery failed, as its completion says:
// an eager FI_DELIVERY_COMPLETE message reached the peer whole (it was
// acknowledged), so whatever ended the wait, a receive there may have
// taken it or may still: an application that resends it may deliver it
// twice.  A rendezvous send's data never left.
int delivery_errno(const TxMessage& m, int prov_errno) {
  return m.rendezvous || prov_errno == kProvNotTaken ? prov_errno : kProvMaybeDelivered;
}

}  // namespace

void Engine::fail_delivery_waits(Connection& c, int error, int prov_errno) {
  forget_response_target(c, c.awaiting_delivery);
  for (auto& [id, message] : c.awaiting_delivery) {
    complete_send(c, *message, error, delivery_errno(*message, prov_errno));
    retired_.push_back(std::move(message));
  }
  c.awaiting_delivery.clear();
}

void Engine::fail_untaken(Connection& c, uint64_t now_ns) {
  for (auto it = c.awaiting_delivery.begin(); it != c.awaiting_delivery.end();) {
    TxMessage& m = *it->second;
    if (now_ns - m.waiting_since_ns < config_.delivery_timeout_ns) {
      ++it;
      continue;
    }
    // A notice half received for it goes nowhere now.
    if (c.remote != nullptr && c.remote->request == &m) c.remote->request = nullptr;
    ++stats_.delivery_timeouts;
    complete_send(c, m, kErrTimedOut, kProvNotTaken);
    retired_.push_back(std::move(it->second));
    it = c.awaiting_delivery.erase(it);
  }
}

void Engine::release_request(RemoteInbound& in) {
  if (in.charged == 0) return;
  unexpected_bytes_ -= in.charged;
  in.charged = 0;
  keep_spare(std::move(in.bytes), in.capacity);
  wake_stalled();
}

void Engine::drop_remote(Connection& c, int error, int prov_errno) {
  if (c.remote == nullptr) return;
  RemoteHold in = hold_remote(c.remote);
  c.remote = nullptr;
  release_request(*in);
  if (in->request == nullptr) return;
  // The rest of this answer is gone with the stream: its wait ends now.
  const uint32_t id = in->request->msg_id;
  for (auto* waits : {&c.awaiting_response, &c.awaiting_delivery}) {
    auto it = waits->find(id);
    if (it == waits->end()) continue;
    complete_send(
        c, *it->second, error,
        waits == &c.awaiting_delivery ? delivery_errno(*it->second, prov_errno) : prov_errno);
    retired_.push_back(std::move(it->second));
    waits->erase(it);
  }
}

}  // namespace ofi_dpdk::proto
