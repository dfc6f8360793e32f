// engine_state.h: the transport engine's own state: what a connection
// holds in each direction, messages in flight and being assembled,
// unexpected messages, and the bookkeeping of requests and rendezvous.
// Only lib/proto's sources (and tests that look inside an engine) include
// it; the engine's API is transport.h.
#pragma once

#include <sys/uio.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <list>
#include <memory>
#include <unordered_map>
#include <utility>
#include <vector>

#include "lib/proto/datagram_share.h"
#include "lib/proto/owned_ring.h"
#include "lib/proto/transport.h"
#include "lib/proto/wire.h"

namespace ofi_dpdk::proto {

// Posted receives, unexpected messages and reassembly for one endpoint.
// Records of each kind (sends, received messages, unexpected messages) an
// engine keeps for reuse.
inline constexpr size_t kSpareRecords = 256;

struct UnexpectedMessage {
  Sender sender;
  uint64_t connection_key = 0;  // the connection it came on (delivery notices)
  bool tagged = false;
  uint64_t tag = 0;
  bool has_data = false;
  uint64_t cq_data = 0;
  size_t length = 0;
  size_t received = 0;
  std::unique_ptr<uint8_t[]> bytes;
  size_t bytes_capacity = 0;  // kept with a spare record when small (new_unexpected)
  bool complete = false;
  bool claimed = false;  // a receive waits for it to arrive whole: claim
  RecvRequest claim;
  // fi_tagged(3) FI_PEEK|FI_CLAIM reserved it for a later FI_CLAIM receive
  // with this context; no other receive or peek sees it.
  bool reserved = false;
  void* reserved_for = nullptr;
  bool discarded = false;  // FI_DISCARD while still arriving: dropped when whole
  // A rendezvous announcement (kFlagRendezvous): whole on arrival, no bytes;
  // `length` is the data's, which the receive that takes it pulls from the
  // sender (rendezvous.cc).  msg_id, session and conn name it there.
  bool rendezvous = false;
  // kFlagDeliveryNotice: the sender waits to hear when a receive takes it,
  // on the connection (peer session, rx_conn) it came on.
  bool notify = false;
  uint64_t requests_before = 0;  // Connection::requests_deferred when it came
  uint32_t msg_id = 0;
  uint32_t session = 0;
  uint16_t conn = 0;
  size_t charged = 0;  // what it holds of the unexpected budget (unexpected_cost)
  ShareMark share;     // a datagram's: what it holds of its sender's share (datagram.cc)
};

// What an unexpected message holds of the budget: its bytes and its record
// (the record, its list node and two allocations' headers).  A stream of
// tiny messages is then bounded in memory, not only in payload: 8 MiB of
// 64-byte messages would otherwise be some 60 MiB of records.
inline constexpr size_t unexpected_cost(size_t length) {
  return length + sizeof(UnexpectedMessage) + 64;
}

struct InboundMessage {
  bool to_user = false;
  Sender sender;
  RecvRequest recv;  // when to_user
  size_t capacity = 0;
  std::list<UnexpectedMessage>::iterator unexpected;  // when !to_user
  size_t length = 0;
  size_t received = 0;
  uint32_t msg_id = 0;
  bool tagged = false;
  uint64_t tag = 0;
  bool has_data = false;
  uint64_t cq_data = 0;
  bool notify = false;           // kFlagDeliveryNotice
  uint64_t requests_before = 0;  // Connection::requests_deferred when it came
  bool discard = false;          // from a sender the filter refuses: placed nowhere

