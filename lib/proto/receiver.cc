// receiver.cc: matching messages to receives.  A message that finds a posted
// receive (in posting order, by source and tag) is placed straight into the
// application's buffer; otherwise it is buffered as unexpected, within
// TransportConfig::unexpected_bytes, until a receive claims it.  Tagged
// receives may also peek at unexpected messages (fi_tagged(3) FI_PEEK),
// reserve one for a later FI_CLAIM receive, or discard one (FI_DISCARD).
// A multi-recv buffer (FI_MULTI_RECV) stays posted while messages take
// successive parts of it, and is released when less than its minimum is
// left.  A sender that asked for a delivery notice gets it once a receive
// has taken its message whole.
#include <algorithm>
#include <cerrno>
#include <cstring>
#include <new>

#include "lib/proto/engine_state.h"

namespace ofi_dpdk::proto {
namespace {

// A message a receive or a peek may still take.
bool visible(const UnexpectedMessage& u) {
  return !u.claimed && !u.reserved && !u.discarded;
}

// The bytes [offset, offset + length) of r's iov, as an iov of their own
// (one empty entry where the buffer ends, so buf still points there).
void slice_into(const RecvRequest& r, size_t offset, size_t length, RecvRequest* part) {
  part->iov_count = 0;
  for (size_t i = 0; i < r.iov_count; ++i) {
    const iovec& whole = r.iov[i];
    if (offset >= whole.iov_len && !(offset == whole.iov_len && i + 1 == r.iov_count)) {
      offset -= whole.iov_len;
      continue;
    }
    const size_t n = std::min(whole.iov_len - offset, length);
    part->iov[part->iov_count++] = {static_cast<uint8_t*>(whole.iov_base) + offset, n};
    length -= n;
    offset = 0;
    if (length == 0) break;
  }
}

}  // namespace

InboundMessage view_of(const UnexpectedMessage& u) {
  InboundMessage view;
  view.length = u.length;
  view.sender = u.sender;
  view.tagged = u.tagged;
  view.tag = u.tag;
  view.has_data = u.has_data;
  view.cq_data = u.cq_data;
  return view;
}

size_t capacity_of(const RecvRequest& r) {
  size_t total = 0;
  for (size_t i = 0; i < r.iov_count; ++i) total += r.iov[i].iov_len;
  return total;
}

bool Engine::matches(const RecvRequest& recv, const Sender& sender, bool tagged,
                     uint64_t tag) const {
  if (recv.tagged != tagged) return false;
  if (recv.group != sender.group) return false;
  if (!recv.any_source && recv.source_key != sender.source_key) return false;
  if (recv.match_auth_key && recv.auth_key != sender.auth_key) return false;
  return !tagged || ((recv.tag ^ tag) & ~recv.ignore) == 0;
}

bool Engine::match_posted(InboundMessage& in) {
  for (auto it = posted_->list.begin(); it != posted_->list.end(); ++it) {
    if (!matches(*it, in.sender, in.tagged, in.tag)) continue;
    in.to_user = true;
    in.recv = it->multi ? take_part(*it, in.length) : *it;
    in.capacity = capacity_of(in.recv);
    if (!it->multi || it->multi->released) {
      drop_posted(it);
      --posted_->count;
    }
    return true;
  }
  return false;
}

bool Engine::begin_message(Connection& c, const wire::FrameHeader& h, bool look_for_receive) {
  const bool tagged = h.opcode == static_cast<uint8_t>(wire::Opcode::kTagged);
  InboundMessage* in = new_inbound();
  in->length = h.msg_len;
  in->msg_id = h.msg_id;
  in->tagged = tagged;
  in->tag = h.tag;
  in->has_data = h.flags & wire::kFlagRemoteData;
  in->cq_data = h.cq_data;
  in->notify = h.flags & wire::kFlagDeliveryNotice;
  in->requests_before = c.requests_deferred;
  in->sender.source_key = c.source_key;
  in->sender.auth_key = c.auth_key;
  in->sender.group = h.group;
  if (look_for_receive && match_posted(*in)) {
    c.inbound = in;
    return true;
  }
  if (unexpected_bytes_ + unexpected_cost(h.msg_len) > config_.unexpected_bytes) {
    free_inbound(in);
    return false;
  }
  const auto slot = new_unexpected(h.msg_len);
  if (slot == unexpected_.end()) {
    free_inbound(in);
    return false;
  }
  UnexpectedMessage& u = *slot;
  u.sender = in->sender;
  u.connection_key = c.key;
  u.tagged = tagged;
  u.tag = h.tag;
  u.has_data = in->has_data;
  u.cq_data = h.cq_data;
  u.length = h.msg_len;
  u.notify = in->notify;
  u.requests_before = in->requests_before;
  u.msg_id = h.msg_id;
  u.session = c.peer_session;
  u.conn = c.rx_conn;
  u.charged = unexpected_cost(h.msg_len);
  unexpected_bytes_ += u.charged;
  in->unexpected = slot;
  c.inbound = in;
  return true;
}

Engine::Whole Engine::deliver_whole(Connection& c, const wire::FrameHeader& h,
                                    const uint8_t* payload) {
  const bool tagged = h.opcode == static_cast<uint8_t>(wire::Opcode::kTagged);
  const Sender sender{c.source_key, c.auth_key, h.group};
  for (auto it = posted_->list.begin(); it != posted_->list.end(); ++it) {
    if (!matches(*it, sender, tagged, h.tag)) continue;
    if (it->multi) return Whole::kMultiRecv;  // its part is cut by match_posted
    complete_recv(
        &c, *it,
        {h.msg_len, tagged, h.tag, (h.flags & wire::kFlagRemoteData) != 0, h.cq_data, sender},
        payload);
    drop_posted(it);
    --posted_->count;
    return Whole::kDelivered;
  }
  return Whole::kNoReceive;
}

void Engine::place(InboundMessage& in, size_t offset, const uint8_t* data, size_t length) {
  if (in.to_user) {
    if (offset < in.capacity)
      write_to_user(in.recv.iov, in.recv.iov_count, offset, data,
                    std::min(length, in.capacity - offset));
  } else {
    std::memcpy(in.unexpected->bytes.get() + offset, data, length);
    in.unexpected->received += length;
  }
}

void Engine::complete_recv(Connection* from, const RecvRequest& recv, const InboundMessage& in,
                           const uint8_t* bytes_if_copy) {
  complete_recv(from, recv, {in.length, in.tagged, in.tag, in.has_data, in.cq_data, in.sender},
                bytes_if_copy);
}

void Engine::complete_recv(Connection* from, const RecvRequest& recv,
                           const ReceivedMessage& message, const uint8_t* bytes_if_copy) {
  const size_t capacity = capacity_of(recv);
  const size_t placed = std::min(message.length, capacity);
  if (bytes_if_copy != nullptr) write_to_user(recv.iov, recv.iov_count, 0, bytes_if_copy, placed);
  ++stats_.messages_received;
  const bool truncated = message.length > capacity;
  const auto fill = [&](Completion& done) {
    done.kind = Completion::Kind::kRecv;
    done.context = recv.context;
    done.user_flags = recv.user_flags;
    done.len = placed;
    done.buf = recv.iov_count ? recv.iov[0].iov_base : nullptr;
    done.tagged = message.tagged;
    done.tag = message.tag;
    done.has_data = message.has_data;
    done.cq_data = message.cq_data;
    done.source_key = message.sender.source_key;
    done.auth_key = message.sender.auth_key;
    if (truncated) {
      done.error = kErrTruncated;
      done.overflow = message.length - capacity;
    }
  };
  const bool wanted = recv.completion || truncated;
  // Written once, where it is handed out from, when nothing orders it
  // behind a pull's and it releases no multi-recv buffer (the common case).
  if (wanted && !recv.multi && filling_ == nullptr &&
      (from == nullptr || from->recv_order.empty())) {
    fill(completions_.emplace_back());  // value-initialized: the rest zero
    return;
  }
  Completion done{};
  fill(done);
  push_recv_completion(from, recv, done, wanted);
}

void Engine::push_recv_completion(Connection* from, const RecvRequest& recv, const Completion& done,
                                  bool wanted) {
  if (filling_ != nullptr || (from != nullptr && !from->recv_order.empty())) {
    // Its turn comes after a pull's: kept, and settled (multi-recv release
    // included) when it leaves, so a buffer's release rides its last
    // completion in the order the application sees them.
    OrderedCompletion* slot = filling_;
    if (slot == nullptr) {
      from->recv_order.emplace_back();
      slot = &from->recv_order.back();
      slot->ready = true;
    }
    slot->wanted = wanted;
    slot->multi = recv.multi;
    slot->done = done;
    if (filling_ == nullptr) bound_order(*from);
    return;
  }
  settle_recv(recv.multi, done, wanted);
}

void Engine::settle_recv(const std::shared_ptr<MultiRecv>& multi, const Completion& done,
                         bool wanted) {
  bool release = false;
  if (multi) release = --multi->in_flight == 0 && multi->released;
  if (wanted) {
    completions_.push_back(done);
    completions_.back().multi_released = release;
    return;
  }
  if (!release) return;
  // fi_msg(3): the release is always reported, even when the message's own
  // completion was not asked for.
  Completion released{};
  released.kind = Completion::Kind::kRecv;
  released.context = done.context;
  released.user_flags = done.user_flags;
  released.multi_released = true;
  released.release_only = true;
  completions_.push_back(released);
}

RecvRequest Engine::take_part(const RecvRequest& posted, size_t length) {
  MultiRecv& multi = *posted.multi;
  const size_t offset = multi.used;
  const size_t take = std::min(length, multi.capacity - multi.used);
  multi.used += take;
  ++multi.in_flight;
  const size_t left = multi.capacity - multi.used;
  // A full buffer goes even with a minimum of 0: nothing more fits.
  if (left == 0 || left < multi.min_free) multi.released = true;
  RecvRequest part = posted;
  slice_into(posted, offset, take, &part);
  return part;
}

void Engine::notify_delivered(const UnexpectedMessage& u) {
  if (!u.notify) return;
  auto it = connections_.find(u.connection_key);
  if (it == connections_.end()) return;
  Connection& c = *it->second;
  activate(c);
  // The sender has given up on the connection the message came on (and
  // failed the send): its msg_id means nothing on the new one.
  if (!c.rx_open || c.rx_conn != u.conn || c.peer_session != u.session) return;
  notice_delivery(c, u.msg_id, u.requests_before);
}

void Engine::notice_delivery(Connection& c, uint32_t msg_id, uint64_t requests_before) {
  // A notice is an answer: it waits, like a request, while our answers
  // fill the budget, and after the answers to requests sent before its
  // message (the sender's completion says those ran too).
  if (c.owed_notices.empty() && c.deferred_done >= requests_before && !responses_full(c)) {
    send_response(c, msg_id, Response{});
    return;
  }
  c.owed_notices.push_back({msg_id, requests_before});
  ++owed_notices_;
}

void Engine::send_owed_notices(Connection& c) {
  while (!c.owed_notices.empty() && c.deferred_done >= c.owed_notices.front().requests_before &&
         !responses_full(c)) {
    send_response(c, c.owed_notices.front().msg_id, Response{});
    c.owed_notices.pop_front();
    --owed_notices_;
  }
}

void Engine::finish_message(Connection& c) {
  InboundMessage* in = c.inbound;
  c.inbound = nullptr;
  if (in->discard) {
    ++stats_.refused_messages;
  } else if (in->to_user) {
    complete_recv(&c, in->recv, *in, nullptr);
    if (in->notify) notice_delivery(c, in->msg_id, in->requests_before);
  } else {
    UnexpectedMessage& u = *in->unexpected;
    u.complete = true;
    if (u.discarded) {
      notify_delivered(u);
      erase_unexpected(in->unexpected);
      wake_stalled();
    } else if (u.claimed) {
      complete_recv(&c, u.claim, *in, u.bytes.get());
      notify_delivered(u);
      erase_unexpected(in->unexpected);
      wake_stalled();
    }
  }
  free_inbound(in);
}

// Gives the unexpected message `it` to `request`: now when it is whole, else
// when its last segment arrives.
void Engine::take_unexpected(const RecvRequest& request,
                             std::list<UnexpectedMessage>::iterator it) {
  if (it->rendezvous) {
    pull_unexpected(it, &request);
    return;
  }
  if (!it->complete) {
    it->claimed = true;
    it->claim = request;
    return;
  }
  complete_recv(connection_by_key(it->connection_key), request, view_of(*it), it->bytes.get());
  notify_delivered(*it);
  erase_unexpected(it);
  wake_stalled();
}

int Engine::post_recv(const RecvRequest& request, uint64_t now_ns) {
  clock_ns_ = std::max(clock_ns_, now_ns);
  if (posted_->count >= config_.max_posted_recvs) return -EAGAIN;
  if (request.multi) {
    touched_ = true;
    return post_multi_recv(request);
  }
  // A receive that is only kept gives the next poll nothing to do, unless
  // it reopens a stalled window (keep_receive, take_early say).
  if (take_early(request, now_ns)) return 0;
  return keep_receive(request);
}

bool Engine::take_early(const RecvRequest& request, uint64_t now_ns) {
  clock_ns_ = std::max(clock_ns_, now_ns);
  for (auto it = unexpected_.begin(); it != unexpected_.end(); ++it) {
    if (!visible(*it) || !matches(request, it->sender, it->tagged, it->tag)) continue;
    touched_ = true;
    take_unexpected(request, it);
    return true;
  }
  return false;
}

int Engine::keep_receive(const RecvRequest& request) {
  if (posted_->count >= config_.max_posted_recvs) return -EAGAIN;
  keep_posted(request);
  ++posted_->count;
  // A window closed for want of receives opens: its update goes at the poll.
  if (stalled_count_ != 0) touched_ = true;
  wake_stalled();
  return 0;
}

int Engine::post_multi_recv(const RecvRequest& request) {
  if (capacity_of(request) == 0) return -EINVAL;
  // Messages that came first fill the buffer in arrival order, as long as
  // it is not released.
  for (auto it = unexpected_.begin(); it != unexpected_.end() && !request.multi->released;) {
    if (!visible(*it) || !matches(request, it->sender, it->tagged, it->tag)) {
      ++it;
      continue;
    }
    const RecvRequest part = take_part(request, it->length);
    if (it->rendezvous) {
      pull_unexpected(it++, &part);
      continue;
    }
    if (!it->complete) {
      it->claimed = true;
      it->claim = part;
      ++it;
      continue;
    }
    complete_recv(connection_by_key(it->connection_key), part, view_of(*it), it->bytes.get());
    notify_delivered(*it);
    it = erase_unexpected(it);
  }
  if (!request.multi->released) {
    keep_posted(request);
    ++posted_->count;
  }
  wake_stalled();
  return 0;
}

void Engine::keep_posted(const RecvRequest& request) {
  PostedReceives& p = *posted_;
  if (p.spare.empty()) {
    p.list.push_back(request);
    return;
  }
  p.list.splice(p.list.end(), p.spare, p.spare.begin());
  p.list.back() = request;
}

void Engine::drop_posted(std::list<RecvRequest>::iterator it) {
  PostedReceives& p = *posted_;
  if (p.spare.size() >= kSpareRecords) {
    p.list.erase(it);
    return;
  }
  it->multi.reset();  // a multi-recv buffer lives as long as its receives
  p.spare.splice(p.spare.end(), p.list, it);
}

std::list<UnexpectedMessage>::iterator Engine::new_unexpected(size_t length, bool with_bytes) {
  if (spare_unexpected_.empty()) {
    unexpected_.emplace_back();
  } else {
    unexpected_.splice(unexpected_.end(), spare_unexpected_, spare_unexpected_.begin());
  }
  auto it = std::prev(unexpected_.end());
  // Not zeroed: a claimed length costs memory only as its bytes arrive.
  const size_t wanted = std::max<size_t>(length, 1);
  if (with_bytes && it->bytes_capacity < wanted) {
    if (wanted >= kMinSpareCopy) {
      // Large: from the spare copy buffers, and back to them (erase_unexpected).
      it->bytes = take_copy_buffer(wanted, &it->bytes_capacity);
    } else {
      it->bytes.reset(new (std::nothrow) uint8_t[wanted]);
      it->bytes_capacity = wanted;
    }
    if (!it->bytes) {
      // No memory for it: the record goes back, and the message waits as
      // if the budget were spent (the caller's window closes).
      ++stats_.no_memory;
      it->bytes_capacity = 0;
      spare_unexpected_.splice(spare_unexpected_.end(), unexpected_, it);
      return unexpected_.end();
    }
  }
  return it;
}

std::list<UnexpectedMessage>::iterator Engine::erase_unexpected(
    std::list<UnexpectedMessage>::iterator it) {
  // A spare keeps a buffer of a small message's size only: spares are
  // outside the unexpected budget, so what they hold stays small.
  constexpr size_t kSpareBytes = 4096;
  unexpected_bytes_ -= it->charged;
  if (it->bytes_capacity > kSpareBytes) {
    // A large buffer goes to the spare copy buffers (bounded there).
    keep_spare(std::move(it->bytes), it->bytes_capacity);
    it->bytes_capacity = 0;
  }
  if (spare_unexpected_.size() >= kSpareRecords) return unexpected_.erase(it);
  auto next = std::next(it);
  UnexpectedMessage cleared{};  // (its receive's iov zeroed: never read, but copied)
  cleared.bytes = std::move(it->bytes);
  cleared.bytes_capacity = it->bytes_capacity;
  *it = std::move(cleared);
  spare_unexpected_.splice(spare_unexpected_.end(), unexpected_, it);
  return next;
}

Completion Engine::peek_completion(const RecvRequest& request, const UnexpectedMessage& u,
                                   bool with_length) {
  Completion done{};
  done.kind = Completion::Kind::kRecv;
  done.context = request.context;
  done.user_flags = request.user_flags;
  done.len = with_length ? u.length : 0;
  done.buf = nullptr;  // fi_tagged(3): no data returned
  done.tagged = u.tagged;
  done.tag = u.tag;
  done.has_data = u.has_data;
  done.cq_data = u.cq_data;
  done.source_key = u.sender.source_key;
  done.auth_key = u.sender.auth_key;
  return done;
}

void Engine::drop_unexpected(std::list<UnexpectedMessage>::iterator it) {
  if (!it->complete) {
    // Its connection is still placing segments into it: it goes when whole
    // (finish_message) or when that connection resets.
    it->discarded = true;
    it->reserved = false;
    return;
  }
  if (it->rendezvous) {
    pull_unexpected(it, nullptr);  // a pull of nothing: the send completes
    return;
  }
  notify_delivered(*it);
  erase_unexpected(it);
  wake_stalled();
}

int Engine::peek_recv(const RecvRequest& request, PeekAction action) {
  touched_ = true;
  for (auto it = unexpected_.begin(); it != unexpected_.end(); ++it) {
    if (!visible(*it) || !matches(request, it->sender, it->tagged, it->tag)) continue;
    // The peek's only result is its completion: made whatever
    // request.completion says.
    completions_.push_back(peek_completion(request, *it, true));
    if (action == PeekAction::kClaim) {
      it->reserved = true;
      it->reserved_for = request.context;
    } else if (action == PeekAction::kDiscard) {
      drop_unexpected(it);
    }
    return 0;
  }
  Completion none{};
  none.kind = Completion::Kind::kRecv;
  none.context = request.context;
  none.user_flags = request.user_flags;
  none.error = kErrNoMessage;
  none.tagged = request.tagged;
  none.tag = request.tag;
  completions_.push_back(none);
  return 0;
}

int Engine::claim_recv(const RecvRequest& request, bool discard) {
  touched_ = true;
  for (auto it = unexpected_.begin(); it != unexpected_.end(); ++it) {
    if (!it->reserved || it->claimed || it->reserved_for != request.context) continue;
    if (discard) {
      const Completion done = peek_completion(request, *it, false);
      if (request.completion) completions_.push_back(done);
      drop_unexpected(it);  // the sender's notice goes too: the message was processed
      return 0;
    }
    take_unexpected(request, it);
    return 0;
  }
  return -ENOENT;
}

int Engine::cancel_recv(void* context) {
  touched_ = true;
  auto cancel = [&](const RecvRequest& r) {
    Completion done{};
    done.kind = Completion::Kind::kRecv;
    done.context = r.context;
    done.user_flags = r.user_flags;
    done.error = kErrCanceled;
    done.tagged = r.tagged;
    done.buf = r.iov_count ? r.iov[0].iov_base : nullptr;
    // A cancelled multi-recv buffer is released; messages already placed in
    // it still complete, and the last of them says so.
    if (r.multi) {
      r.multi->released = true;
      done.multi_released = r.multi->in_flight == 0;
    }
    completions_.push_back(done);
  };
  for (auto it = posted_->list.begin(); it != posted_->list.end(); ++it) {
    if (it->context != context) continue;
    cancel(*it);
    drop_posted(it);
    --posted_->count;
    return 0;
  }
  for (auto& u : unexpected_) {
    // A part of a multi-recv buffer is taken, not posted: it completes.
    if (!u.claimed || u.claim.context != context || u.claim.multi) continue;
    cancel(u.claim);
    u.claimed = false;
    return 0;
  }
  return -ENOENT;
}

void Engine::pull_unexpected(std::list<UnexpectedMessage>::iterator it, const RecvRequest* into) {
  const UnexpectedMessage& u = *it;
  Connection* c = connection_by_key(u.connection_key);
  // The data is only where the announcement came from: the same connection
  // of the same incarnation.  Once it is gone, so is the message.
  const bool live =
      c != nullptr && c->rx_open && c->rx_conn == u.conn && c->peer_session == u.session;
  std::unique_ptr<InboundMessage> in(new_inbound());  // back to the spares in frames_sent
  *in = view_of(u);
  if (into != nullptr) {
    in->to_user = true;
    in->recv = *into;
    in->capacity = capacity_of(*into);
  }
  if (live) {
    send_pull(*c, u.msg_id, u.conn, std::move(in), into == nullptr);
  } else {
    free_inbound(in.release());
    if (into != nullptr) fail_recv(c, *into, kErrPeerReset, kProvSendGone, u.sender);
  }
  erase_unexpected(it);
  wake_stalled();
}

Connection* Engine::connection_by_key(uint64_t key) {
  auto it = connections_.find(key);
  if (it == connections_.end()) return nullptr;
  // Its caller is about to give it work (a notice, a pull, a completion in
  // its order).
  activate(*it->second);
  return it->second.get();
}

void Engine::fail_recv(Connection* from, const RecvRequest& recv, int error, int prov_errno,
                       const Sender& sender) {
  Completion failed{};
  failed.kind = Completion::Kind::kRecv;
  failed.context = recv.context;
  failed.user_flags = recv.user_flags;
  failed.error = error;
  failed.prov_errno = prov_errno;
  failed.buf = recv.iov_count ? recv.iov[0].iov_base : nullptr;
  failed.source_key = sender.source_key;
  failed.auth_key = sender.auth_key;
  push_recv_completion(from, recv, failed, true);
}

void Engine::wake_stalled() {
  if (stalled_count_ == 0) return;
  for (auto& [key, connection] : connections_) wake(*connection);
}

void Engine::wake(Connection& c) {
  if (!c.rx_stalled) return;
  others_given_work_ = true;
  activate(c);
  set_stalled(c, false);
  drain_reorder(c);
  c.ack_now = true;  // the window update (or the same window 0 again)
}

}  // namespace ofi_dpdk::proto
