// engine_summary.cc: the connections as an operator sees them.
#include <algorithm>
#include <cstring>

#include "lib/proto/engine_state.h"
#include "lib/proto/transport.h"

namespace ofi_dpdk::proto {

size_t Engine::summarize_connections(ConnectionSummary* out, size_t room) const {
  size_t written = 0;
  for (const auto& [key, connection] : connections_) {
    if (written == room) break;
    const Connection& c = *connection;
    ConnectionSummary& s = out[written++];
    std::memcpy(s.peer_mac, c.mac, sizeof s.peer_mac);
    s.peer_queue = c.queue;
    s.transmit = c.tx_state == TxState::kOpen    ? "open"
                 : c.tx_state == TxState::kHello ? "hello"
                                                 : "closed";
    s.receiving = c.rx_open;
    s.cwnd = c.cwnd_x256 / 256;
    s.ssthresh = c.ssthresh;
    s.peer_window = c.peer_window;
    s.in_flight = c.next_seq - c.una;
    s.messages_waiting = static_cast<uint32_t>(c.pending.size());
    s.held_segments = c.rx_buffered;
    s.srtt_ns = c.srtt_ns;
    s.rto_ns = c.rto_ns;
    s.quiet_ns =
        c.last_heard_ns != 0 && clock_ns_ > c.last_heard_ns ? clock_ns_ - c.last_heard_ns : 0;
    s.path = c.path;
    s.cuts_loss = c.cuts_loss;
    s.cuts_marks = c.cuts_marks;
    s.cuts_delay = c.cuts_delay;
    s.base_rtt_ns = c.base_rtt_ns;
    s.slowdowns = c.slowdowns;
    s.marks_received = c.marks_received;
    s.marked_share_x1024 = c.marked_share_x65536 / 64;
    s.cuts_deepened = c.cuts_deepened;
    s.cuts_timeout = c.cuts_timeout;
    s.cuts_undone = c.cuts_undone;
    s.pace_interval_ns = pace_interval(c, config_.pace_from_ns, quiet_poll_ns_);
    s.paced_waits = c.paced_waits;
  }
  return connections_.size();
}

}  // namespace ofi_dpdk::proto
