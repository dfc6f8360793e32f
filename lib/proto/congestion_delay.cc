// congestion_delay.cc: the transport's response to queueing delay, in the
// spirit of Swift (Kumar et al., SIGCOMM 2020).  A queue that builds on the
// way lengthens every round trip before it drops anything, and no router
// has to mark: the sender keeps the lowest RTT it measured as the path's
// own (the base RTT) and reads what a sample has over it as queueing.
// Over the target (TransportConfig::delay_target_ns) the window narrows,
// once per round trip, by a share that grows with how far over the round
// trip is, so the queue settles near the target instead of at its limit.
// Marks (congestion_marks.cc) and loss (engine_tx.cc, on_loss) keep their
// own responses; the three share one cut per round trip.
//
// A sender that backs off at delay loses the queue to one that backs off
// only at loss (a TCP flow fills a drop-tail queue whatever we do), and
// would be starved.  A cut that works shows in the next round trip's
// delay; when kVainCutsBeforeYielding cuts in a row, a round trip apart,
// left the delay where it was, far over the target, for longer than the
// others' slowdowns take to show (below), the queue is not one this
// connection can drain: those cuts are undone, the window opens as at a
// start, and the delay is ignored (loss alone answers, as the other
// sender's does) until a sample comes within the target again.
//
// The base is only as good as the emptiest queue a connection has seen.
// One that starts while others keep the queue at their target takes that
// queue for its path, never cuts, and holds it there while the others cut
// to nothing and end by yielding to it (the latecomer of delay-based
// control; eight senders into one link kept 7-9 ms queued, the yields'
// cascade).  So a connection slows down now and then, as LEDBAT++ and
// BBR's ProbeRTT do: its window held at two segments for up to two round
// trips, long enough for what it had queued to leave and a sample to show
// the path without it (one within an eighth of the base ends it sooner).  The first comes where
// slow start overshoots the target (so every connection starts from a base seen after the others'
// first overshoot drained); after that one comes kSlowdownEveryRoundTrips
// round trips of base plus target after the base was last lowered or the
// last slowdown ended.  A latecomer's slowdown lets the others see a
// lower base and its own too; connections whose bases a slowdown lowers
// come due together after, and their next slowdowns coincide.  The cost:
// one round trip in kSlowdownEveryRoundTrips at a window of two, about 4 %
// of a lone connection's rate at a bottleneck (test_incast.cc).
#include <algorithm>
#include <cstdint>

#include "lib/proto/engine_state.h"
#include "lib/proto/seq.h"
#include "lib/proto/transport.h"

