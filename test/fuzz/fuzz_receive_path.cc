// fuzz_receive_path.cc: libFuzzer target for the receive path.  Arbitrary
// bytes go through what drivers/ofi/dpdk_progress.cc does with a received
// frame (decode_frame with the default EtherType, the dst MAC and dst queue
// checks, Engine::on_frame with the Segment built from the decoded frame),
// then Engine::poll and what Endpoint::flush does (outbox encoded, payload
// copied, sealed; frames_sent(); then completions).  fuzz_receive_path.h
// describes the input: a sequence of frames with clock steps and operations,
// fed to one engine that has receives posted, sends outstanding and a
// request handler, so the data, ACK, RESET, REQUEST and RESPONSE paths and
// the timers all see hostile input.
//
// Besides crashes and sanitizer reports, the harness aborts when an invariant
// breaks:
//   - stats counters only grow; frames_received counts every on_frame;
//   - every outbox frame is well formed (payload_len <= max_payload, its own
//     decode_frame says kOk); a MSG, TAGGED or REQUEST frame carries the
//     bytes of a send that has not completed yet, at the offset it names; a
//     RESPONSE frame carries an engine-owned response;
//   - every completion names a send or receive that is outstanding, once,
//     with a length and error that fit it (a request's error is the status
//     the peer chose, any value);
//   - outstanding_sends() matches the sends not completed, and once the peer
//     falls silent every send completes (after the peer timeout at most),
//     requests waiting for their response included.
// Buffers (response buffers too) are heap blocks of their exact size, freed
// the moment their operation completes (inject buffers: when send() returns),
// and each frame is freed after on_frame, so AddressSanitizer sees any late
// access.
//
// With OFI_DPDK_FUZZ_TRACE set in the environment it prints what each record
// did and the engine's counters at the end: to check what a seed reaches.
#include "test/fuzz/fuzz_receive_path.h"

#include <endian.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iterator>
#include <map>
#include <memory>
#include <vector>

#include "lib/proto/engine_state.h"
#include "lib/proto/frame_codec.h"

