// Tagged matching in the transport engine (lib/proto/receiver.cc), driven
// over the in-memory lossy link (lossy_link.h) in simulated time: tag and
// ignore mask, posting order, arrival order of unexpected messages, source
// filtering, tagged and untagged kept apart, and fi_tagged(3)'s FI_PEEK,
// FI_PEEK|FI_CLAIM, FI_CLAIM and FI_DISCARD (Engine::peek_recv and
// Engine::claim_recv).  Each test says what it expects in `// Expect:`
// comments.
#include <gtest/gtest.h>

#include <cerrno>
#include <cstring>
#include <functional>
#include <map>
#include <vector>

#include "lib/proto/engine_state.h"
#include "test/proto/lossy_link.h"

namespace ofi_dpdk::proto {
namespace {

using PeekAction = Engine::PeekAction;

constexpr uint8_t kMacA[6] = {0x02, 0x00, 0x00, 0x00, 0x00, 0x1A};
constexpr uint8_t kMacB[6] = {0x02, 0x00, 0x00, 0x00, 0x00, 0x1B};
constexpr uint8_t kMacC[6] = {0x02, 0x00, 0x00, 0x00, 0x00, 0x1C};
constexpr uint64_t kMs = 1'000'000;

void* ctx(uintptr_t n) {
  return reinterpret_cast<void*>(n);
}

std::vector<uint8_t> pattern(size_t n, unsigned seed) {
  std::vector<uint8_t> v(n);
  for (size_t i = 0; i < n; ++i)
    v[i] = static_cast<uint8_t>((i * 131 + seed * 17 + (i >> 9)) ^ seed);
  return v;
}

// Engines a (sender), b (receiver) and c (a second sender) on one link;
// completions are collected per engine.
class TaggedNet {
 public:
  explicit TaggedNet(uint64_t seed, const TransportConfig& rx_config = TransportConfig{})
      : link(seed) {
    a = link.add(TransportConfig{}, kMacA, 0, 0xA0A0A0A0);
    b = link.add(rx_config, kMacB, 0, 0xB0B0B0B0);
    c = link.add(TransportConfig{}, kMacC, 0, 0xC0C0C0C0);
    done.resize(link.size());
  }

  Engine& engine(size_t i) { return link.engine(i); }

  void drain() {
    for (size_t e = 0; e < link.size(); ++e) {
      for (const Completion& c : engine(e).completions()) done[e].push_back(c);
      engine(e).completions().clear();
    }
  }
  void step() {
    link.step();
    drain();
  }
  bool run_until(const std::function<bool()>& ready, uint64_t max_ns = 200 * kMs) {
    const uint64_t end = link.now() + max_ns;
    drain();
    while (!ready()) {
      if (link.now() >= end) return false;
      step();
    }
    return true;
  }
  void run_for(uint64_t ns) {
    const uint64_t end = link.now() + ns;
    while (link.now() < end) step();
  }
  std::vector<Completion> take(size_t e) {
    drain();
    std::vector<Completion> out;
    out.swap(done[e]);
    return out;
  }

  // A tagged (or untagged) send of `bytes`, which must outlive it.
  int send(size_t from, const std::vector<uint8_t>& bytes, void* context, bool tagged, uint64_t tag,
           bool has_data = false, uint64_t data = 0) {
    iovec iov{const_cast<uint8_t*>(bytes.data()), bytes.size()};
    SendRequest s;
    s.iov = &iov;
    s.iov_count = 1;
    s.context = context;
    s.tagged = tagged;
    s.tag = tag;
    s.has_data = has_data;
    s.cq_data = data;
    return engine(from).send(link.address(b), s, link.now());
  }
  // Sends and waits until the sender saw it acknowledged: the message is
  // then whole at b (unexpected unless a receive was posted).
  void send_and_wait(size_t from, const std::vector<uint8_t>& bytes, void* context, bool tagged,
                     uint64_t tag, bool has_data = false, uint64_t data = 0) {
    ASSERT_EQ(send(from, bytes, context, tagged, tag, has_data, data), 0);
    ASSERT_TRUE(run_until([&] {
      for (const Completion& c : done[from])
        if (c.context == context) return true;
      return false;
    }));
    for (const Completion& c : take(from)) ASSERT_EQ(c.error, 0);
  }

