// adversary: forged frames against a provider process (the target) while a
// live pair (the target and its peer, dpdk-fi-bench fetch-adds over
// net_af_packet on a veth pair) runs beside it.  The adversary sits on the
// peer's end of the pair, so what it sends reaches the target as if from
// the wire, and it sees everything the target sends.
//
//   adversary --iface IFACE --rendezvous DIR --target-pid PID
//             [--cases a,b,...] [--seed N] [--max-peers N]
//             [--unexpected-bytes N] [--peer-timeout-ms N]
//             [--response-bytes N] [--region-bytes N]
//             [--rss-limit-kb N] [--progress-floor F]
//
// The target's names are DIR/server, the peer's DIR/client (the bench's
// rendezvous files; the server's also names its region, address and key).
// --max-peers, --unexpected-bytes, --peer-timeout-ms and --response-bytes
// are what the target was started with (FI_DPDK_*); --region-bytes is the
// size of its region.  The cases after "wrong_keys" play a peer that
// completed its handshake and then misbehaves (the hardening issue's second
// round): segments parked ahead of a gap, reads whose answers it never
// acknowledges, remote CQ data, and a replay of an evicted connection's
// request.
// Each case reports what the target did, its resident memory growth and
// the live pair's progress (frames the peer sent per second, against the
// rate before the first case); it fails when the target misbehaves, grows
// by more than --rss-limit-kb, or the pair stops (or falls below
// --progress-floor of its rate, 0 unless given).  Exit 0 when every case passed, 1 otherwise, 2 on set-up
// errors.
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
namespace {

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

const std::vector<std::string> kAllCases = {
    "stranger_flood",  "forged_hello",      "forged_reset",   "pinned_budget",
    "unacked_responses", "wrong_keys",      "handshake_flood", "parked_segments",
    "response_memory", "remote_cq_data",    "evicted_replay"};
// Cases run only when named (--cases): they need a target set up for them
// (test_lockout.sh).
const std::vector<std::string> kNamedOnlyCases = {"held_lockout", "on_path_forgeries",
                                                   "out_of_window_resets"};

[[noreturn]] void setup_error(const std::string& what) {
  std::fprintf(stderr, "adversary: %s\n", what.c_str());
  std::exit(2);
}

Options parse(int argc, char** argv) {
  Options o;
  o.cases = kAllCases;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) setup_error(arg + " needs a value");
      return argv[++i];
    };
    if (arg == "--iface") o.iface = value();
    else if (arg == "--rendezvous") o.rendezvous = value();
    else if (arg == "--target-pid") o.target_pid = std::stol(value());
    else if (arg == "--seed") o.seed = std::stoull(value());
    else if (arg == "--max-peers") o.max_peers = std::stoull(value());
    else if (arg == "--unexpected-bytes") o.unexpected_bytes = std::stoull(value());
    else if (arg == "--peer-timeout-ms") o.peer_timeout_ms = std::stoull(value());
    else if (arg == "--response-bytes") o.response_bytes = std::stoull(value());
    else if (arg == "--region-bytes") o.region_bytes = std::stoull(value());
    else if (arg == "--rss-limit-kb") o.rss_limit_kb = std::stol(value());
    else if (arg == "--progress-floor") o.progress_floor = std::stod(value());
    else if (arg == "--stations") o.stations = std::stoull(value());
    else if (arg == "--quiet-ms") o.quiet_ms = std::stoull(value());
    else if (arg == "--cases") {
      o.cases.clear();
      std::stringstream list(value());
      for (std::string name; std::getline(list, name, ',');) {
        if (std::find(kAllCases.begin(), kAllCases.end(), name) == kAllCases.end() &&
            std::find(kNamedOnlyCases.begin(), kNamedOnlyCases.end(), name) ==
                kNamedOnlyCases.end())
          setup_error("no case " + name);
        o.cases.push_back(name);
      }
    } else {
      setup_error("unknown option " + arg);
    }
  }
  if (o.iface.empty() || o.rendezvous.empty() || o.target_pid <= 0)
    setup_error("--iface, --rendezvous and --target-pid are required");
  return o;
}

Station read_station(const std::string& path) {
  std::ifstream in(path);
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("region ", 0) == 0) continue;
    if (auto station = station_from_name(line)) return *station;
  }
  setup_error("no endpoint name in " + path);
}

// The target's region: the bench's "region ADDRESS KEY" line.
struct Region {
  uint64_t address = 0;
  uint64_t key = 0;
};

