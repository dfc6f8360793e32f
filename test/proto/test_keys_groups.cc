// Network (authorization) keys, peer groups and address queues in the
// transport engine, over the in-memory lossy link in simulated time:
//   - an engine takes only frames carrying a key it accepts; others are
//     dropped unanswered (no ACK, no RESET) and counted in wrong_key;
//   - a connection's frames carry the key its first send (or first frame)
//     gave it, and receives may ask for one key (FI_AUTH_KEY);
//   - a message reaches only a receive posted for its peer group;
//   - the sender is named by (MAC, src_ep_queue), which a context of a
//     scalable endpoint sets to its endpoint's queue.
// Each test states what it expects in `// Expect:` comments.
#include <gtest/gtest.h>

#include <functional>
#include <vector>

#include "lib/proto/engine_state.h"
#include "test/proto/lossy_link.h"

namespace ofi_dpdk::proto {
namespace {

constexpr uint8_t kMacA[6] = {0x02, 0x00, 0x00, 0x00, 0x00, 0x2A};
constexpr uint8_t kMacB[6] = {0x02, 0x00, 0x00, 0x00, 0x00, 0x2B};
constexpr uint8_t kMacC[6] = {0x02, 0x00, 0x00, 0x00, 0x00, 0x2C};
constexpr uint64_t kMs = 1'000'000;
constexpr uint32_t kJobKey = 0x1234;
constexpr uint32_t kOtherJobKey = 0x9876;

void* ctx(uintptr_t n) {
  return reinterpret_cast<void*>(n);
}

// Senders a and c, receiver b; completions gathered per engine.
class KeyNet {
 public:
  explicit KeyNet(uint64_t seed) : link(seed) {
    TransportConfig config;
    config.peer_timeout_ns = 50 * kMs;
    config.connect_timeout_ns = 50 * kMs;  // a HELLO nobody answers ends as soon
    a = link.add(config, kMacA, 3, 0xA1A1A1A1);
    b = link.add(config, kMacB, 4, 0xB1B1B1B1);
    c = link.add(config, kMacC, 5, 0xC1C1C1C1);
    done.resize(link.size());
  }
  Engine& engine(size_t i) { return link.engine(i); }
  void drain() {
    for (size_t e = 0; e < link.size(); ++e) {
      for (const Completion& d : engine(e).completions()) done[e].push_back(d);
      engine(e).completions().clear();
    }
  }
  bool run_until(const std::function<bool()>& ready, uint64_t max_ns = 200 * kMs) {
    const uint64_t end = link.now() + max_ns;
    drain();
    while (!ready()) {
      if (link.now() >= end) return false;
      link.step();
      drain();
    }
    return true;
  }
  int send(size_t from, const std::vector<uint8_t>& bytes, void* context, uint32_t key,
           uint32_t group = 0) {
    iovec iov{const_cast<uint8_t*>(bytes.data()), bytes.size()};
    SendRequest s;
    s.iov = &iov;
    s.iov_count = 1;
    s.context = context;
    s.group = group;
    PeerAddress to = link.address(b);
    to.auth_key = key;
    return engine(from).send(to, s, link.now());
  }
  int post(std::vector<uint8_t>& buf, void* context, uint32_t group = 0,
           const uint32_t* key = nullptr) {
    RecvRequest r;
    r.iov[0] = {buf.data(), buf.size()};
    r.iov_count = 1;
    r.context = context;
    r.group = group;
    if (key != nullptr) {
      r.match_auth_key = true;
      r.auth_key = *key;
    }
    return engine(b).post_recv(r, link.now());
  }
  // The completion with `context` at engine e, or nullptr.
  const Completion* find(size_t e, void* context) {
    for (const Completion& d : done[e])
      if (d.context == context) return &d;
    return nullptr;
  }

