// The reliable transport (lib/proto Engine) and its peers: dead and
// restarted peers, cancellation, and how a peer's key is made.
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
// 9. Dead peer.

TransportConfig dead_peer_config() {
  TransportConfig config;
  config.peer_timeout_ns = 50 * kMs;
  config.max_rto_ns = 10 * kMs;
  return config;
}

TEST(TransportDeadPeer, OutstandingSendsTimeOutThenOtherPeersWork) {
  // Expect: with B cut off while A has 10 sends outstanding, all 10 complete
  // with kErrTimedOut / kProvPeerTimeout, no sooner than peer_timeout_ns and
  // no later than peer_timeout_ns + 2 * max_rto_ns; then A talks to C
  // normally.
  const TransportConfig config = dead_peer_config();
  Net net(9);
  const size_t a = net.add(config, kMacA, 0, 0xA0000009);
  const size_t b = net.add(config, kMacB, 0, 0xB0000009);
  const size_t c = net.add(config, kMacC, 0, 0xC0000009);
  warm_up(net, a, b, 3);

  std::vector<std::vector<uint8_t>> out;
  for (size_t i = 0; i < 10; ++i) {
    out.push_back(pattern(4096, 90 + i));
    ASSERT_EQ(send_bytes(net, a, b, out[i], ctx(100 + i)), 0);
  }
  net.link.set_partitioned(b, true);
  const uint64_t cut = net.link.now();
  ASSERT_TRUE(wait_completions(net, a, 10, 1 * kSec));
  const uint64_t elapsed = net.link.now() - cut;
  auto done = net.take(a);
  ASSERT_EQ(done.size(), 10u);
  for (size_t i = 0; i < done.size(); ++i) {
    EXPECT_EQ(done[i].kind, Completion::Kind::kSend);
    EXPECT_EQ(done[i].context, ctx(100 + i));
    EXPECT_EQ(done[i].error, kErrTimedOut);
    EXPECT_EQ(done[i].prov_errno, kProvPeerTimeout);
  }
  EXPECT_GE(elapsed, config.peer_timeout_ns);
  EXPECT_LE(elapsed, config.peer_timeout_ns + 2 * config.max_rto_ns);
  EXPECT_EQ(net.engine(a).outstanding_sends(), 0u);
  EXPECT_GE(net.engine(a).stats().timeouts, 1u);
  EXPECT_EQ(net.engine(a).stats().peers_failed, 1u);
  // Expect: the timeout's report names the wait (data unacknowledged), the
  // peer, and a connection that heard nothing for the whole timeout while
  // its oldest segment went out again.
  const TimeoutReport& report = net.engine(a).last_timeout();
  EXPECT_EQ(report.wait, TimeoutReport::Wait::kAcknowledge);
  EXPECT_STREQ(timeout_wait_text(report.wait), "data not acknowledged");
  EXPECT_EQ(report.peer, peer_key(kMacB, 0));
  EXPECT_GE(report.waited_ns, config.peer_timeout_ns);
  EXPECT_GE(report.quiet_ns, config.peer_timeout_ns);
  EXPECT_GT(report.in_flight, 0u);
  EXPECT_GT(report.retransmits, 0u);
  EXPECT_GE(report.awaiting, 10u);
  // The oldest unacknowledged segment is one A sent after the warm-up, and
  // A's own receive half was open (B's outage is not A's window).
  EXPECT_GT(report.una, wire::kInitialSeq);
  EXPECT_FALSE(report.rx_stalled);

  // Expect: A works with C as if nothing happened.
  FlowSpec spec;
  spec.src = a;
  spec.dst = c;
  spec.sizes = random_sizes(50, 64 << 10, 9);
  Flow& f = net.add_flow(spec);
  ASSERT_TRUE(net.run_until([&] { return f.done(); }, 1 * kSec));
  EXPECT_EQ(f.problems, 0u) << f.first_problem;
  EXPECT_EQ(f.send_failed, 0u);
}

