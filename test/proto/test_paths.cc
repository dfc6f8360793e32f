// Paths: a connection's frames carry its path (OutFrame::path, the UDP
// encapsulation's source port), which stays while frames get through and
// moves on when a retransmission timeout, or a HELLO resent, says the path
// may be what lost them.  Frames are taken from the outbox by hand and
// dropped, so that nothing answers.
#include <gtest/gtest.h>

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
  sim::Pair pair(11);
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

}  // namespace
}  // namespace ofi_dpdk::proto
