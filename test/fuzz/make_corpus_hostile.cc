// make_corpus_hostile.cc: the corpus's hostile frames against the fuzzed
// endpoint (make_corpus.cc says what the corpus is).
#include <endian.h>

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <vector>

#include "lib/proto/frame_codec.h"
#include "test/fuzz/corpus_seed.h"
#include "test/fuzz/fuzz_receive_path.h"

namespace ofi_dpdk::proto::fuzz {

int write_hostile_seeds(const std::filesystem::path& dir) {
  int errors = 0;
  auto put = [&](const char* name, const Seed& seed) { errors += write_seed(dir, name, seed); };

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
  put("bad_msg_len_over_max",
      Seed().open().add(k20us, data(1, 1, 100000, 0, 256)).add(k20us, data(1, 1, 70000, 0, 100)));
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
  put("bad_sack_beyond_sent",
      Seed().open().add(k200us, ack(1, 64, ~uint64_t{0})).add(k200us, ack(3, 64, ~uint64_t{0})));
  return errors;
}

}  // namespace ofi_dpdk::proto::fuzz
