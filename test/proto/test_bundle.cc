// BUNDLE frames (wire.h, lib/proto/bundle.cc): small messages to one peer in
// a row share a frame, each entry keeping its own sequence number, and the
// guarantees of transport.h hold for them under loss, duplication,
// reordering and corruption.  The codec's entry reader refuses what no
// correct sender writes.  Engines run over the in-memory link
// (lossy_link.h) in simulated time.  Each test says what it expects in
// `// Expect:` comments.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <vector>

#include "lib/proto/engine_state.h"
#include "lib/proto/frame_codec.h"
#include "test/proto/engine_pair.h"
#include "test/proto/lossy_link.h"

namespace ofi_dpdk::proto {
namespace {

using sim::LinkFaults;
using sim::Pair;

constexpr const uint8_t* kMacA = sim::kPairMacA;
constexpr const uint8_t* kMacB = sim::kPairMacB;
constexpr uint64_t kMs = 1'000'000;
constexpr uint64_t kSec = 1'000'000'000;
constexpr uint16_t kType = wire::kDefaultEtherType;

void* ctx(uintptr_t n) {
  return reinterpret_cast<void*>(n);
}

// The bytes of message `index` of a stream: its length varies with it, and
// every byte says which message and offset it belongs to.
std::vector<uint8_t> message_bytes(size_t index, size_t length) {
  std::vector<uint8_t> bytes(length);
  for (size_t i = 0; i < length; ++i) bytes[i] = static_cast<uint8_t>(index * 131 + i * 7 + 1);
  return bytes;
}

// The wire bytes of an outbox frame, as the provider and the link write them.
std::vector<uint8_t> encode(const OutFrame& frame, const uint8_t* src_mac) {
  std::vector<uint8_t> bytes(wire::kHeadersSize + frame.header.payload_len);
  encode_headers(bytes.data(), frame.dst_mac, src_mac, kType, frame.header);
  frame.copy_payload(bytes.data() + wire::kHeadersSize);
  seal_frame(bytes.data(), bytes.size());
  return bytes;
}

TEST(BundleCodec, EntriesComeBackAsTheFramesTheyStandFor) {
  // Expect: a BUNDLE frame of three entries decodes; each entry reads back
  // as the frame's header with its own opcode, flags, seq, ids, lengths,
  // tag, CQ data, group and payload, and the reader ends exactly at the end.
  wire::FrameHeader frame{};
  frame.version = wire::kWireVersion;
  frame.opcode = static_cast<uint8_t>(wire::Opcode::kBundle);
  frame.flags = wire::kFlagAckValid;
  frame.src_session = 7;
  frame.ack = 41;
  frame.window = 200;
  frame.token = 0xABCD;
  std::vector<wire::BundleEntry> entries(3);
  std::vector<std::vector<uint8_t>> payloads = {message_bytes(1, 8), message_bytes(2, 0),
                                                message_bytes(3, 300)};
  size_t body = 0;
  for (size_t i = 0; i < entries.size(); ++i) {
    wire::BundleEntry& e = entries[i];
    e.opcode = static_cast<uint8_t>(i == 1 ? wire::Opcode::kRequest : wire::Opcode::kTagged);
    e.flags = wire::kFlagLastSegment | (i == 2 ? wire::kFlagAckNow | wire::kFlagRemoteData : 0);
    e.seq = 100 + static_cast<uint32_t>(i);
    e.msg_id = 50 + static_cast<uint32_t>(i);
    e.msg_len = static_cast<uint32_t>(payloads[i].size());
    e.payload_len = static_cast<uint16_t>(payloads[i].size());
    e.group = static_cast<uint32_t>(i);
    e.tag = 0x1111111111111111ull * (i + 1);
    e.cq_data = 0xC0DE0000 + i;
    body += sizeof(wire::BundleEntry) + payloads[i].size();
  }
  frame.payload_len = static_cast<uint16_t>(body);
  std::vector<uint8_t> bytes(wire::kHeadersSize + body);
  encode_headers(bytes.data(), kMacB, kMacA, kType, frame);
  uint8_t* out = bytes.data() + wire::kHeadersSize;
  for (size_t i = 0; i < entries.size(); ++i) {
    out += encode_bundle_entry(out, entries[i]);
    std::copy(payloads[i].begin(), payloads[i].end(), out);
    out += payloads[i].size();
  }
  seal_frame(bytes.data(), bytes.size());

  DecodedFrame decoded;
  ASSERT_EQ(decode_frame(bytes.data(), bytes.size(), kType, &decoded), DecodeResult::kOk);
  const uint8_t* cursor = decoded.payload;
  const uint8_t* end = decoded.payload + decoded.header.payload_len;
  for (size_t i = 0; i < entries.size(); ++i) {
    wire::FrameHeader h;
    const uint8_t* payload = nullptr;
    ASSERT_EQ(next_bundle_entry(&cursor, end, decoded.header, &h, &payload), DecodeResult::kOk)
        << i;
    EXPECT_EQ(h.opcode, entries[i].opcode);
    EXPECT_EQ(h.flags, wire::kFlagAckValid | entries[i].flags);
    EXPECT_EQ(h.seq, entries[i].seq);
    EXPECT_EQ(h.msg_id, entries[i].msg_id);
    EXPECT_EQ(h.msg_len, entries[i].msg_len);
    EXPECT_EQ(h.offset, 0u);
    EXPECT_EQ(h.group, entries[i].group);
    EXPECT_EQ(h.tag, entries[i].tag);
    EXPECT_EQ(h.cq_data, entries[i].cq_data);
    EXPECT_EQ(h.ack, 41u);
    EXPECT_EQ(h.window, 200u);
    EXPECT_EQ(h.token, 0xABCDu);
    EXPECT_EQ(h.src_session, 7u);
    ASSERT_EQ(h.payload_len, payloads[i].size());
    EXPECT_TRUE(std::equal(payloads[i].begin(), payloads[i].end(), payload));
  }
  EXPECT_EQ(cursor, end);
}

TEST(BundleCodec, EntriesNoSenderWritesAreRefused) {
  // Expect: an entry cut short, one naming a non-data opcode (ACK, HELLO,
  // BUNDLE) or a frame's own flag, and one whose payload runs past its
  // message are each refused, with the reason.
  wire::FrameHeader frame{};
  frame.opcode = static_cast<uint8_t>(wire::Opcode::kBundle);
  auto entry_bytes = [](const wire::BundleEntry& e, size_t payload) {
    std::vector<uint8_t> bytes(sizeof(wire::BundleEntry) + payload, 0x5A);
    encode_bundle_entry(bytes.data(), e);
    return bytes;
  };
  auto read = [&](const std::vector<uint8_t>& bytes, size_t length) {
    const uint8_t* cursor = bytes.data();
    wire::FrameHeader h;
    const uint8_t* payload;
    return next_bundle_entry(&cursor, bytes.data() + length, frame, &h, &payload);
  };
  wire::BundleEntry good{};
  good.opcode = static_cast<uint8_t>(wire::Opcode::kMsg);
  good.msg_len = good.payload_len = 16;
  const auto bytes = entry_bytes(good, 16);
  EXPECT_EQ(read(bytes, bytes.size()), DecodeResult::kOk);
  for (size_t cut = 0; cut < bytes.size(); ++cut)
    EXPECT_EQ(read(bytes, cut), DecodeResult::kTruncated) << cut;
  for (auto opcode :
       {wire::Opcode::kAck, wire::Opcode::kHello, wire::Opcode::kReset, wire::Opcode::kBundle}) {
    wire::BundleEntry e = good;
    e.opcode = static_cast<uint8_t>(opcode);
    EXPECT_EQ(read(entry_bytes(e, 16), bytes.size()), DecodeResult::kBadOpcode);
  }
  for (uint16_t flag : {wire::kFlagAckValid, wire::kFlagAckRequest, wire::kFlagUnsealed}) {
    wire::BundleEntry e = good;
    e.flags = flag;
    EXPECT_EQ(read(entry_bytes(e, 16), bytes.size()), DecodeResult::kBadOpcode) << flag;
  }
  wire::BundleEntry beyond = good;
  beyond.msg_len = 8;
  EXPECT_EQ(read(entry_bytes(beyond, 16), bytes.size()), DecodeResult::kBadLength);
}

TEST(Bundle, SmallSendsInARowShareAFrame) {
  // Expect: 40 sends of 8 to 64 bytes made in one go leave in at most six
  // frames (1444-byte payloads; the congestion window starts at 16
  // segments), and arrive whole, once and in order, none repaired.
  Pair p(11);
  ASSERT_TRUE(p.warm_up());
  constexpr size_t kCount = 40;
  std::vector<std::vector<uint8_t>> in(kCount, std::vector<uint8_t>(64));
  std::vector<std::vector<uint8_t>> out;
  for (size_t i = 0; i < kCount; ++i) out.push_back(message_bytes(i, 8 + i % 57));
  for (size_t i = 0; i < kCount; ++i) ASSERT_EQ(p.post(p.b, &in[i], ctx(i)), 0);
  const uint64_t frames_before = p.engine(p.a).stats().frames_sent;
  for (size_t i = 0; i < kCount; ++i) ASSERT_EQ(p.send(p.a, p.b, out[i], ctx(i)), 0);
  ASSERT_TRUE(p.wait(p.b, kCount, 100 * kMs));
  ASSERT_TRUE(p.wait(p.a, kCount, 100 * kMs));
  EXPECT_LE(p.engine(p.a).stats().frames_sent - frames_before, 6u);
  EXPECT_GE(p.engine(p.a).stats().bundled_segments, kCount - 2);
  // Every entry was taken from the frame it came in: nothing needed repair.
  EXPECT_EQ(p.engine(p.a).stats().retransmitted, 0u);
  for (size_t i = 0; i < kCount; ++i) {
    const Completion& c = p.done[p.b][i];
    ASSERT_EQ(c.error, 0);
    ASSERT_EQ(c.context, ctx(i));
    ASSERT_EQ(c.len, out[i].size());
    EXPECT_TRUE(std::equal(out[i].begin(), out[i].end(), in[i].begin())) << i;
  }
  EXPECT_EQ(p.engine(p.b).stats().messages_received, kCount + 1);
}

TEST(Bundle, OnlyASendBehindUnacknowledgedOnesIsHeld) {
  // Expect: the first send after a quiet spell is not held (a pingpong's
  // message leaves at once); a second one while the first is unacknowledged
  // is; none is with bundle_bytes 0, nor a message above bundle_bytes.
  Pair p(12);
  ASSERT_TRUE(p.warm_up());
  const auto small = message_bytes(1, 8);
  ASSERT_EQ(p.send(p.a, p.b, small, ctx(1)), 0);
  EXPECT_FALSE(p.engine(p.a).holding_bundle());
  p.link.step();  // what a caller does when the engine holds nothing: send it
  ASSERT_EQ(p.send(p.a, p.b, small, ctx(2)), 0);
  EXPECT_TRUE(p.engine(p.a).holding_bundle());
  ASSERT_EQ(p.send(p.a, p.b, small, ctx(3)), 0);
  EXPECT_TRUE(p.engine(p.a).holding_bundle());
  const auto large = message_bytes(2, 1100);
  ASSERT_EQ(p.send(p.a, p.b, large, ctx(4)), 0);
  EXPECT_FALSE(p.engine(p.a).holding_bundle());

  TransportConfig off;
  off.bundle_bytes = 0;
  Pair q(13, off, off);
  ASSERT_TRUE(q.warm_up());
  ASSERT_EQ(q.send(q.a, q.b, small, ctx(1)), 0);
  ASSERT_EQ(q.send(q.a, q.b, small, ctx(2)), 0);
  EXPECT_FALSE(q.engine(q.a).holding_bundle());
  std::vector<uint8_t> in(8);
  ASSERT_EQ(q.post(q.b, &in, ctx(1)), 0);
  ASSERT_EQ(q.post(q.b, &in, ctx(2)), 0);
  ASSERT_TRUE(q.wait(q.b, 2, 100 * kMs));
  EXPECT_EQ(q.engine(q.a).stats().bundled_segments, 0u);
}

TEST(Bundle, MessagesInBundlesSurviveEveryFault) {
  // Expect: 1000 messages of 0 to 1024 bytes, sent in bursts over a link
  // that drops, duplicates, reorders and corrupts 4 % of frames each, arrive
  // whole, once and in send order; most of them travelled in bundles.
  Pair p(14);
  LinkFaults& f = p.link.faults();
  f.drop = f.duplicate = f.reorder = f.corrupt = 0.04;
  constexpr size_t kCount = 1000;
  std::vector<std::vector<uint8_t>> in(kCount, std::vector<uint8_t>(1024));
  std::vector<std::vector<uint8_t>> out;
  for (size_t i = 0; i < kCount; ++i) out.push_back(message_bytes(i, (i * 37) % 1025));
  for (size_t i = 0; i < kCount; ++i) ASSERT_EQ(p.post(p.b, &in[i], ctx(i)), 0);
  size_t sent = 0;
  while (sent < kCount) {
    const size_t burst = std::min<size_t>(kCount - sent, 1 + sent % 50);
    for (size_t i = 0; i < burst; ++i, ++sent) ASSERT_EQ(p.send(p.a, p.b, out[sent], ctx(sent)), 0);
    ASSERT_TRUE(p.wait(p.a, sent, 10 * kSec)) << "sent " << sent;
  }
  ASSERT_TRUE(p.wait(p.b, kCount, 10 * kSec));
  ASSERT_EQ(p.done[p.b].size(), kCount);
  for (size_t i = 0; i < kCount; ++i) {
    const Completion& c = p.done[p.b][i];
    ASSERT_EQ(c.error, 0) << i;
    ASSERT_EQ(c.context, ctx(i)) << "out of order or twice";
    ASSERT_EQ(c.len, out[i].size()) << i;
    ASSERT_TRUE(std::equal(out[i].begin(), out[i].end(), in[i].begin())) << i;
  }
  for (const Completion& c : p.done[p.a]) EXPECT_EQ(c.error, 0);
  EXPECT_GT(p.engine(p.a).stats().bundled_segments, kCount / 2);
  EXPECT_GT(p.link.counters().dropped, 0u);
  EXPECT_GT(p.link.counters().decode_failed, 0u);  // corrupted bundles among them
  std::printf("[ info     ] %lu segments bundled, %lu frames sent, %lu retransmitted\n",
              static_cast<unsigned long>(p.engine(p.a).stats().bundled_segments),
              static_cast<unsigned long>(p.engine(p.a).stats().frames_sent),
              static_cast<unsigned long>(p.engine(p.a).stats().retransmitted));
}

TEST(Bundle, BundledRequestsRunOnceWhenFramesAreLost) {
  // Expect: 200 fetch-adds sent 50 at a time, their requests and responses
  // bundled, over a link that drops and duplicates 5 % of frames: the target
  // runs each exactly once (200 calls), and the old values the initiator
  // gets are 0..199, each once.
  Pair p(15);
  p.link.faults().drop = 0.05;
  p.link.faults().duplicate = 0.05;
  constexpr size_t kCount = 200;
  std::vector<std::vector<uint8_t>> results(kCount, std::vector<uint8_t>(8));
  for (size_t first = 0; first < kCount; first += 50) {
    for (size_t i = first; i < first + 50; ++i) ASSERT_EQ(p.request(&results[i], ctx(i)), 0);
    ASSERT_TRUE(p.wait(p.a, first + 50, 10 * kSec));
  }
  EXPECT_EQ(p.calls, static_cast<int>(kCount));
  std::vector<uint64_t> olds;
  for (const auto& r : results) {
    uint64_t old;
    std::memcpy(&old, r.data(), 8);
    olds.push_back(old);
  }
  std::sort(olds.begin(), olds.end());
  for (size_t i = 0; i < kCount; ++i) ASSERT_EQ(olds[i], i);
  for (const Completion& c : p.done[p.a]) EXPECT_EQ(c.error, 0);
  EXPECT_GT(p.engine(p.a).stats().bundled_segments, 0u);
  EXPECT_GT(p.engine(p.b).stats().bundled_segments, 0u);
}

TEST(Bundle, ALostBundleIsOneLoss) {
  // Expect: when a whole BUNDLE of 25 messages is lost and the next one
  // arrives, the sender counts one loss (the window to 90 %), not 25 (70 %),
  // and every message arrives once, in order.
  TransportConfig config;
  config.initial_window = 64;
  Pair p(17, config, config);
  ASSERT_TRUE(p.warm_up());
  bool dropped = false;
  p.link.keep = [&](size_t from, const wire::FrameHeader& h) {
    if (from != p.a || dropped || h.opcode != static_cast<uint8_t>(wire::Opcode::kBundle))
      return true;
    dropped = true;
    return false;
  };
  constexpr size_t kCount = 40;
  std::vector<std::vector<uint8_t>> in(kCount, std::vector<uint8_t>(8));
  std::vector<std::vector<uint8_t>> out;
  for (size_t i = 0; i < kCount; ++i) out.push_back(message_bytes(i, 8));
  for (size_t i = 0; i < kCount; ++i) ASSERT_EQ(p.post(p.b, &in[i], ctx(i)), 0);
  for (size_t i = 0; i < kCount; ++i) ASSERT_EQ(p.send(p.a, p.b, out[i], ctx(i)), 0);
  ASSERT_TRUE(p.wait(p.b, kCount, 1 * kSec));
  ASSERT_TRUE(dropped);
  const Connection* c = p.engine(p.a).find(p.link.key(p.b));
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(c->loss_cut, 1u);
  EXPECT_EQ(c->ssthresh, c->cwnd_before_loss * 9 / 10);
  for (size_t i = 0; i < kCount; ++i) {
    ASSERT_EQ(p.done[p.b][i].context, ctx(i));
    EXPECT_EQ(in[i], out[i]);
  }
}

TEST(Bundle, ChecksummingWhileCopyingWritesTheSameFrames) {
  // Expect: for every frame of an outbox holding a bundle of small sends, a
  // message sent from three iov pieces of odd sizes (its segments start and
  // end inside pieces) and a message sent from a copy, the payload copied
  // with its CRC (OutFrame::copy_payload with a CRC, between begin_seal and
  // finish_seal, as the provider writes frames) is byte for byte the frame
  // copy_payload and seal_frame write, and it decodes.
  Pair p(17);
  ASSERT_TRUE(p.warm_up());
  for (size_t i = 0; i < 3; ++i) ASSERT_EQ(p.send(p.a, p.b, message_bytes(i, 16), ctx(i)), 0);
  const std::vector<uint8_t> first = message_bytes(7, 1001), second = message_bytes(8, 4099),
                             third = message_bytes(9, 2500);
  iovec pieces[3] = {{const_cast<uint8_t*>(first.data()), first.size()},
                     {const_cast<uint8_t*>(second.data()), second.size()},
                     {const_cast<uint8_t*>(third.data()), third.size()}};
  SendRequest s;
  s.iov = pieces;
  s.iov_count = 3;
  s.context = ctx(3);
  ASSERT_EQ(p.engine(p.a).send(p.link.address(p.b), s, p.link.now()), 0);
  ASSERT_EQ(p.send(p.a, p.b, message_bytes(10, 3000), ctx(4)), 0);
  size_t bundles = 0, data_frames = 0;
  for (const OutFrame& frame : p.engine(p.a).outbox()) {
    const std::vector<uint8_t> want = encode(frame, kMacA);
    std::vector<uint8_t> got(want.size(), 0);
    encode_headers(got.data(), frame.dst_mac, kMacA, kType, frame.header);
    finish_seal(got.data(),
                frame.copy_payload(got.data() + wire::kHeadersSize, begin_seal(got.data())));
    EXPECT_EQ(got, want) << "opcode " << int{frame.header.opcode} << " offset "
                         << frame.header.offset;
    DecodedFrame decoded;
    EXPECT_EQ(decode_frame(got.data(), got.size(), kType, &decoded), DecodeResult::kOk);
    bundles += frame.bundled != 0;
    data_frames += frame.bundled == 0 && frame.message != nullptr;
  }
  EXPECT_GE(bundles, 1u);
  EXPECT_GE(data_frames, 3u);
  p.engine(p.a).frames_sent();
}

TEST(Bundle, AMalformedEntryEndsTheFrameAndItsSegmentsComeAgain) {
  // Expect: a bundle of three messages whose second entry names an ACK
  // opcode (sealed again, so only the entry check can catch it): B takes
  // the first, counts a bad frame and reads no further; A's repairs bring
  // the other two, and all three arrive once and in order.
  Pair p(16);
  ASSERT_TRUE(p.warm_up());
  std::vector<std::vector<uint8_t>> in(3, std::vector<uint8_t>(16));
  for (size_t i = 0; i < 3; ++i) ASSERT_EQ(p.post(p.b, &in[i], ctx(i)), 0);
  std::vector<std::vector<uint8_t>> out;
  for (size_t i = 0; i < 3; ++i) out.push_back(message_bytes(i, 16));
  for (size_t i = 0; i < 3; ++i) ASSERT_EQ(p.send(p.a, p.b, out[i], ctx(i)), 0);
  auto& outbox = p.engine(p.a).outbox();
  auto bundle = std::find_if(outbox.begin(), outbox.end(), [](const OutFrame& f) {
    return f.header.opcode == static_cast<uint8_t>(wire::Opcode::kBundle);
  });
  ASSERT_NE(bundle, outbox.end());
  ASSERT_GE(bundle->bundled, 2u);
  // The sends after warm_up start the frame: its first entry is message 0.
  ASSERT_EQ(bundle->bundle[0].message->request.context, ctx(0));
  std::vector<uint8_t> bytes = encode(*bundle, kMacA);
  // The second entry: after the first entry's header and payload.
  const size_t second =
      wire::kHeadersSize + sizeof(wire::BundleEntry) + bundle->bundle[0].entry.payload_len;
  bytes[second + offsetof(wire::BundleEntry, opcode)] = static_cast<uint8_t>(wire::Opcode::kAck);
  seal_frame(bytes.data(), bytes.size());
  // The outbox is dropped (never sent as it was); A repairs what B lacks.
  p.engine(p.a).frames_sent();
  DecodedFrame decoded;
  ASSERT_EQ(decode_frame(bytes.data(), bytes.size(), kType, &decoded), DecodeResult::kOk);
  const uint64_t bad_before = p.engine(p.b).stats().bad_frames;
  p.engine(p.b).on_frame(Segment{decoded.src_mac, &decoded.header, decoded.payload}, p.link.now());
  EXPECT_EQ(p.engine(p.b).stats().bad_frames, bad_before + 1);
  EXPECT_EQ(p.engine(p.b).stats().messages_received, 2u);  // warm_up's and message 0
  ASSERT_TRUE(p.wait(p.b, 3, 2 * kSec));
  ASSERT_EQ(p.done[p.b].size(), 3u);
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(p.done[p.b][i].context, ctx(i));
    EXPECT_EQ(in[i], out[i]);
  }
}

}  // namespace
}  // namespace ofi_dpdk::proto
