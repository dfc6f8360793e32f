// Control messages (wire::kFlagControl, FI_EP_MSG's connection management)
// in the transport engine, over the lossy in-memory link:
//   - a control message reaches the control handler whole, exactly once,
//     with the sender's address and session, and never a posted receive;
//   - it keeps its place among the messages of its connection, over loss
//     and reordering (a SHUTDOWN after data comes after that data);
//   - one that is not a whole untagged message is dropped and counted;
//   - with a sender filter, a refused sender's messages are consumed and
//     dropped (the stream goes on) and its requests answered
//     kErrNoHandler, while control messages still pass.
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "lib/proto/engine_state.h"
#include "test/proto/lossy_link.h"

namespace ofi_dpdk::proto {
namespace {

constexpr uint8_t kMacA[6] = {0x02, 0x00, 0x00, 0x00, 0x00, 0x4A};
constexpr uint8_t kMacB[6] = {0x02, 0x00, 0x00, 0x00, 0x00, 0x4B};

std::vector<uint8_t> control_message(wire::ControlKind kind, const std::string& data) {
  std::vector<uint8_t> bytes(sizeof(wire::ControlBody) + data.size());
  wire::ControlBody body{};
  body.kind = static_cast<uint8_t>(kind);
  body.data_len = htobe16(static_cast<uint16_t>(data.size()));
  std::memcpy(bytes.data(), &body, sizeof(body));
  std::memcpy(bytes.data() + sizeof(body), data.data(), data.size());
  return bytes;
}

struct Seen {
  std::string what;  // "control:<data>" or "recv:<bytes>"
  uint64_t source_key = 0;
  uint32_t session = 0;
};

class ControlNet {
 public:
  explicit ControlNet(uint64_t seed) : link(seed) {
    TransportConfig config;
    a = link.add(config, kMacA, 1, 0xA1A1A1A1);
    b = link.add(config, kMacB, 2, 0xB1B1B1B1);
    link.engine(b).set_control_handler([this](uint64_t key, uint32_t session, const uint8_t* body,
                                              size_t length) {
      drain();  // the receives completed before it, in the same pass
      wire::ControlBody head;
      std::memcpy(&head, body, sizeof(head));
      seen.push_back(
          {"control:" + std::string(reinterpret_cast<const char*>(body) + 8, length - sizeof(head)),
           key, session});
    });
  }
  int send(const std::vector<uint8_t>& bytes, bool control, bool tagged = false) {
    kept.push_back(bytes);
    iovec iov{kept.back().data(), kept.back().size()};
    SendRequest s;
    s.iov = &iov;
    s.iov_count = 1;
    s.control = control;
    s.tagged = tagged;
    s.completion = false;
    return link.engine(a).send(link.address(b), s, link.now());
  }
  void post(size_t count) {
    for (size_t i = 0; i < count; ++i) {
      buffers.emplace_back(64);
      RecvRequest r;
      r.iov[0] = {buffers.back().data(), buffers.back().size()};
      r.iov_count = 1;
      r.context = &buffers.back();
      ASSERT_EQ(link.engine(b).post_recv(r, link.now()), 0);
    }
  }
  void drain() {
    for (const Completion& d : link.engine(b).completions())
      if (d.kind == Completion::Kind::kRecv)
        seen.push_back(
            {"recv:" + std::string(static_cast<const char*>(d.buf), d.len), d.source_key, 0});
    link.engine(b).completions().clear();
  }
  void run(int steps) {
    for (int i = 0; i < steps; ++i) {
      link.step();
      drain();
      link.engine(a).completions().clear();
    }
  }

