// injector.cc: see injector.h.
#include "test/adversarial/injector.h"

#include <algorithm>
#include <thread>

namespace ofi_dpdk::adversarial {
namespace {

// Frame offsets the filter reads (Ethernet header, then FrameHeader).
constexpr uint32_t kDstMacAt = 0;
constexpr uint32_t kSrcMacAt = 6;
constexpr uint32_t kEtherTypeAt = 12;
constexpr uint32_t kOpcodeAt = 14 + 1;
constexpr uint32_t kFlagsAt = 14 + 2;
// The integrity field's low word: the CRC (or a keyed tag's low half).
constexpr uint32_t kChecksumAt = 14 + offsetof(wire::FrameHeader, integrity) + 4;

uint32_t high_word(const Mac& mac) {
  return uint32_t{mac[0]} << 24 | uint32_t{mac[1]} << 16 | uint32_t{mac[2]} << 8 | mac[3];
}
uint32_t low_half(const Mac& mac) {
  return uint32_t{mac[4]} << 8 | mac[5];
}

bool same(const uint8_t* a, const Mac& b) {
  return std::equal(b.begin(), b.end(), a);
}

}  // namespace

std::vector<sock_filter> target_filter(const Mac& target, const Mac& peer) {
  FilterBuilder f;
  f.load_half(kEtherTypeAt);
  f.jump_unless_equal(wire::kDefaultEtherType, "reject");
  f.load_word(kSrcMacAt);
  f.jump_unless_equal(high_word(target), "reject");
  f.load_half(kSrcMacAt + 4);
  f.jump_unless_equal(low_half(target), "reject");
  f.load_word(kDstMacAt);
  f.jump_unless_equal(high_word(peer), "accept");
  f.load_half(kDstMacAt + 4);
  f.jump_unless_equal(low_half(peer), "accept");
  f.load_byte(kOpcodeAt);
  f.jump_if_equal(static_cast<uint32_t>(wire::Opcode::kReset), "accept");
  f.jump_if_equal(static_cast<uint32_t>(wire::Opcode::kHelloAck), "accept");
  f.load_half(kFlagsAt);
  f.jump_unless_bits(wire::kFlagAckValid, "reject");
  // Sampled by checksum, not by ack: the pair's acks advance in lockstep
  // with its window (+16 a frame), and then never take some values mod 128.
  f.load_word(kChecksumAt);
  f.and_with(0x7f);
  f.jump_if_equal(0, "accept");
  f.label("reject");
  f.reject();
  f.label("accept");
  f.accept();
  return f.finish();
}

Injector::Injector(RawLink& link, const Station& target, const Station& peer, uint64_t seed)
    : link_(link), target_(target), peer_(peer), rng_(seed), buffer_(16384) {}

uint32_t Injector::random_nonzero() {
  uint32_t value;
  do value = static_cast<uint32_t>(rng_());
  while (value == 0);
  return value;
}

Station Injector::stranger() {
  Station s;
  do {
    const uint64_t bits = rng_();
    for (int i = 0; i < 6; ++i) s.mac[i] = static_cast<uint8_t>(bits >> (8 * i));
    s.mac[0] = static_cast<uint8_t>((s.mac[0] & 0xfe) | 0x02);
  } while (s.mac == target_.mac || s.mac == peer_.mac);
  s.queue = static_cast<uint16_t>(rng_() % 64);
  s.session = random_nonzero();
  return s;
}

void Injector::send(const Station& from, const Station& to, const wire::FrameHeader& header,
                    std::span<const uint8_t> payload) {
  link_.send(seal(from.mac, to.mac, header, payload));
}

void Injector::listen(Clock::duration duration, const FrameHandler& seen,
                      const std::function<bool()>& done) {
  const auto deadline = Clock::now() + duration;
  // Past the deadline, what is already queued is still read (a bounded
  // number), so a sender that falls behind its schedule still sees the
  // answers before the socket's buffer overflows.
  int overtime = 0;
  for (;;) {
    if (done && done()) return;
    const auto left = deadline - Clock::now();
    const bool late = left <= Clock::duration::zero();
    if (late && ++overtime > 256) return;
    const size_t length = link_.receive(
        buffer_, late ? 0 : std::chrono::duration_cast<std::chrono::microseconds>(left).count());
    if (length == 0) {
      if (late) return;
      continue;
    }
    proto::DecodedFrame frame;
    // Watched, not checked: keyed frames (FI_DPDK_AUTH_KEY) show their
    // headers to anyone on the path, and the cases read them.
    if (proto::decode_frame(buffer_.data(), length, wire::kDefaultEtherType, &frame,
                            proto::FrameCheck::watch()) != proto::DecodeResult::kOk)
      continue;
    const wire::FrameHeader& h = frame.header;
    if (same(frame.dst_mac, peer_.mac) && h.dst_queue == peer_.queue &&
        (h.flags & wire::kFlagAckValid) && h.src_session == target_.session) {
      live_.known = true;
      live_.target_conn = h.conn;
      live_.target_token = h.token;
      live_.peer_conn = h.ack_conn;
      live_.peer_token = h.ack_token;
      live_.peer_next_seq = h.ack;
      live_.target_seq = h.seq;
      if (h.opcode == static_cast<uint8_t>(wire::Opcode::kBundle)) {
        // A bundle's own seq is 0: its entries carry theirs.
        const uint8_t* cursor = frame.payload;
        wire::FrameHeader entry;
        const uint8_t* entry_payload;
        if (proto::next_bundle_entry(&cursor, frame.payload + h.payload_len, h, &entry,
                                     &entry_payload) == proto::DecodeResult::kOk)
          live_.target_seq = entry.seq;
      }
      live_.seen = Clock::now();
    }
    if (h.opcode == static_cast<uint8_t>(wire::Opcode::kHello)) {
      for (const Station& self : own_)
        if (same(frame.dst_mac, self.mac) && h.dst_queue == self.queue) answer_hello(frame, self);
    }
    if (seen) seen(frame);
  }
}

bool Injector::learn_live(Clock::duration within) {
  const auto asked = Clock::now();
  listen(within, {}, [&] { return live_.known && live_.seen > asked; });
  return live_.known && live_.seen > asked;
}

void Injector::answer_hello(const proto::DecodedFrame& hello, const Station& self) {
  // The token we grant the target's connection to us.  We never check it:
  // the target only needs an open transmit half to send its responses.
  Station me = self;
  wire::FrameHeader h = header_between(wire::Opcode::kHelloAck, me, target_);
  h.dst_session = hello.header.src_session;
  h.ack_conn = hello.header.conn;
  h.ack_token = hello.header.token;
  h.auth_key = hello.header.auth_key;
  h.msg_len = sizeof(wire::HandshakeBody);
  send(me, target_, h, handshake_body(0x600d0000u | self.queue, kOurMaxPayload));
}

bool Injector::open(OwnConnection& c, const FrameHandler& seen, bool answer_hellos) {
  if (answer_hellos) own_.push_back(c.self);
  for (int attempt = 0; attempt < 5; ++attempt) {
    const uint32_t nonce = random_nonzero();
    wire::FrameHeader h = header_between(wire::Opcode::kHello, c.self, target_);
    h.conn = c.conn;
    h.token = nonce;
    h.msg_len = sizeof(wire::HandshakeBody);
    send(c.self, target_, h, handshake_body(0, kOurMaxPayload));
    bool answered = false;
    listen(
        std::chrono::milliseconds(300),
        [&](const proto::DecodedFrame& f) {
          const wire::FrameHeader& r = f.header;
          if (!answered && same(f.dst_mac, c.self.mac) &&
              r.opcode == static_cast<uint8_t>(wire::Opcode::kHelloAck) &&
              r.dst_queue == c.self.queue && r.ack_conn == c.conn && r.ack_token == nonce) {
            if (auto body = read_handshake_body(f); body && body->token != 0) {
              c.token = body->token;
              c.max_payload = std::min(body->max_payload, kOurMaxPayload);
              answered = true;
            }
          }
          if (seen) seen(f);
        },
        [&] { return answered; });
    if (answered) return true;
  }
  return false;
}

void Injector::send_segment(const OwnConnection& c, wire::Opcode opcode, uint32_t seq,
                            uint32_t msg_id, uint32_t msg_len, uint32_t offset,
                            std::span<const uint8_t> payload, uint16_t flags,
                            uint16_t src_ep_queue) {
  wire::FrameHeader h = header_between(opcode, c.self, target_);
  h.flags = flags;
  h.seq = seq;
  h.msg_id = msg_id;
  h.msg_len = msg_len;
  h.offset = offset;
  h.conn = c.conn;
  h.token = c.token;
  h.src_ep_queue = src_ep_queue;
  send(c.self, target_, h, payload);
}

void Injector::paced(uint64_t total, uint64_t rate, const std::function<void(uint64_t)>& send_one,
                     const FrameHandler& seen) {
  // Bursts of 32 keep the sleeps long enough to leave both cores to the
  // pair between them.
  constexpr uint64_t kBurst = 32;
  const auto interval =
      std::chrono::nanoseconds(1'000'000'000 * kBurst / std::max<uint64_t>(rate, 1));
  auto next = Clock::now();
  for (uint64_t i = 0; i < total;) {
    for (uint64_t end = std::min(total, i + kBurst); i < end; ++i) send_one(i);
    next += interval;
    listen(next - Clock::now(), seen);
  }
}

}  // namespace ofi_dpdk::adversarial
