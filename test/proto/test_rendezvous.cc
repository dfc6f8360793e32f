// Rendezvous (lib/proto/rendezvous.cc), driven over the in-memory lossy link
// in simulated time: large messages are announced, matched in send order,
// and pulled by the receive that takes them straight into its buffer; an
// early one holds a record of the unexpected budget, not its bytes.  Each
// test says what it expects in `// Expect:` comments.
#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <memory>
#include <vector>

#include "lib/proto/engine_state.h"
#include "test/proto/lossy_link.h"

namespace ofi_dpdk::proto {
namespace {

constexpr uint8_t kMacA[6] = {0x02, 0x00, 0x00, 0x00, 0x00, 0x2A};
constexpr uint8_t kMacB[6] = {0x02, 0x00, 0x00, 0x00, 0x00, 0x2B};
constexpr uint64_t kMs = 1'000'000;
constexpr size_t kThreshold = 64 << 10;

void* ctx(uintptr_t n) {
  return reinterpret_cast<void*>(n);
}

std::vector<uint8_t> pattern(size_t n, unsigned seed) {
  std::vector<uint8_t> v(n);
  for (size_t i = 0; i < n; ++i)
    v[i] = static_cast<uint8_t>((i * 131 + seed * 17 + (i >> 9)) ^ seed);
  return v;
}

TransportConfig with_rendezvous(size_t unexpected_bytes = 64u << 20) {
  TransportConfig config;
  config.rendezvous_bytes = kThreshold;
  config.unexpected_bytes = unexpected_bytes;
  config.peer_timeout_ns = 200 * kMs;
  return config;
}

// Sender a, receiver b; completions collected per engine; the bytes of
// RESPONSE frames a sends (the pulled data) counted.
class Pair {
 public:
  explicit Pair(uint64_t seed, const TransportConfig& rx = with_rendezvous(),
                const TransportConfig& tx = with_rendezvous())
      : link(seed) {
    a = link.add(tx, kMacA, 0, 0xA0A0A0A0);
    b = link.add(rx, kMacB, 0, 0xB0B0B0B0);
    done.resize(2);
    link.tap = [this](size_t from, size_t, const wire::FrameHeader& h) {
      if (from == a && h.opcode == static_cast<uint8_t>(wire::Opcode::kResponse))
        pulled_bytes += h.payload_len;
      if (from == a && (h.opcode == static_cast<uint8_t>(wire::Opcode::kTagged) ||
                        h.opcode == static_cast<uint8_t>(wire::Opcode::kMsg)))
        message_bytes += h.payload_len;
    };
  }

  Engine& engine(size_t i) { return link.engine(i); }
  void drain() {
    for (size_t e = 0; e < link.size(); ++e) {
      for (const Completion& c : engine(e).completions()) done[e].push_back(c);
      engine(e).completions().clear();
    }
    max_unexpected = std::max(max_unexpected, engine(b).unexpected_bytes());
  }
  bool run_until(const std::function<bool()>& ready, uint64_t max_ns = 2000 * kMs) {
    const uint64_t end = link.now() + max_ns;
    drain();
    while (!ready()) {
      if (link.now() >= end) return false;
      link.step();
      drain();
    }
    return true;
  }
  void run_for(uint64_t ns) {
    const uint64_t end = link.now() + ns;
    while (link.now() < end) {
      link.step();
      drain();
    }
  }
  const Completion* find(size_t e, void* context) const {
    for (const Completion& c : done[e])
      if (c.context == context) return &c;
    return nullptr;
  }
  bool has(size_t e, void* context) const { return find(e, context) != nullptr; }

  int send(const std::vector<uint8_t>& bytes, void* context, bool tagged = true, uint64_t tag = 7,
           bool copy = false, const uint64_t* cq_data = nullptr) {
    iovec iov{const_cast<uint8_t*>(bytes.data()), bytes.size()};
    SendRequest s;
    s.iov = &iov;
    s.iov_count = 1;
    s.context = context;
    s.tagged = tagged;
    s.tag = tag;
    s.copy = copy;
    if (cq_data != nullptr) {
      s.has_data = true;
      s.cq_data = *cq_data;
    }
    return engine(a).send(link.address(b), s, link.now());
  }
  static RecvRequest request(std::vector<uint8_t>* buf, void* context, bool tagged = true,
                             uint64_t tag = 7) {
    RecvRequest r;
    if (buf != nullptr) {
      r.iov[0] = {buf->data(), buf->size()};
      r.iov_count = 1;
    }
    r.context = context;
    r.tagged = tagged;
    r.tag = tag;
    return r;
  }
  int post(std::vector<uint8_t>& buf, void* context, bool tagged = true, uint64_t tag = 7) {
    return engine(b).post_recv(request(&buf, context, tagged, tag), link.now());
  }

