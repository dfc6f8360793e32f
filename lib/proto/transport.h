// transport.h: the reliable transport's interface.  An Engine serves one
// endpoint: it keeps one Connection per peer (MAC, queue), and turns
// operations into frames (the outbox) and frames into completions.  It makes
// no DPDK call and reads no clock: the caller hands it frames, the time, and
// takes out what it produced, so tests drive it with packets in memory.
//
// What the engine guarantees, over any mix of loss, reordering, duplication
// and corruption that the frame checks catch:
//   - each message is delivered once, whole, in send order per peer
//     (FI_ORDER_SAS); a retransmitted segment is never placed twice.  A
//     rendezvous message (rendezvous.cc) is matched in send order too, and
//     the receive completions of its peer's later messages wait for its
//     own; only its send may complete after later sends;
//   - a send completes only when the peer acknowledged all of it;
//   - a peer that stops answering fails its operations with kErrTimedOut
//     after TransportConfig::peer_timeout_ns; a peer that restarted (new
//     session) fails the operations of the old connection with kErrPeerReset,
//     and the next send forms a new connection;
//   - a receive half opens only through a HELLO handshake whose token the
//     sender's segments then carry, so a retransmitted segment never opens a
//     second connection and nothing runs twice;
//   - strangers cost no memory until they complete a handshake (HELLOs are
//     answered without state), connections are capped (max_connections,
//     idle ones evicted), and reordering buffers come from a bounded pool.
//
// The requests and completions it trades in are transport_requests.h, its
// configuration and counters transport_config.h; its own state is
// engine_state.h.
#pragma once

#include <sys/uio.h>

#include <cstddef>
#include <cstdint>
#include <deque>
#include <list>
#include <memory>
#include <unordered_map>
#include <vector>

#include "lib/proto/connection_summary.h"
#include "lib/proto/transport_config.h"
#include "lib/proto/transport_requests.h"
#include "lib/proto/wire.h"

namespace ofi_dpdk::proto {

// The engine's own state (engine_state.h).
struct TxMessage;
struct HeldSegment;
struct Connection;
struct UnexpectedMessage;
class DatagramShares;
struct InboundMessage;
struct RemoteInbound;
struct OrderedCompletion;

// One segment of a BUNDLE frame: its entry (host order) and where its
// payload is read from.
struct BundledSegment {
  wire::BundleEntry entry;
  const TxMessage* message;
  uint32_t offset;
};

// One frame the engine wants sent.  The payload is gathered from the message
// with copy_payload(); it stays valid until Engine::frames_sent().  HELLO and
// HELLO_ACK carry their HandshakeBody in `body` instead (wire order); a
// BUNDLE frame's entries are `bundle`, `bundled` of them.
struct OutFrame {
  uint8_t dst_mac[6];
  wire::FrameHeader header;  // host order
  const TxMessage* message;  // nullptr for frames without a message
  uint32_t offset;
  uint8_t body[sizeof(wire::HandshakeBody)];
  const BundledSegment* bundle = nullptr;
  uint16_t bundled = 0;
  // The connection's path (Connection::path; 0 for frames of none): not on
  // the wire, but where the encapsulation has room for flow entropy (a UDP
  // source port), frames of one path share it and another path changes it.
  uint8_t path = 0;
  // The source port the peer asked frames of this path to come from
  // (HandshakeBody::reaching_ports), or 0: the encapsulation picks by path.
  uint16_t source_port = 0;
  // Sent again because the peer did not answer in time (a HELLO's retry,
  // a retransmission timeout's resend): the encapsulation may confirm the
  // next hop's address (ask it again), since an answer may be missing
  // because the peer cannot reach us.
  bool unanswered = false;
  void copy_payload(uint8_t* out) const;
  // The same, returning the payload's CRC-32C continued from `crc`
  // (begin_seal's): a message's bytes are checksummed as they are copied.
  uint32_t copy_payload(uint8_t* out, uint32_t crc) const;
  // Where the payload lies when it lies in one piece (a message's buffer,
  // one iovec of it, or the engine's copy), else nullptr (bundles, frames
  // without a message, a segment across iovecs): a device that copies at
  // transmit may read it there (net/lent_payload.h).  Valid until
  // frames_sent().
  const uint8_t* payload_in_one_piece() const;
};

// What the receiving side knows of a segment, host order.
struct Segment {
  const uint8_t* src_mac;
  const wire::FrameHeader* header;
  const uint8_t* payload;
  // The received buffer the payload lies in, which a FrameKeeper may keep;
  // nullptr where there is none to keep.
  void* frame = nullptr;
  // Marked CE by a router on the way (the IP header's ECN field).
  bool congestion_experienced = false;
};

// Lends the engine received frames: a segment that must wait ahead of a gap
// then stays in its frame instead of being copied into the reorder pool and
// out again.  keep() says whether the owner can spare the frame (false: the
// segment is copied); every frame kept is released exactly once, at the
// latest when the engine is destroyed.
class FrameKeeper {
 public:
  virtual bool keep(void* frame) = 0;
  virtual void release(void* frame) = 0;

 protected:
  ~FrameKeeper() = default;
};

class Engine {
 public:
  Engine(const TransportConfig& config, const uint8_t local_mac[6], uint16_t local_queue,
         uint32_t session);
  ~Engine();

