// adversary_budgets.cc: the adversary's cases against the target's budgets:
// a message that pins the unexpected budget, responses never acknowledged,
// the answer bytes reads hold, and remote CQ data.
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

// A message that claims most of the unexpected budget and never
// finishes: it gives the budget back after the peer timeout, so a second
// that does not fit beside it is taken then (and not before), and the
// claim costs no memory it did not receive.
Finding Adversary::pinned_budget() {
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
  const auto waited = std::chrono::duration_cast<milliseconds>(Clock::now() - pinned_at).count();
  finding.note("claimed " + std::to_string(pin_len) + " of " + std::to_string(o_.unexpected_bytes) +
               " bytes; a " + std::to_string(wait_len) + "-byte message waited " +
               std::to_string(waited) + " ms");
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
Finding Adversary::unacked_responses() {
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
  finding.note(std::to_string(kRequests) + " requests sent, " + std::to_string(taken) + " taken, " +
               std::to_string(s.responses.size()) + " answers seen");
  if (taken == 0) finding.fail("no request taken: the case did not reach the target");
  if (s.responses.size() > kResponseCap) finding.fail("more answers than may wait for acks");
  if (taken > kResponseCap + kDeferredCap) finding.fail("more requests taken than may wait");
  return finding;
}

// Reads of the target's region (1 MiB each, at its start, where the live
// pair's fetch-adds change the counter) whose answers are never
// acknowledged: each fetch-add then makes the target copy the answers
// lent from those bytes.  The target answers no more than this peer's
// share of --response-bytes (a quarter), plus one; the reads it takes
// beyond those wait, deferred, and hold no answer bytes.
Finding Adversary::response_memory() {
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
    if (status != 0)
      return Finding{false, "a read was refused with status " + std::to_string(status)};
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
Finding Adversary::remote_cq_data() {
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

}  // namespace ofi_dpdk::adversarial
