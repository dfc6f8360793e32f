// Requests and responses (engine_rma.cc) over the in-memory lossy link: the
// handler runs exactly once per request whatever the link drops, duplicates
// or reorders; responses carry data and status back to the right request;
// requests fail (never hang) when the target dies or restarts; a response
// to nothing is ignored.
#include <gtest/gtest.h>

#include <cstring>
#include <deque>
#include <map>
#include <string>
#include <vector>

#include "test/proto/lossy_link.h"

namespace ofi_dpdk::proto {
namespace {

using sim::LossyLink;

constexpr uint8_t kMacA[6] = {0x02, 0, 0, 0, 0, 0x0A};
constexpr uint8_t kMacB[6] = {0x02, 0, 0, 0, 0, 0x0B};
constexpr uint64_t kMs = 1'000'000;

// A toy target: requests are "R<n>" (read n bytes of a counter-stamped
// pattern) or "W<text>" (append to a log); every call is recorded.
struct Target {
  std::vector<std::string> log;
  int calls = 0;
  Response handle(uint64_t, const uint8_t* bytes, size_t length) {
    ++calls;
    std::string text(reinterpret_cast<const char*>(bytes), length);
    Response r;
    if (text.empty()) {
      r.status = kErrTruncated;
    } else if (text[0] == 'R') {
      const size_t n = std::stoul(text.substr(1));
      for (size_t i = 0; i < n; ++i) r.data.push_back(static_cast<uint8_t>(i * 31 + calls));
    } else if (text[0] == 'W') {
      log.push_back(text.substr(1));
    } else {
      r.status = 22;  // EINVAL
    }
    return r;
  }
};

struct Harness {
  explicit Harness(uint64_t seed, TransportConfig config = {}) : link(seed) {
    a = link.add(config, kMacA, 0, 0xA1);
    b = link.add(config, kMacB, 0, 0xB1);
    attach();
  }
  void attach() {
    link.engine(b).set_request_handler(
        [this](uint64_t peer, const uint8_t* bytes, size_t length, size_t) {
          return target.handle(peer, bytes, length);
        });
  }
  // Sends request `text` from A to B; the response lands in `result`.
  int request(const std::string& text, std::vector<uint8_t>& result, void* context) {
    requests.push_back(text);
    iovec iov{const_cast<char*>(requests.back().data()), requests.back().size()};
    SendRequest s;
    s.iov = &iov;
    s.iov_count = 1;
    s.context = context;
    s.copy = true;
    s.request = true;
    s.response_iov[0] = {result.data(), result.size()};
    s.response_iov_count = 1;
    return link.engine(a).send(link.address(b), s, link.now());
  }
  // Steps until A has `count` completions (or the time runs out).
  std::vector<Completion> wait(size_t count, uint64_t limit_ns) {
    std::vector<Completion> done;
    const uint64_t end = link.now() + limit_ns;
    while (done.size() < count && link.now() < end) {
      link.step();
      auto& c = link.engine(a).completions();
      done.insert(done.end(), c.begin(), c.end());
      c.clear();
      link.engine(b).completions().clear();
    }
    return done;
  }

