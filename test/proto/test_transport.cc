// The reliable transport (lib/proto Engine) driven over an in-memory lossy
// link (lossy_link.h) in simulated time: delivery exactly once, in order and
// byte-exact under loss, reordering, duplication and corruption; flow
// control; unexpected messages and matching; truncation; dead and restarted
// peers; cancellation; hostile input; congestion control; delayed acks.
// Each test says what it expects in `// Expect:` comments.
#include <gtest/gtest.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <functional>
#include <map>
#include <ostream>
#include <memory>
#include <string>
#include <vector>

#include "lib/proto/frame_codec.h"
#include "lib/proto/seq.h"
#include "lib/proto/engine_state.h"
#include "test/proto/lossy_link.h"

namespace ofi_dpdk::proto {
namespace {

using sim::LossyLink;
using sim::Random;

constexpr uint8_t kMacA[6] = {0x02, 0x00, 0x00, 0x00, 0x00, 0x0A};
constexpr uint8_t kMacB[6] = {0x02, 0x00, 0x00, 0x00, 0x00, 0x0B};
constexpr uint8_t kMacC[6] = {0x02, 0x00, 0x00, 0x00, 0x00, 0x0C};
constexpr uint8_t kMacStranger[6] = {0x02, 0x00, 0x00, 0x00, 0x00, 0x5E};

constexpr uint64_t kUs = 1'000;
constexpr uint64_t kMs = 1'000'000;
constexpr uint64_t kSec = 1'000'000'000;

// ---------------------------------------------------------------------------
// Payload patterns: byte j of message `seed` is a hash of (seed, j / 8), so a
// misplaced, repeated or stale segment shows up as a mismatch.

uint64_t mix64(uint64_t x) {
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

uint64_t pattern_word(uint64_t seed, size_t word) {
  return mix64(seed * 0x9E3779B97F4A7C15ull + word + 1);
}

void fill_pattern(uint8_t* p, size_t n, uint64_t seed) {
  size_t j = 0;
  for (; j + 8 <= n; j += 8) {
    const uint64_t w = pattern_word(seed, j / 8);
    std::memcpy(p + j, &w, 8);
  }
  if (j < n) {
    const uint64_t w = pattern_word(seed, j / 8);
    std::memcpy(p + j, &w, n - j);
  }
}

// Returns n when p holds the pattern, else the first differing offset.
size_t pattern_mismatch(const uint8_t* p, size_t n, uint64_t seed) {
  size_t j = 0;
  for (; j + 8 <= n; j += 8) {
    const uint64_t w = pattern_word(seed, j / 8);
    if (std::memcmp(p + j, &w, 8) != 0) {
      for (size_t k = 0; k < 8; ++k)
        if (p[j + k] != reinterpret_cast<const uint8_t*>(&w)[k]) return j + k;
    }
  }
  if (j < n) {
    const uint64_t w = pattern_word(seed, j / 8);
    for (size_t k = 0; j + k < n; ++k)
      if (p[j + k] != reinterpret_cast<const uint8_t*>(&w)[k]) return j + k;
  }
  return n;
}

std::vector<uint8_t> pattern(size_t n, uint64_t seed) {
  std::vector<uint8_t> v(n);
  fill_pattern(v.data(), n, seed);
  return v;
}

// ---------------------------------------------------------------------------
// Flows: a stream of messages from one engine to another, with the
// application's side played by the harness (sending with a bounded number
// outstanding, posting receives ahead, checking every completion).

struct FlowSpec {
  size_t src = 0;
  size_t dst = 1;
  std::vector<size_t> sizes;
  size_t send_window = 32;  // sends the application keeps outstanding
  size_t post_ahead = 64;   // receives posted ahead of arrivals
  bool post = true;         // false: the receiver posts nothing (yet)
  bool directed = false;    // source-directed receives
  bool with_session = false;
  bool tagged = false;
  uint64_t tag = 0;
  size_t inject_every = 0;  // every n-th send is an inject (copy = true)
  uint64_t seed = 1;
};

struct Flow {
  FlowSpec spec;
  size_t id = 0;
  size_t sent = 0, send_done = 0, send_failed = 0, posted = 0, received = 0;
  int last_send_error = 0, last_send_prov_errno = 0;
  size_t problems = 0;
  std::string first_problem;
  std::map<size_t, std::unique_ptr<uint8_t[]>> send_bufs, recv_bufs;
  std::vector<uint64_t> received_at;  // simulated time of each arrival

  uint64_t seed_of(size_t i) const { return spec.seed * 1'000'003 + i; }
  bool done() const {
    return send_done == spec.sizes.size() && received == spec.sizes.size();
  }
  void problem(const std::string& text) {
    if (problems++ == 0) first_problem = text;
  }
};

// Contexts of flow operations carry bit 63 (never set in a user-space
// pointer), the flow, the direction and the message index.
constexpr uint64_t kFlowBit = uint64_t{1} << 63;

void* flow_context(size_t flow, bool recv, size_t index) {
  return reinterpret_cast<void*>(kFlowBit | uint64_t{flow} << 40 | uint64_t{recv} << 39 | index);
}

void* ctx(uintptr_t n) { return reinterpret_cast<void*>(n); }

class Net {
 public:
  explicit Net(uint64_t seed, uint64_t step_ns = 5 * kUs) : link(seed, step_ns) {}

  size_t add(const TransportConfig& config, const uint8_t mac[6], uint16_t queue,
             uint32_t session) {
    const size_t i = link.add(config, mac, queue, session);
    other.resize(link.size());
    return i;
  }
  Engine& engine(size_t i) { return link.engine(i); }

  Flow& add_flow(const FlowSpec& spec) {
    flows.push_back(std::make_unique<Flow>());
    flows.back()->spec = spec;
    flows.back()->id = flows.size() - 1;
    return *flows.back();
  }

  // The application's turn: post receives, issue sends.
  void feed() {
    for (auto& f : flows) {
      feed_receives(*f);
      feed_sends(*f);
    }
  }

  // Takes every engine's completions: flow ones are checked and counted,
  // the rest are kept in other[engine] for the test to look at.
  void drain() {
    for (size_t e = 0; e < link.size(); ++e) {
      std::vector<Completion> batch;
      batch.swap(engine(e).completions());
      for (const Completion& c : batch) {
        const auto raw = reinterpret_cast<uint64_t>(c.context);
        const size_t flow = (raw >> 40) & 0x7FFFFF;
        if (!(raw & kFlowBit) || flow >= flows.size()) {
          other[e].push_back(c);
          continue;
        }
        const size_t index = raw & ((uint64_t{1} << 39) - 1);
        if (raw >> 39 & 1) {
          on_recv(*flows[flow], e, c, index);
        } else {
          on_send(*flows[flow], e, c, index);
        }
      }
    }
  }

  void step() {
    feed();
    link.step();
    drain();
  }

  // Steps until done() holds; false when max_sim_ns of simulated time or
  // max_wall_s of real time passed first.
  bool run_until(const std::function<bool()>& done, uint64_t max_sim_ns,
                 double max_wall_s = 30.0) {
    const uint64_t start = link.now();
    const auto wall_start = std::chrono::steady_clock::now();
    drain();
    for (uint64_t n = 0;; ++n) {
      if (done()) return true;
      if (link.now() - start >= max_sim_ns) return false;
      if ((n & 255) == 0 &&
          std::chrono::duration<double>(std::chrono::steady_clock::now() - wall_start).count() >
              max_wall_s)
        return false;
      step();
    }
  }
  void run_for(uint64_t sim_ns) {
    const uint64_t end = link.now() + sim_ns;
    while (link.now() < end) step();
  }
  bool flows_done() const {
    for (const auto& f : flows)
      if (!f->done()) return false;
    return true;
  }
  std::vector<Completion> take(size_t e) {
    drain();
    std::vector<Completion> out;
    out.swap(other[e]);
    return out;
  }

  LossyLink link;
  std::vector<std::unique_ptr<Flow>> flows;
  std::vector<std::vector<Completion>> other;

 private:
  void feed_receives(Flow& f) {
    const size_t n = f.spec.sizes.size();
    Engine& rx = engine(f.spec.dst);
    while (f.spec.post && f.posted < n && f.posted - f.received < f.spec.post_ahead) {
      const size_t i = f.posted;
      const size_t len = f.spec.sizes[i];
      auto& buf = f.recv_bufs[i];
      buf = std::make_unique<uint8_t[]>(std::max<size_t>(len, 1));
      RecvRequest r;
      r.iov[0] = {buf.get(), len};
      r.iov_count = 1;
      r.context = flow_context(f.id, true, i);
      r.tagged = f.spec.tagged;
      r.tag = f.spec.tag;
      r.any_source = !f.spec.directed;
      r.source_key = link.key(f.spec.src);
      const int rc = rx.post_recv(r, link.now());
      if (rc != 0) {
        f.recv_bufs.erase(i);
        if (rc != -EAGAIN) f.problem("post_recv returned " + std::to_string(rc));
        return;
      }
      ++f.posted;
    }
  }

  void feed_sends(Flow& f) {
    const size_t n = f.spec.sizes.size();
    Engine& tx = engine(f.spec.src);
    while (f.sent < n && f.sent - f.send_done < f.spec.send_window) {
      const size_t i = f.sent;
      const size_t len = f.spec.sizes[i];
      auto buf = std::make_unique<uint8_t[]>(std::max<size_t>(len, 1));
      fill_pattern(buf.get(), len, f.seed_of(i));
      // Every third message is gathered from two pieces.
      iovec iov[2] = {{buf.get(), len}, {nullptr, 0}};
      size_t iov_count = 1;
      if (len >= 2 && i % 3 == 1) {
        iov[0].iov_len = len / 3;
        iov[1] = {buf.get() + len / 3, len - len / 3};
        iov_count = 2;
      }
      SendRequest s;
      s.iov = iov;
      s.iov_count = iov_count;
      s.context = flow_context(f.id, false, i);
      s.tagged = f.spec.tagged;
      s.tag = f.spec.tag;
      s.has_data = i % 5 == 0;
      s.cq_data = f.seed_of(i);
      s.copy = f.spec.inject_every != 0 && i % f.spec.inject_every == 0;
      const int rc = tx.send(link.address(f.spec.dst, f.spec.with_session), s, link.now());
      if (rc == -EAGAIN) return;
      if (rc != 0) {
        f.problem("send returned " + std::to_string(rc));
        return;
      }
      if (s.copy) {
        std::memset(buf.get(), 0xEE, std::max<size_t>(len, 1));  // reused at once
      } else {
        f.send_bufs[i] = std::move(buf);
      }
      ++f.sent;
    }
  }

  void on_send(Flow& f, size_t e, const Completion& c, size_t index) {
    if (c.kind != Completion::Kind::kSend || e != f.spec.src)
      f.problem("send completion of the wrong kind or engine");
    if (index != f.send_done)
      f.problem("send " + std::to_string(index) + " completed before " +
                std::to_string(f.send_done));
    if (c.error != 0) {
      ++f.send_failed;
      f.last_send_error = c.error;
      f.last_send_prov_errno = c.prov_errno;
    } else if (index < f.spec.sizes.size() && c.len != f.spec.sizes[index]) {
      f.problem("send " + std::to_string(index) + " completed with len " + std::to_string(c.len));
    }
    auto it = f.send_bufs.find(index);
    if (it != f.send_bufs.end()) {
      // The application may reuse the buffer now: scribble on it.
      std::memset(it->second.get(), 0xDD, std::max<size_t>(f.spec.sizes[index], 1));
      f.send_bufs.erase(it);
    }
    ++f.send_done;
  }

  void on_recv(Flow& f, size_t e, const Completion& c, size_t index) {
    const std::string who = "message " + std::to_string(index) + ": ";
    if (c.kind != Completion::Kind::kRecv || e != f.spec.dst)
      f.problem(who + "receive completion of the wrong kind or engine");
    if (index != f.received)
      f.problem(who + "arrived as number " + std::to_string(f.received));
    const size_t len = index < f.spec.sizes.size() ? f.spec.sizes[index] : 0;
    if (c.error != 0) {
      f.problem(who + "receive error " + std::to_string(c.error));
    } else if (c.len != len) {
      f.problem(who + "len " + std::to_string(c.len) + " instead of " + std::to_string(len));
    } else if (c.source_key != link.key(f.spec.src)) {
      f.problem(who + "wrong source_key");
    } else if (c.tagged != f.spec.tagged || (f.spec.tagged && c.tag != f.spec.tag)) {
      f.problem(who + "wrong tag");
    } else if (c.has_data != (index % 5 == 0) || (c.has_data && c.cq_data != f.seed_of(index))) {
      f.problem(who + "wrong remote CQ data");
    } else {
      auto it = f.recv_bufs.find(index);
      if (it == f.recv_bufs.end()) {
        f.problem(who + "no such receive");
      } else {
        const size_t bad = pattern_mismatch(it->second.get(), len, f.seed_of(index));
        if (bad != len) f.problem(who + "differs at byte " + std::to_string(bad));
      }
    }
    f.recv_bufs.erase(index);
    f.received_at.push_back(link.now());
    ++f.received;
  }
};

// Mixed sizes for the lossless stream: 0 B, 1 B, one full segment, one byte
// more, 64 KiB and 1 MiB.  1 MiB is every 48th message (so a run moves
// ~80 MB, not 370 MB: the checksum is bit-serial without SSE4.2).
std::vector<size_t> lossless_sizes(size_t n) {
  static constexpr size_t kSizes[] = {0, 1, 1444, 1445, 64 << 10, 1 << 20};
  std::vector<size_t> sizes(n);
  for (size_t i = 0; i < n; ++i) {
    sizes[i] = kSizes[i % 6];
    if (sizes[i] == (1u << 20) && i % 48 != 5) sizes[i] = 64 << 10;
  }
  return sizes;
}

// 1 B .. max_bytes, log-uniform, with the edges (1 B, one segment, one byte
// more, the maximum) in every hundred.
std::vector<size_t> random_sizes(size_t n, size_t max_bytes, uint64_t seed) {
  Random rng(seed);
  std::vector<size_t> sizes(n);
  const double top = std::log(static_cast<double>(max_bytes));
  for (size_t i = 0; i < n; ++i) {
    sizes[i] = std::clamp<size_t>(static_cast<size_t>(std::exp(rng.unit() * top)), 1, max_bytes);
    switch (i % 100) {
      case 0: sizes[i] = 1; break;
      case 1: sizes[i] = 1444; break;
      case 2: sizes[i] = 1445; break;
      case 3: sizes[i] = max_bytes; break;
      default: break;
    }
  }
  return sizes;
}

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// ---------------------------------------------------------------------------
// Direct helpers for tests that drive single operations.

int send_bytes(Net& net, size_t from, size_t to, const std::vector<uint8_t>& bytes,
               void* context, bool tagged = false, uint64_t tag = 0, bool with_session = false) {
  iovec iov{const_cast<uint8_t*>(bytes.data()), bytes.size()};
  SendRequest s;
  s.iov = &iov;
  s.iov_count = 1;
  s.context = context;
  s.tagged = tagged;
  s.tag = tag;
  return net.engine(from).send(net.link.address(to, with_session), s, net.link.now());
}

int post_bytes(Net& net, size_t at, std::vector<uint8_t>& buf, void* context, bool tagged = false,
               uint64_t tag = 0, uint64_t ignore = 0, const uint64_t* source_key = nullptr) {
  RecvRequest r;
  r.iov[0] = {buf.data(), buf.size()};
  r.iov_count = 1;
  r.context = context;
  r.tagged = tagged;
  r.tag = tag;
  r.ignore = ignore;
  if (source_key != nullptr) {
    r.any_source = false;
    r.source_key = *source_key;
  }
  return net.engine(at).post_recv(r, net.link.now());
}

// Steps until engine e has produced `count` completions not owned by a flow
// (kept in net.other[e]); false on timeout.
bool wait_completions(Net& net, size_t e, size_t count, uint64_t max_sim_ns) {
  return net.run_until([&] { return net.other[e].size() >= count; }, max_sim_ns);
}

// Moves `count` messages A->B (direct receives) so both sides know each
// other's session and the RTT is measured.
void warm_up(Net& net, size_t a, size_t b, size_t count) {
  std::vector<std::vector<uint8_t>> in(count, std::vector<uint8_t>(64)), out;
  for (size_t i = 0; i < count; ++i) ASSERT_EQ(post_bytes(net, b, in[i], ctx(900 + i)), 0);
  for (size_t i = 0; i < count; ++i) {
    out.push_back(pattern(64, 900 + i));  // zero-copy: lives until the send completes
    ASSERT_EQ(send_bytes(net, a, b, out[i], ctx(800 + i)), 0);
  }
  ASSERT_TRUE(net.run_until([&] { return net.other[a].size() >= count && net.other[b].size() >= count; },
                            100 * kMs));
  for (const Completion& c : net.take(a)) ASSERT_EQ(c.error, 0);
  for (const Completion& c : net.take(b)) ASSERT_EQ(c.error, 0);
}

// ===========================================================================
// 1. Lossless stream.

TEST(TransportLossless, MixedSizesArriveOnceInOrderByteExact) {
  // Expect: 2000 messages (0 B, 1 B, 1444, 1445, 64 KiB, 1 MiB) over a
  // perfect link, receives posted ahead: each delivered once, in send order,
  // byte-exact; a completion for every send; nothing retransmitted.
  Net net(1);
  const size_t a = net.add(TransportConfig{}, kMacA, 0, 0xA0000001);
  const size_t b = net.add(TransportConfig{}, kMacB, 0, 0xB0000001);
  FlowSpec spec;
  spec.src = a;
  spec.dst = b;
  spec.sizes = lossless_sizes(2000);
  spec.inject_every = 7;
  Flow& f = net.add_flow(spec);

  ASSERT_TRUE(net.run_until([&] { return f.done(); }, 10 * kSec))
      << "sent " << f.sent << " done " << f.send_done << " received " << f.received;
  EXPECT_EQ(f.problems, 0u) << f.first_problem;
  EXPECT_EQ(f.send_done, 2000u);
  EXPECT_EQ(f.send_failed, 0u);
  EXPECT_EQ(f.received, 2000u);
  EXPECT_EQ(net.engine(b).stats().messages_received, 2000u);
  EXPECT_EQ(net.engine(a).stats().messages_sent, 2000u);
  EXPECT_EQ(net.engine(a).stats().retransmitted, 0u);
  EXPECT_EQ(net.engine(b).stats().duplicates, 0u);
  EXPECT_EQ(net.engine(a).outstanding_sends(), 0u);
  EXPECT_TRUE(net.other[a].empty());
  EXPECT_TRUE(net.other[b].empty());
}

// ===========================================================================
// 2. Under loss, reordering, duplication and corruption.

struct LossCase {
  double drop;
  uint64_t expected_sim_ns;  // what loss recovery should manage (about 5x slack)
  const char* name;
};

void PrintTo(const LossCase& c, std::ostream* os) { *os << c.name; }

class TransportUnderLoss : public ::testing::TestWithParam<LossCase> {};

TEST_P(TransportUnderLoss, EveryMessageExactlyOnceInOrder) {
  // Expect: with drop p, 5 % reordering, 1 % duplication and 1 % corruption,
  // 2000 messages of 1 B..256 KiB each arrive exactly once, in order,
  // byte-exact; every send completes with error 0; retransmissions happened;
  // segments ahead of gaps were held in their frames (FrameKeeper), and none
  // is held once all arrived; all within 60 simulated seconds (hard bound) and 20 real seconds, and in
  // fact within the case's expected simulated time (losses are repaired by
  // fast retransmit and probes, not by waiting for 2 ms RTOs).
  const auto wall = std::chrono::steady_clock::now();
  Net net(100 + static_cast<uint64_t>(GetParam().drop * 1000));
  const size_t a = net.add(TransportConfig{}, kMacA, 0, 0xA0000002);
  const size_t b = net.add(TransportConfig{}, kMacB, 0, 0xB0000002);
  auto& faults = net.link.faults();
  faults.drop = GetParam().drop;
  faults.reorder = 0.05;
  faults.duplicate = 0.01;
  faults.corrupt = 0.01;
  FlowSpec spec;
  spec.src = a;
  spec.dst = b;
  spec.sizes = random_sizes(2000, 256 << 10, 7);
  spec.inject_every = 11;
  Flow& f = net.add_flow(spec);

  const uint64_t start = net.link.now();
  const bool finished = net.run_until([&] { return f.done(); }, 60 * kSec, 20.0);
  ASSERT_TRUE(finished) << "sent " << f.sent << " done " << f.send_done << " received "
                        << f.received << " after " << (net.link.now() - start) / kMs
                        << " ms simulated, " << seconds_since(wall) << " s real";
  const TransportStats& tx = net.engine(a).stats();
  const TransportStats& rx = net.engine(b).stats();
  EXPECT_EQ(f.problems, 0u) << f.first_problem;
  EXPECT_EQ(f.send_done, 2000u);
  EXPECT_EQ(f.send_failed, 0u) << "last error " << f.last_send_error;
  EXPECT_EQ(f.received, 2000u);
  EXPECT_EQ(rx.messages_received, 2000u);
  EXPECT_GT(tx.retransmitted, 0u);
  EXPECT_GT(net.link.counters().decode_failed, 0u);  // corrupted frames were refused
  EXPECT_GT(net.link.frames_lent(), 0u);
  EXPECT_EQ(net.link.frames_kept(), 0u);
  EXPECT_LT(seconds_since(wall), 20.0);
  EXPECT_LT(net.link.now() - start, GetParam().expected_sim_ns);
  ::testing::Test::RecordProperty("simulated_ms", std::to_string((net.link.now() - start) / kMs));
  std::printf("[ info     ] drop %.0f%%: %.1f ms simulated, %.2f s real, %lu frames, %lu "
              "retransmitted (%lu fast, %lu by probe or RTO)\n",
              GetParam().drop * 100, (net.link.now() - start) / 1e6, seconds_since(wall),
              static_cast<unsigned long>(tx.frames_sent),
              static_cast<unsigned long>(tx.retransmitted),
              static_cast<unsigned long>(tx.fast_retransmits),
              static_cast<unsigned long>(tx.retransmitted - tx.fast_retransmits));
}

INSTANTIATE_TEST_SUITE_P(Drop, TransportUnderLoss,
                         ::testing::Values(LossCase{0.01, 1 * kSec, "1pct"},
                                           LossCase{0.05, 1500 * kMs, "5pct"},
                                           LossCase{0.20, 8 * kSec, "20pct"}),
                         [](const ::testing::TestParamInfo<LossCase>& info) {
                           return std::string(info.param.name);
                         });

// ===========================================================================
// 3. Both directions at once.

TEST(TransportLossy, BidirectionalTraffic) {
  // Expect: A->B and B->A streams running at the same time over a link that
  // drops 5 % both complete, exactly once, in order, byte-exact.
  Net net(3);
  const size_t a = net.add(TransportConfig{}, kMacA, 0, 0xA0000003);
  const size_t b = net.add(TransportConfig{}, kMacB, 0, 0xB0000003);
  net.link.faults().drop = 0.05;
  FlowSpec ab;
  ab.src = a;
  ab.dst = b;
  ab.sizes = random_sizes(1000, 64 << 10, 31);
  ab.seed = 31;
  FlowSpec ba = ab;
  ba.src = b;
  ba.dst = a;
  ba.sizes = random_sizes(1000, 64 << 10, 32);
  ba.seed = 32;
  Flow& f1 = net.add_flow(ab);
  Flow& f2 = net.add_flow(ba);

  ASSERT_TRUE(net.run_until([&] { return net.flows_done(); }, 30 * kSec))
      << f1.received << " / " << f2.received;
  for (Flow* f : {&f1, &f2}) {
    EXPECT_EQ(f->problems, 0u) << f->first_problem;
    EXPECT_EQ(f->send_failed, 0u);
    EXPECT_EQ(f->received, 1000u);
  }
  EXPECT_EQ(net.engine(a).stats().messages_received, 1000u);
  EXPECT_EQ(net.engine(b).stats().messages_received, 1000u);
  EXPECT_GT(net.engine(a).stats().retransmitted, 0u);
  EXPECT_GT(net.engine(b).stats().retransmitted, 0u);
}

// ===========================================================================
// 4. One very large message.

TEST(TransportLossy, SixteenMebibyteMessage) {
  // Expect: one 16 MiB message over 5 % loss arrives whole and byte-exact,
  // and its send completes with error 0.
  Net net(4);
  const size_t a = net.add(TransportConfig{}, kMacA, 0, 0xA0000004);
  const size_t b = net.add(TransportConfig{}, kMacB, 0, 0xB0000004);
  net.link.faults().drop = 0.05;
  FlowSpec spec;
  spec.src = a;
  spec.dst = b;
  spec.sizes = {16u << 20};
  Flow& f = net.add_flow(spec);
  ASSERT_TRUE(net.run_until([&] { return f.done(); }, 30 * kSec)) << f.received;
  EXPECT_EQ(f.problems, 0u) << f.first_problem;
  EXPECT_EQ(f.send_failed, 0u);
  EXPECT_EQ(net.engine(b).stats().messages_received, 1u);
  EXPECT_GT(net.engine(a).stats().retransmitted, 0u);
}

// ===========================================================================
// 5. Duplication only.

TEST(TransportDuplication, EveryFrameTwiceDeliversOnce) {
  // Expect: every frame delivered twice, yet each message exactly once, in
  // order, byte-exact; the receiver counted the duplicates.
  Net net(5);
  const size_t a = net.add(TransportConfig{}, kMacA, 0, 0xA0000005);
  const size_t b = net.add(TransportConfig{}, kMacB, 0, 0xB0000005);
  net.link.faults().duplicate = 1.0;
  FlowSpec spec;
  spec.src = a;
  spec.dst = b;
  spec.sizes = random_sizes(500, 64 << 10, 5);
  Flow& f = net.add_flow(spec);
  ASSERT_TRUE(net.run_until([&] { return f.done(); }, 10 * kSec));
  EXPECT_EQ(f.problems, 0u) << f.first_problem;
  EXPECT_EQ(f.send_failed, 0u);
  EXPECT_EQ(f.received, 500u);
  EXPECT_EQ(net.engine(b).stats().messages_received, 500u);
  EXPECT_GT(net.engine(b).stats().duplicates, 0u);
  // Run on: no late duplicate turns into a message.
  net.run_for(50 * kMs);
  EXPECT_EQ(net.engine(b).stats().messages_received, 500u);
  EXPECT_TRUE(net.other[b].empty());
}

// ===========================================================================
// 6. Unexpected messages and matching.

TEST(TransportMatching, UnexpectedMessagesCompleteLaterReceivesInOrder) {
  // Expect: sends issued before any receive is posted are buffered (they fit
  // in unexpected_bytes) and their sends complete; receives posted later
  // complete at once, in order, with the right bytes.
  Net net(6);
  const size_t a = net.add(TransportConfig{}, kMacA, 0, 0xA0000006);
  TransportConfig rx_config;
  rx_config.unexpected_bytes = 256 << 10;
  const size_t b = net.add(rx_config, kMacB, 0, 0xB0000006);
  const std::vector<size_t> sizes = {0, 1, 100, 1445, 5000, 70000};
  std::vector<std::vector<uint8_t>> out;
  for (size_t i = 0; i < sizes.size(); ++i) {
    out.push_back(pattern(sizes[i], 60 + i));
    ASSERT_EQ(send_bytes(net, a, b, out[i], ctx(100 + i)), 0);
  }
  ASSERT_TRUE(wait_completions(net, a, sizes.size(), 100 * kMs));
  for (const Completion& c : net.take(a)) EXPECT_EQ(c.error, 0);
  EXPECT_TRUE(net.take(b).empty());
  EXPECT_EQ(net.engine(b).posted_recvs(), 0u);

  std::vector<std::vector<uint8_t>> in;
  for (size_t i = 0; i < sizes.size(); ++i) in.emplace_back(sizes[i] + 16, 0xCC);
  for (size_t i = 0; i < sizes.size(); ++i) {
    ASSERT_EQ(post_bytes(net, b, in[i], ctx(200 + i)), 0);
    auto done = net.take(b);
    ASSERT_EQ(done.size(), 1u) << "receive " << i << " did not complete at once";
    EXPECT_EQ(done[0].context, ctx(200 + i));
    EXPECT_EQ(done[0].error, 0);
    EXPECT_EQ(done[0].len, sizes[i]);
    EXPECT_EQ(done[0].source_key, net.link.key(a));
    EXPECT_TRUE(std::equal(out[i].begin(), out[i].end(), in[i].begin())) << "message " << i;
    EXPECT_EQ(in[i][sizes[i]], 0xCC);  // nothing past the message
  }
  EXPECT_EQ(net.engine(b).posted_recvs(), 0u);
}

TEST(TransportMatching, ReceivePostedWhileUnexpectedMessageStillArriving) {
  // Expect: a receive posted while a large unexpected message is half-way in
  // claims it and completes when it is whole, byte-exact.
  Net net(61);
  const size_t a = net.add(TransportConfig{}, kMacA, 0, 0xA0000061);
  const size_t b = net.add(TransportConfig{}, kMacB, 0, 0xB0000061);
  const auto out = pattern(1 << 20, 61);
  ASSERT_EQ(send_bytes(net, a, b, out, ctx(1)), 0);
  net.run_until([&] { return net.engine(b).stats().frames_received >= 20; }, 10 * kMs);
  ASSERT_EQ(net.engine(b).stats().messages_received, 0u);
  std::vector<uint8_t> in(1 << 20);
  ASSERT_EQ(post_bytes(net, b, in, ctx(2)), 0);
  EXPECT_TRUE(net.take(b).empty());  // not whole yet
  ASSERT_TRUE(wait_completions(net, b, 1, 100 * kMs));
  auto done = net.take(b);
  EXPECT_EQ(done[0].context, ctx(2));
  EXPECT_EQ(done[0].error, 0);
  EXPECT_EQ(done[0].len, size_t{1} << 20);
  EXPECT_TRUE(in == out);
}

TEST(TransportMatching, TaggedMatchingWithIgnoreMask) {
  // Expect: unexpected tagged messages are claimed by tag/ignore, the oldest
  // matching one first; an untagged receive never takes a tagged message.
  Net net(62);
  const size_t a = net.add(TransportConfig{}, kMacA, 0, 0xA0000062);
  const size_t b = net.add(TransportConfig{}, kMacB, 0, 0xB0000062);
  const auto x = pattern(300, 1), y = pattern(301, 2), z = pattern(302, 3), u = pattern(303, 4);
  ASSERT_EQ(send_bytes(net, a, b, x, ctx(1), true, 0x100), 0);
  ASSERT_EQ(send_bytes(net, a, b, y, ctx(2), true, 0x200), 0);
  ASSERT_EQ(send_bytes(net, a, b, z, ctx(3), true, 0x101), 0);
  ASSERT_EQ(send_bytes(net, a, b, u, ctx(4)), 0);
  ASSERT_TRUE(wait_completions(net, a, 4, 100 * kMs));

  std::vector<uint8_t> in(400);
  auto expect_claim = [&](const std::vector<uint8_t>& message, bool tagged, uint64_t tag) {
    auto done = net.take(b);
    ASSERT_EQ(done.size(), 1u);
    EXPECT_EQ(done[0].error, 0);
    EXPECT_EQ(done[0].len, message.size());
    EXPECT_EQ(done[0].tagged, tagged);
    if (tagged) {
      EXPECT_EQ(done[0].tag, tag);
    }
    EXPECT_EQ(std::memcmp(in.data(), message.data(), message.size()), 0);
  };
  // Expect: exact tag 0x101 takes z, though x and y came first.
  ASSERT_EQ(post_bytes(net, b, in, ctx(10), true, 0x101, 0), 0);
  expect_claim(z, true, 0x101);
  // Expect: 0x1?? matches x (0x100), the oldest left.
  ASSERT_EQ(post_bytes(net, b, in, ctx(11), true, 0x1FF, 0x0FF), 0);
  expect_claim(x, true, 0x100);
  // Expect: an untagged receive takes the untagged u, not y.
  ASSERT_EQ(post_bytes(net, b, in, ctx(12)), 0);
  expect_claim(u, false, 0);
  // Expect: a receive that ignores every bit takes y.
  ASSERT_EQ(post_bytes(net, b, in, ctx(13), true, 0, ~uint64_t{0}), 0);
  expect_claim(y, true, 0x200);
  // Expect: nothing left; a further tagged receive stays posted.
  ASSERT_EQ(post_bytes(net, b, in, ctx(14), true, 0, ~uint64_t{0}), 0);
  EXPECT_TRUE(net.take(b).empty());
  EXPECT_EQ(net.engine(b).posted_recvs(), 1u);
}

TEST(TransportMatching, PostedReceivesMatchInPostingOrder) {
  // Expect: of two posted receives that both match, the one posted first
  // takes the message; the second takes the next; a third message waits
  // unexpected for a later receive.
  Net net(63);
  const size_t a = net.add(TransportConfig{}, kMacA, 0, 0xA0000063);
  const size_t b = net.add(TransportConfig{}, kMacB, 0, 0xB0000063);
  std::vector<uint8_t> r1(100), r2(100), r3(100);
  ASSERT_EQ(post_bytes(net, b, r1, ctx(1), true, 0x10, 0x0F), 0);  // 0x10..0x1F
  ASSERT_EQ(post_bytes(net, b, r2, ctx(2), true, 0x15, 0), 0);     // 0x15 only
  const auto m1 = pattern(50, 1), m2 = pattern(60, 2), m3 = pattern(70, 3);
  ASSERT_EQ(send_bytes(net, a, b, m1, ctx(11), true, 0x15), 0);
  ASSERT_TRUE(wait_completions(net, b, 1, 100 * kMs));
  auto done = net.take(b);
  ASSERT_EQ(done.size(), 1u);
  EXPECT_EQ(done[0].context, ctx(1));
  EXPECT_EQ(std::memcmp(r1.data(), m1.data(), m1.size()), 0);

  ASSERT_EQ(send_bytes(net, a, b, m2, ctx(12), true, 0x15), 0);
  ASSERT_TRUE(wait_completions(net, b, 1, 100 * kMs));
  done = net.take(b);
  ASSERT_EQ(done.size(), 1u);
  EXPECT_EQ(done[0].context, ctx(2));
  EXPECT_EQ(std::memcmp(r2.data(), m2.data(), m2.size()), 0);

  ASSERT_EQ(send_bytes(net, a, b, m3, ctx(13), true, 0x15), 0);
  ASSERT_TRUE(wait_completions(net, a, 3, 100 * kMs));
  EXPECT_TRUE(net.take(b).empty());
  ASSERT_EQ(post_bytes(net, b, r3, ctx(3), true, 0x15, 0), 0);
  done = net.take(b);
  ASSERT_EQ(done.size(), 1u);
  EXPECT_EQ(done[0].context, ctx(3));
  EXPECT_EQ(std::memcmp(r3.data(), m3.data(), m3.size()), 0);
}

TEST(TransportMatching, SourceDirectedReceives) {
  // Expect: a receive for source C is not taken by A's message, posted or
  // unexpected, and vice versa; completions name the sender's peer_key.
  Net net(64);
  const size_t a = net.add(TransportConfig{}, kMacA, 0, 0xA0000064);
  const size_t b = net.add(TransportConfig{}, kMacB, 0, 0xB0000064);
  const size_t c = net.add(TransportConfig{}, kMacC, 3, 0xC0000064);
  const uint64_t key_a = peer_key(kMacA, 0), key_c = peer_key(kMacC, 3);
  ASSERT_EQ(key_a, net.link.key(a));
  std::vector<uint8_t> for_c(100), for_a(100);
  ASSERT_EQ(post_bytes(net, b, for_c, ctx(1), false, 0, 0, &key_c), 0);
  ASSERT_EQ(post_bytes(net, b, for_a, ctx(2), false, 0, 0, &key_a), 0);
  const auto from_a = pattern(40, 1), from_c = pattern(41, 2);
  ASSERT_EQ(send_bytes(net, a, b, from_a, ctx(11)), 0);
  ASSERT_TRUE(wait_completions(net, b, 1, 100 * kMs));
  auto done = net.take(b);
  ASSERT_EQ(done.size(), 1u);
  EXPECT_EQ(done[0].context, ctx(2));  // A's message skipped the receive for C
  EXPECT_EQ(done[0].source_key, key_a);
  EXPECT_EQ(std::memcmp(for_a.data(), from_a.data(), from_a.size()), 0);

  ASSERT_EQ(send_bytes(net, c, b, from_c, ctx(12)), 0);
  ASSERT_TRUE(wait_completions(net, b, 1, 100 * kMs));
  done = net.take(b);
  ASSERT_EQ(done.size(), 1u);
  EXPECT_EQ(done[0].context, ctx(1));
  EXPECT_EQ(done[0].source_key, key_c);
  EXPECT_EQ(std::memcmp(for_c.data(), from_c.data(), from_c.size()), 0);

  // Unexpected: C's message waits; a receive for A does not take it.
  const auto late_c = pattern(42, 3), late_a = pattern(43, 4);
  ASSERT_EQ(send_bytes(net, c, b, late_c, ctx(13)), 0);
  ASSERT_TRUE(wait_completions(net, c, 2, 100 * kMs));
  std::vector<uint8_t> again_a(100), again_c(100);
  ASSERT_EQ(post_bytes(net, b, again_a, ctx(3), false, 0, 0, &key_a), 0);
  EXPECT_TRUE(net.take(b).empty());
  ASSERT_EQ(post_bytes(net, b, again_c, ctx(4), false, 0, 0, &key_c), 0);
  done = net.take(b);
  ASSERT_EQ(done.size(), 1u);
  EXPECT_EQ(done[0].context, ctx(4));
  EXPECT_EQ(std::memcmp(again_c.data(), late_c.data(), late_c.size()), 0);
  ASSERT_EQ(send_bytes(net, a, b, late_a, ctx(14)), 0);
  ASSERT_TRUE(wait_completions(net, b, 1, 100 * kMs));
  done = net.take(b);
  ASSERT_EQ(done.size(), 1u);
  EXPECT_EQ(done[0].context, ctx(3));
  EXPECT_EQ(std::memcmp(again_a.data(), late_a.data(), late_a.size()), 0);
}

// ===========================================================================
// 7. Flow control.

class TransportFlowControl : public ::testing::TestWithParam<double> {};

TEST_P(TransportFlowControl, SenderStopsWhenReceiverHasNoBuffer) {
  // Expect: the receiver posts nothing and buffers at most 8 KiB unexpected;
  // of 200 x 4 KiB sends, those beyond the buffer stay outstanding, the
  // receiver reports stalls, the sender goes (almost) quiet instead of
  // retransmitting, and nothing fails.  Once receives are posted all 200
  // arrive in order, byte-exact.
  Net net(7 + static_cast<uint64_t>(GetParam() * 100));
  const size_t a = net.add(TransportConfig{}, kMacA, 0, 0xA0000007);
  TransportConfig rx_config;
  rx_config.unexpected_bytes = 8 << 10;
  const size_t b = net.add(rx_config, kMacB, 0, 0xB0000007);
  net.link.faults().drop = GetParam();
  FlowSpec spec;
  spec.src = a;
  spec.dst = b;
  spec.sizes.assign(200, 4096);
  spec.send_window = 200;
  spec.post = false;
  spec.post_ahead = 200;
  Flow& f = net.add_flow(spec);

  net.run_for(100 * kMs);
  EXPECT_EQ(f.sent, 200u);
  EXPECT_LE(f.send_done, 2u);  // only what fit in 8 KiB was acknowledged
  EXPECT_EQ(f.send_failed, 0u);
  EXPECT_EQ(net.engine(a).outstanding_sends(), 200u - f.send_done);
  EXPECT_GT(net.engine(b).stats().stalled_no_buffer, 0u);
  EXPECT_EQ(net.engine(b).stats().messages_received, 0u);

  // Expect: the sender stopped: over one more simulated second it sends no
  // more than a handful of probes, and gives up on nothing.
  const uint64_t frames_before = net.engine(a).stats().frames_sent;
  net.run_for(1 * kSec);
  const uint64_t probes = net.engine(a).stats().frames_sent - frames_before;
  EXPECT_LE(probes, 40u) << "the sender kept transmitting into a closed window";
  std::printf("[ info     ] %lu frames sent during 1 s of closed window\n",
              static_cast<unsigned long>(probes));
  EXPECT_EQ(f.send_failed, 0u);
  EXPECT_EQ(net.engine(a).stats().timeouts, 0u);
  EXPECT_EQ(net.engine(a).outstanding_sends(), 200u - f.send_done);

  // Expect: posting the receives reopens the window at once (the receiver
  // sends a window update; the sender does not wait for its backed-off RTO).
  f.spec.post = true;
  const uint64_t reopened = net.link.now();
  ASSERT_TRUE(net.run_until([&] { return f.done(); }, 10 * kSec))
      << "received " << f.received << " sends done " << f.send_done;
  if (GetParam() == 0.0) {
    EXPECT_LT(net.link.now() - reopened, 20 * kMs);
  }
  EXPECT_EQ(f.problems, 0u) << f.first_problem;
  EXPECT_EQ(f.send_failed, 0u);
  EXPECT_EQ(net.engine(b).stats().messages_received, 200u);
}

INSTANTIATE_TEST_SUITE_P(Loss, TransportFlowControl, ::testing::Values(0.0, 0.05),
                         [](const ::testing::TestParamInfo<double>& info) {
                           return info.param == 0.0 ? std::string("Lossless")
                                                    : std::string("Drop5pct");
                         });

// ===========================================================================
// 8. Truncation.

TEST(TransportTruncation, LongMessageIntoShortReceive) {
  // Expect: 1000 bytes into a 100-byte receive complete with kErrTruncated,
  // len 100, overflow 900, the first 100 bytes right and nothing written past
  // them; the next message is unaffected.  Same through the unexpected path.
  Net net(8);
  const size_t a = net.add(TransportConfig{}, kMacA, 0, 0xA0000008);
  const size_t b = net.add(TransportConfig{}, kMacB, 0, 0xB0000008);
  const auto big = pattern(1000, 81), next = pattern(500, 82);

  std::vector<uint8_t> area(200, 0xCC);
  RecvRequest r;
  r.iov[0] = {area.data(), 100};
  r.iov_count = 1;
  r.context = ctx(1);
  ASSERT_EQ(net.engine(b).post_recv(r, net.link.now()), 0);
  ASSERT_EQ(send_bytes(net, a, b, big, ctx(11)), 0);
  ASSERT_TRUE(wait_completions(net, b, 1, 100 * kMs));
  auto done = net.take(b);
  ASSERT_EQ(done.size(), 1u);
  EXPECT_EQ(done[0].context, ctx(1));
  EXPECT_EQ(done[0].error, kErrTruncated);
  EXPECT_EQ(done[0].len, 100u);
  EXPECT_EQ(done[0].overflow, 900u);
  EXPECT_EQ(std::memcmp(area.data(), big.data(), 100), 0);
  EXPECT_EQ(std::count(area.begin() + 100, area.end(), 0xCC), 100);

  std::vector<uint8_t> whole(1000, 0xCC);
  ASSERT_EQ(post_bytes(net, b, whole, ctx(2)), 0);
  ASSERT_EQ(send_bytes(net, a, b, next, ctx(12)), 0);
  ASSERT_TRUE(wait_completions(net, b, 1, 100 * kMs));
  done = net.take(b);
  ASSERT_EQ(done.size(), 1u);
  EXPECT_EQ(done[0].error, 0);
  EXPECT_EQ(done[0].len, 500u);
  EXPECT_EQ(std::memcmp(whole.data(), next.data(), 500), 0);

  // Through the unexpected path.
  ASSERT_EQ(send_bytes(net, a, b, big, ctx(13)), 0);
  ASSERT_EQ(send_bytes(net, a, b, next, ctx(14)), 0);
  ASSERT_TRUE(wait_completions(net, a, 4, 100 * kMs));
  for (const Completion& c : net.take(a)) EXPECT_EQ(c.error, 0);  // truncation is the receiver's
  std::fill(area.begin(), area.end(), 0xCC);
  ASSERT_EQ(net.engine(b).post_recv(r, net.link.now()), 0);
  done = net.take(b);
  ASSERT_EQ(done.size(), 1u);
  EXPECT_EQ(done[0].error, kErrTruncated);
  EXPECT_EQ(done[0].len, 100u);
  EXPECT_EQ(done[0].overflow, 900u);
  EXPECT_EQ(std::memcmp(area.data(), big.data(), 100), 0);
  EXPECT_EQ(std::count(area.begin() + 100, area.end(), 0xCC), 100);
  std::fill(whole.begin(), whole.end(), 0xCC);
  ASSERT_EQ(post_bytes(net, b, whole, ctx(3)), 0);
  done = net.take(b);
  ASSERT_EQ(done.size(), 1u);
  EXPECT_EQ(done[0].error, 0);
  EXPECT_EQ(done[0].len, 500u);
  EXPECT_EQ(std::memcmp(whole.data(), next.data(), 500), 0);
}

// ===========================================================================
// 9. Dead peer.

TransportConfig dead_peer_config() {
  TransportConfig config;
  config.peer_timeout_ns = 50 * kMs;
  config.max_rto_ns = 10 * kMs;
  return config;
}

TEST(TransportDeadPeer, OutstandingSendsTimeOutThenOtherPeersWork) {
  // Expect: with B cut off while A has 10 sends outstanding, all 10 complete
  // with kErrTimedOut / kProvPeerTimeout, no sooner than peer_timeout_ns and
  // no later than peer_timeout_ns + 2 * max_rto_ns; then A talks to C
  // normally.
  const TransportConfig config = dead_peer_config();
  Net net(9);
  const size_t a = net.add(config, kMacA, 0, 0xA0000009);
  const size_t b = net.add(config, kMacB, 0, 0xB0000009);
  const size_t c = net.add(config, kMacC, 0, 0xC0000009);
  warm_up(net, a, b, 3);

  std::vector<std::vector<uint8_t>> out;
  for (size_t i = 0; i < 10; ++i) {
    out.push_back(pattern(4096, 90 + i));
    ASSERT_EQ(send_bytes(net, a, b, out[i], ctx(100 + i)), 0);
  }
  net.link.set_partitioned(b, true);
  const uint64_t cut = net.link.now();
  ASSERT_TRUE(wait_completions(net, a, 10, 1 * kSec));
  const uint64_t elapsed = net.link.now() - cut;
  auto done = net.take(a);
  ASSERT_EQ(done.size(), 10u);
  for (size_t i = 0; i < done.size(); ++i) {
    EXPECT_EQ(done[i].kind, Completion::Kind::kSend);
    EXPECT_EQ(done[i].context, ctx(100 + i));
    EXPECT_EQ(done[i].error, kErrTimedOut);
    EXPECT_EQ(done[i].prov_errno, kProvPeerTimeout);
  }
  EXPECT_GE(elapsed, config.peer_timeout_ns);
  EXPECT_LE(elapsed, config.peer_timeout_ns + 2 * config.max_rto_ns);
  EXPECT_EQ(net.engine(a).outstanding_sends(), 0u);
  EXPECT_GE(net.engine(a).stats().timeouts, 1u);
  EXPECT_EQ(net.engine(a).stats().peers_failed, 1u);
  // Expect: the timeout's report names the wait (data unacknowledged), the
  // peer, and a connection that heard nothing for the whole timeout while
  // its oldest segment went out again.
  const TimeoutReport& report = net.engine(a).last_timeout();
  EXPECT_EQ(report.wait, TimeoutReport::Wait::kAcknowledge);
  EXPECT_STREQ(timeout_wait_text(report.wait), "data not acknowledged");
  EXPECT_EQ(report.peer, peer_key(kMacB, 0));
  EXPECT_GE(report.waited_ns, config.peer_timeout_ns);
  EXPECT_GE(report.quiet_ns, config.peer_timeout_ns);
  EXPECT_GT(report.in_flight, 0u);
  EXPECT_GT(report.retransmits, 0u);
  EXPECT_GE(report.awaiting, 10u);
  // The oldest unacknowledged segment is one A sent after the warm-up, and
  // A's own receive half was open (B's outage is not A's window).
  EXPECT_GT(report.una, wire::kInitialSeq);
  EXPECT_FALSE(report.rx_stalled);

  // Expect: A works with C as if nothing happened.
  FlowSpec spec;
  spec.src = a;
  spec.dst = c;
  spec.sizes = random_sizes(50, 64 << 10, 9);
  Flow& f = net.add_flow(spec);
  ASSERT_TRUE(net.run_until([&] { return f.done(); }, 1 * kSec));
  EXPECT_EQ(f.problems, 0u) << f.first_problem;
  EXPECT_EQ(f.send_failed, 0u);
}

TEST(TransportDeadPeer, PeerThatComesBackIsReachableAgain) {
  // Expect: after A gave up on B (timeout) and the link heals, a new message
  // from A to B is delivered (B still holds receive state of the old
  // connection; that must not black-hole the new one).
  const TransportConfig config = dead_peer_config();
  Net net(91);
  const size_t a = net.add(config, kMacA, 0, 0xA0000091);
  const size_t b = net.add(config, kMacB, 0, 0xB0000091);
  warm_up(net, a, b, 5);
  const auto lost = pattern(4096, 1);
  ASSERT_EQ(send_bytes(net, a, b, lost, ctx(1)), 0);
  net.link.set_partitioned(b, true);
  ASSERT_TRUE(wait_completions(net, a, 1, 1 * kSec));
  ASSERT_EQ(net.take(a)[0].error, kErrTimedOut);
  net.link.set_partitioned(b, false);

  std::vector<uint8_t> in(100);
  ASSERT_EQ(post_bytes(net, b, in, ctx(2)), 0);
  const auto again = pattern(100, 2);
  ASSERT_EQ(send_bytes(net, a, b, again, ctx(3)), 0);
  ASSERT_TRUE(net.run_until([&] { return !net.other[a].empty() && !net.other[b].empty(); },
                            1 * kSec))
      << "A's new message never completed: " << net.other[a].size() << " / "
      << net.other[b].size();
  EXPECT_EQ(net.take(a)[0].error, 0);
  auto got = net.take(b);
  EXPECT_EQ(got[0].error, 0);
  EXPECT_EQ(got[0].context, ctx(2));
  EXPECT_TRUE(in == again);
}

TEST(TransportDeadPeer, ReceiveHalfFilledByADeadSenderFailsWithTimeout) {
  // Expect: A dies (partition) in the middle of a 1 MiB message to B; B's
  // posted receive, half filled, completes with kErrTimedOut /
  // kProvPeerTimeout within peer_timeout_ns plus a little, not never.
  const TransportConfig config = dead_peer_config();
  Net net(93);
  const size_t a = net.add(config, kMacA, 0, 0xA0000093);
  const size_t b = net.add(config, kMacB, 0, 0xB0000093);
  warm_up(net, a, b, 3);
  std::vector<uint8_t> in(1 << 20);
  ASSERT_EQ(post_bytes(net, b, in, ctx(7)), 0);
  const auto out = pattern(1 << 20, 7);  // the send reads it until acked
  ASSERT_EQ(send_bytes(net, a, b, out, ctx(8)), 0);
  ASSERT_TRUE(net.run_until([&] { return net.engine(b).stats().frames_received > 40; }, 1 * kSec));
  net.link.set_partitioned(a, true);
  const uint64_t cut = net.link.now();
  ASSERT_TRUE(wait_completions(net, b, 1, 1 * kSec)) << "the half-filled receive never completed";
  EXPECT_LE(net.link.now() - cut, config.peer_timeout_ns + 20 * kMs);
  const auto done = net.take(b);
  EXPECT_EQ(done[0].context, ctx(7));
  EXPECT_EQ(done[0].error, kErrTimedOut);
  EXPECT_EQ(done[0].prov_errno, kProvPeerTimeout);
  const TimeoutReport& report = net.engine(b).last_timeout();
  EXPECT_EQ(report.wait, TimeoutReport::Wait::kReceive);
  EXPECT_EQ(report.peer, peer_key(kMacA, 0));
  // The receive half as it stood: open, past the segments it took.
  EXPECT_FALSE(report.rx_stalled);
  EXPECT_GT(report.next_expected, wire::kInitialSeq + 1);
  EXPECT_GE(report.waited_ns, config.peer_timeout_ns);
}

// B keeps the receive state of A's old connection across A's timeout, and A
// starts its sequence numbers again at 1 after giving up.  Without connection
// numbers B's acks for the old connection looked valid to A, and A completed
// sends that B had dropped as duplicates.
TEST(TransportDeadPeer, BurstAfterComebackIsNotSilentlyLost) {
  // Expect: every message A sends after the outage reaches B.
  const TransportConfig config = dead_peer_config();
  Net net(92);
  const size_t a = net.add(config, kMacA, 0, 0xA0000092);
  const size_t b = net.add(config, kMacB, 0, 0xB0000092);
  warm_up(net, a, b, 5);
  const auto lost = pattern(4096, 1);
  ASSERT_EQ(send_bytes(net, a, b, lost, ctx(1)), 0);
  net.link.set_partitioned(b, true);
  ASSERT_TRUE(wait_completions(net, a, 1, 1 * kSec));
  net.take(a);
  net.link.set_partitioned(b, false);
  FlowSpec spec;
  spec.src = a;
  spec.dst = b;
  spec.sizes.assign(20, 100);
  Flow& f = net.add_flow(spec);
  ASSERT_TRUE(net.run_until([&] { return f.done(); }, 1 * kSec))
      << "sends done " << f.send_done << " (failed " << f.send_failed << "), received "
      << f.received;
  EXPECT_EQ(f.problems, 0u) << f.first_problem;
}

// ===========================================================================
// 10. Restart.

class TransportRestart : public ::testing::TestWithParam<bool> {};

TEST_P(TransportRestart, OutstandingSendsFailThenNewIncarnationWorks) {
  // Expect: B replaced by B' while A has 10 sends outstanding: they fail with
  // kErrPeerReset / kProvPeerRestarted quickly (no hang, no timeout); B'
  // receives nothing of the old connection; then new sends from A reach B'
  // both with B''s session in the address and with session 0.
  const bool session_first = GetParam();
  Net net(10 + session_first);
  const size_t a = net.add(TransportConfig{}, kMacA, 0, 0xA0000010);
  const size_t b = net.add(TransportConfig{}, kMacB, 0, 0xB0000010);
  warm_up(net, a, b, 3);

  std::vector<std::vector<uint8_t>> out;
  for (size_t i = 0; i < 10; ++i) {
    out.push_back(pattern(4096, 100 + i));
    ASSERT_EQ(send_bytes(net, a, b, out[i], ctx(100 + i)), 0);
  }
  Engine& b2 = net.link.restart(b, 0xB0000011);
  std::vector<std::vector<uint8_t>> in(20, std::vector<uint8_t>(4096));
  for (size_t i = 0; i < in.size(); ++i) ASSERT_EQ(post_bytes(net, b, in[i], ctx(200 + i)), 0);

  const uint64_t start = net.link.now();
  ASSERT_TRUE(wait_completions(net, a, 10, 100 * kMs));
  EXPECT_LT(net.link.now() - start, 20 * kMs);
  auto done = net.take(a);
  ASSERT_EQ(done.size(), 10u);
  for (size_t i = 0; i < done.size(); ++i) {
    EXPECT_EQ(done[i].context, ctx(100 + i));
    EXPECT_EQ(done[i].error, kErrPeerReset);
    EXPECT_EQ(done[i].prov_errno, kProvPeerRestarted);
  }
  EXPECT_EQ(net.engine(a).stats().timeouts, 0u);
  net.run_for(20 * kMs);  // stragglers of the old connection
  EXPECT_TRUE(net.take(b).empty());
  EXPECT_EQ(b2.stats().messages_received, 0u);
  EXPECT_GT(b2.stats().stale_session, 0u);

  for (const bool with_session : {session_first, !session_first}) {
    const auto fresh = pattern(3000, with_session ? 1 : 2);
    ASSERT_EQ(send_bytes(net, a, b, fresh, ctx(300), false, 0, with_session), 0);
    ASSERT_TRUE(net.run_until([&] { return !net.other[a].empty() && !net.other[b].empty(); },
                              100 * kMs))
        << "with_session " << with_session;
    auto sent = net.take(a);
    ASSERT_EQ(sent.size(), 1u);
    EXPECT_EQ(sent[0].error, 0) << "with_session " << with_session;
    auto got = net.take(b);
    ASSERT_EQ(got.size(), 1u);
    EXPECT_EQ(got[0].error, 0);
    EXPECT_EQ(got[0].len, fresh.size());
    const size_t slot = reinterpret_cast<uintptr_t>(got[0].context) - 200;
    EXPECT_EQ(std::memcmp(in[slot].data(), fresh.data(), fresh.size()), 0);
  }
  EXPECT_EQ(b2.stats().messages_received, 2u);
}

INSTANTIATE_TEST_SUITE_P(Address, TransportRestart, ::testing::Bool(),
                         [](const ::testing::TestParamInfo<bool>& info) {
                           return info.param ? std::string("NewSessionFirst")
                                             : std::string("SessionZeroFirst");
                         });

// ===========================================================================
// 11. Cancel.

TEST(TransportCancel, CancelPostedReceive) {
  // Expect: cancelling a posted receive gives a kErrCanceled completion with
  // its context and the buffer is never written; an unknown context, or the
  // same one again, gives -ENOENT.
  Net net(11);
  const size_t a = net.add(TransportConfig{}, kMacA, 0, 0xA0000011);
  const size_t b = net.add(TransportConfig{}, kMacB, 0, 0xB0000011);
  std::vector<uint8_t> first(100, 0xCC), second(100, 0xCC);
  ASSERT_EQ(post_bytes(net, b, first, ctx(1)), 0);
  ASSERT_EQ(post_bytes(net, b, second, ctx(2)), 0);
  ASSERT_EQ(net.engine(b).cancel_recv(ctx(1)), 0);
  auto done = net.take(b);
  ASSERT_EQ(done.size(), 1u);
  EXPECT_EQ(done[0].kind, Completion::Kind::kRecv);
  EXPECT_EQ(done[0].context, ctx(1));
  EXPECT_EQ(done[0].error, kErrCanceled);
  EXPECT_EQ(net.engine(b).posted_recvs(), 1u);
  EXPECT_EQ(net.engine(b).cancel_recv(ctx(1)), -ENOENT);
  EXPECT_EQ(net.engine(b).cancel_recv(ctx(999)), -ENOENT);

  const auto m = pattern(80, 11);
  ASSERT_EQ(send_bytes(net, a, b, m, ctx(21)), 0);
  ASSERT_TRUE(wait_completions(net, b, 1, 100 * kMs));
  done = net.take(b);
  EXPECT_EQ(done[0].context, ctx(2));
  EXPECT_EQ(std::memcmp(second.data(), m.data(), m.size()), 0);
  EXPECT_EQ(std::count(first.begin(), first.end(), 0xCC), 100);
  EXPECT_TRUE(net.take(b).empty());
}

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

// A then B set up: a few messages both ways, so both connections are open.
struct Pair {
  Net net;
  size_t a, b;
  explicit Pair(uint64_t seed, TransportConfig config = {}) : net(seed) {
    a = net.add(config, kMacA, 0, 0xA0000012);
    b = net.add(config, kMacB, 0, 0xB0000012);
  }
  void open() {
    warm_up(net, a, b, 3);
    warm_up(net, b, a, 3);
  }
  // One message each way over the (possibly abused) connection.
  void expect_still_works(uint64_t seed) {
    FlowSpec ab;
    ab.src = a;
    ab.dst = b;
    ab.sizes = {10, 3000};
    ab.directed = true;
    ab.seed = seed;
    FlowSpec ba = ab;
    ba.src = b;
    ba.dst = a;
    ba.seed = seed + 1;
    Flow& f1 = net.add_flow(ab);
    Flow& f2 = net.add_flow(ba);
    ASSERT_TRUE(net.run_until([&] { return f1.done() && f2.done(); }, 100 * kMs))
        << "A->B received " << f1.received << ", B->A received " << f2.received;
    EXPECT_EQ(f1.problems + f2.problems, 0u) << f1.first_problem << f2.first_problem;
    EXPECT_EQ(f1.send_failed + f2.send_failed, 0u);
  }
};

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
  ASSERT_TRUE(p.net.run_until([&] { return !p.net.other[p.a].empty() && !p.net.other[p.b].empty(); },
                              100 * kMs));
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
  for (const OutFrame& out : a.outbox())
    probes += (out.header.flags & wire::kFlagAckRequest) != 0;
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
  ASSERT_TRUE(p.net.run_until([&] { return !p.net.other[p.a].empty() && !p.net.other[p.b].empty(); },
                              100 * kMs));
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
    case 0: h.dst_session = 0; break;
    case 1: h.dst_session = net.link.session(to); break;
    default: h.dst_session = static_cast<uint32_t>(rng.next()); break;
  }
  h.seq = rng.chance(0.7) ? static_cast<uint32_t>(1 + rng.below(300))
                          : static_cast<uint32_t>(rng.next());
  h.ack = rng.chance(0.7) ? static_cast<uint32_t>(rng.below(300))
                          : static_cast<uint32_t>(rng.next());
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

// ===========================================================================
// 13. Congestion control.

// A stream A to B whose window has opened, and the filter that drops the
// first transmission of the data segments whose seq is in `lose` (each
// once), for the two tests below.
struct LossProbe {
  explicit LossProbe(uint64_t seed) : net(seed) {
    config.max_payload = 64;  // many small frames
    a = net.add(config, kMacA, 0, 0xA0000016);
    b = net.add(config, kMacB, 0, 0xB0000016);
    FlowSpec spec;
    spec.src = a;
    spec.dst = b;
    spec.sizes.assign(20000, 1024);
    spec.send_window = 64;
    spec.post_ahead = 128;
    flow = &net.add_flow(spec);
    net.link.keep = [this](size_t from, const wire::FrameHeader& h) {
      if (from != a || !wire::opcode_is_data(h.opcode)) return true;
      for (uint32_t& seq : lose) {
        if (seq != 0 && h.seq == seq) {
          seq = 0;
          return false;
        }
      }
      return true;
    };
  }
  const Connection& sender() { return *net.engine(a).find(net.link.key(b)); }