TEST(TransportDeadPeer, PeerThatComesBackIsReachableAgain) {
  // Expect: after A gave up on B (timeout) and the link heals, a new message
  // from A to B is delivered (B still holds receive state of the old
  // connection; that must not black-hole the new one).
  const TransportConfig config = dead_peer_config();
  Net net(91);
  const size_t a = net.add(config, kMacA, 0, 0xA0000091);
  const size_t b = net.add(config, kMacB, 0, 0xB0000091);
  warm_up(net, a, b, 5);
  const auto lost = pattern(4096, 1);
  ASSERT_EQ(send_bytes(net, a, b, lost, ctx(1)), 0);
  net.link.set_partitioned(b, true);
  ASSERT_TRUE(wait_completions(net, a, 1, 1 * kSec));
  ASSERT_EQ(net.take(a)[0].error, kErrTimedOut);
  net.link.set_partitioned(b, false);

  std::vector<uint8_t> in(100);
  ASSERT_EQ(post_bytes(net, b, in, ctx(2)), 0);
  const auto again = pattern(100, 2);
  ASSERT_EQ(send_bytes(net, a, b, again, ctx(3)), 0);
  ASSERT_TRUE(
      net.run_until([&] { return !net.other[a].empty() && !net.other[b].empty(); }, 1 * kSec))
      << "A's new message never completed: " << net.other[a].size() << " / " << net.other[b].size();
  EXPECT_EQ(net.take(a)[0].error, 0);
  auto got = net.take(b);
  EXPECT_EQ(got[0].error, 0);
  EXPECT_EQ(got[0].context, ctx(2));
  EXPECT_TRUE(in == again);
}

TEST(TransportDeadPeer, WhatGoesAgainForWantOfAnAnswerSaysSo) {
  // Expect: frames sent because the peer did not answer in time (HELLO
  // retries, retransmission timeouts' resends) carry OutFrame::unanswered,
  // so that the encapsulation can poll the peer's link address; first
  // sends do not.
  const TransportConfig config = dead_peer_config();
  Net net(93);
  const size_t a = net.add(config, kMacA, 0, 0xA0000093);
  const size_t b = net.add(config, kMacB, 0, 0xB0000093);
  struct Seen {
    size_t first = 0, again = 0;
  };
  std::map<uint8_t, Seen> from_a;
  net.link.sent = [&](size_t from, const OutFrame& out) {
    if (from != a) return;
    Seen& seen = from_a[out.header.opcode];
    ++(out.unanswered ? seen.again : seen.first);
  };
  bool b_deaf = true;
  net.link.keep = [&](size_t from, const wire::FrameHeader&) { return from != a || !b_deaf; };
  std::vector<uint8_t> in(100);
  ASSERT_EQ(post_bytes(net, b, in, ctx(1)), 0);
  const auto message = pattern(100, 1);
  ASSERT_EQ(send_bytes(net, a, b, message, ctx(2)), 0);
  net.run_until([] { return false; }, 30 * kMs);
  const auto hello = static_cast<uint8_t>(wire::Opcode::kHello);
  EXPECT_EQ(from_a[hello].first, 1u);
  EXPECT_GE(from_a[hello].again, 2u) << "unanswered HELLOs went again, flagged";

  b_deaf = false;
  ASSERT_TRUE(wait_completions(net, a, 1, 1 * kSec));
  ASSERT_EQ(net.take(a)[0].error, 0);
  const auto data = static_cast<uint8_t>(wire::Opcode::kMsg);
  EXPECT_EQ(from_a[data].again, 0u) << "answered at once: nothing flagged";
  ASSERT_EQ(post_bytes(net, b, in, ctx(3)), 0);
  b_deaf = true;
  ASSERT_EQ(send_bytes(net, a, b, message, ctx(4)), 0);
  net.run_until([] { return false; }, 25 * kMs);
  EXPECT_GE(from_a[data].first, 2u);
  EXPECT_GE(from_a[data].again, 1u) << "a retransmission timeout's resend is flagged";
  b_deaf = false;
  ASSERT_TRUE(wait_completions(net, a, 1, 1 * kSec));
  EXPECT_EQ(net.take(a)[0].error, 0);
}

