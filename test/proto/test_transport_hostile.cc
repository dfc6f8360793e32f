// The reliable transport (lib/proto Engine) against hostile input: forged
// data, resets and acks, oversized messages and random garbage.
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
// 12. Hostile input.

// A data header as the established connection from `from` to `to` would
// carry it (sessions right, no SYN, no ack).
wire::FrameHeader forged_data(Net& net, size_t from, size_t to, uint32_t seq) {
  wire::FrameHeader h{};
  h.version = wire::kWireVersion;
  h.opcode = static_cast<uint8_t>(wire::Opcode::kMsg);
  h.flags = wire::kFlagLastSegment;
  h.dst_queue = net.link.queue(to);
  h.src_queue = net.link.queue(from);
  h.src_session = net.link.session(from);
  h.dst_session = net.link.session(to);
  h.seq = seq;
  h.msg_id = 77;
  h.msg_len = 16;
  h.payload_len = 16;
  // On the sender's current connection, as its own frames would be.
  if (const Connection* c = net.engine(from).find(net.link.key(to))) {
    h.conn = c->tx_conn;
    h.token = c->tx_token;
  }
  return h;
}

void deliver(Net& net, size_t to, const uint8_t* src_mac, const wire::FrameHeader& h,
             const uint8_t* payload) {
  net.engine(to).on_frame(Segment{src_mac, &h, payload}, net.link.now());
}

TEST(TransportHostile, DataWithoutAHandshakeIsResetAndDropped) {
  // Expect: a data frame from a stranger that never completed a handshake
  // (its token is one B never granted) is dropped (no connection, no
  // delivery), bad_tokens and resets_sent rise and exactly one RESET goes
  // back naming the stranger's session, connection and token.
  Pair p(121);
  const uint8_t payload[16] = {};
  std::vector<uint8_t> in(100);
  ASSERT_EQ(post_bytes(p.net, p.b, in, ctx(1)), 0);
  const TransportStats before = p.net.engine(p.b).stats();
  wire::FrameHeader h = forged_data(p.net, p.a, p.b, 1);
  h.src_queue = 9;
  h.src_ep_queue = 9;
  h.src_session = 0x5E55;
  h.dst_session = 0;
  h.conn = 4;
  h.token = 0x70CE;
  Engine& b = p.net.engine(p.b);
  ASSERT_TRUE(b.outbox().empty());
  deliver(p.net, p.b, kMacStranger, h, payload);
  // Expect: RESET to (stranger, 9) with dst_session 0x5E55.
  ASSERT_EQ(b.outbox().size(), 1u);
  const OutFrame& reset = b.outbox()[0];
  EXPECT_EQ(reset.header.opcode, static_cast<uint8_t>(wire::Opcode::kReset));
  EXPECT_EQ(std::memcmp(reset.dst_mac, kMacStranger, 6), 0);
  EXPECT_EQ(reset.header.dst_queue, 9);
  EXPECT_EQ(reset.header.dst_session, 0x5E55u);
  EXPECT_EQ(reset.header.ack_conn, 4);
  EXPECT_EQ(reset.header.ack_token, 0x70CEu);
  EXPECT_EQ(reset.header.src_session, p.net.link.session(p.b));
  EXPECT_EQ(b.stats().bad_tokens, before.bad_tokens + 1);
  EXPECT_EQ(b.stats().resets_sent, before.resets_sent + 1);
  EXPECT_EQ(b.find(peer_key(kMacStranger, 9)), nullptr);
  // Same with B's own session named, and with no token at all.
  h.dst_session = p.net.link.session(p.b);
  h.token = 0;
  deliver(p.net, p.b, kMacStranger, h, payload);
  EXPECT_EQ(b.stats().resets_sent, before.resets_sent + 2);
  EXPECT_EQ(b.find(peer_key(kMacStranger, 9)), nullptr);
  p.net.step();
  EXPECT_TRUE(p.net.take(p.b).empty());
  EXPECT_EQ(b.posted_recvs(), 1u);
  EXPECT_EQ(b.stats().messages_received, 0u);
}