  TransportConfig config;
  Net net;
  size_t a = 0, b = 0;
  Flow* flow = nullptr;
  std::vector<uint32_t> lose;
};

TEST(TransportCongestion, WindowShrinksOnLossAndGrowsBack) {
  // Expect: a long stream opens the congestion window; a burst of loss
  // shrinks it to at most 70 % (the multiplicative decrease, CUBIC's beta);
  // once the loss stops it grows back to at
  // least 90 % of where it was.
  LossProbe p(13);  // 1 KiB messages in 64-byte frames: cheap to checksum
  Net& net = p.net;
  Flow& f = *p.flow;
  net.run_for(5 * kMs);
  const Connection* c = net.engine(p.a).find(net.link.key(p.b));
  ASSERT_NE(c, nullptr);
  const uint32_t before = c->cwnd_x256;
  EXPECT_GE(before, 64u * 256) << "the window never opened";

  net.link.faults().drop = 0.3;
  uint32_t lowest = before;
  for (int i = 0; i < 40; ++i) {
    net.step();
    lowest = std::min(lowest, c->cwnd_x256);
  }
  net.link.faults().drop = 0;
  for (int i = 0; i < 400; ++i) {
    net.step();
    lowest = std::min(lowest, c->cwnd_x256);
  }
  EXPECT_LE(lowest, before * 7 / 10) << "before " << before / 256.0 << " segments";
  ASSERT_TRUE(net.run_until([&] { return c->cwnd_x256 >= before * 9 / 10 || f.done(); },
                            200 * kMs));
  EXPECT_GE(c->cwnd_x256, before * 9 / 10)
      << "before " << before / 256.0 << ", lowest " << lowest / 256.0 << ", now "
      << c->cwnd_x256 / 256.0;
  EXPECT_FALSE(f.done()) << "the stream ended before the window could be judged";
  EXPECT_EQ(f.problems, 0u) << f.first_problem;
  EXPECT_EQ(f.send_failed, 0u);
}

TEST(TransportCongestion, ALoneLossCutsTheWindowLessThanARun) {
  // Expect: with the window open, losing one segment takes the window to
  // 90 % of where it was, and so does losing two of one window that were
  // not sent one after the other; losing two in a row (what a full queue
  // does) takes it to 70 %, also when B's frames arrive one per step, so
  // that A learns of each loss from a different ack.  The stream goes on
  // whole each time.
  struct Case {
    std::vector<uint32_t> lost;  // past next_seq when the loss starts
    uint32_t tenths;
    const char* what;
    bool paced = false;
  };
  const Case cases[] = {{{5}, 9, "one lost"},
                        {{5, 9}, 9, "two apart"},
                        {{5, 6}, 7, "two in a row"},
                        {{5, 6}, 7, "two in a row, one ack each", true}};
  uint64_t seed = 16;
  for (const Case& k : cases) {
    LossProbe p(++seed);
    if (k.paced) p.net.link.set_bottleneck(p.b, 1, size_t{1} << 20);
    p.net.run_for(5 * kMs);
    const Connection& c = p.sender();
    ASSERT_GE(c.cwnd_x256, 64u * 256) << "the window never opened";
    const uint32_t before = c.cwnd_x256 / 256;
    const uint64_t resent = p.net.engine(p.a).stats().fast_retransmits;
    for (const uint32_t offset : k.lost) p.lose.push_back(c.next_seq + offset);
    ASSERT_TRUE(p.net.run_until(
        [&] { return p.net.engine(p.a).stats().fast_retransmits >= resent + k.lost.size(); },
        50 * kMs))
        << k.what;
    // The cut is the first decrease; growth may since have added a little.
    EXPECT_EQ(c.ssthresh, before * k.tenths / 10) << k.what << " of " << before;
    EXPECT_EQ(c.cwnd_before_loss, before) << k.what;
    p.net.run_for(20 * kMs);
    EXPECT_EQ(p.flow->problems, 0u) << p.flow->first_problem;
    EXPECT_EQ(p.flow->send_failed, 0u);
  }
}

TEST(TransportCongestion, NewDataFlowsWhileAHoleIsRepaired) {
  // Expect: while a lost segment (and its first repair) waits for its
  // repair (una stays at it), the
  // segments the receiver reported holding (SACK) no longer count against
  // the window, so new segments go out; in flight and not reported stays
  // within the window; the stream arrives whole.
  // In slow start, before the window reaches the slot table's 256: then the
  // congestion window is what limits.
  LossProbe p(18);
  const uint32_t hole = wire::kInitialSeq + 40;
  p.lose = {hole, hole};  // its first repair is lost too: the hole stays open a while
  p.net.step();
  const Connection& c = p.sender();
  ASSERT_TRUE(p.net.run_until([&] { return c.sacked_in_flight > 0; }, 50 * kMs));
  ASSERT_EQ(c.una, hole);
  const uint32_t next_at_report = c.next_seq;
  uint32_t next_while_open = next_at_report;  // next_seq while una is still the hole
  for (;;) {
    EXPECT_LE(c.next_seq - c.una - c.sacked_in_flight, c.cwnd_x256 / 256);
    p.net.step();
    if (c.una != hole) break;
    next_while_open = c.next_seq;
  }
  EXPECT_GT(p.net.engine(p.a).stats().fast_retransmits, 0u);
  EXPECT_GT(next_while_open - next_at_report, 0u) << "nothing new was sent while the hole was open";
  p.net.run_for(20 * kMs);
  EXPECT_EQ(p.flow->problems, 0u) << p.flow->first_problem;
  EXPECT_EQ(p.flow->send_failed, 0u);
}

TEST(TransportCongestion, TwoSendersShareABottleneck) {
  // Expect: A and C both stream to B through a bottleneck of 8 frames per
  // step with a 64-frame queue: both finish everything, and while both are
  // active neither gets less than a quarter of the messages delivered.
  TransportConfig config;
  config.max_payload = 64;
  Net net(14);
  const size_t a = net.add(config, kMacA, 0, 0xA0000014);
  const size_t b = net.add(config, kMacB, 0, 0xB0000014);
  const size_t c = net.add(config, kMacC, 0, 0xC0000014);
  net.link.set_bottleneck(b, 8, 64);
  FlowSpec from_a;
  from_a.src = a;
  from_a.dst = b;
  from_a.sizes.assign(3000, 1024);
  from_a.directed = true;
  from_a.seed = 141;
  FlowSpec from_c = from_a;
  from_c.src = c;
  from_c.seed = 142;
  Flow& fa = net.add_flow(from_a);
  Flow& fc = net.add_flow(from_c);

  ASSERT_TRUE(net.run_until([&] { return net.flows_done(); }, 20 * kSec))
      << fa.received << " / " << fc.received;
  for (Flow* f : {&fa, &fc}) {
    EXPECT_EQ(f->problems, 0u) << f->first_problem;
    EXPECT_EQ(f->send_failed, 0u);
  }
  EXPECT_GT(net.link.counters().congested, 0u) << "the bottleneck never overflowed";
  const uint64_t from = std::max(fa.received_at.front(), fc.received_at.front());
  const uint64_t to = std::min(fa.received_at.back(), fc.received_at.back());
  auto within = [&](const Flow& f) {
    return std::count_if(f.received_at.begin(), f.received_at.end(),
                         [&](uint64_t t) { return t >= from && t <= to; });
  };
  const double na = static_cast<double>(within(fa)), nc = static_cast<double>(within(fc));
  ASSERT_GT(na + nc, 1000.0) << "the flows hardly overlapped";
  EXPECT_GE(na / (na + nc), 0.25) << na << " vs " << nc;
  EXPECT_GE(nc / (na + nc), 0.25) << na << " vs " << nc;
  std::printf("[ info     ] overlap %.1f ms: A %.0f, C %.0f messages; %lu frames tail-dropped\n",
              (to - from) / 1e6, na, nc, static_cast<unsigned long>(net.link.counters().congested));
}

// ===========================================================================
// 14. Delayed and piggybacked acks.

TEST(TransportAcks, OneWayStreamCoalescesAcks) {
  // Expect: in a lossless one-way stream B sends fewer than one ACK frame per
  // four data frames of A.  The link paces frames to B (2 per step, nothing
  // dropped) so they do not all arrive in one poll.
  Net net(15);
  const size_t a = net.add(TransportConfig{}, kMacA, 0, 0xA0000015);
  const size_t b = net.add(TransportConfig{}, kMacB, 0, 0xB0000015);
  net.link.set_bottleneck(b, 2, size_t{1} << 20);
  uint64_t data = 0, acks = 0;
  net.link.tap = [&](size_t from, size_t, const wire::FrameHeader& h) {
    if (from == a && h.opcode != static_cast<uint8_t>(wire::Opcode::kAck)) ++data;
    if (from == b && h.opcode == static_cast<uint8_t>(wire::Opcode::kAck)) ++acks;
  };
  FlowSpec spec;
  spec.src = a;
  spec.dst = b;
  spec.sizes.assign(100, 64 << 10);
  Flow& f = net.add_flow(spec);
  ASSERT_TRUE(net.run_until([&] { return f.done(); }, 1 * kSec));
  EXPECT_EQ(f.problems, 0u) << f.first_problem;
  EXPECT_GT(data, 1000u);
  EXPECT_LT(acks * 4, data) << acks << " acks for " << data << " data frames";
  EXPECT_GE(net.engine(b).stats().acks_sent, acks);
  std::printf("[ info     ] %lu ACK frames for %lu data frames\n", static_cast<unsigned long>(acks),
              static_cast<unsigned long>(data));
}

TEST(TransportAcks, BidirectionalTrafficPiggybacksAcks) {
  // Expect: with both directions busy (both ends paced as above), nearly
  // every data frame carries an ack (kFlagAckValid).  (Pure ACKs remain
  // while both sides are window-limited: then only they keep the ack clock.)
  Net net(16);
  const size_t a = net.add(TransportConfig{}, kMacA, 0, 0xA0000016);
  const size_t b = net.add(TransportConfig{}, kMacB, 0, 0xB0000016);
  net.link.set_bottleneck(a, 2, size_t{1} << 20);
  net.link.set_bottleneck(b, 2, size_t{1} << 20);
  uint64_t data = 0, with_ack = 0, acks = 0;
  net.link.tap = [&](size_t, size_t, const wire::FrameHeader& h) {
    if (h.opcode == static_cast<uint8_t>(wire::Opcode::kAck)) {
      ++acks;
    } else {
      ++data;
      if (h.flags & wire::kFlagAckValid) ++with_ack;
    }
  };
  FlowSpec ab;
  ab.src = a;
  ab.dst = b;
  ab.sizes.assign(400, 16 << 10);
  ab.seed = 161;
  FlowSpec ba = ab;
  ba.src = b;
  ba.dst = a;
  ba.seed = 162;
  net.add_flow(ab);
  net.add_flow(ba);
  ASSERT_TRUE(net.run_until([&] { return net.flows_done(); }, 1 * kSec));
  for (const auto& f : net.flows) EXPECT_EQ(f->problems, 0u) << f->first_problem;
  EXPECT_GT(data, 4000u);
  EXPECT_GE(with_ack * 100, data * 95) << with_ack << " of " << data << " carry an ack";
  std::printf("[ info     ] %lu of %lu data frames carry an ack; %lu ACK frames\n",
              static_cast<unsigned long>(with_ack), static_cast<unsigned long>(data),
              static_cast<unsigned long>(acks));
}

TEST(TransportAcks, AMessageWhoseSenderWaitsIsAckedAtOnce) {
  // Expect: with a 50 ms ack delay, a lone 3-segment message with a
  // completion completes in well under a millisecond of simulated time:
  // its last segment carries kFlagAckNow and B acks at once.
  TransportConfig config;
  config.ack_delay_ns = 50 * kMs;
  Pair p(18, config);
  p.open();
  uint64_t flagged = 0, last_segments = 0;
  p.net.link.tap = [&](size_t from, size_t, const wire::FrameHeader& h) {
    if (from != p.a || h.opcode == static_cast<uint8_t>(wire::Opcode::kAck)) return;
    if (h.flags & wire::kFlagLastSegment) ++last_segments;
    if (h.flags & wire::kFlagAckNow) ++flagged;
  };
  std::vector<uint8_t> in(4000), in2(4000);
  ASSERT_EQ(post_bytes(p.net, p.b, in, ctx(1)), 0);
  const auto message = pattern(3000, 3);
  const uint64_t start = p.net.link.now();
  ASSERT_EQ(send_bytes(p.net, p.a, p.b, message, ctx(2)), 0);
  ASSERT_TRUE(wait_completions(p.net, p.a, 1, 100 * kMs));
  EXPECT_LT(p.net.link.now() - start, 1 * kMs) << "the send waited for the ack delay";
  EXPECT_EQ(flagged, 1u);
  EXPECT_EQ(last_segments, 1u);

  // A message nobody waits on (no completion: fi_inject) does not ask,
  // though nothing is queued behind it; the one with a completion queued
  // behind it does.  The first is longer than any window (300 segments),
  // so it is still being cut when the second is queued.
  Pair q(19, config);
  q.open();
  const auto long_message = pattern(300 * 1444, 4);
  std::vector<uint8_t> long_in(long_message.size());
  std::vector<uint32_t> flagged_ids, last_ids;
  q.net.link.tap = [&](size_t from, size_t, const wire::FrameHeader& h) {
    if (from != q.a || h.opcode == static_cast<uint8_t>(wire::Opcode::kAck)) return;
    // (Segments that fill the window ask too: only the ends count here.)
    if (h.flags & wire::kFlagLastSegment) last_ids.push_back(h.msg_id);
    if ((h.flags & wire::kFlagLastSegment) && (h.flags & wire::kFlagAckNow))
      flagged_ids.push_back(h.msg_id);
  };
  const auto send_unheard = [&](const std::vector<uint8_t>& bytes) {
    iovec iov{const_cast<uint8_t*>(bytes.data()), bytes.size()};
    SendRequest s;
    s.iov = &iov;
    s.iov_count = 1;
    s.completion = false;
    s.copy = true;
    return q.net.engine(q.a).send(q.net.link.address(q.b), s, q.net.link.now());
  };
  ASSERT_EQ(post_bytes(q.net, q.b, long_in, ctx(3)), 0);
  ASSERT_EQ(post_bytes(q.net, q.b, in2, ctx(4)), 0);
  ASSERT_EQ(send_unheard(long_message), 0);
  ASSERT_EQ(send_bytes(q.net, q.a, q.b, message, ctx(6)), 0);
  ASSERT_TRUE(wait_completions(q.net, q.a, 1, 100 * kMs));
  ASSERT_EQ(last_ids.size(), 2u);
  ASSERT_EQ(flagged_ids.size(), 1u) << "only the message with a completion asks";
  EXPECT_EQ(flagged_ids[0], last_ids[1]);

  // Alone, a message nobody waits on is acked when the ack delay runs out.
  ASSERT_TRUE(wait_completions(q.net, q.b, 2, 100 * kMs));
  const Connection* to_b = q.net.engine(q.a).find(q.net.link.key(q.b));
  ASSERT_NE(to_b, nullptr);
  const uint64_t delayed_before = q.net.engine(q.b).stats().delayed_acks;
  ASSERT_EQ(post_bytes(q.net, q.b, in, ctx(7)), 0);
  const auto short_message = pattern(100, 5);
  const uint64_t sent_at = q.net.link.now();
  ASSERT_EQ(send_unheard(short_message), 0);
  ASSERT_TRUE(wait_completions(q.net, q.b, 3, 10 * kMs));
  ASSERT_TRUE(q.net.run_until([&] { return to_b->una == to_b->next_seq; }, 100 * kMs));
  EXPECT_GE(q.net.link.now() - sent_at, config.ack_delay_ns) << "acked before the delay";
  EXPECT_EQ(q.net.engine(q.b).stats().delayed_acks, delayed_before + 1);
}

TEST(TransportAcks, ASegmentThatFillsTheWindowAsksForTheAck) {
  // Expect: with a 50 ms ack delay and a congestion window of a few
  // segments (initial 3, grown by the warm-up's acks, under kAckEvery), a
  // 40-segment message nobody waits on (no completion) is acked whole in
  // well under the delay: each segment that fills the window carries
  // kFlagAckNow, and B acks it at once.  Without that, every window would
  // wait the delay.
  TransportConfig config;
  config.ack_delay_ns = 50 * kMs;
  config.initial_window = 3;
  Pair p(20, config);
  p.open();
  const Connection* to_b = p.net.engine(p.a).find(p.net.link.key(p.b));
  ASSERT_NE(to_b, nullptr);
  ASSERT_LT(to_b->cwnd_x256 / 256, 8u) << "the window is not small: the test shows nothing";
  size_t data_frames = 0, asking = 0;
  p.net.link.tap = [&](size_t from, size_t, const wire::FrameHeader& h) {
    if (from != p.a || h.opcode == static_cast<uint8_t>(wire::Opcode::kAck)) return;
    ++data_frames;
    if (h.flags & wire::kFlagAckNow) ++asking;
  };
  std::vector<uint8_t> in(40 * 1444);
  ASSERT_EQ(post_bytes(p.net, p.b, in, ctx(1)), 0);
  const auto message = pattern(40 * 1444, 6);
  iovec iov{const_cast<uint8_t*>(message.data()), message.size()};
  SendRequest s;
  s.iov = &iov;
  s.iov_count = 1;
  s.completion = false;
  s.copy = true;
  const uint64_t start = p.net.link.now();
  ASSERT_EQ(p.net.engine(p.a).send(p.net.link.address(p.b), s, p.net.link.now()), 0);
  ASSERT_TRUE(wait_completions(p.net, p.b, 1, 200 * kMs));
  ASSERT_TRUE(p.net.run_until([&] { return to_b->una == to_b->next_seq; }, 200 * kMs));
  EXPECT_LT(p.net.link.now() - start, 5 * kMs) << "the windows waited for the ack delay";
  EXPECT_GE(data_frames, 40u);
  EXPECT_GE(asking, 1u) << "no segment that filled the window asked for the ack";
  EXPECT_LT(asking, data_frames) << "every segment asked";
}

TEST(TransportAcks, OwedAckRidesOnTheNextDataFrame) {
  // Expect: B owes A an ack (3 segments of a longer message arrived, the
  // ack delay has not run out) when B sends A a message: that data frame
  // carries kFlagAckValid with ack = B's next expected seq and B owes
  // nothing after it; B never sends that ack again as an ACK frame; A takes
  // it (una moves); both messages arrive.
  TransportConfig config;
  config.initial_window = 3;
  Pair p(17, config);
  p.open();
  Engine& a = p.net.engine(p.a);
  Engine& b = p.net.engine(p.b);
  std::vector<uint8_t> at_b(20000), at_a(100);
  ASSERT_EQ(post_bytes(p.net, p.b, at_b, ctx(1)), 0);
  ASSERT_EQ(post_bytes(p.net, p.a, at_a, ctx(2)), 0);
  const Connection* to_a = b.find(p.net.link.key(p.a));
  const Connection* to_b = a.find(p.net.link.key(p.b));
  const uint32_t expected = to_a->next_expected;
  const auto long_message = pattern(10 * 1444, 1), reply = pattern(20, 2);
  ASSERT_EQ(send_bytes(p.net, p.a, p.b, long_message, ctx(3)), 0);
  ASSERT_TRUE(p.net.run_until([&] { return to_a->next_expected != expected; }, 1 * kMs));
  ASSERT_GT(to_a->ack_owed, 0u);
  ASSERT_LT(to_a->ack_owed, 8u);
  ASSERT_TRUE(b.outbox().empty()) << "B acknowledged before the test could answer";

  const uint32_t owed_ack = to_a->next_expected;
  ASSERT_EQ(send_bytes(p.net, p.b, p.a, reply, ctx(4)), 0);
  ASSERT_EQ(b.outbox().size(), 1u);
  const wire::FrameHeader& h = b.outbox()[0].header;
  EXPECT_EQ(h.opcode, static_cast<uint8_t>(wire::Opcode::kMsg));
  EXPECT_TRUE(h.flags & wire::kFlagAckValid);
  EXPECT_EQ(h.ack, owed_ack);
  EXPECT_EQ(to_a->ack_owed, 0u);

  uint64_t repeated = 0;
  p.net.link.tap = [&](size_t from, size_t, const wire::FrameHeader& f) {
    if (from == p.b && f.opcode == static_cast<uint8_t>(wire::Opcode::kAck) && f.ack == owed_ack)
      ++repeated;
  };
  // A takes the piggybacked ack as soon as the frame arrives (two steps:
  // out at the end of one, in during the next).
  p.net.step();
  p.net.step();
  EXPECT_EQ(to_b->una, owed_ack);
  ASSERT_TRUE(p.net.run_until(
      [&] { return p.net.other[p.a].size() >= 2 && p.net.other[p.b].size() >= 2; }, 10 * kMs));
  EXPECT_EQ(repeated, 0u) << "B sent the ack it had piggybacked again on its own";
  for (const Completion& c : p.net.take(p.a)) EXPECT_EQ(c.error, 0);
  for (const Completion& c : p.net.take(p.b)) EXPECT_EQ(c.error, 0);
}

}  // namespace
}  // namespace ofi_dpdk::proto

TEST(PeerKey, IsTheQueueThenTheMacMostSignificantFirst) {
  // Expect: the queue in the top 16 bits, then the MAC's bytes in wire
  // order: keys sort and print as the address reads.
  const uint8_t mac[6] = {0x02, 0x11, 0x22, 0x33, 0x44, 0xf5};
  EXPECT_EQ(ofi_dpdk::proto::peer_key(mac, 0x0102), 0x0102'0211'2233'44f5ull);
  EXPECT_EQ(ofi_dpdk::proto::peer_key(mac, 0), 0x0000'0211'2233'44f5ull);
  EXPECT_EQ(ofi_dpdk::proto::peer_key(mac, 0xffff), 0xffff'0211'2233'44f5ull);
}