  // As new, for the next message, but for recv.iov past recv.iov_count,
  // which every use writes before it reads (see TxMessage::recycle).
  void recycle() {
    to_user = false;
    sender = {};
    recv.iov_count = 0;
    recv.context = nullptr;
    recv.user_flags = 0;
    recv.tagged = false;
    recv.tag = 0;
    recv.ignore = 0;
    recv.any_source = true;
    recv.source_key = 0;
    recv.match_auth_key = false;
    recv.auth_key = 0;
    recv.group = 0;
    recv.completion = true;
    recv.multi.reset();
    capacity = 0;
    unexpected = {};
    length = 0;
    received = 0;
    msg_id = 0;
    tagged = false;
    tag = 0;
    has_data = false;
    cq_data = 0;
    notify = false;
    requests_before = 0;
    discard = false;
  }
};
// A field added to either must be reset in InboundMessage::recycle, then
// the sizes here (those of LP64) updated.
static_assert(sizeof(void*) != 8 || sizeof(RecvRequest) == 240,
              "RecvRequest changed: reset the new field in InboundMessage::recycle");
static_assert(sizeof(void*) != 8 || sizeof(InboundMessage) == 352,
              "InboundMessage changed: reset the new field in InboundMessage::recycle");

// What a receive reports of an unexpected message (receiver.cc).
InboundMessage view_of(const UnexpectedMessage& u);
size_t capacity_of(const RecvRequest& r);

// Set on a response that sends a region's bytes from the region itself
// (Response::lent_bytes): counts itself in Engine::lent_out_ for as long as
// the record holds them, however the record ends (acknowledged, recalled,
// failed with its connection), so a writer can tell at a glance that
// nothing is lent.
class LentMark {
 public:
  LentMark() = default;
  LentMark(const LentMark&) = delete;
  LentMark& operator=(LentMark&& other) noexcept {
    clear();
    counter_ = std::exchange(other.counter_, nullptr);
    return *this;
  }
  ~LentMark() { clear(); }
  void set(size_t* counter) {
    clear();
    counter_ = counter;
    ++*counter_;
  }
  void clear() {
    if (counter_ != nullptr) --*counter_;
    counter_ = nullptr;
  }
  explicit operator bool() const { return counter_ != nullptr; }

 private:
  size_t* counter_ = nullptr;
};

struct TxMessage {
  wire::Opcode opcode() const {
    if (request.request) return wire::Opcode::kRequest;
    if (response) return wire::Opcode::kResponse;
    return request.tagged ? wire::Opcode::kTagged : wire::Opcode::kMsg;
  }
  // Someone waits for the ack of its last segment: a completion or
  // counter, a response's budget, a request's or control message's
  // sequel.  A send nobody hears of (fi_inject) waits for nothing, and
  // its ack may ride the receiver's next ack or go after its ack delay.
  bool ack_awaited() const {
    return request.completion || request.request || request.control || request.internal ||
           response || rendezvous;
  }
  bool response = false;  // answers request response_to, status in cq_data
  LentMark lent;          // a response sent from a region (iov[0], Response::lent_bytes)
  uint32_t response_to = 0;
  iovec iov[kMaxIov];
  size_t iov_count;
  std::unique_ptr<uint8_t[]> copy;  // inject: owned bytes
  size_t copy_capacity = 0;         // the copy buffer's size (>= length)
  size_t length;
  SendRequest request;
  uint32_t msg_id;
  // What the stream carries: `length` bytes, or for a rendezvous
  // announcement and a pull only their 16-byte body.
  size_t wire_length = 0;
  uint16_t extra_flags = 0;  // kFlag* every segment of it carries
  bool inline_body = false;  // the payload is `body`, not iov or copy
  // Room for a small inject and for an atomic's request (its 40-byte
  // header and up to 24 bytes of operands): no copy buffer taken and
  // given back for either.
  uint8_t body[64];
  // A send of rendezvous_bytes or more: announced, and its data sent from
  // `iov` once the receiver pulls it; meanwhile it waits in
  // Connection::awaiting_delivery.
  bool rendezvous = false;
  // A response that answers a pull: the send whose data it carries, which
  // completes when this response does.
  std::unique_ptr<TxMessage> pulled_send;
  // A pull (a request of ours): the receive its response's data goes to,
  // and what the announcement said of the message; none when discarding.
  std::unique_ptr<InboundMessage> pull;
  // A response of ours: the bytes it holds of the connection's and the
  // endpoint's response budget (TransportConfig::response_bytes).
  size_t response_charge = 0;
  // A send that waits for the receiver (rendezvous, FI_DELIVERY_COMPLETE):
  // counted in Connection::receiver_waits until it completes, and since
  // when it waits in awaiting_delivery (delivery_timeout_ns).
  bool waits_for_receiver = false;
  bool unanswered_request = false;  // counted in Connection::requests_unanswered
  uint64_t waiting_since_ns = 0;
  size_t next_offset = 0;  // bytes cut into segments so far
  uint32_t segments_unacked = 0;
  bool fully_segmented = false;