  sim::LossyLink link;
  size_t a = 0, b = 0;
  std::vector<std::vector<Completion>> done;
  uint64_t pulled_bytes = 0, message_bytes = 0;
  size_t max_unexpected = 0;
};

TEST(Rendezvous, APostedReceiveGetsTheDataStraightFromTheSendersBuffer) {
  // Expect: a 1 MiB send to a posted receive is announced, pulled and
  // placed: the receive completes whole and byte-exact with the send's CQ
  // data, the send completes after it, once; the data crosses once (1 MiB of
  // RESPONSE payload, 16 bytes of message payload), and b's unexpected
  // budget is never used.
  Pair net(1);
  const auto m = pattern(1 << 20, 1);
  std::vector<uint8_t> in((1 << 20) + 16, 0xEE);
  ASSERT_EQ(net.post(in, ctx(2)), 0);
  const uint64_t data = 0xC0FFEE;
  ASSERT_EQ(net.send(m, ctx(1), true, 7, false, &data), 0);
  ASSERT_TRUE(net.run_until([&] { return net.has(net.a, ctx(1)) && net.has(net.b, ctx(2)); }));
  const Completion& got = *net.find(net.b, ctx(2));
  EXPECT_EQ(got.error, 0);
  EXPECT_EQ(got.len, m.size());
  EXPECT_TRUE(got.tagged);
  EXPECT_EQ(got.tag, 7u);
  EXPECT_EQ(got.source_key, net.link.key(net.a));
  EXPECT_TRUE(got.has_data);
  EXPECT_EQ(got.cq_data, data);
  EXPECT_TRUE(std::equal(m.begin(), m.end(), in.begin()));
  EXPECT_EQ(in[m.size()], 0xEE) << "nothing written past the message";
  EXPECT_EQ(net.find(net.a, ctx(1))->error, 0);
  EXPECT_EQ(net.find(net.a, ctx(1))->len, m.size());
  EXPECT_EQ(net.done[net.a].size(), 1u);
  EXPECT_EQ(net.done[net.b].size(), 1u);
  EXPECT_EQ(net.pulled_bytes, m.size());
  EXPECT_EQ(net.message_bytes, sizeof(wire::RendezvousBody));
  EXPECT_EQ(net.max_unexpected, 0u);
  EXPECT_EQ(net.engine(net.a).stats().rendezvous_sent, 1u);
  EXPECT_EQ(net.engine(net.b).stats().pulls_sent, 1u);
  EXPECT_EQ(net.engine(net.a).stats().pulls_served, 1u);
  EXPECT_EQ(net.engine(net.a).outstanding_sends(), 0u);
}

TEST(Rendezvous, BelowTheThresholdAndInjectedMessagesGoAtOnce) {
  // Expect: a message one byte under the threshold, and an injected (copied)
  // one above it, are sent eagerly: their bytes travel as the message.
  Pair net(2);
  const auto small = pattern(kThreshold - 1, 2), injected = pattern(3 * kThreshold, 3);
  std::vector<uint8_t> in1(small.size()), in2(injected.size());
  ASSERT_EQ(net.post(in1, ctx(11)), 0);
  ASSERT_EQ(net.post(in2, ctx(12)), 0);
  ASSERT_EQ(net.send(small, ctx(1)), 0);
  ASSERT_EQ(net.send(injected, ctx(2), true, 7, /*copy=*/true), 0);
  ASSERT_TRUE(net.run_until([&] { return net.has(net.b, ctx(11)) && net.has(net.b, ctx(12)); }));
  EXPECT_EQ(in1, small);
  EXPECT_EQ(in2, injected);
  EXPECT_EQ(net.engine(net.a).stats().rendezvous_sent, 0u);
  EXPECT_EQ(net.message_bytes, small.size() + injected.size());
}

TEST(Rendezvous, AnEarlyLargeMessageHoldsOnlyItsRecordAndItsSendWaits) {
  // Expect: with a 64 KiB unexpected budget, a 4 MiB message and a 100-byte
  // one sent before any receive are both taken (no stall): the budget holds
  // the 4 MiB one's record and the small one's bytes.  The small send
  // completes; the large one waits for its receive, and its data has not
  // moved.  A receive posted later gets it whole, then the send completes.
  Pair net(3, with_rendezvous(64 << 10));
  const auto big = pattern(4 << 20, 4), small = pattern(100, 5);
  const uint64_t data = 0xDA7A;
  ASSERT_EQ(net.send(big, ctx(1), true, 1, false, &data), 0);
  ASSERT_EQ(net.send(small, ctx(2), true, 2), 0);
  ASSERT_TRUE(net.run_until([&] { return net.has(net.a, ctx(2)); }));
  net.run_for(50 * kMs);
  EXPECT_FALSE(net.has(net.a, ctx(1))) << "the send waits for its receive";
  EXPECT_EQ(net.engine(net.b).unexpected_messages(), 2u);
  EXPECT_EQ(net.engine(net.b).unexpected_bytes(), unexpected_cost(0) + unexpected_cost(100));
  EXPECT_EQ(net.pulled_bytes, 0u);
  EXPECT_EQ(net.engine(net.b).stats().stalled_no_buffer, 0u);

  std::vector<uint8_t> in(big.size());
  ASSERT_EQ(net.post(in, ctx(11), true, 1), 0);
  ASSERT_TRUE(net.run_until([&] { return net.has(net.a, ctx(1)) && net.has(net.b, ctx(11)); }));
  EXPECT_EQ(net.find(net.b, ctx(11))->error, 0);
  EXPECT_EQ(net.find(net.b, ctx(11))->len, big.size());
  EXPECT_TRUE(net.find(net.b, ctx(11))->has_data) << "the early record kept the CQ data";
  EXPECT_EQ(net.find(net.b, ctx(11))->cq_data, data);
  EXPECT_EQ(in, big);
  EXPECT_EQ(net.find(net.a, ctx(1))->error, 0);
  EXPECT_EQ(net.engine(net.b).unexpected_bytes(), unexpected_cost(100));
  std::vector<uint8_t> in_small(100);
  ASSERT_EQ(net.post(in_small, ctx(12), true, 2), 0);
  EXPECT_EQ(in_small, small);
  EXPECT_EQ(net.engine(net.b).unexpected_bytes(), 0u);
}

TEST(Rendezvous, MessagesMatchAndCompleteInSendOrderWhateverTheirSize) {
  // Expect: large, small, large, small, large with one tag, sent before any
  // receive (and again with the receives posted first): receive i gets
  // message i, and the receives complete in that order (a small message's
  // completion waits for the pull of the large one before it).
  for (const bool posted_first : {false, true}) {
    SCOPED_TRACE(posted_first ? "receives posted first" : "messages first");
    Pair net(4);
    const std::vector<size_t> sizes = {200 << 10, 10, 70 << 10, 5000, 1 << 20};
    std::vector<std::vector<uint8_t>> out, in;
    for (size_t i = 0; i < sizes.size(); ++i) {
      out.push_back(pattern(sizes[i], 40 + i));
      in.emplace_back(1 << 20, 0xEE);
    }
    auto post_all = [&] {
      for (size_t i = 0; i < sizes.size(); ++i) ASSERT_EQ(net.post(in[i], ctx(100 + i)), 0);
    };
    if (posted_first) post_all();
    for (size_t i = 0; i < sizes.size(); ++i) ASSERT_EQ(net.send(out[i], ctx(1 + i)), 0);
    net.run_for(20 * kMs);
    if (!posted_first) post_all();
    ASSERT_TRUE(net.run_until([&] {
      return net.done[net.a].size() == sizes.size() && net.done[net.b].size() == sizes.size();
    }));
    for (size_t i = 0; i < sizes.size(); ++i)
      EXPECT_EQ(net.done[net.b][i].context, ctx(100 + i)) << "completion " << i;
    for (size_t i = 0; i < sizes.size(); ++i) {
      const Completion* got = net.find(net.b, ctx(100 + i));
      ASSERT_NE(got, nullptr);
      EXPECT_EQ(got->error, 0);
      EXPECT_EQ(got->len, sizes[i]) << "receive " << i;
      EXPECT_TRUE(std::equal(out[i].begin(), out[i].end(), in[i].begin())) << "receive " << i;
      EXPECT_EQ(net.find(net.a, ctx(1 + i))->error, 0);
    }
  }
}

TEST(Rendezvous, ASmallReceivePullsOnlyWhatFitsAndReportsTheRest) {
  // Expect: a 100 KiB receive for a 300 KiB message completes with
  // kErrTruncated, len 100 KiB, overflow 200 KiB and the first 100 KiB; only
  // 100 KiB cross the wire; the send completes without error, len 300 KiB.
  Pair net(5);
  const auto m = pattern(300 << 10, 6);
  std::vector<uint8_t> in((100 << 10) + 1, 0xEE);
  RecvRequest r = Pair::request(&in, ctx(11));
  r.iov[0].iov_len = 100 << 10;
  ASSERT_EQ(net.engine(net.b).post_recv(r, net.link.now()), 0);
  ASSERT_EQ(net.send(m, ctx(1)), 0);
  ASSERT_TRUE(net.run_until([&] { return net.has(net.a, ctx(1)) && net.has(net.b, ctx(11)); }));
  const Completion& got = *net.find(net.b, ctx(11));
  EXPECT_EQ(got.error, kErrTruncated);
  EXPECT_EQ(got.len, size_t{100} << 10);
  EXPECT_EQ(got.overflow, size_t{200} << 10);
  EXPECT_TRUE(std::equal(m.begin(), m.begin() + (100 << 10), in.begin()));
  EXPECT_EQ(in.back(), 0xEE);
  EXPECT_EQ(net.pulled_bytes, size_t{100} << 10);
  EXPECT_EQ(net.find(net.a, ctx(1))->error, 0);
  EXPECT_EQ(net.find(net.a, ctx(1))->len, m.size());
}

TEST(Rendezvous, PeekClaimAndDiscardSeeTheAnnouncedLength) {
  // Expect: FI_PEEK reports the large message's own length (nothing moves);
  // FI_CLAIM then a claim receive pulls it; FI_DISCARD of another completes
  // its send with no data crossing.
  Pair net(6);
  const auto first = pattern(500 << 10, 7), second = pattern(600 << 10, 8);
  ASSERT_EQ(net.send(first, ctx(1), true, 1), 0);
  ASSERT_EQ(net.send(second, ctx(2), true, 2), 0);
  net.run_for(20 * kMs);
  Engine& b = net.engine(net.b);
  ASSERT_EQ(b.peek_recv(Pair::request(nullptr, ctx(20), true, 1), Engine::PeekAction::kClaim), 0);
  net.drain();
  ASSERT_NE(net.find(net.b, ctx(20)), nullptr);
  EXPECT_EQ(net.find(net.b, ctx(20))->len, first.size());
  EXPECT_EQ(net.find(net.b, ctx(20))->buf, nullptr);
  EXPECT_EQ(net.pulled_bytes, 0u);
  std::vector<uint8_t> in(first.size());
  ASSERT_EQ(b.claim_recv(Pair::request(&in, ctx(20)), false), 0);
  ASSERT_TRUE(net.run_until([&] { return net.has(net.a, ctx(1)); }));
  EXPECT_EQ(in, first);

  ASSERT_EQ(b.peek_recv(Pair::request(nullptr, ctx(30), true, 2), Engine::PeekAction::kDiscard), 0);
  ASSERT_TRUE(net.run_until([&] { return net.has(net.a, ctx(2)); }));
  EXPECT_EQ(net.find(net.a, ctx(2))->error, 0);
  EXPECT_EQ(net.pulled_bytes, first.size()) << "the discarded message's data never moved";
  EXPECT_EQ(b.unexpected_messages(), 0u);
}

TEST(Rendezvous, AMultiRecvBufferTakesLargeMessagesInSuccessiveParts) {
  // Expect: two 300 KiB untagged messages fill one 1 MiB FI_MULTI_RECV
  // buffer at offsets 0 and 300 KiB, each byte-exact.
  Pair net(7);
  std::vector<uint8_t> buffer(1 << 20, 0xEE);
  RecvRequest r = Pair::request(&buffer, ctx(50), false);
  r.multi = std::make_shared<MultiRecv>();
  r.multi->capacity = buffer.size();
  r.multi->min_free = 1000;
  ASSERT_EQ(net.engine(net.b).post_recv(r, net.link.now()), 0);
  const auto m1 = pattern(300 << 10, 9), m2 = pattern(300 << 10, 10);
  ASSERT_EQ(net.send(m1, ctx(1), false), 0);
  ASSERT_EQ(net.send(m2, ctx(2), false), 0);
  ASSERT_TRUE(
      net.run_until([&] { return net.done[net.b].size() == 2 && net.done[net.a].size() == 2; }));
  std::vector<void*> bufs;
  for (const Completion& c : net.done[net.b]) {
    EXPECT_EQ(c.error, 0);
    EXPECT_EQ(c.len, m1.size());
    bufs.push_back(c.buf);
  }
  std::sort(bufs.begin(), bufs.end());
  EXPECT_EQ(bufs[0], buffer.data());
  EXPECT_EQ(bufs[1], buffer.data() + m1.size());
  EXPECT_TRUE(std::equal(m1.begin(), m1.end(), buffer.begin()));
  EXPECT_TRUE(std::equal(m2.begin(), m2.end(), buffer.begin() + m1.size()));
}

TEST(Rendezvous, AMultiRecvBufferIsReleasedByTheLastCompletionTheApplicationSees) {
  // Expect: a 300 KiB rendezvous message, then a 200-byte eager one that
  // leaves less than the buffer's minimum free: the small one's data lands
  // first, but its completion comes after the large one's, and the release
  // flag rides the small one's (the last), not the large one's.
  Pair net(11);
  std::vector<uint8_t> buffer((300 << 10) + 2100, 0xEE);
  RecvRequest r = Pair::request(&buffer, ctx(60), false);
  r.multi = std::make_shared<MultiRecv>();
  r.multi->capacity = buffer.size();
  r.multi->min_free = 2000;
  ASSERT_EQ(net.engine(net.b).post_recv(r, net.link.now()), 0);
  const auto big = pattern(300 << 10, 12), small = pattern(200, 13);
  ASSERT_EQ(net.send(big, ctx(1), false), 0);
  ASSERT_EQ(net.send(small, ctx(2), false), 0);
  ASSERT_TRUE(net.run_until([&] { return net.done[net.b].size() == 2; }));
  const std::vector<Completion>& got = net.done[net.b];
  EXPECT_EQ(got[0].len, big.size());
  EXPECT_FALSE(got[0].multi_released);
  EXPECT_EQ(got[1].len, small.size());
  EXPECT_TRUE(got[1].multi_released);
  EXPECT_TRUE(std::equal(big.begin(), big.end(), buffer.begin()));
  EXPECT_TRUE(std::equal(small.begin(), small.end(), buffer.begin() + big.size()));
}

TEST(Rendezvous, ThePulledDataGoesAheadOfEagerMessagesQueuedAfterIt) {
  // Expect: B waits for one 1 MiB message (its receive posted first); A sends
  // it, then 2.4 MiB of 60 KiB eager messages (below the rendezvous
  // threshold) nobody receives yet, against a 1 MiB unexpected budget.  The answer to B's pull goes
  // ahead of the eager messages not yet cut, so B's receive completes although the eager ones fill
  // its budget and close its window; they arrive once receives come.
  Pair net(12, with_rendezvous(1 << 20));
  const auto big = pattern(1 << 20, 14);
  std::vector<uint8_t> in(big.size());
  ASSERT_EQ(net.post(in, ctx(100), true, 1), 0);
  ASSERT_EQ(net.send(big, ctx(1), true, 1), 0);
  std::vector<std::vector<uint8_t>> flood;
  for (size_t i = 0; i < 40; ++i) {
    flood.push_back(pattern(60 << 10, 20 + i));
    ASSERT_EQ(net.send(flood.back(), ctx(10 + i), true, 2), 0);
  }
  ASSERT_TRUE(net.run_until([&] { return net.has(net.b, ctx(100)); }, 2000 * kMs));
  EXPECT_EQ(net.find(net.b, ctx(100))->error, 0);
  EXPECT_EQ(in, big);
  std::vector<std::vector<uint8_t>> got(flood.size(), std::vector<uint8_t>(60 << 10));
  for (size_t i = 0; i < flood.size(); ++i) ASSERT_EQ(net.post(got[i], ctx(200 + i), true, 2), 0);
  ASSERT_TRUE(
      net.run_until([&] { return net.done[net.b].size() == 1 + flood.size(); }, 5000 * kMs));
  for (size_t i = 0; i < flood.size(); ++i) EXPECT_EQ(got[i], flood[i]) << i;
}

TEST(Rendezvous, EveryMessageOnceAndByteExactOverALossyLink) {
  // Expect: 40 messages of 1 KiB to 1 MiB, every other receive posted late,
  // with 5 % drop, 5 % duplication and 10 % reordering: each receive gets its
  // message once and byte-exact, every send completes without error.
  Pair net(8);
  net.link.faults().drop = 0.05;
  net.link.faults().duplicate = 0.05;
  net.link.faults().reorder = 0.10;
  sim::Random sizes_from(8);
  constexpr size_t kCount = 40;
  std::vector<std::vector<uint8_t>> out, in;
  for (size_t i = 0; i < kCount; ++i) {
    out.push_back(pattern(1024 + sizes_from.below(1 << 20), 100 + i));
    in.emplace_back(out.back().size(), 0xEE);
  }
  for (size_t i = 0; i < kCount; i += 2) ASSERT_EQ(net.post(in[i], ctx(1000 + i), true, i), 0);
  for (size_t i = 0; i < kCount; ++i) ASSERT_EQ(net.send(out[i], ctx(1 + i), true, i), 0);
  net.run_for(30 * kMs);
  for (size_t i = 1; i < kCount; i += 2) ASSERT_EQ(net.post(in[i], ctx(1000 + i), true, i), 0);
  ASSERT_TRUE(net.run_until(
      [&] { return net.done[net.a].size() == kCount && net.done[net.b].size() == kCount; },
      20'000 * kMs));
  for (size_t i = 0; i < kCount; ++i) {
    const Completion* got = net.find(net.b, ctx(1000 + i));
    ASSERT_NE(got, nullptr) << i;
    EXPECT_EQ(got->error, 0) << i;
    EXPECT_EQ(in[i], out[i]) << "message " << i;
    EXPECT_EQ(net.find(net.a, ctx(1 + i))->error, 0) << i;
  }
  EXPECT_GT(net.engine(net.a).stats().retransmitted, 0u) << "the link did lose frames";
}

TEST(Rendezvous, ASenderThatRestartedFailsTheLateReceiveInsteadOfHangingIt) {
  // Expect: a announces 1 MiB, then restarts (its buffer is gone).  A receive
  // b posts afterwards completes with an error (FI_EIO) within a few peer
  // timeouts, and the budget is free.
  Pair net(9);
  const auto m = pattern(1 << 20, 11);
  ASSERT_EQ(net.send(m, ctx(1)), 0);
  ASSERT_TRUE(net.run_until([&] { return net.engine(net.b).unexpected_messages() == 1; }));
  net.run_for(5 * kMs);
  net.link.restart(net.a, 0xA1A1A1A1);
  std::vector<uint8_t> in(m.size(), 0xEE);
  ASSERT_EQ(net.post(in, ctx(11)), 0);
  ASSERT_TRUE(net.run_until([&] { return net.has(net.b, ctx(11)); }, 2000 * kMs));
  EXPECT_EQ(net.find(net.b, ctx(11))->error, kErrPeerReset);
  EXPECT_EQ(in[0], 0xEE);
  EXPECT_EQ(net.engine(net.b).unexpected_bytes(), 0u);
}

TEST(Rendezvous, AReceiverThatVanishedFailsTheWaitingSend) {
  // Expect: b takes a's announcement, then falls silent (partitioned) with
  // no receive posted: a's send, waiting for a pull, ends with kErrTimedOut
  // after about a peer timeout, not never.
  Pair net(10);
  const auto m = pattern(1 << 20, 12);
  ASSERT_EQ(net.send(m, ctx(1)), 0);
  ASSERT_TRUE(net.run_until([&] { return net.engine(net.b).unexpected_messages() == 1; }));
  net.run_for(5 * kMs);
  net.link.set_partitioned(net.b, true);
  const uint64_t start = net.link.now();
  ASSERT_TRUE(net.run_until([&] { return net.has(net.a, ctx(1)); }, 2000 * kMs));
  EXPECT_EQ(net.find(net.a, ctx(1))->error, kErrTimedOut);
  EXPECT_LE(net.link.now() - start, 3 * with_rendezvous().peer_timeout_ns);
  EXPECT_EQ(net.engine(net.a).outstanding_sends(), 0u);
}

}  // namespace
}  // namespace ofi_dpdk::proto
