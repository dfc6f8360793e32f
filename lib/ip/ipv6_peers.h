// ipv6_peers.h: names for peers reached by IPv6.  The transport names a
// peer by a 6-byte link address; an IPv4 address fits in one (udp4.h's
// peer id), an IPv6 address does not.  So each IPv6 peer gets a 32-bit
// handle in this table, and its peer id is 03:06 then the handle: the
// group bit set, as no sender's MAC has it.  Handles are handed out in
// order and never to two entries at once, so a handle of an address the
// table let go names no other address until 2^32 more were handed out
// (what still holds an old id finds nothing, not someone else).
//
// Bounded: entries the provider itself asked for (an address inserted in
// an AV, connected to or accepted: `pinned`) stay for the table's life, at
// most kMaxPinned; entries made for senders we never named (a HELLO from a
// new peer: any stranger can make those) are at most `stranger_capacity`,
// the least recently used going first, in constant time.  Pure data
// structure: no DPDK, no lock.
#pragma once

#include <cstddef>
#include <cstdint>
#include <list>
#include <optional>
#include <unordered_map>

#include "lib/ip/ipv6.h"

namespace ofi_dpdk::ip {

bool is_ipv6_peer_id(const uint8_t id[6]);

class Ipv6Peers {
 public:
  static constexpr size_t kMaxPinned = 32768;
  static constexpr size_t kDefaultStrangerCapacity = 1024;

  explicit Ipv6Peers(size_t stranger_capacity = kDefaultStrangerCapacity);

  // The peer id of `address` (written to id), made if new; marks it used.
  // `pinned`: the entry stays from now on.  False when the table cannot
  // take it (kMaxPinned pinned entries; or a stranger with stranger
  // capacity 0).
  bool id_of(const Ipv6& address, bool pinned, uint8_t id[6]);
  // The peer id of `address` if the table holds it (written to id),
  // making nothing and marking nothing.
  bool find_id(const Ipv6& address, uint8_t id[6]) const;
  // The address of a peer id, if it names one still in the table; marks
  // it used.
  std::optional<Ipv6> address_of(const uint8_t id[6]);
  // The same without marking it.
  std::optional<Ipv6> peek(const uint8_t id[6]) const;

  size_t size() const { return by_handle_.size(); }
  size_t pinned() const { return pinned_; }
  uint64_t evictions() const { return evictions_; }

 private:
  struct Entry {
    Ipv6 address;
    bool pinned = false;
    std::list<uint32_t>::iterator in_strangers;  // when not pinned
  };
  void touch(Entry& entry);
  uint32_t next_free_handle();

  size_t stranger_capacity_;
  std::unordered_map<uint32_t, Entry> by_handle_;
  std::unordered_map<Ipv6, uint32_t> by_address_;
  std::list<uint32_t> strangers_;  // least recently used first
  uint32_t next_handle_ = 1;
  size_t pinned_ = 0;
  uint64_t evictions_ = 0;
};

}  // namespace ofi_dpdk::ip
