// FI_EP_DGRAM in the transport engine (TransportConfig::datagrams), over the
// in-memory link in simulated time:
//   - a datagram is one DATAGRAM frame: no handshake, no connection, no ack;
//     its send completes as it leaves, and a lost one is never resent;
//   - it is matched like a message (tag, source, multi-recv buffers), waits
//     as unexpected within the budget when no receive is posted, and is
//     dropped and counted beyond it;
//   - one sender (one link address, whatever queues its frames name) takes
//     no more than half the budget, past which it is held to an eighth:
//     the rest stays for the others, and a receive gives its share back;
//   - a datagram endpoint and a reliable one take nothing from each other;
//   - the codec refuses DATAGRAM frames that are not one whole message.
#include <gtest/gtest.h>

#include <cstring>
#include <functional>
#include <vector>

#include "lib/proto/engine_state.h"
#include "lib/proto/frame_codec.h"
#include "test/proto/lossy_link.h"

namespace ofi_dpdk::proto {
namespace {

constexpr uint8_t kMacA[6] = {0x02, 0x00, 0x00, 0x00, 0x00, 0x3A};
constexpr uint8_t kMacB[6] = {0x02, 0x00, 0x00, 0x00, 0x00, 0x3B};
constexpr uint64_t kMs = 1'000'000;
constexpr uint32_t kPayload = 1400;

void* ctx(uintptr_t n) {
  return reinterpret_cast<void*>(n);
}

TransportConfig datagram_config() {
  TransportConfig config;
  config.datagrams = true;
  config.max_payload = kPayload;
  config.peer_timeout_ns = 50 * kMs;
  config.connect_timeout_ns = 50 * kMs;
  return config;
}

// Datagram engine a sends to datagram engine b (or, with `b_reliable`, to
// an ordinary one).
class DatagramNet {
 public:
  explicit DatagramNet(uint64_t seed, bool b_reliable = false) : link(seed) {
    a = link.add(datagram_config(), kMacA, 3, 0xA1A1A1A1);
    TransportConfig b_config = datagram_config();
    b_config.datagrams = !b_reliable;
    b = link.add(b_config, kMacB, 4, 0xB1B1B1B1);
    done.resize(link.size());
  }
  Engine& engine(size_t i) { return link.engine(i); }
  void drain() {
    for (size_t e = 0; e < link.size(); ++e) {
      for (const Completion& d : engine(e).completions()) done[e].push_back(d);
      engine(e).completions().clear();
    }
  }
  void run(uint64_t ns) {
    const uint64_t end = link.now() + ns;
    while (link.now() < end) {
      link.step();
      drain();
    }
  }
  int send(const std::vector<uint8_t>& bytes, void* context, bool tagged = false, uint64_t tag = 0,
           bool copy = false) {
    iovec iov{const_cast<uint8_t*>(bytes.data()), bytes.size()};
    SendRequest s;
    s.iov = &iov;
    s.iov_count = 1;
    s.context = context;
    s.tagged = tagged;
    s.tag = tag;
    s.copy = copy;
    s.has_data = true;
    s.cq_data = 0xDA7A0000 + bytes.size();
    return engine(a).send(link.address(b), s, link.now());
  }
  int post(std::vector<uint8_t>& buf, void* context, bool tagged = false, uint64_t tag = 0) {
    RecvRequest r;
    r.iov[0] = {buf.data(), buf.size()};
    r.iov_count = 1;
    r.context = context;
    r.tagged = tagged;
    r.tag = tag;
    return engine(b).post_recv(r, link.now());
  }

