// neighbour_table.h: what a port knows of its neighbours' MAC addresses,
// learned by ARP (IPv4) or neighbour discovery (IPv6: the same table of
// Ipv6 keys), and the rules that decide what the wire may teach it.
//
// Trust: a mapping is recorded only as the answer to a question the port
// asked while that question is open (expect(), or take_request asking
// back): a reply, or a request from the very address being resolved.
// Unsolicited traffic never creates or replaces an entry: a request from
// an address the port does not know makes it ask that address itself (a
// pool of questions of its own, so strangers cannot crowd out the port's
// own), and one that disagrees with a live entry makes it ask again (only
// the answer counts, and an answer that disagrees with a live entry does
// not replace it either: a neighbour whose MAC really changed is learned
// anew once its entry lapses).  Static entries (pin: FI_DPDK_NEIGHBOURS,
// the kernel's permanent ones) never lapse and nothing from the wire
// replaces them.
//
// Bounds: at most `capacity` learned entries and `capacity` static ones;
// kMaxExpected questions of the port's own and kMaxAskedBack asked back.
// When full, the oldest entry never used goes (one asked back for an
// asker nothing was sent to yet), else the least recently used, unless it
// was used within its lifetime (an entry a connection uses): then the new
// mapping is refused instead.  Lookups, learning and eviction are O(1):
// hash maps, and lists in use order; no scan.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <list>
#include <optional>
#include <unordered_map>
#include <vector>

#include "lib/ip/ipv4.h"
#include "lib/ip/ipv6.h"

namespace ofi_dpdk::ip {

// What became of a neighbour message's claim.  The first two change
// nothing that was trusted; the rest are refusals, counted by reason.
enum class Verdict : uint8_t {
  kLearned,       // recorded, as the answer to an open question
  kKnown,         // the table already says the same: nothing to do
  kNotAsked,      // no open question of ours for that address
  kBadMac,        // a broadcast, multicast (group bit) or all-zero MAC
  kForgedSender,  // the message's sender MAC is not its frame's source
  kOffLink,       // the sender's address is no unicast neighbour's on the
                  // interface's link (off it, a broadcast, ours)
  kConflict,      // a live or static entry says otherwise: kept
  kFull,          // every learned entry is in use: none was evicted
};
inline constexpr size_t kVerdicts = 8;
// The verdict's name, for logs ("not asked", "bad MAC" ...).
const char* verdict_name(Verdict verdict);
// Whether `mac` may be a station's: neither a group address (its first
// byte's low bit: multicast, broadcast) nor all zeros.
bool station_mac(const uint8_t mac[6]);

template <typename Ip>
class BasicNeighbourTable {
 public:
  static constexpr size_t kDefaultCapacity = 1024;
  static constexpr uint64_t kDefaultLifetimeNs = 60'000'000'000;  // 60 s
  // The port's own questions (next hops it needs) open at once, at most;
  // each is open 10 s at most.
  static constexpr size_t kMaxExpected = 64;
  static constexpr uint64_t kExpectNs = 10'000'000'000;
  // Questions asked back on behalf of askers we did not know, at most; a
  // neighbour that asked for us answers at once, so each is open 1 s.
  static constexpr size_t kMaxAskedBack = 64;
  static constexpr uint64_t kAskBackNs = 1'000'000'000;
  // The same address is asked again (ask_back, a disagreeing request's
  // re-probe) at most this often.
  static constexpr uint64_t kReaskNs = 200'000'000;
  // Askers refused for want of room in the ask-back pool are remembered,
  // by a keyed 64-bit hash of their address in one of kRefusedSlots (the
  // last one there wins), in two generations of kRefusedGenerationNs: one
  // that asks again while remembered (a real neighbour polls until
  // answered) takes the place of the oldest open question, since a flood
  // of made-up askers that ask once would otherwise keep the pool full for
  // as long as it lasts.  64 KiB a table.
  static constexpr size_t kRefusedSlots = 4096;
  static constexpr uint64_t kRefusedGenerationNs = 2'000'000'000;
  // How finely find() keeps the order of use (an entry's use is stamped
  // again once this has passed).
  static constexpr uint64_t kUseGrainNs = 1'000'000;

  explicit BasicNeighbourTable(size_t capacity = kDefaultCapacity,
                               uint64_t lifetime_ns = kDefaultLifetimeNs);

  // A static entry: never lapses, never evicted, never replaced from the
  // wire (a later pin of the same address replaces it).  False when `mac`
  // is not a station's or `capacity` static entries exist.
  bool pin(Ip ip, const uint8_t mac[6]);
  // We are about to ask for `ip`: its answer will be taken.  False when
  // kMaxExpected other questions are open.
  bool expect(Ip ip, uint64_t now_ns);
  // Whether `ip` was asked for (expect, ask_back) at `since_ns` or later.
  bool asked_since(Ip ip, uint64_t since_ns) const;
  // Whether `ip` was asked for or confirmed (answered) at `since_ns` or
  // later.
  bool heard_since(Ip ip, uint64_t since_ns) const;
  // Whether a question for `ip` is open now.
  bool asking(Ip ip, uint64_t now_ns) const;