TEST(TransportHostile, SequenceFarOutsideWindowIsDropped) {
  // Expect: data frames on A's open connection whose seq lies far ahead of
  // or far behind the window are dropped and counted in out_of_window;
  // next_expected does not move and the connection keeps working.
  Pair p(122);
  p.open();
  Engine& b = p.net.engine(p.b);
  const Connection* c = b.find(p.net.link.key(p.a));
  ASSERT_NE(c, nullptr);
  const uint32_t expected = c->next_expected;
  const uint8_t payload[16] = {};
  uint64_t out_of_window = b.stats().out_of_window;
  for (const uint32_t seq : {expected + kMaxWindow, expected + 1000u, expected + (1u << 30),
                             expected - kMaxWindow - 1, expected - 100000u}) {
    deliver(p.net, p.b, kMacA, forged_data(p.net, p.a, p.b, seq), payload);
    EXPECT_EQ(b.stats().out_of_window, ++out_of_window) << "seq " << seq;
    EXPECT_EQ(c->next_expected, expected);
    EXPECT_EQ(c->rx_buffered, 0u);
  }
  p.net.step();
  EXPECT_EQ(b.stats().messages_received, 3u);
  p.expect_still_works(1220);
}

TEST(TransportHostile, InOrderSegmentThatDoesNotContinueTheMessageIsDropped) {
  // Expect: a frame with the next expected seq whose message fields do not
  // fit (a continuation of a message that never started) is counted in
  // bad_frames and does not consume the seq: A's real next message arrives.
  Pair p(123);
  p.open();
  Engine& b = p.net.engine(p.b);
  const Connection* c = b.find(p.net.link.key(p.a));
  const uint32_t expected = c->next_expected;
  const uint64_t bad = b.stats().bad_frames;
  const uint8_t payload[16] = {};
  wire::FrameHeader h = forged_data(p.net, p.a, p.b, expected);
  h.msg_len = 4000;
  h.offset = 1444;  // the middle of a message
  deliver(p.net, p.b, kMacA, h, payload);
  EXPECT_EQ(b.stats().bad_frames, bad + 1);
  EXPECT_EQ(c->next_expected, expected);
  p.expect_still_works(1230);
}

TEST(TransportHostile, ForgedResetWithWrongSessionIsIgnored) {
  // Expect: RESETs claiming to come from B but naming a session A never had
  // (or none) are ignored: A's connection and its in-flight send survive.
  Pair p(124);
  p.open();
  Engine& a = p.net.engine(p.a);
  const Connection* c = a.find(p.net.link.key(p.b));
  const uint32_t peer_session = c->peer_session;
  // Refused as meant for another incarnation (stale_session), or as a
  // RESET that names none of ours (bad_resets).
  auto refused = [&] { return a.stats().stale_session + a.stats().bad_resets; };
  const uint64_t stale = refused();
  const auto m = pattern(5000, 124);
  std::vector<uint8_t> in(5000);
  ASSERT_EQ(post_bytes(p.net, p.b, in, ctx(1)), 0);
  ASSERT_EQ(send_bytes(p.net, p.a, p.b, m, ctx(2)), 0);
  for (const uint32_t dst_session : {p.net.link.session(p.a) + 1, 0u, 0xFFFFFFFFu}) {
    wire::FrameHeader r{};
    r.version = wire::kWireVersion;
    r.opcode = static_cast<uint8_t>(wire::Opcode::kReset);
    r.dst_queue = p.net.link.queue(p.a);
    r.src_queue = p.net.link.queue(p.b);
    r.src_session = p.net.link.session(p.b);
    r.dst_session = dst_session;
    r.ack_conn = c->tx_conn;
    r.ack_token = c->tx_token;  // all right but the session
    deliver(p.net, p.a, kMacB, r, nullptr);
  }
  EXPECT_EQ(refused(), stale + 3);
  EXPECT_EQ(a.stats().peers_failed, 0u);
  EXPECT_EQ(a.outstanding_sends(), 1u);
  EXPECT_EQ(c->peer_session, peer_session);
  EXPECT_TRUE(p.net.take(p.a).empty());
  ASSERT_TRUE(p.net.run_until(
      [&] { return !p.net.other[p.a].empty() && !p.net.other[p.b].empty(); }, 100 * kMs));
  EXPECT_EQ(p.net.take(p.a)[0].error, 0);
  EXPECT_EQ(p.net.take(p.b)[0].error, 0);
  EXPECT_TRUE(in == m);
}

