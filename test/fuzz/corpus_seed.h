// corpus_seed.h: what make_corpus builds its seeds from: the peer's frames
// (data, acks, handshakes, resets, requests, rendezvous) sealed into bytes,
// Seed (the records of one corpus file) and writing one.  Header-only.
#pragma once

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

using wire::FrameHeader;
using wire::Opcode;

inline constexpr uint8_t kStrangerMac[6] = {0x02, 0x00, 0x00, 0x00, 0x00, 0x5E};

// Clock steps (indexes into kClockSteps) used below.
inline constexpr uint8_t k0 = 0, k20us = 3, k200us = 5, k1ms = 6, k5ms = 8, k10ms = 9, k50ms = 11,
                         k200ms = 12, k1s = 13, k2s = 14, k6s = 15;

// Connection numbers (FrameHeader::conn): the peer's transmit connection,
// and ours, which the engine numbers from 1.
inline constexpr uint16_t kPeerConn = 1;
inline constexpr uint16_t kLocalConn = 1;
// What the peer's HELLO carries, and the token it grants our connection.
inline constexpr uint64_t kPeerNonce = 0x9E11C001;
inline constexpr uint64_t kPeerGrant = 0x6EA70001;

// A data segment from the peer on the connection its handshake opened:
// sessions right, our granted token (kAnyToken), no ack.
inline FrameHeader data(uint32_t seq, uint32_t msg_id, uint32_t msg_len, uint32_t offset,
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
inline FrameHeader message(uint32_t seq, uint32_t msg_id, uint16_t length, uint16_t flags = 0) {
  return data(seq, msg_id, length, 0, length, flags);
}

inline FrameHeader tagged(FrameHeader h, uint64_t tag) {
  h.opcode = static_cast<uint8_t>(Opcode::kTagged);
  h.tag = tag;
  return h;
}

// A request segment for the endpoint's handler.
inline FrameHeader request(FrameHeader h) {
  h.opcode = static_cast<uint8_t>(Opcode::kRequest);
  return h;
}

// A response segment: answers our request `request_id` with `status`.
inline FrameHeader response(FrameHeader h, uint32_t request_id, int status = 0) {
  h.opcode = static_cast<uint8_t>(Opcode::kResponse);
  h.flags |= wire::kFlagRemoteData;
  h.tag = request_id;
  h.cq_data = static_cast<uint64_t>(static_cast<int64_t>(status));
  return h;
}

inline FrameHeader with_ack(FrameHeader h, uint32_t ack, uint16_t window = 64) {
  h.flags |= wire::kFlagAckValid;
  h.ack_conn = kLocalConn;
  h.ack_token = kPeerGrant;
  h.ack = ack;
  h.window = window;
  return h;
}

// The peer's ACK: cumulative ack, window, SACK bits.
inline FrameHeader ack(uint32_t next_expected, uint16_t window = 64, uint64_t sack = 0) {
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
inline FrameHeader reset(uint32_t dst_session = kLocalSession, uint16_t ack_conn = kLocalConn,
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
inline FrameHeader hello(uint32_t session = kPeerSession, uint16_t conn = kPeerConn,
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
inline FrameHeader hello_ack(uint64_t grant = kPeerGrant, uint32_t session = kPeerSession,
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
inline std::vector<uint8_t> encode(const FrameHeader& h, const uint8_t* src_mac = kPeerMac,
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
inline std::vector<uint8_t> encode_body(FrameHeader h, const void* body, uint16_t length) {
  h.payload_len = h.msg_len = length;
  std::vector<uint8_t> bytes = encode(h);
  std::memcpy(bytes.data() + wire::kHeadersSize, body, length);
  seal_frame(bytes.data(), bytes.size());
  return bytes;
}

inline std::vector<uint8_t> announcement(uint32_t seq, uint32_t msg_id, uint64_t length) {
  wire::RendezvousBody body{};
  body.length = htobe64(length);
  return encode_body(message(seq, msg_id, 0, wire::kFlagRendezvous), &body, sizeof(body));
}

inline std::vector<uint8_t> pull(uint32_t seq, uint32_t msg_id, uint32_t announced,
                                 uint64_t length) {
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

inline int write_seed(const std::filesystem::path& dir, const char* name, const Seed& seed) {
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

// The seeds, by kind: valid exchanges (make_corpus_valid.cc) and hostile
// frames (make_corpus_hostile.cc).  Each returns how many files it could
// not write.
int write_valid_seeds(const std::filesystem::path& dir);
int write_hostile_seeds(const std::filesystem::path& dir);

}  // namespace ofi_dpdk::proto::fuzz