  // An answer (ARP reply, neighbour advertisement) for `ip`, whose sender
  // checks passed: kLearned when a question for it was open (closed by
  // it), else kNotAsked; kBadMac, kConflict (a live or static entry has
  // another MAC: the question stays open for the real one), kFull.
  Verdict take_answer(Ip ip, const uint8_t mac[6], uint64_t now_ns);
  // A request (ARP request, neighbour solicitation) for our address from
  // `ip`, whose sender checks passed; it is answered whatever this says.
  // Taken as an answer when we are asking for `ip` (take_answer).
  // Otherwise nothing is recorded: kKnown when the table agrees; kConflict
  // when a live entry disagrees; kNotAsked for an address it does not
  // know.  *ask_now is set when the port should ask for `ip` now (the
  // question is open already): an address it does not know is asked back
  // (so that we can answer it), a disagreeing live one asked again; each
  // address at most once per kReaskNs, within the pools' bounds.  (An
  // asker asked back is not counted as a refusal; one that could not be
  // is, as kNotAsked.)
  Verdict take_request(Ip ip, const uint8_t mac[6], uint64_t now_ns, bool* ask_now);

  // The MAC of `ip`, if static or confirmed within the lifetime; marks the
  // entry used (an entry in use is not evicted).  With `refresh_due`,
  // also whether it is past half its lifetime: a sender that still uses
  // it asks again, so that a live peer's entry never lapses.
  bool find(Ip ip, uint64_t now_ns, uint8_t mac[6], bool* refresh_due = nullptr);
  // The address of the neighbour with that MAC (the most recently
  // recorded one), if known and within the lifetime.
  std::optional<Ip> address_of(const uint8_t mac[6], uint64_t now_ns) const;

  // Counts a refusal the caller decided (kForgedSender, kOffLink ...).
  void refuse(Verdict verdict) { ++verdicts_[static_cast<size_t>(verdict)]; }
  uint64_t count(Verdict verdict) const { return verdicts_[static_cast<size_t>(verdict)]; }
  uint64_t refusals() const;

  size_t size() const { return learned_.size(); }  // learned entries
  size_t pinned() const { return pinned_.size(); }
  uint64_t evictions() const { return evictions_; }
  // Questions asked back that gave way to a refused asker asking again.
  uint64_t displaced() const { return displaced_; }

 private:
  using Mac = std::array<uint8_t, 6>;
  struct MacHash {
    size_t operator()(const Mac& mac) const;
  };
  struct Entry {
    Mac mac;
    uint64_t confirmed_ns;
    uint64_t used_ns;                            // 0: never used
    typename std::list<Ip>::iterator use_order;  // in used_ if used_ns, else idle_
  };
  struct Question {
    Ip ip;
    uint64_t asked_ns;
    bool asked_back;
  };
  using Questions = std::list<Question>;  // oldest first

  bool fresh(const Entry& entry, uint64_t now_ns) const;
  bool in_use(const Entry& entry, uint64_t now_ns) const;
  // Opens (or renews) the question for `ip` on one pool; false when full.
  bool open(Ip ip, uint64_t now_ns, bool asked_back);
  void close(Ip ip);
  // Whether `ip` was refused an ask-back recently; remembers it as refused.
  bool refused_before(Ip ip, uint64_t now_ns);
  void expire(Questions& pool, uint64_t window_ns, uint64_t now_ns);
  const Question* open_question(Ip ip, uint64_t now_ns) const;
  // `wanted`: asked for by the port itself (in use from the start), not
  // asked back for an asker.
  Verdict record(Ip ip, const Mac& mac, uint64_t now_ns, bool wanted);
  void forget(typename std::unordered_map<Ip, Entry>::iterator it);

  size_t capacity_;
  uint64_t lifetime_ns_;
  std::unordered_map<Ip, Mac> pinned_;
  std::unordered_map<Ip, Entry> learned_;
  // Learned addresses: never used, newest first; used, most recently
  // used first.  Eviction takes the oldest idle one, else the least
  // recently used one when it is no longer in use.
  std::list<Ip> idle_, used_;
  std::unordered_map<Mac, Ip, MacHash> by_mac_;  // most recently recorded
  Questions own_, asked_back_;
  std::unordered_map<Ip, typename Questions::iterator> questions_;
  std::array<uint64_t, kVerdicts> verdicts_{};
  uint64_t evictions_ = 0;
  // Hashes (0: none) of refused askers: refused_[current_refused_] since
  // refused_since_ns_, the other in the generation before.
  std::array<std::vector<uint64_t>, 2> refused_;
  size_t current_refused_ = 0;
  uint64_t refused_since_ns_ = 0;
  std::array<uint64_t, 2> refused_key_;  // random: see refused_before
  uint64_t displaced_ = 0;
};

using NeighbourTable = BasicNeighbourTable<Ipv4>;
using Neighbour6Table = BasicNeighbourTable<Ipv6>;

}  // namespace ofi_dpdk::ip
