// engine_handshake.cc: how connections open, close and are admitted.
//
// A transmit half opens with a HELLO carrying a nonce; the peer answers
// HELLO_ACK with the nonce and a token, and from then on every data segment
// and probe of that connection carries the token.  The peer keeps no state
// for a HELLO: the token is a keyed hash of who asked (address, session,
// connection number, network key) and of the receive half's generation, so
// the peer can check it when the first segment arrives.  That segment proves
// the sender hears frames sent to its address; only then does the receive
// half open, and only then, for a sender never seen before, does a
// Connection exist.  Closing a receive half moves its generation, so no
// segment of a closed connection opens it again: a retransmitted request
// runs once or its initiator hears RESET, never twice.
//
// A RESET answers a frame whose token we do not hold, echoing that token:
// only the sender of the frame can take it for real.  Sessions tell
// incarnations apart; a new one fails the old one's operations only once it
// proved its handshake (a forged HELLO from a peer's address costs nothing).
#include <endian.h>
#include <algorithm>
#include <cstring>

#include "lib/proto/engine_state.h"
#include "lib/proto/seq.h"
#include "lib/proto/token.h"

namespace ofi_dpdk::proto {

uint64_t Engine::offer_token(uint64_t key, uint32_t session, uint16_t conn, uint32_t auth_key,
                             uint32_t gen) const {
  return handshake_token(config_.token_secret, key, session, conn, auth_key, gen);
}

uint64_t Engine::next_nonce() {
  return hello_nonce(config_.token_secret, session_, queue_, ++nonce_counter_);
}

Engine::ReceiveMemory Engine::receive_memory(uint64_t key, const Connection* c) const {
  if (c != nullptr) return {c->rx_gen, c->closed_session, c->closed_conn};
  auto memory = evicted_gen_.find(key);
  return memory != evicted_gen_.end() ? memory->second : ReceiveMemory{generation_floor_};
}

Connection* Engine::admit(const uint8_t mac[6], uint16_t queue, uint64_t now_ns) {
  if (connections_.size() >= config_.max_connections && !evict_one(now_ns, true)) return nullptr;
  return &connection(mac, queue);
}

namespace {

// Nothing in progress either way: no send, request, notice, pull or
// message of ours or the peer's half done.
bool nothing_in_progress(const Connection& c) {
  return c.pending.empty() && c.una == c.next_seq && c.awaiting_response.empty() &&
         c.awaiting_delivery.empty() && c.inbound == nullptr && c.remote == nullptr &&
         c.deferred_requests.empty() && c.owed_notices.empty() && c.recv_order.empty() &&
         c.pulls_out == 0;
}

}  // namespace

bool Engine::evict_one(uint64_t now_ns, bool for_proven_peer) {
  // For a peer that proved its handshake, first: a connection whose receive
  // half never took a segment in order (a station that completed a
  // handshake and parked a segment ahead of a gap, or nothing; no honest
  // peer's connection stays so longer than the repair of its first
  // segment), the longest silent first: a table full of those must not
  // lock out a peer that talks, nor cost an honest idle peer its
  // connection.  Else a connection with nothing in
  // progress either way, silent for twice the peer timeout: by then its
  // peer retransmits nothing it sent before (it would have timed it out).
  // An evicted peer's next segment hears RESET (the memory below).
  const uint64_t quiet = 2 * config_.peer_timeout_ns;
  auto victim = connections_.end();
  auto unproven = connections_.end();
  for (auto it = connections_.begin(); it != connections_.end(); ++it) {
    const Connection& c = *it->second;
    if (!nothing_in_progress(c)) continue;
    const uint64_t silent = now_ns - c.last_heard_ns;
    if (for_proven_peer && c.rx_open && c.next_expected == wire::kInitialSeq) {
      if (unproven == connections_.end() || c.last_heard_ns < unproven->second->last_heard_ns)
        unproven = it;
    } else if (c.rx_buffered == 0 && !c.rx_stalled && c.ack_owed == 0 && silent >= quiet) {
      if (victim == connections_.end() || c.last_heard_ns < victim->second->last_heard_ns)
        victim = it;
    }
  }
  if (unproven != connections_.end()) victim = unproven;
  if (victim == connections_.end()) return false;
  evict(victim);
  ++stats_.connections_evicted;
  return true;
}

void Engine::evict(std::unordered_map<uint64_t, std::unique_ptr<Connection>>::iterator victim) {
  Connection& c = *victim->second;
  // What it knew of its receive halves is remembered, its open half (if
  // any) counted closed, so no segment of a connection it held can open a
  // new record (a late or replayed one would start over at sequence 1, and
  // a request in it run twice; the live peer's next one hears RESET at
  // once instead of waiting out its timeout).  Bounded: the oldest
  // memories go first.
  const uint64_t key = victim->first;
  ReceiveMemory memory{c.rx_gen + 1, c.closed_session, c.closed_conn};
  if (c.rx_open) {
    memory.closed_session = c.peer_session;
    memory.closed_conn = c.rx_conn;
  }
  evicted_gen_[key] = memory;
  evicted_order_.emplace_back(key, memory.gen);
  while (evicted_order_.size() > config_.max_connections) {
    const auto [old_key, old_gen] = evicted_order_.front();
    evicted_order_.pop_front();
    auto old = evicted_gen_.find(old_key);
    if (old == evicted_gen_.end() || old->second.gen != old_gen) continue;
    // Forgotten: a record made for that peer later starts above every
    // token this memory would have refused (generation `gen - 1` and below).
    generation_floor_ = std::max(generation_floor_, old_gen + 1);
    evicted_gen_.erase(old);
  }
  // Unexpected messages it delivered whole stay: they belong to receives.
  release_held(c);
  set_stalled(c, false);
  owed_notices_ -= c.owed_notices.size();  // (none: only idle ones, or unproven)
  if (open_bundle_.connection == &c) open_bundle_ = {};
  if (last_connection_ == &c) last_connection_ = nullptr;
  if (c.active) {
    auto at = std::find(active_.begin(), active_.end(), &c);
    *at = active_.back();
    active_.pop_back();
  }
  connections_.erase(victim);
}

void Engine::on_hello(const Segment& s) {
  const wire::FrameHeader& h = *s.header;
  if (h.payload_len < sizeof(wire::HandshakeBody) || h.token == 0) {
    ++stats_.bad_frames;
    return;
  }
  const uint64_t key = peer_key(s.src_mac, h.src_queue);
  auto it = connections_.find(key);
  Connection* c = it == connections_.end() ? nullptr : it->second.get();
  // A HELLO for the connection already open (our answer was lost) gets its
  // token again; any other gets the token of a new opening.  Nothing is
  // kept either way.
  const bool open = c != nullptr && c->rx_open && c->peer_session == h.src_session &&
                    c->rx_conn == h.conn && c->auth_key == h.auth_key;
  if (!may_answer(c)) return;
  emit_hello_ack(
      s, open ? c->rx_token
              : offer_token(key, h.src_session, h.conn, h.auth_key, receive_memory(key, c).gen));
}

void Engine::on_hello_ack(Connection* c, const Segment& s, uint64_t now_ns) {
  const wire::FrameHeader& h = *s.header;
  if (c == nullptr || c->tx_state != TxState::kHello || h.dst_session != session_ ||
      h.ack_conn != c->tx_conn || h.ack_token != c->hello_nonce ||
      (c->peer_session != 0 && h.src_session != c->peer_session)) {
    // A late answer to a HELLO we no longer wait for, or not ours at all.
    ++stats_.stale_session;
    return;
  }
  wire::HandshakeBody body;
  if (h.payload_len < sizeof(body)) {
    ++stats_.bad_frames;
    return;
  }
  std::memcpy(&body, s.payload, sizeof(body));
  const uint64_t token = be64toh(body.token);
  const uint32_t max_payload = be32toh(body.max_payload);
  if (token == 0 || max_payload == 0) {
    ++stats_.bad_frames;
    return;
  }
  c->tx_state = TxState::kOpen;
  c->tx_token = token;
  c->tx_max_payload = std::min(c->payload_offer, max_payload);
  // Only the dynamic ports (RFC 6335), where we name ours from: no peer
  // points our frames at a well-known port.
  c->peer_port_count = 0;
  for (uint16_t wire_port : body.reaching_ports) {
    const uint16_t port = be16toh(wire_port);
    if (port < wire::kFirstDynamicPort) break;
    c->peer_ports[c->peer_port_count++] = port;
  }
  c->peer_session = h.src_session;
  c->last_heard_ns = now_ns;
  c->rto_deadline_ns = 0;
  c->rto_ns = config_.initial_rto_ns;
  pump(*c, now_ns);
}

void Engine::on_reset(Connection* c, const wire::FrameHeader& h) {
  // Only a RESET that names our session, our current transmit connection
  // and the token (or, before the answer, the nonce) it carries counts: a
  // late one, answering a connection we already replaced, or a forged one,
  // must not fail the new one.
  const uint64_t expected = c == nullptr                     ? 0
                            : c->tx_state == TxState::kOpen  ? c->tx_token
                            : c->tx_state == TxState::kHello ? c->hello_nonce
                                                             : 0;
  if (expected == 0 || h.dst_session != session_ || h.ack_conn != c->tx_conn ||
      h.ack_token != expected) {
    ++stats_.bad_resets;
    return;
  }
  // It must also answer a frame of ours this connection could have sent
  // now: a segment in flight, or a probe or ack (next_seq).  One that
  // names any other sequence draws a challenge, not a teardown (as RFC
  // 5961 has TCP do): a probe, which a peer that really lost our
  // connection answers with a RESET that passes, and one that did not
  // with an ack.  (A HELLO's RESET has its nonce alone to show.)
  if (c->tx_state == TxState::kOpen && (seq_lt(h.ack, c->una) || seq_gt(h.ack, c->next_seq))) {
    ++stats_.reset_challenges;
    if (challenges_.allow(clock_ns_, 1'000'000'000ull / kChallengesPerSecond, kChallengeBurst))
      emit_probe(*c);
    return;
  }
  if (c->peer_session != 0 && h.src_session != c->peer_session) {
    // A new incarnation of the peer: nothing of the old one survives.
    peer_restarted(*c, clock_ns_);
  } else {
    // Same incarnation, which lost the receive state of our connection
    // (it timed us out): our sends fail, what it sends us stays, and
    // requests held back for our responses' sake may come in again.
    fail_transmit(*c, kErrPeerReset, kProvPeerRestarted);
    wake(*c);
  }
  c->peer_session = h.src_session;
}

Connection* Engine::receive_half_for(Connection* c, const Segment& s, uint64_t now_ns) {
  const wire::FrameHeader& h = *s.header;
  if (c != nullptr && c->rx_open && h.token == c->rx_token && h.conn == c->rx_conn &&
      h.src_session == c->peer_session)
    return c;
  const uint64_t key = peer_key(s.src_mac, h.src_queue);
  const ReceiveMemory memory = receive_memory(key, c);
  const uint32_t gen = memory.gen;
  // A token offered before the last close is still good, but for the very
  // connection that close ended (a HELLO_ACK may cross a restart's reset).
  // An evicted record's memory counts as the record: its closed connection
  // stays closed.
  const bool offered =
      h.token != 0 &&
      (h.token == offer_token(key, h.src_session, h.conn, h.auth_key, gen) ||
       (gen > 0 && !(h.src_session == memory.closed_session && h.conn == memory.closed_conn) &&
        h.token == offer_token(key, h.src_session, h.conn, h.auth_key, gen - 1)));
  if (!offered) {
    // A segment of a connection we hold no receive half for (closed, timed
    // out, restarted, never opened) or a forgery: it starts nothing.
    ++stats_.bad_tokens;
    if (may_answer(c)) emit_reset(s.src_mac, h);
    return nullptr;
  }
  // The sender proved its handshake.  A new receive half starts at sequence
  // 1: a segment beyond the first window is of a connection this record has
  // forgotten (evicted), and gets RESET rather than a half it cannot fill.
  if (h.seq - wire::kInitialSeq >= kMaxWindow) {
    ++stats_.bad_tokens;
    if (may_answer(c)) emit_reset(s.src_mac, h);
    return nullptr;
  }
  if (c == nullptr) {
    c = admit(s.src_mac, h.src_queue, now_ns);
    if (c == nullptr) {
      ++stats_.connections_refused;
      return nullptr;
    }
  } else if (c->peer_session != 0 && h.src_session != c->peer_session) {
    // The peer restarted: the old incarnation's operations fail first.
    peer_restarted(*c, now_ns);
  } else if (c->rx_open) {
    // It gave up on its older connection (and failed what it had sent).
    reset_receive(*c);
  }
  c->peer_session = h.src_session;
  c->auth_key = h.auth_key;
  c->source_key = peer_key(s.src_mac, h.src_ep_queue);
  c->rx_open = true;
  c->rx_conn = h.conn;
  c->rx_token = h.token;
  c->next_expected = wire::kInitialSeq;
  c->congestion_unechoed = false;
  c->rx_progress_ns = now_ns;
  ++stats_.connections_opened;
  // Open the way back too, so the first response, notice or message to
  // this peer does not wait a round trip of its own: once, unasked
  // (poll_connection does not resend it while nothing waits for it).
  if (c->tx_state == TxState::kClosed) {
    emit_hello(*c, now_ns);
    c->hello_unasked = true;
  }
  return c;
}

void Engine::emit_hello(Connection& c, uint64_t now_ns) {
  c.hello_unasked = false;
  bool retry = false;
  if (c.tx_state == TxState::kClosed) {
    c.tx_state = TxState::kHello;
    c.hello_nonce = next_nonce();
    c.waiting_since_ns = now_ns;
    c.rto_ns = config_.initial_rto_ns;
  } else if (c.rto_deadline_ns == 0) {
    // An unasked HELLO nobody answered, asked now for what waits: the same
    // nonce (its late answer still counts), timed from here.
    c.waiting_since_ns = now_ns;
    c.rto_ns = config_.initial_rto_ns;
  } else {
    c.rto_ns = std::min(c.rto_ns * 2, config_.max_rto_ns);  // a retransmission
    change_path(c);  // the first HELLO may have taken a path that is down
    retry = true;
  }
  c.rto_deadline_ns = now_ns + c.rto_ns;
  OutFrame frame{};
  std::copy(c.mac, c.mac + 6, frame.dst_mac);
  frame.path = c.path;
  frame.source_port = c.source_port(frame.path);
  wire::FrameHeader& h = frame.header;
  h.version = wire::kWireVersion;
  h.opcode = static_cast<uint8_t>(wire::Opcode::kHello);
  h.dst_queue = c.queue;
  h.src_queue = queue_;
  h.src_ep_queue = address_queue_;
  h.src_session = session_;
  h.dst_session = c.peer_session;
  h.conn = c.tx_conn;
  h.auth_key = c.auth_key;
  h.token = c.hello_nonce;
  h.payload_len = sizeof(wire::HandshakeBody);
  h.msg_len = sizeof(wire::HandshakeBody);
  wire::HandshakeBody body{};
  // Asked again at each HELLO: what the path was found to carry may have
  // changed since the record was made (PathLimit).
  c.payload_offer = payload_offer(c.mac);
  body.max_payload = htobe32(c.payload_offer);
  std::memcpy(frame.body, &body, sizeof(body));
  frame.message = nullptr;
  frame.unanswered = retry;
  outbox_.push_back(frame);
  ++stats_.hellos_sent;
}

bool Engine::may_answer(Connection* c) {
  // A peer we hold a record for proved a handshake, and has a pace of its
  // own: a flood in its name (wrong tokens, stale sessions) neither draws
  // an answer each nor spends the strangers' budget.
  const bool allowed =
      c != nullptr
          ? c->answers.allow(clock_ns_, 1'000'000'000ull / kPeerAnswersPerSecond, kPeerAnswerBurst)
          : stranger_answers_.allow(
                clock_ns_,
                std::max<uint64_t>(
                    1'000'000'000ull / std::max<uint32_t>(config_.stranger_answers_per_second, 1),
                    1),
                std::max<uint32_t>(config_.stranger_answer_burst, 1));
  if (!allowed) ++stats_.answers_withheld;
  return allowed;
}

void Engine::emit_hello_ack(const Segment& s, uint64_t token) {
  const wire::FrameHeader& hello = *s.header;
  OutFrame frame{};
  std::copy(s.src_mac, s.src_mac + 6, frame.dst_mac);
  wire::FrameHeader& h = frame.header;
  h.version = wire::kWireVersion;
  h.opcode = static_cast<uint8_t>(wire::Opcode::kHelloAck);
  h.dst_queue = hello.src_queue;
  h.src_queue = queue_;
  h.src_ep_queue = address_queue_;
  h.src_session = session_;
  h.dst_session = hello.src_session;
  h.ack_conn = hello.conn;
  h.ack_token = hello.token;
  h.auth_key = hello.auth_key;
  h.payload_len = sizeof(wire::HandshakeBody);
  h.msg_len = sizeof(wire::HandshakeBody);
  wire::HandshakeBody body{};
  body.token = htobe64(token);
  body.max_payload = htobe32(payload_offer(s.src_mac));
  if (reaching_ports_) {
    uint16_t ports[std::size(body.reaching_ports)] = {};
    const size_t count =
        std::min(reaching_ports_(s.src_mac, hello.src_queue, ports), std::size(ports));
    for (size_t i = 0; i < count; ++i) body.reaching_ports[i] = htobe16(ports[i]);
  }
  std::memcpy(frame.body, &body, sizeof(body));
  frame.message = nullptr;
  outbox_.push_back(frame);
  ++stats_.hellos_answered;
}

void Engine::emit_reset(const uint8_t mac[6], const wire::FrameHeader& answered) {
  OutFrame frame{};
  std::copy(mac, mac + 6, frame.dst_mac);
  wire::FrameHeader& h = frame.header;
  h.version = wire::kWireVersion;
  h.opcode = static_cast<uint8_t>(wire::Opcode::kReset);
  h.dst_queue = answered.src_queue;
  h.src_queue = queue_;
  h.src_ep_queue = address_queue_;
  h.auth_key = answered.auth_key;
  h.src_session = session_;
  h.dst_session = answered.src_session;
  h.ack_conn = answered.conn;
  h.ack_token = answered.token;
  h.ack = answered.seq;  // which of the sender's frames this answers
  frame.message = nullptr;
  outbox_.push_back(frame);
  ++stats_.resets_sent;
}

}  // namespace ofi_dpdk::proto
