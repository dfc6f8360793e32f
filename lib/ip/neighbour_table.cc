#include "lib/ip/neighbour_table.h"

#include <algorithm>
#include <cstring>
#include <numeric>
#include <random>

namespace ofi_dpdk::ip {
namespace {

// How long before `now_ns` `then_ns` was; 0 when it is later: callers read
// their clocks at different moments (a pass's start, a flush's), so a
// stamp may be a little ahead of the time it is compared with.
uint64_t age(uint64_t now_ns, uint64_t then_ns) {
  return now_ns > then_ns ? now_ns - then_ns : 0;
}

// splitmix64's finaliser: every input bit reaches every output bit.
uint64_t mix(uint64_t h) {
  h = (h ^ (h >> 30)) * 0xBF58476D1CE4E5B9ull;
  h = (h ^ (h >> 27)) * 0x94D049BB133111EBull;
  return h ^ (h >> 31);
}

// An address as two 64-bit words (an IPv4 one's second is 0).
std::array<uint64_t, 2> address_words(Ipv4 ip) {
  return {ip, 0};
}
std::array<uint64_t, 2> address_words(const Ipv6& ip) {
  std::array<uint64_t, 2> words{};
  for (int i = 0; i < 16; ++i) words[i / 8] = words[i / 8] << 8 | ip.bytes[i];
  return words;
}

}  // namespace

const char* verdict_name(Verdict verdict) {
  switch (verdict) {
    case Verdict::kLearned:
      return "learned";
    case Verdict::kKnown:
      return "known";
    case Verdict::kNotAsked:
      return "not asked";
    case Verdict::kBadMac:
      return "bad MAC";
    case Verdict::kForgedSender:
      return "sender not the frame's source";
    case Verdict::kOffLink:
      return "sender off the link";
    case Verdict::kConflict:
      return "disagrees with a live entry";
    case Verdict::kFull:
      return "table full of entries in use";
  }
  return "?";
}

bool station_mac(const uint8_t mac[6]) {
  static constexpr uint8_t kZero[6] = {};
  return (mac[0] & 1) == 0 && std::memcmp(mac, kZero, 6) != 0;
}

template <typename Ip>
size_t BasicNeighbourTable<Ip>::MacHash::operator()(const Mac& mac) const {
  uint64_t value = 0;
  for (uint8_t byte : mac) value = value << 8 | byte;
  return std::hash<uint64_t>()(value);
}

template <typename Ip>
BasicNeighbourTable<Ip>::BasicNeighbourTable(size_t capacity, uint64_t lifetime_ns)
    : capacity_(std::max<size_t>(capacity, 1)), lifetime_ns_(lifetime_ns) {
  std::random_device random;
  for (uint64_t& word : refused_key_) word = (uint64_t{random()} << 32) | random();
  for (auto& slots : refused_) slots.assign(kRefusedSlots, 0);
}

template <typename Ip>
bool BasicNeighbourTable<Ip>::fresh(const Entry& entry, uint64_t now_ns) const {
  return age(now_ns, entry.confirmed_ns) <= lifetime_ns_;
}

template <typename Ip>
bool BasicNeighbourTable<Ip>::in_use(const Entry& entry, uint64_t now_ns) const {
  return entry.used_ns != 0 && age(now_ns, entry.used_ns) <= lifetime_ns_;
}

template <typename Ip>
uint64_t BasicNeighbourTable<Ip>::refusals() const {
  return std::accumulate(verdicts_.begin() + static_cast<size_t>(Verdict::kNotAsked),
                         verdicts_.end(), uint64_t{0});
}

template <typename Ip>
bool BasicNeighbourTable<Ip>::pin(Ip ip, const uint8_t mac[6]) {
  if (!station_mac(mac)) return false;
  if (!pinned_.contains(ip) && pinned_.size() >= capacity_) return false;
  Mac& pinned = pinned_[ip];
  std::memcpy(pinned.data(), mac, 6);
  by_mac_[pinned] = ip;
  if (const auto it = learned_.find(ip); it != learned_.end()) forget(it);
  close(ip);
  return true;
}

template <typename Ip>
void BasicNeighbourTable<Ip>::expire(Questions& pool, uint64_t window_ns, uint64_t now_ns) {
  // Oldest first: the stale ones are at the front.
  while (!pool.empty() && age(now_ns, pool.front().asked_ns) > window_ns) {
    questions_.erase(pool.front().ip);
    pool.pop_front();
  }
}

template <typename Ip>
const typename BasicNeighbourTable<Ip>::Question* BasicNeighbourTable<Ip>::open_question(
    Ip ip, uint64_t now_ns) const {
  const auto it = questions_.find(ip);
  if (it == questions_.end()) return nullptr;
  const Question& q = *it->second;
  return age(now_ns, q.asked_ns) <= (q.asked_back ? kAskBackNs : kExpectNs) ? &q : nullptr;
}

template <typename Ip>
bool BasicNeighbourTable<Ip>::open(Ip ip, uint64_t now_ns, bool asked_back) {
  expire(own_, kExpectNs, now_ns);
  expire(asked_back_, kAskBackNs, now_ns);
  Questions& pool = asked_back ? asked_back_ : own_;
  const size_t most = asked_back ? kMaxAskedBack : kMaxExpected;
  const auto it = questions_.find(ip);
  if (it != questions_.end()) {
    Questions& from = it->second->asked_back ? asked_back_ : own_;
    if (&from != &pool) {
      // Asked back, and now a question of our own (never the other way:
      // an asker does not demote what we need).
      if (asked_back || pool.size() >= most) return false;
      it->second->asked_back = false;
    }
    it->second->asked_ns = now_ns;
    pool.splice(pool.end(), from, it->second);  // renewed: the newest
    return true;
  }
  if (pool.size() >= most) {
    if (!asked_back || !refused_before(ip, now_ns)) return false;
    questions_.erase(pool.front().ip);
    pool.pop_front();
    ++displaced_;
  }
  pool.push_back({ip, now_ns, asked_back});
  questions_[ip] = std::prev(pool.end());
  return true;
}

template <typename Ip>
bool BasicNeighbourTable<Ip>::refused_before(Ip ip, uint64_t now_ns) {
  if (age(now_ns, refused_since_ns_) > kRefusedGenerationNs) {
    current_refused_ ^= 1;
    std::fill(refused_[current_refused_].begin(), refused_[current_refused_].end(), 0);
    refused_since_ns_ = now_ns;
  }
  // Each word of the address keyed before it is mixed in: without the key
  // a stranger can neither pick an address that lands on a neighbour's
  // slot nor one whose tag is a neighbour's.
  const std::array<uint64_t, 2> words = address_words(ip);
  const uint64_t h = mix(mix(words[0] ^ refused_key_[0]) ^ words[1] ^ refused_key_[1]);
  const uint64_t tag = h | 1;
  const size_t slot = (h >> 1) % kRefusedSlots;
  const bool seen = refused_[0][slot] == tag || refused_[1][slot] == tag;
  refused_[current_refused_][slot] = tag;
  return seen;
}

template <typename Ip>
void BasicNeighbourTable<Ip>::close(Ip ip) {
  const auto it = questions_.find(ip);
  if (it == questions_.end()) return;
  (it->second->asked_back ? asked_back_ : own_).erase(it->second);
  questions_.erase(it);
}

template <typename Ip>
bool BasicNeighbourTable<Ip>::expect(Ip ip, uint64_t now_ns) {
  return open(ip, now_ns, false);
}

template <typename Ip>
bool BasicNeighbourTable<Ip>::asked_since(Ip ip, uint64_t since_ns) const {
  const auto it = questions_.find(ip);
  return it != questions_.end() && it->second->asked_ns >= since_ns;
}

template <typename Ip>
bool BasicNeighbourTable<Ip>::heard_since(Ip ip, uint64_t since_ns) const {
  if (asked_since(ip, since_ns)) return true;
  const auto it = learned_.find(ip);
  return it != learned_.end() && it->second.confirmed_ns >= since_ns;
}

template <typename Ip>
bool BasicNeighbourTable<Ip>::asking(Ip ip, uint64_t now_ns) const {
  return open_question(ip, now_ns) != nullptr;
}

template <typename Ip>
void BasicNeighbourTable<Ip>::forget(typename std::unordered_map<Ip, Entry>::iterator it) {
  const auto indexed = by_mac_.find(it->second.mac);
  if (indexed != by_mac_.end() && indexed->second == it->first) by_mac_.erase(indexed);
  (it->second.used_ns != 0 ? used_ : idle_).erase(it->second.use_order);
  learned_.erase(it);
}

template <typename Ip>
Verdict BasicNeighbourTable<Ip>::record(Ip ip, const Mac& mac, uint64_t now_ns, bool wanted) {
  auto it = learned_.find(ip);
  if (it == learned_.end()) {
    if (learned_.size() >= capacity_) {
      // The oldest never used goes, else the least recently used, unless
      // a connection still uses it.
      const auto victim = learned_.find(idle_.empty() ? used_.back() : idle_.back());
      if (in_use(victim->second, now_ns)) return Verdict::kFull;
      forget(victim);
      ++evictions_;
    }
    // What we asked for ourselves is for frames waiting now: in use.
    std::list<Ip>& order = wanted ? used_ : idle_;
    order.push_front(ip);
    it = learned_.emplace(ip, Entry{mac, now_ns, wanted ? now_ns : 0, order.begin()}).first;
  } else {
    if (it->second.mac != mac) {
      const auto indexed = by_mac_.find(it->second.mac);
      if (indexed != by_mac_.end() && indexed->second == ip) by_mac_.erase(indexed);
    }
    it->second.mac = mac;
    it->second.confirmed_ns = now_ns;
  }
  by_mac_[mac] = ip;
  return Verdict::kLearned;
}

template <typename Ip>
Verdict BasicNeighbourTable<Ip>::take_answer(Ip ip, const uint8_t mac[6], uint64_t now_ns) {
  Verdict verdict = Verdict::kLearned;
  Mac claimed;
  std::memcpy(claimed.data(), mac, 6);
  const auto pinned = pinned_.find(ip);
  const auto learned = learned_.find(ip);
  const Question* question = open_question(ip, now_ns);
  if (!station_mac(mac)) {
    verdict = Verdict::kBadMac;
  } else if (question == nullptr) {
    verdict = Verdict::kNotAsked;
  } else if (pinned != pinned_.end()) {
    verdict = pinned->second == claimed ? Verdict::kKnown : Verdict::kConflict;
  } else if (learned != learned_.end() && fresh(learned->second, now_ns) &&
             learned->second.mac != claimed) {
    // A live entry is not replaced by an answer that disagrees: the real
    // neighbour's answer may still come.
    verdict = Verdict::kConflict;
  } else {
    verdict = record(ip, claimed, now_ns, !question->asked_back);
    if (verdict == Verdict::kLearned) close(ip);
  }
  if (verdict != Verdict::kLearned) ++verdicts_[static_cast<size_t>(verdict)];
  return verdict;
}

template <typename Ip>
Verdict BasicNeighbourTable<Ip>::take_request(Ip ip, const uint8_t mac[6], uint64_t now_ns,
                                              bool* ask_now) {
  *ask_now = false;
  if (station_mac(mac) && open_question(ip, now_ns) != nullptr) return take_answer(ip, mac, now_ns);
  Verdict verdict = Verdict::kNotAsked;
  Mac claimed;
  std::memcpy(claimed.data(), mac, 6);
  const auto pinned = pinned_.find(ip);
  const auto learned = learned_.find(ip);
  const bool recently_asked = asked_since(ip, now_ns - std::min(now_ns, kReaskNs));
  if (!station_mac(mac)) {
    verdict = Verdict::kBadMac;
  } else if (pinned != pinned_.end()) {
    verdict = pinned->second == claimed ? Verdict::kKnown : Verdict::kConflict;
  } else if (learned != learned_.end() && fresh(learned->second, now_ns)) {
    if (learned->second.mac == claimed) return Verdict::kKnown;
    // Asked again: only the answer counts, and it must agree with the
    // live entry to change anything before the entry lapses.
    verdict = Verdict::kConflict;
    *ask_now = !recently_asked && open(ip, now_ns, false);
  } else {
    // A neighbour we do not know: we answer it, and ask for it ourselves,
    // so that we can send it what it will ask of us.
    *ask_now = !recently_asked && open(ip, now_ns, true);
    if (*ask_now) return verdict;  // what every first contact does: no refusal
  }
  if (verdict != Verdict::kKnown) ++verdicts_[static_cast<size_t>(verdict)];
  return verdict;
}

template <typename Ip>
bool BasicNeighbourTable<Ip>::find(Ip ip, uint64_t now_ns, uint8_t mac[6], bool* refresh_due) {
  if (!pinned_.empty()) {
    if (const auto pinned = pinned_.find(ip); pinned != pinned_.end()) {
      std::memcpy(mac, pinned->second.data(), 6);
      if (refresh_due != nullptr) *refresh_due = false;
      return true;
    }
  }
  const auto it = learned_.find(ip);
  if (it == learned_.end() || !fresh(it->second, now_ns)) return false;
  Entry& entry = it->second;
  std::memcpy(mac, entry.mac.data(), 6);
  // Use order is kept to kUseGrainNs: a frame per peer per grain moves
  // its entry, the rest only read it.
  if (entry.used_ns == 0) {
    used_.splice(used_.begin(), idle_, entry.use_order);
    entry.used_ns = std::max<uint64_t>(now_ns, 1);
  } else if (now_ns >= entry.used_ns + kUseGrainNs) {
    used_.splice(used_.begin(), used_, entry.use_order);
    entry.used_ns = now_ns;
  }
  if (refresh_due != nullptr) *refresh_due = age(now_ns, entry.confirmed_ns) > lifetime_ns_ / 2;
  return true;
}

template <typename Ip>
std::optional<Ip> BasicNeighbourTable<Ip>::address_of(const uint8_t mac[6], uint64_t now_ns) const {
  Mac key;
  std::memcpy(key.data(), mac, 6);
  const auto indexed = by_mac_.find(key);
  if (indexed == by_mac_.end()) return std::nullopt;
  const Ip ip = indexed->second;
  if (const auto pinned = pinned_.find(ip); pinned != pinned_.end() && pinned->second == key)
    return ip;
  const auto learned = learned_.find(ip);
  if (learned != learned_.end() && learned->second.mac == key && fresh(learned->second, now_ns))
    return ip;
  return std::nullopt;
}

template class BasicNeighbourTable<Ipv4>;
template class BasicNeighbourTable<Ipv6>;

}  // namespace ofi_dpdk::ip