TEST(TransportHostile, ResetForAnEarlierConnectionIsIgnored) {
  // Expect: a RESET with the right sessions that answers A's previous
  // transmit connection (a late one, from before A opened the current one)
  // changes nothing, nor does one naming the current connection with a
  // token B never granted it; the RESET naming the current connection and
  // its token fails A's send with kErrPeerReset and A's next connection is
  // newer.
  Pair p(126);
  p.open();
  Engine& a = p.net.engine(p.a);
  const Connection* c = a.find(p.net.link.key(p.b));
  const uint16_t current = c->tx_conn;
  const auto m = pattern(5000, 126);
  ASSERT_EQ(send_bytes(p.net, p.a, p.b, m, ctx(2)), 0);
  wire::FrameHeader r{};
  r.version = wire::kWireVersion;
  r.opcode = static_cast<uint8_t>(wire::Opcode::kReset);
  r.dst_queue = p.net.link.queue(p.a);
  r.src_queue = p.net.link.queue(p.b);
  r.src_session = p.net.link.session(p.b);
  r.dst_session = p.net.link.session(p.a);
  r.ack_conn = static_cast<uint16_t>(current - 1);
  r.ack_token = c->tx_token;
  r.ack = c->una;  // answers the segment in flight
  const uint64_t stale = a.stats().bad_resets;
  deliver(p.net, p.a, kMacB, r, nullptr);
  EXPECT_EQ(a.stats().bad_resets, stale + 1);
  EXPECT_EQ(a.outstanding_sends(), 1u);
  EXPECT_TRUE(p.net.take(p.a).empty());
  // The current connection, but not the token B granted it: a forgery.
  r.ack_conn = current;
  r.ack_token = c->tx_token + 1;
  deliver(p.net, p.a, kMacB, r, nullptr);
  EXPECT_EQ(a.stats().bad_resets, stale + 2);
  EXPECT_EQ(a.outstanding_sends(), 1u);
  EXPECT_TRUE(p.net.take(p.a).empty());
  r.ack_token = c->tx_token;
  deliver(p.net, p.a, kMacB, r, nullptr);
  EXPECT_EQ(a.outstanding_sends(), 0u);
  auto done = p.net.take(p.a);
  ASSERT_EQ(done.size(), 1u);
  EXPECT_EQ(done[0].error, kErrPeerReset);
  EXPECT_TRUE(conn_newer(c->tx_conn, current));
}

TEST(TransportHostile, ResetWithTheRightTokenAndAWrongSequenceDrawsAChallenge) {
  // Expect: a RESET naming A's current connection and its token, but
  // answering a sequence A could not have sent (behind una, or beyond
  // next_seq), tears nothing down: A sends a probe (an ACK asking whether B
  // holds its connection) instead, and its send completes.  A RESET that
  // answers the segment in flight does tear it down.
  Pair p(127);
  p.open();
  Engine& a = p.net.engine(p.a);
  const Connection* c = a.find(p.net.link.key(p.b));
  const auto m = pattern(5000, 127);
  ASSERT_EQ(send_bytes(p.net, p.a, p.b, m, ctx(2)), 0);
  ASSERT_NE(c->una, c->next_seq);
  a.frames_sent();
  wire::FrameHeader r{};
  r.version = wire::kWireVersion;
  r.opcode = static_cast<uint8_t>(wire::Opcode::kReset);
  r.dst_queue = p.net.link.queue(p.a);
  r.src_queue = p.net.link.queue(p.b);
  r.src_session = p.net.link.session(p.b);
  r.dst_session = p.net.link.session(p.a);
  r.ack_conn = c->tx_conn;
  r.ack_token = c->tx_token;
  for (const uint32_t wrong : {c->una - 1, c->next_seq + 1, c->una + 100000}) {
    r.ack = wrong;
    deliver(p.net, p.a, kMacB, r, nullptr);
  }
  EXPECT_EQ(a.stats().reset_challenges, 3u);
  EXPECT_EQ(a.stats().peers_failed, 0u);
  EXPECT_EQ(a.outstanding_sends(), 1u);
  size_t probes = 0;
  for (const OutFrame& out : a.outbox()) probes += (out.header.flags & wire::kFlagAckRequest) != 0;
  EXPECT_EQ(probes, 3u) << "each wrong RESET draws one challenge";
  a.frames_sent();
  r.ack = c->una;
  deliver(p.net, p.a, kMacB, r, nullptr);
  EXPECT_EQ(a.outstanding_sends(), 0u);
  auto done = p.net.take(p.a);
  ASSERT_EQ(done.size(), 1u);
  EXPECT_EQ(done[0].error, kErrPeerReset);
}