  sim::LossyLink link;
  size_t a = 0, b = 0, c = 0;
  std::vector<std::vector<Completion>> done;
};

TEST(NetworkKeys, FramesWithAKeyTheReceiverWasNotEnabledWithNeverReachIt) {
  // Expect: b accepts only key 0 (the default); a's frames carry kJobKey:
  // b counts them as wrong_key, sends nothing back at all (a learns nothing,
  // its send fails by connect timeout: not even its HELLO is answered), and
  // the posted receive stays empty.
  KeyNet net(1);
  std::vector<uint8_t> in(64, 0xEE);
  ASSERT_EQ(net.post(in, ctx(20)), 0);
  uint64_t frames_from_b = 0;
  net.link.tap = [&](size_t from, size_t, const wire::FrameHeader&) {
    if (from == net.b) ++frames_from_b;
  };
  const std::vector<uint8_t> out(64, 0x11);
  ASSERT_EQ(net.send(net.a, out, ctx(1), kJobKey), 0);
  ASSERT_TRUE(net.run_until([&] { return net.find(net.a, ctx(1)) != nullptr; }));
  EXPECT_EQ(net.find(net.a, ctx(1))->error, kErrTimedOut);
  EXPECT_GT(net.engine(net.b).stats().wrong_key, 0u);
  EXPECT_EQ(net.engine(net.b).stats().resets_sent, 0u);
  EXPECT_EQ(frames_from_b, 0u) << "not even a RESET may answer another job";
  EXPECT_EQ(net.find(net.b, ctx(20)), nullptr);
  EXPECT_EQ(in[0], 0xEE);
}

TEST(NetworkKeys, AcceptedKeyFlowsBothWaysAndIsReported) {
  // Expect: with b enabled for kJobKey, a's message arrives, every frame in
  // both directions carries kJobKey (acks too), and the receive's
  // completion reports the key.
  KeyNet net(2);
  net.engine(net.b).set_accepted_keys({kJobKey});
  net.engine(net.a).set_accepted_keys({kJobKey});
  std::vector<uint32_t> keys_seen;
  net.link.tap = [&](size_t, size_t, const wire::FrameHeader& h) {
    keys_seen.push_back(h.auth_key);
  };
  std::vector<uint8_t> in(3000, 0xEE);
  ASSERT_EQ(net.post(in, ctx(20)), 0);
  const std::vector<uint8_t> out(3000, 0x22);  // several segments
  ASSERT_EQ(net.send(net.a, out, ctx(1), kJobKey), 0);
  ASSERT_TRUE(net.run_until(
      [&] { return net.find(net.a, ctx(1)) != nullptr && net.find(net.b, ctx(20)) != nullptr; }));
  EXPECT_EQ(net.find(net.a, ctx(1))->error, 0);
  const Completion* got = net.find(net.b, ctx(20));
  EXPECT_EQ(got->error, 0);
  EXPECT_EQ(got->len, out.size());
  EXPECT_EQ(got->auth_key, kJobKey);
  EXPECT_EQ(in, out);
  ASSERT_FALSE(keys_seen.empty());
  for (uint32_t key : keys_seen) EXPECT_EQ(key, kJobKey);
  EXPECT_EQ(net.engine(net.b).stats().wrong_key, 0u);
}

TEST(NetworkKeys, AReceiveForOneKeyTakesOnlyThatKeysMessages) {
  // Expect: b accepts two keys; a sends with kJobKey, c with kOtherJobKey.
  // A receive asking for kOtherJobKey takes c's message even though a's
  // arrived first; a plain receive then takes a's.
  KeyNet net(3);
  net.engine(net.b).set_accepted_keys({kJobKey, kOtherJobKey});
  net.engine(net.a).set_accepted_keys({kJobKey});
  net.engine(net.c).set_accepted_keys({kOtherJobKey});
  const std::vector<uint8_t> from_a(100, 0xAA), from_c(100, 0xCC);
  ASSERT_EQ(net.send(net.a, from_a, ctx(1), kJobKey), 0);
  ASSERT_TRUE(net.run_until([&] { return net.find(net.a, ctx(1)) != nullptr; }));
  ASSERT_EQ(net.send(net.c, from_c, ctx(2), kOtherJobKey), 0);
  ASSERT_TRUE(net.run_until([&] { return net.find(net.c, ctx(2)) != nullptr; }));
  std::vector<uint8_t> keyed(100), plain(100);
  ASSERT_EQ(net.post(keyed, ctx(20), 0, &kOtherJobKey), 0);
  ASSERT_EQ(net.post(plain, ctx(21)), 0);
  net.drain();
  ASSERT_NE(net.find(net.b, ctx(20)), nullptr);
  ASSERT_NE(net.find(net.b, ctx(21)), nullptr);
  EXPECT_EQ(keyed, from_c);
  EXPECT_EQ(net.find(net.b, ctx(20))->auth_key, kOtherJobKey);
  EXPECT_EQ(plain, from_a);
  EXPECT_EQ(net.find(net.b, ctx(21))->auth_key, kJobKey);
}

TEST(PeerGroups, AReceiveTakesOnlyMessagesSentToItsGroup) {
  // Expect: a sends to group 7, then to group 0, then to group 9.  A
  // receive posted for group 0 before anything arrived skips the group-7
  // message and takes the group-0 one; receives posted later for 9 and 7
  // take those from the unexpected list; a second group-0 receive takes
  // nothing.
  KeyNet net(4);
  std::vector<uint8_t> g0(10, 0), g7(10, 0), g9(10, 0), g0_again(10, 0xEE);
  ASSERT_EQ(net.post(g0, ctx(20), 0), 0);
  const std::vector<uint8_t> m7(10, 7), m0(10, 1), m9(10, 9);
  ASSERT_EQ(net.send(net.a, m7, ctx(1), 0, 7), 0);
  ASSERT_EQ(net.send(net.a, m0, ctx(2), 0, 0), 0);
  ASSERT_EQ(net.send(net.a, m9, ctx(3), 0, 9), 0);
  ASSERT_TRUE(net.run_until([&] { return net.find(net.a, ctx(3)) != nullptr; }));
  ASSERT_NE(net.find(net.b, ctx(20)), nullptr);
  EXPECT_EQ(g0, m0) << "the group-0 receive skipped the group-7 message";
  ASSERT_EQ(net.post(g9, ctx(21), 9), 0);
  ASSERT_EQ(net.post(g7, ctx(22), 7), 0);
  ASSERT_EQ(net.post(g0_again, ctx(23), 0), 0);
  net.drain();
  ASSERT_NE(net.find(net.b, ctx(21)), nullptr);
  ASSERT_NE(net.find(net.b, ctx(22)), nullptr);
  EXPECT_EQ(g9, m9);
  EXPECT_EQ(g7, m7);
  EXPECT_EQ(net.find(net.b, ctx(23)), nullptr);
  EXPECT_EQ(g0_again[0], 0xEE);
}

TEST(AddressQueue, TheSenderIsNamedByItsAddressQueueNotItsOwnQueue) {
  // Expect: engine a (queue 3) says its address queue is 1, as context 2 of
  // a scalable endpoint at queue 1 does: b reports the source as (MAC a, 1),
  // and a receive directed to (MAC a, 1) matches while one directed to
  // (MAC a, 3) does not.
  KeyNet net(5);
  net.engine(net.a).set_address_queue(1);
  const uint64_t address = peer_key(kMacA, 1);
  const uint64_t own_queue = peer_key(kMacA, 3);
  const std::vector<uint8_t> out(50, 0x33);
  ASSERT_EQ(net.send(net.a, out, ctx(1), 0), 0);
  ASSERT_TRUE(net.run_until([&] { return net.find(net.a, ctx(1)) != nullptr; }));
  std::vector<uint8_t> wrong(50), right(50);
  RecvRequest r;
  r.iov[0] = {wrong.data(), wrong.size()};
  r.iov_count = 1;
  r.context = ctx(20);
  r.any_source = false;
  r.source_key = own_queue;
  ASSERT_EQ(net.engine(net.b).post_recv(r, net.link.now()), 0);
  r.iov[0] = {right.data(), right.size()};
  r.context = ctx(21);
  r.source_key = address;
  ASSERT_EQ(net.engine(net.b).post_recv(r, net.link.now()), 0);
  net.drain();
  EXPECT_EQ(net.find(net.b, ctx(20)), nullptr);
  ASSERT_NE(net.find(net.b, ctx(21)), nullptr);
  EXPECT_EQ(net.find(net.b, ctx(21))->source_key, address);
  EXPECT_EQ(right, out);
}

TEST(AddressQueue, AnAddressQueueNoContextCouldHaveIsRefused) {
  // Expect: a sender naming as its address a queue above its own, or one
  // kMaxAddressSpan or more below it, is not taken: its frames count as bad
  // and nothing reaches b, so it cannot pass itself off as another endpoint
  // of its port.
  for (const uint16_t claimed : {uint16_t{4}, uint16_t{40}}) {
    KeyNet net(6);
    net.engine(net.a).set_address_queue(claimed);
    const std::vector<uint8_t> out(50, 0x44);
    std::vector<uint8_t> in(50);
    RecvRequest r;
    r.iov[0] = {in.data(), in.size()};
    r.iov_count = 1;
    r.context = ctx(30);
    ASSERT_EQ(net.engine(net.b).post_recv(r, net.link.now()), 0);
    ASSERT_EQ(net.send(net.a, out, ctx(1), 0), 0);
    net.run_until([] { return false; }, 50'000'000);
    EXPECT_GT(net.engine(net.b).stats().bad_frames, 0u) << claimed;
    EXPECT_EQ(net.engine(net.b).stats().messages_received, 0u) << claimed;
    EXPECT_EQ(net.find(net.b, ctx(30)), nullptr) << claimed;
  }
}

}  // namespace
}  // namespace ofi_dpdk::proto
