// Requests in both directions at once, each side the other's target, with
// more answer bytes asked of each than its response budget lets it hold
// unacknowledged (fi_rma_bw -o read at 1 MiB: both processes read 64 MiB
// from each other).  A target whose budget is full must not stop its
// receive stream for the next request: its own answers' acks, and the
// answers it waits for, come on the streams that stopping would block, the
// peer's stream is stopped the same way, and neither side moves again
// (found as fi_rma_bw -o read -S 1048576 failing with peer timeouts).
// Over the in-memory link (lossy_link.h).
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "lib/proto/engine_state.h"
#include "test/proto/engine_pair.h"

namespace ofi_dpdk::proto {
namespace {

using sim::Pair;

constexpr uint64_t kSec = 1'000'000'000;

void* ctx(uintptr_t n) {
  return reinterpret_cast<void*>(n);
}

// Answers every request with `bytes` bytes: byte i is i * 7 + seed.
RequestHandler answering(size_t bytes, uint8_t seed) {
  return [bytes, seed](uint64_t, const uint8_t*, size_t, size_t) {
    Response r;
    r.data.assign(bytes, 0);
    for (size_t i = 0; i < bytes; ++i) r.data[i] = static_cast<uint8_t>(i * 7 + seed);
    return r;
  };
}

int read_request(Engine& from, const PeerAddress& to, std::vector<uint8_t>* result, void* context,
                 uint64_t now) {
  static const char kRead[] = "read";
  iovec iov{const_cast<char*>(kRead), 4};
  SendRequest s;
  s.iov = &iov;
  s.iov_count = 1;
  s.context = context;
  s.copy = true;
  s.request = true;
  s.response_iov[0] = {result->data(), result->size()};
  s.response_iov_count = 1;
  return from.send(to, s, now);
}

bool answered_right(const std::vector<uint8_t>& got, uint8_t seed) {
  for (size_t i = 0; i < got.size(); ++i)
    if (got[i] != static_cast<uint8_t>(i * 7 + seed)) return false;
  return true;
}

void cross_reads(size_t requests, size_t answer_bytes, const TransportConfig& config) {
  Pair p(91, config, config);
  p.engine(p.a).set_request_handler(answering(answer_bytes, 3));
  p.engine(p.b).set_request_handler(answering(answer_bytes, 5));
  ASSERT_TRUE(p.warm_up());
  std::vector<std::vector<uint8_t>> at_a(requests, std::vector<uint8_t>(answer_bytes)),
      at_b(requests, std::vector<uint8_t>(answer_bytes));
  for (uintptr_t i = 0; i < requests; ++i) {
    ASSERT_EQ(read_request(p.engine(p.a), p.link.address(p.b), &at_a[i], ctx(i), p.link.now()), 0);
    ASSERT_EQ(read_request(p.engine(p.b), p.link.address(p.a), &at_b[i], ctx(i), p.link.now()), 0);
  }
  ASSERT_TRUE(p.wait(p.a, requests, 10 * kSec)) << p.done[p.a].size() << " of A's answered";
  ASSERT_TRUE(p.wait(p.b, requests, 10 * kSec)) << p.done[p.b].size() << " of B's answered";
  for (size_t i = 0; i < requests; ++i) {
    EXPECT_EQ(p.done[p.a][i].error, 0) << i;
    EXPECT_EQ(p.done[p.b][i].error, 0) << i;
    EXPECT_TRUE(answered_right(at_a[i], 5)) << "A's request " << i;
    EXPECT_TRUE(answered_right(at_b[i], 3)) << "B's request " << i;
  }
  EXPECT_EQ(p.engine(p.a).stats().timeouts, 0u);
  EXPECT_EQ(p.engine(p.b).stats().timeouts, 0u);
  EXPECT_GT(p.engine(p.a).stats().requests_deferred + p.engine(p.b).stats().requests_deferred, 0u)
      << "the budget was never full: the test shows nothing";
}

TEST(CrossedRequests, ReadsPastTheByteBudgetBothWaysAllComplete) {
  // Expect: 64 requests each way, each answered with 16 KiB, against a
  // 64 KiB budget per connection: every answer arrives, right, and no
  // side times out.
  TransportConfig config;
  config.connection_response_bytes = 64 << 10;
  cross_reads(64, 16 << 10, config);
}

TEST(CrossedRequests, RequestsPastTheCountOfPendingAnswersBothWaysAllComplete) {
  // Expect: 200 small requests each way against 16 pending answers per
  // connection: all answered, no timeout.
  TransportConfig config;
  config.max_pending_responses = 16;
  cross_reads(200, 64, config);
}

TEST(CrossedRequests, AMessageAfterDeferredRequestsRunsAfterThem) {
  // Expect: with B's answers past its budget, a message A sends after its
  // 64 requests reaches B's application only once B ran all 64 (requests
  // and messages run in the order sent: doc/rma.md, FI_FENCE), though some
  // of them were deferred.
  TransportConfig config;
  config.connection_response_bytes = 64 << 10;
  Pair p(92, config, config);
  p.engine(p.a).set_request_handler(answering(16 << 10, 3));
  size_t ran_at_b = 0;
  const RequestHandler b_answers = answering(16 << 10, 5);
  p.engine(p.b).set_request_handler([&](uint64_t peer, const uint8_t* r, size_t n, size_t rest) {
    ++ran_at_b;
    return b_answers(peer, r, n, rest);
  });
  ASSERT_TRUE(p.warm_up());
  constexpr size_t kRequests = 64;
  std::vector<std::vector<uint8_t>> at_a(kRequests, std::vector<uint8_t>(16 << 10)),
      at_b(kRequests, std::vector<uint8_t>(16 << 10));
  std::vector<uint8_t> note(32, 0x4e), note_in(32);
  ASSERT_EQ(p.post(p.b, &note_in, ctx(999)), 0);
  for (uintptr_t i = 0; i < kRequests; ++i) {
    ASSERT_EQ(read_request(p.engine(p.a), p.link.address(p.b), &at_a[i], ctx(i), p.link.now()), 0);
    ASSERT_EQ(read_request(p.engine(p.b), p.link.address(p.a), &at_b[i], ctx(i), p.link.now()), 0);
  }
  ASSERT_EQ(p.send(p.a, p.b, note, ctx(1000)), 0);
  size_t ran_when_delivered = 0;
  bool delivered = false;
  for (uint64_t end = p.link.now() + 10 * kSec; !delivered && p.link.now() < end;) {
    p.link.step();
    for (const Completion& done : p.engine(p.b).completions())
      if (done.kind == Completion::Kind::kRecv && done.context == ctx(999)) {
        delivered = true;
        ran_when_delivered = ran_at_b;
      }
    p.collect();
  }
  ASSERT_TRUE(delivered);
  EXPECT_EQ(ran_when_delivered, kRequests);
  EXPECT_GT(p.engine(p.b).stats().requests_deferred, 0u)
      << "nothing was deferred: the test shows nothing";
}

// Each side sends `kRequests` small requests, then a message, to the other,
// against 16 pending answers per connection; the message wants the
// receiver's delivery notice when `delivery_complete`.
void messages_after_deferred_requests_both_ways(bool delivery_complete) {
  TransportConfig config;
  config.max_pending_responses = 16;
  Pair p(93, config, config);
  size_t ran[2] = {0, 0};
  for (const size_t side : {p.a, p.b}) {
    const RequestHandler answer = answering(0, static_cast<uint8_t>(side));
    p.engine(side).set_request_handler(
        [&ran, side, answer](uint64_t peer, const uint8_t* r, size_t n, size_t rest) {
          ++ran[side];
          return answer(peer, r, n, rest);
        });
  }
  ASSERT_TRUE(p.warm_up());
  constexpr size_t kRequests = 200;
  std::vector<std::vector<uint8_t>> at_a(kRequests, std::vector<uint8_t>(8)),
      at_b(kRequests, std::vector<uint8_t>(8));
  std::vector<uint8_t> note(4, 0x4e), in_a(4), in_b(4);
  ASSERT_EQ(p.post(p.a, &in_a, ctx(999)), 0);
  ASSERT_EQ(p.post(p.b, &in_b, ctx(999)), 0);
  for (uintptr_t i = 0; i < kRequests; ++i) {
    ASSERT_EQ(read_request(p.engine(p.a), p.link.address(p.b), &at_a[i], ctx(i), p.link.now()), 0);
    ASSERT_EQ(read_request(p.engine(p.b), p.link.address(p.a), &at_b[i], ctx(i), p.link.now()), 0);
  }
  ASSERT_EQ(p.send(p.a, p.b, note, ctx(1000), delivery_complete), 0);
  ASSERT_EQ(p.send(p.b, p.a, note, ctx(1000), delivery_complete), 0);
  // Each side: its requests' answers, its send, the peer's message.
  size_t ran_when_delivered[2] = {0, 0};
  size_t seen[2] = {0, 0};
  for (uint64_t end = p.link.now() + 10 * kSec;
       (seen[p.a] < kRequests + 2 || seen[p.b] < kRequests + 2) && p.link.now() < end;) {
    p.link.step();
    for (const size_t side : {p.a, p.b}) {
      for (const Completion& done : p.engine(side).completions()) {
        EXPECT_EQ(done.error, 0);
        ++seen[side];
        if (done.kind == Completion::Kind::kRecv) ran_when_delivered[side] = ran[side];
      }
    }
    p.collect();
  }
  EXPECT_EQ(seen[p.a], kRequests + 2);
  EXPECT_EQ(seen[p.b], kRequests + 2);
  EXPECT_EQ(ran_when_delivered[p.a], kRequests);
  EXPECT_EQ(ran_when_delivered[p.b], kRequests);
  EXPECT_GT(p.engine(p.a).stats().requests_deferred + p.engine(p.b).stats().requests_deferred, 0u)
      << "nothing was deferred: the test shows nothing";
}

TEST(CrossedRequests, MessagesAfterDeferredRequestsBothWaysAllComplete) {
  // Expect: every request is answered, both sends complete, and each side's
  // message reaches its application only after that side ran all the peer's
  // requests, though it was taken while some waited, deferred.  (Found as
  // fabtests' fi_rma_bw -o write at 64 bytes hanging in -t standard: a
  // message that waited behind deferred requests stopped its stream, and
  // with it the answers behind it that would free the peer's budget; the
  // peer's stream was stopped the same way.)
  messages_after_deferred_requests_both_ways(false);
}

TEST(CrossedRequests, DeliveryCompleteMessagesAfterDeferredRequestsBothWaysAllComplete) {
  // Expect: the same with FI_DELIVERY_COMPLETE sends, whose receivers owe a
  // delivery notice (an answer of their own): all complete, in order.
  messages_after_deferred_requests_both_ways(true);
}
}  // namespace
}  // namespace ofi_dpdk::proto
