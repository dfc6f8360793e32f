// transport_config.h: how an engine is set up (TransportConfig) and what
// it tells of itself: its counters (TransportStats) and the picture of the
// last peer timeout (TimeoutReport).
#pragma once

#include <cstddef>
#include <cstdint>

#include "lib/proto/rtt_histogram.h"
#include "lib/proto/transport_requests.h"

namespace ofi_dpdk::proto {

inline constexpr uint32_t kMaxSprayPaths = 8;

struct TransportConfig {
  // Payload bytes per frame this endpoint sends and accepts; each
  // connection sends at most the smaller of ours and the peer's (HELLO).
  uint32_t max_payload = 1444;
  uint64_t max_msg_size = uint64_t{1} << 30;
  size_t unexpected_bytes = 64u << 20;  // buffered before a receive is posted
  size_t max_outstanding_sends = 1024;  // tx_attr->size
  size_t max_posted_recvs = 1024;       // rx_attr->size
  uint32_t initial_window = 16;         // congestion window at start, segments
  uint64_t min_rto_ns = 2'000'000;
  uint64_t max_rto_ns = 200'000'000;
  uint64_t initial_rto_ns = 10'000'000;
  uint64_t ack_delay_ns = 20'000;
  // Pacing (Engine::pump): a connection whose window, spread over its
  // round trip, lets a full segment leave less often than once in this
  // many nanoseconds sends its new segments that far apart (its window
  // over the round trip, a quarter faster, twice as fast in slow start)
  // instead of in bursts that a shallow queue on the way drops.  Faster
  // connections (memory links, the first round trips) burst as before:
  // a visit comes only every ack_delay_ns / 8.  0: never paced (the
  // default: beside a TCP flow on a drop-tail queue a paced connection
  // loses more frames than the bursting one, and gets less than a third
  // of the link; doc/performance.md, 2026-12-04).
  uint64_t pace_from_ns = 0;
  // Queueing delay (Engine::on_rtt_sample, congestion_delay.cc): a
  // connection whose round trips run more than this many nanoseconds over
  // its base RTT (the lowest of the last kBaseRttLifetimeNs) narrows its
  // window once per round trip, by more the further over, as Swift does.
  // The signal needs no router's help, on raw Ethernet as in UDP.  0: the
  // delay is not read (the default: beside a TCP flow that keeps a
  // drop-tail queue full, a sender that backs off at delay gets less than
  // its share; doc/performance.md, 2026-12-05).  Below the ack delay
  // (ack_delay_ns) a delayed ack alone would read as queueing.
  uint64_t delay_target_ns = 0;
  uint64_t peer_timeout_ns = 5'000'000'000;
  // How long a HELLO goes unanswered before what waits for the connection
  // fails: a peer that has not started yet (ranks of a job start in any
  // order, links come up late) is waited for this long, not peer_timeout.
  uint64_t connect_timeout_ns = 30'000'000'000;
  // A receiver that holds its window at 0 while answering keeps our sends
  // waiting this long at most, then they fail with kErrTimedOut.
  uint64_t stall_timeout_ns = 60'000'000'000;
  // A rendezvous or FI_DELIVERY_COMPLETE send the peer acknowledged waits
  // this long at most for a receive to take it (its pull, its notice),
  // however alive the peer is; then it fails with kErrTimedOut and
  // kProvNotTaken.  0: as long as the peer answers.
  uint64_t delivery_timeout_ns = 60'000'000'000;
  // Connections (peers) this endpoint holds.  A peer that completes a
  // handshake when all are taken evicts, first, the longest-silent
  // connection whose receive half never took a segment in order, else the
  // longest-silent one with nothing in progress, silent for twice the peer
  // timeout; with none such, its frames are dropped (connections_refused).
  size_t max_connections = 4096;
  // Answers to senders we hold no record for (a HELLO_ACK for a HELLO, a
  // RESET for a segment of a connection we do not hold): at most this many
  // at once, and then this many per second.  A flood from made-up senders
  // costs bounded transmit work; a real peer whose answer is held back
  // asks again on its own timer.  Peers with a record are answered at a
  // pace of their own (Engine::kPeerAnswersPerSecond).
  uint32_t stranger_answer_burst = 256;
  uint32_t stranger_answers_per_second = 20'000;
  // Bytes of segments kept ahead of a gap (or while a stalled receive
  // waits), for all connections together; beyond it they are dropped and
  // resent by their sender.  A connection whose pool share is below the
  // others' takes a chunk from the one holding most (engine_rx.cc).
  size_t reorder_bytes = 16u << 20;
  // Segments held ahead of a gap while the stream has not moved for this
  // long are dropped (the sender resends them; its RTO forgets their
  // SACK): a peer that parks segments and goes quiet holds them no longer.
  uint64_t hold_timeout_ns = 1'000'000'000;
  // Responses a connection keeps until the initiator acknowledges them;
  // further requests wait (window 0) until it does.
  size_t max_pending_responses = 64;
  // Bytes of those responses (copied, or lent from a region, which a write
  // may make a copy of) a connection and the endpoint hold before further
  // requests wait: each is exceeded by one response at most (a read of up
  // to max_msg_size taken while below it).
  size_t connection_response_bytes = size_t{16} << 20;
  size_t response_bytes = size_t{64} << 20;
  // Messages of at least this many bytes go by rendezvous: the sender
  // announces them, the receiver pulls the data once a receive takes the
  // announcement, straight into that receive.  An unexpected one costs its
  // record, not its bytes, and nothing is copied twice.  0: never.
  // Off by default here; the provider turns it on (FI_DPDK_RENDEZVOUS_BYTES).
  size_t rendezvous_bytes = 0;
  // Whole messages of at most this many bytes (requests and responses too)
  // that leave for one peer together share a BUNDLE frame (wire.h, bundle.cc);
  // 0: every segment in a frame of its own.
  uint32_t bundle_bytes = 1024;
  // FI_EP_DGRAM (datagram.cc): the engine sends each message as one
  // DATAGRAM frame of at most max_payload bytes, with no connection, no
  // acknowledgement and no retransmission, and takes DATAGRAM frames only.
  bool datagrams = false;
  // Paths a connection spreads its frames over at once (1 to
  // kMaxSprayPaths): frames take them in turn (OutFrame::path, the UDP
  // source port, which routers hash to choose among equal-cost routes), a
  // resent segment goes on the next, and a path that loses a segment is
  // replaced by one the connection has not used (its lane moves).  The
  // receiver's SACK takes the reordering.  1: one path at a time, moved
  // only by a retransmission timeout or a resent HELLO.
  uint32_t spray_paths = 1;
  // Bytes each frame spends between its Ethernet header and ours (the IP
  // and UDP headers of the encapsulation; 0 on our EtherType): with our
  // header, what an MTU holds beyond a frame's payload.  It places the
  // fallback sizes of path MTU discovery (kFallbackMtus).
  uint32_t encap_overhead = 0;
  // Keys tokens and nonces (engine.cc); the provider draws it from the
  // kernel, tests leave it fixed.
  uint64_t token_secret[2] = {0x736f6d6570736575ull, 0x646f72616e646f6dull};
};

// What the last peer timeout saw (Engine::last_timeout): the provider
// logs it, so a user learns which wait ran out and how the connection
// looked, not only that an operation failed with ETIMEDOUT.
struct TimeoutReport {
  enum class Wait : uint8_t {
    kNone,
    kHandshake,    // a HELLO nobody answered within connect_timeout_ns
    kAcknowledge,  // data in flight the peer did not acknowledge
    kResponses,    // requests acknowledged whose answers stopped coming
    kDelivery,     // sends waiting for a receive, the peer silent
    kReceive,      // a message or request the peer stopped sending midway
  };
  Wait wait = Wait::kNone;
  uint64_t peer = 0;         // the connection's key (peer_key)
  uint64_t waited_ns = 0;    // since the wait began (or its last progress)
  uint64_t quiet_ns = 0;     // since the peer was last heard from
  uint32_t in_flight = 0;    // segments sent, not acknowledged
  uint32_t peer_window = 0;  // the window the peer last advertised
  uint64_t rto_ns = 0;
  uint32_t retransmits = 0;  // of the oldest segment in flight
  size_t awaiting = 0;       // requests or sends waiting for an answer
  // The receive half: whether we hold our window closed, the next segment
  // we expect, and segments parked ahead of a gap.
  bool rx_stalled = false;
  uint32_t next_expected = 0;
  uint32_t rx_buffered = 0;
  uint32_t una = 0;  // our oldest unacknowledged segment
};
const char* timeout_wait_text(TimeoutReport::Wait wait);

struct TransportStats {
  uint64_t frames_sent = 0, frames_received = 0, retransmitted = 0, acks_sent = 0, resets_sent = 0,
           duplicates = 0, out_of_window = 0, stale_session = 0, bad_frames = 0,
           stalled_no_buffer = 0, fast_retransmits = 0, timeouts = 0, messages_sent = 0,
           messages_received = 0, peers_failed = 0, requests_served = 0,
           bundled_segments = 0,  // segments sent inside a BUNDLE frame (frames_sent counts frames)
      wrong_key = 0,              // frames with a network key this endpoint was not enabled with
      hellos_sent = 0, hellos_answered = 0,
           connections_opened = 0,   // receive halves opened by a completed handshake
      connections_evicted = 0,       // idle connections dropped to make room
      connections_refused = 0,       // handshakes completed when no room was left
      reorder_full = 0,              // segments dropped: the reorder pool was spent
      bad_tokens = 0,                // frames whose token names no connection we hold
      rendezvous_sent = 0,           // sends announced instead of sent eagerly
      pulls_sent = 0,                // announced messages a receive pulled (or discarded)
      pulls_served = 0,              // pulls answered with a send's data
      held_expired = 0,              // segments held ahead of a gap dropped by hold_timeout_ns
      held_reclaimed = 0,            // held segments dropped for a connection below its share
      sends_refused_peer_share = 0,  // sends refused: their peer holds its share of the budget
      delivery_timeouts = 0,         // sends no receive took within delivery_timeout_ns
      no_memory = 0,                 // allocations that failed (answered or waited, never thrown)
      answers_withheld = 0,          // HELLO_ACKs and RESETs over the stranger_answer_* budget
      // RESETs with a wrong session, connection or token (counted,
      // never answered), and RESETs with the right token that named a
      // sequence we could not have sent: each draws a challenge probe
      // (at most kChallengesPerSecond) instead of a teardown.
      bad_resets = 0, reset_challenges = 0,
           // Connections whose receive half never took a segment in order,
           // forgotten after their peer was silent for peer_timeout_ns (a
           // station that parked a segment ahead of a gap and went quiet).
      unproven_forgotten = 0,
           // AV removals that left a connection alone: another incarnation
           // of the peer holds it now (Engine::drop_peer).
      drops_of_other_incarnations = 0;
  // Timer events: each is a wait the sender's next step sat behind.  On a
  // link that loses nothing, an exchange that keeps answering needs none.
  uint64_t retransmit_timeouts = 0,  // RTOs with the window open (loss assumed)
      tail_loss_probes = 0,          // oldest segment resent after two quiet RTTs
      window_probes = 0,             // a closed window probed (RTO under it, or persist)
      delayed_acks = 0,              // acks that left when ack_delay_ns ran out
      delivery_probes = 0,           // liveness probes while sends await a receive
      path_changes = 0;              // a connection moved to another path (Connection::path)
  // Congestion window cuts by the loss's shape (Engine::on_loss): a loss
  // event's (to 90 %), and its deepening when the losses prove a run of
  // frames, as a full queue drops (to 70 %).  A retransmission timeout's
  // cut is retransmit_timeouts.
  uint64_t window_cuts_loss = 0, window_cuts_deepened = 0;
  // ECN: data segments that came marked CE (a router's queue marked them),
  // acks we sent that echoed marks, echoes our acks brought back, and the
  // window cuts those made (Engine::on_congestion_echo).
  uint64_t congestion_marks_received = 0, congestion_echoes_sent = 0,
           congestion_echoes_received = 0, window_cuts_marks = 0;
  // Window cuts for queueing delay (Engine::on_rtt_sample), the times
  // a connection stopped reading the delay because its cuts did not bring
  // it down (a queue another sender keeps full), and its slowdowns (the
  // window held at two segments to see the path's base).
  uint64_t window_cuts_delay = 0, delay_yields = 0, delay_slowdowns = 0;
  // Calls of a connection's pump that found its next segment waiting for
  // its pace.
  uint64_t paced_waits = 0;
  // Retransmission timeouts whose cut was undone: the peer reported that
  // the segment the timeout resent arrived twice (kFlagDuplicate).
  uint64_t timeout_cuts_undone = 0;
  // Path MTU discovery: connections whose segments were made smaller (a
  // router said the path is narrower, or large segments went unanswered
  // while small frames were), pieces sent of segments cut before, and
  // segments taken whole from their pieces.
  uint64_t path_narrowed_by_icmp = 0, path_narrowed_by_silence = 0, pieces_sent = 0,
           segments_from_pieces = 0;
  // FI_EP_DGRAM: datagrams sent, taken (by a receive or as unexpected),
  // and dropped: no receive and no room in the unexpected budget, or
  // frames of the other kind (a datagram at a reliable endpoint, or the
  // reverse; counted in bad_frames too).
  uint64_t datagrams_sent = 0, datagrams_received = 0, datagrams_dropped = 0;
  // Of those dropped, those whose sender held its share of the budget
  // while half of it was in use (datagram_share.h).
  uint64_t datagrams_over_share = 0;
  // FI_EP_MSG control messages taken (handed to the control handler), and
  // messages dropped because the sender filter refused their sender.
  uint64_t control_messages = 0, refused_messages = 0;
  // Requests taken while this endpoint held its full budget of answers
  // unacknowledged, run once it did not (engine_rma.cc).
  uint64_t requests_deferred = 0;
  // The round trips its connections measured (the samples that feed the
  // smoothed RTT), for their median and tail.
  RttHistogram round_trips;
};

// A pace for answers a sender can ask for: at most `burst` at once, then
// one per `interval_ns`.  (A token bucket kept as the time its tokens are
// spent up to.)
struct AnswerPace {
  uint64_t spent_until_ns = 0;
  bool allow(uint64_t now_ns, uint64_t interval_ns, uint64_t burst) {
    const uint64_t earliest = spent_until_ns > now_ns ? spent_until_ns : now_ns;
    if (earliest - now_ns >= interval_ns * burst) return false;
    spent_until_ns = earliest + interval_ns;
    return true;
  }
};

}  // namespace ofi_dpdk::proto
