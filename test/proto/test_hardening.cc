// The transport against hostile and unlucky peers (lib/proto, issue
// "Hardening"): what strangers cost, exactly-once execution when the target
// loses its receive state, no write through a failed request, identity
// checks, and the bounds on connections, reordering buffers, requests,
// responses and zero windows.  Engines run over the in-memory link
// (lossy_link.h) in simulated time; frames a test forges are built as a
// peer's engine would build them, tokens included (token.h).
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
#include "test/proto/lossy_link.h"

namespace ofi_dpdk::proto {
namespace {

using sim::LossyLink;

constexpr uint8_t kMacA[6] = {0x02, 0, 0, 0, 0, 0x0A};
constexpr uint8_t kMacB[6] = {0x02, 0, 0, 0, 0, 0x0B};
constexpr uint64_t kMs = 1'000'000;
constexpr uint64_t kSec = 1'000'000'000;

void* ctx(uintptr_t n) { return reinterpret_cast<void*>(n); }

using sim::Pair;

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
    uint8_t mac[6] = {0x02, 0x66, static_cast<uint8_t>(n >> 16), static_cast<uint8_t>(n >> 8),
                      static_cast<uint8_t>(n), 0x01};
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
      const uint8_t mac[6] = {0x02, 0x77, 0, 0, static_cast<uint8_t>(n >> 8),
                              static_cast<uint8_t>(n)};
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
    wire::FrameHeader hello = header(static_cast<uint8_t>(wire::Opcode::kHello), 0, 0x0BAD0000 + forged);
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

// ---------------------------------------------------------------------------
// Bounds.

TEST(Bounds, ConnectionsAreCappedAndOnlyLongIdleOnesEvicted) {
  // Expect: B holds at most 3 connections.  Three peers talk to it; a
  // fourth completes its handshake and is refused (connections_refused)
  // while all three are recent, its message waiting; once they have been
  // silent twice the peer timeout, the fourth gets in by evicting one and
  // its message arrives.
  TransportConfig config;
  config.max_connections = 3;
  config.peer_timeout_ns = 1 * kSec;
  LossyLink link(48);
  std::vector<size_t> peers;
  for (uint8_t i = 0; i < 4; ++i) {
    const uint8_t mac[6] = {0x02, 0, 0, 0, 1, i};
    peers.push_back(link.add(config, mac, 0, 0xC0000000u + i));
  }
  const size_t b = link.add(config, kMacB, 0, 0xB0000001);
  std::vector<std::vector<uint8_t>> in(4, std::vector<uint8_t>(8));
  for (size_t i = 0; i < 4; ++i) {
    RecvRequest r;
    r.iov[0] = {in[i].data(), 8};
    r.iov_count = 1;
    r.context = ctx(100 + i);
    ASSERT_EQ(link.engine(b).post_recv(r, link.now()), 0);
  }
  auto send = [&](size_t from) {
    static const uint8_t kBytes[8] = {1, 2, 3, 4, 5, 6, 7, 8};
    iovec iov{const_cast<uint8_t*>(kBytes), 8};
    SendRequest s;
    s.iov = &iov;
    s.iov_count = 1;
    s.copy = true;
    s.completion = false;
    return link.engine(from).send(link.address(b), s, link.now());
  };
  for (size_t i = 0; i < 3; ++i) ASSERT_EQ(send(peers[i]), 0);
  for (int i = 0; i < 100; ++i) link.step();
  EXPECT_EQ(link.engine(b).stats().messages_received, 3u);
  EXPECT_EQ(link.engine(b).connection_count(), 3u);
  ASSERT_EQ(send(peers[3]), 0);
  for (int i = 0; i < 200; ++i) link.step();
  EXPECT_GE(link.engine(b).stats().connections_refused, 1u);
  EXPECT_EQ(link.engine(b).stats().messages_received, 3u);
  EXPECT_EQ(link.engine(b).connection_count(), 3u);
  // The fourth gives up after its own peer timeout; the three others stay
  // silent.  Once they have been silent for twice the peer timeout, the
  // fourth tries again and gets in.
  for (const uint64_t end = link.now() + 2100 * kMs; link.now() < end;) link.step();
  EXPECT_EQ(link.engine(peers[3]).stats().timeouts, 1u);
  ASSERT_EQ(send(peers[3]), 0);
  for (const uint64_t end = link.now() + 500 * kMs;
       link.now() < end && link.engine(b).stats().messages_received < 4;)
    link.step();
  EXPECT_EQ(link.engine(b).stats().messages_received, 4u);
  EXPECT_EQ(link.engine(b).stats().connections_evicted, 1u);
  EXPECT_LE(link.engine(b).connection_count(), 3u);
  // The evicted peer (the first, silent longest) sends again on the
  // connection it still holds: B remembers the record's generation, so the
  // segment opens nothing and the peer hears RESET at once (its send fails
  // with kErrPeerReset well before its peer timeout); its next send opens a
  // new connection and arrives.
  size_t evicted = peers.size();
  for (size_t i = 0; i < 3; ++i)
    if (link.engine(b).find(link.key(peers[i])) == nullptr) evicted = peers[i];
  ASSERT_LT(evicted, peers.size());
  auto send_with_completion = [&](size_t from, void* context) {
    static const uint8_t kBytes[8] = {8, 7, 6, 5, 4, 3, 2, 1};
    iovec iov{const_cast<uint8_t*>(kBytes), 8};
    SendRequest s;
    s.iov = &iov;
    s.iov_count = 1;
    s.copy = true;
    s.context = context;
    return link.engine(from).send(link.address(b), s, link.now());
  };
  ASSERT_EQ(send_with_completion(evicted, ctx(50)), 0);
  std::vector<Completion> done;
  for (const uint64_t end = link.now() + 100 * kMs; link.now() < end && done.empty();) {
    link.step();
    auto& c = link.engine(evicted).completions();
    done.insert(done.end(), c.begin(), c.end());
    c.clear();
  }
  ASSERT_EQ(done.size(), 1u) << "a RESET, not the peer timeout";
  EXPECT_EQ(done[0].error, kErrPeerReset);
  // Room again: another of the three is evicted for it.
  for (const uint64_t end = link.now() + 2100 * kMs; link.now() < end;) link.step();
  ASSERT_EQ(send_with_completion(evicted, ctx(51)), 0);
  done.clear();
  for (const uint64_t end = link.now() + 500 * kMs; link.now() < end && done.empty();) {
    link.step();
    auto& c = link.engine(evicted).completions();
    done.insert(done.end(), c.begin(), c.end());
    c.clear();
  }
  ASSERT_EQ(done.size(), 1u);
  EXPECT_EQ(done[0].error, 0);
}

TEST(Bounds, AStallLongerThanThePeerTimeoutDoesNotTimeTheMessageOut) {
  // Expect: B's budget is too small for A's message and B posts no receive
  // for three peer timeouts: B stalls (its own doing, not A's).  When B
  // posts the receive, the message arrives whole and without error: the
  // progress clock of B's receive half started again when the stall ended.
  TransportConfig config;
  config.peer_timeout_ns = 300 * kMs;
  TransportConfig receiver = config;
  receiver.unexpected_bytes = 1000;
  Pair p(54, config, receiver);
  std::vector<uint8_t> m(50000), in(50000);
  for (size_t i = 0; i < m.size(); ++i) m[i] = static_cast<uint8_t>(i * 11);
  ASSERT_EQ(p.send(p.a, p.b, m, ctx(1)), 0);
  p.run_for(900 * kMs);
  EXPECT_TRUE(p.done[p.b].empty());
  ASSERT_EQ(p.post(p.b, &in, ctx(2)), 0);
  ASSERT_TRUE(p.wait(p.b, 1, 2 * kSec));
  EXPECT_EQ(p.done[p.b][0].error, 0);
  EXPECT_EQ(in, m);
  ASSERT_TRUE(p.wait(p.a, 1, 2 * kSec));
  EXPECT_EQ(p.done[p.a][0].error, 0);
}

TEST(Bounds, TheReorderPoolIsBounded) {
  // Expect: B keeps at most 4 segments' worth ahead of a gap: with A's first
  // segment of a 60-segment message lost until the rest went out, B's pool
  // never exceeds 4 chunks, reorder_full counts the rest, and the message
  // still arrives whole once A retransmits.
  TransportConfig config;
  config.max_payload = 500;
  TransportConfig small = config;
  small.reorder_bytes = 4 * (sizeof(wire::FrameHeader) + 500);
  Pair p(49, config, small);
  std::vector<uint8_t> m(30000), in(30000);
  for (size_t i = 0; i < m.size(); ++i) m[i] = static_cast<uint8_t>(i * 3 + 1);
  std::vector<uint8_t> first(4);
  ASSERT_EQ(p.post(p.b, &first, ctx(8)), 0);
  ASSERT_EQ(p.post(p.b, &in, ctx(1)), 0);
  ASSERT_EQ(p.send(p.a, p.b, std::vector<uint8_t>(4, 1), ctx(9)), 0);  // opens the connection
  ASSERT_TRUE(p.wait(p.a, 1, 100 * kMs));
  bool dropped = false;
  p.link.keep = [&](size_t from, const wire::FrameHeader& h) {
    if (from == p.a && h.opcode == static_cast<uint8_t>(wire::Opcode::kMsg) && h.offset == 0 &&
        h.msg_len == 30000 && !dropped) {
      dropped = true;
      return false;
    }
    return true;
  };
  ASSERT_EQ(p.send(p.a, p.b, m, ctx(2)), 0);
  size_t most = 0;
  const uint64_t end = p.link.now() + 2 * kSec;
  while (p.link.now() < end && p.done[p.b].size() < 2) {
    p.link.step();
    p.collect();
    most = std::max(most, p.engine(p.b).reorder_pool_bytes());
  }
  ASSERT_EQ(p.done[p.b].size(), 2u);
  EXPECT_EQ(p.done[p.b][1].error, 0);
  EXPECT_EQ(in, m);
  EXPECT_LE(most, small.reorder_bytes);
  EXPECT_GT(p.engine(p.b).stats().reorder_full, 0u);
}

TEST(Bounds, AHalfSentRequestTimesOutAndGivesItsBudgetBack) {
  // Expect: A's request of 20 segments stops after 3 (A is cut off for
  // good); B set its bytes aside from the unexpected budget, and after B's
  // peer timeout without progress it gives them back.
  TransportConfig config;
  config.max_payload = 500;
  config.peer_timeout_ns = 1 * kSec;
  Pair p(50, config, config);
  ASSERT_EQ(p.send(p.a, p.b, std::vector<uint8_t>(4, 1), ctx(9)), 0);
  ASSERT_TRUE(p.wait(p.a, 1, 100 * kMs));
  int segments = 0;
  p.link.keep = [&](size_t from, const wire::FrameHeader& h) {
    if (from != p.a || h.opcode != static_cast<uint8_t>(wire::Opcode::kRequest)) return true;
    return ++segments <= 3;
  };
  std::vector<uint8_t> big(10000, 7), result(8);
  iovec iov{big.data(), big.size()};
  SendRequest s;
  s.iov = &iov;
  s.iov_count = 1;
  s.context = ctx(1);
  s.request = true;
  s.response_iov[0] = {result.data(), result.size()};
  s.response_iov_count = 1;
  ASSERT_EQ(p.engine(p.a).send(p.link.address(p.b), s, p.link.now()), 0);
  const size_t before = p.engine(p.b).unexpected_bytes();  // the first message, unexpected
  for (int i = 0; i < 100; ++i) p.link.step();
  EXPECT_EQ(p.engine(p.b).unexpected_bytes(), before + 10000);
  p.link.set_partitioned(p.a, true);
  p.run_for(1500 * kMs);
  EXPECT_EQ(p.engine(p.b).unexpected_bytes(), before);
  EXPECT_GE(p.engine(p.b).stats().timeouts, 1u);
  EXPECT_EQ(p.calls, 0);
}

TEST(Bounds, TinyUnexpectedMessagesCountTheirRecordsAgainstTheBudget) {
  // Expect: with a 16 KiB budget and no receive posted, 8-byte messages
  // are taken only while their bytes and records fit (far fewer than the
  // 1000 whose bytes alone would fit); the rest wait at the sender; once receives are posted, every
  // message arrives, once and in order.
  TransportConfig config;
  config.unexpected_bytes = 16 << 10;
  Pair p(51, config, config);
  constexpr size_t kMessages = 1000;
  for (size_t i = 0; i < kMessages; ++i) {
    std::vector<uint8_t> bytes(8);
    std::memcpy(bytes.data(), &i, sizeof(uint32_t));
    ASSERT_EQ(p.send(p.a, p.b, bytes, ctx(i + 1)), 0) << i;
  }
  p.run_for(200 * kMs);
  const size_t held = p.engine(p.b).unexpected_messages();
  EXPECT_LE(p.engine(p.b).unexpected_bytes(), config.unexpected_bytes);
  EXPECT_LE(held, config.unexpected_bytes / unexpected_cost(8));
  EXPECT_GT(held, 0u);
  std::vector<std::vector<uint8_t>> buffers(kMessages, std::vector<uint8_t>(8));
  for (size_t i = 0; i < kMessages; ++i) ASSERT_EQ(p.post(p.b, &buffers[i], ctx(100000 + i)), 0);
  ASSERT_TRUE(p.wait(p.b, kMessages, 5000 * kMs));
  for (size_t i = 0; i < kMessages; ++i) {
    uint32_t value;
    std::memcpy(&value, buffers[i].data(), sizeof(value));
    ASSERT_EQ(value, i);
  }
  EXPECT_EQ(p.engine(p.b).unexpected_bytes(), 0u);
}

TEST(Bounds, AnIdleConnectionGivesBackItsSlotTables) {
  // Expect: after a burst with reordering (both sides' slot tables in use),
  // 150 ms of silence leave each side's connection without its 10 KiB
  // transmit and 2 KiB receive slot tables; the next burst allocates them
  // again and arrives whole and in order.  (A frame per message, so that
  // reordering frames reorders segments.)
  TransportConfig config;
  config.bundle_bytes = 0;
  Pair p(53, config, config);
  p.link.faults().reorder = 0.2;
  auto burst = [&](size_t first) {
    std::vector<std::vector<uint8_t>> in(20, std::vector<uint8_t>(8));
    for (size_t i = 0; i < 20; ++i) ASSERT_EQ(p.post(p.b, &in[i], ctx(first + 1000 + i)), 0);
    for (size_t i = 0; i < 20; ++i) {
      std::vector<uint8_t> bytes(8);
      const uint32_t value = static_cast<uint32_t>(first + i);
      std::memcpy(bytes.data(), &value, sizeof(value));
      ASSERT_EQ(p.send(p.a, p.b, bytes, ctx(first + i)), 0);
    }
    ASSERT_TRUE(p.wait(p.b, first + 20, 1000 * kMs));
    for (size_t i = 0; i < 20; ++i) {
      uint32_t value;
      std::memcpy(&value, in[i].data(), sizeof(value));
      EXPECT_EQ(value, first + i);
    }
  };
  burst(0);
  const Connection* at_a = p.engine(p.a).find(p.link.key(p.b));
  const Connection* at_b = p.engine(p.b).find(p.link.key(p.a));
  ASSERT_NE(at_a, nullptr);
  ASSERT_NE(at_b, nullptr);
  EXPECT_NE(at_a->tx_slots, nullptr);
  EXPECT_NE(at_b->rx_slots, nullptr) << "reordering made B keep segments ahead of a gap";
  p.run_for(150 * kMs);
  EXPECT_EQ(at_a->tx_slots, nullptr);
  EXPECT_EQ(at_b->rx_slots, nullptr);
  EXPECT_EQ(at_b->tx_slots, nullptr);
  burst(20);
}

TEST(Bounds, UnacknowledgedResponsesHoldFurtherRequests) {
  // Expect: B keeps at most 2 responses unacknowledged.  A sends 6 requests
  // while nothing of B's reaches A: B runs 2 and holds the rest (window 0).
  // Once the path is back, the rest run, each once, and all 6 complete.
  TransportConfig config;
  TransportConfig target;
  target.max_pending_responses = 2;
  target.bundle_bytes = 0;  // responses in frames of their own, which the link can tell
  Pair p(51, config, target);
  std::vector<uint8_t> warm(8);
  ASSERT_EQ(p.request(&warm, ctx(100)), 0);
  ASSERT_TRUE(p.wait(p.a, 1, 100 * kMs));
  p.done[p.a].clear();
  bool cut = true;
  p.link.keep = [&](size_t from, const wire::FrameHeader& h) {
    // B's acks pass (A's requests are acknowledged); its responses do not.
    return !(cut && from == p.b && h.opcode == static_cast<uint8_t>(wire::Opcode::kResponse));
  };
  std::vector<std::vector<uint8_t>> results(6, std::vector<uint8_t>(8));
  for (size_t i = 0; i < 6; ++i) ASSERT_EQ(p.request(&results[i], ctx(i + 1)), 0);
  p.run_for(200 * kMs);
  EXPECT_EQ(p.calls, 1 + 2);
  cut = false;
  ASSERT_TRUE(p.wait(p.a, 6, 3 * kSec));
  for (const Completion& c : p.done[p.a]) EXPECT_EQ(c.error, 0);
  EXPECT_EQ(p.calls, 1 + 6);
  std::vector<uint64_t> olds;
  for (const auto& r : results) {
    uint64_t old = 0;
    std::memcpy(&old, r.data(), 8);
    olds.push_back(old);
  }
  std::sort(olds.begin(), olds.end());
  EXPECT_EQ(olds, (std::vector<uint64_t>{1, 2, 3, 4, 5, 6}));
}

TEST(Bounds, AReceiverHoldingItsWindowAtZeroIsNotWaitedOnForever) {
  // Expect: B posts no receive and its unexpected budget is smaller than
  // A's message: B closes its window and keeps answering.  A's send waits
  // while the stall lasts less than stall_timeout (2 s), then fails with
  // kErrTimedOut.
  TransportConfig config;
  config.peer_timeout_ns = 500 * kMs;
  config.stall_timeout_ns = 2 * kSec;
  TransportConfig receiver = config;
  receiver.unexpected_bytes = 1000;
  Pair p(52, config, receiver);
  ASSERT_EQ(p.send(p.a, p.b, std::vector<uint8_t>(100000, 3), ctx(1)), 0);
  p.run_for(1500 * kMs);
  EXPECT_TRUE(p.done[p.a].empty()) << "a stalled but live receiver is waited on";
  ASSERT_TRUE(p.wait(p.a, 1, 3 * kSec));
  EXPECT_EQ(p.done[p.a][0].error, kErrTimedOut);
  EXPECT_LE(p.link.now(), 4 * kSec);
}

TEST(Bounds, AReadLargerThanAnyMessageIsRefused) {
  // Expect: a response above max_msg_size is not sent: the request fails
  // with kErrTooLarge.
  TransportConfig config;
  config.max_msg_size = 4096;
  Pair p(53, config, config);
  p.reply_bytes = 8192;
  std::vector<uint8_t> result(8192, 0xEE);
  ASSERT_EQ(p.request(&result, ctx(1)), 0);
  ASSERT_TRUE(p.wait(p.a, 1, 200 * kMs));
  EXPECT_EQ(p.done[p.a][0].error, kErrTooLarge);
  EXPECT_EQ(result[0], 0xEE);
}

}  // namespace
}  // namespace ofi_dpdk::proto
