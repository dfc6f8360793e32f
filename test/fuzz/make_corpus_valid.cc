// make_corpus_valid.cc: the corpus's valid exchanges with the fuzzed
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

int write_valid_seeds(const std::filesystem::path& dir) {
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
  put("valid_ack_all", Seed().open().add(k200us, ack(5, 256)).add(k200us, ack(6, 256)).wait(k20us));
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
  put("valid_zero_length", Seed().open().add(k20us, message(1, 1, 0)).add(k20us, message(2, 2, 0)));
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
  put("valid_timers_hello",
      Seed().wait(k5ms).wait(k10ms).wait(k50ms).wait(k200ms).wait(k1s).wait(k2s).wait(k6s));
  put("valid_timers_rto",
      Seed().open().wait(k5ms).wait(k10ms).wait(k50ms).wait(k200ms).wait(k1s).wait(k2s).wait(k6s));
  put("valid_timers_probe",
      Seed().open().add(k200us, ack(2)).wait(k1ms).wait(k1ms).wait(k5ms).wait(k10ms));
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
  return errors;
}

}  // namespace ofi_dpdk::proto::fuzz