  // Queues a message to `peer`.  Returns 0, -EAGAIN when max_outstanding_sends
  // are in progress, -EMSGSIZE above max_msg_size, -EINVAL for a bad iov.
  // With TransportConfig::datagrams: its frame is in the outbox and its
  // completion (it left) follows at once; -EMSGSIZE above max_payload.
  int send(const PeerAddress& peer, const SendRequest& request, uint64_t now_ns);
  // Posts a receive; it may complete at once from an unexpected message.
  // Returns 0 or -EAGAIN when max_posted_recvs are posted.
  int post_recv(const RecvRequest& request, uint64_t now_ns);
  // Shared receive contexts: the engine matches arriving messages against
  // `shared` receives instead of its own, as do the other engines given
  // the same (nullptr: its own again).  Before any receive is posted.  A
  // receive for all of them is posted by trying each one's early messages
  // (take_early), then keeping it (keep_receive) and telling each one
  // (receives_changed).  Multi-recv buffers are not shared.
  void share_receives(PostedReceives* shared) { posted_ = shared ? shared : &own_posted_; }
  // Whether a message that arrived here before any receive takes `request`
  // (now, or when whole); nothing is posted.
  bool take_early(const RecvRequest& request, uint64_t now_ns);
  // Adds `request` to the posted receives; -EAGAIN when max_posted_recvs are.
  int keep_receive(const RecvRequest& request);
  // Receives were posted elsewhere (another engine of a shared context):
  // what waited for one may find it now.
  void receives_changed() {
    touched_ = true;
    wake_stalled();
  }
  // Cancels the posted receive with that context: 0 (a kErrCanceled
  // completion follows) or -ENOENT.
  int cancel_recv(void* context);
  // fi_tagged(3) FI_PEEK (receiver.cc): looks for an unexpected message that
  // matches `request` (oldest first; one still arriving counts, one a
  // receive or a claim already holds does not).  Found: a kRecv completion
  // with its length, tag and CQ data, buf nullptr and nothing copied; with
  // kClaim the message is then reserved for claim_recv with request.context,
  // with kDiscard it is dropped.  Not found: a completion with error
  // kErrNoMessage.  Always returns 0.
  enum class PeekAction : uint8_t { kPeek, kClaim, kDiscard };
  int peek_recv(const RecvRequest& request, PeekAction action);
  // FI_CLAIM: receives into `request` the message peek_recv(kClaim) reserved
  // for request.context (at once, or when whole), or with `discard` drops
  // it (a completion with len 0, buf nullptr).  Returns 0, or -ENOENT when
  // no message is reserved for that context.
  int claim_recv(const RecvRequest& request, bool discard);
  // A frame addressed to this endpoint (the caller checked dst MAC/queue).
  void on_frame(const Segment& segment, uint64_t now_ns);
  // Timers: retransmission, delayed acks, dead peers; and more sending.
  // (Inline: most calls, an application's idle fi_cq_read, find nothing
  // touched and no timer due: see touched_.)
  void poll(uint64_t now_ns) {
    if (now_ns > clock_ns_) clock_ns_ = now_ns;
    if (touched_ || now_ns >= next_visit_ns_) visit_connections(now_ns);
  }
  // Between the bursts of one progress pass: the acks owed (ack_now, on
  // data where some may leave) of the connections that took a data segment
  // since the last poll or answer.  The caller sends the outbox then, so the peer
  // works on them while this side takes the rest of the burst; a pass that
  // answers only at its end leaves both sides idle in turn.  (A taken ack
  // lets its sender's data into the outbox at once, in on_frame.)
  void answer(uint64_t now_ns);
  // The port's link came back after it was down (a kernel interface set
  // down and up, a cable): what waits for a retransmission timeout, or a
  // HELLO for its answer, goes again at the next poll, with the timeout
  // its RTT samples give (the backoff the dead link built says nothing of
  // the path now).  The peer timeout still counts from before.
  void link_restored(uint64_t now_ns);
  // Fails a peer's operations and closes both halves of its connection (AV
  // removal of an address with `session`, 0: any, inserted at `named_at_ns`,
  // 0: unknown).  The record stays (evictable), so a segment of the closed
  // connection cannot open it again.  Another incarnation's connection
  // (another session, or a restart seen since the insert) is left alone.
  void drop_peer(uint64_t key, uint32_t session = 0, uint64_t named_at_ns = 0);
  // Fails the operations of every peer whose link address (PeerAddress::mac)
  // `unreachable` picks with kErrHostUnreachable / kProvNoRoute, closes
  // their connections as drop_peer does (the port found no route to them),
  // and takes the frames to them out of the outbox.
  void fail_unreachable(const std::function<bool(const uint8_t* link)>& unreachable);
  // The network keys whose frames this endpoint takes (default: only 0, no
  // key); frames with any other key are dropped unanswered and counted.
  void set_accepted_keys(std::vector<uint32_t> keys) { accepted_keys_ = std::move(keys); }
  // The queue of the endpoint's address, stamped as src_ep_queue (default:
  // its own queue); a context of a scalable endpoint gives its endpoint's.
  void set_address_queue(uint16_t queue) { address_queue_ = queue; }
  // Serves requests from peers (RMA, atomics); without one, every request
  // gets kErrNoHandler.
  void set_request_handler(RequestHandler handler) { request_handler_ = std::move(handler); }
  // Takes control messages (FI_EP_MSG); without one they are dropped.
  void set_control_handler(ControlHandler handler) { control_handler_ = std::move(handler); }
  // With a filter, a message from a sender it refuses is taken off the
  // stream and dropped (no receive sees it; refused_messages), and a
  // request is answered kErrNoHandler without running.  Control messages
  // pass.  Without one, every sender's are taken.
  void set_sender_filter(SenderFilter filter) { sender_filter_ = std::move(filter); }
  // Optional: lets a request's payload skip the assembly buffer.
  void set_request_placer(RequestPlacer placer) { request_placer_ = std::move(placer); }
  // Optional: a connection's segments, both ways, stay within the limit of
  // its peer's path, asked once when the connection is made (and for a
  // HELLO answered before there is one): what each side offers in its
  // handshake is the smaller of max_payload and the limit.
  void set_path_limit(PathLimit limit) { path_limit_ = std::move(limit); }
  // Optional: told when a connection's segments were made smaller because
  // large ones went unanswered (path MTU discovery without ICMP).
  void set_path_learned(PathLearned learned) { path_learned_ = std::move(learned); }
  // A router says our frame to the peer at (link, peer_queue) did not fit
  // a link on the way, whose frames carry `payload` bytes of payload at
  // most (ICMP "fragmentation needed", "packet too big"; the caller turns
  // its MTU into payload bytes).  It counts only for our open connection
  // it names with its number and token, which the router quoted: no one
  // off the path knows those.  That connection's segments are cut no
  // larger from now on, and those in flight that are larger go again at
  // once, in pieces (wire::kFlagPiece).  Returns whether it narrowed one.
  bool on_path_too_big(const uint8_t* link, uint16_t peer_queue, uint16_t conn, uint64_t token,
                       uint32_t payload, uint64_t now_ns);
  // Optional: the source ports this endpoint's HELLO_ACKs name
  // (HandshakeBody::reaching_ports), asked at each answer.
  void set_reaching_ports(ReachingPorts ports) { reaching_ports_ = std::move(ports); }
  // Optional: lets segments held ahead of a gap stay in their frames.  It
  // must outlive the engine.
  void set_frame_keeper(FrameKeeper* keeper) { frame_keeper_ = keeper; }
  // A buffer for `length` bytes a request handler returns (Response::data),
  // from the endpoint's spare buffers when one fits; empty (size 0) when
  // none can be had: the handler refuses the request with kErrNoMemory.
  ResponseBytes response_bytes(size_t length);
  // The memory [begin, begin + length) is about to change or go away (a
  // write or atomic is about to modify it, its region is being closed): the
  // responses still sending bytes lent from it (Response::lent_bytes) take
  // a copy of them now, so what their initiators receive, resent or not,
  // is what the memory held when the read was served.  Returns how many
  // responses took a copy.  Costs one comparison while nothing is lent.
  size_t recall_lent(const void* begin, size_t length);
  // The memory [begin, begin + length) is going away (its region is being
  // closed): requests being placed into it as they arrive (RequestPlacer)
  // place nothing more; their remaining segments are consumed, and each is
  // answered kErrKeyRejected without its handler running.  Returns how many.
  size_t forget_placements(const void* begin, size_t length);

