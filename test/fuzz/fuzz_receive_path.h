// fuzz_receive_path.h: the input format of the receive-path fuzz target and
// the world it builds, shared by the target (fuzz_receive_path.cc), the seed
// generator (make_corpus.cc) and the corpus runner (corpus_runner.cc).
//
// An input is a sequence of records, each one received frame:
//
//   record := ctl:u8  length:u16 (big-endian)  frame:u8[length]
//
// (length is clamped to the bytes left; a trailing partial record header is
// ignored).  Every record first advances the fake clock, then hands the frame
// to the receive path as the provider does (decode_frame, the dst MAC/queue
// checks, Engine::on_frame), then polls the engine and sends its outbox, then
// runs the record's operation.  The ctl byte:
//
//   bit 0     kCtlSeal   re-seal the frame's checksum before decoding, so that
//                        mutated headers get past the CRC check
//   bit 1     kCtlBurst  same receive burst as the next record: no poll and no
//                        flush after this frame
//   bits 2-3  operation  kOpNone, kOpPostRecv, kOpSend, kOpCancelRecv
//   bits 4-7  clock      index into kClockSteps
//
// After every record the endpoint's resources are checked against their
// bounds (connections, the unexpected budget, the reorder pool); once the
// peer fell silent at the end, the budget must be back to what the whole
// unexpected messages still waiting hold (nothing is left half-assembled).
//
// The world: one endpoint (kLocalMac, kLocalQueue, kLocalSession) with the
// receives of kRecvTemplates posted, kInitialSends queued to the peer
// (kPeerMac, kPeerQueue), whose session it learns from the peer's frames,
// and a request handler (RMA target side) whose response is described at
// kHandlerEcho.
//
// Tokens: a frame's `token` of kAnyToken stands for the token the endpoint
// granted in its latest HELLO_ACK, and an `ack_token` of kAnyToken for the
// nonce of its latest HELLO, so inputs get past the handshake (and mutated
// ones stay past it) without knowing the endpoint's secret.  The harness
// puts them in after decoding, as if the peer had read them off the wire.
// Everything is deterministic: same input, same run.
#pragma once

#include <cstddef>
#include <cstdint>

#include "lib/proto/transport.h"
#include "lib/proto/wire.h"