  // As new, for the next message, but for the arrays every use writes
  // before it reads: iov up to iov_count, body when inline_body, the
  // request's response_iov up to response_iov_count.  (Clearing the whole
  // record, ~500 bytes, cost ~70 instructions a message.)
  void recycle() {
    response = false;
    lent.clear();
    response_to = 0;
    iov_count = 0;
    copy.reset();
    copy_capacity = 0;
    length = 0;
    request.iov = nullptr;
    request.iov_count = 0;
    request.context = nullptr;
    request.user_flags = 0;
    request.tagged = false;
    request.tag = 0;
    request.has_data = false;
    request.cq_data = 0;
    request.copy = false;
    request.copy_header = false;
    request.completion = true;
    request.request = false;
    request.response_iov_count = 0;
    request.internal = false;
    request.delivery_complete = false;
    request.group = 0;
    request.control = false;
    msg_id = 0;
    wire_length = 0;
    extra_flags = 0;
    inline_body = false;
    rendezvous = false;
    pulled_send.reset();
    pull.reset();
    response_charge = 0;
    waits_for_receiver = false;
    unanswered_request = false;
    waiting_since_ns = 0;
    next_offset = 0;
    segments_unacked = 0;
    fully_segmented = false;
  }
};
// A field added to either must be reset in TxMessage::recycle, then the
// sizes here (those of LP64) updated.
static_assert(sizeof(void*) != 8 || sizeof(SendRequest) == 240,
              "SendRequest changed: reset the new field in TxMessage::recycle");
static_assert(sizeof(void*) != 8 || sizeof(TxMessage) == 584,
              "TxMessage changed: reset the new field in TxMessage::recycle");

struct TxSlot {  // a segment in flight
  TxMessage* message = nullptr;
  uint32_t offset = 0;
  uint16_t length = 0;
  uint16_t flags = 0;
  uint64_t first_sent_ns = 0;
  uint64_t last_sent_ns = 0;
  uint8_t transmissions = 0;
  bool sacked = false;
  // The frame its first transmission went in (Engine::frames_cut_): the
  // entries of one lost BUNDLE are one loss, not several (on_loss).
  uint32_t frame = 0;
  // The lane its last transmission took (spraying): a loss moves it.
  uint8_t lane = 0;
};

// A segment kept ahead of a gap, in one chunk of the engine's reorder pool
// (engine_rx.cc): its header, and its payload either in the received frame,
// kept through the FrameKeeper, or copied right after this struct.
struct HeldSegment {
  wire::FrameHeader header;
  void* frame;             // the kept frame; nullptr: the payload was copied
  const uint8_t* payload;  // in the kept frame
  // A segment still arriving in pieces (wire::kFlagPiece): the byte ranges
  // of it copied in so far, disjoint and in order.  A piece that would need
  // more ranges than this is dropped (the sender resends every piece).
  static constexpr uint8_t kMaxPieceRanges = 8;
  struct PieceRange {
    uint16_t begin, end;
  };
  bool in_pieces = false;
  uint8_t piece_ranges = 0;
  PieceRange pieces[kMaxPieceRanges];
  bool whole() const { return !in_pieces; }
};

// The transmit half's state: data flows only once a HELLO handshake gave us
// the token the peer expects for our connection tx_conn.
enum class TxState : uint8_t {
  kClosed,  // no connection yet: the next message sends a HELLO
  kHello,   // HELLO sent with hello_nonce, waiting for the HELLO_ACK
  kOpen,    // tx_token known: segments flow
};

struct InboundMessage;

// Receive completions (and barriers) a connection holds in recv_order, at
// most.
inline constexpr size_t kMaxOrderedCompletions = 4096;

// A receive completion waiting for its turn (Connection::recv_order): a
// pull's, until its data is in, or one that came after it; or a barrier,
// which completes nothing and holds what follows it until the requests
// deferred before it have run (Engine::hold_behind_deferred).
struct OrderedCompletion {
  uint32_t pull_id = 0;  // the pull's msg_id; 0 for a completion made ready
  bool ready = false;
  bool barrier = false;
  uint64_t requests_before = 0;  // a barrier's: Connection::requests_deferred then
  bool wanted = true;            // the receive asked for its completion (else only a release shows)
  std::shared_ptr<MultiRecv> multi;  // settled when it leaves (Engine::settle_recv)
  Completion done{};
};

struct Connection {
  uint64_t key = 0;
  uint8_t mac[6] = {};
  uint16_t queue = 0;
  // In Engine::active_: poll visits it (Engine::activate).  A connection
  // with nothing for a timer or the next pass to do leaves the list, so a
  // table full of idle or abandoned connections costs a pass nothing.
  bool active = false;
  // Whether the eager HELLO of a receive half just opened is all that is
  // out (receive_half_for): nothing waits for it, so it is not resent.
  bool hello_unasked = false;
  // The peer's address as messages name their sender: (mac, src_ep_queue),
  // which differs from key for a context of a scalable endpoint.
  uint64_t source_key = 0;
  uint32_t auth_key = 0;      // the network key this connection's frames carry
  uint32_t peer_session = 0;  // 0: not known yet
  uint64_t restarted_ns = 0;  // when peer_session last gave way to another (0: never)
  uint16_t tx_conn = 0;       // our transmit connection's number (wire conn)
  // Transmit side.
  TxState tx_state = TxState::kClosed;
  uint64_t hello_nonce = 0;     // kHello: what the HELLO_ACK must echo
  uint64_t tx_token = 0;        // kOpen: what our segments carry
  uint32_t tx_max_payload = 0;  // kOpen: segment size agreed with the peer
  uint32_t payload_offer = 0;   // what our handshakes offer (Engine::payload_offer)
  uint32_t next_seq = wire::kInitialSeq;
  uint32_t una = wire::kInitialSeq;  // oldest unacknowledged
  uint32_t next_msg_id = 1;
  OwnedRing<TxMessage> pending;  // not fully acked, in order
  size_t pending_cut = 0;        // index of the first message not fully cut
  std::unique_ptr<TxSlot[]> tx_slots;
  uint32_t cwnd_x256 = 0;  // congestion window in 1/256 segments
  uint32_t ssthresh = kMaxWindow;
  uint32_t peer_window = kMaxWindow;
  uint64_t srtt_ns = 0, rttvar_ns = 0, rto_ns = 0;
  // Pacing (Engine::pump): when the next new segment may leave, and the
  // calls of pump that found the next one waiting for it.
  uint64_t pace_next_ns = 0;
  uint64_t paced_waits = 0;
  // Which of the paths to the peer its frames take (OutFrame::path): the
  // UDP encapsulation makes it the source port, which routers hash to pick
  // among equal-cost routes.  A retransmission timeout, or a HELLO resent,
  // moves to the next: the path may be what lost the frames.
  uint8_t path = 0;
  // With spraying (TransportConfig::spray_paths > 1): each lane's path,
  // the lane of the next frame, and the next path never used.
  uint8_t lane_paths[kMaxSprayPaths] = {};
  uint8_t next_lane = 0;
  uint8_t fresh_path = 0;
  bool lanes_ready = false;
  // The source ports the peer's HELLO_ACK named (reaching_ports), or none
  // (count 0).  Path p takes port (p + p / n) mod n of the n: consecutive
  // paths, and paths n apart (a sprayed lane's move to a fresh path),
  // take different ones.  With as many lanes as ports, a moved lane shares
  // a port with another.
  uint16_t peer_ports[4] = {};
  uint8_t peer_port_count = 0;
  uint16_t source_port(uint8_t for_path) const {
    if (peer_port_count == 0) return 0;
    return peer_ports[(for_path + for_path / peer_port_count) % peer_port_count];
  }
  uint32_t last_ack = 0;
  uint32_t dupacks = 0;
  uint32_t recovery_seq = 0;  // no new window cut until una passes this
  // Segments in flight the peer reported holding (SACK): they left the
  // network, so they count against the window no more (on_ack, pump).
  uint32_t sacked_in_flight = 0;
  // The loss event recovery_seq bounds: the window before it, the cut it
  // took (0 none yet, 1 a lone loss's, 90 %; 2 a run's or an RTO's), and
  // its last lost segment and frame (engine_tx.cc, on_loss).
  uint32_t cwnd_before_loss = 0;
  uint32_t loss_cut = 0;
  uint32_t last_lost_seq = 0;
  uint32_t last_lost_frame = 0;
  // Window cuts by cause, over the connection's life (telemetry): a loss
  // event's first (to 90 %), its deepening when the losses prove a run
  // (to 70 %), a retransmission timeout's (to one segment).
  uint32_t cuts_loss = 0, cuts_deepened = 0, cuts_timeout = 0;
  // Congestion marks (ECN, in the spirit of DCTCP): the receive half notes
  // a CE-marked segment until a frame carrying its ack echoes it
  // (kFlagCongestionSeen; only an ack past the marked segment echoes it,
  // so that the echo advances the sender's una).  The transmit half counts, per window of data,
  // the segments acked and those acked with the echo; when una passes the
  // window's end, the marked share updates marked_share_x65536 (a moving
  // average, gain 1/16; it starts at 1 as DCTCP's), and the first echo of a
  // window cuts the window by half that share, once per round trip
  // (congestion_cut_until).  Marks seen and cuts they made, over the
  // connection's life.
  bool congestion_unechoed = false;
  uint32_t congestion_marked_end = 0;  // the seq after the last marked segment
  uint32_t marks_received = 0;
  uint32_t marked_share_x65536 = 65536;
  uint32_t marks_window_end = wire::kInitialSeq;
  uint32_t marks_acked = 0, marks_marked = 0;
  uint32_t congestion_cut_until = wire::kInitialSeq;
  uint32_t cuts_marks = 0;
  // Queueing delay (congestion_delay.cc): the lowest RTT sample and when
  // it was last lowered (renewed when older than kBaseRttLifetimeNs), and
  // the window cuts the delay over it made.
  uint64_t base_rtt_ns = 0, base_rtt_at_ns = 0;
  uint32_t cuts_delay = 0;
  // Since a sample last came within the target: the queueing delay at
  // the last cut, when the cuts in a row after which it did not fall
  // began and how many they are, the window before the first of those,
  // and whether the delay is ignored until a sample comes within the
  // target (a queue another sender keeps full).
  uint64_t delay_at_cut_ns = 0, vain_since_ns = 0;
  uint16_t delay_vain_cuts = 0;
  uint32_t window_before_vain = 0;
  bool delay_ignored = false;
  // Slowdowns (congestion_delay.cc): the window held at two segments until
  // slowdown_end_ns (0: none running), the window it gives back, the
  // lowest sample it saw, when the last one ended, how many there were,
  // and the loss and timeout cuts before the one running (one since: no
  // window is given back).
  uint64_t slowdown_end_ns = 0, slowdown_lowest_ns = 0, slowdown_ended_ns = 0;
  uint32_t window_before_slowdown = 0, slowdowns = 0, cuts_before_slowdown = 0;
  // What undoes a retransmission timeout's cut when it was needless: the
  // original segment was late, not lost (a descheduled peer, a queue that
  // held it).  The first repair of a segment sent once arms it (a tail
  // loss probe's or the timeout's, emit_segment); the timeout keeps the
  // window, threshold and RTO it cut (poll_connection).  If the peer then
  // reports as many extra copies of that segment as we resent
  // (kFlagDuplicate), every copy arrived, the original too, and on_ack
  // puts them back.  A loss cut since disarms it.
  struct TimeoutUndo {
    bool armed = false;
    bool cut_saved = false;
    uint32_t seq = 0;              // the segment repaired
    uint16_t retransmissions = 0;  // copies of it resent since armed
    uint16_t reported = 0;         // extra copies the peer reported
    uint32_t cwnd_x256 = 0;        // before the timeout's cut
    uint32_t ssthresh = 0;
    uint64_t rto_ns = 0;
  } timeout_undo;
  uint32_t cuts_undone = 0;      // timeout cuts undone, over the connection's life
  uint64_t rto_deadline_ns = 0;  // 0: timer off
  uint8_t probes = 0;            // tail loss probes since the ack last advanced
  uint64_t last_heard_ns = 0;    // last frame that proved it came from the peer
  AnswerPace answers;            // HELLO_ACKs and RESETs to it (Engine::may_answer)
  // Path MTU discovery by silence (Engine::assess_silent_path): when a
  // retransmission timeout last asked the peer, with a small probe,
  // whether it is there while a large oldest segment goes unanswered (0:
  // none since una last moved), at how many timeouts since such a probe
  // had been answered and the segment still had not, and when the peer's
  // last pure ACK came (what a probe draws: a peer that hears nothing of
  // ours sends none, whatever data of its own it sends).
  uint64_t size_probe_ns = 0;
  uint8_t size_probes_answered = 0;
  uint64_t last_pure_ack_ns = 0;
  uint64_t waiting_since_ns = 0;  // first unanswered send (or HELLO)
  uint64_t stalled_since_ns = 0;  // the peer's window went to 0 (0: open)
  // Receive side: open once the peer proved its handshake (a segment with
  // the token our HELLO_ACK granted).
  bool rx_open = false;
  uint16_t rx_conn = 0;   // the peer's connection we receive on
  uint64_t rx_token = 0;  // the token its segments carry
  // Counts receive halves closed: a token is granted for one generation,
  // so a segment of a closed connection cannot open it again.  The last
  // closed connection, whose token must not pass as one of the generation
  // before (receive_half_for).
  uint32_t rx_gen = 0;
  uint32_t closed_session = 0;
  uint16_t closed_conn = 0;
  uint32_t next_expected = wire::kInitialSeq;
  uint64_t rx_progress_ns = 0;               // a segment was last taken in order
  std::unique_ptr<HeldSegment*[]> rx_slots;  // kMaxWindow, by seq; null: absent
  uint32_t rx_buffered = 0;
  uint64_t held_since_ns = 0;              // rx_buffered last went from 0 to 1
  InboundMessage* inbound = nullptr;       // message being assembled
  struct RemoteInbound* remote = nullptr;  // or request / response being assembled
  // Requests taken whole while our answers to this peer filled a budget
  // (responses_full), run in arrival order once they do not: the stream
  // goes on meanwhile, since the acks and answers that free the budget may
  // be behind the next request in it (engine_rma.cc).
  std::deque<struct RemoteInbound*> deferred_requests;
  uint64_t requests_deferred = 0;  // ever pushed on deferred_requests
  uint64_t deferred_done = 0;      // of those, run or dropped
  // Delivery notices of messages a receive took while our budget was full
  // or requests deferred before the message had not run: sent, in order,
  // once neither holds (Engine::notice_delivery).  The message was taken,
  // not left to stop the stream the budget's acks come on.
  struct OwedNotice {
    uint32_t msg_id;
    uint64_t requests_before;  // requests_deferred when the message came
  };
  std::deque<OwedNotice> owed_notices;
  // Requests fully acknowledged that wait for their response, by msg_id.
  std::unordered_map<uint32_t, std::unique_ptr<TxMessage>> awaiting_response;
  uint64_t awaiting_since_ns = 0;  // last progress of the responses we wait for
  // FI_DELIVERY_COMPLETE sends fully acknowledged that wait for the
  // receiver's delivery notice, by msg_id: as long as the receiver answers
  // our kFlagAckRequest probes, however long its application takes.
  std::unordered_map<uint32_t, std::unique_ptr<TxMessage>> awaiting_delivery;
  uint64_t probe_sent_ns = 0;
  bool rx_stalled = false;         // advertised window 0 (set_stalled)
  uint32_t responses_pending = 0;  // our responses the initiator has not acked
  size_t response_bytes = 0;       // what they hold (TxMessage::response_charge)
  // Our sends to this peer that wait for its receives (rendezvous, delivery
  // notices), queued or acknowledged: at most half the endpoint's budget.
  uint32_t receiver_waits = 0;
  // Our requests to this peer not answered (or failed) yet: at most what
  // the peer can defer (Engine::kMaxDeferredPerConnection), so that a
  // peer whose answer budget is full never has to stop its stream for the
  // next request (Engine::send).
  uint32_t requests_unanswered = 0;
  uint64_t next_delivery_check_ns = 0;  // poll's next look for waits past delivery_timeout_ns
  uint32_t ack_owed = 0;                // segments received since our last ack
  uint64_t ack_due_ns = 0;
  bool ack_now = false;
  // Extra copies of a whole segment of the peer's that arrived after we
  // had it, since the last ACK (0: none): the next ACK reports them
  // (kFlagDuplicate), so that a sender whose timeout resent it learns
  // whether its original arrived.  Copies of another segment replace them.
  uint32_t duplicate_seq = 0;
  uint16_t duplicate_copies = 0;
  // An ack owed for a whole message (or one its sender asked for at once,
  // kFlagAckNow): sent by the poll numbered this (Engine::polls_), the one
  // of the progress pass after the message's, unless a data frame to the
  // peer carries it first.  A request or message answered by the
  // application (a pingpong, an RPC) then costs one frame each way, not
  // two.  0: none deferred.
  uint64_t ack_at_poll = 0;
  bool answer_listed = false;  // in Engine::answer_due_
  // Receive completions of this peer's messages leave in the order the
  // messages were taken: while a pull is out, later ones queue behind it.
  std::vector<OrderedCompletion> recv_order;  // empty (no allocation) unless a pull is out
  uint32_t pulls_out = 0;                     // our pulls to this peer not finished
};

// What a connection assembles when its stream carries a request or a
// response rather than a message (engine_rma.cc).
struct RemoteInbound {
  bool is_response = false;
  uint32_t msg_id = 0;
  size_t length = 0;
  size_t received = 0;
  std::unique_ptr<uint8_t[]> bytes;  // request: its bytes (its head when placed), for the handler
  size_t capacity = 0;               // request: the bytes buffer's size (a spare's may be larger)
  size_t head = 0;                   // request: bytes kept in `bytes` (length, unless placed)
  uint8_t* placed = nullptr;         // request: where the bytes after the head go (Placement)
  size_t charged = 0;                // request: bytes of the unexpected budget it holds
  bool oversize = false;             // request: above the budget, consumed and refused
  bool no_memory = false;            // request: no buffer to be had, consumed and refused
  bool region_gone = false;          // request: its placement's region closed: consumed, refused
  bool pull = false;                 // request: a pull (kFlagPull), served by the engine
  TxMessage* request = nullptr;      // response: the request it answers (or none)
  int status = 0;                    // response: its status
};

// (Inline: a check at the end of each send and data frame.)
inline bool Engine::settled(const Connection& c) const {
  // (All of pending cut: as pump asks it.)
  return !c.ack_now && c.ack_at_poll == 0 &&
         (c.pending.empty() ||
          (c.tx_state == TxState::kOpen && c.pending.back()->fully_segmented)) &&
         c.rx_buffered == 0 && c.inbound == nullptr && c.remote == nullptr &&
         c.deferred_requests.empty() && c.owed_notices.empty() && !c.rx_stalled &&
         c.recv_order.empty() && c.pulls_out == 0;
}

// The time between two full segments of `c` when it is paced, or 0 when
// it is not (TransportConfig::pace_from_ns): its window spread over its
// smoothed round trip, a quarter faster than that (an ack's worth of
// slack, as Linux paces TCP), twice as fast in slow start so that the
// window can still double each round trip.  Not below `visit_every_ns`
// either: visits that far apart could only send it in pairs, slower than
// its window.
inline uint64_t pace_interval(const Connection& c, uint64_t pace_from_ns, uint64_t visit_every_ns) {
  if (pace_from_ns == 0 || c.srtt_ns == 0) return 0;
  const uint64_t gain_x4 = c.cwnd_x256 / 256 < c.ssthresh ? 8 : 5;
  const uint64_t interval = c.srtt_ns * 256 * 4 / (std::max<uint64_t>(c.cwnd_x256, 256) * gain_x4);
  return interval >= std::max(pace_from_ns, visit_every_ns) ? interval : 0;
}

}  // namespace ofi_dpdk::proto