TEST(TransportDeadPeer, ReceiveHalfFilledByADeadSenderFailsWithTimeout) {
  // Expect: A dies (partition) in the middle of a 1 MiB message to B; B's
  // posted receive, half filled, completes with kErrTimedOut /
  // kProvPeerTimeout within peer_timeout_ns plus a little, not never.
  const TransportConfig config = dead_peer_config();
  Net net(93);
  const size_t a = net.add(config, kMacA, 0, 0xA0000093);
  const size_t b = net.add(config, kMacB, 0, 0xB0000093);
  warm_up(net, a, b, 3);
  std::vector<uint8_t> in(1 << 20);
  ASSERT_EQ(post_bytes(net, b, in, ctx(7)), 0);
  const auto out = pattern(1 << 20, 7);  // the send reads it until acked
  ASSERT_EQ(send_bytes(net, a, b, out, ctx(8)), 0);
  ASSERT_TRUE(net.run_until([&] { return net.engine(b).stats().frames_received > 40; }, 1 * kSec));
  net.link.set_partitioned(a, true);
  const uint64_t cut = net.link.now();
  ASSERT_TRUE(wait_completions(net, b, 1, 1 * kSec)) << "the half-filled receive never completed";
  EXPECT_LE(net.link.now() - cut, config.peer_timeout_ns + 20 * kMs);
  const auto done = net.take(b);
  EXPECT_EQ(done[0].context, ctx(7));
  EXPECT_EQ(done[0].error, kErrTimedOut);
  EXPECT_EQ(done[0].prov_errno, kProvPeerTimeout);
  const TimeoutReport& report = net.engine(b).last_timeout();
  EXPECT_EQ(report.wait, TimeoutReport::Wait::kReceive);
  EXPECT_EQ(report.peer, peer_key(kMacA, 0));
  // The receive half as it stood: open, past the segments it took.
  EXPECT_FALSE(report.rx_stalled);
  EXPECT_GT(report.next_expected, wire::kInitialSeq + 1);
  EXPECT_GE(report.waited_ns, config.peer_timeout_ns);
}

// B keeps the receive state of A's old connection across A's timeout, and A
// starts its sequence numbers again at 1 after giving up.  Without connection
// numbers B's acks for the old connection looked valid to A, and A completed
// sends that B had dropped as duplicates.
TEST(TransportDeadPeer, BurstAfterComebackIsNotSilentlyLost) {
  // Expect: every message A sends after the outage reaches B.
  const TransportConfig config = dead_peer_config();
  Net net(92);
  const size_t a = net.add(config, kMacA, 0, 0xA0000092);
  const size_t b = net.add(config, kMacB, 0, 0xB0000092);
  warm_up(net, a, b, 5);
  const auto lost = pattern(4096, 1);
  ASSERT_EQ(send_bytes(net, a, b, lost, ctx(1)), 0);
  net.link.set_partitioned(b, true);
  ASSERT_TRUE(wait_completions(net, a, 1, 1 * kSec));
  net.take(a);
  net.link.set_partitioned(b, false);
  FlowSpec spec;
  spec.src = a;
  spec.dst = b;
  spec.sizes.assign(20, 100);
  Flow& f = net.add_flow(spec);
  ASSERT_TRUE(net.run_until([&] { return f.done(); }, 1 * kSec))
      << "sends done " << f.send_done << " (failed " << f.send_failed << "), received "
      << f.received;
  EXPECT_EQ(f.problems, 0u) << f.first_problem;
}

// ===========================================================================
// 10. Restart.

class TransportRestart : public ::testing::TestWithParam<bool> {};