namespace ofi_dpdk::proto {
namespace {

// How long the lowest sample stands for the path: a route that became
// longer is learned this late (a slowdown's lowest sample replaces it
// then, or without a delay target the next sample), and a queue that never
// drains in that long is taken for the path.  TCP's delay-based
// controllers keep their minimum about as long (Vegas for the
// connection's life, BBR 10 s).
constexpr uint64_t kBaseRttLifetimeNs = 10'000'000'000;
// Swift's decrease: by beta times the share of the round trip that is over
// the target, at most max_mdf of the window at once (its paper's 0.8 and
// 0.5, in 1/65536).
constexpr uint64_t kDelayBetaX65536 = 52429;
constexpr uint64_t kMaxDecreaseX65536 = 32768;
// Cuts in a row after which the delay, at more than twice the target, fell
// by less than an eighth before the delay is ignored, and the round trips
// (of base plus target) the row must last: several slowdowns' worth, so
// that senders that read the delay too have each had one and learned
// their base.  A queue this connection fills itself falls after each cut
// (the first round trips' overshoot drains over several); one that
// another sender keeps full does not.
// And never shorter than kMinVainRowNs: round trips of a low target are
// a few hundred microseconds, shorter than a busy host's scheduler keeps
// a sender from running, and a row that short took a stalled neighbour's
// queue for a stranger's (four and eight senders at a 50 us target all
// yielded within a second and ended at the queue's limit).  Waiting costs
// little beside a loss-based flow, which holds its queue for seconds.
constexpr uint16_t kVainCutsBeforeYielding = 4;
constexpr uint64_t kVainRoundTripsBeforeYielding = 48;
constexpr uint64_t kMinVainRowNs = 100'000'000;
// Round trips between slowdowns (above).  Fewer cost a lone connection
// more; more leave eight senders into one link unfair (Jain's index 0.96
// at 16, 0.90 at 24, test_incast.cc).
constexpr uint64_t kSlowdownEveryRoundTrips = 16;

// The round trip of a connection whose queue stands at the target.
uint64_t loaded_rtt(const Connection& c, uint64_t target) {
  return c.base_rtt_ns + target;
}

void start_slowdown(Connection& c, uint64_t rtt_ns, uint64_t now_ns) {
  c.window_before_slowdown = std::max<uint32_t>(c.cwnd_x256 / 256, 2);
  c.cwnd_x256 = 2 * 256;
  c.ssthresh = 2;
  // Two round trips as long as this one at most: one for what we had
  // queued to leave, one for a sample sent after it.
  c.slowdown_end_ns = now_ns + 2 * rtt_ns;
  c.slowdown_lowest_ns = UINT64_MAX;
  c.cuts_before_slowdown = c.cuts_loss + c.cuts_timeout;
  ++c.slowdowns;
}

void end_slowdown(Connection& c, uint64_t now_ns) {
  // The first ends slow start's overshoot: half the window it reached
  // comes back.  Later ones give back all of it, unless a loss or a
  // timeout cut it since.
  const uint32_t back = c.slowdowns == 1 ? std::max<uint32_t>(c.window_before_slowdown / 2, 2)
                                         : c.window_before_slowdown;
  if (c.cuts_loss + c.cuts_timeout == c.cuts_before_slowdown) {
    c.cwnd_x256 = std::max(c.cwnd_x256, back * 256);
    c.ssthresh = std::max(c.ssthresh, back);
  }
  c.slowdown_end_ns = 0;
  c.slowdown_ended_ns = now_ns;
  if (now_ns - c.base_rtt_at_ns > kBaseRttLifetimeNs && c.slowdown_lowest_ns != UINT64_MAX) {
    c.base_rtt_ns = c.slowdown_lowest_ns;
    c.base_rtt_at_ns = now_ns;
  }
}

}  // namespace

void Engine::on_rtt_sample(Connection& c, uint64_t rtt_ns, uint64_t now_ns) {
  const uint64_t target = config_.delay_target_ns;
  const bool lower = c.base_rtt_ns == 0 || rtt_ns < c.base_rtt_ns;
  if (lower || (target == 0 && now_ns - c.base_rtt_at_ns > kBaseRttLifetimeNs)) {
    c.base_rtt_ns = rtt_ns;
    c.base_rtt_at_ns = now_ns;
  }
  if (target == 0) return;
  if (c.slowdown_end_ns != 0) {
    // Its samples only teach the base; one near it says our queue drained.
    c.slowdown_lowest_ns = std::min(c.slowdown_lowest_ns, rtt_ns);
    if (now_ns >= c.slowdown_end_ns || rtt_ns <= c.base_rtt_ns + c.base_rtt_ns / 8)
      end_slowdown(c, now_ns);
    return;
  }
  if (lower) return;
  const uint64_t queued = rtt_ns - c.base_rtt_ns;
  const uint64_t round_trip = loaded_rtt(c, target);
  const uint64_t looked_at = std::max(c.base_rtt_at_ns, c.slowdown_ended_ns);
  const bool slowdown_due = c.slowdowns == 0
                                ? queued > target
                                : now_ns - looked_at >= kSlowdownEveryRoundTrips * round_trip;
  // (Not while a loss event's cut holds, nor when yielding: a queue others
  // keep full does not drain for it.)
  if (slowdown_due && !c.delay_ignored && seq_ge(c.una, c.recovery_seq)) {
    start_slowdown(c, rtt_ns, now_ns);
    ++stats_.delay_slowdowns;
    return;
  }
  if (queued <= target) {
    c.delay_at_cut_ns = 0;  // the next cut starts a new row
    c.delay_vain_cuts = 0;
    c.delay_ignored = false;
    return;
  }
  if (c.delay_ignored) return;
  // One cut per round trip for any signal (what was in flight at the cut
  // comes back as late), and none while a loss event's cut holds.
  // (on_congestion_echo keeps congestion_cut_until up with una.)
  if (seq_lt(c.una, c.congestion_cut_until) || seq_lt(c.una, c.recovery_seq)) return;
  const uint64_t over = queued - target;
  const uint64_t decrease = std::min(kDelayBetaX65536 * over / rtt_ns, kMaxDecreaseX65536);
  const uint32_t window = std::max<uint32_t>(c.cwnd_x256 / 256, 1);
  const uint32_t cut = static_cast<uint32_t>(uint64_t{window} * decrease / 65536);
  const uint32_t narrowed = std::max<uint32_t>(window - cut, 2);
  c.congestion_cut_until = c.next_seq;
  // Whether the last cut (a round trip ago) showed: the delay fell, or is
  // within twice the target (near it, small cuts move it little).
  if (c.delay_at_cut_ns == 0 || queued < c.delay_at_cut_ns - c.delay_at_cut_ns / 8 ||
      over <= target) {
    c.delay_vain_cuts = 0;
    c.vain_since_ns = now_ns;
    c.window_before_vain = window;
  } else if (++c.delay_vain_cuts >= kVainCutsBeforeYielding &&
             now_ns - c.vain_since_ns >=
                 std::max(kVainRoundTripsBeforeYielding * round_trip, kMinVainRowNs)) {
    // Not our queue: what the vain cuts took comes back, and the window
    // opens as at a start until a loss, as the other sender's does (from
    // the few segments the cuts left, growing one a round trip, it would
    // take hundreds of round trips to reach its share).
    c.cwnd_x256 = std::max(c.cwnd_x256, c.window_before_vain * 256);
    c.ssthresh = kMaxWindow;
    c.delay_ignored = true;
    ++stats_.delay_yields;
    return;
  }
  c.delay_at_cut_ns = queued;
  // (At the floor of two segments there is nothing to cut, but the round
  // trip counts all the same.)
  if (narrowed < window) {
    c.ssthresh = narrowed;
    c.cwnd_x256 = std::min(c.cwnd_x256, narrowed * 256);
    c.timeout_undo = {};  // a timeout's window is no guide after this cut
    ++c.cuts_delay;
    ++stats_.window_cuts_delay;
  }
}

}  // namespace ofi_dpdk::proto
