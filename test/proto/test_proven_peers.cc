// The transport against peers that complete a handshake and then misbehave
// (issue "Hardening, second round"): segments parked ahead of a gap, a table
// full of such connections, response bytes a reader makes the target hold,
// sends that wait for receives a peer never posts, replays of an evicted
// connection's segments, and delivery notices lost with a receive half.
// Engines run over the in-memory link (lossy_link.h) in simulated time;
// stations a test plays complete real handshakes (the token comes from the
// engine's own HELLO_ACK).  Each test says what it expects in `// Expect:`
// comments.
#include <gtest/gtest.h>

#include <endian.h>

#include <algorithm>
#include <cstring>
#include <vector>

#include "lib/proto/engine_state.h"
#include "test/proto/engine_pair.h"
#include "test/proto/lossy_link.h"

namespace ofi_dpdk::proto {
namespace {

using sim::LossyLink;
using sim::Pair;

constexpr uint64_t kMs = 1'000'000;
constexpr uint64_t kSec = 1'000'000'000;

void* ctx(uintptr_t n) {
  return reinterpret_cast<void*>(n);
}

// A sender a test plays by hand: its address, incarnation and connection.
struct Station {
  uint8_t mac[6];
  uint16_t queue = 0;
  uint32_t session = 0;
  uint16_t conn = 1;
  uint64_t token = 0;  // granted by the engine's HELLO_ACK
};

Station station(uint16_t n) {
  Station s{{0x02, 0x5E, 0, 0, static_cast<uint8_t>(n >> 8), static_cast<uint8_t>(n)}};
  s.queue = 0;
  s.session = 0x5E000000u + n;
  return s;
}

wire::FrameHeader header_from(const Station& s, wire::Opcode opcode, const Engine& to) {
  wire::FrameHeader h{};
  h.version = wire::kWireVersion;
  h.opcode = static_cast<uint8_t>(opcode);
  h.src_queue = s.queue;
  h.src_ep_queue = s.queue;
  h.src_session = s.session;
  h.dst_session = to.session();
  h.conn = s.conn;
  return h;
}

// Completes `s`'s handshake with `e`: the token its segments then carry.
// Takes e's outbox (the HELLO_ACK) and leaves it empty.
uint32_t handshake(Engine& e, Station& s, uint64_t now) {
  wire::FrameHeader hello = header_from(s, wire::Opcode::kHello, e);
  hello.dst_session = 0;
  hello.token = 0xC0DE0000u + s.conn;
  hello.payload_len = hello.msg_len = sizeof(wire::HandshakeBody);
  wire::HandshakeBody body{};
  body.max_payload = htobe32(1024);
  e.on_frame(Segment{s.mac, &hello, reinterpret_cast<const uint8_t*>(&body)}, now);
  for (const OutFrame& out : e.outbox()) {
    if (out.header.opcode != static_cast<uint8_t>(wire::Opcode::kHelloAck) ||
        std::memcmp(out.dst_mac, s.mac, 6) != 0)
      continue;
    std::memcpy(&body, out.body, sizeof(body));
    s.token = be64toh(body.token);
  }
  e.frames_sent();
  return s.token;
}

// One segment of a one-byte tagged message at `seq` on s's connection, with
// a tag nobody receives.
void segment(Engine& e, const Station& s, uint32_t seq, uint64_t now) {
  wire::FrameHeader h = header_from(s, wire::Opcode::kTagged, e);
  h.flags = wire::kFlagLastSegment;
  h.token = s.token;
  h.seq = seq;
  h.msg_id = seq;
  h.msg_len = h.payload_len = 1;
  h.tag = 0xBAD0BAD0;
  const uint8_t payload = 0x77;
  e.on_frame(Segment{s.mac, &h, &payload}, now);
}

uint32_t held_by(const Engine& e, const Station& s) {
  const Connection* c = e.find(peer_key(s.mac, s.queue));
  return c == nullptr ? 0 : c->rx_buffered;
}

// ---------------------------------------------------------------------------
// Segments parked ahead of a gap.

TEST(ParkedSegments, AgeOutOnceTheStreamStopsMoving) {
  // Expect: 20 stations complete a handshake and each park one segment at
  // seq 2 (seq 1 never comes).  B holds them (20 chunks) until its hold
  // timeout (200 ms) passes without the streams moving; then it holds none,
  // counts them in held_expired, and each connection is evictable.
  TransportConfig config;
  config.hold_timeout_ns = 200 * kMs;
  config.peer_timeout_ns = 1 * kSec;
  const uint8_t mac_b[6] = {0x02, 0, 0, 0, 0, 0x0B};
  Engine b(config, mac_b, 0, 0xB0000001);
  uint64_t now = 1000;
  std::vector<Station> stations;
  for (uint16_t i = 0; i < 20; ++i) {
    stations.push_back(station(i));
    ASSERT_NE(handshake(b, stations.back(), now), 0u);
    segment(b, stations.back(), wire::kInitialSeq + 1, now);
    b.frames_sent();
  }
  ASSERT_EQ(b.connection_count(), 20u);
  for (const Station& s : stations) EXPECT_EQ(held_by(b, s), 1u);
  for (now += 10 * kMs; now < 150 * kMs; now += 10 * kMs) {
    b.poll(now);
    b.frames_sent();
  }
  EXPECT_EQ(held_by(b, stations[0]), 1u) << "held while younger than the hold timeout";
  for (; now < 300 * kMs; now += 10 * kMs) {
    b.poll(now);
    b.frames_sent();
  }
  for (const Station& s : stations) EXPECT_EQ(held_by(b, s), 0u);
  EXPECT_EQ(b.stats().held_expired, 20u);
}

TEST(ParkedSegments, ATableFullOfThemLetsATalkingPeerIn) {
  // Expect: B holds at most 8 connections; 8 stations fill them, each
  // parking a segment ahead of a gap, and keep sending (they are recent, so
  // nothing is idle, and the hold timeout is far).  A peer that completes
  // its handshake and talks (A's message) still gets in: an unproven
  // connection is evicted for it, and the evicted station's next segment
  // hears RESET.
  TransportConfig config;
  TransportConfig target;
  target.max_connections = 8;
  target.hold_timeout_ns = 60 * kSec;
  Pair p(61, config, target);
  Engine& b = p.engine(p.b);
  std::vector<Station> stations;
  for (uint16_t i = 0; i < 8; ++i) {
    stations.push_back(station(i));
    ASSERT_NE(handshake(b, stations.back(), p.link.now()), 0u);
    segment(b, stations.back(), wire::kInitialSeq + 1, p.link.now());
    p.link.step();  // each opened a little later than the one before
  }
  ASSERT_EQ(b.connection_count(), 8u);
  std::vector<uint8_t> in(8);
  ASSERT_EQ(p.post(p.b, &in, ctx(1)), 0);
  ASSERT_EQ(p.send(p.a, p.b, std::vector<uint8_t>(8, 0x42), ctx(2)), 0);
  ASSERT_TRUE(p.wait(p.b, 1, 200 * kMs)) << "A was locked out";
  EXPECT_EQ(p.done[p.b][0].error, 0);
  EXPECT_EQ(in, std::vector<uint8_t>(8, 0x42));
  EXPECT_EQ(b.stats().connections_evicted, 1u);
  EXPECT_EQ(b.stats().connections_refused, 0u);
  EXPECT_LE(b.connection_count(), 8u);
  // The evicted one (the oldest) is answered RESET on its next segment.
  const Station& evicted = stations[0];
  ASSERT_EQ(b.find(peer_key(evicted.mac, evicted.queue)), nullptr);
  const uint64_t resets = b.stats().resets_sent;
  segment(b, evicted, wire::kInitialSeq + 2, p.link.now());
  EXPECT_EQ(b.stats().resets_sent, resets + 1);
  EXPECT_EQ(b.find(peer_key(evicted.mac, evicted.queue)), nullptr);
}

TEST(ParkedSegments, AConnectionBelowItsShareTakesAChunkFromTheRichest) {
  // Expect: B's reorder pool holds 8 chunks.  Station X parks 8 segments
  // (seq 2 to 9) and spends the pool; station Y's one segment ahead of its
  // gap is still held: a chunk is taken from X (its furthest segment), so
  // X holds 7 and Y 1.  A third station, Z, with as much as Y gets none
  // from Y (a share is not taken from one no richer).
  TransportConfig config;
  config.max_payload = 500;
  config.reorder_bytes = 8 * (sizeof(HeldSegment) + 500);
  const uint8_t mac_b[6] = {0x02, 0, 0, 0, 0, 0x0B};
  Engine b(config, mac_b, 0, 0xB0000001);
  Station x = station(1), y = station(2), z = station(3);
  for (Station* s : {&x, &y, &z}) ASSERT_NE(handshake(b, *s, 1000), 0u);
  for (uint32_t seq = wire::kInitialSeq + 1; seq <= wire::kInitialSeq + 8; ++seq)
    segment(b, x, seq, 2000);
  ASSERT_EQ(held_by(b, x), 8u);
  EXPECT_EQ(b.reorder_pool_bytes(), config.reorder_bytes);
  segment(b, y, wire::kInitialSeq + 1, 3000);
  EXPECT_EQ(held_by(b, y), 1u);
  EXPECT_EQ(held_by(b, x), 7u);
  EXPECT_EQ(b.find(peer_key(x.mac, x.queue))->rx_slots[(wire::kInitialSeq + 8) & (kMaxWindow - 1)],
            nullptr)
      << "X gave up its furthest segment";
  EXPECT_EQ(b.stats().held_reclaimed, 1u);
  // Y and Z each hold what X can spare, until X is no richer than them.
  for (uint32_t seq = wire::kInitialSeq + 2; seq <= wire::kInitialSeq + 5; ++seq) {
    segment(b, y, seq, 4000);
    segment(b, z, seq, 4000);
  }
  EXPECT_LE(std::max({held_by(b, x), held_by(b, y), held_by(b, z)}) -
                std::min({held_by(b, x), held_by(b, y), held_by(b, z)}),
            1u);
  EXPECT_EQ(held_by(b, x) + held_by(b, y) + held_by(b, z), 8u);
  EXPECT_LE(b.reorder_pool_bytes(), config.reorder_bytes);
}

TEST(ParkedSegments, AnHonestGapIsRepairedAfterTheReceiverDroppedWhatItHeld) {
  // Expect: A's 20-segment message loses its first segment for 150 ms (every
  // copy); B holds the rest, then drops them at its hold timeout (50 ms).
  // Once the path is back A repairs everything (its RTO forgot the SACK B
  // gave): the message arrives whole and byte-exact.
  TransportConfig config;
  config.max_payload = 500;
  TransportConfig receiver = config;
  receiver.hold_timeout_ns = 50 * kMs;
  Pair p(62, config, receiver);
  ASSERT_TRUE(p.warm_up());
  std::vector<uint8_t> m(10000), in(10000);
  for (size_t i = 0; i < m.size(); ++i) m[i] = static_cast<uint8_t>(i * 13 + 5);
  ASSERT_EQ(p.post(p.b, &in, ctx(1)), 0);
  const uint64_t cut_until = p.link.now() + 150 * kMs;
  p.link.keep = [&](size_t from, const wire::FrameHeader& h) {
    return !(from == p.a && h.opcode == static_cast<uint8_t>(wire::Opcode::kMsg) && h.offset == 0 &&
             p.link.now() < cut_until);
  };
  ASSERT_EQ(p.send(p.a, p.b, m, ctx(2)), 0);
  p.run_for(120 * kMs);
  EXPECT_GT(p.engine(p.b).stats().held_expired, 0u);
  EXPECT_TRUE(p.done[p.b].empty());
  ASSERT_TRUE(p.wait(p.b, 1, 3 * kSec));
  EXPECT_EQ(p.done[p.b][0].error, 0);
  EXPECT_EQ(in, m);
  ASSERT_TRUE(p.wait(p.a, 1, 1 * kSec));
  EXPECT_EQ(p.done[p.a][0].error, 0);
}

// ---------------------------------------------------------------------------
// Silent stations (issue "Hardening, third round", finding 0): stations that
// complete a handshake, park one segment ahead of a gap and then answer
// nothing at all, not even the HELLO that opens the way back to them.

// Frames in e's outbox addressed to any of `stations`; takes the outbox.
size_t frames_to(Engine& e, const std::vector<Station>& stations, size_t* hellos = nullptr) {
  size_t n = 0;
  for (const OutFrame& out : e.outbox()) {
    for (const Station& s : stations) {
      if (std::memcmp(out.dst_mac, s.mac, 6) != 0) continue;
      ++n;
      if (hellos != nullptr && out.header.opcode == static_cast<uint8_t>(wire::Opcode::kHello))
        ++*hellos;
    }
  }
  e.frames_sent();
  return n;
}

TEST(SilentStations, GetOneHelloAndThenNothing) {
  // Expect: each of 50 stations that parks a segment draws one HELLO (the
  // way back, opened with its receive half) and an ack; nobody answers the
  // HELLOs, and B does not ask again: in the 3 s after, it sends them
  // nothing, and once their held segments expired no connection of theirs
  // is left for a poll to visit.
  TransportConfig config;
  config.hold_timeout_ns = 200 * kMs;
  config.peer_timeout_ns = 10 * kSec;  // (nothing is forgotten here)
  const uint8_t mac_b[6] = {0x02, 0, 0, 0, 0, 0x0B};
  Engine b(config, mac_b, 0, 0xB0000001);
  uint64_t now = 1000;
  std::vector<Station> stations;
  size_t hellos = 0;
  for (uint16_t i = 0; i < 50; ++i) {
    stations.push_back(station(i));
    ASSERT_NE(handshake(b, stations.back(), now), 0u);
    segment(b, stations.back(), wire::kInitialSeq + 1, now);
    b.poll(now);
    frames_to(b, stations, &hellos);
  }
  EXPECT_EQ(hellos, 50u);
  size_t later = 0;
  for (now += kMs; now < 3 * kSec; now += kMs) {
    b.poll(now);
    later += frames_to(b, stations);
  }
  EXPECT_EQ(later, 0u) << "B kept sending to stations that answer nothing";
  EXPECT_EQ(b.connection_count(), 50u);
  EXPECT_EQ(b.active_connections(), 0u);
}

TEST(SilentStations, AreForgottenOnceSilentForThePeerTimeout) {
  // Expect: 30 silent stations are forgotten (unproven_forgotten) once
  // silent for the peer timeout (1 s here), a few at a time by the sweep;
  // a late segment of one, with the token it was granted, opens nothing
  // again and hears RESET.
  TransportConfig config;
  config.hold_timeout_ns = 200 * kMs;
  config.peer_timeout_ns = 1 * kSec;
  const uint8_t mac_b[6] = {0x02, 0, 0, 0, 0, 0x0B};
  Engine b(config, mac_b, 0, 0xB0000001);
  uint64_t now = 1000;
  std::vector<Station> stations;
  for (uint16_t i = 0; i < 30; ++i) {
    stations.push_back(station(i));
    ASSERT_NE(handshake(b, stations.back(), now), 0u);
    segment(b, stations.back(), wire::kInitialSeq + 1, now);
    b.frames_sent();
  }
  for (now += kMs; now < 900 * kMs; now += kMs) {
    b.poll(now);
    b.frames_sent();
  }
  EXPECT_EQ(b.connection_count(), 30u) << "forgotten before the peer timeout";
  for (; now < 1200 * kMs; now += kMs) {
    b.poll(now);
    b.frames_sent();
  }
  EXPECT_EQ(b.connection_count(), 0u);
  EXPECT_EQ(b.stats().unproven_forgotten, 30u);
  const uint64_t resets = b.stats().resets_sent;
  segment(b, stations[7], wire::kInitialSeq, now);
  EXPECT_EQ(b.stats().resets_sent, resets + 1);
  EXPECT_EQ(b.connection_count(), 0u);
}

TEST(SilentStations, TakeEachOthersPlacesNotAnIdlePeers) {
  // Expect: B holds 8 connections.  A exchanged a message with B and has
  // been idle for three peer timeouts (its connection may be evicted when
  // room is needed); 7 stations then fill the table and a further 20
  // complete handshakes and park segments: each takes a station's place,
  // never A's, and A's next message needs no new handshake.
  TransportConfig config;
  TransportConfig target;
  target.max_connections = 8;
  target.peer_timeout_ns = 1 * kSec;
  Pair p(62, config, target);
  Engine& b = p.engine(p.b);
  std::vector<uint8_t> in(8);
  ASSERT_EQ(p.post(p.b, &in, ctx(1)), 0);
  ASSERT_EQ(p.send(p.a, p.b, std::vector<uint8_t>(8, 0x41), ctx(2)), 0);
  ASSERT_TRUE(p.wait(p.b, 1, 200 * kMs));
  p.run_for(3 * kSec);
  const uint64_t a_key = peer_key(p.link.mac(p.a), 0);
  ASSERT_NE(b.find(a_key), nullptr);
  for (uint16_t i = 0; i < 27; ++i) {
    Station s = station(i);
    ASSERT_NE(handshake(b, s, p.link.now()), 0u);
    segment(b, s, wire::kInitialSeq + 1, p.link.now());
    p.link.step();
  }
  EXPECT_NE(b.find(a_key), nullptr) << "a station took the idle peer's place";
  EXPECT_EQ(b.stats().connections_evicted, 20u);
  const uint64_t hellos = p.engine(p.a).stats().hellos_sent;
  ASSERT_EQ(p.post(p.b, &in, ctx(3)), 0);
  ASSERT_EQ(p.send(p.a, p.b, std::vector<uint8_t>(8, 0x42), ctx(4)), 0);
  ASSERT_TRUE(p.wait(p.b, 2, 200 * kMs));
  EXPECT_EQ(p.done[p.b][1].error, 0);
  EXPECT_EQ(p.engine(p.a).stats().hellos_sent, hellos);
}

// ---------------------------------------------------------------------------
// Exactly once across an eviction.

// Engines A, B and C: B holds one connection, so C's handshake evicts A's
// record once A has been silent twice the peer timeout.  B serves fetch-adds.
struct EvictionRig {
  EvictionRig() : p(63, initiator(), target()) {
    c = p.link.add(TransportConfig{}, kMacC, 0, 0xC0000001);
  }
  static TransportConfig initiator() {
    TransportConfig config;
    config.bundle_bytes = 0;  // the request goes in a frame of its own, to replay
    return config;
  }
  static TransportConfig target() {
    TransportConfig config;
    config.max_connections = 1;
    config.peer_timeout_ns = 200 * kMs;
    return config;
  }
  // Evicts A's record at B: silence, then a message from C; then C goes
  // quiet too, so A's next handshake finds room.
  void evict_a() {
    p.run_for(500 * kMs);
    std::vector<uint8_t> in(4);
    p.post(p.b, &in, ctx(70));
    iovec iov{const_cast<uint8_t*>(kHi), 4};
    SendRequest s;
    s.iov = &iov;
    s.iov_count = 1;
    s.copy = true;
    s.completion = false;
    p.engine(c).send(p.link.address(p.b), s, p.link.now());
    p.run_for(50 * kMs);
    evicted = p.engine(p.b).find(p.link.key(p.a)) == nullptr;
    p.run_for(500 * kMs);
  }
  bool evicted = false;
  static constexpr uint8_t kMacC[6] = {0x02, 0, 0, 0, 0, 0x0C};
  static constexpr uint8_t kHi[4] = {'h', 'i', '!', '!'};
  Pair p;
  size_t c;
};

TEST(Eviction, AReplayedRequestOfAnEvictedConnectionRunsNothing) {
  // Expect: A's fetch-add runs once (its frame is recorded).  B evicts A's
  // record for C; A's next request reconnects (a RESET, a new handshake) and
  // runs.  The recorded frame of A's first connection, replayed, is
  // answered RESET: it neither resets A's live receive half nor runs again.
  EvictionRig rig;
  Pair& p = rig.p;
  std::vector<wire::FrameHeader> first_request;
  p.link.tap = [&](size_t from, size_t, const wire::FrameHeader& h) {
    if (from == p.a && h.opcode == static_cast<uint8_t>(wire::Opcode::kRequest) &&
        first_request.empty())
      first_request.push_back(h);
  };
  std::vector<uint8_t> result(8);
  ASSERT_EQ(p.request(&result, ctx(1)), 0);
  ASSERT_TRUE(p.wait(p.a, 1, 100 * kMs));
  ASSERT_EQ(p.done[p.a][0].error, 0);
  ASSERT_EQ(p.calls, 1);
  ASSERT_EQ(first_request.size(), 1u);
  rig.evict_a();
  ASSERT_TRUE(rig.evicted);
  // A reconnects: its first try hears RESET, the next one runs.
  for (int attempt = 0; attempt < 2 && p.calls == 1; ++attempt) {
    ASSERT_EQ(p.request(&result, ctx(2 + attempt)), 0);
    ASSERT_TRUE(p.wait(p.a, 2 + attempt, 500 * kMs));
  }
  ASSERT_EQ(p.calls, 2);
  const Connection* at_b = p.engine(p.b).find(p.link.key(p.a));
  ASSERT_NE(at_b, nullptr);
  ASSERT_TRUE(at_b->rx_open);
  const uint16_t live_conn = at_b->rx_conn;
  const uint64_t resets = p.engine(p.b).stats().resets_sent;
  static const char kAdd[] = "add";
  p.engine(p.b).on_frame(
      Segment{p.link.mac(p.a), &first_request[0], reinterpret_cast<const uint8_t*>(kAdd)},
      p.link.now());
  p.run_for(50 * kMs);
  EXPECT_EQ(p.calls, 2) << "the replayed request ran again";
  EXPECT_EQ(p.engine(p.b).stats().resets_sent, resets + 1);
  at_b = p.engine(p.b).find(p.link.key(p.a));
  ASSERT_NE(at_b, nullptr);
  EXPECT_TRUE(at_b->rx_open);
  EXPECT_EQ(at_b->rx_conn, live_conn) << "the live receive half was reset";
}

TEST(Eviction, ARecordOurOwnSendMakesKeepsTheEvictedOnesClosed) {
  // Expect: after B evicted A's record, B's own send to A makes a new one;
  // A's recorded request of the evicted connection, replayed, is answered
  // RESET and runs nothing.
  EvictionRig rig;
  Pair& p = rig.p;
  std::vector<wire::FrameHeader> first_request;
  p.link.tap = [&](size_t from, size_t, const wire::FrameHeader& h) {
    if (from == p.a && h.opcode == static_cast<uint8_t>(wire::Opcode::kRequest) &&
        first_request.empty())
      first_request.push_back(h);
  };
  std::vector<uint8_t> result(8);
  ASSERT_EQ(p.request(&result, ctx(1)), 0);
  ASSERT_TRUE(p.wait(p.a, 1, 100 * kMs));
  ASSERT_EQ(p.calls, 1);
  rig.evict_a();
  ASSERT_TRUE(rig.evicted);
  std::vector<uint8_t> in(8);
  ASSERT_EQ(p.post(p.a, &in, ctx(10)), 0);
  ASSERT_EQ(p.send(p.b, p.a, std::vector<uint8_t>(8, 1), ctx(11)), 0);
  ASSERT_NE(p.engine(p.b).find(p.link.key(p.a)), nullptr);
  static const char kAdd[] = "add";
  p.engine(p.b).on_frame(
      Segment{p.link.mac(p.a), &first_request[0], reinterpret_cast<const uint8_t*>(kAdd)},
      p.link.now());
  p.run_for(50 * kMs);
  EXPECT_EQ(p.calls, 1) << "the replayed request ran again";
}

// ---------------------------------------------------------------------------
// Response bytes.

// B serves each request with `read_bytes` bytes lent from its region.
struct LendingPair {
  explicit LendingPair(const TransportConfig& target, size_t engines = 2)
      : p(64, TransportConfig{}, target), region(1 << 20) {
    for (size_t i = 0; i < region.size(); ++i) region[i] = static_cast<uint8_t>(i * 31 + 7);
    for (size_t i = 2; i < engines; ++i) {
      const uint8_t mac[6] = {0x02, 0, 0, 0, 1, static_cast<uint8_t>(i)};
      extra.push_back(
          p.link.add(TransportConfig{}, mac, 0, 0xD0000000u + static_cast<uint32_t>(i)));
    }
    p.engine(p.b).set_request_handler([this](uint64_t, const uint8_t*, size_t, size_t) {
      ++calls;
      Response r;
      r.lent_bytes = region.data() + (calls % 4) * read_bytes;
      r.lent_length = read_bytes;
      return r;
    });
  }
  int read(size_t from, std::vector<uint8_t>* result, void* context) {
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
    return p.engine(from).send(p.link.address(p.b), s, p.link.now());
  }
  Pair p;
  std::vector<uint8_t> region;
  std::vector<size_t> extra;
  size_t read_bytes = 32 << 10;
  int calls = 0;
};

TEST(ResponseBudget, AConnectionHoldsNoMoreResponseBytesThanItsShare) {
  // Expect: B lets a connection hold 64 KiB of responses.  A sends 10 reads
  // of 32 KiB while B's responses are cut: B serves 2 (64 KiB) and holds
  // the rest back (window 0).  A write into the region then copies at most
  // those 2.  Once the path is back every read completes, each once.
  TransportConfig target;
  target.connection_response_bytes = 64 << 10;
  target.bundle_bytes = 0;
  LendingPair rig(target);
  Pair& p = rig.p;
  bool cut = true;
  p.link.keep = [&](size_t from, const wire::FrameHeader& h) {
    return !(cut && from == p.b && h.opcode == static_cast<uint8_t>(wire::Opcode::kResponse));
  };
  std::vector<std::vector<uint8_t>> results(10, std::vector<uint8_t>(32 << 10));
  for (size_t i = 0; i < results.size(); ++i) ASSERT_EQ(rig.read(p.a, &results[i], ctx(i + 1)), 0);
  p.run_for(200 * kMs);
  EXPECT_EQ(rig.calls, 2);
  EXPECT_LE(p.engine(p.b).recall_lent(rig.region.data(), rig.region.size()), 2u);
  cut = false;
  ASSERT_TRUE(p.wait(p.a, 10, 5 * kSec));
  for (const Completion& done : p.done[p.a]) EXPECT_EQ(done.error, 0);
  EXPECT_EQ(rig.calls, 10);
}

TEST(ResponseBudget, TheEndpointHoldsNoMoreResponseBytesThanItsBudget) {
  // Expect: B's endpoint budget is 64 KiB for all connections.  A and a
  // third engine each send 4 reads of 32 KiB while B's responses are cut:
  // B serves 2 in all.  Once the path is back all 8 complete.
  TransportConfig target;
  target.response_bytes = 64 << 10;
  target.bundle_bytes = 0;
  LendingPair rig(target, 3);
  Pair& p = rig.p;
  const size_t d = rig.extra[0];
  bool cut = true;
  p.link.keep = [&](size_t from, const wire::FrameHeader& h) {
    return !(cut && from == p.b && h.opcode == static_cast<uint8_t>(wire::Opcode::kResponse));
  };
  std::vector<std::vector<uint8_t>> results(8, std::vector<uint8_t>(32 << 10));
  for (size_t i = 0; i < 4; ++i) {
    ASSERT_EQ(rig.read(p.a, &results[i], ctx(i + 1)), 0);
    ASSERT_EQ(rig.read(d, &results[4 + i], ctx(i + 11)), 0);
  }
  p.run_for(200 * kMs);
  EXPECT_EQ(rig.calls, 2);
  cut = false;
  size_t from_d = 0;
  for (const uint64_t end = p.link.now() + 5 * kSec;
       p.link.now() < end && (p.done[p.a].size() < 4 || from_d < 4);) {
    p.link.step();
    p.collect();
    auto& c = p.engine(d).completions();
    for (const Completion& done : c) {
      EXPECT_EQ(done.error, 0);
      ++from_d;
    }
    c.clear();
  }
  EXPECT_EQ(p.done[p.a].size(), 4u);
  EXPECT_EQ(from_d, 4u);
  EXPECT_EQ(rig.calls, 8);
}

// ---------------------------------------------------------------------------
// Sends that wait for the peer's receives.

// A send from the application's own buffer (no copy), which a large one
// needs to go by rendezvous.
int send_in_place(Pair& p, size_t from, size_t to, const std::vector<uint8_t>& bytes, void* context,
                  bool delivery_complete = false) {
  iovec iov{const_cast<uint8_t*>(bytes.data()), bytes.size()};
  SendRequest s;
  s.iov = &iov;
  s.iov_count = 1;
  s.context = context;
  s.delivery_complete = delivery_complete;
  return p.engine(from).send(p.link.address(to), s, p.link.now());
}

TEST(ReceiverWaits, OnePeerHoldsAtMostHalfTheSendBudget) {
  // Expect: A may have 8 sends outstanding; B posts no receive.  A's
  // rendezvous sends to B are refused (-EAGAIN) once 4 wait, and counted;
  // a send to a third engine still goes through and completes.
  TransportConfig sender;
  sender.max_outstanding_sends = 8;
  sender.rendezvous_bytes = 1000;
  Pair p(65, sender, TransportConfig{});
  const uint8_t mac_d[6] = {0x02, 0, 0, 0, 0, 0x0D};
  const size_t d = p.link.add(TransportConfig{}, mac_d, 0, 0xD0000001);
  const std::vector<uint8_t> large(2000, 9);
  for (int i = 0; i < 4; ++i) ASSERT_EQ(send_in_place(p, p.a, p.b, large, ctx(i + 1)), 0) << i;
  EXPECT_EQ(send_in_place(p, p.a, p.b, large, ctx(5)), -EAGAIN);
  EXPECT_EQ(p.engine(p.a).stats().sends_refused_peer_share, 1u);
  std::vector<uint8_t> in(2000);
  RecvRequest r;
  r.iov[0] = {in.data(), in.size()};
  r.iov_count = 1;
  ASSERT_EQ(p.engine(d).post_recv(r, p.link.now()), 0);
  ASSERT_EQ(send_in_place(p, p.a, d, large, ctx(20)), 0);
  ASSERT_TRUE(p.wait(p.a, 1, 500 * kMs));
  EXPECT_EQ(p.done[p.a][0].context, ctx(20));
  EXPECT_EQ(p.done[p.a][0].error, 0);
  EXPECT_EQ(in, large);
}

TEST(ReceiverWaits, ASendNoReceiveTakesFailsAfterTheDeliveryTimeout) {
  // Expect: B is alive (it answers A's probes) but never posts a receive.
  // A's rendezvous send and its FI_DELIVERY_COMPLETE send wait while the
  // delivery timeout (2 s) has not passed, then fail with kErrTimedOut and
  // kProvNotTaken; A's budget is whole again.
  TransportConfig sender;
  sender.rendezvous_bytes = 1000;
  sender.peer_timeout_ns = 500 * kMs;
  sender.delivery_timeout_ns = 2 * kSec;
  Pair p(66, sender, TransportConfig{});
  const std::vector<uint8_t> large(5000, 1), small(8, 2);
  ASSERT_EQ(send_in_place(p, p.a, p.b, large, ctx(1)), 0);
  ASSERT_EQ(send_in_place(p, p.a, p.b, small, ctx(2), /*delivery_complete=*/true), 0);
  p.run_for(1500 * kMs);
  EXPECT_TRUE(p.done[p.a].empty()) << "a live receiver's application is given time";
  ASSERT_TRUE(p.wait(p.a, 2, 2 * kSec));
  for (const Completion& done : p.done[p.a]) {
    EXPECT_EQ(done.error, kErrTimedOut);
    EXPECT_EQ(done.prov_errno, kProvNotTaken);
  }
  EXPECT_EQ(p.engine(p.a).outstanding_sends(), 0u);
  EXPECT_EQ(p.engine(p.a).stats().delivery_timeouts, 2u);
  EXPECT_LE(p.link.now(), 3 * kSec);
}

// ---------------------------------------------------------------------------
// Delivery notices.

TEST(DeliveryNotice, AFailedWaitForAMessageReceivedWholeSaysItMayHaveArrived) {
  // Expect: A's FI_DELIVERY_COMPLETE message reaches B whole, with no
  // receive posted; B then drops its receive half (as after a timeout).
  // A's wait for the notice fails, saying the message may have arrived
  // (kProvMaybeDelivered); and it has: B's next receive takes it.
  Pair p(67);
  ASSERT_TRUE(p.warm_up());
  static const uint8_t kBytes[8] = {8, 7, 6, 5, 4, 3, 2, 1};
  iovec iov{const_cast<uint8_t*>(kBytes), 8};
  SendRequest s;
  s.iov = &iov;
  s.iov_count = 1;
  s.context = ctx(1);
  s.delivery_complete = true;
  ASSERT_EQ(p.engine(p.a).send(p.link.address(p.b), s, p.link.now()), 0);
  p.run_for(20 * kMs);
  const Connection* at_a = p.engine(p.a).find(p.link.key(p.b));
  ASSERT_NE(at_a, nullptr);
  ASSERT_EQ(at_a->awaiting_delivery.size(), 1u) << "acknowledged, waiting for the notice";
  p.engine(p.b).drop_peer(p.link.key(p.a));
  ASSERT_TRUE(p.wait(p.a, 1, 6 * kSec));
  EXPECT_NE(p.done[p.a][0].error, 0);
  EXPECT_EQ(p.done[p.a][0].prov_errno, kProvMaybeDelivered);
  std::vector<uint8_t> in(8);
  ASSERT_EQ(p.post(p.b, &in, ctx(2)), 0);
  ASSERT_TRUE(p.wait(p.b, 1, 10 * kMs));
  EXPECT_EQ(p.done[p.b][0].error, 0);
  EXPECT_EQ(in, std::vector<uint8_t>(kBytes, kBytes + 8));
}

TEST(AvRemoval, AMessageReceivedBeforeTheRemovalCompletesAtItsSender) {
  // Expect: B takes A's message, then drops A (fi_av_remove right after the
  // receive completed, as fabtests' fi_av_xfer does) while its ack is still
  // owed: the drop acknowledges what arrived, so A's send completes without
  // error rather than on B's RESET of a retransmission.
  Pair p(68);
  ASSERT_TRUE(p.warm_up());
  bool b_acks_held = true;
  p.link.keep = [&](size_t from, const wire::FrameHeader& h) {
    return !(b_acks_held && from == p.b && h.opcode == static_cast<uint8_t>(wire::Opcode::kAck));
  };
  std::vector<uint8_t> in(8);
  ASSERT_EQ(p.post(p.b, &in, ctx(2)), 0);
  const std::vector<uint8_t> bytes = {1, 2, 3, 4, 5, 6, 7, 8};
  ASSERT_EQ(p.send(p.a, p.b, bytes, ctx(1)), 0);
  ASSERT_TRUE(p.wait(p.b, 1, 10 * kMs));
  EXPECT_EQ(p.done[p.b][0].error, 0);
  EXPECT_TRUE(p.done[p.a].empty()) << "B's ack was held: A's send is still in flight";
  p.engine(p.b).drop_peer(p.link.key(p.a));
  b_acks_held = false;
  ASSERT_TRUE(p.wait(p.a, 1, 6 * kSec));
  EXPECT_EQ(p.done[p.a][0].error, 0) << p.done[p.a][0].prov_errno;
  EXPECT_EQ(in, bytes);
}

}  // namespace
}  // namespace ofi_dpdk::proto