  std::vector<OutFrame>& outbox() { return outbox_; }
  // Nothing for the caller's flush to do: no frame to send, no completion
  // to report, no sent message to recycle (frames_sent).
  bool nothing_to_flush() const {
    return outbox_.empty() && completions_.empty() && retired_.empty();
  }
  // True when the outbox ends in a frame that later small sends to its
  // peer could still join, and that peer has earlier segments not yet
  // acknowledged (bundle.cc).  A caller that polls again soon (it must, to
  // see those earlier sends complete) may keep the outbox for that poll
  // instead of sending it now: a stream of small sends then leaves in a
  // few frames.  The first send after a quiet spell never waits.
  bool holding_bundle() const;
  // The caller sent (or dropped) the outbox: payload views may go now.
  void frames_sent();
  // Hand these to the application only after sending the outbox: a send may
  // complete in the same pass that queued a retransmission of one of its
  // segments, whose payload is still read from the application's buffer.
  std::vector<Completion>& completions() { return completions_; }

  size_t outstanding_sends() const { return outstanding_sends_; }
  // When the last data segment arrived (0: never): closing endpoints linger
  // while peers may still retransmit what they have not seen acked.
  uint64_t last_data_ns() const { return last_data_ns_; }
  size_t posted_recvs() const { return posted_->count; }
  size_t connection_count() const { return connections_.size(); }
  // Connections a poll visits now (with timers running or work queued).
  size_t active_connections() const { return active_.size(); }
  // Bytes of the unexpected budget in use (early messages and requests).
  size_t unexpected_bytes() const { return unexpected_bytes_; }
  size_t unexpected_messages() const;
  // Bytes the reorder pool holds (allocated chunks, free or in use).
  size_t reorder_pool_bytes() const;
  // Segments the connections hold ahead of a gap (chunks in use).
  size_t held_segments() const { return chunks_allocated_ - free_chunks_.size(); }
  // Bytes of responses not yet acknowledged, all connections
  // (TransportConfig::response_bytes).
  size_t responses_held_bytes() const { return response_bytes_; }
  uint32_t session() const { return session_; }
  const TransportStats& stats() const { return stats_; }
  // The last wait that ran out (stats().timeouts counts them).
  const TimeoutReport& last_timeout() const { return last_timeout_; }
  // Up to `room` connections as an operator sees them (engine_summary.cc);
  // returns how many the engine holds, which may be more.
  size_t summarize_connections(ConnectionSummary* out, size_t room) const;
  const TransportConfig& config() const { return config_; }
  // The session of the peer at `key` (peer_key of its address) as this
  // endpoint knows it; 0 when it knows none.
  uint32_t peer_session(uint64_t key) const;
  // For tests, which include engine_state.h to look inside.
  const Connection* find(uint64_t key) const;

