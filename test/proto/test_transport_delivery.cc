// The reliable transport (lib/proto Engine) delivering: exactly once, in order
// and byte-exact under loss, reordering, duplication and corruption;
// unexpected messages and matching; flow control; truncation.
// Engines over the in-memory lossy link in simulated time (transport_net.h);
// each test says what it expects in `// Expect:` comments.
#include <gtest/gtest.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include "lib/proto/engine_state.h"
#include "lib/proto/frame_codec.h"
#include "lib/proto/seq.h"
#include "test/proto/lossy_link.h"
#include "test/proto/transport_net.h"

namespace ofi_dpdk::proto {
namespace {

// ===========================================================================
// 1. Lossless stream.

TEST(TransportLossless, MixedSizesArriveOnceInOrderByteExact) {
  // Expect: 2000 messages (0 B, 1 B, 1444, 1445, 64 KiB, 1 MiB) over a
  // perfect link, receives posted ahead: each delivered once, in send order,
  // byte-exact; a completion for every send; nothing retransmitted.
  Net net(1);
  const size_t a = net.add(TransportConfig{}, kMacA, 0, 0xA0000001);
  const size_t b = net.add(TransportConfig{}, kMacB, 0, 0xB0000001);
  FlowSpec spec;
  spec.src = a;
  spec.dst = b;
  spec.sizes = lossless_sizes(2000);
  spec.inject_every = 7;
  Flow& f = net.add_flow(spec);

  ASSERT_TRUE(net.run_until([&] { return f.done(); }, 10 * kSec))
      << "sent " << f.sent << " done " << f.send_done << " received " << f.received;
  EXPECT_EQ(f.problems, 0u) << f.first_problem;
  EXPECT_EQ(f.send_done, 2000u);
  EXPECT_EQ(f.send_failed, 0u);
  EXPECT_EQ(f.received, 2000u);
  EXPECT_EQ(net.engine(b).stats().messages_received, 2000u);
  EXPECT_EQ(net.engine(a).stats().messages_sent, 2000u);
  EXPECT_EQ(net.engine(a).stats().retransmitted, 0u);
  EXPECT_EQ(net.engine(b).stats().duplicates, 0u);
  EXPECT_EQ(net.engine(a).outstanding_sends(), 0u);
  EXPECT_TRUE(net.other[a].empty());
  EXPECT_TRUE(net.other[b].empty());
}

// ===========================================================================
// 2. Under loss, reordering, duplication and corruption.

struct LossCase {
  double drop;
  uint64_t expected_sim_ns;  // what loss recovery should manage (about 5x slack)
  const char* name;
};

void PrintTo(const LossCase& c, std::ostream* os) {
  *os << c.name;
}

class TransportUnderLoss : public ::testing::TestWithParam<LossCase> {};

TEST_P(TransportUnderLoss, EveryMessageExactlyOnceInOrder) {
  // Expect: with drop p, 5 % reordering, 1 % duplication and 1 % corruption,
  // 2000 messages of 1 B..256 KiB each arrive exactly once, in order,
  // byte-exact; every send completes with error 0; retransmissions happened;
  // segments ahead of gaps were held in their frames (FrameKeeper), and none
  // is held once all arrived; all within 60 simulated seconds (hard bound) and 20 real seconds, and
  // in fact within the case's expected simulated time (losses are repaired by fast retransmit and
  // probes, not by waiting for 2 ms RTOs).
  const auto wall = std::chrono::steady_clock::now();
  Net net(100 + static_cast<uint64_t>(GetParam().drop * 1000));
  const size_t a = net.add(TransportConfig{}, kMacA, 0, 0xA0000002);
  const size_t b = net.add(TransportConfig{}, kMacB, 0, 0xB0000002);
  auto& faults = net.link.faults();
  faults.drop = GetParam().drop;
  faults.reorder = 0.05;
  faults.duplicate = 0.01;
  faults.corrupt = 0.01;
  FlowSpec spec;
  spec.src = a;
  spec.dst = b;
  spec.sizes = random_sizes(2000, 256 << 10, 7);
  spec.inject_every = 11;
  Flow& f = net.add_flow(spec);

  const uint64_t start = net.link.now();
  const bool finished = net.run_until([&] { return f.done(); }, 60 * kSec, 20.0);
  ASSERT_TRUE(finished) << "sent " << f.sent << " done " << f.send_done << " received "
                        << f.received << " after " << (net.link.now() - start) / kMs
                        << " ms simulated, " << seconds_since(wall) << " s real";
  const TransportStats& tx = net.engine(a).stats();
  const TransportStats& rx = net.engine(b).stats();
  EXPECT_EQ(f.problems, 0u) << f.first_problem;
  EXPECT_EQ(f.send_done, 2000u);
  EXPECT_EQ(f.send_failed, 0u) << "last error " << f.last_send_error;
  EXPECT_EQ(f.received, 2000u);
  EXPECT_EQ(rx.messages_received, 2000u);
  EXPECT_GT(tx.retransmitted, 0u);
  EXPECT_GT(net.link.counters().decode_failed, 0u);  // corrupted frames were refused
  EXPECT_GT(net.link.frames_lent(), 0u);
  EXPECT_EQ(net.link.frames_kept(), 0u);
  EXPECT_LT(seconds_since(wall), 20.0);
  EXPECT_LT(net.link.now() - start, GetParam().expected_sim_ns);
  ::testing::Test::RecordProperty("simulated_ms", std::to_string((net.link.now() - start) / kMs));
  std::printf(
      "[ info     ] drop %.0f%%: %.1f ms simulated, %.2f s real, %lu frames, %lu "
      "retransmitted (%lu fast, %lu by probe or RTO)\n",
      GetParam().drop * 100, (net.link.now() - start) / 1e6, seconds_since(wall),
      static_cast<unsigned long>(tx.frames_sent), static_cast<unsigned long>(tx.retransmitted),
      static_cast<unsigned long>(tx.fast_retransmits),
      static_cast<unsigned long>(tx.retransmitted - tx.fast_retransmits));
}

INSTANTIATE_TEST_SUITE_P(Drop, TransportUnderLoss,
                         ::testing::Values(LossCase{0.01, 1 * kSec, "1pct"},
                                           LossCase{0.05, 1500 * kMs, "5pct"},
                                           LossCase{0.20, 8 * kSec, "20pct"}),
                         [](const ::testing::TestParamInfo<LossCase>& info) {
                           return std::string(info.param.name);
                         });

// ===========================================================================
// 3. Both directions at once.

TEST(TransportLossy, BidirectionalTraffic) {
  // Expect: A->B and B->A streams running at the same time over a link that
  // drops 5 % both complete, exactly once, in order, byte-exact.
  Net net(3);
  const size_t a = net.add(TransportConfig{}, kMacA, 0, 0xA0000003);
  const size_t b = net.add(TransportConfig{}, kMacB, 0, 0xB0000003);
  net.link.faults().drop = 0.05;
  FlowSpec ab;
  ab.src = a;
  ab.dst = b;
  ab.sizes = random_sizes(1000, 64 << 10, 31);
  ab.seed = 31;
  FlowSpec ba = ab;
  ba.src = b;
  ba.dst = a;
  ba.sizes = random_sizes(1000, 64 << 10, 32);
  ba.seed = 32;
  Flow& f1 = net.add_flow(ab);
  Flow& f2 = net.add_flow(ba);

  ASSERT_TRUE(net.run_until([&] { return net.flows_done(); }, 30 * kSec))
      << f1.received << " / " << f2.received;
  for (Flow* f : {&f1, &f2}) {
    EXPECT_EQ(f->problems, 0u) << f->first_problem;
    EXPECT_EQ(f->send_failed, 0u);
    EXPECT_EQ(f->received, 1000u);
  }
  EXPECT_EQ(net.engine(a).stats().messages_received, 1000u);
  EXPECT_EQ(net.engine(b).stats().messages_received, 1000u);
  EXPECT_GT(net.engine(a).stats().retransmitted, 0u);
  EXPECT_GT(net.engine(b).stats().retransmitted, 0u);
}

// ===========================================================================
// 4. One very large message.

TEST(TransportLossy, SixteenMebibyteMessage) {
  // Expect: one 16 MiB message over 5 % loss arrives whole and byte-exact,
  // and its send completes with error 0.
  Net net(4);
  const size_t a = net.add(TransportConfig{}, kMacA, 0, 0xA0000004);
  const size_t b = net.add(TransportConfig{}, kMacB, 0, 0xB0000004);
  net.link.faults().drop = 0.05;
  FlowSpec spec;
  spec.src = a;
  spec.dst = b;
  spec.sizes = {16u << 20};
  Flow& f = net.add_flow(spec);
  ASSERT_TRUE(net.run_until([&] { return f.done(); }, 30 * kSec)) << f.received;
  EXPECT_EQ(f.problems, 0u) << f.first_problem;
  EXPECT_EQ(f.send_failed, 0u);
  EXPECT_EQ(net.engine(b).stats().messages_received, 1u);
  EXPECT_GT(net.engine(a).stats().retransmitted, 0u);
}

// ===========================================================================
// 5. Duplication only.

TEST(TransportDuplication, EveryFrameTwiceDeliversOnce) {
  // Expect: every frame delivered twice, yet each message exactly once, in
  // order, byte-exact; the receiver counted the duplicates.
  Net net(5);
  const size_t a = net.add(TransportConfig{}, kMacA, 0, 0xA0000005);
  const size_t b = net.add(TransportConfig{}, kMacB, 0, 0xB0000005);
  net.link.faults().duplicate = 1.0;
  FlowSpec spec;
  spec.src = a;
  spec.dst = b;
  spec.sizes = random_sizes(500, 64 << 10, 5);
  Flow& f = net.add_flow(spec);
  ASSERT_TRUE(net.run_until([&] { return f.done(); }, 10 * kSec));
  EXPECT_EQ(f.problems, 0u) << f.first_problem;
  EXPECT_EQ(f.send_failed, 0u);
  EXPECT_EQ(f.received, 500u);
  EXPECT_EQ(net.engine(b).stats().messages_received, 500u);
  EXPECT_GT(net.engine(b).stats().duplicates, 0u);
  // Run on: no late duplicate turns into a message.
  net.run_for(50 * kMs);
  EXPECT_EQ(net.engine(b).stats().messages_received, 500u);
  EXPECT_TRUE(net.other[b].empty());
}

// ===========================================================================
// 6. Unexpected messages and matching.

TEST(TransportMatching, UnexpectedMessagesCompleteLaterReceivesInOrder) {
  // Expect: sends issued before any receive is posted are buffered (they fit
  // in unexpected_bytes) and their sends complete; receives posted later
  // complete at once, in order, with the right bytes.
  Net net(6);
  const size_t a = net.add(TransportConfig{}, kMacA, 0, 0xA0000006);
  TransportConfig rx_config;
  rx_config.unexpected_bytes = 256 << 10;
  const size_t b = net.add(rx_config, kMacB, 0, 0xB0000006);
  const std::vector<size_t> sizes = {0, 1, 100, 1445, 5000, 70000};
  std::vector<std::vector<uint8_t>> out;
  for (size_t i = 0; i < sizes.size(); ++i) {
    out.push_back(pattern(sizes[i], 60 + i));
    ASSERT_EQ(send_bytes(net, a, b, out[i], ctx(100 + i)), 0);
  }
  ASSERT_TRUE(wait_completions(net, a, sizes.size(), 100 * kMs));
  for (const Completion& c : net.take(a)) EXPECT_EQ(c.error, 0);
  EXPECT_TRUE(net.take(b).empty());
  EXPECT_EQ(net.engine(b).posted_recvs(), 0u);

  std::vector<std::vector<uint8_t>> in;
  for (size_t i = 0; i < sizes.size(); ++i) in.emplace_back(sizes[i] + 16, 0xCC);
  for (size_t i = 0; i < sizes.size(); ++i) {
    ASSERT_EQ(post_bytes(net, b, in[i], ctx(200 + i)), 0);
    auto done = net.take(b);
    ASSERT_EQ(done.size(), 1u) << "receive " << i << " did not complete at once";
    EXPECT_EQ(done[0].context, ctx(200 + i));
    EXPECT_EQ(done[0].error, 0);
    EXPECT_EQ(done[0].len, sizes[i]);
    EXPECT_EQ(done[0].source_key, net.link.key(a));
    EXPECT_TRUE(std::equal(out[i].begin(), out[i].end(), in[i].begin())) << "message " << i;
    EXPECT_EQ(in[i][sizes[i]], 0xCC);  // nothing past the message
  }
  EXPECT_EQ(net.engine(b).posted_recvs(), 0u);
}

TEST(TransportMatching, ReceivePostedWhileUnexpectedMessageStillArriving) {
  // Expect: a receive posted while a large unexpected message is half-way in
  // claims it and completes when it is whole, byte-exact.
  Net net(61);
  const size_t a = net.add(TransportConfig{}, kMacA, 0, 0xA0000061);
  const size_t b = net.add(TransportConfig{}, kMacB, 0, 0xB0000061);
  const auto out = pattern(1 << 20, 61);
  ASSERT_EQ(send_bytes(net, a, b, out, ctx(1)), 0);
  net.run_until([&] { return net.engine(b).stats().frames_received >= 20; }, 10 * kMs);
  ASSERT_EQ(net.engine(b).stats().messages_received, 0u);
  std::vector<uint8_t> in(1 << 20);
  ASSERT_EQ(post_bytes(net, b, in, ctx(2)), 0);
  EXPECT_TRUE(net.take(b).empty());  // not whole yet
  ASSERT_TRUE(wait_completions(net, b, 1, 100 * kMs));
  auto done = net.take(b);
  EXPECT_EQ(done[0].context, ctx(2));
  EXPECT_EQ(done[0].error, 0);
  EXPECT_EQ(done[0].len, size_t{1} << 20);
  EXPECT_TRUE(in == out);
}

TEST(TransportMatching, TaggedMatchingWithIgnoreMask) {
  // Expect: unexpected tagged messages are claimed by tag/ignore, the oldest
  // matching one first; an untagged receive never takes a tagged message.
  Net net(62);
  const size_t a = net.add(TransportConfig{}, kMacA, 0, 0xA0000062);
  const size_t b = net.add(TransportConfig{}, kMacB, 0, 0xB0000062);
  const auto x = pattern(300, 1), y = pattern(301, 2), z = pattern(302, 3), u = pattern(303, 4);
  ASSERT_EQ(send_bytes(net, a, b, x, ctx(1), true, 0x100), 0);
  ASSERT_EQ(send_bytes(net, a, b, y, ctx(2), true, 0x200), 0);
  ASSERT_EQ(send_bytes(net, a, b, z, ctx(3), true, 0x101), 0);
  ASSERT_EQ(send_bytes(net, a, b, u, ctx(4)), 0);
  ASSERT_TRUE(wait_completions(net, a, 4, 100 * kMs));

  std::vector<uint8_t> in(400);
  auto expect_claim = [&](const std::vector<uint8_t>& message, bool tagged, uint64_t tag) {
    auto done = net.take(b);
    ASSERT_EQ(done.size(), 1u);
    EXPECT_EQ(done[0].error, 0);
    EXPECT_EQ(done[0].len, message.size());
    EXPECT_EQ(done[0].tagged, tagged);
    if (tagged) {
      EXPECT_EQ(done[0].tag, tag);
    }
    EXPECT_EQ(std::memcmp(in.data(), message.data(), message.size()), 0);
  };
  // Expect: exact tag 0x101 takes z, though x and y came first.
  ASSERT_EQ(post_bytes(net, b, in, ctx(10), true, 0x101, 0), 0);
  expect_claim(z, true, 0x101);
  // Expect: 0x1?? matches x (0x100), the oldest left.
  ASSERT_EQ(post_bytes(net, b, in, ctx(11), true, 0x1FF, 0x0FF), 0);
  expect_claim(x, true, 0x100);
  // Expect: an untagged receive takes the untagged u, not y.
  ASSERT_EQ(post_bytes(net, b, in, ctx(12)), 0);
  expect_claim(u, false, 0);
  // Expect: a receive that ignores every bit takes y.
  ASSERT_EQ(post_bytes(net, b, in, ctx(13), true, 0, ~uint64_t{0}), 0);
  expect_claim(y, true, 0x200);
  // Expect: nothing left; a further tagged receive stays posted.
  ASSERT_EQ(post_bytes(net, b, in, ctx(14), true, 0, ~uint64_t{0}), 0);
  EXPECT_TRUE(net.take(b).empty());
  EXPECT_EQ(net.engine(b).posted_recvs(), 1u);
}

TEST(TransportMatching, PostedReceivesMatchInPostingOrder) {
  // Expect: of two posted receives that both match, the one posted first
  // takes the message; the second takes the next; a third message waits
  // unexpected for a later receive.
  Net net(63);
  const size_t a = net.add(TransportConfig{}, kMacA, 0, 0xA0000063);
  const size_t b = net.add(TransportConfig{}, kMacB, 0, 0xB0000063);
  std::vector<uint8_t> r1(100), r2(100), r3(100);
  ASSERT_EQ(post_bytes(net, b, r1, ctx(1), true, 0x10, 0x0F), 0);  // 0x10..0x1F
  ASSERT_EQ(post_bytes(net, b, r2, ctx(2), true, 0x15, 0), 0);     // 0x15 only
  const auto m1 = pattern(50, 1), m2 = pattern(60, 2), m3 = pattern(70, 3);
  ASSERT_EQ(send_bytes(net, a, b, m1, ctx(11), true, 0x15), 0);
  ASSERT_TRUE(wait_completions(net, b, 1, 100 * kMs));
  auto done = net.take(b);
  ASSERT_EQ(done.size(), 1u);
  EXPECT_EQ(done[0].context, ctx(1));
  EXPECT_EQ(std::memcmp(r1.data(), m1.data(), m1.size()), 0);

  ASSERT_EQ(send_bytes(net, a, b, m2, ctx(12), true, 0x15), 0);
  ASSERT_TRUE(wait_completions(net, b, 1, 100 * kMs));
  done = net.take(b);
  ASSERT_EQ(done.size(), 1u);
  EXPECT_EQ(done[0].context, ctx(2));
  EXPECT_EQ(std::memcmp(r2.data(), m2.data(), m2.size()), 0);

  ASSERT_EQ(send_bytes(net, a, b, m3, ctx(13), true, 0x15), 0);
  ASSERT_TRUE(wait_completions(net, a, 3, 100 * kMs));
  EXPECT_TRUE(net.take(b).empty());
  ASSERT_EQ(post_bytes(net, b, r3, ctx(3), true, 0x15, 0), 0);
  done = net.take(b);
  ASSERT_EQ(done.size(), 1u);
  EXPECT_EQ(done[0].context, ctx(3));
  EXPECT_EQ(std::memcmp(r3.data(), m3.data(), m3.size()), 0);
}

TEST(TransportMatching, SourceDirectedReceives) {
  // Expect: a receive for source C is not taken by A's message, posted or
  // unexpected, and vice versa; completions name the sender's peer_key.
  Net net(64);
  const size_t a = net.add(TransportConfig{}, kMacA, 0, 0xA0000064);
  const size_t b = net.add(TransportConfig{}, kMacB, 0, 0xB0000064);
  const size_t c = net.add(TransportConfig{}, kMacC, 3, 0xC0000064);
  const uint64_t key_a = peer_key(kMacA, 0), key_c = peer_key(kMacC, 3);
  ASSERT_EQ(key_a, net.link.key(a));
  std::vector<uint8_t> for_c(100), for_a(100);
  ASSERT_EQ(post_bytes(net, b, for_c, ctx(1), false, 0, 0, &key_c), 0);
  ASSERT_EQ(post_bytes(net, b, for_a, ctx(2), false, 0, 0, &key_a), 0);
  const auto from_a = pattern(40, 1), from_c = pattern(41, 2);
  ASSERT_EQ(send_bytes(net, a, b, from_a, ctx(11)), 0);
  ASSERT_TRUE(wait_completions(net, b, 1, 100 * kMs));
  auto done = net.take(b);
  ASSERT_EQ(done.size(), 1u);
  EXPECT_EQ(done[0].context, ctx(2));  // A's message skipped the receive for C
  EXPECT_EQ(done[0].source_key, key_a);
  EXPECT_EQ(std::memcmp(for_a.data(), from_a.data(), from_a.size()), 0);

  ASSERT_EQ(send_bytes(net, c, b, from_c, ctx(12)), 0);
  ASSERT_TRUE(wait_completions(net, b, 1, 100 * kMs));
  done = net.take(b);
  ASSERT_EQ(done.size(), 1u);
  EXPECT_EQ(done[0].context, ctx(1));
  EXPECT_EQ(done[0].source_key, key_c);
  EXPECT_EQ(std::memcmp(for_c.data(), from_c.data(), from_c.size()), 0);

  // Unexpected: C's message waits; a receive for A does not take it.
  const auto late_c = pattern(42, 3), late_a = pattern(43, 4);
  ASSERT_EQ(send_bytes(net, c, b, late_c, ctx(13)), 0);
  ASSERT_TRUE(wait_completions(net, c, 2, 100 * kMs));
  std::vector<uint8_t> again_a(100), again_c(100);
  ASSERT_EQ(post_bytes(net, b, again_a, ctx(3), false, 0, 0, &key_a), 0);
  EXPECT_TRUE(net.take(b).empty());
  ASSERT_EQ(post_bytes(net, b, again_c, ctx(4), false, 0, 0, &key_c), 0);
  done = net.take(b);
  ASSERT_EQ(done.size(), 1u);
  EXPECT_EQ(done[0].context, ctx(4));
  EXPECT_EQ(std::memcmp(again_c.data(), late_c.data(), late_c.size()), 0);
  ASSERT_EQ(send_bytes(net, a, b, late_a, ctx(14)), 0);
  ASSERT_TRUE(wait_completions(net, b, 1, 100 * kMs));
  done = net.take(b);
  ASSERT_EQ(done.size(), 1u);
  EXPECT_EQ(done[0].context, ctx(3));
  EXPECT_EQ(std::memcmp(again_a.data(), late_a.data(), late_a.size()), 0);
}

// ===========================================================================
// 7. Flow control.

class TransportFlowControl : public ::testing::TestWithParam<double> {};

TEST_P(TransportFlowControl, SenderStopsWhenReceiverHasNoBuffer) {
  // Expect: the receiver posts nothing and buffers at most 8 KiB unexpected;
  // of 200 x 4 KiB sends, those beyond the buffer stay outstanding, the
  // receiver reports stalls, the sender goes (almost) quiet instead of
  // retransmitting, and nothing fails.  Once receives are posted all 200
  // arrive in order, byte-exact.
  Net net(7 + static_cast<uint64_t>(GetParam() * 100));
  const size_t a = net.add(TransportConfig{}, kMacA, 0, 0xA0000007);
  TransportConfig rx_config;
  rx_config.unexpected_bytes = 8 << 10;
  const size_t b = net.add(rx_config, kMacB, 0, 0xB0000007);
  net.link.faults().drop = GetParam();
  FlowSpec spec;
  spec.src = a;
  spec.dst = b;
  spec.sizes.assign(200, 4096);
  spec.send_window = 200;
  spec.post = false;
  spec.post_ahead = 200;
  Flow& f = net.add_flow(spec);

  net.run_for(100 * kMs);
  EXPECT_EQ(f.sent, 200u);
  EXPECT_LE(f.send_done, 2u);  // only what fit in 8 KiB was acknowledged
  EXPECT_EQ(f.send_failed, 0u);
  EXPECT_EQ(net.engine(a).outstanding_sends(), 200u - f.send_done);
  EXPECT_GT(net.engine(b).stats().stalled_no_buffer, 0u);
  EXPECT_EQ(net.engine(b).stats().messages_received, 0u);

  // Expect: the sender stopped: over one more simulated second it sends no
  // more than a handful of probes, and gives up on nothing.
  const uint64_t frames_before = net.engine(a).stats().frames_sent;
  net.run_for(1 * kSec);
  const uint64_t probes = net.engine(a).stats().frames_sent - frames_before;
  EXPECT_LE(probes, 40u) << "the sender kept transmitting into a closed window";
  std::printf("[ info     ] %lu frames sent during 1 s of closed window\n",
              static_cast<unsigned long>(probes));
  EXPECT_EQ(f.send_failed, 0u);
  EXPECT_EQ(net.engine(a).stats().timeouts, 0u);
  EXPECT_EQ(net.engine(a).outstanding_sends(), 200u - f.send_done);

  // Expect: posting the receives reopens the window at once (the receiver
  // sends a window update; the sender does not wait for its backed-off RTO).
  f.spec.post = true;
  const uint64_t reopened = net.link.now();
  ASSERT_TRUE(net.run_until([&] { return f.done(); }, 10 * kSec))
      << "received " << f.received << " sends done " << f.send_done;
  if (GetParam() == 0.0) {
    EXPECT_LT(net.link.now() - reopened, 20 * kMs);
  }
  EXPECT_EQ(f.problems, 0u) << f.first_problem;
  EXPECT_EQ(f.send_failed, 0u);
  EXPECT_EQ(net.engine(b).stats().messages_received, 200u);
}

INSTANTIATE_TEST_SUITE_P(Loss, TransportFlowControl, ::testing::Values(0.0, 0.05),
                         [](const ::testing::TestParamInfo<double>& info) {
                           return info.param == 0.0 ? std::string("Lossless")
                                                    : std::string("Drop5pct");
                         });

// ===========================================================================
// 8. Truncation.

TEST(TransportTruncation, LongMessageIntoShortReceive) {
  // Expect: 1000 bytes into a 100-byte receive complete with kErrTruncated,
  // len 100, overflow 900, the first 100 bytes right and nothing written past
  // them; the next message is unaffected.  Same through the unexpected path.
  Net net(8);
  const size_t a = net.add(TransportConfig{}, kMacA, 0, 0xA0000008);
  const size_t b = net.add(TransportConfig{}, kMacB, 0, 0xB0000008);
  const auto big = pattern(1000, 81), next = pattern(500, 82);

  std::vector<uint8_t> area(200, 0xCC);
  RecvRequest r;
  r.iov[0] = {area.data(), 100};
  r.iov_count = 1;
  r.context = ctx(1);
  ASSERT_EQ(net.engine(b).post_recv(r, net.link.now()), 0);
  ASSERT_EQ(send_bytes(net, a, b, big, ctx(11)), 0);
  ASSERT_TRUE(wait_completions(net, b, 1, 100 * kMs));
  auto done = net.take(b);
  ASSERT_EQ(done.size(), 1u);
  EXPECT_EQ(done[0].context, ctx(1));
  EXPECT_EQ(done[0].error, kErrTruncated);
  EXPECT_EQ(done[0].len, 100u);
  EXPECT_EQ(done[0].overflow, 900u);
  EXPECT_EQ(std::memcmp(area.data(), big.data(), 100), 0);
  EXPECT_EQ(std::count(area.begin() + 100, area.end(), 0xCC), 100);

  std::vector<uint8_t> whole(1000, 0xCC);
  ASSERT_EQ(post_bytes(net, b, whole, ctx(2)), 0);
  ASSERT_EQ(send_bytes(net, a, b, next, ctx(12)), 0);
  ASSERT_TRUE(wait_completions(net, b, 1, 100 * kMs));
  done = net.take(b);
  ASSERT_EQ(done.size(), 1u);
  EXPECT_EQ(done[0].error, 0);
  EXPECT_EQ(done[0].len, 500u);
  EXPECT_EQ(std::memcmp(whole.data(), next.data(), 500), 0);

  // Through the unexpected path.
  ASSERT_EQ(send_bytes(net, a, b, big, ctx(13)), 0);
  ASSERT_EQ(send_bytes(net, a, b, next, ctx(14)), 0);
  ASSERT_TRUE(wait_completions(net, a, 4, 100 * kMs));
  for (const Completion& c : net.take(a)) EXPECT_EQ(c.error, 0);  // truncation is the receiver's
  std::fill(area.begin(), area.end(), 0xCC);
  ASSERT_EQ(net.engine(b).post_recv(r, net.link.now()), 0);
  done = net.take(b);
  ASSERT_EQ(done.size(), 1u);
  EXPECT_EQ(done[0].error, kErrTruncated);
  EXPECT_EQ(done[0].len, 100u);
  EXPECT_EQ(done[0].overflow, 900u);
  EXPECT_EQ(std::memcmp(area.data(), big.data(), 100), 0);
  EXPECT_EQ(std::count(area.begin() + 100, area.end(), 0xCC), 100);
  std::fill(whole.begin(), whole.end(), 0xCC);
  ASSERT_EQ(post_bytes(net, b, whole, ctx(3)), 0);
  done = net.take(b);
  ASSERT_EQ(done.size(), 1u);
  EXPECT_EQ(done[0].error, 0);
  EXPECT_EQ(done[0].len, 500u);
  EXPECT_EQ(std::memcmp(whole.data(), next.data(), 500), 0);
}

}  // namespace
}  // namespace ofi_dpdk::proto