Region read_region(const std::string& path) {
  std::ifstream in(path);
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("region ", 0) != 0) continue;
    std::istringstream fields(line.substr(7));
    Region region;
    fields >> region.address >> region.key;
    return region;
  }
  setup_error("no region line in " + path);
}

double seconds_since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

long resident_kb(long pid) {
  std::ifstream status("/proc/" + std::to_string(pid) + "/status");
  for (std::string line; std::getline(status, line);)
    if (line.rfind("VmRSS:", 0) == 0) return std::stol(line.substr(6));
  return -1;  // the target is gone
}

uint64_t interface_counter(const std::string& iface, const char* name) {
  std::ifstream in("/sys/class/net/" + iface + "/statistics/" + name);
  uint64_t value = 0;
  in >> value;
  return value;
}

bool to_station(const proto::DecodedFrame& f, const Station& s) {
  return std::equal(s.mac.begin(), s.mac.end(), f.dst_mac) && f.header.dst_queue == s.queue;
}

// One of our own connections to the target, and what the target sent it.
struct Session {
  OwnConnection c;
  uint32_t acked = wire::kInitialSeq;      // the target's cumulative ack of our segments
  std::map<uint32_t, uint64_t> responses;  // request msg_id -> status (cq_data)
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
    in_.listen(duration, [&](const proto::DecodedFrame& f) { observe(f); }, done);
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
      if ((h.flags & wire::kFlagAckValid) && h.ack_conn == s->c.conn &&
          h.ack_token == s->c.token && static_cast<int32_t>(h.ack - s->acked) > 0)
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
  wire::FrameHeader request_header(const Session& s, uint32_t seq, uint32_t msg_id,
                                   size_t length) {
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

  // 30000 frames from as many made-up senders: HELLOs, and data segments
  // and requests with tokens nobody granted.
  Finding stranger_flood() {
    constexpr uint64_t kFrames = 30000;
    const uint64_t acks_before = hello_acks_, resets_before = resets_;
    std::vector<uint8_t> payload(64, 0xa5);
    in_.paced(
        kFrames, 30000,
        [&](uint64_t i) {
          const Station from = in_.stranger();
          if (i % 3 == 0) {
            wire::FrameHeader h = header_between(wire::Opcode::kHello, from, in_.target());
            h.conn = static_cast<uint16_t>(in_.random64());
            h.token = in_.random_nonzero();
            h.msg_len = sizeof(wire::HandshakeBody);
            in_.send(from, in_.target(), h, handshake_body(0, kOurMaxPayload));
            return;
          }
          wire::FrameHeader h = header_between(
              i % 3 == 1 ? wire::Opcode::kMsg : wire::Opcode::kRequest, from, in_.target());
          h.seq = static_cast<uint32_t>(in_.random64() % 300);
          h.msg_id = static_cast<uint32_t>(in_.random64());
          h.msg_len = static_cast<uint32_t>(in_.random64() % (1u << 30)) + 64;
          h.conn = static_cast<uint16_t>(in_.random64());
          h.token = in_.random_nonzero();
          in_.send(from, in_.target(), h, payload);
        },
        [&](const proto::DecodedFrame& f) { observe(f); });
    listen(milliseconds(300));
    Finding finding;
    finding.note(std::to_string(kFrames) + " frames from strangers; the target answered " +
                 std::to_string(hello_acks_ - acks_before) + " HELLO_ACK, " +
                 std::to_string(resets_ - resets_before) + " RESET");
    if (hello_acks_ == acks_before) finding.fail("no HELLO answered: the target is not listening");
    return finding;
  }

  // Strangers that complete the handshake and send a message each: no
  // more than --max-peers connections are taken.
  Finding handshake_flood() {
    const size_t strangers = o_.max_peers * 3;
    const size_t first = sessions_.size();
    for (size_t i = 0; i < strangers; ++i) {
      Session& s = open_session();
      s.ack_responses = false;
      send_first_segment(s, 64);
      if (i % 16 == 15) listen(milliseconds(2));
    }
    listen(milliseconds(500));
    size_t taken = 0;
    for (size_t i = first; i < sessions_.size(); ++i)
      taken += sessions_[i]->acked != wire::kInitialSeq;
    Finding finding;
    finding.note(std::to_string(strangers) + " handshakes completed, " + std::to_string(taken) +
                 " connections taken (cap " + std::to_string(o_.max_peers) + ")");
    if (taken == 0) finding.fail("no connection taken: the case did not reach the target");
    if (taken >= o_.max_peers) finding.fail("more connections than FI_DPDK_MAX_PEERS allows");
    return finding;
  }

  // HELLOs and data from the peer's own address under new sessions: an
  // off-path forger cannot answer the target's HELLO_ACK (it goes to the
  // peer), so none of it may touch the live connection.
  Finding forged_hello() {
    constexpr uint64_t kFrames = 4000;
    std::vector<uint8_t> payload(64, 0x3c);
    in_.paced(
        kFrames, 20000,
        [&](uint64_t i) {
          Station forged = in_.peer();
          forged.session = in_.random_nonzero();
          wire::FrameHeader h = header_between(
              i % 2 == 0 ? wire::Opcode::kHello : wire::Opcode::kMsg, forged, in_.target());
          h.conn = static_cast<uint16_t>(in_.random64());
          h.token = in_.random_nonzero();
          if (i % 2 == 0) {
            h.msg_len = sizeof(wire::HandshakeBody);
            in_.send(forged, in_.target(), h, handshake_body(0, kOurMaxPayload));
          } else {
            h.seq = wire::kInitialSeq;
            h.msg_len = 64;
            h.flags = wire::kFlagLastSegment;
            in_.send(forged, in_.target(), h, payload);
          }
        },
        [&](const proto::DecodedFrame& f) { observe(f); });
    Finding finding;
    finding.note(std::to_string(kFrames) + " HELLOs and segments in the peer's name");
    return finding;
  }

  // RESETs in the peer's name naming the target's live connection, with
  // every field right but the token (which an off-path forger cannot see).
  Finding forged_reset() {
    Finding finding;
    if (!in_.learn_live(std::chrono::seconds(5))) {
      finding.fail("never saw the live connection's acks: is the pair running?");
      return finding;
    }
    const LiveConnection live = in_.live();
    constexpr uint64_t kFrames = 4000;
    in_.paced(
        kFrames, 20000,
        [&](uint64_t) {
          wire::FrameHeader h = header_between(wire::Opcode::kReset, in_.peer(), in_.target());
          h.ack_conn = live.target_conn;
          do h.ack_token = in_.random_nonzero(); while (h.ack_token == live.target_token);
          in_.send(in_.peer(), in_.target(), h);
        },
        [&](const proto::DecodedFrame& f) { observe(f); });
    finding.note(std::to_string(kFrames) + " RESETs for the target's connection " +
                 std::to_string(live.target_conn) + " with guessed tokens");
    return finding;
  }

  // A message that claims most of the unexpected budget and never
  // finishes: it gives the budget back after the peer timeout, so a second
  // that does not fit beside it is taken then (and not before), and the
  // claim costs no memory it did not receive.
  Finding pinned_budget() {
    Finding finding;
    Session& pin = open_session();
    Session& waiting = open_session();
    pin.ack_responses = waiting.ack_responses = false;
    const auto pin_len = static_cast<uint32_t>(o_.unexpected_bytes * 3 / 4);
    const auto wait_len = static_cast<uint32_t>(o_.unexpected_bytes / 2);
    send_first_segment(pin, pin_len);
    listen(milliseconds(200), [&] { return pin.acked != wire::kInitialSeq; });
    if (pin.acked == wire::kInitialSeq) {
      finding.fail("the pinning segment was not taken");
      return finding;
    }
    const auto pinned_at = Clock::now();
    const auto limit = pinned_at + milliseconds(2 * o_.peer_timeout_ms + 3000);
    while (waiting.acked == wire::kInitialSeq && Clock::now() < limit) {
      send_first_segment(waiting, wait_len);  // our retransmission
      listen(milliseconds(100), [&] { return waiting.acked != wire::kInitialSeq; });
    }
    const auto waited =
        std::chrono::duration_cast<milliseconds>(Clock::now() - pinned_at).count();
    finding.note("claimed " + std::to_string(pin_len) + " of " +
                 std::to_string(o_.unexpected_bytes) + " bytes; a " + std::to_string(wait_len) +
                 "-byte message waited " + std::to_string(waited) + " ms");
    if (waiting.acked == wire::kInitialSeq)
      finding.fail("the budget never came back");
    else if (static_cast<uint64_t>(waited) < o_.peer_timeout_ms / 2)
      finding.fail("the second message was taken beside the first: the budget was not held");
    return finding;
  }

  // Requests whose responses are never acknowledged: the target answers
  // no more than its cap of them (max_pending_responses, 64) and takes no
  // more than that plus the requests it defers (kMaxDeferredPerConnection,
  // 256: taken whole, run once answers are acknowledged).
  Finding unacked_responses() {
    constexpr uint32_t kRequests = 400;
    constexpr uint32_t kResponseCap = 64;
    constexpr uint32_t kDeferredCap = 256;
    Finding finding;
    Session& s = open_session();
    s.ack_responses = false;
    for (uint32_t i = 0; i < kRequests; ++i) {
      send_read(s, wire::kInitialSeq + i, in_.random64());
      if (i % 64 == 63) listen(std::chrono::milliseconds(20));
    }
    // Until the target has taken what it will, or 5 s on a busy machine.
    listen(std::chrono::milliseconds(5000),
           [&] { return s.acked - wire::kInitialSeq >= kResponseCap + kDeferredCap; });
    listen(std::chrono::milliseconds(300));  // and a little more, to see it take no more
    const uint32_t taken = s.acked - wire::kInitialSeq;
    finding.note(std::to_string(kRequests) + " requests sent, " + std::to_string(taken) +
                 " taken, " + std::to_string(s.responses.size()) + " answers seen");
    if (taken == 0) finding.fail("no request taken: the case did not reach the target");
    if (s.responses.size() > kResponseCap) finding.fail("more answers than may wait for acks");
    if (taken > kResponseCap + kDeferredCap) finding.fail("more requests taken than may wait");
    return finding;
  }

  // On a connection of our own: reads with keys the target never issued
  // are answered with an error; a segment with another network key, or
  // naming a queue above its sender's as its address, is not taken, and
  // the connection still works after them.
  Finding wrong_keys() {
    constexpr uint32_t kReads = 40;
    Finding finding;
    Session& s = open_session();
    for (uint32_t i = 0; i < kReads; ++i) send_read(s, wire::kInitialSeq + i, in_.random64());
    listen(milliseconds(10000), [&] { return s.responses.size() == kReads; });
    size_t errors = 0;
    for (const auto& [id, status] : s.responses) errors += status != 0;
    finding.note(std::to_string(s.responses.size()) + " of " + std::to_string(kReads) +
                 " reads with made-up keys answered, " + std::to_string(errors) + " with an error");
    if (s.responses.size() != kReads) finding.fail("reads went unanswered");
    if (errors != s.responses.size()) finding.fail("a made-up key read memory");
    const uint32_t next = wire::kInitialSeq + kReads;
    send_read(s, next, in_.random64(), /*auth_key=*/0x5eed);
    send_read(s, next, in_.random64(), 0, static_cast<uint16_t>(s.c.self.queue + 1));
    listen(milliseconds(300));
    if (s.acked != next || s.responses.count(next))
      finding.fail("a segment with a wrong network key or address was taken");
    send_read(s, next, in_.random64());
    listen(milliseconds(10000), [&] { return s.responses.count(next) != 0; });
    if (!s.responses.count(next)) finding.fail("the connection did not survive the forgeries");
    else finding.note("forged segments dropped, the connection still served");
    return finding;
  }

  // Stations that complete a handshake, park one segment ahead of a gap
  // (seq 2; seq 1 never comes) and go quiet: twice --max-peers of them, so
  // the target's table is full of connections that hold data and never
  // moved.  A station that then talks (a whole message at seq 1) must still
  // be taken: a parked connection is evicted for it.
  Finding parked_segments() {
    const size_t parked = o_.max_peers * 2;
    const std::vector<uint8_t> byte(1, 0x5a);
    for (size_t i = 0; i < parked; ++i) {
      Session& s = open_session();
      s.ack_responses = false;
      in_.send_segment(s.c, wire::Opcode::kTagged, wire::kInitialSeq + 1, 2, 1, 0, byte,
                       wire::kFlagLastSegment);
      if (i % 16 == 15) listen(milliseconds(2));
    }
    listen(milliseconds(300));
    Session& talker = open_session();
    talker.ack_responses = false;
    const auto limit = Clock::now() + milliseconds(5000);
    while (talker.acked == wire::kInitialSeq && Clock::now() < limit) {
      send_first_segment(talker, 64);  // and our retransmissions
      listen(milliseconds(200), [&] { return talker.acked != wire::kInitialSeq; });
    }
    Finding finding;
    finding.note(std::to_string(parked) + " stations parked a segment ahead of a gap");
    if (talker.acked == wire::kInitialSeq)
      finding.fail("a station that talks was locked out");
    else
      finding.note("a station that talks was taken");
    return finding;
  }

  // Issue 42's finding 0, the lock-out of issue 24 again: --stations
  // stations (more than the target has places for) each complete a
  // handshake, park one byte at seq 2 (seq 1 never comes) and fall silent:
  // they answer nothing, not even the target's own HELLOs.  The target may
  // answer each a few times, then must leave them be: what it keeps sending
  // them is link and CPU its peers lose.  (What its peers get afterwards
  // is measured by the client of test_lockout.sh.)
  Finding held_lockout() {
    constexpr uint64_t kFramesPerStation = 4;
    const std::vector<uint8_t> byte(1, 0x5a);
    std::set<Mac> stations;
    uint64_t to_stations = 0;
    const FrameHandler count = [&](const proto::DecodedFrame& f) {
      Mac to;
      std::copy(f.dst_mac, f.dst_mac + 6, to.begin());
      if (stations.count(to)) ++to_stations;
    };
    size_t refused = 0;
    const auto started = Clock::now();
    for (size_t i = 0; i < o_.stations; ++i) {
      OwnConnection c;
      c.self = in_.stranger();
      c.self.queue = 0;
      stations.insert(c.self.mac);
      if (!in_.open(c, count, false)) {
        ++refused;
        continue;
      }
      in_.send_segment(c, wire::Opcode::kTagged, wire::kInitialSeq + 1, 2, 1, 0, byte,
                       wire::kFlagLastSegment);
      if (i % 16 == 15) in_.listen(milliseconds(1), count);
    }
    const double parking_s = seconds_since(started);
    const uint64_t while_parking = to_stations;
    to_stations = 0;
    in_.listen(milliseconds(o_.quiet_ms), count);
    Finding finding;
    finding.note(std::to_string(o_.stations - refused) + " stations parked a byte in " +
                 std::to_string(static_cast<int>(parking_s * 1000)) + " ms (" +
                 std::to_string(refused) + " not answered); the target sent them " +
                 std::to_string(while_parking) + " frames meanwhile and " +
                 std::to_string(to_stations) + " in the " + std::to_string(o_.quiet_ms) +
                 " ms after");
    if (refused * 10 > o_.stations) finding.fail("most stations were not answered");
    if (to_stations > kFramesPerStation * o_.stations)
      finding.fail("the target kept sending to silent stations");
    return finding;
  }

  // RESETs with the live connection's token, read off the wire, that name
  // sequences the target's connection cannot have sent now (far behind
  // and far ahead of the one seen): each draws a challenge, none a
  // teardown, keyed or not (as RFC 5961 has TCP do).
  Finding out_of_window_resets() {
    Finding finding;
    if (!in_.learn_live(std::chrono::seconds(5))) {
      finding.fail("never saw the live connection's frames: is the pair running?");
      return finding;
    }
    const LiveConnection live = in_.live();
    constexpr uint32_t kEach = 2048;
    for (uint32_t i = 0; i < kEach; ++i) {
      for (const uint32_t base : {live.target_seq - (1u << 20), live.target_seq + (1u << 20)}) {
        wire::FrameHeader h = header_between(wire::Opcode::kReset, in_.peer(), in_.target());
        h.ack_conn = live.target_conn;
        h.ack_token = live.target_token;
        h.ack = base + i;
        in_.send(in_.peer(), in_.target(), h);
      }
    }
    listen(milliseconds(500));
    const bool sampled = in_.learn_live(std::chrono::seconds(3));
    finding.note(std::to_string(2 * kEach) + " RESETs with the live token, 2^20 sequences " +
                 "behind and ahead of " + std::to_string(live.target_seq));
    if (!sampled) finding.fail("the pair's frames stopped");
    else if (in_.live().target_conn != live.target_conn)
      finding.fail("the target took a RESET for a sequence it could not have sent");
    return finding;
  }

  // What a station that sees the pair's frames can forge (test_keyed.sh):
  // it reads the live connection's tokens and sequences off the wire and
  // sends, in the peer's name, RESETs that name the target's connection,
  // its token and every sequence near the one it saw, and a fetch-add in
  // the peer's connection with its token at the sequence the target
  // expects next; and HELLOs from made-up stations.  Without a job key
  // (FI_DPDK_AUTH_KEY) the RESETs tear the pair's connection down (the
  // known limit of tokens: whoever sees them can use them); with one, the
  // target takes none of them and answers nothing.
  Finding on_path_forgeries() {
    Finding finding;
    if (!in_.learn_live(std::chrono::seconds(5))) {
      finding.fail("never saw the live connection's frames: is the pair running?");
      return finding;
    }
    LiveConnection live = in_.live();
    const uint16_t conn_before = live.target_conn;
    const uint64_t resets_before = resets_, hello_acks_before = hello_acks_;
    // Sequences run ahead of a sample by thousands a second, and a RESET
    // is taken only if it names one the target has in flight when it
    // arrives: each round covers the 4096 after a fresh sample, until one
    // is taken (the pair's frames stop, or its connection changes) or 12
    // rounds went by (a busy machine or a fast pair may outrun a few).
    // With a key every round is sent, and none may be taken.
    constexpr uint32_t kSpread = 4096;
    constexpr int kMaxRounds = 12;
    int rounds = 0;
    for (; rounds < kMaxRounds; ++rounds) {
      if (rounds != 0) {
        if (!in_.learn_live(std::chrono::seconds(2))) break;  // torn down
        live = in_.live();
        if (live.target_conn != conn_before) break;  // taken
      }
      for (uint32_t i = 0; i < kSpread; ++i) {
        wire::FrameHeader h = header_between(wire::Opcode::kReset, in_.peer(), in_.target());
        h.ack_conn = live.target_conn;
        h.ack_token = live.target_token;
        h.ack = live.target_seq + i;
        in_.send(in_.peer(), in_.target(), h);
      }
    }
    const auto request = read_request(region_.key, region_.address, 8);
    wire::FrameHeader data = header_between(wire::Opcode::kRequest, in_.peer(), in_.target());
    data.flags = wire::kFlagLastSegment | wire::kFlagAckNow;
    data.seq = data.msg_id = live.peer_next_seq;
    data.msg_len = static_cast<uint32_t>(request.size());
    data.conn = live.peer_conn;
    data.token = live.peer_token;
    in_.send(in_.peer(), in_.target(), data, request);
    for (int i = 0; i < 64; ++i) {
      const Station stranger = in_.stranger();
      wire::FrameHeader hello = header_between(wire::Opcode::kHello, stranger, in_.target());
      hello.conn = 1;
      hello.token = in_.random64() | 1;
      hello.msg_len = sizeof(wire::HandshakeBody);
      in_.send(stranger, in_.target(), hello, handshake_body(0, kOurMaxPayload));
    }
    listen(milliseconds(1500));
    const uint64_t answers = (resets_ - resets_before) + (hello_acks_ - hello_acks_before);
    // A RESET taken shows as the target's next connection to the peer.
    const bool sampled = in_.learn_live(std::chrono::seconds(3));
    const bool reset = sampled && in_.live().target_conn != conn_before;
    finding.note(std::to_string(rounds * kSpread) + " RESETs with the live token at sequences from " +
                 std::to_string(live.target_seq) + ", a request with the peer's token at " +
                 std::to_string(live.peer_next_seq) + ", 64 HELLOs: " + std::to_string(answers) +
                 " answers");
    if (!sampled) finding.fail("the pair's frames stopped");
    if (reset) finding.fail("the target took a forged RESET (its connection to the peer went from " +
                            std::to_string(conn_before) + " to " +
                            std::to_string(in_.live().target_conn) + ")");
    if (answers != 0) finding.fail("the target answered forged frames");
    return finding;
  }

  // Reads of the target's region (1 MiB each, at its start, where the live
  // pair's fetch-adds change the counter) whose answers are never
  // acknowledged: each fetch-add then makes the target copy the answers
  // lent from those bytes.  The target answers no more than this peer's
  // share of --response-bytes (a quarter), plus one; the reads it takes
  // beyond those wait, deferred, and hold no answer bytes.
  Finding response_memory() {
    constexpr uint32_t kReads = 64;
    const uint64_t length = std::min<uint64_t>(o_.region_bytes, 1 << 20);
    Session* admitted = admitted_session(false);
    if (admitted == nullptr) return Finding{false, "no connection of ours was taken"};
    Session& s = *admitted;
    const uint32_t first = s.acked;  // after the admitting read
    for (uint32_t i = 0; i < kReads; ++i) {
      const auto request = read_request(region_.key, region_.address, length);
      in_.send(s.c.self, in_.target(), request_header(s, first + i, first + i, request.size()),
               request);
    }
    listen(milliseconds(3000));
    const uint32_t taken = s.acked - first;
    const uint64_t allowed = (o_.response_bytes / 4 + length - 1) / length + 1;
    for (const auto& [id, status] : s.responses)
      if (status != 0) return Finding{false, "a read was refused with status " + std::to_string(status)};
    Finding finding;
    finding.note(std::to_string(kReads) + " reads of " + std::to_string(length) +
                 " bytes never acknowledged, " + std::to_string(taken) + " taken, " +
                 std::to_string(s.responses.size()) + " answered (at most " +
                 std::to_string(allowed) + ")");
    if (taken == 0) finding.fail("no read taken: the case did not reach the target");
    if (s.responses.size() > allowed) finding.fail("more response bytes held than the peer's share");
    return finding;
  }

  // Zero-length writes with remote CQ data, as fast as the target takes
  // them: each is answered (landed, or FI_ENOSPC while the target's CQ is
  // full), and the target's memory stays bounded.
  Finding remote_cq_data() {
    constexpr uint32_t kWrites = 5000;
    constexpr uint32_t kInFlight = 128;
    Session* admitted = admitted_session(true);
    if (admitted == nullptr) return Finding{false, "no connection of ours was taken"};
    Session& s = *admitted;
    const uint32_t first = s.acked;
    uint32_t sent = 0;
    const auto limit = Clock::now() + milliseconds(20000);
    const auto outstanding = [&] { return sent - (s.acked - first); };
    while (sent < kWrites && Clock::now() < limit) {
      while (sent < kWrites && outstanding() < kInFlight) {
        const auto request =
            write_with_data_request(region_.key, region_.address, 0, 0xDA7A0000u + sent);
        const uint32_t seq = first + sent;
        in_.send(s.c.self, in_.target(), request_header(s, seq, seq, request.size()), request);
        ++sent;
      }
      listen(milliseconds(5), [&] { return outstanding() < kInFlight / 2; });
    }
    listen(milliseconds(500), [&] { return s.responses.size() >= sent + 1; });
    size_t landed = 0, full = 0, other = 0;
    uint64_t other_status = 0;
    for (const auto& [id, status] : s.responses) {
      if (id < first) continue;  // the admitting read
      if (status == 0) {
        ++landed;
      } else if (status == ENOSPC) {
        ++full;
      } else {
        ++other;
        other_status = status;
      }
    }
    Finding finding;
    finding.note(std::to_string(sent) + " writes with remote CQ data, " + std::to_string(landed) +
                 " landed, " + std::to_string(full) + " refused for a full CQ");
    if (s.responses.empty()) finding.fail("no write answered: the case did not reach the target");
    if (other != 0)
      finding.fail(std::to_string(other) + " answered with another error (" +
                   std::to_string(other_status) + ")");
    return finding;
  }

  // A read whose frame is kept; then the target evicts our connection (we
  // stay quiet twice the peer timeout while --max-peers stations park
  // segments and take the table), our station reconnects on a new
  // connection and reads again, and the kept frame of the evicted
  // connection is replayed.  It must be refused (RESET), never run again.
  Finding evicted_replay() {
    Finding finding;
    Session& s = open_session();
    constexpr uint32_t kFirstId = 1, kSecondId = 100;
    const auto read = read_request(region_.key, region_.address, 8);
    const std::vector<uint8_t> kept =
        seal(s.c.self.mac, in_.target().mac,
             request_header(s, wire::kInitialSeq, kFirstId, read.size()), read);
    // Resent until taken (see admitted_session).
    const auto admit_limit = Clock::now() + milliseconds(2 * o_.peer_timeout_ms + 3000);
    while (!s.responses.count(kFirstId) && Clock::now() < admit_limit) {
      in_.send_frame(kept);
      listen(milliseconds(300), [&] { return s.responses.count(kFirstId) != 0; });
    }
    if (!s.responses.count(kFirstId)) {
      finding.fail("the first read was not answered");
      return finding;
    }
    listen(milliseconds(2 * o_.peer_timeout_ms + 500));
    const std::vector<uint8_t> byte(1, 0x5a);
    for (size_t i = 0; i < o_.max_peers; ++i) {
      Session& parked = open_session();
      parked.ack_responses = false;
      in_.send_segment(parked.c, wire::Opcode::kTagged, wire::kInitialSeq + 1, 2, 1, 0, byte,
                       wire::kFlagLastSegment);
      if (i % 16 == 15) listen(milliseconds(2));
    }
    listen(milliseconds(300));
    // The same station on a new connection: a new record at the target.
    s.c.conn = 2;
    if (!in_.open(s.c, [&](const proto::DecodedFrame& f) { observe(f); })) {
      finding.fail("our station could not reconnect");
      return finding;
    }
    s.acked = wire::kInitialSeq;
    const auto limit = Clock::now() + milliseconds(5000);
    while (!s.responses.count(kSecondId) && Clock::now() < limit) {
      in_.send(s.c.self, in_.target(), request_header(s, wire::kInitialSeq, kSecondId, read.size()),
               read);
      listen(milliseconds(300), [&] { return s.responses.count(kSecondId) != 0; });
    }
    if (!s.responses.count(kSecondId)) {
      finding.fail("the read on the new connection was not answered");
      return finding;
    }
    listen(milliseconds(100));
    const size_t frames_before = s.response_frames.size();
    const uint64_t resets_before = s.resets;
    in_.send_frame(kept);
    listen(milliseconds(1000));
    size_t ran_again = 0;
    for (size_t i = frames_before; i < s.response_frames.size(); ++i)
      ran_again += s.response_frames[i].second == kFirstId;
    finding.note("the evicted connection's read replayed: " +
                 std::to_string(s.resets - resets_before) + " RESET, " +
                 std::to_string(ran_again) + " answers");
    if (ran_again != 0) finding.fail("the replayed request ran again");
    if (s.resets == resets_before) finding.fail("the replayed segment was not refused");
    return finding;
  }

  static constexpr uint16_t kMaxAdvertisedWindow = 256;
  static constexpr uint64_t kForeignTag = 0xad5e'adad'5eadull;
  const Options& o_;
  Injector& in_;
  const Region region_;
  std::vector<std::unique_ptr<Session>> sessions_;
  uint64_t hello_acks_ = 0, resets_ = 0;
};

// Frames the live pair's peer must send during each case (its pace is
// thousands a second even on a busy machine).
constexpr uint64_t kMinPairFrames = 50;

int run(const Options& o) {
  const Station target = read_station(o.rendezvous + "/server");
  const Station peer = read_station(o.rendezvous + "/client");
  RawLink link(o.iface, wire::kDefaultEtherType, target_filter(target.mac, peer.mac));
  Injector injector(link, target, peer, o.seed);
  Adversary adversary(o, injector, read_region(o.rendezvous + "/server"));
  std::printf("target %s/%u, peer %s/%u, on %s\n", mac_text(target.mac).c_str(), target.queue,
              mac_text(peer.mac).c_str(), peer.queue, o.iface.c_str());

  // The pair's pace before anything: frames the peer sends per second, once
  // it runs (its first seconds may go to bringing the link up on a busy
  // machine).
  double baseline = 0;
  for (int attempt = 0; attempt < 30 && baseline < 100; ++attempt) {
    const uint64_t frames_before = adversary.pair_frames();
    const auto started = Clock::now();
    adversary.listen(std::chrono::seconds(1));
    baseline = (adversary.pair_frames() - frames_before) / seconds_since(started);
  }
  std::printf("live pair: %.0f frames/s from the peer; target resident %ld kB\n", baseline,
              resident_kb(o.target_pid));
  if (baseline < 100) {
    std::printf("FAIL: the live pair is not running\n");
    return 1;
  }

  int failed = 0;
  for (const std::string& name : o.cases) {
    const long rss_before = resident_kb(o.target_pid);
    const uint64_t pair_before = adversary.pair_frames();
    const auto case_started = Clock::now();
    Finding finding;
    try {
      finding = adversary.run(name);
    } catch (const std::exception& e) {
      finding.fail(e.what());
    }
    // The pair's progress over at least a second, and the target's memory
    // once it has worked through what was sent.
    const double elapsed = seconds_since(case_started);
    if (elapsed < 1.0) adversary.listen(std::chrono::duration_cast<Clock::duration>(
        std::chrono::duration<double>(1.0 - elapsed)));
    adversary.listen(milliseconds(200));
    const double rate = (adversary.pair_frames() - pair_before) / seconds_since(case_started);
    const long rss_after = resident_kb(o.target_pid);
    const long grown = rss_after - rss_before;
    if (rss_after < 0) finding.fail("the target process is gone");
    else if (grown > o.rss_limit_kb)
      finding.fail("the target grew by " + std::to_string(grown) + " kB");
    if (adversary.pair_frames() - pair_before < kMinPairFrames)
      finding.fail("the live pair stopped");
    else if (rate < o.progress_floor * baseline)
      finding.fail("the live pair slowed to " + std::to_string(static_cast<int>(100 * rate / baseline)) + " %");
    std::printf("%s %s: %s; target %+ld kB; live pair at %.0f %% of its rate\n",
                finding.ok ? "ok  " : "FAIL", name.c_str(), finding.detail.c_str(), grown,
                100 * rate / baseline);
    std::fflush(stdout);
    failed += !finding.ok;
  }
  return failed == 0 ? 0 : 1;
}

}  // namespace
}  // namespace ofi_dpdk::adversarial

int main(int argc, char** argv) {
  const auto options = ofi_dpdk::adversarial::parse(argc, argv);
  try {
    return ofi_dpdk::adversarial::run(options);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "adversary: %s\n", e.what());
    return 2;
  }
}