 private:
  // Connection::awaiting_response and awaiting_delivery, by msg_id.
  using AwaitingMap = std::unordered_map<uint32_t, std::unique_ptr<TxMessage>>;
  // The connection to (mac, queue), created for our own sends.
  Connection& connection(const uint8_t mac[6], uint16_t queue);
  // The connection at `key`, or nullptr: the last one used first (a
  // stream's frames come from one peer, and a pingpong's sends go to it).
  Connection* connection_at(uint64_t key);
  // A connection for a peer that proved its handshake: found, created, or
  // made room for by evicting an idle one; nullptr when all are busy.
  Connection* admit(const uint8_t mac[6], uint16_t queue, uint64_t now_ns);
  // Makes room for one connection: for a peer that proved its handshake
  // (`for_proven_peer`), first one whose receive half never took a segment
  // in order and that holds nothing of ours, the longest silent; else
  // the longest-silent idle one.  Counts connections_evicted.
  bool evict_one(uint64_t now_ns, bool for_proven_peer = false);
  // Forgets a connection, remembering what it knew of its receive halves.
  void evict(std::unordered_map<uint64_t, std::unique_ptr<Connection>>::iterator victim);
  // The token a HELLO from (key, session, conn, auth_key) is granted for
  // receive generation `gen`; never 0.  Stateless: a HELLO costs nothing.
  uint64_t offer_token(uint64_t key, uint32_t session, uint16_t conn, uint32_t auth_key,
                       uint32_t gen) const;
  uint64_t next_nonce();
  void on_hello(const Segment& s);
  void on_hello_ack(Connection* c, const Segment& s, uint64_t now_ns);
  void on_reset(Connection* c, const wire::FrameHeader& h);
  // Whether a data segment or probe may use `c`'s receive half: it carries
  // the open half's token, or proves a handshake (opening the half, and
  // failing an older incarnation's operations when the session is new).
  // Creates the connection when needed.  Answers RESET when it may not.
  Connection* receive_half_for(Connection* c, const Segment& s, uint64_t now_ns);
  // engine_tx.cc
  void pump(Connection& c, uint64_t now_ns);
  void emit_segment(Connection& c, uint32_t seq, uint64_t now_ns, bool retransmit);
  // bundle.cc: adds a first transmission to the outbox's last frame when
  // that is c's and both fit in a BUNDLE; false when it goes alone.
  bool join_bundle(Connection& c, const wire::FrameHeader& h, const TxMessage& m);
  bool bundles(const wire::FrameHeader& h) const;
  // Each entry of a BUNDLE frame, taken as the frame of its own it stands for.
  void on_bundle(Connection* c, const Segment& bundle, uint64_t now_ns);
  // datagram.cc (TransportConfig::datagrams): a message of `length` bytes
  // as one DATAGRAM frame; and a DATAGRAM frame to a receive, or kept as
  // unexpected, or dropped.
  int send_datagram(const PeerAddress& peer, const SendRequest& request, size_t length);
  void on_datagram(const Segment& s);
  void emit_ack(Connection& c);
  void emit_hello(Connection& c, uint64_t now_ns);
  void change_path(Connection& c);  // the next path, counted
  // The path of the connection's next frame (TransportConfig::spray_paths:
  // its lanes in turn); *lane says which lane it took.
  uint8_t next_path(Connection& c, uint8_t* lane);
  // A lane lost a segment (or its una timed out): it takes a path the
  // connection has not used.  Counted as a path change.
  void move_lane(Connection& c, uint8_t lane);
  void emit_hello_ack(const Segment& s, uint64_t token);
  // Asks the peer for an ACK (kFlagAckRequest): is it still there?
  void emit_probe(Connection& c);
  // Tells the sender of `h` we hold no receive state for its connection
  // (h.conn, h.token).
  void emit_reset(const uint8_t mac[6], const wire::FrameHeader& h);
  // Whether a HELLO_ACK or RESET may answer now: to a peer we hold a
  // record for (`c`), within its own pace (kPeerAnswersPerSecond: a flood
  // of wrong guesses in its name draws little), else within the
  // stranger-answer budget (TransportConfig::stranger_answer_*); counted in
  // answers_withheld when not.
  bool may_answer(Connection* c);
  static constexpr uint64_t kPeerAnswersPerSecond = 200;
  static constexpr uint64_t kPeerAnswerBurst = 16;
  bool accepts_key(uint32_t key) const;
  void on_ack(Connection& c, const wire::FrameHeader& h, uint64_t now_ns);
  // A segment found lost for the first time (fast retransmit): the loss
  // event's window cut (engine_tx.cc).
  void on_loss(Connection& c, uint32_t seq, uint32_t frame);
  void undo_timeout_cut(Connection& c);
  void complete_send(Connection& c, TxMessage& m, int error, int prov_errno);
  // Message records from the free lists (or the heap), and back: a record
  // per send and per message received would otherwise be an allocation.
  std::unique_ptr<TxMessage> new_message();
  // Where a send's bytes are read from: its iov, or with request.copy a
  // copy taken now.  False when no copy buffer could be had.
  bool take_payload(TxMessage& message, const SendRequest& request, size_t length);
  // send()'s answer when a copy buffer could not be had: -ENOMEM, the
  // message back to the spares.
  int refuse_no_memory(std::unique_ptr<TxMessage> message);
  InboundMessage* new_inbound();
  void free_inbound(InboundMessage* in);
  // A buffer of at least `length` bytes, not zeroed; its size in *capacity.
  // Null when the heap has none (never throws: callers answer or wait).
  std::unique_ptr<uint8_t[]> take_copy_buffer(size_t length, size_t* capacity);
  // Keeps a buffer of `capacity` bytes for take_copy_buffer, if it is of a
  // size worth keeping and there is room; frees it otherwise.
  void keep_spare(std::unique_ptr<uint8_t[]> buffer, size_t capacity);
  void fail_connection(Connection& c, int error, int prov_errno);
  void peer_restarted(Connection& c, uint64_t now_ns);
  // Counts a wait that ran out and keeps its picture (last_timeout).
  void note_timeout(const Connection& c, TimeoutReport::Wait wait, uint64_t since_ns,
                    uint64_t now_ns);
  // Fails the sends only and opens the next transmit connection.
  void fail_transmit(Connection& c, int error, int prov_errno);
  void reset_transmit(Connection& c);
  void arm_rto(Connection& c, uint64_t now_ns);
  // Forgets which segments in flight the peer reported holding (SACK).
  void forget_sacks(Connection& c);
  // (Echoes a congestion mark the ack it carries covers, unless !may_echo:
  // a frame whose ack fields are then cleared.  Not const.)
  wire::FrameHeader base_header(Connection& c, uint8_t opcode, bool may_echo = true);
  // engine_rx.cc
  void on_data(Connection& c, const Segment& s, uint64_t now_ns);
  // ECN (congestion_marks.cc): a CE-marked segment `seq` taken, and an
  // ack that newly covers `newly_acked` segments, echoing marks or not.
  void note_congestion_mark(Connection& c, uint32_t seq);
  void on_congestion_echo(Connection& c, uint32_t newly_acked, bool echoed);
  // An RTT sample (on_ack): the base RTT, and a cut for queueing delay
  // (congestion_delay.cc).
  void on_rtt_sample(Connection& c, uint64_t rtt_ns, uint64_t now_ns);
  // True when an in-order segment continues the message being assembled, or
  // starts a new one at offset 0.
  bool continues(const Connection& c, const wire::FrameHeader& h) const;
  // Places a segment that continues(); false when a new message finds no
  // receive and no room in the unexpected budget.
  bool deliver(Connection& c, const wire::FrameHeader& h, const uint8_t* payload);
  // A whole control message, in order: to the control handler (or dropped).
  void take_control(Connection& c, const wire::FrameHeader& h, const uint8_t* payload);
  void drain_reorder(Connection& c);
  // Drops the receive state; a message half received fails with `error`.
  void reset_receive(Connection& c, int error = kErrPeerReset, int prov_errno = kProvPeerRestarted);
  uint16_t receive_window(const Connection& c) const;
  // Whether c's requests wait for its (or the endpoint's) responses to be
  // acknowledged: max_pending_responses, the response byte budgets.
  bool responses_full(const Connection& c) const;
  uint64_t sack_bits(const Connection& c) const;
  // The reorder pool: chunks of one header and max_payload bytes, within
  // reorder_bytes, for a segment `c` holds.  When the pool is spent, one
  // taken from the connection that holds the most, if that is more than
  // `c` (reclaim_chunk); nullptr when none.
  HeldSegment* take_chunk(Connection& c);
  HeldSegment* reclaim_chunk(const Connection& c);
  void give_back(HeldSegment* chunk);
  size_t chunk_size() const;
  void release_held(Connection& c);
  // receiver.cc
  // Gives `in` (sender, tag, length) the first posted receive that matches
  // it, taking that receive (or a part of a multi-recv buffer); false when
  // none matches.
  bool match_posted(InboundMessage& in);
  // `look_for_receive` false: no posted receive matches (deliver_whole
  // looked), the message is unexpected.
  bool begin_message(Connection& c, const wire::FrameHeader& h, bool look_for_receive = true);
  // A message whole in one frame, wanting no delivery notice, that the
  // first matching posted receive takes (not a multi-recv buffer): copied
  // and completed at once, with no InboundMessage.  Otherwise nothing
  // changed, and begin_message takes it: kNoReceive says none matched.
  enum class Whole { kDelivered, kNoReceive, kMultiRecv };
  Whole deliver_whole(Connection& c, const wire::FrameHeader& h, const uint8_t* payload);
  void place(InboundMessage& in, size_t offset, const uint8_t* data, size_t length);
  void finish_message(Connection& c);
  // rendezvous.cc
  // A rendezvous announcement, in order on c's stream: matched now, or
  // kept as an unexpected record; false when there is no room for that.
  bool take_rendezvous(Connection& c, const wire::FrameHeader& h, const uint8_t* payload);
  // Asks c's peer for the data of announcement (msg_id, conn): into
  // `into->recv`, or (discard) for nothing, which lets its send complete.
  void send_pull(Connection& c, uint32_t msg_id, uint16_t conn,
                 std::unique_ptr<InboundMessage> into, bool discard);
  // A receive (or with none, a discard) takes the unexpected announcement
  // `it`: pulls it, or fails the receive when the announcing connection is
  // gone.  The record goes.
  void pull_unexpected(std::list<UnexpectedMessage>::iterator it, const RecvRequest* into);
  // Answers a pull with the data of the send it names, or with an error.
  void serve_pull(Connection& c, uint32_t request_id, const uint8_t* body, size_t length);
  // A pull ended (its response arrived whole, or it failed): the receive's
  // completion.
  void finish_pull(Connection& c, TxMessage& pull, int error, int prov_errno);
  // engine_rma.cc: requests and responses.
  bool deliver_remote(Connection& c, const wire::FrameHeader& h, const uint8_t* payload);
  void finish_remote(Connection& c);
  // Runs deferred requests while the budgets allow; every connection's
  // when `all` (the endpoint's budget freed).
  void serve_deferred(Connection& c);
  void serve_all_deferred();
  // The deferred requests go with the peer's stream.
  void drop_deferred(Connection& c);
  // A barrier in c.recv_order behind the requests deferred so far: false
  // past kMaxOrderedCompletions.  release_barriers readies those whose
  // requests have run, and lets out what follows them.
  bool hold_behind_deferred(Connection& c);
  void release_barriers(Connection& c);
  void send_response(Connection& c, uint32_t request_id, Response response);
  // Queues a response ahead of the messages not cut yet (engine_rma.cc).
  void queue_response(Connection& c, std::unique_ptr<TxMessage> response);
  // A request fully acknowledged waits for its response instead of completing.
  void await_response(Connection& c, std::unique_ptr<TxMessage> message);
  // Puts a message in one of a connection's waits (awaiting_response,
  // awaiting_delivery) and takes it out, reusing the map's nodes.
  void start_waiting(AwaitingMap& waits, std::unique_ptr<TxMessage> message);
  std::unique_ptr<TxMessage> stop_waiting(AwaitingMap& waits, AwaitingMap::iterator it);
  void fail_awaiting(Connection& c, int error, int prov_errno);
  void fail_delivery_waits(Connection& c, int error, int prov_errno);
  // Fails the rendezvous sends still waiting for their pull.
  void fail_rendezvous_waits(Connection& c, int error, int prov_errno);
  // Fails the sends that waited for a receive longer than delivery_timeout_ns.
  void fail_untaken(Connection& c, uint64_t now_ns);
  // Fails the requests waiting for their responses only.
  void fail_requests(Connection& c, int error, int prov_errno);
  void forget_response_target(
      Connection& c, const std::unordered_map<uint32_t, std::unique_ptr<TxMessage>>& failing);
  // A send we wait on a RESPONSE for (request or delivery notice), or null.
  TxMessage* awaited(Connection& c, uint32_t msg_id);
  // Drops what the receive half assembled of a request or response; a
  // request waiting for that response fails with `error`.
  void drop_remote(Connection& c, int error, int prov_errno);
  // Gives a request's bytes back to the unexpected budget.
  // Copies `length` bytes of data to byte `offset` of an application's iov,
  // as much as fits: every place the engine writes into application memory.
  // A read served earlier that still sends from those bytes gets its own
  // copy first (recall_lent), but for an answer to our own request (`answer`).
  void write_to_user(const iovec* iov, size_t count, size_t offset, const uint8_t* data,
                     size_t length, bool answer = false);
  void release_request(RemoteInbound& in);
  // Takes back the outbox frames that carry `m`'s bytes (none may leave).
  void drop_outbox_frames(const TxMessage& m);
  // A cleared record for a request or response being assembled (a spare one
  // when there is), and its way back; RemoteHold owns one until then.
  RemoteInbound* new_remote();
  void free_remote(RemoteInbound* in);
  struct RemoteRecycler {
    Engine* engine;
    void operator()(RemoteInbound* in) const { engine->free_remote(in); }
  };
  using RemoteHold = std::unique_ptr<RemoteInbound, RemoteRecycler>;
  RemoteHold hold_remote(RemoteInbound* in) { return RemoteHold(in, RemoteRecycler{this}); }
  // A request taken whole: run now, or queued behind those deferred
  // (Connection::deferred_requests) while the answers' budgets are full.
  void serve_request(Connection& c, RemoteHold in);
  void run_request(Connection& c, RemoteHold in);
  // `from`: the connection the message came on, whose receive completions
  // keep their order (Connection::recv_order); null when it is gone.
  void complete_recv(Connection* from, const RecvRequest& recv, const InboundMessage& in,
                     const uint8_t* bytes_if_copy);
  // What a receive completion tells of its message.
  struct ReceivedMessage {
    size_t length;
    bool tagged;
    uint64_t tag;
    bool has_data;
    uint64_t cq_data;
    Sender sender;
  };
  void complete_recv(Connection* from, const RecvRequest& recv, const ReceivedMessage& message,
                     const uint8_t* bytes_if_copy);
  // An error completion for a receive that got no message from `sender`.
  void fail_recv(Connection* from, const RecvRequest& recv, int error, int prov_errno,
                 const Sender& sender);
  // Reports a receive completion and settles its multi-recv buffer: now,
  // or when its turn comes (push_recv_completion keeps it behind a pull).
  void settle_recv(const std::shared_ptr<MultiRecv>& multi, const Completion& done, bool wanted);
  // Reports `c`'s ordered completions that are ready, from the front.
  void release_ordered(Connection& c);
  // Keeps `c.recv_order` within its bound (rendezvous.cc).
  void bound_order(Connection& c);
  Connection* connection_by_key(uint64_t key);
  // Queues a receive's completion (when `wanted`), settling its multi-recv
  // buffer: the last completion into a released buffer says so, or a
  // release_only completion does.
  void push_recv_completion(Connection* from, const RecvRequest& recv, const Completion& done,
                            bool wanted);
  // Cuts the next `length` bytes (fewer when less is left) off a multi-recv
  // buffer for one message; may release the buffer.
  RecvRequest take_part(const RecvRequest& posted, size_t length);
  int post_multi_recv(const RecvRequest& request);
  // Tells the sender a receive took (or discarded) its message, when it asked.
  void notify_delivered(const UnexpectedMessage& u);
  // Sends a delivery notice now, or owes it (Connection::owed_notices).
  void notice_delivery(Connection& c, uint32_t msg_id, uint64_t requests_before);
  void send_owed_notices(Connection& c);
  bool matches(const RecvRequest& recv, const Sender& sender, bool tagged, uint64_t tag) const;
  Completion peek_completion(const RecvRequest& request, const UnexpectedMessage& u,
                             bool with_length);
  // Adds a receive at the end of posted_ / takes `it` out of it.
  void keep_posted(const RecvRequest& request);
  void drop_posted(std::list<RecvRequest>::iterator it);
  // A cleared record at the end of unexpected_ (a spare one when there is),
  // whose buffer holds at least `length` bytes when `with_bytes`;
  // unexpected_.end() when no buffer could be had.
  std::list<UnexpectedMessage>::iterator new_unexpected(size_t length, bool with_bytes = true);
  // Takes `it` out of unexpected_ (into the spares), giving its share of the
  // unexpected budget back; returns the next.
  std::list<UnexpectedMessage>::iterator erase_unexpected(
      std::list<UnexpectedMessage>::iterator it);
  // Drops an unexpected message now, or when whole if it is still arriving.
  void drop_unexpected(std::list<UnexpectedMessage>::iterator it);
  // Gives it to a receive now, or when whole if it is still arriving.
  void take_unexpected(const RecvRequest& request, std::list<UnexpectedMessage>::iterator it);
  // Takes what a stalled receive half held back, now that a receive, budget
  // or response room may be there; acks the reopened window.
  void wake_stalled();
  void wake(Connection& c);
  void set_stalled(Connection& c, bool stalled);
  // The ack for a whole message: at the next progress pass (ack_at_poll).
  void ack_soon(Connection& c);

