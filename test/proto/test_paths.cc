// Paths: a connection's frames carry its path (OutFrame::path, the UDP
// encapsulation's source port), which stays while frames get through and
// moves on when a retransmission timeout, or a HELLO resent, says the path
// may be what lost them.  Frames are taken from the outbox by hand and
// dropped, so that nothing answers.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <vector>

#include "test/proto/engine_pair.h"

namespace ofi_dpdk::proto {
namespace {

constexpr uint64_t kMs = 1'000'000;

// Polls `engine` every millisecond for up to `limit_ns`, dropping what it
// sends, until its path changes were counted `changes` times; returns the
// paths of the frames it sent, in order.
std::vector<uint8_t> drop_until(Engine& engine, uint64_t* now, uint64_t changes,
                                uint64_t limit_ns) {
  std::vector<uint8_t> paths;
  for (const uint64_t end = *now + limit_ns; *now < end; *now += kMs) {
    engine.poll(*now);
    for (const OutFrame& frame : engine.outbox()) paths.push_back(frame.path);
    engine.frames_sent();
    if (engine.stats().path_changes >= changes) break;
  }
  return paths;
}

TEST(Paths, FramesKeepTheirPathUntilARetransmissionTimeoutMovesIt) {
  // Segments no larger than any fallback MTU's: the timeout sends no probe
  // of the path's size beside the resent one (test_path_mtu.cc).
  TransportConfig config;
  config.max_payload = 1100;
  sim::Pair pair(11, config, config);
  ASSERT_TRUE(pair.warm_up());
  Engine& a = pair.engine(pair.a);
  uint64_t now = pair.link.now();
  a.poll(now);
  a.frames_sent();
  EXPECT_EQ(a.stats().path_changes, 0u) << "a loss-free warm-up keeps its path";
  static const std::vector<uint8_t> message(3000, 0x11);
  ASSERT_EQ(pair.send(pair.a, pair.b, message, nullptr), 0);
  const std::vector<uint8_t> paths = drop_until(a, &now, 1, 2000 * kMs);
  ASSERT_EQ(a.stats().path_changes, 1u) << "one retransmission timeout within 2 s";
  ASSERT_GE(paths.size(), 2u);
  // Every frame before the timeout (segments, probes) on the first path,
  // the resent segment on the next.
  for (size_t i = 0; i + 1 < paths.size(); ++i) EXPECT_EQ(paths[i], paths[0]) << "frame " << i;
  EXPECT_EQ(paths.back(), static_cast<uint8_t>(paths[0] + 1));
}

TEST(Paths, AResentHelloTakesTheNextPath) {
  sim::Pair pair(12);
  Engine& a = pair.engine(pair.a);
  uint64_t now = pair.link.now();
  static const std::vector<uint8_t> message(8, 0x22);
  ASSERT_EQ(pair.send(pair.a, pair.b, message, nullptr), 0);
  const std::vector<uint8_t> first = drop_until(a, &now, 0, kMs);
  ASSERT_FALSE(first.empty()) << "the HELLO";
  const std::vector<uint8_t> again = drop_until(a, &now, 1, 2000 * kMs);
  ASSERT_EQ(a.stats().path_changes, 1u);
  ASSERT_FALSE(again.empty());
  EXPECT_EQ(again.back(), static_cast<uint8_t>(first.front() + 1));
}

// A peer whose path carries less than max_payload (a router's links):
// only one side knows (its provider sees the peer beyond its gateway), and
// still every segment either way fits: messages, a request, its response,
// and the other side's own messages back.
TEST(Paths, APathLimitKnownToOneSideBindsBothWays) {
  constexpr uint32_t kLimit = 1000;
  TransportConfig config;
  config.max_payload = 8912;
  sim::Pair pair(13, config, config);
  pair.engine(pair.a).set_path_limit([](const uint8_t*) { return kLimit; });
  uint16_t largest[2] = {0, 0};
  size_t data_frames = 0;
  pair.link.tap = [&](size_t from, size_t, const wire::FrameHeader& h) {
    if (!wire::opcode_is_data(h.opcode) && h.opcode != static_cast<uint8_t>(wire::Opcode::kBundle))
      return;
    ++data_frames;
    largest[from] = std::max(largest[from], h.payload_len);
  };
  pair.reply_bytes = 20000;
  std::vector<uint8_t> response(20000);
  ASSERT_EQ(pair.request(&response, &response), 0);
  std::vector<uint8_t> big(30000, 0x33), into_b(30000), into_a(30000);
  ASSERT_EQ(pair.post(pair.b, &into_b, &into_b), 0);
  ASSERT_EQ(pair.post(pair.a, &into_a, &into_a), 0);
  ASSERT_EQ(pair.send(pair.a, pair.b, big, &big), 0);
  ASSERT_EQ(pair.send(pair.b, pair.a, big, &big), 0);
  ASSERT_TRUE(pair.wait(pair.a, 3, 2'000'000'000)) << "request, send, receive at A";
  ASSERT_TRUE(pair.wait(pair.b, 2, 2'000'000'000)) << "send, receive at B";
  EXPECT_EQ(into_b, big);
  EXPECT_EQ(into_a, big);
  EXPECT_GT(data_frames, 60u);
  EXPECT_EQ(largest[pair.a], kLimit) << "A's segments fill the limit, no more";
  EXPECT_EQ(largest[pair.b], kLimit) << "B's too, told in A's handshakes";
}

// Spraying (TransportConfig::spray_paths): one connection's frames take
// its paths in turn, and a large message arrives whole.
TEST(Paths, SprayedFramesTakeEveryLaneInTurn) {
  TransportConfig config;
  config.spray_paths = 4;
  sim::Pair pair(15, config, config);
  std::map<uint8_t, size_t> frames_on;
  pair.link.keep_path = [&](size_t from, uint8_t path) {
    if (from == pair.a) ++frames_on[path];
    return true;
  };
  std::vector<uint8_t> big(200000), into(200000);
  for (size_t i = 0; i < big.size(); ++i) big[i] = static_cast<uint8_t>(i * 13 + 5);
  ASSERT_EQ(pair.post(pair.b, &into, &into), 0);
  ASSERT_EQ(pair.send(pair.a, pair.b, big, &big), 0);
  ASSERT_TRUE(pair.wait(pair.b, 1, 2'000'000'000));
  EXPECT_EQ(into, big);
  // (The HELLO goes on the connection's own path before the lanes start.)
  size_t total = 0;
  for (const auto& [path, count] : frames_on) total += count;
  ASSERT_GE(frames_on.size(), 4u);
  size_t lanes = 0;
  for (const auto& [path, count] : frames_on) lanes += count * 5 >= total ? 1 : 0;
  EXPECT_EQ(lanes, 4u) << "four paths, each with a fifth of the frames or more";
  EXPECT_EQ(pair.engine(pair.a).stats().path_changes, 0u) << "nothing lost: no lane moved";
}

// RSS (HandshakeBody::reaching_ports): the answering side names source
// ports its NIC steers to its endpoint's queue; the opener's frames of the
// connection then come from them, each path from its own (lanes in turn),
// while frames to a side that named none carry none (the encapsulation
// picks by path).
TEST(Paths, TheAnswerersReachingPortsBecomeTheOpenersSourcePorts) {
  static constexpr uint16_t kPorts[] = {50001, 50002, 50003};
  TransportConfig config;
  config.spray_paths = 2;
  sim::Pair pair(17, config, config);
  pair.engine(pair.b).set_reaching_ports(
      [&](const uint8_t*, uint16_t peer_queue, std::span<uint16_t> out) {
        EXPECT_EQ(peer_queue, pair.link.queue(pair.a)) << "the opener's queue";
        const size_t count = std::min(std::size(kPorts), out.size());
        std::copy(kPorts, kPorts + count, out.begin());
        return count;
      });
  ASSERT_TRUE(pair.warm_up());  // a opened to b; b's HELLO_ACK named the ports
  Engine& a = pair.engine(pair.a);
  Engine& b = pair.engine(pair.b);
  uint64_t now = pair.link.now();
  static const std::vector<uint8_t> message(20000, 0x33);
  ASSERT_EQ(pair.send(pair.a, pair.b, message, nullptr), 0);
  a.poll(now);
  std::map<uint16_t, size_t> frames_from;
  for (const OutFrame& frame : a.outbox()) {
    const size_t n = std::size(kPorts);
    EXPECT_EQ(frame.source_port, kPorts[(frame.path + frame.path / n) % n]);
    ++frames_from[frame.source_port];
  }
  a.frames_sent();
  EXPECT_EQ(frames_from.size(), 2u) << "two lanes, two of the ports";
  // b's own connection to a: a named no ports.
  ASSERT_EQ(pair.send(pair.b, pair.a, message, nullptr), 0);
  b.poll(now);
  ASSERT_FALSE(b.outbox().empty());
  for (const OutFrame& frame : b.outbox()) EXPECT_EQ(frame.source_port, 0);
  b.frames_sent();
}

// Ports outside the dynamic range (49152-65535) are no source port a peer
// may point us at: ignored.
TEST(Paths, ReachingPortsOutsideTheDynamicRangeAreIgnored) {
  sim::Pair pair(18);
  pair.engine(pair.b).set_reaching_ports([](const uint8_t*, uint16_t, std::span<uint16_t> out) {
    out[0] = 9229;
    out[1] = 50000;
    return size_t{2};
  });
  ASSERT_TRUE(pair.warm_up());
  Engine& a = pair.engine(pair.a);
  static const std::vector<uint8_t> message(3000, 0x44);
  ASSERT_EQ(pair.send(pair.a, pair.b, message, nullptr), 0);
  a.poll(pair.link.now());
  ASSERT_FALSE(a.outbox().empty());
  for (const OutFrame& frame : a.outbox()) EXPECT_EQ(frame.source_port, 0);
  a.frames_sent();
}

// A path that drops every frame (a broken route): the lanes on it move
// to paths not used before, and the message arrives all the same.
TEST(Paths, ASprayedLaneOnABrokenPathMoves) {
  TransportConfig config;
  config.spray_paths = 4;
  sim::Pair pair(16, config, config);
  ASSERT_TRUE(pair.warm_up());
  constexpr uint8_t kBroken = 1;  // the second lane's first path
  size_t late_on_broken = 0, late = 0;
  bool counting = false;
  pair.link.keep_path = [&](size_t from, uint8_t path) {
    if (counting && from == pair.a) {
      ++late;
      late_on_broken += path == kBroken ? 1 : 0;
    }
    return path != kBroken;
  };
  std::vector<uint8_t> big(300000), into(300000), more(300000, 0x5A), into_more(300000);
  for (size_t i = 0; i < big.size(); ++i) big[i] = static_cast<uint8_t>(i * 29 + 3);
  ASSERT_EQ(pair.post(pair.b, &into, &into), 0);
  ASSERT_EQ(pair.send(pair.a, pair.b, big, &big), 0);
  ASSERT_TRUE(pair.wait(pair.b, 1, 5'000'000'000));
  EXPECT_EQ(into, big);
  EXPECT_GE(pair.engine(pair.a).stats().path_changes, 1u);
  // Once moved, the broken path carries nothing more.
  counting = true;
  ASSERT_EQ(pair.post(pair.b, &into_more, &into_more), 0);
  ASSERT_EQ(pair.send(pair.a, pair.b, more, &more), 0);
  ASSERT_TRUE(pair.wait(pair.b, 2, 5'000'000'000));
  EXPECT_EQ(into_more, more);
  EXPECT_GT(late, 100u);
  EXPECT_EQ(late_on_broken, 0u);
}

// Spraying over a link that drops and reorders: a large message and a
// request arrive whole.
TEST(Paths, SprayingSurvivesLossAndReordering) {
  TransportConfig config;
  config.spray_paths = 8;
  sim::Pair pair(17, config, config);
  pair.link.faults().drop = 0.05;
  pair.link.faults().reorder = 0.10;
  std::vector<uint8_t> big(500000), into(500000);
  for (size_t i = 0; i < big.size(); ++i) big[i] = static_cast<uint8_t>(i * 7 + 11);
  ASSERT_EQ(pair.post(pair.b, &into, &into), 0);
  ASSERT_EQ(pair.send(pair.a, pair.b, big, &big), 0);
  ASSERT_TRUE(pair.wait(pair.b, 1, 20'000'000'000));
  EXPECT_EQ(into, big);
}

// The provider gave up on a peer's next hop (no ARP answer): its sends
// fail with kErrHostUnreachable, and the frames already built for it leave
// the outbox, so the flush that follows does not ask for that next hop
// again; a frame to another peer stays.
TEST(Paths, APeerFoundUnreachableTakesItsFramesOutOfTheOutbox) {
  sim::Pair pair(14);
  Engine& a = pair.engine(pair.a);
  static const std::vector<uint8_t> message(8, 0x44);
  ASSERT_EQ(pair.send(pair.a, pair.b, message, &pair), 0);
  PeerAddress other = pair.link.address(pair.b);
  other.mac[5] ^= 0x40;
  iovec iov{const_cast<uint8_t*>(message.data()), message.size()};
  SendRequest request;
  request.iov = &iov;
  request.iov_count = 1;
  request.copy = true;
  ASSERT_EQ(a.send(other, request, pair.link.now()), 0);
  const PeerAddress gone = pair.link.address(pair.b);
  const auto to = [](const OutFrame& frame, const PeerAddress& peer) {
    return std::equal(peer.mac, peer.mac + 6, frame.dst_mac);
  };
  ASSERT_EQ(a.outbox().size(), 2u) << "a HELLO to each peer";
  a.fail_unreachable([&](const uint8_t* link) { return std::equal(gone.mac, gone.mac + 6, link); });
  ASSERT_EQ(a.outbox().size(), 1u);
  EXPECT_TRUE(to(a.outbox()[0], other));
  bool failed = false;
  for (const Completion& done : a.completions())
    if (done.context == &pair) failed = done.error == kErrHostUnreachable;
  EXPECT_TRUE(failed) << "the send to the unreachable peer failed";
}

}  // namespace
}  // namespace ofi_dpdk::proto
