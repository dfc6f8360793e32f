// injector.h: the adversary's session on the wire.  It sends forged frames
// to the target, watches what the target sends back, answers the target's
// HELLOs to stations of its own (so responses reach it), and keeps a
// sampled view of the live pair's connection, so forgeries can be right in
// every field but the one under test.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <random>
#include <span>
#include <vector>

#include "lib/proto/frame_codec.h"
#include "test/adversarial/forge.h"
#include "test/adversarial/raw_link.h"

namespace ofi_dpdk::adversarial {

using Clock = std::chrono::steady_clock;

// The live pair's connection as the target's frames to the peer show it.
struct LiveConnection {
  bool known = false;
  uint16_t target_conn = 0;    // the target's transmit connection to the peer
  uint64_t target_token = 0;   // what its segments carry; a RESET must echo it
  uint16_t peer_conn = 0;      // the peer's transmit connection, as the target acks it
  uint64_t peer_token = 0;     // what the peer's segments carry
  uint32_t peer_next_seq = 0;  // the next segment the target expects from the peer
  uint32_t target_seq = 0;     // the sampled frame's own seq (the target's stream)
  Clock::time_point seen{};
};

// A connection of our own to the target, opened by a real handshake.
struct OwnConnection {
  Station self;
  uint16_t conn = 1;
  uint64_t token = 0;        // granted in the target's HELLO_ACK
  uint32_t max_payload = 0;  // the smaller of the target's and ours
};

using FrameHandler = std::function<void(const proto::DecodedFrame&)>;

// The payload we offer in our handshakes (what fits a 1500-byte MTU).
inline constexpr uint32_t kOurMaxPayload = 1400;

// The filter for RawLink: frames from `target` that are not to `peer`
// (answers to us and to made-up stations), RESETs and HELLO_ACKs to
// `peer` (answers to frames forged in its name), and one in 128 of the
// target's acks to `peer` (the live connection's state), chosen by their
// checksum: a field of the stream itself (the ack) can repeat in step with
// the pair's window and never hit the sampled values.
std::vector<sock_filter> target_filter(const Mac& target, const Mac& peer);

class Injector {
 public:
  Injector(RawLink& link, const Station& target, const Station& peer, uint64_t seed);

  const Station& target() const { return target_; }
  const Station& peer() const { return peer_; }
  const LiveConnection& live() const { return live_; }
  uint32_t random_nonzero();
  uint64_t random64() { return rng_(); }
  // A made-up station: a locally administered unicast MAC that is neither
  // the target's nor the peer's, any queue, any session.
  Station stranger();

  void send(const Station& from, const Station& to, const wire::FrameHeader& header,
            std::span<const uint8_t> payload = {});
  void send_frame(std::span<const uint8_t> frame) { link_.send(frame); }

  // Takes in what the target sends for `duration`, or until `done` returns
  // true: updates the live view, answers HELLOs to our stations, and hands
  // every frame to `seen`.
  void listen(Clock::duration duration, const FrameHandler& seen,
              const std::function<bool()>& done = {});
  // Waits for a sample of the live connection taken after this call.
  bool learn_live(Clock::duration within);

  // HELLO and HELLO_ACK for c (c.self, c.conn): fills token and max_payload.
  // With answer_hellos, the target's own HELLOs to c.self are answered from
  // then on (so its responses reach us); without, c.self stays silent.
  bool open(OwnConnection& c, const FrameHandler& seen, bool answer_hellos = true);
  // One data segment of c.
  void send_segment(const OwnConnection& c, wire::Opcode opcode, uint32_t seq, uint32_t msg_id,
                    uint32_t msg_len, uint32_t offset, std::span<const uint8_t> payload,
                    uint16_t flags, uint16_t src_ep_queue);
  void send_segment(const OwnConnection& c, wire::Opcode opcode, uint32_t seq, uint32_t msg_id,
                    uint32_t msg_len, uint32_t offset, std::span<const uint8_t> payload,
                    uint16_t flags) {
    send_segment(c, opcode, seq, msg_id, msg_len, offset, payload, flags, c.self.queue);
  }

  // Sends `total` frames (send_one(i) sends frame i) at about `rate` per
  // second, in bursts, listening in between.
  void paced(uint64_t total, uint64_t rate, const std::function<void(uint64_t)>& send_one,
             const FrameHandler& seen);

  RawLink& link() { return link_; }

 private:
  void answer_hello(const proto::DecodedFrame& hello, const Station& self);

  RawLink& link_;
  Station target_;
  Station peer_;
  std::mt19937_64 rng_;
  LiveConnection live_;
  std::vector<Station> own_;  // stations whose HELLOs from the target we answer
  std::vector<uint8_t> buffer_;
};

}  // namespace ofi_dpdk::adversarial
