// Path MTU discovery: a connection whose path turns out narrower than its
// segments (a router quotes our frame back in an ICMP "fragmentation
// needed", or large frames simply vanish while small ones pass) cuts
// smaller segments from then on, and the segments already cut go again in
// pieces (wire::kFlagPiece) that the receiver gathers back into the
// segment.  Every message arrives once, whole and in order.
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "lib/proto/engine_state.h"
#include "lib/proto/frame_codec.h"
#include "test/proto/engine_pair.h"

namespace ofi_dpdk::proto {
namespace {

constexpr uint64_t kMs = 1'000'000;
constexpr uint64_t kSec = 1000 * kMs;
constexpr uint32_t kJumboPayload = 9000 - sizeof(wire::FrameHeader);

TransportConfig jumbo() {
  TransportConfig config;
  config.max_payload = kJumboPayload;
  config.bundle_bytes = 0;
  return config;
}

std::vector<uint8_t> pattern(size_t length, uint8_t seed) {
  std::vector<uint8_t> bytes(length);
  for (size_t i = 0; i < length; ++i) bytes[i] = static_cast<uint8_t>(i * 13 + seed);
  return bytes;
}

// The connection engine `from` holds to the other side of the pair.
const Connection& connection_of(sim::Pair& pair, size_t from) {
  const size_t to = from == pair.a ? pair.b : pair.a;
  const Connection* c = pair.engine(from).find(pair.link.key(to));
  EXPECT_NE(c, nullptr);
  return *c;
}

// Sends `count` messages of `length` bytes from A to B, the receives posted
// first, and checks each arrived once, whole, in order.
void send_and_check(sim::Pair& pair, size_t count, size_t length, uint64_t limit_ns) {
  std::vector<std::vector<uint8_t>> in(count, std::vector<uint8_t>(length));
  std::vector<std::vector<uint8_t>> out;
  for (size_t i = 0; i < count; ++i) {
    out.push_back(pattern(length, static_cast<uint8_t>(i)));
    ASSERT_EQ(pair.post(pair.b, &in[i], &in[i]), 0);
  }
  for (size_t i = 0; i < count; ++i) ASSERT_EQ(pair.send(pair.a, pair.b, out[i], &out[i]), 0);
  ASSERT_TRUE(pair.wait(pair.b, count, limit_ns)) << pair.done[pair.b].size() << " of " << count;
  ASSERT_TRUE(pair.wait(pair.a, count, limit_ns));
  ASSERT_EQ(pair.done[pair.b].size(), count) << "nothing twice";
  for (size_t i = 0; i < count; ++i) {
    EXPECT_EQ(pair.done[pair.a][i].error, 0);
    EXPECT_EQ(pair.done[pair.b][i].error, 0);
    EXPECT_EQ(pair.done[pair.b][i].context, &in[i]) << "in order";
    EXPECT_TRUE(in[i] == out[i]) << "message " << i << " arrived whole";
  }
}

TEST(PathMtu, LargeFramesThatVanishAreCutSmallerAndWhatWasCutGoesInPieces) {
  // A switch between A and B carries 1500-byte frames while both ends
  // speak 9000: every larger frame is dropped without a word.  Expect: A
  // narrows its connection to the first fallback (1500), once, on its own;
  // the segments it cut at 9000 arrive as pieces; all messages arrive.
  sim::Pair pair(41, jumbo(), jumbo());
  ASSERT_TRUE(pair.warm_up());
  size_t too_large = 0;
  pair.link.keep = [&](size_t, const wire::FrameHeader& h) {
    if (sizeof(wire::FrameHeader) + h.payload_len <= 1500) return true;
    ++too_large;
    return false;
  };
  send_and_check(pair, 8, 64 << 10, 10 * kSec);
  const TransportStats& a = pair.engine(pair.a).stats();
  EXPECT_GT(too_large, 0u);
  EXPECT_EQ(a.path_narrowed_by_silence, 1u);
  EXPECT_GT(a.pieces_sent, 0u);
  EXPECT_GT(pair.engine(pair.b).stats().segments_from_pieces, 0u);
  EXPECT_EQ(connection_of(pair, pair.a).tx_max_payload, 1500 - sizeof(wire::FrameHeader));
}

TEST(PathMtu, AConnectionWhoseEverySegmentIsTooLargeStillNarrows) {
  // No warm-up: the handshake passes (small frames), but not one segment
  // reaches B, so B's receive half is not open when A's probe asks about
  // it.  Expect: the probe, carrying the token B granted, opens it and is
  // answered (no RESET ends A's connection); A narrows and all arrives.
  sim::Pair pair(46, jumbo(), jumbo());
  pair.link.keep = [&](size_t, const wire::FrameHeader& h) {
    return sizeof(wire::FrameHeader) + h.payload_len <= 1500;
  };
  send_and_check(pair, 2, 32 << 10, 10 * kSec);
  EXPECT_EQ(pair.engine(pair.a).stats().path_narrowed_by_silence, 1u);
  EXPECT_EQ(pair.engine(pair.b).stats().resets_sent, 0u);
}

TEST(PathMtu, ALargeSegmentWhoseSmallTailArrivesStillNarrows) {
  // One message of a full segment and a small tail, one at a time (a
  // pingpong just above the path's size): the tail arrives, and its SACK
  // has the large one resent at every answer of the peer's.  Expect: A
  // narrows, each message arrives.
  sim::Pair pair(47, jumbo(), jumbo());
  ASSERT_TRUE(pair.warm_up());
  pair.link.keep = [&](size_t, const wire::FrameHeader& h) {
    return sizeof(wire::FrameHeader) + h.payload_len <= 1500;
  };
  for (int i = 0; i < 3; ++i) {
    send_and_check(pair, 1, kJumboPayload + 100, 10 * kSec);
    pair.done[pair.a].clear();
    pair.done[pair.b].clear();
  }
  EXPECT_EQ(pair.engine(pair.a).stats().path_narrowed_by_silence, 1u);
}

TEST(PathMtu, ARouterNamingTheConnectionNarrowsItAtOnce) {
  // The first 9000-byte segments are dropped by a router whose next link
  // carries 4000; its ICMP quotes our frame (conn and token).  Expect: that
  // word narrows A's connection to what the ICMP says, at once (not after
  // timeouts), the dropped segments go again in pieces right away, and
  // everything arrives.  A word with another token, or a larger size,
  // changes nothing.
  sim::Pair pair(42, jumbo(), jumbo());
  ASSERT_TRUE(pair.warm_up());
  constexpr uint32_t kNarrow = 4000 - sizeof(wire::FrameHeader);
  Engine& a = pair.engine(pair.a);
  const Connection& c = connection_of(pair, pair.a);
  const uint8_t* b_mac = pair.link.mac(pair.b);
  const uint16_t b_queue = pair.link.queue(pair.b);
  EXPECT_FALSE(a.on_path_too_big(b_mac, b_queue, c.tx_conn, c.tx_token + 1, kNarrow, 0))
      << "a stranger's guess";
  EXPECT_FALSE(a.on_path_too_big(b_mac, b_queue, c.tx_conn, c.tx_token, kJumboPayload, 0))
      << "not narrower";
  EXPECT_FALSE(a.on_path_too_big(b_mac, b_queue, c.tx_conn, c.tx_token, 100, 0))
      << "below anything a real path carries";
  EXPECT_EQ(c.tx_max_payload, kJumboPayload);

  bool icmp_sent = false;
  pair.link.keep = [&](size_t from, const wire::FrameHeader& h) {
    if (sizeof(wire::FrameHeader) + h.payload_len <= 4000) return true;
    if (from == pair.a && !icmp_sent) {
      icmp_sent = true;  // the router answers the first frame it drops (rate-limited)
      EXPECT_TRUE(pair.engine(pair.a).on_path_too_big(b_mac, b_queue, h.conn, h.token, kNarrow,
                                                      pair.link.now()));
    }
    return false;
  };
  send_and_check(pair, 4, 100 << 10, 2 * kSec);
  EXPECT_TRUE(icmp_sent);
  EXPECT_EQ(a.stats().path_narrowed_by_icmp, 1u);
  EXPECT_EQ(a.stats().path_narrowed_by_silence, 0u);
  EXPECT_EQ(a.stats().retransmit_timeouts, 0u) << "no timer waited for the repair";
  EXPECT_GT(a.stats().pieces_sent, 0u);
  EXPECT_EQ(c.tx_max_payload, kNarrow);
}

TEST(PathMtu, PiecesOutOfOrderLostAndRepeatedMakeTheSegmentOnce) {
  // Pieces cross a link that reorders, loses and duplicates frames.
  // Expect: every message arrives once, whole, in order.
  sim::Pair pair(43, jumbo(), jumbo());
  ASSERT_TRUE(pair.warm_up());
  pair.link.keep = [&](size_t, const wire::FrameHeader& h) {
    return sizeof(wire::FrameHeader) + h.payload_len <= 1500;
  };
  pair.link.faults().drop = 0.05;
  pair.link.faults().duplicate = 0.05;
  pair.link.faults().reorder = 0.2;
  send_and_check(pair, 16, 48 << 10, 30 * kSec);
  EXPECT_GT(pair.engine(pair.b).stats().segments_from_pieces, 0u);
}

TEST(PathMtu, ALossyLinkThatCarriesLargeFramesIsNotNarrowed) {
  // Loss of every size is not a narrow path: frames of 9000 bytes arrive
  // between the losses.  Expect: no narrowing.
  sim::Pair pair(44, jumbo(), jumbo());
  ASSERT_TRUE(pair.warm_up());
  pair.link.faults().drop = 0.1;
  send_and_check(pair, 16, 64 << 10, 30 * kSec);
  EXPECT_EQ(pair.engine(pair.a).stats().path_narrowed_by_silence, 0u);
  EXPECT_EQ(connection_of(pair, pair.a).tx_max_payload, kJumboPayload);
}

// A piece as a sender would encode it, for the decoder's checks.
std::vector<uint8_t> encoded_piece(uint32_t offset, uint32_t piece_offset, uint16_t length,
                                   uint16_t segment_len, uint32_t msg_len) {
  wire::FrameHeader h{};
  h.version = wire::kWireVersion;
  h.opcode = static_cast<uint8_t>(wire::Opcode::kMsg);
  h.flags = wire::kFlagPiece;
  h.src_session = 1;
  h.seq = 5;
  h.msg_len = msg_len;
  h.offset = offset;
  h.payload_len = length;
  h.segment_len = segment_len;
  h.piece_offset = piece_offset;
  std::vector<uint8_t> bytes(wire::kHeadersSize + length, 0x33);
  encode_headers(bytes.data(), sim::kPairMacB, sim::kPairMacA, wire::kDefaultEtherType, h);
  seal_frame(bytes.data(), bytes.size());
  return bytes;
}

TEST(PathMtu, APeerThatFallsSilentForAWhileIsNotANarrowPath) {
  // B is cut off (every frame either way lost) for 300 ms in the middle of
  // a stream of large segments, after timeouts that asked about size had
  // been answered before.  Expect: no narrowing: the probes went
  // unanswered as the segments did.
  sim::Pair pair(48, jumbo(), jumbo());
  ASSERT_TRUE(pair.warm_up());
  int sent = 0;
  pair.link.keep = [&](size_t from, const wire::FrameHeader& h) {
    // Early on, lose some large frames only: timeouts with answered probes.
    return !(from == pair.a && h.payload_len > 4000 && ++sent % 7 == 0 && sent < 60);
  };
  std::vector<std::vector<uint8_t>> in(16, std::vector<uint8_t>(64 << 10));
  const std::vector<uint8_t> out = pattern(64 << 10, 3);
  for (auto& buffer : in) ASSERT_EQ(pair.post(pair.b, &buffer, &buffer), 0);
  for (size_t i = 0; i < in.size(); ++i) ASSERT_EQ(pair.send(pair.a, pair.b, out, nullptr), 0);
  for (int i = 0; i < 20000 && pair.done[pair.b].size() < 2; ++i) {
    pair.link.step();
    pair.collect();
  }
  ASSERT_LT(pair.done[pair.b].size(), in.size()) << "still streaming when B goes silent";
  pair.link.set_partitioned(pair.b, true);
  pair.run_for(300 * kMs);
  pair.link.set_partitioned(pair.b, false);
  ASSERT_TRUE(pair.wait(pair.b, in.size(), 10 * kSec));
  for (const auto& buffer : in) EXPECT_TRUE(buffer == out);
  EXPECT_EQ(pair.engine(pair.a).stats().path_narrowed_by_silence, 0u);
  EXPECT_GT(pair.engine(pair.a).stats().retransmit_timeouts, 1u) << "the silence timed out";
  // Each timeout with the window open cut it, and the connection's
  // summary counts those cuts (telemetry's cuts_timeout).
  ConnectionSummary summary[4];
  ASSERT_EQ(pair.engine(pair.a).summarize_connections(summary, 4), 1u);
  EXPECT_EQ(summary[0].cuts_timeout, pair.engine(pair.a).stats().retransmit_timeouts);
}

TEST(PathMtu, APathWhoseMtuLiesBetweenTheFallbackAndTheSegmentsNarrows) {
  // The path carries 4000 bytes: each message's 3000-byte tail arrives
  // while its full 8912-byte segment does not.  Expect: A narrows (to
  // 1500, the next fallback) and every message arrives: a tail that
  // arrived, larger than the fallback but smaller than the lost segment,
  // is no proof that the segment's size gets through.
  sim::Pair pair(49, jumbo(), jumbo());
  ASSERT_TRUE(pair.warm_up());
  pair.link.keep = [&](size_t, const wire::FrameHeader& h) {
    return sizeof(wire::FrameHeader) + h.payload_len <= 4000;
  };
  send_and_check(pair, 4, kJumboPayload + 3000, 10 * kSec);
  EXPECT_EQ(pair.engine(pair.a).stats().path_narrowed_by_silence, 1u);
}

TEST(PathMtu, OurDirectionCutWhileThePeerSendsIsNotANarrowPath) {
  // Every frame A sends is lost for 300 ms while B streams messages to A
  // (its frames, resent as they go unacknowledged, keep reaching A).
  // Expect: no narrowing at A: B's data is no answer to A's probes, and
  // B, hearing nothing of A, sends no pure ACK.
  sim::Pair pair(50, jumbo(), jumbo());
  ASSERT_TRUE(pair.warm_up());
  bool cut = false;
  pair.link.keep = [&](size_t from, const wire::FrameHeader&) { return !(cut && from == pair.a); };
  constexpr size_t kCount = 24;
  std::vector<std::vector<uint8_t>> at_b(kCount, std::vector<uint8_t>(64 << 10));
  std::vector<std::vector<uint8_t>> at_a(kCount, std::vector<uint8_t>(64 << 10));
  const std::vector<uint8_t> out = pattern(64 << 10, 5);
  for (size_t i = 0; i < kCount; ++i) {
    ASSERT_EQ(pair.post(pair.b, &at_b[i], &at_b[i]), 0);
    ASSERT_EQ(pair.post(pair.a, &at_a[i], &at_a[i]), 0);
  }
  for (size_t i = 0; i < kCount; ++i) {
    ASSERT_EQ(pair.send(pair.a, pair.b, out, nullptr), 0);
    ASSERT_EQ(pair.send(pair.b, pair.a, out, nullptr), 0);
  }
  for (int i = 0; i < 20000 && pair.done[pair.b].size() < 2; ++i) {
    pair.link.step();
    pair.collect();
  }
  cut = true;
  pair.run_for(300 * kMs);
  cut = false;
  ASSERT_TRUE(pair.wait(pair.b, 2 * kCount, 20 * kSec));  // its receives and its sends
  ASSERT_TRUE(pair.wait(pair.a, 2 * kCount, 20 * kSec));
  EXPECT_GT(pair.engine(pair.a).stats().retransmit_timeouts, 1u) << "the cut timed out";
  EXPECT_EQ(pair.engine(pair.a).stats().path_narrowed_by_silence, 0u);
}

TEST(PathMtu, ThePieceFieldsAreCheckedOnTheWayIn) {
  // Expect: a piece within its segment, and the segment within its
  // message, decodes with its fields; one that reaches beyond either, or
  // lies before its message's start, does not.
  DecodedFrame out;
  auto decode = [&](const std::vector<uint8_t>& bytes) {
    return decode_frame(bytes.data(), bytes.size(), wire::kDefaultEtherType, &out);
  };
  ASSERT_EQ(decode(encoded_piece(1000 + 500, 500, 400, 1000, 4000)), DecodeResult::kOk);
  EXPECT_EQ(out.header.segment_len, 1000);
  EXPECT_EQ(out.header.piece_offset, 500u);
  EXPECT_EQ(decode(encoded_piece(1000 + 700, 700, 400, 1000, 4000)), DecodeResult::kBadLength)
      << "beyond its segment";
  EXPECT_EQ(decode(encoded_piece(3500, 500, 300, 1000, 3800)), DecodeResult::kBadLength)
      << "its segment beyond the message";
  EXPECT_EQ(decode(encoded_piece(100, 500, 400, 1000, 4000)), DecodeResult::kBadLength)
      << "its segment before the message";
}

TEST(PathMtu, PiecesThatDisagreeWithTheSegmentTheyJoinAreDropped) {
  // A (here forged by hand, with the real token) sends B half a segment in
  // one piece, then a "piece" of the same seq naming another message
  // length.  Expect: the second is counted bad and nothing is delivered;
  // the real second half, whose frame flags differ (kFlagAckNow), then
  // completes the message.
  sim::Pair pair(45, jumbo(), jumbo());
  ASSERT_TRUE(pair.warm_up());
  std::vector<uint8_t> in(2000);
  ASSERT_EQ(pair.post(pair.b, &in, &in), 0);
  const std::vector<uint8_t> out = pattern(2000, 9);
  Engine& a = pair.engine(pair.a);
  ASSERT_EQ(pair.send(pair.a, pair.b, out, nullptr), 0);
  // The segment A cut, taken off the wire before it left; what A resends
  // of it is lost.
  pair.link.keep = [&](size_t from, const wire::FrameHeader& h) {
    return from != pair.a || !wire::opcode_is_data(h.opcode);
  };
  std::vector<std::vector<uint8_t>> frames = sim::take_outbox(a, pair.link.mac(pair.a));
  ASSERT_EQ(frames.size(), 1u);
  DecodedFrame segment;
  ASSERT_EQ(decode_frame(frames[0].data(), frames[0].size(), wire::kDefaultEtherType, &segment),
            DecodeResult::kOk);
  auto piece = [&](uint32_t at, uint16_t length, uint32_t msg_len, uint16_t frame_flags = 0) {
    wire::FrameHeader h = segment.header;
    h.flags =
        static_cast<uint16_t>((h.flags & ~wire::kFlagAckNow) | frame_flags | wire::kFlagPiece);
    h.msg_len = msg_len;
    h.segment_len = 2000;
    h.piece_offset = at;
    h.offset = at;
    h.payload_len = length;
    std::vector<uint8_t> bytes(wire::kHeadersSize + length);
    encode_headers(bytes.data(), pair.link.mac(pair.b), pair.link.mac(pair.a),
                   wire::kDefaultEtherType, h);
    std::memcpy(bytes.data() + wire::kHeadersSize, out.data() + at, length);
    seal_frame(bytes.data(), bytes.size());
    pair.link.inject(bytes.data(), bytes.size());
  };
  const uint64_t bad_before = pair.engine(pair.b).stats().bad_frames;
  piece(0, 1000, 2000, wire::kFlagAckNow);
  piece(1000, 1000, 4000);
  pair.run_for(kMs);
  EXPECT_EQ(pair.engine(pair.b).stats().bad_frames, bad_before + 1);
  EXPECT_TRUE(pair.done[pair.b].empty());
  // The real second half, sent when another message was queued behind
  // this one (no kFlagAckNow): the same segment.
  piece(1000, 1000, 2000);
  ASSERT_TRUE(pair.wait(pair.b, 1, 100 * kMs));
  EXPECT_TRUE(in == out);
  EXPECT_EQ(pair.engine(pair.b).stats().segments_from_pieces, 1u);
}

}  // namespace
}  // namespace ofi_dpdk::proto
