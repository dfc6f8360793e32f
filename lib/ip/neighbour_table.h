// neighbour_table.h: what a port knows of its neighbours' MAC addresses,
// learned by ARP (IPv4) or neighbour discovery (IPv6: the same table of
// Ipv6 keys).  Bounded: at most `capacity` entries (the oldest goes
// first), each trusted for `lifetime_ns` after it was last confirmed, and
// an answer is taken only for an address the port asked for (expect()), so
// a stranger's unsolicited replies neither fill the table nor redirect a
// peer's frames.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <unordered_map>
#include <vector>

#include "lib/ip/ipv4.h"
#include "lib/ip/ipv6.h"

namespace ofi_dpdk::ip {

template <typename Ip>
class BasicNeighbourTable {
 public:
  static constexpr size_t kDefaultCapacity = 1024;
  static constexpr uint64_t kDefaultLifetimeNs = 60'000'000'000;  // 60 s
  // Addresses being resolved at once, at most; each waits 10 s at most.
  static constexpr size_t kMaxExpected = 64;
  static constexpr uint64_t kExpectNs = 10'000'000'000;

  explicit BasicNeighbourTable(size_t capacity = kDefaultCapacity,
                          uint64_t lifetime_ns = kDefaultLifetimeNs);

  // A neighbour told us its address by asking for ours (a request whose
  // target is our address): we will answer it, and it will send to us.
  void learn(Ip ip, const uint8_t mac[6], uint64_t now_ns);
  // We are about to ask for `ip`: its reply will be taken.  False when
  // kMaxExpected other addresses are being resolved.
  bool expect(Ip ip, uint64_t now_ns);
  // Whether `ip` was asked for (expect) at `since_ns` or later.
  bool asked_since(Ip ip, uint64_t since_ns) const;
  // A reply for `ip`: recorded when expected (true), else ignored and
  // counted.
  bool take_reply(Ip ip, const uint8_t mac[6], uint64_t now_ns);
  // The MAC of `ip`, if known and confirmed within the lifetime.
  // With `refresh_due`, also whether it is past half its lifetime: a
  // sender that still uses it asks again, so that a live peer's entry
  // never lapses.
  bool find(Ip ip, uint64_t now_ns, uint8_t mac[6], bool* refresh_due = nullptr) const;
  // The address of the neighbour with that MAC (the most recently
  // confirmed one), if known and within the lifetime.
  std::optional<Ip> address_of(const uint8_t mac[6], uint64_t now_ns) const;

  size_t size() const { return entries_.size(); }
  uint64_t evictions() const { return evictions_; }
  uint64_t ignored_replies() const { return ignored_replies_; }

 private:
  struct Entry {
    uint8_t mac[6];
    uint64_t confirmed_ns;
  };
  void record(Ip ip, const uint8_t mac[6], uint64_t now_ns);
  bool fresh(const Entry& entry, uint64_t now_ns) const;

  size_t capacity_;
  uint64_t lifetime_ns_;
  std::unordered_map<Ip, Entry> entries_;
  std::vector<std::pair<Ip, uint64_t>> expected_;  // address, since
  uint64_t evictions_ = 0;
  uint64_t ignored_replies_ = 0;
};

using NeighbourTable = BasicNeighbourTable<Ipv4>;
using Neighbour6Table = BasicNeighbourTable<Ipv6>;

}  // namespace ofi_dpdk::ip