  LossyLink link;
  size_t a, b;
  Target target;
  std::deque<std::string> requests;  // stable storage for the request bytes
};

void* ctx(uintptr_t n) {
  return reinterpret_cast<void*>(n);
}

TEST(Requests, ResponseDataAndStatusReachTheRightRequest) {
  Harness h(1);
  std::vector<uint8_t> read(100, 0), write(8, 0xEE), bad(8, 0xEE);
  ASSERT_EQ(h.request("R100", read, ctx(1)), 0);
  ASSERT_EQ(h.request("Whello", write, ctx(2)), 0);
  ASSERT_EQ(h.request("?", bad, ctx(3)), 0);
  auto done = h.wait(3, 100 * kMs);
  ASSERT_EQ(done.size(), 3u);
  std::map<void*, Completion> by_context;
  for (const auto& c : done) by_context[c.context] = c;
  EXPECT_EQ(by_context[ctx(1)].error, 0);
  EXPECT_EQ(by_context[ctx(1)].len, 100u);
  for (size_t i = 0; i < 100; ++i) ASSERT_EQ(read[i], static_cast<uint8_t>(i * 31 + 1)) << i;
  EXPECT_EQ(by_context[ctx(2)].error, 0);
  EXPECT_EQ(by_context[ctx(2)].len, 0u);
  EXPECT_EQ(write[0], 0xEE) << "an empty response places nothing";
  EXPECT_EQ(by_context[ctx(3)].error, 22);
  EXPECT_EQ(h.target.log, std::vector<std::string>{"hello"});
  EXPECT_EQ(h.link.engine(h.a).outstanding_sends(), 0u);
}

TEST(Requests, EachRequestRunsOnceOverALossyLink) {
  // 10 % drop, 5 % duplicate, 10 % reorder: 300 writes and reads; the
  // target sees each write once and in order, each read gets its own answer.
  Harness h(7);
  h.link.faults().drop = 0.10;
  h.link.faults().duplicate = 0.05;
  h.link.faults().reorder = 0.10;
  std::vector<std::vector<uint8_t>> results(300, std::vector<uint8_t>(3000));
  std::vector<std::string> expected_log;
  size_t sent = 0;
  std::vector<Completion> done;
  while (done.size() < results.size() && h.link.now() < 20'000 * kMs) {
    while (sent < results.size()) {
      const std::string text =
          sent % 3 == 0 ? "R" + std::to_string(1 + sent * 7) : "W" + std::to_string(sent);
      if (h.request(text, results[sent], ctx(sent + 1)) != 0) {
        h.requests.pop_back();
        break;
      }
      if (text[0] == 'W') expected_log.push_back(text.substr(1));
      ++sent;
    }
    auto more = h.wait(done.size() + 1, 10 * kMs);
    done.insert(done.end(), more.begin(), more.end());
  }
  ASSERT_EQ(done.size(), results.size());
  for (const auto& c : done) EXPECT_EQ(c.error, 0);
  EXPECT_EQ(h.target.calls, 300);
  EXPECT_EQ(h.link.engine(h.b).stats().requests_served, 300u);
  EXPECT_EQ(h.target.log, expected_log);
  for (const auto& c : done) {
    const size_t i = reinterpret_cast<uintptr_t>(c.context) - 1;
    if (i % 3 == 0) {
      EXPECT_EQ(c.len, 1 + i * 7) << "read " << i;
    }
  }
}

TEST(Requests, WithoutAHandlerTheTargetAnswersNotSupported) {
  Harness h(2);
  h.link.engine(h.b).set_request_handler(nullptr);
  std::vector<uint8_t> result(8);
  ASSERT_EQ(h.request("R8", result, ctx(1)), 0);
  auto done = h.wait(1, 100 * kMs);
  ASSERT_EQ(done.size(), 1u);
  EXPECT_EQ(done[0].error, kErrNoHandler);
}

TEST(Requests, RequestToADeadTargetFailsWithTimeout) {
  TransportConfig config;
  config.peer_timeout_ns = 50 * kMs;
  config.max_rto_ns = 10 * kMs;
  Harness h(3, config);
  std::vector<uint8_t> result(8);
  // Let the request arrive, then cut the target off before it answers.
  h.link.keep = [&](size_t from, const wire::FrameHeader& header) {
    return !(from == h.b && header.opcode == static_cast<uint8_t>(wire::Opcode::kResponse));
  };
  ASSERT_EQ(h.request("R8", result, ctx(1)), 0);
  auto done = h.wait(1, 2'000 * kMs);
  ASSERT_EQ(done.size(), 1u) << "the request hung";
  EXPECT_EQ(done[0].error, kErrTimedOut);
  EXPECT_EQ(h.target.calls, 1) << "executed once, its response lost: reported failed";
}

TEST(Requests, RequestsWaitingForAnswersFailWhenTheTargetRestarts) {
  Harness h(4);
  std::vector<uint8_t> warm(4);
  ASSERT_EQ(h.request("R4", warm, ctx(1)), 0);
  ASSERT_EQ(h.wait(1, 100 * kMs).size(), 1u);
  h.link.keep = [&](size_t from, const wire::FrameHeader& header) {
    return !(from == h.b && header.opcode == static_cast<uint8_t>(wire::Opcode::kResponse));
  };
  std::vector<uint8_t> result(8);
  ASSERT_EQ(h.request("R8", result, ctx(2)), 0);
  for (int i = 0; i < 200; ++i) h.link.step();  // delivered and acked, no answer
  h.link.keep = nullptr;
  h.link.restart(h.b, 0xB2);
  h.attach();
  // The next request meets the new incarnation: the old one fails.
  std::vector<uint8_t> again(8);
  ASSERT_EQ(h.request("R8", again, ctx(3)), 0);
  auto done = h.wait(2, 1'000 * kMs);
  ASSERT_EQ(done.size(), 2u);
  std::map<void*, int> errors;
  for (const auto& c : done) errors[c.context] = c.error;
  EXPECT_EQ(errors[ctx(2)], kErrPeerReset);
}

TEST(Requests, ALateResponseToAFailedRequestIsIgnored) {
  // A gives up waiting for an answer (the target's responses are held
  // back); when the answer finally arrives it matches nothing, is counted,
  // and the stream goes on.
  TransportConfig patient;  // B must outlive A's wait
  Harness h(5, patient);
  TransportConfig impatient;
  impatient.peer_timeout_ns = 50 * kMs;
  h.a = h.link.add(impatient, kMacA, 1, 0xA5);
  std::vector<uint8_t> result(4);
  h.link.keep = [&](size_t from, const wire::FrameHeader& header) {
    return !(from == h.b && header.opcode == static_cast<uint8_t>(wire::Opcode::kResponse));
  };
  ASSERT_EQ(h.request("R4", result, ctx(1)), 0);
  auto done = h.wait(1, 1'000 * kMs);
  ASSERT_EQ(done.size(), 1u);
  EXPECT_EQ(done[0].error, kErrTimedOut);
  const uint64_t bad_before = h.link.engine(h.a).stats().bad_frames;
  h.link.keep = nullptr;
  for (int i = 0; i < 20'000 && h.link.engine(h.a).stats().bad_frames == bad_before; ++i)
    h.link.step();
  EXPECT_EQ(h.link.engine(h.a).stats().bad_frames, bad_before + 1) << "the late answer";
  EXPECT_TRUE(h.link.engine(h.a).completions().empty());
  std::vector<uint8_t> after(4);
  ASSERT_EQ(h.request("R4", after, ctx(2)), 0);
  done = h.wait(1, 1'000 * kMs);
  ASSERT_EQ(done.size(), 1u);
  EXPECT_EQ(done[0].error, 0);
  EXPECT_EQ(h.target.calls, 2);
}

}  // namespace
TEST(Requests, LargeResponseBuffersAreReusedOnceAcknowledged) {
  // A target that answers from engine-lent buffers (Engine::response_bytes):
  // the second 1 MiB answer is built in the first one's buffer, given back
  // when the initiator acknowledged it, and both arrive intact.
  Harness h(3);
  std::vector<const uint8_t*> lent;
  h.link.engine(h.b).set_request_handler([&](uint64_t, const uint8_t* bytes, size_t, size_t) {
    Response r;
    r.data = h.link.engine(h.b).response_bytes(size_t{1} << 20);
    lent.push_back(r.data.data());
    std::memset(r.data.data(), bytes[0], r.data.size());
    return r;
  });
  for (uint8_t round : {uint8_t{'x'}, uint8_t{'y'}}) {
    std::vector<uint8_t> result(size_t{1} << 20, 0);
    ASSERT_EQ(h.request(std::string(1, static_cast<char>(round)), result, ctx(round)), 0);
    auto done = h.wait(1, 2'000 * kMs);
    ASSERT_EQ(done.size(), 1u);
    EXPECT_EQ(done[0].error, 0);
    EXPECT_EQ(done[0].len, result.size());
    for (size_t i = 0; i < result.size(); i += 4093) ASSERT_EQ(result[i], round) << i;
    for (int i = 0; i < 100; ++i) h.link.step();  // the last acknowledgement
  }
  ASSERT_EQ(lent.size(), 2u);
  EXPECT_EQ(lent[0], lent[1]) << "the second answer took a fresh megabyte from the heap";
}

TEST(Requests, APlacedRequestGoesStraightToItsTargetInOrderOverALossyLink) {
  // Expect: requests whose first byte is 'P' are placed after that byte
  // into `region`: the handler sees the 1-byte head and the count placed,
  // the bytes arrive whole and in order through 10 % drop and reorder, and
  // the engine never buffers more than the head; a request the placer
  // declines is assembled whole as before.
  Harness h(11);
  h.link.faults().drop = 0.10;
  h.link.faults().reorder = 0.10;
  std::vector<uint8_t> region(200000, 0);
  std::vector<std::pair<size_t, size_t>> seen;  // (head length, placed)
  size_t most_buffered = 0;
  Engine& target = h.link.engine(h.b);
  target.set_request_placer([&](uint64_t, const uint8_t* first, size_t, size_t) {
    return first[0] == 'P' ? Placement{1, region.data()} : Placement{};
  });
  target.set_request_handler([&](uint64_t, const uint8_t* bytes, size_t length, size_t placed) {
    seen.emplace_back(length, placed);
    Response r;
    r.status = bytes[0] == 'P' || bytes[0] == 'W' ? 0 : 22;
    return r;
  });
  std::string placed_request(1 + 150000, 'P');
  for (size_t i = 1; i < placed_request.size(); ++i)
    placed_request[i] = static_cast<char>('a' + i % 23);
  std::vector<uint8_t> none(1);
  ASSERT_EQ(h.request(placed_request, none, ctx(1)), 0);
  ASSERT_EQ(h.request("Wassembled", none, ctx(2)), 0);
  std::vector<Completion> done;
  while (done.size() < 2 && h.link.now() < 20'000 * kMs) {
    auto more = h.wait(1, 1 * kMs);
    done.insert(done.end(), more.begin(), more.end());
    most_buffered = std::max(most_buffered, target.unexpected_bytes());
  }
  ASSERT_EQ(done.size(), 2u);
  for (const auto& c : done) EXPECT_EQ(c.error, 0);
  ASSERT_EQ(seen.size(), 2u);
  EXPECT_EQ(seen[0], std::make_pair(size_t{1}, size_t{150000}));
  EXPECT_EQ(seen[1], std::make_pair(size_t{10}, size_t{0}));
  for (size_t i = 0; i < 150000; ++i)
    ASSERT_EQ(region[i], static_cast<uint8_t>('a' + (i + 1) % 23)) << i;
  EXPECT_EQ(region[150000], 0) << "placed past the request";
  EXPECT_LE(most_buffered, 1000u) << "the placed request was buffered";
}

}  // namespace ofi_dpdk::proto
