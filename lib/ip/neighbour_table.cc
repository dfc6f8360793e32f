#include "lib/ip/neighbour_table.h"

#include <algorithm>
#include <cstring>

namespace ofi_dpdk::ip {
namespace {

// How long before `now_ns` `then_ns` was; 0 when it is later: callers read
// their clocks at different moments (a pass's start, a flush's), so a
// stamp may be a little ahead of the time it is compared with.
uint64_t age(uint64_t now_ns, uint64_t then_ns) { return now_ns > then_ns ? now_ns - then_ns : 0; }

}  // namespace

template <typename Ip>
BasicNeighbourTable<Ip>::BasicNeighbourTable(size_t capacity, uint64_t lifetime_ns)
    : capacity_(std::max<size_t>(capacity, 1)), lifetime_ns_(lifetime_ns) {}

template <typename Ip>
bool BasicNeighbourTable<Ip>::fresh(const Entry& entry, uint64_t now_ns) const {
  return age(now_ns, entry.confirmed_ns) <= lifetime_ns_;
}

template <typename Ip>
void BasicNeighbourTable<Ip>::record(Ip ip, const uint8_t mac[6], uint64_t now_ns) {
  auto it = entries_.find(ip);
  if (it == entries_.end() && entries_.size() >= capacity_) {
    // Full: the least recently confirmed goes (a scan; ARP is rare, and
    // what a flood can make us scan is capacity_ entries per frame).
    auto oldest = entries_.begin();
    for (auto e = entries_.begin(); e != entries_.end(); ++e)
      if (e->second.confirmed_ns < oldest->second.confirmed_ns) oldest = e;
    entries_.erase(oldest);
    ++evictions_;
  }
  Entry& entry = entries_[ip];
  std::memcpy(entry.mac, mac, 6);
  entry.confirmed_ns = now_ns;
}

template <typename Ip>
void BasicNeighbourTable<Ip>::learn(Ip ip, const uint8_t mac[6], uint64_t now_ns) {
  record(ip, mac, now_ns);
}

template <typename Ip>
bool BasicNeighbourTable<Ip>::expect(Ip ip, uint64_t now_ns) {
  std::erase_if(expected_, [&](const auto& e) { return age(now_ns, e.second) > kExpectNs; });
  for (auto& e : expected_) {
    if (e.first == ip) {
      e.second = now_ns;
      return true;
    }
  }
  if (expected_.size() >= kMaxExpected) return false;
  expected_.emplace_back(ip, now_ns);
  return true;
}

template <typename Ip>
bool BasicNeighbourTable<Ip>::asked_since(Ip ip, uint64_t since_ns) const {
  return std::any_of(expected_.begin(), expected_.end(),
                     [&](const auto& e) { return e.first == ip && e.second >= since_ns; });
}

template <typename Ip>
bool BasicNeighbourTable<Ip>::take_reply(Ip ip, const uint8_t mac[6], uint64_t now_ns) {
  const auto it = std::find_if(expected_.begin(), expected_.end(), [&](const auto& e) {
    return e.first == ip && age(now_ns, e.second) <= kExpectNs;
  });
  if (it == expected_.end()) {
    ++ignored_replies_;
    return false;
  }
  expected_.erase(it);
  record(ip, mac, now_ns);
  return true;
}

template <typename Ip>
bool BasicNeighbourTable<Ip>::find(Ip ip, uint64_t now_ns, uint8_t mac[6], bool* refresh_due) const {
  const auto it = entries_.find(ip);
  if (it == entries_.end() || !fresh(it->second, now_ns)) return false;
  std::memcpy(mac, it->second.mac, 6);
  if (refresh_due != nullptr) *refresh_due = age(now_ns, it->second.confirmed_ns) > lifetime_ns_ / 2;
  return true;
}

template <typename Ip>
std::optional<Ip> BasicNeighbourTable<Ip>::address_of(const uint8_t mac[6], uint64_t now_ns) const {
  std::optional<Ip> found;
  uint64_t newest = 0;
  for (const auto& [ip, entry] : entries_) {
    if (std::memcmp(entry.mac, mac, 6) != 0 || !fresh(entry, now_ns)) continue;
    if (!found || entry.confirmed_ns >= newest) {
      found = ip;
      newest = entry.confirmed_ns;
    }
  }
  return found;
}

template class BasicNeighbourTable<Ipv4>;
template class BasicNeighbourTable<Ipv6>;

}  // namespace ofi_dpdk::ip
