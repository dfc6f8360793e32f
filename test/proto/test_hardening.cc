// The transport against hostile and unlucky peers (lib/proto, issue
// "Hardening"): what strangers cost, exactly-once execution when the target
// loses its receive state, no write through a failed request and identity
// checks (the bounds are in test_hardening_bounds.cc).  Engines run over
// the in-memory link (lossy_link.h) in simulated time; frames a test forges
// are built as a peer's engine would build them, tokens included (token.h).
// Each test says what it expects in `// Expect:` comments.
#include <gtest/gtest.h>

#include <endian.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "lib/proto/engine_state.h"
#include "lib/proto/frame_codec.h"
#include "lib/proto/token.h"
#include "test/proto/engine_pair.h"
#include "test/proto/hardening_pair.h"
#include "test/proto/lossy_link.h"

namespace ofi_dpdk::proto {
namespace {

// A frame from (mac, queue) handed straight to engine `e`'s receive path.
void deliver(Engine& e, const uint8_t* mac, const wire::FrameHeader& h, const uint8_t* payload,
             uint64_t now) {
  e.on_frame(Segment{mac, &h, payload}, now);
}

wire::FrameHeader header(uint8_t opcode, uint16_t src_queue, uint32_t src_session) {
  wire::FrameHeader h{};
  h.version = wire::kWireVersion;
  h.opcode = opcode;
  h.src_queue = src_queue;
  h.src_ep_queue = src_queue;
  h.src_session = src_session;
  return h;
}

wire::HandshakeBody body_of(const OutFrame& frame) {
  wire::HandshakeBody body;
  std::memcpy(&body, frame.body, sizeof(body));
  return body;
}

// ---------------------------------------------------------------------------
// Strangers.

TEST(Handshake, AHelloLeavesNoStateAndOnlyItsTokenOpensTheConnection) {
  // Expect: B answers a stranger's HELLO with a HELLO_ACK echoing its nonce
  // and granting the token handshake_token() computes, and keeps nothing
  // (no connection).  A segment with any other token is answered RESET and
  // opens nothing; the segment with the granted token opens the receive
  // half and its message reaches the posted receive.
  TransportConfig config;
  Engine b(config, kMacB, 0, 0xB0000001);
  const uint8_t stranger[6] = {0x02, 0, 0, 0, 0x5E, 0x01};
  std::vector<uint8_t> in(64);
  RecvRequest r;
  r.iov[0] = {in.data(), in.size()};
  r.iov_count = 1;
  r.context = ctx(1);
  ASSERT_EQ(b.post_recv(r, 1), 0);

  wire::FrameHeader hello = header(static_cast<uint8_t>(wire::Opcode::kHello), 7, 0x5E55);
  hello.conn = 3;
  hello.token = 0xC0FFEE;
  hello.payload_len = hello.msg_len = sizeof(wire::HandshakeBody);
  wire::HandshakeBody body{};
  body.max_payload = htobe32(1000);
  deliver(b, stranger, hello, reinterpret_cast<const uint8_t*>(&body), 10);
  ASSERT_EQ(b.outbox().size(), 1u);
  const OutFrame& answer = b.outbox()[0];
  EXPECT_EQ(answer.header.opcode, static_cast<uint8_t>(wire::Opcode::kHelloAck));
  EXPECT_EQ(answer.header.ack_token, 0xC0FFEEu);
  EXPECT_EQ(answer.header.ack_conn, 3);
  EXPECT_EQ(answer.header.dst_session, 0x5E55u);
  const uint64_t granted = be64toh(body_of(answer).token);
  EXPECT_EQ(granted, handshake_token(config.token_secret, peer_key(stranger, 7), 0x5E55, 3, 0, 0));
  EXPECT_EQ(be32toh(body_of(answer).max_payload), config.max_payload);
  EXPECT_EQ(b.connection_count(), 0u);
  b.frames_sent();

  wire::FrameHeader data = header(static_cast<uint8_t>(wire::Opcode::kMsg), 7, 0x5E55);
  data.flags = wire::kFlagLastSegment;
  data.dst_session = 0xB0000001;
  data.conn = 3;
  data.seq = wire::kInitialSeq;
  data.msg_id = 1;
  data.msg_len = data.payload_len = 5;
  const uint8_t payload[5] = {'h', 'e', 'l', 'l', 'o'};
  data.token = granted ^ 1;
  deliver(b, stranger, data, payload, 20);
  ASSERT_EQ(b.outbox().size(), 1u);
  EXPECT_EQ(b.outbox()[0].header.opcode, static_cast<uint8_t>(wire::Opcode::kReset));
  EXPECT_EQ(b.outbox()[0].header.ack_token, granted ^ 1);
  EXPECT_EQ(b.connection_count(), 0u);
  EXPECT_EQ(b.stats().bad_tokens, 1u);
  b.frames_sent();

  data.token = granted;
  deliver(b, stranger, data, payload, 30);
  EXPECT_EQ(b.connection_count(), 1u);
  EXPECT_EQ(b.stats().connections_opened, 1u);
  ASSERT_EQ(b.completions().size(), 1u);
  EXPECT_EQ(b.completions()[0].error, 0);
  EXPECT_EQ(std::string(in.begin(), in.begin() + 5), "hello");
}

TEST(Handshake, AFloodFromStrangersCostsNoMemoryAndTheLivePairGoesOn) {
  // Expect: 3000 HELLOs and 3000 data segments (SYN-like first segments far
  // ahead of sequence 1, which once allocated a reorder store each) from
  // 3000 made-up addresses, while A and B exchange messages: B holds one
  // connection (A's), its reorder pool stays empty, and every message of
  // the live pair arrives.
  Pair p(41);
  std::vector<uint8_t> message(3000, 0x5A);
  std::vector<std::vector<uint8_t>> in(20, std::vector<uint8_t>(3000));
  for (size_t i = 0; i < in.size(); ++i) {
    ASSERT_EQ(p.post(p.b, &in[i], ctx(100 + i)), 0);
  }
  size_t sent = 0;
  const uint8_t junk[1400] = {};
  for (uint32_t n = 0; n < 3000; ++n) {
    uint8_t mac[6] = {0x02,
                      0x66,
                      static_cast<uint8_t>(n >> 16),
                      static_cast<uint8_t>(n >> 8),
                      static_cast<uint8_t>(n),
                      0x01};
    wire::FrameHeader hello = header(static_cast<uint8_t>(wire::Opcode::kHello), 1, n + 1);
    hello.token = n + 1;
    hello.payload_len = hello.msg_len = sizeof(wire::HandshakeBody);
    const wire::HandshakeBody body{};
    deliver(p.engine(p.b), mac, hello, reinterpret_cast<const uint8_t*>(&body), p.link.now());
    wire::FrameHeader data = header(static_cast<uint8_t>(wire::Opcode::kMsg), 1, n + 1);
    data.seq = 1 + n % 200;
    data.msg_id = 1;
    data.msg_len = 1u << 20;
    data.offset = 1400 * (n % 200);
    data.payload_len = 1400;
    data.token = n * 2654435761u;
    deliver(p.engine(p.b), mac, data, junk, p.link.now());
    if (n % 150 == 0 && sent < in.size()) {
      ASSERT_EQ(p.send(p.a, p.b, message, ctx(sent++)), 0);
    }
    p.link.step();
    p.collect();
  }
  while (sent < in.size()) ASSERT_EQ(p.send(p.a, p.b, message, ctx(sent++)), 0);
  ASSERT_TRUE(p.wait(p.b, in.size(), 1000 * kMs));
  for (const Completion& c : p.done[p.b]) EXPECT_EQ(c.error, 0);
  for (const auto& bytes : in) EXPECT_EQ(bytes, message);
  EXPECT_EQ(p.engine(p.b).connection_count(), 1u);
  EXPECT_EQ(p.engine(p.b).reorder_pool_bytes(), 0u);
  EXPECT_GE(p.engine(p.b).stats().bad_tokens, 3000u);
  // Each stranger's frame was answered or held back by the answer budget,
  // which the flood (6000 answers owed within 15 ms) spent.
  const TransportStats& stats = p.engine(p.b).stats();
  EXPECT_GE(stats.hellos_answered + stats.answers_withheld, 3000u);
  EXPECT_GT(stats.answers_withheld, 0u);
}

TEST(Handshake, AnswersToStrangersKeepToTheirBudget) {
  // Expect: with a budget of 8 answers at once and 1000 per second, one
  // spent on a peer's handshake, 100 HELLOs from 100 made-up senders in one
  // instant get 7 HELLO_ACKs; the rest go unanswered and are counted.  A
  // segment with a bad token at that instant gets no RESET either, but the
  // peer that holds a record is still answered (HELLO_ACK, RESET).  5 ms
  // later the budget has 5 more (one per millisecond); after a quiet
  // second it is whole again, and a bad token is answered RESET.
  TransportConfig config;
  config.stranger_answer_burst = 8;
  config.stranger_answers_per_second = 1000;
  Engine b(config, kMacB, 0, 0xB0000001);
  const wire::HandshakeBody body{};
  const auto hellos = [&](uint32_t first, uint64_t now) {
    for (uint32_t n = first; n < first + 100; ++n) {
      const uint8_t mac[6] = {
          0x02, 0x77, 0, 0, static_cast<uint8_t>(n >> 8), static_cast<uint8_t>(n)};
      wire::FrameHeader hello = header(static_cast<uint8_t>(wire::Opcode::kHello), 1, n + 1);
      hello.token = n + 1;
      hello.payload_len = hello.msg_len = sizeof(wire::HandshakeBody);
      deliver(b, mac, hello, reinterpret_cast<const uint8_t*>(&body), now);
    }
    const size_t answers = b.outbox().size();
    for (const OutFrame& frame : b.outbox())
      EXPECT_EQ(frame.header.opcode, static_cast<uint8_t>(wire::Opcode::kHelloAck));
    b.frames_sent();
    return answers;
  };
  const uint8_t stranger[6] = {0x02, 0x77, 0, 0, 0xFF, 0xFF};
  wire::FrameHeader data = header(static_cast<uint8_t>(wire::Opcode::kMsg), 1, 0x5E55);
  data.flags = wire::kFlagLastSegment;
  data.seq = wire::kInitialSeq;
  data.msg_id = 1;
  data.msg_len = data.payload_len = 4;
  data.token = 0xBAD;
  const uint8_t payload[4] = {1, 2, 3, 4};

  // A peer that completes its handshake just before the flood, in the same
  // millisecond (its HELLO_ACK comes out of the budget: 7 left).
  const uint8_t known[6] = {0x02, 0x77, 0, 0, 0xEE, 0xEE};
  wire::FrameHeader hello = header(static_cast<uint8_t>(wire::Opcode::kHello), 2, 0x4B4E);
  hello.conn = 1;
  hello.token = 0x1234;
  hello.payload_len = hello.msg_len = sizeof(wire::HandshakeBody);
  deliver(b, known, hello, reinterpret_cast<const uint8_t*>(&body), 1 * kMs);
  ASSERT_EQ(b.outbox().size(), 1u);
  wire::FrameHeader first = header(static_cast<uint8_t>(wire::Opcode::kMsg), 2, 0x4B4E);
  first.flags = wire::kFlagLastSegment;
  first.conn = 1;
  first.seq = wire::kInitialSeq;
  first.msg_id = 1;
  first.msg_len = first.payload_len = 4;
  first.token = be64toh(body_of(b.outbox()[0]).token);
  b.frames_sent();
  deliver(b, known, first, payload, 1 * kMs);
  ASSERT_EQ(b.connection_count(), 1u);
  b.frames_sent();

  EXPECT_EQ(hellos(0, 1 * kMs), 7u);
  EXPECT_EQ(b.stats().hellos_answered, 8u);
  EXPECT_EQ(b.stats().answers_withheld, 93u);
  deliver(b, stranger, data, payload, 1 * kMs);
  EXPECT_TRUE(b.outbox().empty());
  EXPECT_EQ(b.stats().bad_tokens, 1u);
  EXPECT_EQ(b.stats().resets_sent, 0u);
  // The budget is spent, but the known peer is answered: its HELLO again
  // (our answer was lost), and a segment with a token we never gave it.
  deliver(b, known, hello, reinterpret_cast<const uint8_t*>(&body), 1 * kMs);
  first.token ^= 1;
  first.conn = 2;
  deliver(b, known, first, payload, 1 * kMs);
  ASSERT_EQ(b.outbox().size(), 2u);
  EXPECT_EQ(b.outbox()[0].header.opcode, static_cast<uint8_t>(wire::Opcode::kHelloAck));
  EXPECT_EQ(b.outbox()[1].header.opcode, static_cast<uint8_t>(wire::Opcode::kReset));
  b.frames_sent();

  EXPECT_EQ(hellos(100, 6 * kMs), 5u);
  EXPECT_EQ(b.stats().connections_opened, 1u);

  deliver(b, stranger, data, payload, 1 * kSec);
  ASSERT_EQ(b.outbox().size(), 1u);
  EXPECT_EQ(b.outbox()[0].header.opcode, static_cast<uint8_t>(wire::Opcode::kReset));
  b.frames_sent();
  EXPECT_EQ(hellos(200, 1 * kSec), 7u);
}

// ---------------------------------------------------------------------------
// Exactly once.

TEST(ExactlyOnce, AFetchAddWhoseAnswersAreCutRunsOnce) {
  // Expect: B (peer timeout 1 s) hears A's fetch-add, runs it, but nothing
  // B sends reaches A for 2 s: B's response times out and B drops A's
  // connection.  A (peer timeout 5 s) keeps retransmitting the request;
  // once the path is back, B must not open a new connection for it and run
  // it again.  The counter moves once; A's request ends in an error, or in
  // success with the old value 0: never success after a second run.
  TransportConfig initiator;
  initiator.peer_timeout_ns = 5 * kSec;
  TransportConfig target;
  target.peer_timeout_ns = 1 * kSec;
  Pair p(42, initiator, target);
  // Open both ways first, as a job's earlier traffic would have.
  std::vector<uint8_t> warm(8, 0), warm_in(8);
  ASSERT_EQ(p.post(p.a, &warm_in, ctx(90)), 0);
  ASSERT_EQ(p.request(&warm, ctx(91)), 0);
  ASSERT_TRUE(p.wait(p.a, 1, 100 * kMs));
  ASSERT_EQ(p.done[p.a][0].error, 0);
  p.done[p.a].clear();
  ASSERT_EQ(p.counter, 1u);

  bool cut = true;
  p.link.keep = [&](size_t from, const wire::FrameHeader&) { return !(cut && from == p.b); };
  std::vector<uint8_t> result(8, 0xEE);
  ASSERT_EQ(p.request(&result, ctx(1)), 0);
  p.run_for(2 * kSec);
  EXPECT_EQ(p.calls, 2) << "the request ran once while B's answers were cut";
  EXPECT_GE(p.engine(p.b).stats().timeouts, 1u) << "B timed A out";
  cut = false;
  ASSERT_TRUE(p.wait(p.a, 1, 10 * kSec));
  const Completion& done = p.done[p.a][0];
  EXPECT_EQ(p.calls, 2) << "the request ran again after B dropped the connection";
  EXPECT_EQ(p.counter, 2u);
  if (done.error == 0) {
    uint64_t old = 0;
    std::memcpy(&old, result.data(), 8);
    EXPECT_EQ(old, 1u);
  } else {
    EXPECT_TRUE(done.error == kErrPeerReset || done.error == kErrTimedOut) << done.error;
  }
  // The pair works again afterwards, on new connections.
  std::vector<uint8_t> again(8, 0);
  ASSERT_EQ(p.request(&again, ctx(2)), 0);
  ASSERT_TRUE(p.wait(p.a, 2, 1 * kSec));
  EXPECT_EQ(p.done[p.a][1].error, 0);
  EXPECT_EQ(p.calls, 3);
}

TEST(ExactlyOnce, ARetransmittedFirstRequestAfterAnAvRemovalDoesNotRunAgain) {
  // Expect: B drops A's connection (as fi_av_remove does) right after it
  // ran A's first request, before any of its answers left; A's
  // retransmissions of that request are answered RESET, not run again.
  Pair p(43);
  std::vector<uint8_t> result(8, 0xEE);
  bool b_silent = true;
  p.link.keep = [&](size_t from, const wire::FrameHeader& h) {
    // B's HELLO_ACK passes; nothing else of B's until the removal.
    return !(b_silent && from == p.b && h.opcode != static_cast<uint8_t>(wire::Opcode::kHelloAck));
  };
  ASSERT_EQ(p.request(&result, ctx(1)), 0);
  for (int i = 0; i < 200 && p.calls == 0; ++i) p.link.step();
  ASSERT_EQ(p.calls, 1);
  p.engine(p.b).drop_peer(p.link.key(p.a));
  b_silent = false;
  ASSERT_TRUE(p.wait(p.a, 1, 10 * kSec));
  EXPECT_EQ(p.calls, 1);
  EXPECT_NE(p.done[p.a][0].error, 0) << "its answer was lost with the connection";
}

// ---------------------------------------------------------------------------
// No write through a failed request.

TEST(UseAfterFree, ResponseSegmentsAfterTheRequestFailedGoNowhere) {
  // Expect: a response in three segments; A takes the first, then a RESET
  // of its connection fails the request (its buffer is freed at once, as an
  // application may), then the later segments arrive: they are consumed
  // without effect.  (Under AddressSanitizer any write to the freed buffer
  // is reported.)
  TransportConfig config;
  config.max_payload = 400;
  Pair p(44, config, config);
  p.reply_bytes = 1000;
  auto result = std::make_unique<std::vector<uint8_t>>(1000, 0xEE);
  std::vector<std::pair<wire::FrameHeader, size_t>> held;  // B's RESPONSE segments
  p.link.keep = [&](size_t from, const wire::FrameHeader& h) {
    if (from == p.b && h.opcode == static_cast<uint8_t>(wire::Opcode::kResponse)) {
      held.emplace_back(h, h.offset);
      return false;
    }
    return true;
  };
  ASSERT_EQ(p.request(result.get(), ctx(1)), 0);
  for (int i = 0; i < 400 && held.size() < 3; ++i) p.link.step();
  ASSERT_GE(held.size(), 3u);
  std::sort(held.begin(), held.end(),
            [](const auto& x, const auto& y) { return x.second < y.second; });
  const Connection* c = p.engine(p.a).find(p.link.key(p.b));
  ASSERT_NE(c, nullptr);
  ASSERT_EQ(c->awaiting_response.size(), 1u) << "the request is acked and waits for its answer";
  std::vector<uint8_t> bytes(1000);
  for (size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<uint8_t>(i * 7 + 1);
  Engine& a = p.engine(p.a);
  deliver(a, kMacB, held[0].first, bytes.data() + held[0].second, p.link.now());
  EXPECT_EQ((*result)[0], 1) << "the first segment is placed";

  wire::FrameHeader reset = header(static_cast<uint8_t>(wire::Opcode::kReset), 0, 0xB0000001);
  reset.dst_session = 0xA0000001;
  reset.ack_conn = c->tx_conn;
  reset.ack_token = c->tx_token;
  reset.ack = c->next_seq;  // answers our probe or ack
  deliver(a, kMacB, reset, nullptr, p.link.now());
  ASSERT_EQ(a.completions().size(), 1u);
  EXPECT_EQ(a.completions()[0].error, kErrPeerReset);
  a.completions().clear();
  result.reset();  // the application frees the buffer of a failed request

  for (size_t i = 1; i < held.size(); ++i)
    deliver(a, kMacB, held[i].first, bytes.data() + held[i].second, p.link.now());
  EXPECT_TRUE(a.completions().empty());
  EXPECT_EQ(a.outstanding_sends(), 0u);
}

// ---------------------------------------------------------------------------
// Identity.

TEST(Identity, AForgedHelloFromAPeersAddressChangesNothing) {
  // Expect: with A and B talking and a send of A's in flight, HELLOs from
  // A's address with new sessions reach B: B answers them (to A's address,
  // where A ignores the answers) and fails nothing; A's send completes and
  // later traffic flows both ways.
  Pair p(45);
  std::vector<uint8_t> m(5000, 0x42), first(10), in(5000), back(100), back_in(100);
  ASSERT_EQ(p.post(p.b, &first, ctx(9)), 0);
  ASSERT_EQ(p.post(p.b, &in, ctx(10)), 0);
  ASSERT_EQ(p.send(p.a, p.b, std::vector<uint8_t>(10, 1), ctx(1)), 0);
  ASSERT_TRUE(p.wait(p.a, 1, 100 * kMs));
  ASSERT_EQ(p.send(p.a, p.b, m, ctx(2)), 0);
  for (uint32_t forged = 1; forged <= 5; ++forged) {
    wire::FrameHeader hello =
        header(static_cast<uint8_t>(wire::Opcode::kHello), 0, 0x0BAD0000 + forged);
    hello.conn = 1;
    hello.token = forged;
    hello.payload_len = hello.msg_len = sizeof(wire::HandshakeBody);
    const wire::HandshakeBody body{};
    deliver(p.engine(p.b), kMacA, hello, reinterpret_cast<const uint8_t*>(&body), p.link.now());
  }
  EXPECT_EQ(p.engine(p.b).stats().peers_failed, 0u);
  ASSERT_TRUE(p.wait(p.a, 2, 200 * kMs));
  ASSERT_TRUE(p.wait(p.b, 2, 200 * kMs));
  for (const Completion& c : p.done[p.a]) EXPECT_EQ(c.error, 0);
  for (const Completion& c : p.done[p.b]) EXPECT_EQ(c.error, 0);
  EXPECT_EQ(in, m);
  ASSERT_EQ(p.post(p.a, &back_in, ctx(11)), 0);
  ASSERT_EQ(p.send(p.b, p.a, back, ctx(12)), 0);
  ASSERT_TRUE(p.wait(p.a, 3, 200 * kMs));
  EXPECT_EQ(p.done[p.a][2].error, 0);
  EXPECT_EQ(p.engine(p.a).stats().peers_failed, 0u);
}

TEST(Identity, AFrameWithAnotherKeyOnAnOpenConnectionIsDropped) {
  // Expect: B takes keys 0 and 7.  A talks to B with key 0; a frame from
  // A's address on that connection, right in every field but carrying key
  // 7, is counted in wrong_key and delivers nothing.
  Pair p(46);
  p.engine(p.b).set_accepted_keys({0, 7});
  std::vector<uint8_t> in(16);
  ASSERT_EQ(p.send(p.a, p.b, std::vector<uint8_t>(4, 1), ctx(1)), 0);
  ASSERT_TRUE(p.wait(p.a, 1, 100 * kMs));
  ASSERT_EQ(p.post(p.b, &in, ctx(20)), 0);
  p.collect();
  const Connection* to_b = p.engine(p.a).find(p.link.key(p.b));
  const Connection* at_b = p.engine(p.b).find(p.link.key(p.a));
  ASSERT_TRUE(to_b != nullptr && at_b != nullptr);
  wire::FrameHeader h = header(static_cast<uint8_t>(wire::Opcode::kMsg), 0, 0xA0000001);
  h.flags = wire::kFlagLastSegment;
  h.dst_session = 0xB0000001;
  h.conn = to_b->tx_conn;
  h.token = to_b->tx_token;
  h.seq = at_b->next_expected;
  h.msg_id = 99;
  h.msg_len = h.payload_len = 16;
  h.auth_key = 7;
  const uint8_t payload[16] = {9, 9, 9};
  const uint64_t wrong_key = p.engine(p.b).stats().wrong_key;
  deliver(p.engine(p.b), kMacA, h, payload, p.link.now());
  EXPECT_EQ(p.engine(p.b).stats().wrong_key, wrong_key + 1);
  EXPECT_TRUE(p.engine(p.b).completions().empty());
  EXPECT_EQ(p.engine(p.b).stats().messages_received, 1u);
}

TEST(Identity, SegmentSizeIsAgreedInTheHandshake) {
  // Expect: A takes 1000-byte payloads, B only 400: segments both ways carry
  // at most 400 bytes, and 5000-byte messages arrive whole both ways.
  TransportConfig big;
  big.max_payload = 1000;
  TransportConfig small;
  small.max_payload = 400;
  Pair p(47, big, small);
  uint16_t largest[2] = {0, 0};
  p.link.tap = [&](size_t from, size_t, const wire::FrameHeader& h) {
    if (wire::opcode_is_data(h.opcode)) largest[from] = std::max(largest[from], h.payload_len);
  };
  std::vector<uint8_t> m(5000);
  for (size_t i = 0; i < m.size(); ++i) m[i] = static_cast<uint8_t>(i * 13);
  std::vector<uint8_t> at_b(5000), at_a(5000);
  ASSERT_EQ(p.post(p.b, &at_b, ctx(1)), 0);
  ASSERT_EQ(p.post(p.a, &at_a, ctx(2)), 0);
  ASSERT_EQ(p.send(p.a, p.b, m, ctx(3)), 0);
  ASSERT_EQ(p.send(p.b, p.a, m, ctx(4)), 0);
  ASSERT_TRUE(p.wait(p.a, 2, 200 * kMs));
  ASSERT_TRUE(p.wait(p.b, 2, 200 * kMs));
  EXPECT_EQ(at_b, m);
  EXPECT_EQ(at_a, m);
  EXPECT_EQ(largest[p.a], 400);
  EXPECT_EQ(largest[p.b], 400);
}

}  // namespace
}  // namespace ofi_dpdk::proto
