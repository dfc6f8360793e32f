// Segments held ahead of a gap: with a FrameKeeper (transport.h) they stay
// in their received frames until the gap closes, and every frame kept is
// released exactly once, whether the gap closes or the connection goes;
// without one, or when it cannot spare a frame, they are copied.  Frames
// move by hand from A's outbox to B, the byte vectors standing for the
// provider's mbufs.  Each test says what it expects in `// Expect:` comments.
#include <gtest/gtest.h>

#include <set>
#include <vector>

#include "lib/proto/frame_codec.h"
#include "test/proto/engine_pair.h"

namespace ofi_dpdk::proto {
namespace {

using sim::Pair;

constexpr uint64_t kSec = 1'000'000'000;
constexpr uint16_t kType = wire::kDefaultEtherType;

void* ctx(uintptr_t n) {
  return reinterpret_cast<void*>(n);
}

struct CountingKeeper final : FrameKeeper {
  bool keep(void* frame) override {
    if (!spare) return false;
    EXPECT_TRUE(live.insert(frame).second) << "a frame kept twice";
    ++kept;
    return true;
  }
  void release(void* frame) override {
    EXPECT_EQ(live.erase(frame), 1u) << "released a frame not kept, or twice";
    ++released;
  }
  bool spare = true;
  std::set<void*> live;
  int kept = 0, released = 0;
};

// A sends `message` to B; its first outbox frame is withheld, the others
// reach B, each with its byte vector as the frame a keeper may keep.
struct Gap {
  explicit Gap(Pair& p, const std::vector<uint8_t>& message) : p(p) {
    EXPECT_EQ(p.send(p.a, p.b, message, ctx(1)), 0);
    frames = sim::take_outbox(p.engine(p.a), sim::kPairMacA);
    for (size_t i = 1; i < frames.size(); ++i) hand_over(i);
  }
  void hand_over(size_t i) {
    DecodedFrame frame;
    ASSERT_EQ(decode_frame(frames[i].data(), frames[i].size(), kType, &frame), DecodeResult::kOk);
    p.engine(p.b).on_frame(Segment{frame.src_mac, &frame.header, frame.payload, &frames[i]},
                           p.link.now());
  }
  Pair& p;
  std::vector<std::vector<uint8_t>> frames;
};

std::vector<uint8_t> pattern(size_t length) {
  std::vector<uint8_t> bytes(length);
  for (size_t i = 0; i < length; ++i) bytes[i] = static_cast<uint8_t>(i * 29 + 3);
  return bytes;
}

TEST(Reorder, SegmentsAheadOfAGapStayInTheirFramesUntilItCloses) {
  // Expect: every segment after the missing first one is kept in its frame
  // (one keep each, none released while the gap is open); when the first
  // arrives the message completes byte-exact and every kept frame is
  // released once.
  CountingKeeper keeper;  // outlives the engines
  Pair p(81);
  p.engine(p.b).set_frame_keeper(&keeper);
  ASSERT_TRUE(p.warm_up());
  const std::vector<uint8_t> message = pattern(12 * 1444);
  std::vector<uint8_t> in(message.size());
  ASSERT_EQ(p.post(p.b, &in, ctx(2)), 0);
  Gap gap(p, message);
  ASSERT_GE(gap.frames.size(), 12u);
  EXPECT_EQ(keeper.kept, static_cast<int>(gap.frames.size()) - 1);
  EXPECT_EQ(keeper.released, 0);
  gap.hand_over(0);
  ASSERT_TRUE(p.wait(p.b, 1, 1 * kSec));
  EXPECT_EQ(p.done[p.b][0].error, 0);
  EXPECT_EQ(in, message);
  EXPECT_EQ(keeper.released, keeper.kept);
  EXPECT_TRUE(keeper.live.empty());
}

TEST(Reorder, AConnectionDroppedWithSegmentsHeldReleasesTheirFrames) {
  // Expect: B drops its peer A while it holds segments ahead of a gap: all
  // their frames are released then, not later.
  CountingKeeper keeper;  // outlives the engines
  Pair p(82);
  p.engine(p.b).set_frame_keeper(&keeper);
  ASSERT_TRUE(p.warm_up());
  std::vector<uint8_t> in(8 * 1444);
  ASSERT_EQ(p.post(p.b, &in, ctx(2)), 0);
  Gap gap(p, pattern(in.size()));
  ASSERT_GT(keeper.kept, 0);
  p.engine(p.b).drop_peer(p.link.key(p.a));
  EXPECT_EQ(keeper.released, keeper.kept);
  EXPECT_TRUE(keeper.live.empty());
}

TEST(Reorder, AKeeperWithoutFramesToSpareGetsCopies) {
  // Expect: a keeper that cannot spare frames keeps none; the segments are
  // copied and the message still completes byte-exact once the gap closes,
  // even though their frames were overwritten meanwhile.
  CountingKeeper keeper;  // outlives the engines
  Pair p(83);
  keeper.spare = false;
  p.engine(p.b).set_frame_keeper(&keeper);
  ASSERT_TRUE(p.warm_up());
  const std::vector<uint8_t> message = pattern(6 * 1444);
  std::vector<uint8_t> in(message.size());
  ASSERT_EQ(p.post(p.b, &in, ctx(2)), 0);
  Gap gap(p, message);
  for (size_t i = 1; i < gap.frames.size(); ++i)
    std::fill(gap.frames[i].begin(), gap.frames[i].end(), 0xEE);
  gap.hand_over(0);
  ASSERT_TRUE(p.wait(p.b, 1, 1 * kSec));
  EXPECT_EQ(in, message);
  EXPECT_EQ(keeper.kept, 0);
  EXPECT_EQ(keeper.released, 0);
}

}  // namespace
}  // namespace ofi_dpdk::proto