  static RecvRequest request(std::vector<uint8_t>* buf, void* context, bool tagged, uint64_t tag,
                             uint64_t ignore, const uint64_t* source = nullptr) {
    RecvRequest r;
    if (buf != nullptr) {
      r.iov[0] = {buf->data(), buf->size()};
      r.iov_count = 1;
    }
    r.context = context;
    r.tagged = tagged;
    r.tag = tag;
    r.ignore = ignore;
    if (source != nullptr) {
      r.any_source = false;
      r.source_key = *source;
    }
    return r;
  }
  int post(std::vector<uint8_t>& buf, void* context, bool tagged, uint64_t tag, uint64_t ignore = 0,
           const uint64_t* source = nullptr) {
    return engine(b).post_recv(request(&buf, context, tagged, tag, ignore, source), link.now());
  }
  int peek(void* context, uint64_t tag, uint64_t ignore, PeekAction action,
           const uint64_t* source = nullptr) {
    return engine(b).peek_recv(request(nullptr, context, true, tag, ignore, source), action);
  }
  int claim(std::vector<uint8_t>* buf, void* context, bool discard = false) {
    return engine(b).claim_recv(request(buf, context, true, 0, 0), discard);
  }

  sim::LossyLink link;
  size_t a = 0, b = 0, c = 0;
  std::vector<std::vector<Completion>> done;
};

// Expects exactly one completion at b and returns it.
Completion one(TaggedNet& net) {
  auto got = net.take(net.b);
  EXPECT_EQ(got.size(), 1u);
  return got.empty() ? Completion{} : got[0];
}

TEST(TaggedMatching, PeekReportsTheMessageAndLeavesIt) {
  // Expect: a peek that finds an unexpected message completes with its
  // length, tag and CQ data, buf nullptr, and copies nothing; the message
  // stays, a second peek finds it again and a receive then takes it whole.
  TaggedNet net(1);
  const auto m = pattern(3000, 1);
  net.send_and_wait(net.a, m, ctx(1), true, 0xABC, true, 0xDA7A);
  ASSERT_EQ(net.peek(ctx(10), 0xABC, 0, PeekAction::kPeek), 0);
  for (int round = 0; round < 2; ++round) {
    if (round == 1) {
      ASSERT_EQ(net.peek(ctx(10), 0xA00, 0xFF, PeekAction::kPeek), 0);
    }
    const Completion c = one(net);
    EXPECT_EQ(c.error, 0);
    EXPECT_EQ(c.kind, Completion::Kind::kRecv);
    EXPECT_EQ(c.context, ctx(10));
    EXPECT_EQ(c.len, m.size()) << "len is the message's length";
    EXPECT_EQ(c.buf, nullptr) << "no data returned by a peek";
    EXPECT_TRUE(c.tagged);
    EXPECT_EQ(c.tag, 0xABCu);
    EXPECT_TRUE(c.has_data);
    EXPECT_EQ(c.cq_data, 0xDA7Au);
    EXPECT_EQ(c.source_key, net.link.key(net.a));
  }
  std::vector<uint8_t> in(4000, 0xEE);
  ASSERT_EQ(net.post(in, ctx(11), true, 0xABC), 0);
  const Completion c = one(net);
  EXPECT_EQ(c.error, 0);
  EXPECT_EQ(c.context, ctx(11));
  EXPECT_EQ(c.len, m.size());
  EXPECT_TRUE(std::equal(m.begin(), m.end(), in.begin()));
  EXPECT_EQ(in[m.size()], 0xEE);
  // Expect: now nothing is left to peek at.
  ASSERT_EQ(net.peek(ctx(12), 0xABC, 0, PeekAction::kPeek), 0);
  EXPECT_EQ(one(net).error, kErrNoMessage);
}

TEST(TaggedMatching, PeekWithoutMatchIsENOMSG) {
  // Expect: a peek matches by tag and ignore mask only tagged messages; with
  // none it completes with kErrNoMessage (FI_ENOMSG) and its own context.
  TaggedNet net(2);
  const auto plain = pattern(100, 2), tagged = pattern(100, 3);
  net.send_and_wait(net.a, plain, ctx(1), false, 0);
  net.send_and_wait(net.a, tagged, ctx(2), true, 0x0F00);
  // Expect: no tag 0x0F01 (ignore 0); an untagged message is never seen.
  ASSERT_EQ(net.peek(ctx(20), 0x0F01, 0, PeekAction::kPeek), 0);
  Completion c = one(net);
  EXPECT_EQ(c.error, kErrNoMessage);
  EXPECT_EQ(c.context, ctx(20));
  // Expect: ignoring the low bit makes it match.
  ASSERT_EQ(net.peek(ctx(21), 0x0F01, 0x1, PeekAction::kPeek), 0);
  c = one(net);
  EXPECT_EQ(c.error, 0);
  EXPECT_EQ(c.tag, 0x0F00u);
  EXPECT_EQ(c.len, tagged.size());
}

TEST(TaggedMatching, UnexpectedMessagesMatchInArrivalOrder) {
  // Expect: of several unexpected messages that match, the oldest is found
  // by a peek and taken by a receive, whichever peer sent it; a directed
  // peek or receive sees only its source's messages.
  TaggedNet net(3);
  const auto m1 = pattern(200, 1), m2 = pattern(201, 2), m3 = pattern(202, 3);
  net.send_and_wait(net.c, m1, ctx(1), true, 0x11);
  net.send_and_wait(net.a, m2, ctx(2), true, 0x12);
  net.send_and_wait(net.c, m3, ctx(3), true, 0x13);
  ASSERT_EQ(net.peek(ctx(10), 0x10, 0xF, PeekAction::kPeek), 0);
  EXPECT_EQ(one(net).tag, 0x11u);
  const uint64_t from_a = net.link.key(net.a);
  ASSERT_EQ(net.peek(ctx(11), 0x10, 0xF, PeekAction::kPeek, &from_a), 0);
  EXPECT_EQ(one(net).tag, 0x12u);
  std::vector<uint8_t> in(300);
  for (uint64_t expected : {0x11u, 0x12u, 0x13u}) {
    ASSERT_EQ(net.post(in, ctx(20), true, 0, ~uint64_t{0}), 0);
    const Completion c = one(net);
    EXPECT_EQ(c.tag, expected);
  }
}

TEST(TaggedMatching, PostedReceivesMatchInPostingOrderAndKindsStayApart) {
  // Expect: an arriving tagged message takes the first posted tagged receive
  // whose tag matches, skipping untagged receives and non-matching ones; an
  // untagged message takes only an untagged receive.
  TaggedNet net(4);
  std::vector<uint8_t> untagged_rx(100), wrong_tag(100), wide(100), exact(100);
  ASSERT_EQ(net.post(untagged_rx, ctx(1), false, 0), 0);
  ASSERT_EQ(net.post(wrong_tag, ctx(2), true, 0x7, 0), 0);
  ASSERT_EQ(net.post(wide, ctx(3), true, 0x100, 0xFF), 0);
  ASSERT_EQ(net.post(exact, ctx(4), true, 0x105, 0), 0);
  const auto t = pattern(50, 4), u = pattern(60, 5), t2 = pattern(70, 6);
  net.send_and_wait(net.a, t, ctx(10), true, 0x105);
  Completion c = one(net);
  EXPECT_EQ(c.context, ctx(3)) << "posted before the exact one";
  EXPECT_EQ(c.tag, 0x105u);
  net.send_and_wait(net.a, u, ctx(11), false, 0);
  c = one(net);
  EXPECT_EQ(c.context, ctx(1));
  EXPECT_FALSE(c.tagged);
  net.send_and_wait(net.a, t2, ctx(12), true, 0x105);
  c = one(net);
  EXPECT_EQ(c.context, ctx(4));
  EXPECT_TRUE(std::equal(t2.begin(), t2.end(), exact.begin()));
  EXPECT_EQ(net.engine(net.b).posted_recvs(), 1u);  // wrong_tag
  EXPECT_EQ(net.engine(net.b).cancel_recv(ctx(2)), 0);
}

TEST(TaggedMatching, PeekClaimReservesTheMessageForItsClaim) {
  // Expect: after PEEK|CLAIM the message is invisible to receives and peeks;
  // a claim with another context finds nothing (-ENOENT); the claim with the
  // peek's context receives it whole.
  TaggedNet net(5);
  const auto m = pattern(5000, 5), later = pattern(40, 6);
  net.send_and_wait(net.a, m, ctx(1), true, 0x42);
  ASSERT_EQ(net.peek(ctx(100), 0x42, 0, PeekAction::kClaim), 0);
  Completion c = one(net);
  EXPECT_EQ(c.error, 0);
  EXPECT_EQ(c.len, m.size());
  EXPECT_EQ(c.buf, nullptr);
  // Expect: a matching receive does not take the reserved message; it stays
  // posted and takes the next one.
  std::vector<uint8_t> other(100);
  ASSERT_EQ(net.post(other, ctx(2), true, 0x42), 0);
  EXPECT_TRUE(net.take(net.b).empty());
  ASSERT_EQ(net.peek(ctx(3), 0x42, 0, PeekAction::kPeek), 0);
  EXPECT_EQ(one(net).error, kErrNoMessage);
  net.send_and_wait(net.a, later, ctx(4), true, 0x42);
  c = one(net);
  EXPECT_EQ(c.context, ctx(2));
  EXPECT_EQ(c.len, later.size());

  std::vector<uint8_t> in(6000, 0xEE);
  EXPECT_EQ(net.claim(&in, ctx(101)), -ENOENT);
  EXPECT_TRUE(net.take(net.b).empty());
  ASSERT_EQ(net.claim(&in, ctx(100)), 0);
  c = one(net);
  EXPECT_EQ(c.error, 0);
  EXPECT_EQ(c.context, ctx(100));
  EXPECT_EQ(c.len, m.size());
  EXPECT_EQ(c.buf, in.data());
  EXPECT_EQ(c.tag, 0x42u);
  EXPECT_TRUE(std::equal(m.begin(), m.end(), in.begin()));
  EXPECT_EQ(in[m.size()], 0xEE);
  // Expect: claimed once; a second claim finds nothing.
  EXPECT_EQ(net.claim(&in, ctx(100)), -ENOENT);
}

TEST(TaggedMatching, ClaimOfAMessageStillArrivingCompletesWhenWhole) {
  // Expect: a message counts as arrived once its first segment has: a peek
  // sees its full length, PEEK|CLAIM reserves it, and the claim completes
  // when the last segment lands, byte-exact.
  TaggedNet net(6);
  const auto m = pattern(1 << 20, 7);
  ASSERT_EQ(net.send(net.a, m, ctx(1), true, 0x77), 0);
  ASSERT_TRUE(net.run_until([&] { return net.engine(net.b).stats().frames_received >= 10; }));
  ASSERT_EQ(net.engine(net.b).stats().messages_received, 0u);
  ASSERT_EQ(net.peek(ctx(50), 0x77, 0, PeekAction::kClaim), 0);
  Completion c = one(net);
  EXPECT_EQ(c.error, 0);
  EXPECT_EQ(c.len, m.size());
  std::vector<uint8_t> in(m.size());
  ASSERT_EQ(net.claim(&in, ctx(50)), 0);
  EXPECT_TRUE(net.take(net.b).empty()) << "not whole yet";
  ASSERT_TRUE(net.run_until([&] { return !net.done[net.b].empty(); }));
  c = one(net);
  EXPECT_EQ(c.error, 0);
  EXPECT_EQ(c.context, ctx(50));
  EXPECT_EQ(c.len, m.size());
  EXPECT_TRUE(in == m);
}

TEST(TaggedMatching, CancelledClaimKeepsTheReservation) {
  // Expect: cancelling a claim that waits for a message still arriving gives
  // kErrCanceled; the message stays reserved for the context, and a new
  // claim with it receives the message.
  TaggedNet net(7);
  const auto m = pattern(200000, 8);
  ASSERT_EQ(net.send(net.a, m, ctx(1), true, 0x5), 0);
  ASSERT_TRUE(net.run_until([&] { return net.engine(net.b).stats().frames_received >= 5; }));
  ASSERT_EQ(net.peek(ctx(60), 0x5, 0, PeekAction::kClaim), 0);
  EXPECT_EQ(one(net).error, 0);
  std::vector<uint8_t> first(m.size()), second(m.size());
  ASSERT_EQ(net.claim(&first, ctx(60)), 0);
  ASSERT_EQ(net.engine(net.b).cancel_recv(ctx(60)), 0);
  EXPECT_EQ(one(net).error, kErrCanceled);
  ASSERT_EQ(net.claim(&second, ctx(60)), 0);
  ASSERT_TRUE(net.run_until([&] { return !net.done[net.b].empty(); }));
  const Completion c = one(net);
  EXPECT_EQ(c.error, 0);
  EXPECT_EQ(c.buf, second.data());
  EXPECT_TRUE(second == m);
}

TEST(TaggedMatching, PeekDiscardDropsTheMessage) {
  // Expect: PEEK|DISCARD completes like a peek (length, tag) and the message
  // is gone: a receive posted afterwards takes the next one instead.
  TaggedNet net(8);
  const auto m1 = pattern(700, 9), m2 = pattern(800, 10);
  net.send_and_wait(net.a, m1, ctx(1), true, 0x9);
  net.send_and_wait(net.a, m2, ctx(2), true, 0x9);
  ASSERT_EQ(net.peek(ctx(70), 0x9, 0, PeekAction::kDiscard), 0);
  Completion c = one(net);
  EXPECT_EQ(c.error, 0);
  EXPECT_EQ(c.len, m1.size());
  EXPECT_EQ(c.buf, nullptr);
  std::vector<uint8_t> in(1000);
  ASSERT_EQ(net.post(in, ctx(71), true, 0x9), 0);
  c = one(net);
  EXPECT_EQ(c.len, m2.size());
  EXPECT_TRUE(std::equal(m2.begin(), m2.end(), in.begin()));
  ASSERT_EQ(net.peek(ctx(72), 0x9, 0, PeekAction::kDiscard), 0);
  EXPECT_EQ(one(net).error, kErrNoMessage);
}

TEST(TaggedMatching, ClaimDiscardDropsTheReservedMessage) {
  // Expect: FI_CLAIM|FI_DISCARD on a reserved message completes with len 0
  // and buf nullptr, and drops it; the reservation is gone too.
  TaggedNet net(9);
  const auto m = pattern(900, 11);
  net.send_and_wait(net.a, m, ctx(1), true, 0x31);
  ASSERT_EQ(net.peek(ctx(80), 0x31, 0, PeekAction::kClaim), 0);
  EXPECT_EQ(one(net).error, 0);
  ASSERT_EQ(net.claim(nullptr, ctx(80), /*discard=*/true), 0);
  const Completion c = one(net);
  EXPECT_EQ(c.error, 0);
  EXPECT_EQ(c.context, ctx(80));
  EXPECT_EQ(c.len, 0u);
  EXPECT_EQ(c.buf, nullptr);
  EXPECT_EQ(c.tag, 0x31u);
  std::vector<uint8_t> in(1000);
  EXPECT_EQ(net.claim(&in, ctx(80)), -ENOENT);
  ASSERT_EQ(net.peek(ctx(81), 0x31, 0, PeekAction::kPeek), 0);
  EXPECT_EQ(one(net).error, kErrNoMessage);
}

TEST(TaggedMatching, DiscardFreesTheUnexpectedBudget) {
  // Expect: with room for one unexpected message, a second one waits (the
  // receive window closes); discarding the first, even while the second is
  // held back, lets the second arrive, and nothing of the first is left.
  TransportConfig rx;
  rx.unexpected_bytes = 10000;
  TaggedNet net(10, rx);
  const auto m1 = pattern(8000, 12), m2 = pattern(6000, 13);
  net.send_and_wait(net.a, m1, ctx(1), true, 0x1);
  ASSERT_EQ(net.send(net.a, m2, ctx(2), true, 0x2), 0);
  net.run_for(20 * kMs);
  ASSERT_TRUE(net.take(net.a).empty()) << "the second message found room it should not have";
  ASSERT_EQ(net.peek(ctx(90), 0x2, 0, PeekAction::kPeek), 0);
  EXPECT_EQ(one(net).error, kErrNoMessage);
  ASSERT_EQ(net.peek(ctx(91), 0x1, 0, PeekAction::kDiscard), 0);
  EXPECT_EQ(one(net).len, m1.size());
  ASSERT_TRUE(net.run_until([&] { return !net.done[net.a].empty(); }));
  EXPECT_EQ(net.take(net.a)[0].error, 0);
  std::vector<uint8_t> in(8000);
  ASSERT_EQ(net.post(in, ctx(92), true, 0, ~uint64_t{0}), 0);
  const Completion c = one(net);
  EXPECT_EQ(c.tag, 0x2u);
  EXPECT_TRUE(std::equal(m2.begin(), m2.end(), in.begin()));
}

TEST(TaggedMatching, DiscardOfAMessageStillArrivingDropsItWhenWhole) {
  // Expect: PEEK|DISCARD on a message half-way in completes at once; the
  // rest of it is still received (and acknowledged) but reaches no receive;
  // the next message does.
  TaggedNet net(11);
  const auto big = pattern(300000, 14), small = pattern(64, 15);
  ASSERT_EQ(net.send(net.a, big, ctx(1), true, 0x8), 0);
  ASSERT_TRUE(net.run_until([&] { return net.engine(net.b).stats().frames_received >= 5; }));
  ASSERT_EQ(net.peek(ctx(95), 0x8, 0, PeekAction::kDiscard), 0);
  EXPECT_EQ(one(net).len, big.size());
  std::vector<uint8_t> in(400000);
  ASSERT_EQ(net.post(in, ctx(96), true, 0x8), 0);
  ASSERT_TRUE(net.run_until([&] { return !net.done[net.a].empty(); }));
  EXPECT_EQ(net.take(net.a)[0].error, 0) << "the sender's message was delivered";
  EXPECT_TRUE(net.take(net.b).empty()) << "the discarded message reached a receive";
  net.send_and_wait(net.a, small, ctx(2), true, 0x8);
  const Completion c = one(net);
  EXPECT_EQ(c.context, ctx(96));
  EXPECT_EQ(c.len, small.size());
}

TEST(TaggedMatching, PeekAndClaimUnderLossReorderAndDuplication) {
  // Expect: over a link that drops, reorders, duplicates and corrupts, every
  // tagged message from two senders is found by a peek, reserved and
  // claimed exactly once, byte-exact, and per sender in send order.
  TaggedNet net(12);
  net.link.faults() = {.drop = 0.05, .duplicate = 0.03, .reorder = 0.05, .corrupt = 0.01};
  constexpr int kPerSender = 40;
  std::vector<std::vector<uint8_t>> out;
  out.reserve(2 * kPerSender);
  for (int i = 0; i < 2 * kPerSender; ++i) out.push_back(pattern(100 + 997 * (i % 7), 20 + i));
  // Sender s sends messages s, s + 2, ... with tag (s << 32) | index.
  for (int i = 0; i < kPerSender; ++i)
    for (size_t s : {size_t{0}, size_t{1}}) {
      const int index = 2 * i + static_cast<int>(s);
      const size_t from = s == 0 ? net.a : net.c;
      ASSERT_EQ(net.send(from, out[index], ctx(1000 + index), true,
                         (uint64_t{s} << 32) | static_cast<uint64_t>(index)),
                0);
    }
  std::map<uint64_t, int> next_index = {{0, 0}, {1, 1}};
  int received = 0;
  std::vector<uint8_t> in(8000);
  const uint64_t end = net.link.now() + 2000 * kMs;
  while (received < 2 * kPerSender && net.link.now() < end) {
    net.step();
    ASSERT_EQ(net.peek(ctx(7), 0, ~uint64_t{0}, PeekAction::kClaim), 0);
    const Completion peeked = one(net);
    if (peeked.error == kErrNoMessage) continue;
    ASSERT_EQ(peeked.error, 0);
    const uint64_t sender = peeked.tag >> 32;
    const int index = static_cast<int>(peeked.tag & 0xFFFFFFFF);
    ASSERT_EQ(index, next_index[sender]) << "out of order from sender " << sender;
    next_index[sender] += 2;
    ASSERT_EQ(peeked.len, out[index].size());
    ASSERT_EQ(net.claim(&in, ctx(7)), 0);
    ASSERT_TRUE(net.run_until([&] { return !net.done[net.b].empty(); }));
    const Completion c = one(net);
    ASSERT_EQ(c.error, 0);
    ASSERT_EQ(c.len, out[index].size());
    ASSERT_TRUE(std::equal(out[index].begin(), out[index].end(), in.begin())) << index;
    ++received;
  }
  EXPECT_EQ(received, 2 * kPerSender);
  ASSERT_EQ(net.peek(ctx(8), 0, ~uint64_t{0}, PeekAction::kPeek), 0);
  EXPECT_EQ(one(net).error, kErrNoMessage) << "a message was delivered twice";
  ASSERT_TRUE(net.run_until(
      [&] { return net.done[net.a].size() == kPerSender && net.done[net.c].size() == kPerSender; },
      2000 * kMs));
}

TEST(TaggedMatching, ReservedMessageOfAResetPeerIsGone) {
  // Expect: when the sender restarts while a reserved message is half-way
  // in, the message is dropped with the old connection and a later claim
  // finds nothing (-ENOENT) rather than waiting forever.
  TaggedNet net(13);
  const auto m = pattern(400000, 16);
  ASSERT_EQ(net.send(net.a, m, ctx(1), true, 0x3), 0);
  ASSERT_TRUE(net.run_until([&] { return net.engine(net.b).stats().frames_received >= 5; }));
  ASSERT_EQ(net.peek(ctx(40), 0x3, 0, PeekAction::kClaim), 0);
  EXPECT_EQ(one(net).error, 0);
  net.link.restart(net.a, 0xA1A1A1A1);
  const auto hello = pattern(10, 17);
  net.send_and_wait(net.a, hello, ctx(2), true, 0x4);
  std::vector<uint8_t> in(m.size());
  EXPECT_EQ(net.claim(&in, ctx(40)), -ENOENT);
  ASSERT_EQ(net.peek(ctx(41), 0x4, 0, PeekAction::kPeek), 0);
  EXPECT_EQ(one(net).len, hello.size());
}

}  // namespace
}  // namespace ofi_dpdk::proto