namespace ofi_dpdk::proto::fuzz {
namespace {

[[noreturn]] void invariant_failed(const char* what, int line) {
  std::fprintf(stderr, "fuzz_receive_path: invariant failed at line %d: %s\n", line, what);
  std::abort();
}

// Checked in every build type (NDEBUG does not remove it).
#define FUZZ_CHECK(cond)                            \
  do {                                              \
    if (!(cond)) invariant_failed(#cond, __LINE__); \
  } while (0)

constexpr size_t kStatsFields = sizeof(TransportStats) / sizeof(uint64_t);
static_assert(sizeof(TransportStats) == kStatsFields * sizeof(uint64_t));

// Rounds of (peer timeout + 1 s) after the input: persist probe, first
// segment, retransmission timer, peer timeout, with room to spare.
constexpr int kDrainRounds = 8;

bool tracing() {
  static const bool enabled = std::getenv("OFI_DPDK_FUZZ_TRACE") != nullptr;
  return enabled;
}

void trace_stats(const TransportStats& stats) {
  static constexpr const char* kNames[] = {
      "frames_sent",         "frames_received",     "retransmitted",    "acks_sent",
      "resets_sent",         "duplicates",          "out_of_window",    "stale_session",
      "bad_frames",          "stalled_no_buffer",   "fast_retransmits", "timeouts",
      "messages_sent",       "messages_received",   "peers_failed",     "requests_served",
      "wrong_key",           "hellos_sent",         "hellos_answered",  "connections_opened",
      "connections_evicted", "connections_refused", "reorder_full",     "bad_tokens",
      "rendezvous_sent",     "pulls_sent",          "pulls_served"};
  uint64_t values[kStatsFields];
  std::memcpy(values, &stats, sizeof(values));
  std::fprintf(stderr, "stats:");
  for (size_t i = 0; i < kStatsFields; ++i) {
    if (values[i] == 0) continue;
    if (i < std::size(kNames)) {
      std::fprintf(stderr, " %s=%llu", kNames[i], static_cast<unsigned long long>(values[i]));
    } else {  // a counter added since
      std::fprintf(stderr, " [%zu]=%llu", i, static_cast<unsigned long long>(values[i]));
    }
  }
  std::fprintf(stderr, "\n");
}

uint8_t pattern_byte(uint64_t id, size_t at) {
  return static_cast<uint8_t>(id * 131 + at * 7 + (at >> 8));
}

void* context_of(uint64_t id) {
  return reinterpret_cast<void*>(static_cast<uintptr_t>(id));
}
uint64_t id_of(void* context) {
  return reinterpret_cast<uintptr_t>(context);
}

struct PendingRecv {
  std::unique_ptr<uint8_t[]> buffers[2];
  size_t lengths[2] = {};
  size_t capacity = 0;
};

struct PendingSend {
  std::unique_ptr<uint8_t[]> buffer;  // null for inject (copy) sends
  size_t length = 0;
  std::unique_ptr<uint8_t[]> response;  // requests: where the response goes
  size_t response_len = 0;
  bool request = false;
};

bool provider_limits() {
  static const bool enabled = std::getenv("OFI_DPDK_FUZZ_PROVIDER_LIMITS") != nullptr;
  return enabled;
}

// The RMA target: see kHandlerEcho.
Response handle_request(uint64_t /*peer*/, const uint8_t* bytes, size_t length, size_t /*placed*/) {
  Response response;
  response.status = length % 2 == 0 ? 0 : kHandlerError;
  response.data.assign(bytes, bytes + std::min(length, kHandlerEcho));
  return response;
}

class World {
 public:
  World() : config_(fuzz_config(provider_limits())) {
    engine_ = std::make_unique<Engine>(config_, kLocalMac, kLocalQueue, kLocalSession);
    engine_->set_request_handler(handle_request);
    engine_->set_request_placer(
        [this](uint64_t, const uint8_t* first, size_t first_length, size_t request_length) {
          Placement placement;
          if (first_length == 0 || first[0] % 4 != 0 || request_length <= kPlacedHead)
            return placement;
          placed_.push_back(std::make_unique<uint8_t[]>(request_length - kPlacedHead));
          placement.header = kPlacedHead;
          placement.target = placed_.back().get();
          return placement;
        });
    engine_->set_accepted_keys({0, kSecondKey});
    for (size_t i = 0; i < std::size(kRecvTemplates); ++i) post_recv();
    for (size_t i = 0; i < kInitialSends; ++i) send();
    flush();
  }

  void run(const uint8_t* data, size_t size);

 private:
  void receive(uint8_t ctl, const uint8_t* bytes, size_t length);
  void post_recv();
  void send();
  void cancel_recv();
  void poll() { engine_->poll(now_); }
  void flush();
  void check_frame(const OutFrame& frame);
  void check_bundle(const OutFrame& frame);
  void check_completion(const Completion& done);
  void check_stats();

  TransportConfig config_;
  uint64_t now_ = kStartNs;
  uint64_t next_id_ = 1;
  size_t next_recv_template_ = 0;
  size_t next_send_template_ = 0;
  uint64_t frames_handed_ = 0;
  uint64_t granted_ = 0;  // token of our latest HELLO_ACK (kAnyToken)
  uint64_t nonce_ = 0;    // nonce of our latest HELLO (kAnyToken in ack_token)
  TransportStats last_stats_{};
  // Keyed by the context's id; ordered, so "oldest" is the smallest key.
  std::map<uint64_t, PendingRecv> recvs_;
  std::map<uint64_t, PendingSend> sends_;
  // Where placed requests' bytes go (the placer's targets).
  std::vector<std::unique_ptr<uint8_t[]>> placed_;
  // Declared last: destroyed first, before the buffers it may point into.
  std::unique_ptr<Engine> engine_;
};

void World::run(const uint8_t* data, size_t size) {
  bool in_burst = false;
  size_t at = 0;
  while (size - at >= 3) {
    const uint8_t ctl = data[at];
    size_t length = size_t{data[at + 1]} << 8 | data[at + 2];
    at += 3;
    if (length > size - at) length = size - at;
    const uint8_t* frame = data + at;
    at += length;

    now_ += kClockSteps[ctl >> kCtlClockShift];
    receive(ctl, frame, length);
    in_burst = (ctl & kCtlBurst) != 0;
    if (!in_burst) {
      poll();
      flush();
    }
    const uint8_t op = (ctl >> kCtlOpShift) & 3;
    if (op != kOpNone) {
      // The application calls in between progress calls, never inside one.
      if (in_burst) {
        poll();
        flush();
        in_burst = false;
      }
      if (op == kOpPostRecv) post_recv();
      if (op == kOpSend) send();
      if (op == kOpCancelRecv) cancel_recv();
      flush();
    }
  }
  poll();
  flush();
  // The peer falls silent: every send must end, acked (answered) or failed.
  for (int round = 0; round < kDrainRounds; ++round) {
    now_ += config_.peer_timeout_ns + 1'000'000'000;
    poll();
    flush();
  }
  FUZZ_CHECK(sends_.empty());
  FUZZ_CHECK(engine_->outstanding_sends() == 0);
  // Nothing half-assembled outlives the silence: what the budget still
  // holds belongs to whole unexpected messages waiting for a receive.
  if (engine_->unexpected_messages() == 0) FUZZ_CHECK(engine_->unexpected_bytes() == 0);
  // Held segments age out, and every response ended (acknowledged, or
  // failed with its connection): neither holds memory after the silence.
  FUZZ_CHECK(engine_->held_segments() == 0);
  FUZZ_CHECK(engine_->responses_held_bytes() == 0);
  if (tracing()) trace_stats(engine_->stats());
}

// What dpdk_progress.cc does with one received frame.
void World::receive(uint8_t ctl, const uint8_t* bytes, size_t length) {
  // A heap block of the frame's exact size, gone after on_frame: the engine
  // must copy what it keeps, and decode_frame must stay inside it.
  std::unique_ptr<uint8_t[]> frame(new uint8_t[length]);
  if (length != 0) std::memcpy(frame.get(), bytes, length);
  if ((ctl & kCtlSeal) && length >= wire::kHeadersSize) {
    const uint8_t* field =
        frame.get() + sizeof(wire::EtherHeader) + offsetof(wire::FrameHeader, payload_len);
    const size_t payload_len = size_t{field[0]} << 8 | field[1];  // big-endian
    if (wire::kHeadersSize + payload_len <= length)
      seal_frame(frame.get(), wire::kHeadersSize + payload_len);
  }
  DecodedFrame decoded;
  const DecodeResult result = decode_frame(frame.get(), length, wire::kDefaultEtherType, &decoded);
  if (tracing()) {
    const wire::FrameHeader& h = decoded.header;
    std::fprintf(stderr, "t=%llu ctl=%02x len=%zu: %s", static_cast<unsigned long long>(now_), ctl,
                 length, decode_result_name(result));
    if (result == DecodeResult::kOk)
      std::fprintf(stderr, " %s flags=%x src=%x dst=%x conn=%u/%u seq=%u ack=%u msg=%u off=%u/%u",
                   wire::opcode_name(h.opcode), h.flags, h.src_session, h.dst_session, h.conn,
                   h.ack_conn, h.seq, h.ack, h.msg_id, h.offset, h.msg_len);
    std::fprintf(stderr, "\n");
  }
  if (result != DecodeResult::kOk) return;                      // rx_bad_frames or rx_not_ours
  if (std::memcmp(decoded.dst_mac, kLocalMac, 6) != 0) return;  // rx_not_ours
  if (decoded.header.dst_queue != kLocalQueue) return;          // rx_no_endpoint
  if (decoded.header.token == kAnyToken) decoded.header.token = granted_;
  if (decoded.header.ack_token == kAnyToken) decoded.header.ack_token = nonce_;
  ++frames_handed_;
  engine_->on_frame({decoded.src_mac, &decoded.header, decoded.payload}, now_);
  check_stats();
}

void World::post_recv() {
  const RecvTemplate& t = kRecvTemplates[next_recv_template_++ % std::size(kRecvTemplates)];
  const uint64_t id = next_id_++;
  PendingRecv& pending = recvs_[id];
  RecvRequest request;
  for (size_t i = 0; i < 2 && t.iov_len[i] != 0; ++i) {
    pending.buffers[i].reset(new uint8_t[t.iov_len[i]]);
    pending.lengths[i] = t.iov_len[i];
    pending.capacity += t.iov_len[i];
    request.iov[i] = {pending.buffers[i].get(), t.iov_len[i]};
    request.iov_count = i + 1;
  }
  request.context = context_of(id);
  request.user_flags = id;
  request.tagged = t.tagged;
  request.tag = t.tag;
  request.ignore = t.ignore;
  request.any_source = !t.from_peer_only;
  request.source_key = peer_key(kPeerMac, kPeerQueue);
  const int ret = engine_->post_recv(request, now_);
  FUZZ_CHECK(ret == 0 || ret == -EAGAIN);
  // A receive may complete at once (from an unexpected message): flush()
  // handles that completion while the buffers are still here.
  if (ret != 0) recvs_.erase(id);
}

void World::send() {
  const SendTemplate& t = kSendTemplates[next_send_template_++ % std::size(kSendTemplates)];
  const uint64_t id = next_id_++;
  std::unique_ptr<uint8_t[]> buffer(new uint8_t[t.length]);
  for (size_t j = 0; j < t.length; ++j) buffer[j] = pattern_byte(id, j);
  const iovec iov{buffer.get(), t.length};
  SendRequest request;
  request.iov = &iov;
  request.iov_count = 1;
  request.context = context_of(id);
  request.user_flags = id;
  request.tagged = t.tagged;
  request.tag = t.tag;
  request.has_data = t.has_data;
  request.cq_data = id;
  request.copy = t.copy;
  std::unique_ptr<uint8_t[]> response;
  if (t.response_len != 0) {
    response.reset(new uint8_t[t.response_len]);
    request.request = true;
    request.response_iov[0] = {response.get(), t.response_len};
    request.response_iov_count = 1;
  }
  PeerAddress peer;
  std::memcpy(peer.mac, kPeerMac, 6);
  peer.queue = kPeerQueue;
  const int ret = engine_->send(peer, request, now_);
  FUZZ_CHECK(ret == 0 || ret == -EAGAIN);
  if (ret != 0) return;
  PendingSend& pending = sends_[id];
  pending.length = t.length;
  pending.request = t.response_len != 0;
  pending.response = std::move(response);
  pending.response_len = t.response_len;
  if (!t.copy) pending.buffer = std::move(buffer);  // else freed here, now
}

void World::cancel_recv() {
  if (recvs_.empty()) return;
  const int ret = engine_->cancel_recv(context_of(recvs_.begin()->first));
  // -ENOENT: a message already took it.
  FUZZ_CHECK(ret == 0 || ret == -ENOENT);
}

// What Endpoint::flush does, with every frame and completion checked.
void World::flush() {
  for (const OutFrame& frame : engine_->outbox()) check_frame(frame);
  engine_->frames_sent();
  for (const Completion& done : engine_->completions()) check_completion(done);
  engine_->completions().clear();
  FUZZ_CHECK(engine_->outstanding_sends() == sends_.size());
  check_stats();
}

void World::check_frame(const OutFrame& frame) {
  if (frame.header.opcode == static_cast<uint8_t>(wire::Opcode::kBundle)) {
    check_bundle(frame);
    return;
  }
  const wire::FrameHeader& h = frame.header;
  if (tracing())
    std::fprintf(stderr, "  out %s seq=%u ack=%u win=%u flags=%x off=%u/%u sack=%llx\n",
                 wire::opcode_name(h.opcode), h.seq, h.ack, h.window, h.flags, h.offset, h.msg_len,
                 static_cast<unsigned long long>(h.tag));
  FUZZ_CHECK(h.payload_len <= config_.max_payload);
  FUZZ_CHECK(h.src_queue == kLocalQueue && h.src_session == kLocalSession);
  FUZZ_CHECK(h.src_ep_queue == kLocalQueue);
  FUZZ_CHECK(h.auth_key == 0 || h.auth_key == kSecondKey);  // only keys it accepts
  const bool is_data = wire::opcode_is_data(h.opcode);
  const bool is_response = h.opcode == static_cast<uint8_t>(wire::Opcode::kResponse);
  if (is_data) {
    FUZZ_CHECK(frame.message != nullptr);
    FUZZ_CHECK(frame.offset == h.offset);
    FUZZ_CHECK(h.offset <= h.msg_len && h.msg_len - h.offset >= h.payload_len);
  }
  // The send whose bytes a frame carries: a send's own segment, or a
  // response to the peer's pull of a rendezvous send.  None for an
  // announcement (its body) or a pull of ours.
  const TxMessage* carried = nullptr;
  if (is_response && frame.message->pulled_send) {
    FUZZ_CHECK(frame.message->request.internal);
    carried = frame.message->pulled_send.get();
    auto it = sends_.find(id_of(carried->request.context));
    FUZZ_CHECK(it != sends_.end());  // the send holds its buffer until this is acked
    FUZZ_CHECK(h.msg_len <= it->second.length);
  } else if (is_response) {
    // The engine's own answer to a request, which it owns.
    FUZZ_CHECK(frame.message->request.internal && h.msg_len <= kHandlerEcho);
    FUZZ_CHECK(h.flags & wire::kFlagRemoteData);
  } else if (is_data && (h.flags & wire::kFlagPull)) {
    // Our pull of a message the peer announced: the engine's own request.
    FUZZ_CHECK(frame.message->request.internal && frame.message->pull);
    FUZZ_CHECK(h.opcode == static_cast<uint8_t>(wire::Opcode::kRequest));
    FUZZ_CHECK(h.msg_len == sizeof(wire::PullBody));
  } else if (is_data) {
    // The segment of a send still outstanding, which owns these bytes.
    auto it = sends_.find(id_of(frame.message->request.context));
    FUZZ_CHECK(it != sends_.end());
    FUZZ_CHECK((h.opcode == static_cast<uint8_t>(wire::Opcode::kRequest)) == it->second.request);
    if (h.flags & wire::kFlagRendezvous) {
      FUZZ_CHECK(h.msg_len == sizeof(wire::RendezvousBody));
      FUZZ_CHECK(it->second.length >= config_.rendezvous_bytes);
      wire::RendezvousBody body;
      std::memcpy(&body, frame.message->body, sizeof(body));
      FUZZ_CHECK(be64toh(body.length) == it->second.length);
    } else {
      FUZZ_CHECK(h.msg_len == it->second.length);
      carried = frame.message;
    }
  } else if (h.opcode == static_cast<uint8_t>(wire::Opcode::kHello) ||
             h.opcode == static_cast<uint8_t>(wire::Opcode::kHelloAck)) {
    FUZZ_CHECK(frame.message == nullptr && h.payload_len == sizeof(wire::HandshakeBody));
    wire::HandshakeBody body;
    std::memcpy(&body, frame.body, sizeof(body));
    FUZZ_CHECK(be32toh(body.max_payload) == config_.max_payload);
    if (h.opcode == static_cast<uint8_t>(wire::Opcode::kHello)) {
      FUZZ_CHECK(h.token != 0 && body.token == 0);
      nonce_ = h.token;
    } else {
      FUZZ_CHECK(body.token != 0);
      granted_ = be64toh(body.token);
    }
  } else {
    FUZZ_CHECK(frame.message == nullptr && h.payload_len == 0);
  }
  // Encode, copy the payload and seal exactly as the provider does, then the
  // frame must pass our own receive checks.
  const size_t length = wire::kHeadersSize + h.payload_len;
  std::unique_ptr<uint8_t[]> bytes(new uint8_t[length]);
  encode_headers(bytes.get(), frame.dst_mac, kLocalMac, wire::kDefaultEtherType, h);
  frame.copy_payload(bytes.get() + wire::kHeadersSize);
  seal_frame(bytes.get(), length);
  DecodedFrame back;
  FUZZ_CHECK(decode_frame(bytes.get(), length, wire::kDefaultEtherType, &back) ==
             DecodeResult::kOk);
  if (carried != nullptr) {
    const uint64_t id = id_of(carried->request.context);
    for (size_t j = 0; j < h.payload_len; ++j)
      FUZZ_CHECK(back.payload[j] == pattern_byte(id, h.offset + j));
  }
}

void World::check_bundle(const OutFrame& frame) {
  // Each entry must be what a frame of its own would be (check_frame), and
  // the bundle must read back as those frames.
  FUZZ_CHECK(frame.bundled >= 2 && frame.message == nullptr);
  FUZZ_CHECK(frame.header.payload_len <= config_.max_payload);
  std::vector<OutFrame> singles;
  size_t body = 0;
  for (uint16_t i = 0; i < frame.bundled; ++i) {
    const BundledSegment& part = frame.bundle[i];
    OutFrame single = frame;
    single.bundle = nullptr;
    single.bundled = 0;
    single.message = part.message;
    single.offset = part.offset;
    wire::FrameHeader& h = single.header;
    h.opcode = part.entry.opcode;
    h.flags = static_cast<uint16_t>(h.flags | part.entry.flags);
    h.seq = part.entry.seq;
    h.msg_id = part.entry.msg_id;
    h.msg_len = part.entry.msg_len;
    h.offset = part.entry.offset;
    h.group = part.entry.group;
    h.payload_len = part.entry.payload_len;
    h.tag = part.entry.tag;
    h.cq_data = part.entry.cq_data;
    FUZZ_CHECK(wire::opcode_is_data(h.opcode) && h.offset == 0 && h.payload_len == h.msg_len);
    FUZZ_CHECK(i == 0 || h.seq == singles.back().header.seq + 1);  // consecutive, in order
    check_frame(single);
    singles.push_back(single);
    body += sizeof(wire::BundleEntry) + h.payload_len;
  }
  FUZZ_CHECK(body == frame.header.payload_len);
  const size_t length = wire::kHeadersSize + body;
  std::unique_ptr<uint8_t[]> bytes(new uint8_t[length]);
  encode_headers(bytes.get(), frame.dst_mac, kLocalMac, wire::kDefaultEtherType, frame.header);
  frame.copy_payload(bytes.get() + wire::kHeadersSize);
  seal_frame(bytes.get(), length);
  DecodedFrame back;
  FUZZ_CHECK(decode_frame(bytes.get(), length, wire::kDefaultEtherType, &back) ==
             DecodeResult::kOk);
  const uint8_t* cursor = back.payload;
  const uint8_t* end = back.payload + back.header.payload_len;
  for (const OutFrame& single : singles) {
    wire::FrameHeader h;
    const uint8_t* payload = nullptr;
    FUZZ_CHECK(next_bundle_entry(&cursor, end, back.header, &h, &payload) == DecodeResult::kOk);
    FUZZ_CHECK(h.seq == single.header.seq && h.flags == single.header.flags &&
               h.payload_len == single.header.payload_len);
  }
  FUZZ_CHECK(cursor == end);
}

void World::check_completion(const Completion& done) {
  const uint64_t id = id_of(done.context);
  if (tracing())
    std::fprintf(stderr, "  done %s id=%llu error=%d len=%zu\n",
                 done.kind == Completion::Kind::kSend ? "send" : "recv",
                 static_cast<unsigned long long>(id), done.error, done.len);
  FUZZ_CHECK(done.user_flags == id);
  if (done.kind == Completion::Kind::kSend) {
    auto it = sends_.find(id);
    FUZZ_CHECK(it != sends_.end());  // outstanding, and not completed before
    if (it->second.request) {
      // Completed by the response, whose status is the error (the peer's
      // choice) and whose bytes went to the response buffer.
      FUZZ_CHECK(done.len <= it->second.response_len);
    } else if (done.error == 0) {
      FUZZ_CHECK(done.len == it->second.length);
    } else {
      FUZZ_CHECK(done.error == kErrTimedOut || done.error == kErrPeerReset);
      FUZZ_CHECK(done.prov_errno == kProvPeerTimeout || done.prov_errno == kProvPeerRestarted ||
                 done.prov_errno == kProvMaybeDelivered || done.prov_errno == kProvNotTaken);
    }
    sends_.erase(it);  // the buffer goes now
    return;
  }
  auto it = recvs_.find(id);
  FUZZ_CHECK(it != recvs_.end());  // posted, and not completed before
  const PendingRecv& recv = it->second;
  FUZZ_CHECK(done.len <= recv.capacity);
  if (done.error == 0) {
    FUZZ_CHECK(done.overflow == 0);
    FUZZ_CHECK(done.buf == recv.buffers[0].get());
  } else if (done.error == kErrTruncated) {
    FUZZ_CHECK(done.len == recv.capacity && done.overflow != 0);
  } else {
    // A sender gone quiet mid-message times the receive out.
    FUZZ_CHECK(done.error == kErrPeerReset || done.error == kErrCanceled ||
               done.error == kErrTimedOut);
  }
  recvs_.erase(it);  // the buffers go now
}

void World::check_stats() {
  const TransportStats& stats = engine_->stats();
  FUZZ_CHECK(stats.frames_received == frames_handed_);
  uint64_t now[kStatsFields];
  uint64_t before[kStatsFields];
  std::memcpy(now, &stats, sizeof(now));
  std::memcpy(before, &last_stats_, sizeof(before));
  for (size_t i = 0; i < kStatsFields; ++i) FUZZ_CHECK(now[i] >= before[i]);
  last_stats_ = stats;
  // Every byte of state a sender can make is bounded.
  FUZZ_CHECK(engine_->connection_count() <= config_.max_connections);
  FUZZ_CHECK(engine_->unexpected_bytes() <= config_.unexpected_bytes);
  FUZZ_CHECK(engine_->reorder_pool_bytes() <= config_.reorder_bytes);
  FUZZ_CHECK(engine_->posted_recvs() <= config_.max_posted_recvs);
  // Responses within their budget: exceeded by one response at most.
  FUZZ_CHECK(engine_->responses_held_bytes() <= config_.response_bytes + kHandlerEcho);
}

}  // namespace
}  // namespace ofi_dpdk::proto::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  ofi_dpdk::proto::fuzz::World world;
  world.run(data, size);
  return 0;
}