  sim::LossyLink link;
  size_t a = 0, b = 0;
  std::vector<std::vector<Completion>> done;
};

std::vector<uint8_t> pattern(size_t length, uint8_t seed) {
  std::vector<uint8_t> bytes(length);
  for (size_t i = 0; i < length; ++i) bytes[i] = static_cast<uint8_t>(seed + i * 7);
  return bytes;
}

TEST(Datagram, ReachesAPostedReceiveWithoutAnyConnection) {
  DatagramNet net(1);
  std::vector<uint8_t> buf(kPayload);
  ASSERT_EQ(net.post(buf, ctx(10)), 0);
  const auto message = pattern(kPayload, 3);
  ASSERT_EQ(net.send(message, ctx(1)), 0);
  // Expect: the send completes as its frame is queued, before any step.
  ASSERT_EQ(net.engine(net.a).completions().size(), 1u);
  EXPECT_EQ(net.engine(net.a).completions()[0].kind, Completion::Kind::kSend);
  EXPECT_EQ(net.engine(net.a).completions()[0].len, kPayload);
  net.run(1 * kMs);
  ASSERT_EQ(net.done[net.b].size(), 1u);
  const Completion& got = net.done[net.b][0];
  EXPECT_EQ(got.error, 0);
  EXPECT_EQ(got.context, ctx(10));
  EXPECT_EQ(got.len, kPayload);
  EXPECT_TRUE(got.has_data);
  EXPECT_EQ(got.cq_data, 0xDA7A0000 + kPayload);
  EXPECT_EQ(got.source_key, net.link.key(net.a));
  EXPECT_EQ(buf, message);
  // Expect: one frame each way at most, none of them a handshake or an ack.
  EXPECT_EQ(net.engine(net.a).stats().frames_sent, 1u);
  EXPECT_EQ(net.engine(net.b).stats().frames_sent, 0u);
  EXPECT_EQ(net.engine(net.a).stats().hellos_sent, 0u);
  EXPECT_EQ(net.engine(net.a).find(net.link.key(net.b)), nullptr);
  EXPECT_EQ(net.engine(net.b).find(net.link.key(net.a)), nullptr);
}

TEST(Datagram, TagsAndSizesMatchLikeMessages) {
  DatagramNet net(2);
  std::vector<uint8_t> tagged_buf(64), small(16);
  ASSERT_EQ(net.post(tagged_buf, ctx(20), true, 0x77), 0);
  ASSERT_EQ(net.post(small, ctx(21)), 0);
  const auto tagged_message = pattern(40, 1), sent = pattern(48, 2);
  ASSERT_EQ(net.send(tagged_message, ctx(1), true, 0x77), 0);
  ASSERT_EQ(net.send(sent, ctx(2)), 0);
  net.run(1 * kMs);
  ASSERT_EQ(net.done[net.b].size(), 2u);
  for (const Completion& got : net.done[net.b]) {
    if (got.context == ctx(20)) {
      EXPECT_EQ(got.error, 0);
      EXPECT_TRUE(got.tagged);
      EXPECT_EQ(got.tag, 0x77u);
      EXPECT_EQ(got.len, 40u);
    } else {
      // Expect: a receive smaller than the datagram gets its first bytes and
      // FI_ETRUNC with the rest as overflow.
      EXPECT_EQ(got.context, ctx(21));
      EXPECT_EQ(got.error, kErrTruncated);
      EXPECT_EQ(got.len, 16u);
      EXPECT_EQ(got.overflow, 32u);
      EXPECT_EQ(small, std::vector<uint8_t>(sent.begin(), sent.begin() + 16));
    }
  }
}

TEST(Datagram, WaitsForAReceiveWithinTheBudgetAndIsDroppedBeyondIt) {
  // Room for two 1000-byte datagrams and their records, not three.
  sim::LossyLink link(3);
  TransportConfig small_budget = datagram_config();
  small_budget.unexpected_bytes = 2 * unexpected_cost(1000) + 10;
  const size_t a = link.add(datagram_config(), kMacA, 3, 0xA1A1A1A1);
  const size_t b = link.add(small_budget, kMacB, 4, 0xB1B1B1B1);
  const auto message = pattern(1000, 9);
  for (int i = 0; i < 3; ++i) {
    iovec iov{const_cast<uint8_t*>(message.data()), message.size()};
    SendRequest s;
    s.iov = &iov;
    s.iov_count = 1;
    s.context = ctx(1 + i);
    s.completion = false;
    ASSERT_EQ(link.engine(a).send(link.address(b), s, link.now()), 0);
  }
  for (int i = 0; i < 100; ++i) link.step();
  // Expect: two wait, the third is dropped and counted.
  EXPECT_EQ(link.engine(b).unexpected_messages(), 2u);
  EXPECT_EQ(link.engine(b).stats().datagrams_received, 2u);
  EXPECT_EQ(link.engine(b).stats().datagrams_dropped, 1u);
  std::vector<uint8_t> buf(1000);
  RecvRequest r;
  r.iov[0] = {buf.data(), buf.size()};
  r.iov_count = 1;
  r.context = ctx(50);
  ASSERT_EQ(link.engine(b).post_recv(r, link.now()), 0);
  ASSERT_EQ(link.engine(b).completions().size(), 1u);
  EXPECT_EQ(link.engine(b).completions()[0].len, 1000u);
  EXPECT_EQ(link.engine(b).completions()[0].source_key, link.key(a));
  EXPECT_EQ(buf, message);
  EXPECT_EQ(link.engine(b).unexpected_messages(), 1u);
}

// A DATAGRAM frame of `length` bytes to engine b (kMacB, queue 4) from
// whoever `src_mac` and `src_queue` say: a forged sender's.
std::vector<uint8_t> spoofed_datagram(const uint8_t src_mac[6], uint16_t src_queue,
                                      uint16_t length) {
  wire::FrameHeader h{};
  h.version = wire::kWireVersion;
  h.opcode = static_cast<uint8_t>(wire::Opcode::kDatagram);
  h.dst_queue = 4;
  h.src_queue = h.src_ep_queue = src_queue;
  h.src_session = 7;
  h.msg_len = length;
  h.payload_len = length;
  std::vector<uint8_t> frame(wire::kHeadersSize + length, 0x3C);
  encode_headers(frame.data(), kMacB, src_mac, wire::kDefaultEtherType, h);
  seal_frame(frame.data(), frame.size());
  return frame;
}

TEST(Datagram, OneSenderCannotTakeTheBudgetFromTheOthers) {
  // Room for 40 datagrams of 1000 bytes: an eighth is 5, half is 20.
  constexpr size_t kRoom = 40;
  sim::LossyLink link(11);
  TransportConfig budget = datagram_config();
  budget.unexpected_bytes = kRoom * unexpected_cost(1000);
  const size_t a = link.add(datagram_config(), kMacA, 3, 0xA1A1A1A1);
  const size_t b = link.add(budget, kMacB, 4, 0xB1B1B1B1);
  const uint8_t flooder[6] = {0x02, 0x66, 0x00, 0x00, 0x00, 0x01};
  const uint8_t other[6] = {0x02, 0x66, 0x00, 0x00, 0x00, 0x02};
  // A forged sender floods, naming a new queue each time (the queue is the
  // sender's to choose: still one sender).
  for (uint16_t i = 0; i < 64; ++i) {
    const auto frame = spoofed_datagram(flooder, i, 1000);
    link.inject(frame.data(), frame.size());
    link.step();
  }
  const TransportStats& stats = link.engine(b).stats();
  // Expect: it got half the budget, the rest of its frames were dropped as
  // over its share.
  EXPECT_EQ(link.engine(b).unexpected_messages(), kRoom / 2);
  EXPECT_EQ(stats.datagrams_over_share, 64 - kRoom / 2);
  EXPECT_EQ(stats.datagrams_dropped, 64 - kRoom / 2);
  // Expect: another sender still gets its eighth, and no more while half is
  // in use.
  for (int i = 0; i < 6; ++i) {
    const auto frame = spoofed_datagram(other, 9, 1000);
    link.inject(frame.data(), frame.size());
    link.step();
  }
  EXPECT_EQ(link.engine(b).unexpected_messages(), kRoom / 2 + kRoom / 8);
  EXPECT_EQ(stats.datagrams_over_share, 64 - kRoom / 2 + 1);
  // Expect: an honest engine's datagrams are all taken.
  const auto message = pattern(1000, 5);
  for (int i = 0; i < 3; ++i) {
    iovec iov{const_cast<uint8_t*>(message.data()), message.size()};
    SendRequest send;
    send.iov = &iov;
    send.iov_count = 1;
    send.completion = false;
    ASSERT_EQ(link.engine(a).send(link.address(b), send, link.now()), 0);
  }
  for (int i = 0; i < 20; ++i) link.step();
  EXPECT_EQ(link.engine(b).unexpected_messages(), kRoom / 2 + kRoom / 8 + 3);
  // Receives take them, oldest first: the flooder's, then the others'.
  std::vector<uint8_t> buf(1000);
  size_t from_flooder = 0, from_other = 0, from_a = 0;
  for (size_t i = 0; i < kRoom / 2 + kRoom / 8 + 3; ++i) {
    RecvRequest r;
    r.iov[0] = {buf.data(), buf.size()};
    r.iov_count = 1;
    r.context = ctx(100 + i);
    ASSERT_EQ(link.engine(b).post_recv(r, link.now()), 0);
  }
  for (const Completion& done : link.engine(b).completions()) {
    const uint64_t link_address = done.source_key & 0xFFFFFFFFFFFFull;
    if (link_address == peer_key(flooder, 0)) ++from_flooder;
    if (link_address == peer_key(other, 0)) ++from_other;
    if (done.source_key == link.key(a)) ++from_a;
  }
  link.engine(b).completions().clear();
  EXPECT_EQ(from_flooder, kRoom / 2);
  EXPECT_EQ(from_other, kRoom / 8);
  EXPECT_EQ(from_a, 3u);
  EXPECT_EQ(link.engine(b).unexpected_bytes(), 0u);
  // Expect: taken, they gave the flooder's share back: its next one waits.
  const auto frame = spoofed_datagram(flooder, 1, 1000);
  link.inject(frame.data(), frame.size());
  link.step();
  EXPECT_EQ(link.engine(b).unexpected_messages(), 1u);
  EXPECT_EQ(stats.datagrams_over_share, 64 - kRoom / 2 + 1);
}

TEST(Datagram, SendersWithinTheirSharesFillTheWholeBudget) {
  constexpr size_t kRoom = 40;
  sim::LossyLink link(12);
  TransportConfig budget = datagram_config();
  budget.unexpected_bytes = kRoom * unexpected_cost(1000);
  link.add(datagram_config(), kMacA, 3, 0xA1A1A1A1);
  const size_t b = link.add(budget, kMacB, 4, 0xB1B1B1B1);
  // Ten senders, four each (under an eighth), then an eleventh.
  for (uint8_t sender = 1; sender <= 11; ++sender) {
    const uint8_t mac[6] = {0x02, 0x67, 0x00, 0x00, 0x00, sender};
    for (int i = 0; i < 4; ++i) {
      const auto frame = spoofed_datagram(mac, 1, 1000);
      link.inject(frame.data(), frame.size());
      link.step();
    }
  }
  // Expect: the budget is whole in use; only the budget refused the last.
  EXPECT_EQ(link.engine(b).unexpected_messages(), kRoom);
  EXPECT_EQ(link.engine(b).stats().datagrams_dropped, 4u);
  EXPECT_EQ(link.engine(b).stats().datagrams_over_share, 0u);
}

TEST(Datagram, ALostDatagramIsNeverResent) {
  DatagramNet net(4);
  net.link.faults().drop = 1.0;
  std::vector<uint8_t> buf(64);
  ASSERT_EQ(net.post(buf, ctx(10)), 0);
  const auto message = pattern(64, 4);
  ASSERT_EQ(net.send(message, ctx(1)), 0);
  net.run(500 * kMs);  // far past every retransmission and peer timer
  // Expect: the send completed without error, nothing arrived, nothing was
  // sent again, and no failure was reported later.
  ASSERT_EQ(net.done[net.a].size(), 1u);
  EXPECT_EQ(net.done[net.a][0].error, 0);
  EXPECT_TRUE(net.done[net.b].empty());
  EXPECT_EQ(net.engine(net.a).stats().frames_sent, 1u);
  EXPECT_EQ(net.engine(net.a).stats().retransmitted, 0u);
  EXPECT_EQ(net.link.counters().dropped, 1u);
}

TEST(Datagram, AMessageLargerThanAFrameIsRefused) {
  DatagramNet net(5);
  EXPECT_EQ(net.send(pattern(kPayload + 1, 5), ctx(1)), -EMSGSIZE);
  EXPECT_TRUE(net.engine(net.a).outbox().empty());
  EXPECT_TRUE(net.engine(net.a).completions().empty());
  EXPECT_EQ(net.send(std::vector<uint8_t>{}, ctx(2)), 0);  // zero bytes is a datagram too
  std::vector<uint8_t> buf(8);
  ASSERT_EQ(net.post(buf, ctx(10)), 0);
  net.run(1 * kMs);
  ASSERT_EQ(net.done[net.b].size(), 1u);
  EXPECT_EQ(net.done[net.b][0].len, 0u);
  EXPECT_EQ(net.done[net.b][0].error, 0);
}

TEST(Datagram, AnInjectedDatagramIsCopiedAtTheCall) {
  DatagramNet net(6);
  std::vector<uint8_t> buf(32);
  ASSERT_EQ(net.post(buf, ctx(10)), 0);
  auto message = pattern(32, 6);
  const auto original = message;
  ASSERT_EQ(net.send(message, ctx(1), false, 0, /*copy=*/true), 0);
  std::fill(message.begin(), message.end(), 0xEE);  // reused before the outbox left
  net.run(1 * kMs);
  ASSERT_EQ(net.done[net.b].size(), 1u);
  EXPECT_EQ(buf, original);
}

TEST(Datagram, FillsAMultiRecvBufferInArrivalOrder) {
  DatagramNet net(7);
  std::vector<uint8_t> buf(100);
  RecvRequest r;
  r.iov[0] = {buf.data(), buf.size()};
  r.iov_count = 1;
  r.context = ctx(30);
  r.multi = std::make_shared<MultiRecv>();
  r.multi->capacity = buf.size();
  r.multi->min_free = 40;
  ASSERT_EQ(net.engine(net.b).post_recv(r, net.link.now()), 0);
  const auto first = pattern(30, 1), second = pattern(35, 2);
  ASSERT_EQ(net.send(first, ctx(1)), 0);
  ASSERT_EQ(net.send(second, ctx(2)), 0);
  net.run(1 * kMs);
  ASSERT_EQ(net.done[net.b].size(), 2u);
  EXPECT_EQ(net.done[net.b][0].buf, buf.data());
  EXPECT_EQ(net.done[net.b][0].len, 30u);
  EXPECT_FALSE(net.done[net.b][0].multi_released);
  EXPECT_EQ(net.done[net.b][1].buf, buf.data() + 30);
  EXPECT_EQ(net.done[net.b][1].len, 35u);
  // Expect: 35 bytes left, under the minimum of 40: released with the last.
  EXPECT_TRUE(net.done[net.b][1].multi_released);
}

TEST(Datagram, DatagramAndReliableEndpointsTakeNothingFromEachOther) {
  // a sends datagrams to a reliable engine: dropped, never answered.
  DatagramNet net(8, /*b_reliable=*/true);
  std::vector<uint8_t> buf(64);
  ASSERT_EQ(net.post(buf, ctx(10)), 0);
  const auto message = pattern(64, 8);
  ASSERT_EQ(net.send(message, ctx(1)), 0);
  net.run(5 * kMs);
  EXPECT_TRUE(net.done[net.b].empty());
  EXPECT_EQ(net.engine(net.b).stats().bad_frames, 1u);
  EXPECT_EQ(net.engine(net.b).stats().frames_sent, 0u);

  // The reliable engine's HELLO reaches the datagram engine: dropped, no
  // HELLO_ACK, so the reliable send fails at its connect timeout.
  std::vector<uint8_t> bytes = pattern(16, 1);
  iovec iov{bytes.data(), bytes.size()};
  SendRequest s;
  s.iov = &iov;
  s.iov_count = 1;
  s.context = ctx(99);
  ASSERT_EQ(net.engine(net.b).send(net.link.address(net.a), s, net.link.now()), 0);
  net.run(200 * kMs);
  EXPECT_GE(net.engine(net.a).stats().bad_frames, 1u);
  EXPECT_EQ(net.engine(net.a).stats().frames_sent, 1u);  // its own datagram only
  ASSERT_EQ(net.done[net.b].size(), 1u);
  EXPECT_EQ(net.done[net.b][0].context, ctx(99));
  EXPECT_EQ(net.done[net.b][0].error, kErrTimedOut);
}

// The bytes of one DATAGRAM frame with `payload` bytes of payload.
std::vector<uint8_t> datagram_frame(uint32_t msg_len, uint16_t payload, uint32_t offset,
                                    uint16_t flags) {
  wire::FrameHeader h{};
  h.version = wire::kWireVersion;
  h.opcode = static_cast<uint8_t>(wire::Opcode::kDatagram);
  h.flags = flags;
  h.src_session = 1;
  h.msg_len = msg_len;
  h.offset = offset;
  h.payload_len = payload;
  std::vector<uint8_t> frame(wire::kHeadersSize + payload, 0x5A);
  encode_headers(frame.data(), kMacB, kMacA, wire::kDefaultEtherType, h);
  seal_frame(frame.data(), frame.size());
  return frame;
}

TEST(Datagram, TheCodecTakesOnlyWholeDatagramsWithTheirOwnFlags) {
  DecodedFrame out;
  auto whole = datagram_frame(100, 100, 0, wire::kFlagTagged | wire::kFlagRemoteData);
  EXPECT_EQ(decode_frame(whole.data(), whole.size(), wire::kDefaultEtherType, &out),
            DecodeResult::kOk);
  auto part = datagram_frame(200, 100, 0, 0);
  EXPECT_EQ(decode_frame(part.data(), part.size(), wire::kDefaultEtherType, &out),
            DecodeResult::kBadLength);
  auto offset = datagram_frame(100, 50, 50, 0);
  EXPECT_EQ(decode_frame(offset.data(), offset.size(), wire::kDefaultEtherType, &out),
            DecodeResult::kBadLength);
  auto acked = datagram_frame(10, 10, 0, wire::kFlagAckValid);
  EXPECT_EQ(decode_frame(acked.data(), acked.size(), wire::kDefaultEtherType, &out),
            DecodeResult::kBadOpcode);
}

}  // namespace
}  // namespace ofi_dpdk::proto
