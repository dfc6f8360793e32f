// transport_net.h: the harness of the transport tests (test_transport_*.cc):
// payload patterns, flows of messages checked completion by completion, Net
// (engines over the in-memory lossy link, lossy_link.h, driven in simulated
// time), direct send and receive helpers, and Pair (A and B, connected).
#pragma once

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

namespace ofi_dpdk::proto {

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

void fill_pattern(uint8_t* p, size_t n, uint64_t seed);

// Returns n when p holds the pattern, else the first differing offset.
size_t pattern_mismatch(const uint8_t* p, size_t n, uint64_t seed);

std::vector<uint8_t> pattern(size_t n, uint64_t seed);

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
  bool done() const { return send_done == spec.sizes.size() && received == spec.sizes.size(); }
  void problem(const std::string& text) {
    if (problems++ == 0) first_problem = text;
  }
};

// Contexts of flow operations carry bit 63 (never set in a user-space
// pointer), the flow, the direction and the message index.
constexpr uint64_t kFlowBit = uint64_t{1} << 63;

inline void* flow_context(size_t flow, bool recv, size_t index) {
  return reinterpret_cast<void*>(kFlowBit | uint64_t{flow} << 40 | uint64_t{recv} << 39 | index);
}

inline void* ctx(uintptr_t n) {
  return reinterpret_cast<void*>(n);
}

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
  bool run_until(const std::function<bool()>& done, uint64_t max_sim_ns, double max_wall_s = 30.0) {
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
    if (index != f.received) f.problem(who + "arrived as number " + std::to_string(f.received));
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
std::vector<size_t> lossless_sizes(size_t n);

// 1 B .. max_bytes, log-uniform, with the edges (1 B, one segment, one byte
// more, the maximum) in every hundred.
std::vector<size_t> random_sizes(size_t n, size_t max_bytes, uint64_t seed);

double seconds_since(std::chrono::steady_clock::time_point start);

// ---------------------------------------------------------------------------
// Direct helpers for tests that drive single operations.

int send_bytes(Net& net, size_t from, size_t to, const std::vector<uint8_t>& bytes, void* context,
               bool tagged = false, uint64_t tag = 0, bool with_session = false);

int post_bytes(Net& net, size_t at, std::vector<uint8_t>& buf, void* context, bool tagged = false,
               uint64_t tag = 0, uint64_t ignore = 0, const uint64_t* source_key = nullptr);

// Steps until engine e has produced `count` completions not owned by a flow
// (kept in net.other[e]); false on timeout.
bool wait_completions(Net& net, size_t e, size_t count, uint64_t max_sim_ns);

// Moves `count` messages A->B (direct receives) so both sides know each
// other's session and the RTT is measured.
void warm_up(Net& net, size_t a, size_t b, size_t count);

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

}  // namespace ofi_dpdk::proto