namespace ofi_dpdk::proto::fuzz {

inline constexpr uint8_t kLocalMac[6] = {0x02, 0x00, 0x00, 0x00, 0x00, 0x0B};
inline constexpr uint16_t kLocalQueue = 1;
inline constexpr uint32_t kLocalSession = 0xB0000012;
inline constexpr uint8_t kPeerMac[6] = {0x02, 0x00, 0x00, 0x00, 0x00, 0x0A};
inline constexpr uint16_t kPeerQueue = 0;
inline constexpr uint32_t kPeerSession = 0xA0000012;

inline constexpr uint64_t kAnyToken = ~uint64_t{0};

// The endpoint takes frames with network key 0 and with kSecondKey (an
// endpoint enabled with two FI_AUTH_KEY keys); a second sender, queue
// kPeerQueue + 1 of the peer's MAC, talks to it with kSecondKey.
inline constexpr uint32_t kSecondKey = 0x5EC0A2;

inline constexpr uint8_t kCtlSeal = 1u << 0;
inline constexpr uint8_t kCtlBurst = 1u << 1;
inline constexpr int kCtlOpShift = 2;
inline constexpr int kCtlClockShift = 4;
inline constexpr uint8_t kOpNone = 0;
inline constexpr uint8_t kOpPostRecv = 1;    // the next of kRecvTemplates, in turn
inline constexpr uint8_t kOpSend = 2;        // the next of kSendTemplates, in turn
inline constexpr uint8_t kOpCancelRecv = 3;  // the oldest receive still posted

inline constexpr uint8_t ctl(uint8_t clock_step, uint8_t op = kOpNone, bool seal = true,
                             bool burst = false) {
  return static_cast<uint8_t>(clock_step << kCtlClockShift | op << kCtlOpShift |
                              (burst ? kCtlBurst : 0) | (seal ? kCtlSeal : 0));
}

// Nanoseconds the clock advances before a record's frame.  They span the
// delayed ack (20 us), the retransmission timer (2 ms .. 200 ms) and the
// peer timeout (5 s).
inline constexpr uint64_t kClockSteps[16] = {
    0,           1'000,         5'000,         20'000,       50'000,     200'000,
    1'000'000,   2'000'000,     5'000'000,     10'000'000,   20'000'000, 50'000'000,
    200'000'000, 1'000'000'000, 2'000'000'000, 6'000'000'000};
inline constexpr uint64_t kStartNs = 1'000'000;  // not 0: the engine's "timer off"

// Small frames and budgets keep inputs short and limits reachable.  With
// OFI_DPDK_FUZZ_PROVIDER_LIMITS set in the environment, the provider's own
// message size and unexpected budget apply instead (drivers/ofi/dpdk_ep.cc):
// for hunting allocations a single frame can cause, with libFuzzer's
// -malloc_limit_mb / -rss_limit_mb.
inline TransportConfig fuzz_config(bool provider_limits = false) {
  TransportConfig config;
  config.max_payload = 256;
  config.max_msg_size = provider_limits ? size_t{1} << 30 : 64 * 1024;
  config.unexpected_bytes = provider_limits ? size_t{64} << 20 : 8 * 1024;
  config.max_outstanding_sends = 8;
  config.max_posted_recvs = 8;
  config.initial_window = 4;
  // The 3000-byte send template goes by rendezvous: announced, then served
  // to the peer's pull from the send's own buffer.
  config.rendezvous_bytes = 3000;
  // Small response budgets, so that requests meet them (a response is at
  // most kHandlerEcho bytes).
  config.connection_response_bytes = 600;
  config.response_bytes = 1200;
  return config;
}

struct RecvTemplate {
  bool tagged;
  uint64_t tag;
  uint64_t ignore;
  bool from_peer_only;  // directed at (kPeerMac, kPeerQueue)
  size_t iov_len[2];    // 0: no such iov
};

// Posted at start in this order; kOpPostRecv posts them again in turn.
inline constexpr RecvTemplate kRecvTemplates[] = {
    {false, 0, 0, false, {512, 0}},
    {false, 0, 0, true, {100, 300}},  // scatters over two buffers
    {true, 0x1234, 0xFF, false, {4096, 0}},
    {false, 0, 0, false, {16, 0}},  // truncates most messages
};

struct SendTemplate {
  size_t length;
  bool tagged;
  uint64_t tag;
  bool has_data;
  bool copy;            // inject: the buffer is freed as soon as send() returns
  size_t response_len;  // > 0: a request (RMA), with a response buffer this big
};

// The first three are queued at start: with max_payload 256 and an initial
// window of 4 they take msg_id 1, seq 1 (100 bytes); msg_id 2, seq 2..4
// (700 bytes); msg_id 3, seq 5 (40 bytes), which waits for the window.
// kOpSend sends them all in turn, starting at kInitialSends.
inline constexpr SendTemplate kSendTemplates[] = {
    {100, false, 0, false, false, 0},
    {700, true, 0x77, true, false, 0},
    {40, false, 0, false, true, 0},
    {64, false, 0, false, false, 128},  // a request: one segment, response <= 128
    {0, false, 0, false, false, 0},
    {257, true, 0x1234, false, false, 0},
    {3000, false, 0, true, false, 0},
    {600, false, 0, false, true, 16},  // a request of three segments, inject
};
inline constexpr size_t kInitialSends = 3;

// The request handler answers a request of n bytes with its first
// min(n, kHandlerEcho) bytes, and status 0 when n is even, kHandlerError
// when it is odd.
inline constexpr size_t kHandlerEcho = 300;
// A request whose first byte is a multiple of 4 is placed (RequestPlacer):
// its first kPlacedHead bytes stay for the handler, the rest go to a heap
// block of exactly their size, so a byte placed out of bounds is an
// AddressSanitizer report.  The handler then sees the head and the count
// placed, and echoes the head.
inline constexpr size_t kPlacedHead = 1;
inline constexpr int kHandlerError = 13;

}  // namespace ofi_dpdk::proto::fuzz
