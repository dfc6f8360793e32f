// adversary_parking.cc: the adversary's cases that park segments ahead of a
// gap: a table full of parked connections, the lock-out of silent
// stations, and the replay of an evicted connection's request.
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

#include "test/adversarial/adversary.h"
#include "test/adversarial/forge.h"
#include "test/adversarial/injector.h"
#include "test/adversarial/raw_link.h"

namespace ofi_dpdk::adversarial {

// Stations that complete a handshake, park one segment ahead of a gap
// (seq 2; seq 1 never comes) and go quiet: twice --max-peers of them, so
// the target's table is full of connections that hold data and never
// moved.  A station that then talks (a whole message at seq 1) must still
// be taken: a parked connection is evicted for it.
Finding Adversary::parked_segments() {
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
Finding Adversary::held_lockout() {
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

// A read whose frame is kept; then the target evicts our connection (we
// stay quiet twice the peer timeout while --max-peers stations park
// segments and take the table), our station reconnects on a new
// connection and reads again, and the kept frame of the evicted
// connection is replayed.  It must be refused (RESET), never run again.
Finding Adversary::evicted_replay() {
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
  finding.note(
      "the evicted connection's read replayed: " + std::to_string(s.resets - resets_before) +
      " RESET, " + std::to_string(ran_again) + " answers");
  if (ran_again != 0) finding.fail("the replayed request ran again");
  if (s.resets == resets_before) finding.fail("the replayed segment was not refused");
  return finding;
}

}  // namespace ofi_dpdk::adversarial