TEST(TransportHostile, WrongGuessesInAPeersNameDrawFewAnswers) {
  // Expect: 2000 data frames in A's name with guessed tokens, at once,
  // draw at most the peer's answer burst (16) of RESETs from B, all
  // counted as bad tokens and withheld answers; a second later the pace
  // allows answers again; A's own connection is untouched.
  Pair p(128);
  p.open();
  Engine& b = p.net.engine(p.b);
  const uint8_t payload[16] = {};
  const TransportStats before = b.stats();
  b.frames_sent();
  const auto spray = [&] {
    size_t resets = 0;
    for (uint64_t i = 0; i < 2000; ++i) {
      wire::FrameHeader h = forged_data(p.net, p.a, p.b, 1);
      h.token = 0x9E3779B97F4A7C15ull * (i + 1);
      deliver(p.net, p.b, p.net.link.mac(p.a), h, payload);
    }
    for (const OutFrame& out : b.outbox())
      resets += out.header.opcode == static_cast<uint8_t>(wire::Opcode::kReset);
    b.frames_sent();
    return resets;
  };
  EXPECT_LE(spray(), 16u);
  EXPECT_EQ(b.stats().bad_tokens, before.bad_tokens + 2000);
  EXPECT_GE(b.stats().answers_withheld, before.answers_withheld + 2000 - 16);
  p.net.run_for(1000 * kMs);
  const size_t later = spray();
  EXPECT_GE(later, 1u) << "the pace lets answers through again";
  EXPECT_LE(later, 16u);
  const auto m = pattern(3000, 128);
  std::vector<uint8_t> in(3000);
  ASSERT_EQ(post_bytes(p.net, p.b, in, ctx(1)), 0);
  ASSERT_EQ(send_bytes(p.net, p.a, p.b, m, ctx(2)), 0);
  ASSERT_TRUE(p.net.run_until([&] { return !p.net.other[p.b].empty(); }, 100 * kMs));
  EXPECT_EQ(p.net.take(p.b)[0].error, 0);
  EXPECT_TRUE(in == m);
}