TEST_P(TransportRestart, OutstandingSendsFailThenNewIncarnationWorks) {
  // Expect: B replaced by B' while A has 10 sends outstanding: they fail with
  // kErrPeerReset / kProvPeerRestarted quickly (no hang, no timeout); B'
  // receives nothing of the old connection; then new sends from A reach B'
  // both with B''s session in the address and with session 0.
  const bool session_first = GetParam();
  Net net(10 + session_first);
  const size_t a = net.add(TransportConfig{}, kMacA, 0, 0xA0000010);
  const size_t b = net.add(TransportConfig{}, kMacB, 0, 0xB0000010);
  warm_up(net, a, b, 3);

  std::vector<std::vector<uint8_t>> out;
  for (size_t i = 0; i < 10; ++i) {
    out.push_back(pattern(4096, 100 + i));
    ASSERT_EQ(send_bytes(net, a, b, out[i], ctx(100 + i)), 0);
  }
  Engine& b2 = net.link.restart(b, 0xB0000011);
  std::vector<std::vector<uint8_t>> in(20, std::vector<uint8_t>(4096));
  for (size_t i = 0; i < in.size(); ++i) ASSERT_EQ(post_bytes(net, b, in[i], ctx(200 + i)), 0);

  const uint64_t start = net.link.now();
  ASSERT_TRUE(wait_completions(net, a, 10, 100 * kMs));
  EXPECT_LT(net.link.now() - start, 20 * kMs);
  auto done = net.take(a);
  ASSERT_EQ(done.size(), 10u);
  for (size_t i = 0; i < done.size(); ++i) {
    EXPECT_EQ(done[i].context, ctx(100 + i));
    EXPECT_EQ(done[i].error, kErrPeerReset);
    EXPECT_EQ(done[i].prov_errno, kProvPeerRestarted);
  }
  EXPECT_EQ(net.engine(a).stats().timeouts, 0u);
  net.run_for(20 * kMs);  // stragglers of the old connection
  EXPECT_TRUE(net.take(b).empty());
  EXPECT_EQ(b2.stats().messages_received, 0u);
  EXPECT_GT(b2.stats().stale_session, 0u);

  for (const bool with_session : {session_first, !session_first}) {
    const auto fresh = pattern(3000, with_session ? 1 : 2);
    ASSERT_EQ(send_bytes(net, a, b, fresh, ctx(300), false, 0, with_session), 0);
    ASSERT_TRUE(
        net.run_until([&] { return !net.other[a].empty() && !net.other[b].empty(); }, 100 * kMs))
        << "with_session " << with_session;
    auto sent = net.take(a);
    ASSERT_EQ(sent.size(), 1u);
    EXPECT_EQ(sent[0].error, 0) << "with_session " << with_session;
    auto got = net.take(b);
    ASSERT_EQ(got.size(), 1u);
    EXPECT_EQ(got[0].error, 0);
    EXPECT_EQ(got[0].len, fresh.size());
    const size_t slot = reinterpret_cast<uintptr_t>(got[0].context) - 200;
    EXPECT_EQ(std::memcmp(in[slot].data(), fresh.data(), fresh.size()), 0);
  }
  EXPECT_EQ(b2.stats().messages_received, 2u);
}

INSTANTIATE_TEST_SUITE_P(Address, TransportRestart, ::testing::Bool(),
                         [](const ::testing::TestParamInfo<bool>& info) {
                           return info.param ? std::string("NewSessionFirst")
                                             : std::string("SessionZeroFirst");
                         });

// An AV removal of a peer that has since restarted, as fabtests'
// fi_rdm_stress does: its server removes a departed client's address
// while the process that took over that address (the same MAC and queue on
// a shared port) already talks to it.
TEST(AvRemoval, LeavesTheIncarnationThatCameAfterTheAddress) {
  // Expect: A named B's address (at `named_at`); B restarts as B2, which
  // sends A five messages; A removes the address after the first arrived
  // (drop_peer with the time it was named): B2's five sends complete
  // without error and A takes all five.  A removal naming B's old session
  // leaves B2's connection alone too; one naming B2's session, or an
  // address named after the restart, drops it.
  Net net(12);
  const size_t a = net.add(TransportConfig{}, kMacA, 0, 0xA0000010);
  const size_t b = net.add(TransportConfig{}, kMacB, 0, 0xB0000010);
  warm_up(net, b, a, 3);
  warm_up(net, a, b, 3);
  const uint64_t named_at = net.link.now();
  net.run_for(1 * kMs);

  Engine& b2 = net.link.restart(b, 0xB0000011);
  std::vector<std::vector<uint8_t>> in(5, std::vector<uint8_t>(30000));
  for (size_t i = 0; i < in.size(); ++i) ASSERT_EQ(post_bytes(net, a, in[i], ctx(200 + i)), 0);
  std::vector<std::vector<uint8_t>> out;
  for (size_t i = 0; i < in.size(); ++i) {
    out.push_back(pattern(30000, 10 + i));
    ASSERT_EQ(send_bytes(net, b, a, out[i], ctx(100 + i)), 0);
  }
  ASSERT_TRUE(wait_completions(net, a, 1, 100 * kMs));
  net.engine(a).drop_peer(net.link.key(b), 0, named_at);
  EXPECT_EQ(net.engine(a).stats().drops_of_other_incarnations, 1u);

  ASSERT_TRUE(wait_completions(net, b, 5, 1 * kSec));
  ASSERT_TRUE(wait_completions(net, a, 5, 1 * kSec));
  for (const auto& done : net.take(b)) EXPECT_EQ(done.error, 0) << "B2's send failed";
  const auto got = net.take(a);
  ASSERT_EQ(got.size(), 5u);
  for (const auto& done : got) {
    EXPECT_EQ(done.error, 0);
    const size_t slot = reinterpret_cast<uintptr_t>(done.context) - 200;
    EXPECT_EQ(in[slot], out[slot]) << "message " << slot;
  }
  EXPECT_EQ(b2.stats().messages_received, 0u);

  // By session: the old one's removal leaves B2 be; B2's own drops it.
  net.engine(a).drop_peer(net.link.key(b), 0xB0000010, 0);
  EXPECT_EQ(net.engine(a).stats().drops_of_other_incarnations, 2u);
  net.engine(a).drop_peer(net.link.key(b), 0xB0000011, 0);
  EXPECT_EQ(net.engine(a).stats().drops_of_other_incarnations, 2u);
  // An address named after the restart named B2: dropped.
  net.engine(a).drop_peer(net.link.key(b), 0, net.link.now());
  EXPECT_EQ(net.engine(a).stats().drops_of_other_incarnations, 2u);
}

