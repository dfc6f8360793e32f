// adversary.h: the adversary's options, its sessions with the target, what
// a case finds, and Adversary, which runs the cases (adversary.cc says what
// the program does; the cases are in adversary_forgeries.cc,
// adversary_budgets.cc and adversary_parking.cc).
#pragma once

#include <algorithm>
#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "test/adversarial/forge.h"
#include "test/adversarial/injector.h"
#include "test/adversarial/raw_link.h"

namespace ofi_dpdk::adversarial {

using std::chrono::milliseconds;

struct Options {
  std::string iface;
  std::string rendezvous;
  long target_pid = 0;
  std::vector<std::string> cases;
  uint64_t seed = 1;
  size_t max_peers = 128;
  size_t unexpected_bytes = 8u << 20;
  uint64_t peer_timeout_ms = 3000;
  size_t response_bytes = 64u << 20;
  size_t region_bytes = 8;
  long rss_limit_kb = 8 * 1024;
  // The live pair must keep moving: at least kMinPairFrames during each
  // case, and this share of its pace before the cases.  A pair that stops
  // (the flood of the hardening issue stopped one) sends nothing; a busy
  // machine moves a pair's pace 100x (1 % of it was seen with a build
  // beside the test), so the pace under attack is reported, and bounded
  // only when asked.
  double progress_floor = 0.0;
  // held_lockout: how many stations park a segment, and how long the case
  // then watches what the target sends them.
  size_t stations = 0;
  uint64_t quiet_ms = 8000;
};

// The target's region: the bench's "region ADDRESS KEY" line.
struct Region {
  uint64_t address = 0;
  uint64_t key = 0;
};

double seconds_since(Clock::time_point t);
uint64_t interface_counter(const std::string& iface, const char* name);
bool to_station(const proto::DecodedFrame& f, const Station& s);

// One of our own connections to the target, and what the target sent it.
struct Session {
  OwnConnection c;
  uint32_t acked = wire::kInitialSeq;          // the target's cumulative ack of our segments
  std::map<uint32_t, uint64_t> responses;      // request msg_id -> status (cq_data)
  uint32_t response_next = wire::kInitialSeq;  // the target's next RESPONSE seq we expect
  uint16_t response_conn = 0;
  bool ack_responses = true;
  uint64_t resets = 0;  // RESETs the target sent this station
  // Every RESPONSE frame's (connection, tag), in arrival order.
  std::vector<std::pair<uint16_t, uint32_t>> response_frames;
};

// What one case found; `ok` is the target's behaviour only (memory and the
// pair's progress are checked around it).
struct Finding {
  bool ok = true;
  std::string detail;
  void fail(const std::string& why) {
    ok = false;
    detail += (detail.empty() ? "" : "; ") + why;
  }
  void note(const std::string& what) { detail += (detail.empty() ? "" : "; ") + what; }
};

class Adversary {
 public:
  Adversary(const Options& o, Injector& injector, const Region& region)
      : o_(o), in_(injector), region_(region) {}

  // Frames the peer sent: its interface counts them with ours.
  uint64_t pair_frames() const {
    return interface_counter(o_.iface, "tx_packets") - in_.link().frames_sent();
  }

  Finding run(const std::string& name) {
    if (name == "stranger_flood") return stranger_flood();
    if (name == "handshake_flood") return handshake_flood();
    if (name == "forged_hello") return forged_hello();
    if (name == "forged_reset") return forged_reset();
    if (name == "pinned_budget") return pinned_budget();
    if (name == "unacked_responses") return unacked_responses();
    if (name == "parked_segments") return parked_segments();
    if (name == "response_memory") return response_memory();
    if (name == "remote_cq_data") return remote_cq_data();
    if (name == "evicted_replay") return evicted_replay();
    if (name == "held_lockout") return held_lockout();
    if (name == "on_path_forgeries") return on_path_forgeries();
    if (name == "out_of_window_resets") return out_of_window_resets();
    return wrong_keys();
  }

  // Takes in the target's frames for `duration` (or until done()),
  // updating every session they are for.
  void listen(Clock::duration duration, const std::function<bool()>& done = {}) {
    in_.listen(
        duration, [&](const proto::DecodedFrame& f) { observe(f); }, done);
  }

 private:
  Session& open_session() {
    auto session = std::make_unique<Session>();
    session->c.self = in_.stranger();
    session->c.self.queue = 0;
    if (!in_.open(session->c, [&](const proto::DecodedFrame& f) { observe(f); }))
      throw std::runtime_error("the target answered none of five HELLOs");
    sessions_.push_back(std::move(session));
    return *sessions_.back();
  }

  void observe(const proto::DecodedFrame& f) {
    if (f.header.opcode == static_cast<uint8_t>(wire::Opcode::kBundle)) {
      // Small answers share frames: each entry as the frame it stands for.
      const uint8_t* cursor = f.payload;
      const uint8_t* end = f.payload + f.header.payload_len;
      proto::DecodedFrame entry = f;
      while (cursor < end && proto::next_bundle_entry(&cursor, end, f.header, &entry.header,
                                                      &entry.payload) == proto::DecodeResult::kOk)
        observe_one(entry);
      return;
    }
    observe_one(f);
  }