TEST(TransportHostile, AckForSequenceNeverSentIsIgnored) {
  // Expect: an ACK (right sessions) acknowledging a seq A never sent, with
  // a zero window, changes nothing: the outstanding send does not complete,
  // una and the peer window stay, bad_frames rises; then the send completes
  // normally.
  Pair p(125);
  p.open();
  Engine& a = p.net.engine(p.a);
  const auto m = pattern(3000, 125);
  std::vector<uint8_t> in(3000);
  ASSERT_EQ(post_bytes(p.net, p.b, in, ctx(1)), 0);
  ASSERT_EQ(send_bytes(p.net, p.a, p.b, m, ctx(2)), 0);
  const Connection* c = a.find(p.net.link.key(p.b));
  const uint32_t una = c->una, window = c->peer_window;
  const uint64_t bad = a.stats().bad_frames;
  wire::FrameHeader ack{};
  ack.version = wire::kWireVersion;
  ack.opcode = static_cast<uint8_t>(wire::Opcode::kAck);
  ack.flags = wire::kFlagAckValid;
  ack.dst_queue = p.net.link.queue(p.a);
  ack.src_queue = p.net.link.queue(p.b);
  ack.src_session = p.net.link.session(p.b);
  ack.dst_session = p.net.link.session(p.a);
  ack.ack = c->next_seq + 50;
  ack.ack_conn = c->tx_conn;
  ack.ack_token = c->tx_token;
  ack.window = 0;
  deliver(p.net, p.a, kMacB, ack, nullptr);
  EXPECT_EQ(a.stats().bad_frames, bad + 1);
  EXPECT_EQ(c->una, una);
  EXPECT_EQ(c->peer_window, window);
  EXPECT_EQ(a.outstanding_sends(), 1u);
  EXPECT_TRUE(p.net.take(p.a).empty());
  ASSERT_TRUE(p.net.run_until(
      [&] { return !p.net.other[p.a].empty() && !p.net.other[p.b].empty(); }, 100 * kMs));
  EXPECT_EQ(p.net.take(p.a)[0].error, 0);
  EXPECT_EQ(p.net.take(p.b)[0].error, 0);
  EXPECT_TRUE(in == m);
}

TEST(TransportHostile, MessageLengthAboveMaxIsBadFrame) {
  // Expect: a segment announcing a message above max_msg_size is counted in
  // bad_frames, not delivered, and does not move the stream.
  TransportConfig config;
  config.max_msg_size = 1 << 20;
  Pair p(126, config);
  p.open();
  Engine& b = p.net.engine(p.b);
  const Connection* c = b.find(p.net.link.key(p.a));
  const uint32_t expected = c->next_expected;
  const uint64_t bad = b.stats().bad_frames;
  const uint8_t payload[16] = {};
  wire::FrameHeader h = forged_data(p.net, p.a, p.b, expected);
  h.msg_len = (1 << 20) + 1;
  h.flags = 0;
  deliver(p.net, p.b, kMacA, h, payload);
  h.msg_len = 0xFFFFFFFF;
  deliver(p.net, p.b, kMacA, h, payload);
  EXPECT_EQ(b.stats().bad_frames, bad + 2);
  EXPECT_EQ(c->next_expected, expected);
  std::vector<uint8_t> in(100);
  ASSERT_EQ(post_bytes(p.net, p.b, in, ctx(1)), 0);
  p.net.step();
  EXPECT_TRUE(p.net.take(p.b).empty());
  ASSERT_EQ(b.cancel_recv(ctx(1)), 0);
  p.net.take(p.b);
  p.expect_still_works(1260);
}