  sim::LossyLink link;
  size_t a = 0, b = 0;
  std::deque<std::vector<uint8_t>> kept;
  std::deque<std::vector<char>> buffers;
  std::vector<Seen> seen;
};

std::vector<uint8_t> text(const std::string& s) {
  return {s.begin(), s.end()};
}

TEST(Control, ReachesTheHandlerInOrderWithTheMessagesAroundIt) {
  for (uint64_t seed = 1; seed <= 20; ++seed) {
    ControlNet net(seed);
    net.link.faults().drop = 0.2;
    net.link.faults().reorder = 0.2;
    net.link.faults().duplicate = 0.1;
    net.post(2);
    ASSERT_EQ(net.send(control_message(wire::ControlKind::kConnect, "hello"), true), 0);
    ASSERT_EQ(net.send(text("first"), false), 0);
    ASSERT_EQ(net.send(text("second"), false), 0);
    ASSERT_EQ(net.send(control_message(wire::ControlKind::kShutdown, ""), true), 0);
    for (int i = 0; i < 1'000'000 && net.seen.size() < 4; ++i) net.run(1);  // 5 s at most
    ASSERT_EQ(net.seen.size(), 4u) << "seed " << seed;
    EXPECT_EQ(net.seen[0].what, "control:hello");
    EXPECT_EQ(net.seen[1].what, "recv:first");
    EXPECT_EQ(net.seen[2].what, "recv:second");
    EXPECT_EQ(net.seen[3].what, "control:");
    EXPECT_EQ(net.seen[0].source_key, net.link.key(net.a));
    EXPECT_EQ(net.seen[0].session, net.link.session(net.a));
    EXPECT_EQ(net.link.engine(net.b).stats().control_messages, 2u);
    // Expect: no posted receive was spent on a control message.
    EXPECT_EQ(net.link.engine(net.b).posted_recvs(), 0u);
  }
}

TEST(Control, OneThatIsNotAWholeUntaggedMessageIsDropped) {
  ControlNet net(7);
  net.post(1);
  // Tagged: not a control message's form.
  ASSERT_EQ(net.send(control_message(wire::ControlKind::kConnect, "x"), true, /*tagged=*/true), 0);
  // Too short to hold a ControlBody.
  ASSERT_EQ(net.send(text("abc"), true), 0);
  // More connection data than the protocol allows.
  ASSERT_EQ(net.send(control_message(wire::ControlKind::kAccept,
                                     std::string(wire::kMaxConnectionData + 1, 'd')),
                     true),
            0);
  ASSERT_EQ(net.send(text("after"), false), 0);
  net.run(2000);
  // Expect: the stream went on; only the message after them arrived.
  ASSERT_EQ(net.seen.size(), 1u);
  EXPECT_EQ(net.seen[0].what, "recv:after");
  EXPECT_EQ(net.link.engine(net.b).stats().bad_frames, 3u);
  EXPECT_EQ(net.link.engine(net.b).stats().control_messages, 0u);
}

TEST(Control, ARefusedSendersMessagesAndRequestsAreNotTaken) {
  ControlNet net(9);
  bool accept = false;
  net.link.engine(net.b).set_sender_filter([&](uint64_t) { return accept; });
  net.link.engine(net.b).set_request_handler(
      [](uint64_t, const uint8_t*, size_t, size_t) { return Response{}; });
  net.post(1);
  ASSERT_EQ(net.send(text("refused, one segment"), false), 0);
  ASSERT_EQ(net.send(std::vector<uint8_t>(5000, 'r'), false), 0);  // several segments
  ASSERT_EQ(net.send(control_message(wire::ControlKind::kAccept, "ok"), true), 0);
  std::vector<uint8_t> request_bytes(16, 1);
  iovec iov{request_bytes.data(), request_bytes.size()};
  SendRequest request;
  request.iov = &iov;
  request.iov_count = 1;
  request.request = true;
  request.context = &request_bytes;
  ASSERT_EQ(net.link.engine(net.a).send(net.link.address(net.b), request, net.link.now()), 0);
  int status = -1;
  for (int i = 0; i < 2000 && status < 0; ++i) {
    net.link.step();
    net.drain();
    for (const Completion& d : net.link.engine(net.a).completions())
      if (d.context == &request_bytes) status = d.error;
    net.link.engine(net.a).completions().clear();
  }
  EXPECT_EQ(status, kErrNoHandler);
  // Expect: the control message passed, nothing reached the receive.
  ASSERT_EQ(net.seen.size(), 1u);
  EXPECT_EQ(net.seen[0].what, "control:ok");
  EXPECT_EQ(net.link.engine(net.b).stats().refused_messages, 2u);
  EXPECT_EQ(net.link.engine(net.b).posted_recvs(), 1u);
  // Once accepted, the same stream delivers again.
  accept = true;
  ASSERT_EQ(net.send(text("welcome"), false), 0);
  net.run(2000);
  ASSERT_EQ(net.seen.size(), 2u);
  EXPECT_EQ(net.seen[1].what, "recv:welcome");
}

}  // namespace
}  // namespace ofi_dpdk::proto
