// make_corpus.cc: writes the seed corpus of fuzz_receive_path (input format
// in fuzz_receive_path.h): valid exchanges with the fuzzed endpoint (the
// HELLO handshake both ways, data, piggybacked acks, ACKs with SACK bits,
// RESET, multi-segment and reordered messages, unexpected messages, a
// stalled receive window, timers, requests served and responses to our
// requests) and hostile frames (truncated, bad version, bad opcode, bad
// lengths, unknown session, connection or token, sequence numbers outside
// the window, bad checksum, malformed handshakes).  Frames are built with
// encode_headers and seal_frame.
//
// The output is checked in as test/fuzz/corpus/.  To regenerate it (after a
// change to the wire format or to fuzz_receive_path.h), from the source root:
//
//   meson compile -C BUILD test/fuzz/make_corpus
//   BUILD/test/fuzz/make_corpus test/fuzz/corpus
//
// It overwrites the files it names and leaves others (crash reproducers
// added by hand) alone.
#include <endian.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "lib/proto/frame_codec.h"
#include "test/fuzz/fuzz_receive_path.h"

namespace ofi_dpdk::proto::fuzz {
namespace {

using wire::FrameHeader;
using wire::Opcode;

constexpr uint8_t kStrangerMac[6] = {0x02, 0x00, 0x00, 0x00, 0x00, 0x5E};

// Clock steps (indexes into kClockSteps) used below.
constexpr uint8_t k0 = 0, k20us = 3, k200us = 5, k1ms = 6, k5ms = 8, k10ms = 9, k50ms = 11,
                  k200ms = 12, k1s = 13, k2s = 14, k6s = 15;

// Connection numbers (FrameHeader::conn): the peer's transmit connection,
// and ours, which the engine numbers from 1.
constexpr uint16_t kPeerConn = 1;
constexpr uint16_t kLocalConn = 1;
// What the peer's HELLO carries, and the token it grants our connection.
constexpr uint64_t kPeerNonce = 0x9E11C001;
constexpr uint64_t kPeerGrant = 0x6EA70001;

// A data segment from the peer on the connection its handshake opened:
// sessions right, our granted token (kAnyToken), no ack.
FrameHeader data(uint32_t seq, uint32_t msg_id, uint32_t msg_len, uint32_t offset,
                 uint16_t payload_len, uint16_t flags = 0) {
  FrameHeader h{};
  h.version = wire::kWireVersion;
  h.opcode = static_cast<uint8_t>(Opcode::kMsg);
  h.flags = flags;
  h.dst_queue = kLocalQueue;
  h.src_queue = kPeerQueue;
  h.src_ep_queue = kPeerQueue;
  h.src_session = kPeerSession;
  h.dst_session = kLocalSession;
  h.conn = kPeerConn;
  h.token = kAnyToken;
  h.seq = seq;
  h.msg_id = msg_id;
  h.msg_len = msg_len;
  h.offset = offset;
  h.payload_len = payload_len;
  if (offset + payload_len == msg_len) h.flags |= wire::kFlagLastSegment;
  return h;
}

// A whole message in one segment.
FrameHeader message(uint32_t seq, uint32_t msg_id, uint16_t length, uint16_t flags = 0) {
  return data(seq, msg_id, length, 0, length, flags);
}

FrameHeader tagged(FrameHeader h, uint64_t tag) {
  h.opcode = static_cast<uint8_t>(Opcode::kTagged);
  h.tag = tag;
  return h;
}

// A request segment for the endpoint's handler.
FrameHeader request(FrameHeader h) {
  h.opcode = static_cast<uint8_t>(Opcode::kRequest);
  return h;
}

// A response segment: answers our request `request_id` with `status`.
FrameHeader response(FrameHeader h, uint32_t request_id, int status = 0) {
  h.opcode = static_cast<uint8_t>(Opcode::kResponse);
  h.flags |= wire::kFlagRemoteData;
  h.tag = request_id;
  h.cq_data = static_cast<uint64_t>(static_cast<int64_t>(status));
  return h;
}

FrameHeader with_ack(FrameHeader h, uint32_t ack, uint16_t window = 64) {
  h.flags |= wire::kFlagAckValid;
  h.ack_conn = kLocalConn;
  h.ack_token = kPeerGrant;
  h.ack = ack;
  h.window = window;
  return h;
}

// The peer's ACK: cumulative ack, window, SACK bits.
FrameHeader ack(uint32_t next_expected, uint16_t window = 64, uint64_t sack = 0) {
  FrameHeader h{};
  h.version = wire::kWireVersion;
  h.opcode = static_cast<uint8_t>(Opcode::kAck);
  h.flags = wire::kFlagAckValid;
  h.dst_queue = kLocalQueue;
  h.src_queue = kPeerQueue;
  h.src_ep_queue = kPeerQueue;
  h.src_session = kPeerSession;
  h.dst_session = kLocalSession;
  h.conn = kPeerConn;
  h.ack_conn = kLocalConn;
  h.ack_token = kPeerGrant;
  h.seq = wire::kInitialSeq;
  h.ack = next_expected;
  h.window = window;
  h.tag = sack;
  return h;
}

// The peer's RESET of our connection: with the token it granted, or
// (kAnyToken) our HELLO's nonce, before it granted one.
FrameHeader reset(uint32_t dst_session = kLocalSession, uint16_t ack_conn = kLocalConn,
                  uint64_t ack_token = kPeerGrant) {
  FrameHeader h{};
  h.version = wire::kWireVersion;
  h.opcode = static_cast<uint8_t>(Opcode::kReset);
  h.dst_queue = kLocalQueue;
  h.src_queue = kPeerQueue;
  h.src_ep_queue = kPeerQueue;
  h.src_session = kPeerSession;
  h.dst_session = dst_session;
  h.ack_conn = ack_conn;
  h.ack_token = ack_token;
  return h;
}

// The peer opens its connection `conn` to us.
FrameHeader hello(uint32_t session = kPeerSession, uint16_t conn = kPeerConn,
                  uint32_t max_payload = 256) {
  FrameHeader h{};
  h.version = wire::kWireVersion;
  h.opcode = static_cast<uint8_t>(Opcode::kHello);
  h.dst_queue = kLocalQueue;
  h.src_queue = kPeerQueue;
  h.src_ep_queue = kPeerQueue;
  h.src_session = session;
  h.conn = conn;
  h.token = kPeerNonce;
  h.payload_len = h.msg_len = sizeof(wire::HandshakeBody);
  h.cq_data = max_payload;  // not on the wire: encode() writes the body from it
  return h;
}

// The peer's answer to our HELLO (kAnyToken: the nonce it carried),
// granting `grant`.
FrameHeader hello_ack(uint64_t grant = kPeerGrant, uint32_t session = kPeerSession,
                      uint16_t ack_conn = kLocalConn, uint32_t max_payload = 256) {
  FrameHeader h = hello(session, 0, max_payload);
  h.opcode = static_cast<uint8_t>(Opcode::kHelloAck);
  h.token = 0;
  h.dst_session = kLocalSession;
  h.ack_conn = ack_conn;
  h.ack_token = kAnyToken;
  h.tag = grant;  // not on the wire: encode() writes the body from it
  return h;
}

// Frame bytes: headers, payload_len pattern bytes (or a HELLO's body),
// sealed.
std::vector<uint8_t> encode(const FrameHeader& h, const uint8_t* src_mac = kPeerMac,
                            const uint8_t* dst_mac = kLocalMac,
                            uint16_t ether_type = wire::kDefaultEtherType) {
  std::vector<uint8_t> bytes(wire::kHeadersSize + h.payload_len);
  encode_headers(bytes.data(), dst_mac, src_mac, ether_type, h);
  if (h.opcode == static_cast<uint8_t>(Opcode::kHello) ||
      h.opcode == static_cast<uint8_t>(Opcode::kHelloAck)) {
    wire::HandshakeBody body{};
    body.token = htobe64(h.tag);
    body.max_payload = htobe32(static_cast<uint32_t>(h.cq_data));
    FrameHeader wire_header = h;
    wire_header.tag = wire_header.cq_data = 0;
    encode_headers(bytes.data(), dst_mac, src_mac, ether_type, wire_header);
    std::memcpy(bytes.data() + wire::kHeadersSize, &body,
                std::min<size_t>(sizeof(body), h.payload_len));
  } else {
    for (size_t j = 0; j < h.payload_len; ++j)
      bytes[wire::kHeadersSize + j] = static_cast<uint8_t>(h.msg_id * 17 + h.offset + j);
  }
  seal_frame(bytes.data(), bytes.size());
  return bytes;
}

// A frame whose payload is `body` (a rendezvous announcement's or a pull's),
// sealed.
std::vector<uint8_t> encode_body(FrameHeader h, const void* body, uint16_t length) {
  h.payload_len = h.msg_len = length;
  std::vector<uint8_t> bytes = encode(h);
  std::memcpy(bytes.data() + wire::kHeadersSize, body, length);
  seal_frame(bytes.data(), bytes.size());
  return bytes;
}

std::vector<uint8_t> announcement(uint32_t seq, uint32_t msg_id, uint64_t length) {
  wire::RendezvousBody body{};
  body.length = htobe64(length);
  return encode_body(message(seq, msg_id, 0, wire::kFlagRendezvous), &body, sizeof(body));
}

std::vector<uint8_t> pull(uint32_t seq, uint32_t msg_id, uint32_t announced, uint64_t length) {
  wire::PullBody body{};
  body.msg_id = htobe32(announced);
  body.conn = htobe16(kLocalConn);
  body.length = htobe64(length);
  return encode_body(request(message(seq, msg_id, 0, wire::kFlagPull)), &body, sizeof(body));
}

class Seed {
 public:
  // A record: clock step, operation, then the frame.  Frames built here are
  // sealed already; the seal bit keeps mutations of them sealed too.
  Seed& add(uint8_t clock, const std::vector<uint8_t>& frame, uint8_t op = kOpNone,
            bool seal = true, bool burst = false) {
    bytes_.push_back(ctl(clock, op, seal, burst));
    bytes_.push_back(static_cast<uint8_t>(frame.size() >> 8));
    bytes_.push_back(static_cast<uint8_t>(frame.size()));
    bytes_.insert(bytes_.end(), frame.begin(), frame.end());
    return *this;
  }
  Seed& add(uint8_t clock, const FrameHeader& h, uint8_t op = kOpNone) {
    return add(clock, encode(h), op);
  }
  // No frame: only time passes (and the operation runs).
  Seed& wait(uint8_t clock, uint8_t op = kOpNone) { return add(clock, std::vector<uint8_t>{}, op); }
  Seed& burst(const FrameHeader& h) { return add(k0, encode(h), kOpNone, true, true); }
  // Both handshakes: the peer answers our HELLO (our initial sends then
  // flow) and opens its own connection to us.
  Seed& open() { return add(k20us, hello_ack()).add(k20us, hello()); }