  TransportConfig config_;
  uint8_t mac_[6];
  uint16_t queue_;
  uint16_t address_queue_;
  uint32_t session_;
  std::vector<uint32_t> accepted_keys_{0};
  // Responses lending a region's bytes (LentMark), counted before the
  // records that hold them are declared, so it outlives them.
  size_t lent_out_ = 0;
  std::unordered_map<uint64_t, std::unique_ptr<Connection>> connections_;
  // connection()'s and connection_at()'s last answer, until evicted.
  Connection* last_connection_ = nullptr;
  uint16_t last_tx_conn_ = 0;  // numbers transmit connections, to all peers
  uint64_t nonce_counter_ = 0;
  std::vector<HeldSegment*> free_chunks_;
  size_t chunks_allocated_ = 0;
  size_t stalled_count_ = 0;  // connections with rx_stalled
  // What an evicted record knew of its receive halves (evict_one), so that a
  // new record for the same peer accepts no token the old one would have
  // refused; at most max_connections of them.
  struct ReceiveMemory {
    uint32_t gen = 0;             // Connection::rx_gen
    uint32_t closed_session = 0;  // Connection::closed_session
    uint16_t closed_conn = 0;     // Connection::closed_conn
  };
  ReceiveMemory receive_memory(uint64_t key, const Connection* c) const;
  std::unordered_map<uint64_t, ReceiveMemory> evicted_gen_;
  // The generation a record starts at when nothing is remembered of its
  // peer: above every generation a forgotten memory held, so no token of
  // a connection we no longer remember passes as one we offered.
  uint32_t generation_floor_ = 0;
  std::deque<std::pair<uint64_t, uint32_t>> evicted_order_;
  std::vector<OutFrame> outbox_;
  // The outbox frame small segments may join: its index and connection
  // (none when `connection` is null or the frame is no longer the last).
  struct OpenBundle {
    size_t frame = 0;
    const Connection* connection = nullptr;
    uint8_t lane = 0;  // the frame's lane (spraying): its segments' too
  } open_bundle_;
  // Entries of this pass's BUNDLE frames, until frames_sent(); a bundle's
  // entries are consecutive, so only the last frame's may grow.
  std::unique_ptr<BundledSegment[]> bundle_store_;
  size_t bundle_used_ = 0;
  uint32_t frames_cut_ = 0;  // numbers data frames (TxSlot::frame)
  // Connections to answer (answer()), by key: one may be evicted meanwhile.
  std::vector<uint64_t> answer_due_;
  // The connections poll() visits (Connection::active): whatever gives a
  // connection work (a frame from its peer, a send to it, a receive that
  // takes its message) activates it, and poll drops those it leaves with
  // none (quiescent()).  Idle connections are tended a few at a time by
  // the sweep instead (sweep_idle).
  std::vector<Connection*> active_;
  // Whether poll() must visit the active connections: set by each entry
  // that may give one work (a frame, a send, a receive, a cancel...), and
  // kept while an ack waits for a poll to be counted (ack_at_poll,
  // ack_now).  Otherwise only timers can be due, and a visit every
  // quiet_poll_ns_ serves them (an eighth of the ack delay; the others are
  // longer): an application spinning on fi_cq_read, the common idle
  // pass, costs a compare.  A flag an entry failed to set would delay its
  // work by that interval, never lose it.
  bool touched_ = true;
  uint64_t next_visit_ns_ = 0;
  uint64_t quiet_poll_ns_ = 0;
  void activate(Connection& c);
  void visit_connections(uint64_t now_ns);
  bool quiescent(const Connection& c) const;
  // Whether a visit now would find nothing for `c` but its timers (which
  // visits every quiet_poll_ns_ serve): no ack owed at the poll, nothing
  // to cut, held, assembled, deferred or pulled.  An entry that leaves a
  // connection settled and found touched_ clear may clear it again.
  bool settled(const Connection& c) const;
  // Set when an entry gave connections other than its own work (wake,
  // serve_all_deferred): then it leaves touched_ set.
  bool others_given_work_ = false;
  // One connection's timers and sending, for poll.
  void poll_connection(Connection& c, uint64_t now_ns);
  // Every kSweepIntervalNs, the next kSweepBatch connections of the table
  // (from sweep_key_ on): an idle one's slots go back after
  // kIdleSlotRelease, a receive half that never took a segment in order is
  // forgotten once its peer was silent for peer_timeout_ns, and one with
  // work poll did not see is activated.
  void sweep_idle(uint64_t now_ns);
  uint64_t sweep_key_ = 0;
  bool sweep_started_ = false;
  uint64_t last_sweep_ns_ = 0;
  void answer_later(Connection& c);
  std::vector<std::unique_ptr<TxMessage>> retired_;
  // Records kept for reuse, cleared, kSpareRecords of each at most.
  std::vector<std::unique_ptr<TxMessage>> spare_messages_;
  std::vector<std::unique_ptr<InboundMessage>> spare_inbound_;
  std::vector<std::unique_ptr<RemoteInbound>> spare_remote_;
  // Nodes of the connections' waits (start_waiting), kept for the next: one
  // from the heap per request or rendezvous send would be an allocation each.
  std::vector<AwaitingMap::node_type> spare_await_nodes_;
  // Spare copy buffers under kMinSpareCopy, by size: kSmallCopy << class
  // (256 bytes to 32 KiB).
  static constexpr size_t kCopyClasses = 8;
  static_assert(kSmallCopy << kCopyClasses == kMinSpareCopy);
  std::vector<std::unique_ptr<uint8_t[]>> spare_class_copies_[kCopyClasses];
  // Copy buffers of retired large messages (an injected send's copy, a
  // recalled read's), kept for the next: a fresh megabyte from the
  // heap costs its page faults every time.  At most kSpareCopyBytes.
  std::vector<std::pair<size_t, std::unique_ptr<uint8_t[]>>> spare_copies_;
  size_t spare_copy_bytes_ = 0;
  OrderedCompletion* filling_ = nullptr;  // finish_pull: where push_recv_completion puts it
  RequestHandler request_handler_;
  RequestPlacer request_placer_;
  PathLimit path_limit_;
  PathLearned path_learned_;
  ReachingPorts reaching_ports_;
  // Path MTU discovery (engine_tx.cc): segments of `c` no larger than
  // `payload` from now on; those in flight that are larger go again, in
  // pieces, as many as the congestion window holds (the rest as repairs).
  void narrow_path(Connection& c, uint32_t payload, uint64_t now_ns);
  // The payload of the next fallback MTU below `payload`, or 0.
  uint32_t fallback_payload(uint32_t payload) const;
  // At a retransmission timeout, before its SACK marks are forgotten:
  // whether the oldest segment's size, not the path, may be what goes
  // unanswered (kProbe: ask the peer with a small frame) or is (kNarrow:
  // narrow to fallback_payload, silent_narrow).
  enum class SilentPath : uint8_t { kNotInQuestion, kProbe, kNarrow };
  SilentPath assess_silent_path(Connection& c);
  void silent_narrow(Connection& c, uint64_t now_ns);
  // What assess_silent_path asks before kNarrow: the oldest segment went
  // this many times, and at this many timeouts in a row a small probe had
  // been answered since the last while the segment had not; and the
  // smallest payload a router's word narrows a connection to (below, it
  // is not believed).
  static constexpr uint8_t kSilentTransmissions = 4;
  static constexpr uint8_t kSilentRounds = 2;
  static constexpr uint32_t kMinPathPayload = 256;
  void emit_pieces(Connection& c, uint32_t seq, const wire::FrameHeader& h, uint64_t now_ns);
  // A piece of a segment (kFlagPiece), receive side (engine_rx.cc).
  void on_piece(Connection& c, const Segment& s, uint64_t now_ns);
  // What this side offers a peer in its handshake: max_payload, or less
  // where path_limit_ says so.
  uint32_t payload_offer(const uint8_t* link) const;
  ControlHandler control_handler_;
  SenderFilter sender_filter_;
  FrameKeeper* frame_keeper_ = nullptr;
  std::vector<Completion> completions_;
  PostedReceives own_posted_;
  PostedReceives* posted_ = &own_posted_;  // own_posted_, or a shared context's
  // FI_EP_DGRAM: each sender's share of the unexpected budget (made with
  // the first unexpected datagram).  Before the records, which point into
  // it: it goes after them.
  std::unique_ptr<DatagramShares> datagram_shares_;
  std::list<UnexpectedMessage> unexpected_;
  // Records of taken unexpected messages, with their buffer when it is
  // small, for the next ones: a stream of small early messages would
  // otherwise cost two allocations and two frees each.  kSpareRecords at most.
  std::list<UnexpectedMessage> spare_unexpected_;
  size_t unexpected_bytes_ = 0;
  size_t outstanding_sends_ = 0;
  size_t response_bytes_ = 0;  // Connection::response_bytes, all connections
  // Requests deferred on all connections (Connection::deferred_requests):
  // at most kMaxDeferredRequests, and kMaxDeferredPerConnection on one;
  // past them a request waits in the stream (window 0) as it did before.
  size_t deferred_requests_ = 0;
  size_t owed_notices_ = 0;  // of every connection's owed_notices
  static constexpr size_t kMaxDeferredRequests = 4096;
  static constexpr size_t kMaxDeferredPerConnection = 256;
  uint64_t last_data_ns_ = 0;
  uint64_t polls_ = 0;     // poll() calls so far (Connection::ack_at_poll)
  uint64_t clock_ns_ = 0;  // the latest time a caller handed in
  // When the stranger-answer budget is whole again (a GCRA clock: each
  // answer moves it one interval later; it may run ahead of clock_ns_ by
  // at most the burst).
  AnswerPace stranger_answers_;
  // Challenges to RESETs that named an unexpected sequence (on_reset).
  static constexpr uint64_t kChallengesPerSecond = 1000;
  static constexpr uint64_t kChallengeBurst = 32;
  AnswerPace challenges_;
  TransportStats stats_;
  TimeoutReport last_timeout_;
};

}  // namespace ofi_dpdk::proto
