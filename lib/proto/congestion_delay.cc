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
// left the delay where it was, far over the target, the queue is not one this connection can
// drain: those cuts are undone and the delay is ignored (loss alone
// answers, as the other sender's does) until a sample comes within the
// target again.
#include <algorithm>
#include <cstdint>

#include "lib/proto/engine_state.h"
#include "lib/proto/seq.h"
#include "lib/proto/transport.h"

namespace ofi_dpdk::proto {
namespace {

// How long the lowest sample stands for the path: a route that became
// longer is learned this late (its samples replace the base then), and a
// queue that never drains in that long is taken for the path.  TCP's
// delay-based controllers keep their minimum about as long (Vegas for the
// connection's life, BBR 10 s).
constexpr uint64_t kBaseRttLifetimeNs = 10'000'000'000;
// Swift's decrease: by beta times the share of the round trip that is over
// the target, at most max_mdf of the window at once (its paper's 0.8 and
// 0.5, in 1/65536).
constexpr uint64_t kDelayBetaX65536 = 52429;
constexpr uint64_t kMaxDecreaseX65536 = 32768;
// Cuts in a row after which the delay, at more than twice the target, fell
// by less than an eighth before the delay is ignored.  A queue this
// connection fills itself falls after each cut (the first round trips'
// overshoot drains over several); one that another sender keeps full
// does not.
constexpr uint16_t kVainCutsBeforeYielding = 4;

}  // namespace

void Engine::on_rtt_sample(Connection& c, uint64_t rtt_ns, uint64_t now_ns) {
  if (c.base_rtt_ns == 0 || rtt_ns <= c.base_rtt_ns ||
      now_ns - c.base_rtt_at_ns > kBaseRttLifetimeNs) {
    c.base_rtt_ns = rtt_ns;
    c.base_rtt_at_ns = now_ns;
    return;
  }
  const uint64_t target = config_.delay_target_ns;
  if (target == 0) return;
  const uint64_t queued = rtt_ns - c.base_rtt_ns;
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
    c.window_before_vain = window;
  } else if (++c.delay_vain_cuts >= kVainCutsBeforeYielding) {
    // Not our queue: what the vain cuts took comes back.
    c.cwnd_x256 = std::max(c.cwnd_x256, c.window_before_vain * 256);
    c.ssthresh = std::max(c.ssthresh, c.window_before_vain);
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
