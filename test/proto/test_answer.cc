// What a receiver answers, and when: Engine::answer() sends, between the
// bursts of one progress pass, the acks the frames taken so far owe (an ack
// taken lets its sender's data out at once); and the acks of a receiver that
// closed its window are not read as loss.  Frames move by hand between the engines of a pair
// (no link step, so no poll runs) where a test must see one pass from the
// inside; otherwise over the in-memory link.  Each test says what it expects
// in `// Expect:` comments.
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "lib/proto/engine_state.h"
#include "lib/proto/frame_codec.h"
#include "test/proto/engine_pair.h"

namespace ofi_dpdk::proto {
namespace {

using sim::Pair;
using sim::take_outbox;

constexpr uint64_t kMs = 1'000'000;
constexpr uint64_t kSec = 1'000'000'000;
constexpr uint16_t kType = wire::kDefaultEtherType;

void* ctx(uintptr_t n) {
  return reinterpret_cast<void*>(n);
}

wire::FrameHeader header_of(const std::vector<uint8_t>& bytes) {
  DecodedFrame frame;
  EXPECT_EQ(decode_frame(bytes.data(), bytes.size(), kType, &frame), DecodeResult::kOk);
  return frame.header;
}

void hand_to(Engine& engine, const std::vector<uint8_t>& bytes, uint64_t now_ns) {
  DecodedFrame frame;
  ASSERT_EQ(decode_frame(bytes.data(), bytes.size(), kType, &frame), DecodeResult::kOk);
  engine.on_frame(Segment{frame.src_mac, &frame.header, frame.payload}, now_ns);
}

TEST(Answer, AcksLeaveBetweenBurstsAndLetMoreDataOut) {
  // Expect: B takes the first 8 segments of a 64 KiB message and sends
  // nothing until it answers; its answer is one ACK for exactly those 8.
  // Given that ACK, A has new segments to send, past the ones it had sent.
  // The message then arrives whole.
  Pair p(71);
  ASSERT_TRUE(p.warm_up());
  Engine& a = p.engine(p.a);
  Engine& b = p.engine(p.b);
  std::vector<uint8_t> message(64 << 10), in(64 << 10);
  for (size_t i = 0; i < message.size(); ++i) message[i] = static_cast<uint8_t>(i * 13 + 5);
  ASSERT_EQ(p.post(p.b, &in, ctx(1)), 0);
  ASSERT_EQ(p.send(p.a, p.b, message, ctx(2)), 0);
  std::vector<std::vector<uint8_t>> from_a = take_outbox(a, sim::kPairMacA);
  ASSERT_GT(from_a.size(), 8u) << "the window lets more than one burst out";
  const uint32_t first_seq = header_of(from_a.front()).seq;
  const uint32_t last_sent = header_of(from_a.back()).seq;
  const uint64_t now = p.link.now();

  for (size_t i = 0; i < 8; ++i) hand_to(b, from_a[i], now);
  EXPECT_TRUE(b.outbox().empty()) << "frames taken send nothing by themselves";
  b.answer(now);
  std::vector<std::vector<uint8_t>> from_b = take_outbox(b, sim::kPairMacB);
  ASSERT_EQ(from_b.size(), 1u);
  const wire::FrameHeader ack = header_of(from_b[0]);
  EXPECT_EQ(ack.opcode, static_cast<uint8_t>(wire::Opcode::kAck));
  EXPECT_EQ(ack.ack, first_seq + 8);

  hand_to(a, from_b[0], now);
  std::vector<std::vector<uint8_t>> more = take_outbox(a, sim::kPairMacA);
  ASSERT_FALSE(more.empty()) << "the ack opened the window";
  EXPECT_EQ(header_of(more.front()).seq, last_sent + 1);

  // Nothing new taken: nothing to answer.
  b.answer(now);
  EXPECT_TRUE(b.outbox().empty());

  for (size_t i = 8; i < from_a.size(); ++i) hand_to(b, from_a[i], now);
  for (const auto& frame : more) hand_to(b, frame, now);
  ASSERT_TRUE(p.wait(p.b, 1, 1 * kSec));
  EXPECT_EQ(p.done[p.b][0].error, 0);
  EXPECT_EQ(in, message);
}

TEST(Answer, AClosedWindowIsNotALoss) {
  // Expect: B posts no receive and buffers at most 8 KiB, so it closes its
  // window while A's 4 KiB messages keep coming; what B holds beyond the
  // refused segment shows in its SACK bits.  A resends nothing on those
  // acks (no fast retransmit), and its timeouts under the closed window
  // only probe: its congestion window is not cut.  Once B posts receives,
  // all 40 messages arrive in order.
  TransportConfig receiver;
  receiver.unexpected_bytes = 8 << 10;
  Pair p(72, TransportConfig{}, receiver);
  ASSERT_TRUE(p.warm_up());
  const Connection& to_b = *p.engine(p.a).find(p.link.key(p.b));
  const uint32_t window_before = to_b.cwnd_x256;
  std::vector<std::vector<uint8_t>> messages;
  for (size_t i = 0; i < 40; ++i) messages.emplace_back(4096, static_cast<uint8_t>(i + 1));
  for (size_t i = 0; i < messages.size(); ++i)
    ASSERT_EQ(p.send(p.a, p.b, messages[i], ctx(100 + i)), 0);
  p.run_for(50 * kMs);
  EXPECT_GT(p.engine(p.b).stats().stalled_no_buffer, 0u);
  EXPECT_EQ(to_b.peer_window, 0u);
  EXPECT_EQ(p.engine(p.a).stats().fast_retransmits, 0u);
  EXPECT_GT(p.engine(p.a).stats().retransmitted, 0u) << "the timeouts probed the closed window";
  EXPECT_GE(to_b.cwnd_x256, window_before);

  std::vector<std::vector<uint8_t>> in(messages.size(), std::vector<uint8_t>(4096));
  for (size_t i = 0; i < in.size(); ++i) ASSERT_EQ(p.post(p.b, &in[i], ctx(200 + i)), 0);
  ASSERT_TRUE(p.wait(p.b, messages.size(), 2 * kSec));
  for (size_t i = 0; i < messages.size(); ++i) {
    EXPECT_EQ(p.done[p.b][i].error, 0);
    EXPECT_EQ(in[i], messages[i]) << "message " << i;
  }
  EXPECT_GE(to_b.cwnd_x256, window_before);
}

}  // namespace
}  // namespace ofi_dpdk::proto