  void observe_one(const proto::DecodedFrame& f) {
    const wire::FrameHeader& h = f.header;
    if (h.opcode == static_cast<uint8_t>(wire::Opcode::kHelloAck)) ++hello_acks_;
    if (h.opcode == static_cast<uint8_t>(wire::Opcode::kReset)) ++resets_;
    for (auto& s : sessions_) {
      if (!to_station(f, s->c.self)) continue;
      if (h.opcode == static_cast<uint8_t>(wire::Opcode::kReset)) ++s->resets;
      if ((h.flags & wire::kFlagAckValid) && h.ack_conn == s->c.conn && h.ack_token == s->c.token &&
          static_cast<int32_t>(h.ack - s->acked) > 0)
        s->acked = h.ack;
      if (h.opcode == static_cast<uint8_t>(wire::Opcode::kResponse)) {
        s->responses.emplace(static_cast<uint32_t>(h.tag), h.cq_data);
        s->response_frames.emplace_back(h.conn, static_cast<uint32_t>(h.tag));
        if (h.seq == s->response_next) ++s->response_next;
        s->response_conn = h.conn;
        if (s->ack_responses) ack_responses(*s, h);
      }
    }
  }

  // A transport ack of the target's RESPONSE stream to `s` (the token is
  // the one our HELLO_ACK granted it: Injector::answer_hello).
  void ack_responses(const Session& s, const wire::FrameHeader& response) {
    wire::FrameHeader h = header_between(wire::Opcode::kAck, s.c.self, in_.target());
    h.flags = wire::kFlagAckValid;
    h.ack = s.response_next;
    h.ack_conn = response.conn;
    h.ack_token = response.token;
    h.window = kMaxAdvertisedWindow;
    in_.send(s.c.self, in_.target(), h);
  }

  void send_read(const Session& s, uint32_t seq, uint64_t key, uint32_t auth_key = 0,
                 std::optional<uint16_t> src_ep_queue = std::nullopt) {
    const auto request = read_request(key, 0x1000, 8);
    wire::FrameHeader h = header_between(wire::Opcode::kRequest, s.c.self, in_.target());
    h.flags = wire::kFlagLastSegment | wire::kFlagAckNow;
    h.seq = seq;
    h.msg_id = seq;
    h.msg_len = static_cast<uint32_t>(request.size());
    h.conn = s.c.conn;
    h.token = s.c.token;
    h.auth_key = auth_key;
    h.src_ep_queue = src_ep_queue.value_or(s.c.self.queue);
    in_.send(s.c.self, in_.target(), h, request);
  }

  // A session whose first segment, an 8-byte read of the region, the target
  // took; null when it did not within twice the peer timeout and a little
  // (a table full of recent connections, as handshake_flood leaves it,
  // has room again once they have been quiet that long).
  Session* admitted_session(bool ack_responses) {
    Session& s = open_session();
    s.ack_responses = ack_responses;
    const auto read = read_request(region_.key, region_.address, 8);
    const auto limit = Clock::now() + milliseconds(2 * o_.peer_timeout_ms + 3000);
    while (s.acked == wire::kInitialSeq && Clock::now() < limit) {
      in_.send(s.c.self, in_.target(),
               request_header(s, wire::kInitialSeq, wire::kInitialSeq, read.size()), read);
      listen(milliseconds(300), [&] { return s.acked != wire::kInitialSeq; });
    }
    return s.acked == wire::kInitialSeq ? nullptr : &s;
  }

  // A one-segment request (its head `request`) at `seq` with `msg_id`.
  wire::FrameHeader request_header(const Session& s, uint32_t seq, uint32_t msg_id, size_t length) {
    wire::FrameHeader h = header_between(wire::Opcode::kRequest, s.c.self, in_.target());
    h.flags = wire::kFlagLastSegment | wire::kFlagAckNow;
    h.seq = seq;
    h.msg_id = msg_id;
    h.msg_len = static_cast<uint32_t>(length);
    h.conn = s.c.conn;
    h.token = s.c.token;
    return h;
  }

  // Segment 0 of a message of msg_len bytes: one frame of payload.  Tagged
  // with a tag the live pair never receives, so it waits in the unexpected
  // budget instead of landing in one of the pair's receives.
  void send_first_segment(const Session& s, uint32_t msg_len) {
    std::vector<uint8_t> payload(std::min<uint32_t>(s.c.max_payload, msg_len), 0x5a);
    wire::FrameHeader h = header_between(wire::Opcode::kTagged, s.c.self, in_.target());
    h.tag = kForeignTag;
    h.flags = wire::kFlagAckNow | (payload.size() == msg_len ? wire::kFlagLastSegment : 0);
    h.seq = wire::kInitialSeq;
    h.msg_id = 1;
    h.msg_len = msg_len;
    h.conn = s.c.conn;
    h.token = s.c.token;
    in_.send(s.c.self, in_.target(), h, payload);
  }

  // The cases, by file.
  // adversary_forgeries.cc
  Finding stranger_flood();
  Finding handshake_flood();
  Finding forged_hello();
  Finding forged_reset();
  Finding wrong_keys();
  Finding out_of_window_resets();
  Finding on_path_forgeries();
  // adversary_budgets.cc
  Finding pinned_budget();
  Finding unacked_responses();
  Finding response_memory();
  Finding remote_cq_data();
  // adversary_parking.cc
  Finding parked_segments();
  Finding held_lockout();
  Finding evicted_replay();

  static constexpr uint16_t kMaxAdvertisedWindow = 256;
  static constexpr uint64_t kForeignTag = 0xad5e'adad'5eadull;
  const Options& o_;
  Injector& in_;
  const Region region_;
  std::vector<std::unique_ptr<Session>> sessions_;
  uint64_t hello_acks_ = 0, resets_ = 0;
};

}  // namespace ofi_dpdk::adversarial
