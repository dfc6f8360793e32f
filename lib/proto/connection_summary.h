// connection_summary.h: what an operator sees of one connection (the
// provider's /ofi_dpdk/connections telemetry), copied out of the engine.
#pragma once

#include <cstdint>

namespace ofi_dpdk::proto {

struct ConnectionSummary {
  uint8_t peer_mac[6] = {};  // the peer's link address (a peer id in UDP)
  uint16_t peer_queue = 0;
  const char* transmit = "";  // "closed", "hello" (handshake asked) or "open"
  bool receiving = false;     // the peer's half toward us is open
  uint32_t cwnd = 0;          // congestion window, segments
  uint32_t ssthresh = 0;
  uint32_t peer_window = 0;       // what the peer's last ack allowed, segments
  uint32_t in_flight = 0;         // segments sent and not acknowledged
  uint32_t messages_waiting = 0;  // messages not wholly acknowledged
  uint32_t held_segments = 0;     // received ahead of a gap
  uint64_t srtt_ns = 0, rto_ns = 0;
  uint64_t quiet_ns = 0;  // since the peer was last heard
  uint8_t path = 0;       // the path (UDP source port choice) in use
  // Congestion window cuts over its life: a loss event's (to 90 %), its
  // deepening when the losses prove a run (to 70 %), a retransmission
  // timeout's (to one segment), and the timeout cuts undone (the peer
  // reported the resent segment arrived twice).
  uint32_t cuts_loss = 0, cuts_deepened = 0, cuts_timeout = 0, cuts_undone = 0;
  uint32_t cuts_marks = 0;          // window cuts for congestion marks (ECN echoes)
  uint32_t marks_received = 0;      // CE-marked segments its receive half took
  uint32_t marked_share_x1024 = 0;  // the moving share of segments acked marked
  uint32_t cuts_delay = 0;          // window cuts for queueing delay
  uint64_t base_rtt_ns = 0;         // the lowest recent RTT sample (congestion_delay.cc)
  uint32_t slowdowns = 0;           // windows held at two segments to see the base
  // Pacing (TransportConfig::pace_from_ns): the time between two full
  // segments now (0: not paced), and the times its pump waited for it.
  uint64_t pace_interval_ns = 0;
  uint64_t paced_waits = 0;
};

}  // namespace ofi_dpdk::proto
