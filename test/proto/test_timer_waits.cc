// Timer waits (TransportStats: retransmit_timeouts, tail_loss_probes,
// window_probes, delayed_acks, delivery_probes): each counts a time an
// operation sat behind a timer instead of an answer.  On a link that loses
// nothing, between peers that keep answering, the patterns the stock
// benchmarks run (pingpong; a window of sends, then wait for all of it)
// must need none: every ack they wait for is sent at once.  Where a timer
// is the right answer (a lost last segment, a closed window), it is counted
// under its own name.  Over the in-memory link (lossy_link.h, 5 us steps).
#include <gtest/gtest.h>

#include <vector>

#include "lib/proto/engine_state.h"
#include "test/proto/engine_pair.h"

namespace ofi_dpdk::proto {
namespace {

using sim::Pair;

constexpr uint64_t kMs = 1'000'000;
constexpr uint64_t kSec = 1'000'000'000;

void* ctx(uintptr_t n) {
  return reinterpret_cast<void*>(n);
}

std::string waits_of(const TransportStats& s) {
  return "rto " + std::to_string(s.retransmit_timeouts) + ", tlp " +
         std::to_string(s.tail_loss_probes) + ", window probes " + std::to_string(s.window_probes) +
         ", delayed acks " + std::to_string(s.delayed_acks) + ", delivery probes " +
         std::to_string(s.delivery_probes);
}

uint64_t all_waits(const TransportStats& s) {
  return s.retransmit_timeouts + s.tail_loss_probes + s.window_probes + s.delayed_acks +
         s.delivery_probes;
}

TEST(TimerWaits, APingpongWaitsForNoTimer) {
  // Expect: 500 round trips of 8 bytes, each side posting its receive
  // before the other sends, and not one timer event on either side.
  Pair p(81);
  ASSERT_TRUE(p.warm_up());
  const TransportStats a_before = p.engine(p.a).stats(), b_before = p.engine(p.b).stats();
  std::vector<uint8_t> ping(8, 0x11), pong(8, 0x22), in_a(8), in_b(8);
  for (uintptr_t i = 0; i < 500; ++i) {
    ASSERT_EQ(p.post(p.b, &in_b, ctx(1)), 0);
    ASSERT_EQ(p.post(p.a, &in_a, ctx(2)), 0);
    ASSERT_EQ(p.send(p.a, p.b, ping, ctx(3)), 0);
    ASSERT_TRUE(p.wait(p.b, 1, kSec));
    ASSERT_EQ(p.send(p.b, p.a, pong, ctx(4)), 0);
    ASSERT_TRUE(p.wait(p.a, 2, kSec));  // the pong and the ping's send
    ASSERT_TRUE(p.wait(p.b, 2, kSec));  // the ping and the pong's send
    p.done[p.a].clear();
    p.done[p.b].clear();
  }
  EXPECT_EQ(all_waits(p.engine(p.a).stats()), all_waits(a_before))
      << waits_of(p.engine(p.a).stats());
  EXPECT_EQ(all_waits(p.engine(p.b).stats()), all_waits(b_before))
      << waits_of(p.engine(p.b).stats());
}

TEST(TimerWaits, AWindowOfSendsCompletesWithoutATimer) {
  // Expect: ten rounds of 64 sends of 64 KiB posted at once into posted
  // receives, each round waited for whole before the next (what fabtests'
  // bandwidth programs do), and no timer event on either side: every
  // segment's ack, the window's last included, leaves without waiting for
  // the ack delay.
  Pair p(82);
  ASSERT_TRUE(p.warm_up());
  const TransportStats a_before = p.engine(p.a).stats(), b_before = p.engine(p.b).stats();
  std::vector<uint8_t> message(64 << 10, 0x5C);
  std::vector<std::vector<uint8_t>> in(64, std::vector<uint8_t>(64 << 10));
  for (int round = 0; round < 10; ++round) {
    for (uintptr_t i = 0; i < in.size(); ++i) ASSERT_EQ(p.post(p.b, &in[i], ctx(i)), 0);
    for (uintptr_t i = 0; i < in.size(); ++i) ASSERT_EQ(p.send(p.a, p.b, message, ctx(i)), 0);
    ASSERT_TRUE(p.wait(p.a, in.size(), 10 * kSec)) << "round " << round;
    ASSERT_TRUE(p.wait(p.b, in.size(), 10 * kSec)) << "round " << round;
    p.done[p.a].clear();
    p.done[p.b].clear();
  }
  EXPECT_EQ(all_waits(p.engine(p.a).stats()), all_waits(a_before))
      << waits_of(p.engine(p.a).stats());
  EXPECT_EQ(all_waits(p.engine(p.b).stats()), all_waits(b_before))
      << waits_of(p.engine(p.b).stats());
}

TEST(TimerWaits, ALostLastSegmentIsATailLossProbeNotATimeout) {
  // Expect: the last data frame of a 4-segment message is lost once; the
  // sender, hearing nothing for two round trips, resends it as a tail loss
  // probe (counted), long before its RTO (none counted), and the message
  // arrives whole.
  Pair p(83);
  ASSERT_TRUE(p.warm_up());
  // A few round trips so that the sender has a measured RTT.
  std::vector<uint8_t> small(8, 1), small_in(8);
  for (uintptr_t i = 0; i < 4; ++i) {
    ASSERT_EQ(p.post(p.b, &small_in, ctx(i)), 0);
    ASSERT_EQ(p.send(p.a, p.b, small, ctx(i)), 0);
    ASSERT_TRUE(p.wait(p.b, 1, kSec));
    ASSERT_TRUE(p.wait(p.a, 1, kSec));
    p.done[p.a].clear();
    p.done[p.b].clear();
  }
  bool dropped = false;
  p.link.keep = [&](size_t from, const wire::FrameHeader& h) {
    if (from != p.a || dropped || h.opcode != static_cast<uint8_t>(wire::Opcode::kMsg) ||
        !(h.flags & wire::kFlagLastSegment))
      return true;
    dropped = true;
    return false;
  };
  const uint32_t payload = p.engine(p.a).find(p.link.key(p.b))->tx_max_payload;
  std::vector<uint8_t> message(3 * payload + 100, 0x3D), in(message.size());
  ASSERT_EQ(p.post(p.b, &in, ctx(9)), 0);
  ASSERT_EQ(p.send(p.a, p.b, message, ctx(9)), 0);
  ASSERT_TRUE(p.wait(p.b, 1, kSec));
  EXPECT_TRUE(dropped);
  EXPECT_EQ(in, message);
  EXPECT_GE(p.engine(p.a).stats().tail_loss_probes, 1u);
  EXPECT_EQ(p.engine(p.a).stats().retransmit_timeouts, 0u) << waits_of(p.engine(p.a).stats());
}

TEST(TimerWaits, AClosedWindowIsProbedNotTimedOut) {
  // Expect: B posts no receive and takes at most 8 KiB unexpected, so its
  // window closes under A's 4 KiB messages; A's waits are window probes,
  // never retransmission timeouts.
  TransportConfig receiver;
  receiver.unexpected_bytes = 8 << 10;
  Pair p(84, TransportConfig{}, receiver);
  ASSERT_TRUE(p.warm_up());
  std::vector<std::vector<uint8_t>> messages(20, std::vector<uint8_t>(4096, 7));
  for (uintptr_t i = 0; i < messages.size(); ++i)
    ASSERT_EQ(p.send(p.a, p.b, messages[i], ctx(i)), 0);
  p.run_for(50 * kMs);
  EXPECT_GT(p.engine(p.a).stats().window_probes, 0u);
  EXPECT_EQ(p.engine(p.a).stats().retransmit_timeouts, 0u) << waits_of(p.engine(p.a).stats());
}

// A message sent while A's link is down (A partitioned: nothing leaves or
// arrives), the link back after `down_ns`; how long after that B has it,
// with or without Engine::link_restored at the moment it comes back.
uint64_t delivery_after_link_returns(uint64_t seed, uint64_t down_ns, bool told) {
  Pair p(seed);
  EXPECT_TRUE(p.warm_up());
  std::vector<uint8_t> out(8, 0x3C), in(8);
  EXPECT_EQ(p.post(p.b, &in, ctx(1)), 0);
  p.link.set_partitioned(p.a, true);
  EXPECT_EQ(p.send(p.a, p.b, out, ctx(2)), 0);
  const uint64_t back = p.link.now() + down_ns;
  while (p.link.now() < back) p.link.step();
  p.link.set_partitioned(p.a, false);
  if (told) p.engine(p.a).link_restored(p.link.now());
  EXPECT_TRUE(p.wait(p.b, 1, 10 * kSec));
  EXPECT_EQ(in, out);
  return p.link.now() - back;
}

TEST(TimerWaits, ALinkThatComesBackResendsAtOnce) {
  // Expect: after 300 ms down the retransmission timeout has backed off
  // to more than 100 ms, so without being told the message waits for it;
  // told that the link is back (link_restored), A resends at its next
  // poll and B has the message within a millisecond.
  const uint64_t untold = delivery_after_link_returns(91, 300 * kMs, false);
  const uint64_t told = delivery_after_link_returns(91, 300 * kMs, true);
  EXPECT_GT(untold, 20 * kMs) << "the backoff did not hold the message: the test shows nothing";
  EXPECT_LT(told, 1 * kMs) << "untold " << untold / 1000 << " us";
}

}  // namespace
}  // namespace ofi_dpdk::proto