// Builds a frame that passes decode_frame but whose fields are random, from
// an identity that is not A's or B's (spoofing an open connection's exact
// MAC, queue and session is injection, which only authentication stops).
std::vector<uint8_t> plausible_frame(Random& rng, Net& net, size_t to) {
  static constexpr uint32_t kSessions[] = {1, 0x5E55, 0xFFFFFFFF, 0x12345678};
  uint8_t src[6] = {0x02, 0, 0, 0, 0x5E, 0};
  src[5] = static_cast<uint8_t>(rng.below(4));
  uint16_t src_queue = static_cast<uint16_t>(rng.below(3));
  if (rng.chance(0.1)) {  // a known MAC, another queue
    std::memcpy(src, net.link.mac(rng.below(2)), 6);
    src_queue = static_cast<uint16_t>(1 + rng.below(4));
  }
  wire::FrameHeader h{};
  h.version = wire::kWireVersion;
  h.opcode = static_cast<uint8_t>(1 + rng.below(4));
  h.flags = static_cast<uint16_t>(rng.below(16));
  h.dst_queue = net.link.queue(to);
  h.src_queue = src_queue;
  h.src_session = rng.chance(0.5) ? kSessions[rng.below(4)] : static_cast<uint32_t>(rng.next());
  switch (rng.below(3)) {
    case 0:
      h.dst_session = 0;
      break;
    case 1:
      h.dst_session = net.link.session(to);
      break;
    default:
      h.dst_session = static_cast<uint32_t>(rng.next());
      break;
  }
  h.seq = rng.chance(0.7) ? static_cast<uint32_t>(1 + rng.below(300))
                          : static_cast<uint32_t>(rng.next());
  h.ack =
      rng.chance(0.7) ? static_cast<uint32_t>(rng.below(300)) : static_cast<uint32_t>(rng.next());
  h.msg_id = static_cast<uint32_t>(rng.below(8));
  h.payload_len = static_cast<uint16_t>(rng.below(1523));
  h.msg_len = rng.chance(0.9) ? static_cast<uint32_t>(h.payload_len + rng.below(20000))
                              : static_cast<uint32_t>(rng.next());
  h.offset = rng.chance(0.5) ? 0 : static_cast<uint32_t>(rng.below(h.msg_len - h.payload_len + 1));
  h.window = static_cast<uint16_t>(rng.below(300));
  h.tag = rng.chance(0.5) ? (h.opcode == 3 ? rng.next() : rng.below(4)) : 0;
  h.cq_data = rng.next();
  std::vector<uint8_t> frame(wire::kHeadersSize + h.payload_len);
  for (auto& byte : frame) byte = static_cast<uint8_t>(rng.next());
  encode_headers(frame.data(), net.link.mac(to), src, wire::kDefaultEtherType, h);
  seal_frame(frame.data(), frame.size());
  return frame;
}

TEST(TransportHostile, RandomGarbageNeverCrashesAndTrafficContinues) {
  // Expect: 100 000 frames of random bytes (0..1600 long; some with our
  // EtherType and a valid-looking header; some re-sealed so they pass the
  // checksum) fed to decode_frame + on_frame of A and B crash nothing;
  // the counters show they were refused; A and B then exchange messages
  // normally.
  Pair p(127);
  p.open();
  Random rng(127);
  std::vector<uint8_t> frame;
  size_t sealed = 0;
  for (int i = 0; i < 100'000; ++i) {
    const size_t to = rng.below(2) ? p.b : p.a;
    switch (rng.below(4)) {
      case 0:  // noise
        frame.resize(rng.below(1601));
        for (auto& byte : frame) byte = static_cast<uint8_t>(rng.next());
        break;
      case 1:  // noise with our addressing and a header-ish start
        frame.resize(rng.below(1601));
        for (auto& byte : frame) byte = static_cast<uint8_t>(rng.next());
        if (frame.size() >= 16) {
          std::memcpy(frame.data(), p.net.link.mac(to), 6);
          frame[12] = wire::kDefaultEtherType >> 8;
          frame[13] = wire::kDefaultEtherType & 0xFF;
          frame[14] = wire::kWireVersion;
          frame[15] = static_cast<uint8_t>(1 + rng.below(4));
        }
        break;
      default:  // passes every check of decode_frame
        frame = plausible_frame(rng, p.net, to);
        if (rng.chance(0.2)) frame.resize(rng.below(frame.size() + 1));  // cut short
        ++sealed;
        break;
    }
    p.net.link.inject(frame.data(), frame.size());
    if (i % 200 == 199) p.net.step();
  }
  p.net.run_for(50 * kMs);
  const auto& link = p.net.link.counters();
  EXPECT_GT(link.decode_failed, 50'000u);
  EXPECT_GT(sealed, 40'000u);
  const TransportStats& sb = p.net.engine(p.b).stats();
  EXPECT_GT(sb.stale_session + sb.bad_frames + sb.out_of_window + sb.duplicates, 1000u);
  EXPECT_GT(sb.resets_sent, 100u);
  // Stray completions (strangers' messages claimed nothing: nothing posted).
  EXPECT_TRUE(p.net.take(p.a).empty());
  EXPECT_TRUE(p.net.take(p.b).empty());
  p.expect_still_works(1270);
}

}  // namespace
}  // namespace ofi_dpdk::proto
