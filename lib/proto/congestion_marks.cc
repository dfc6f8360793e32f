// congestion_marks.cc: the transport's response to ECN marks, in the
// spirit of DCTCP (RFC 8257).  A router whose queue builds marks our UDP
// frames CE instead of dropping them (they go ECT(0)); the receiver echoes
// the marks in its acks (kFlagCongestionSeen); the sender narrows its
// window by half the share of its segments acked marked, once per round
// trip.  Marks come before the queue overflows and in proportion to how
// far it is over its mark threshold, so the window settles where the queue
// stays short, without the losses and repairs of a drop-tail queue.  The
// loss response (engine_tx.cc, on_loss) stays for queues that do not mark.
#include <algorithm>
#include <cstdint>

#include "lib/proto/engine_state.h"
#include "lib/proto/seq.h"
#include "lib/proto/transport.h"

namespace ofi_dpdk::proto {

void Engine::note_congestion_mark(Connection& c, uint32_t seq) {
  ++c.marks_received;
  ++stats_.congestion_marks_received;
  if (!c.congestion_unechoed) {
    c.congestion_marked_end = seq + 1;
    // The echo goes with the next pass's ack, not after the ack delay: it
    // then covers few segments besides the marked one.
    c.ack_now = true;
    c.congestion_unechoed = true;
  } else if (seq_ge(seq, c.congestion_marked_end)) {
    c.congestion_marked_end = seq + 1;
  }
}

void Engine::on_congestion_echo(Connection& c, uint32_t newly_acked, bool echoed) {
  c.marks_acked += newly_acked;
  if (echoed) {
    c.marks_marked += newly_acked;
    ++stats_.congestion_echoes_received;
  }
  // A window of data acked: its marked share moves the average (DCTCP's
  // alpha, gain 1/16, in 1/65536 so that small shares count).
  if (seq_ge(c.una, c.marks_window_end)) {
    if (c.marks_acked != 0) {
      const uint32_t share = std::min<uint32_t>(
          static_cast<uint32_t>(uint64_t{c.marks_marked} * 65536 / c.marks_acked), 65536);
      c.marked_share_x65536 = c.marked_share_x65536 - c.marked_share_x65536 / 16 + share / 16;
    }
    c.marks_acked = c.marks_marked = 0;
    c.marks_window_end = c.next_seq;
  }
  // No cut pending: the bound follows una, so that it never falls 2^31
  // behind and reads as ahead.
  if (seq_ge(c.una, c.congestion_cut_until)) c.congestion_cut_until = c.una;
  // One cut per round trip (what was in flight at the cut may still come
  // back marked), and none while a loss event's cut holds (on_loss): the
  // window takes one decrease per round trip for either signal.
  if (!echoed || seq_lt(c.una, c.congestion_cut_until) || seq_lt(c.una, c.recovery_seq)) return;
  const uint32_t window = std::max<uint32_t>(c.cwnd_x256 / 256, 1);
  const uint32_t cut = static_cast<uint32_t>(uint64_t{window} * c.marked_share_x65536 / 131072);
  const uint32_t target = std::max<uint32_t>(window - cut, 2);
  c.ssthresh = target;
  c.cwnd_x256 = std::min(c.cwnd_x256, target * 256);
  c.congestion_cut_until = c.next_seq;
  c.timeout_undo = {};  // a timeout's window is no guide after this cut
  ++c.cuts_marks;
  ++stats_.window_cuts_marks;
}

}  // namespace ofi_dpdk::proto
