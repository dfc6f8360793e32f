// The transport's bounds against hostile and unlucky peers (lib/proto, issue
// "Hardening"): on connections, reordering buffers, requests, responses and
// zero windows.  Engines run over the in-memory link (lossy_link.h) in
// simulated time.
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