// ===========================================================================
// 11. Cancel.

TEST(TransportCancel, CancelPostedReceive) {
  // Expect: cancelling a posted receive gives a kErrCanceled completion with
  // its context and the buffer is never written; an unknown context, or the
  // same one again, gives -ENOENT.
  Net net(11);
  const size_t a = net.add(TransportConfig{}, kMacA, 0, 0xA0000011);
  const size_t b = net.add(TransportConfig{}, kMacB, 0, 0xB0000011);
  std::vector<uint8_t> first(100, 0xCC), second(100, 0xCC);
  ASSERT_EQ(post_bytes(net, b, first, ctx(1)), 0);
  ASSERT_EQ(post_bytes(net, b, second, ctx(2)), 0);
  ASSERT_EQ(net.engine(b).cancel_recv(ctx(1)), 0);
  auto done = net.take(b);
  ASSERT_EQ(done.size(), 1u);
  EXPECT_EQ(done[0].kind, Completion::Kind::kRecv);
  EXPECT_EQ(done[0].context, ctx(1));
  EXPECT_EQ(done[0].error, kErrCanceled);
  EXPECT_EQ(net.engine(b).posted_recvs(), 1u);
  EXPECT_EQ(net.engine(b).cancel_recv(ctx(1)), -ENOENT);
  EXPECT_EQ(net.engine(b).cancel_recv(ctx(999)), -ENOENT);

  const auto m = pattern(80, 11);
  ASSERT_EQ(send_bytes(net, a, b, m, ctx(21)), 0);
  ASSERT_TRUE(wait_completions(net, b, 1, 100 * kMs));
  done = net.take(b);
  EXPECT_EQ(done[0].context, ctx(2));
  EXPECT_EQ(std::memcmp(second.data(), m.data(), m.size()), 0);
  EXPECT_EQ(std::count(first.begin(), first.end(), 0xCC), 100);
  EXPECT_TRUE(net.take(b).empty());
}

}  // namespace
}  // namespace ofi_dpdk::proto

TEST(PeerKey, IsTheQueueThenTheMacMostSignificantFirst) {
  // Expect: the queue in the top 16 bits, then the MAC's bytes in wire
  // order: keys sort and print as the address reads.
  const uint8_t mac[6] = {0x02, 0x11, 0x22, 0x33, 0x44, 0xf5};
  EXPECT_EQ(ofi_dpdk::proto::peer_key(mac, 0x0102), 0x0102'0211'2233'44f5ull);
  EXPECT_EQ(ofi_dpdk::proto::peer_key(mac, 0), 0x0000'0211'2233'44f5ull);
  EXPECT_EQ(ofi_dpdk::proto::peer_key(mac, 0xffff), 0xffff'0211'2233'44f5ull);
}