  const std::vector<uint8_t>& bytes() const { return bytes_; }

 private:
  std::vector<uint8_t> bytes_;
};

int write_seed(const std::filesystem::path& dir, const char* name, const Seed& seed) {
  const std::filesystem::path path = dir / name;
  std::FILE* out = std::fopen(path.c_str(), "wb");
  if (out == nullptr) {
    std::perror(path.c_str());
    return 1;
  }
  const size_t written = std::fwrite(seed.bytes().data(), 1, seed.bytes().size(), out);
  if (std::fclose(out) != 0 || written != seed.bytes().size()) {
    std::perror(path.c_str());
    return 1;
  }
  return 0;
}

int write_all(const std::filesystem::path& dir) {
  int errors = 0;
  auto put = [&](const char* name, const Seed& seed) { errors += write_seed(dir, name, seed); };

  // --- Valid exchanges -----------------------------------------------------
  // Our initial sends wait for our HELLO's answer; then: seq 1 (100 bytes),
  // seq 2..4 (700 bytes, tagged); the third (40 bytes, seq 5) waits for the
  // window.  Seeds that talk to us open both connections first (open()).

  put("valid_handshake_data",
      Seed().add(k20us, hello()).add(k20us, message(1, 1, 100)).wait(k20us));
  put("valid_handshake_repeated", Seed()
                                      .add(k20us, hello())
                                      .add(k20us, hello())  // our answer was lost
                                      .add(k20us, message(1, 1, 100))
                                      .add(k20us, hello())  // a late copy: the same token
                                      .add(k20us, message(2, 2, 10))
                                      .add(k1ms, hello_ack())
                                      .add(k1ms, hello_ack())  // late copy: ignored
                                      .add(k200us, ack(5, 256)));
  put("valid_data_piggyback_ack", Seed()
                                      .open()
                                      .add(k200us, with_ack(message(1, 1, 50), 5))
                                      .add(k20us, with_ack(message(2, 2, 10), 6, 200)));
  put("valid_ack_all",
      Seed().open().add(k200us, ack(5, 256)).add(k200us, ack(6, 256)).wait(k20us));
  // Seq 2 lost: SACK of 3 and 4, three duplicate acks, then the repair.
  put("valid_ack_sack", Seed()
                            .open()
                            .add(k200us, ack(2, 64, 0b11))
                            .add(k20us, ack(2, 64, 0b11))
                            .add(k20us, ack(2, 64, 0b11))
                            .add(k20us, ack(2, 64, 0b11))
                            .add(k200us, ack(5, 64))
                            .add(k200us, ack(6, 64)));
  {
    // The send after the RESET opens our next transmit connection, with a
    // HELLO of its own; the peer grants it another token.  That send is a
    // request (msg_id 4); then its response arrives.
    constexpr uint64_t kGrant2 = kPeerGrant + 1;
    FrameHeader next_ack = ack(2);
    next_ack.ack_conn = kLocalConn + 1;
    next_ack.ack_token = kGrant2;
    put("valid_reset", Seed()
                           .open()
                           .add(k200us, reset())
                           .wait(k1ms, kOpSend)
                           .add(k1ms, hello_ack(kGrant2, kPeerSession, kLocalConn + 1))
                           .add(k1ms, next_ack)
                           .add(k20us, response(message(1, 1, 100), 4))
                           .wait(k20us));
  }
  // Before the peer answers our HELLO: it refuses it (it holds another
  // session for us, say); our sends fail and the next one starts over.
  put("valid_reset_of_hello",
      Seed().add(k200us, reset(kLocalSession, kLocalConn, kAnyToken)).wait(k1ms, kOpSend));
  put("valid_reset_after_open", Seed()
                                    .open()
                                    .add(k200us, ack(2))
                                    .add(k20us, message(1, 1, 30))
                                    .add(k1ms, reset())
                                    .add(k1ms, message(2, 2, 30)));
  put("valid_multi_segment", Seed()
                                 .open()
                                 .add(k20us, data(1, 1, 400, 0, 256))
                                 .add(k20us, data(2, 1, 400, 256, 144))
                                 .add(k20us, tagged(data(3, 2, 1000, 0, 256), 0x12AB))
                                 .add(k20us, tagged(data(4, 2, 1000, 256, 256), 0x12AB))
                                 .add(k20us, tagged(data(5, 2, 1000, 512, 256), 0x12AB))
                                 .add(k20us, tagged(data(6, 2, 1000, 768, 232), 0x12AB)));
  put("valid_multi_segment_reordered", Seed()
                                           .open()
                                           .add(k20us, data(4, 1, 900, 768, 132))
                                           .add(k20us, data(2, 1, 900, 256, 256))
                                           .add(k20us, data(4, 1, 900, 768, 132))
                                           .add(k20us, data(1, 1, 900, 0, 256))
                                           .add(k200us, data(3, 1, 900, 512, 256))
                                           .add(k200us, data(2, 1, 900, 256, 256)));
  {
    FrameHeader h = tagged(message(1, 1, 64), 0x1299);
    h.flags |= wire::kFlagRemoteData;
    h.cq_data = 0xDA7A;
    put("valid_tagged_remote_data", Seed().open().add(k20us, h).add(k20us, message(2, 2, 8)));
  }
  // Three receives taken, the fourth message is unexpected; a receive posted
  // later takes it at once.  Then one claimed while it is still arriving.
  put("valid_unexpected_then_post", Seed()
                                        .open()
                                        .add(k20us, message(1, 1, 100))
                                        .add(k20us, message(2, 2, 100))
                                        .add(k20us, message(3, 3, 100))
                                        .add(k20us, message(4, 4, 100))
                                        .wait(k20us, kOpPostRecv)
                                        .add(k20us, data(5, 5, 300, 0, 256))
                                        .wait(k20us, kOpPostRecv)
                                        .add(k20us, data(6, 5, 300, 256, 44)));
  // A message bigger than the unexpected budget with no receive: the window
  // closes; a receive posted later reopens it.
  put("valid_budget_stall", Seed()
                                .open()
                                .add(k20us, message(1, 1, 10))
                                .add(k20us, message(2, 2, 10))
                                .add(k20us, message(3, 3, 10))
                                .add(k20us, data(4, 4, 9000, 0, 256))
                                .add(k20us, data(5, 4, 9000, 256, 256))
                                .wait(k1ms, kOpPostRecv)
                                .add(k20us, data(6, 4, 9000, 512, 256)));
  put("valid_zero_length",
      Seed().open().add(k20us, message(1, 1, 0)).add(k20us, message(2, 2, 0)));
  {
    // The peer restarts: its new incarnation opens a connection (which
    // fails the old one's operations once its first segment proves it),
    // then answers the HELLO we send it in turn.
    constexpr uint32_t kNew = kPeerSession + 1;
    constexpr uint64_t kGrant2 = kPeerGrant + 2;
    FrameHeader next = message(1, 1, 20);
    next.src_session = kNew;
    FrameHeader new_ack = ack(1);
    new_ack.src_session = kNew;
    new_ack.ack_conn = kLocalConn + 1;
    new_ack.ack_token = kGrant2;
    put("valid_peer_restart", Seed()
                                  .open()
                                  .add(k20us, with_ack(message(1, 1, 20), 2))
                                  .add(k1ms, hello(kNew))
                                  .add(k20us, next)
                                  .add(k20us, hello_ack(kGrant2, kNew, kLocalConn + 1))
                                  .add(k1ms, new_ack));
  }
  // Nothing heard: our HELLO retransmitted, then given up at the peer
  // timeout.  And once open, the retransmission timer, peer timeout and
  // tail loss probes once an RTT is known.
  put("valid_timers_hello", Seed()
                                .wait(k5ms)
                                .wait(k10ms)
                                .wait(k50ms)
                                .wait(k200ms)
                                .wait(k1s)
                                .wait(k2s)
                                .wait(k6s));
  put("valid_timers_rto", Seed()
                              .open()
                              .wait(k5ms)
                              .wait(k10ms)
                              .wait(k50ms)
                              .wait(k200ms)
                              .wait(k1s)
                              .wait(k2s)
                              .wait(k6s));
  put("valid_timers_probe", Seed()
                                .open()
                                .add(k200us, ack(2))
                                .wait(k1ms)
                                .wait(k1ms)
                                .wait(k5ms)
                                .wait(k10ms));
  put("valid_window_zero", Seed()
                               .open()
                               .add(k200us, ack(2, 0))
                               .add(k200us, ack(5, 0))
                               .wait(k10ms)
                               .wait(k50ms)
                               .add(k1ms, ack(5, 16)));
  // The two sends: a request (msg_id 4, seq 6), 0 bytes (msg_id 5, seq 7).
  put("valid_bidirectional", Seed()
                                 .open()
                                 .add(k20us, message(1, 1, 200))
                                 .add(k200us, with_ack(message(2, 2, 20), 3, 32))
                                 .wait(k20us, kOpSend)
                                 .add(k200us, with_ack(message(3, 3, 20, 0), 6, 32))
                                 .wait(k20us, kOpSend)
                                 .add(k200us, ack(7, 32))
                                 .add(k200us, with_ack(response(message(4, 4, 50, 0), 4), 8))
                                 .wait(k20us));
  put("valid_burst", Seed()
                         .open()
                         .burst(data(1, 1, 600, 0, 256))
                         .burst(data(2, 1, 600, 256, 256))
                         .burst(ack(5, 64))
                         .add(k0, data(3, 1, 600, 512, 88)));
  put("valid_cancel", Seed()
                          .open()
                          .wait(k20us, kOpCancelRecv)
                          .add(k20us, message(1, 1, 8))
                          .wait(k20us, kOpCancelRecv));

  // Requests for our handler: one segment (odd length: error status), then
  // three (even: status 0).  The responses queue behind our initial sends
  // (window 4); once those are acked they go out (seq 6, seq 7..8), and are
  // acked in turn.
  put("valid_request_served", Seed()
                                  .open()
                                  .add(k20us, request(message(1, 1, 33)))
                                  .add(k20us, request(data(2, 2, 600, 0, 256)))
                                  .add(k20us, request(data(3, 2, 600, 256, 256)))
                                  .add(k20us, request(data(4, 2, 600, 512, 88)))
                                  .add(k200us, ack(5, 64))
                                  .add(k200us, ack(6, 64))
                                  .add(k200us, ack(9, 64)));
  // A request in three segments whose first byte (msg_id 4: 4 * 17) makes
  // the fuzz target's placer place it: the head stays, the rest goes to its
  // target block as the segments arrive, then the handler runs.
  put("valid_request_placed", Seed()
                                  .open()
                                  .add(k20us, request(data(1, 4, 600, 0, 256)))
                                  .add(k20us, request(data(2, 4, 600, 256, 256)))
                                  .add(k20us, request(data(3, 4, 600, 512, 88)))
                                  .add(k200us, ack(5, 64))
                                  .add(k200us, ack(7, 64)));
  // Three sends, the third a request (msg_id 4); all acked, then a response
  // in two segments, bigger than the response buffer (128 bytes).
  put("valid_request_response", Seed()
                                    .open()
                                    .add(k200us, ack(5, 64), kOpSend)
                                    .wait(k20us, kOpSend)
                                    .add(k200us, ack(7, 64))
                                    .add(k20us, response(data(1, 1, 300, 0, 256), 4))
                                    .add(k20us, response(data(2, 1, 300, 256, 44), 4))
                                    .wait(k20us));

  // Rendezvous in: the peer announces 200 bytes; the first posted receive
  // (512 bytes) takes it and we pull it (our msg_id 4, after the three
  // initial sends); the peer acks and answers with the data.
  put("valid_rendezvous_in", Seed()
                                 .open()
                                 .add(k20us, announcement(1, 1, 200))
                                 .add(k200us, ack(5, 64))
                                 .add(k200us, ack(7, 64))
                                 .add(k20us, response(data(2, 2, 200, 0, 200), 4))
                                 .wait(k200us));
  // Rendezvous out: the seventh send (3000 bytes, msg_id 7) is announced;
  // the peer pulls 3000 bytes of it, and we answer from the send's buffer;
  // the peer acks it all and the send completes.
  put("valid_rendezvous_out", Seed()
                                  .open()
                                  .add(k200us, ack(5, 64), kOpSend)
                                  .wait(k20us, kOpSend)
                                  .wait(k20us, kOpSend)
                                  .wait(k20us, kOpSend)
                                  .add(k200us, ack(8, 64))
                                  .add(k200us, ack(11, 64))
                                  .add(k20us, pull(1, 1, 7, 3000))
                                  .add(k200us, ack(16, 64))
                                  .add(k200us, ack(20, 64))
                                  .add(k200us, ack(23, 64))
                                  .wait(k200us));

  // --- Hostile frames ------------------------------------------------------

  {
    std::vector<uint8_t> frame = encode(message(1, 1, 100));
    frame.resize(50);
    std::vector<uint8_t> ether_only = encode(message(1, 1, 100));
    ether_only.resize(13);
    put("bad_truncated_headers", Seed().add(k20us, frame).add(k20us, ether_only));
  }
  {
    // Announces 200 bytes, carries 100 (sealed over the 100 it has).
    std::vector<uint8_t> frame = encode(message(1, 1, 100));
    frame[sizeof(wire::EtherHeader) + offsetof(FrameHeader, payload_len) + 1] = 200;
    put("bad_truncated_payload", Seed().open().add(k20us, frame, kOpNone, false));
  }
  {
    FrameHeader next = message(1, 1, 10);
    next.version = wire::kWireVersion + 1;
    FrameHeader previous = next;
    previous.version = wire::kWireVersion - 1;
    FrameHeader zero = next;
    zero.version = 0;
    put("bad_version", Seed()
                           .open()
                           .add(k20us, next)
                           .add(k20us, previous)
                           .add(k20us, zero)
                           .add(k20us, message(1, 1, 10)));
  }
  {
    FrameHeader h = message(1, 1, 10);
    h.opcode = 0;
    FrameHeader nine = h;
    nine.opcode = 9;
    FrameHeader high = h;
    high.opcode = 0xFF;
    put("bad_opcode", Seed().open().add(k20us, h).add(k20us, nine).add(k20us, high));
  }
  {
    // encode_headers writes what it is given; decode_frame must refuse it.
    put("bad_length", Seed()
                          .open()
                          .add(k20us, data(1, 1, 250, 200, 100))
                          .add(k20us, data(1, 1, 100, 300, 0))
                          .add(k20us, data(1, 1, 0xFFFFFFFF, 0xFFFFFF80, 0xFF)));
  }
  put("bad_seq_far_ahead", Seed()
                               .open()
                               .add(k20us, data(1, 1, 600, 0, 256))
                               .add(k20us, data(1000, 1, 600, 256, 256))
                               .add(k20us, data(1 + kMaxWindow, 1, 600, 256, 256))
                               .add(k20us, data(0x80000001, 1, 600, 256, 256)));
  put("bad_seq_far_behind", Seed()
                                .open()
                                .add(k20us, message(1, 1, 10))
                                .add(k20us, message(0xFFFFFF00, 1, 10))
                                .add(k20us, message(0x80000002, 1, 10))
                                .add(k20us, message(1, 1, 10)));
  {
    FrameHeader stale = message(1, 1, 10);
    stale.dst_session = 0xDEAD0001;
    FrameHeader stale_ack = ack(5);
    stale_ack.dst_session = 0xDEAD0001;
    put("bad_unknown_session", Seed().open().add(k20us, stale).add(k20us, stale_ack));
  }
  {
    // A stranger that never completed a handshake: its data (any token),
    // acks and RESETs open nothing; its HELLOs are answered and forgotten.
    FrameHeader h = message(1, 1, 16, 0);
    h.src_queue = 9;
    h.src_ep_queue = 9;
    h.src_session = 0x5E55;
    h.dst_session = 0;
    h.token = 0x12345678;
    FrameHeader a = ack(1);
    a.src_queue = 9;
    a.src_ep_queue = 9;
    a.src_session = 0x5E55;
    a.dst_session = 0;
    FrameHeader stranger_hello = hello(0x5E55);
    stranger_hello.src_queue = 9;
    stranger_hello.src_ep_queue = 9;
    put("bad_stranger_no_handshake", Seed()
                                         .add(k20us, encode(h, kStrangerMac))
                                         .add(k20us, encode(a, kStrangerMac))
                                         .add(k20us, encode(reset(), kStrangerMac))
                                         .add(k20us, encode(stranger_hello, kStrangerMac))
                                         .add(k20us, encode(stranger_hello, kStrangerMac))
                                         .add(k20us, encode(h, kStrangerMac)));
  }
  {
    // HELLOs without a body or a nonce; HELLO_ACKs echoing another nonce,
    // granting token 0 or a zero payload, or when we wait for none.
    FrameHeader short_hello = hello();
    short_hello.payload_len = short_hello.msg_len = 4;
    FrameHeader no_nonce = hello();
    no_nonce.token = 0;
    FrameHeader wrong_echo = hello_ack();
    wrong_echo.ack_token = 0x0BADECC0;
    FrameHeader zero_grant = hello_ack(0);
    FrameHeader zero_payload = hello_ack(kPeerGrant, kPeerSession, kLocalConn, 0);
    put("bad_handshakes", Seed()
                              .add(k20us, short_hello)
                              .add(k20us, no_nonce)
                              .add(k20us, wrong_echo)
                              .add(k20us, zero_grant)
                              .add(k20us, zero_payload)
                              .add(k20us, hello_ack())
                              .add(k20us, hello_ack(kPeerGrant + 7)));
  }
  {
    std::vector<uint8_t> frame = encode(message(1, 1, 32));
    frame[sizeof(wire::EtherHeader) + offsetof(FrameHeader, integrity) + 7] ^= 0x01;
    std::vector<uint8_t> payload = encode(message(1, 1, 32));
    payload.back() ^= 0x80;
    std::vector<uint8_t> source = encode(message(1, 1, 32));
    source[6] ^= 0x04;  // the Ethernet source address is covered too
    put("bad_checksum", Seed()
                            .open()
                            .add(k20us, frame, kOpNone, false)
                            .add(k20us, payload, kOpNone, false)
                            .add(k20us, source, kOpNone, false));
  }
  {
    const uint8_t other_mac[6] = {0x02, 0, 0, 0, 0, 0x0C};
    FrameHeader queue = message(1, 1, 10);
    queue.dst_queue = 2;
    put("bad_not_ours", Seed()
                            .open()
                            .add(k20us, encode(message(1, 1, 10), kPeerMac, kLocalMac, 0x0800))
                            .add(k20us, encode(message(1, 1, 10), kPeerMac, other_mac))
                            .add(k20us, queue));
  }
  {
    // A second sender with the endpoint's second network key: its
    // handshake, a message and a request are taken; a frame on its
    // connection with the other key (one the endpoint also accepts) is not.
    auto second = [](FrameHeader h) {
      h.src_queue = h.src_ep_queue = kPeerQueue + 1;
      h.auth_key = kSecondKey;
      return h;
    };
    FrameHeader other_key = second(message(3, 3, 10));
    other_key.auth_key = 0;
    put("valid_second_key", Seed()
                                .open()
                                .add(k20us, second(hello()))
                                .add(k20us, second(message(1, 1, 10)))
                                .add(k20us, second(request(message(2, 2, 64))))
                                .add(k20us, other_key)
                                .add(k20us, second(message(3, 3, 10)))
                                .wait(k1ms));
  }
  {
    // Another job's network key: dropped unanswered, then the real message
    // is taken.
    FrameHeader foreign = message(1, 1, 10);
    foreign.auth_key = 0x5EC2E7;
    put("bad_wrong_auth_key", Seed().open().add(k20us, foreign).add(k20us, message(1, 1, 10)));
  }
  {
    // A sender claiming an address queue above its own, or far below.
    FrameHeader above = message(1, 1, 10);
    above.src_ep_queue = kPeerQueue + 1;
    FrameHeader far = message(1, 1, 10);
    far.src_queue = 200;
    far.src_ep_queue = 200 - kMaxAddressSpan;
    put("bad_address_queue",
        Seed().open().add(k20us, above).add(k20us, far).add(k20us, message(1, 1, 10)));
  }
  put("bad_payload_over_max",
      Seed().open().add(k20us, message(1, 1, 300)).add(k20us, message(1, 1, 20)));
  put("bad_msg_len_over_max", Seed()
                                  .open()
                                  .add(k20us, data(1, 1, 100000, 0, 256))
                                  .add(k20us, data(1, 1, 70000, 0, 100)));
  put("bad_ack_never_sent", Seed()
                                .open()
                                .add(k200us, ack(100))
                                .add(k200us, ack(0x80000001))
                                .add(k200us, ack(0))
                                .add(k200us, ack(5)));
  {
    FrameHeader wrong_id = data(2, 9, 600, 256, 256);
    put("bad_not_continuing", Seed()
                                  .open()
                                  .add(k20us, data(1, 1, 600, 0, 256))
                                  .add(k20us, wrong_id)
                                  .add(k20us, data(2, 1, 600, 0, 256))
                                  .add(k20us, data(2, 1, 700, 256, 256))
                                  .add(k20us, data(3, 1, 600, 512, 88))
                                  .add(k20us, data(2, 1, 600, 256, 256)));
  }
  {
    FrameHeader other = message(2, 2, 10, 0);
    other.src_session = 0x0BAD0BAD;
    FrameHeader other_ack = ack(5);
    other_ack.src_session = 0x0BAD0BAD;
    put("bad_stale_src_session",
        Seed().open().add(k20us, message(1, 1, 10)).add(k20us, other).add(k20us, other_ack));
  }
  {
    FrameHeader wrong_token = ack(2);
    wrong_token.ack_token = kPeerGrant ^ 0x100;
    put("bad_forged_reset", Seed()
                                .open()
                                .add(k200us, ack(2))
                                .add(k20us, reset(0))
                                .add(k20us, reset(0x0BAD))
                                .add(k20us, reset(kLocalSession, kLocalConn, kPeerGrant + 3))
                                .add(k20us, wrong_token)
                                .add(k1ms, ack(5)));
  }
  {
    FrameHeader zero = message(1, 1, 10);
    zero.src_session = 0;
    put("bad_src_session_zero", Seed().open().add(k20us, zero).add(k20us, message(2, 2, 10)));
  }
  {
    // After conn 1 opened: a straggler of conn 0, a segment of conn 2 before
    // its handshake, an ack and a RESET naming a transmit connection of ours
    // that does not exist, then conn 2 opened properly.
    FrameHeader straggler = message(2, 2, 10, 0);
    straggler.conn = kPeerConn - 1;
    FrameHeader unopened = message(2, 2, 10, 0);
    unopened.conn = kPeerConn + 1;
    FrameHeader wrong_ack = ack(5);
    wrong_ack.ack_conn = kLocalConn + 6;
    FrameHeader reopened = message(1, 1, 10);
    reopened.conn = kPeerConn + 1;
    put("bad_stale_conn", Seed()
                              .open()
                              .add(k20us, message(1, 1, 10))
                              .add(k20us, straggler)
                              .add(k20us, unopened)
                              .add(k20us, wrong_ack)
                              .add(k20us, reset(kLocalSession, kLocalConn + 1))
                              .add(k20us, hello(kPeerSession, kPeerConn + 1))
                              .add(k20us, reopened)
                              .add(k20us, ack(5)));
  }
  {
    // A response to no request of ours; one interleaved with a message; a
    // request segment continuing a message (same msg_id, offset, length);
    // a response after our request (msg_id 4) already failed by a RESET.
    FrameHeader continuing = request(data(3, 2, 600, 256, 256));
    put("bad_remote_streams", Seed()
                                  .open()
                                  .add(k20us, response(message(1, 1, 40), 99))
                                  .add(k20us, data(2, 2, 600, 0, 256))
                                  .add(k20us, response(data(3, 3, 600, 256, 256), 2))
                                  .add(k20us, continuing)
                                  .add(k20us, data(4, 2, 600, 512, 88))
                                  .add(k20us, request(data(4, 2, 600, 512, 88)))
                                  .add(k200us, ack(5, 64), kOpSend)
                                  .add(k200us, ack(6, 64))
                                  .add(k20us, reset())
                                  .add(k20us, response(message(5, 5, 10), 4, -1)));
  }
  {
    // Our request (msg_id 4) is answered in two segments with a RESET of
    // our connection between them: the second must go nowhere, the request
    // having failed (and its buffer gone) at the RESET.
    put("bad_response_after_reset", Seed()
                                        .open()
                                        .add(k200us, ack(5, 64), kOpSend)
                                        .wait(k20us, kOpSend)
                                        .add(k200us, ack(7, 64))
                                        .add(k20us, response(data(1, 1, 300, 0, 256), 4))
                                        .add(k20us, reset())
                                        .add(k20us, response(data(2, 1, 300, 256, 44), 4))
                                        .wait(k20us));
  }
  // A request announcing a message far bigger than the frames it will ever
  // get: no more than max_msg_size may be set aside for it (with the
  // provider's limits, see fuzz_receive_path.h, it used to be 512 MiB).
  put("bad_request_huge_msg_len", Seed()
                                      .open()
                                      .add(k20us, request(data(1, 1, 0x20000000, 0, 16)))
                                      .add(k20us, request(data(2, 1, 0x20000000, 16, 16)))
                                      .add(k20us, request(data(1, 1, 60000, 0, 16))));
  put("bad_sack_beyond_sent", Seed()
                                  .open()
                                  .add(k200us, ack(1, 64, ~uint64_t{0}))
                                  .add(k200us, ack(3, 64, ~uint64_t{0})));
  return errors;
}

}  // namespace
}  // namespace ofi_dpdk::proto::fuzz

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s CORPUS_DIR\n", argv[0]);
    return 2;
  }
  std::error_code error;
  std::filesystem::create_directories(argv[1], error);
  if (error) {
    std::fprintf(stderr, "%s: %s\n", argv[1], error.message().c_str());
    return 1;
  }
  return ofi_dpdk::proto::fuzz::write_all(argv[1]) == 0 ? 0 : 1;
}
