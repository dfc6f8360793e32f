// ipv6_peers.h: names for peers reached by IPv6.  The transport names a
// peer by a 6-byte link address; an IPv4 address fits in one (udp4.h's
// peer id), an IPv6 address does not.  So each IPv6 peer gets a handle in
// this table, and its peer id is 03:06 then the handle: the group bit set,
// as no sender's MAC has it.  A handle is a slot and that slot's
// generation, so a handle of an address the table let go never names the
// next address in its slot.
//
// Bounded: entries the provider itself asked for (an address inserted in
// an AV or connected to: `pinned`) stay for the table's life, at most
// kMaxPinned; entries made for senders we never named (a HELLO from a new
// peer: any stranger can make those) are at most `stranger_capacity`, the
// least recently used going first.  Pure data structure: no DPDK, no lock.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <unordered_map>
#include <vector>

#include "lib/ip/ipv6.h"

namespace ofi_dpdk::ip {

bool is_ipv6_peer_id(const uint8_t id[6]);

class Ipv6Peers {
 public:
  static constexpr size_t kMaxPinned = 32768;
  static constexpr size_t kDefaultStrangerCapacity = 1024;

  explicit Ipv6Peers(size_t stranger_capacity = kDefaultStrangerCapacity);

  // The peer id of `address` (written to id), made if new.  `pinned`: the
  // entry stays from now on.  False when the table cannot take it (kMaxPinned
  // pinned entries; or a stranger with stranger capacity 0).
  bool id_of(const Ipv6& address, bool pinned, uint64_t now_ns, uint8_t id[6]);
  // The address of a peer id, if it names one still in the table; marks
  // it used at now_ns.
  std::optional<Ipv6> address_of(const uint8_t id[6], uint64_t now_ns);
  std::optional<Ipv6> address_of(const uint8_t id[6]) const;

  size_t size() const { return by_address_.size(); }
  size_t pinned() const { return pinned_; }
  uint64_t evictions() const { return evictions_; }

 private:
  struct Slot {
    Ipv6 address;
    uint16_t generation = 0;
    bool used = false;
    bool pinned = false;
    uint64_t last_used_ns = 0;
  };
  const Slot* slot_of(const uint8_t id[6]) const;
  void write_id(uint32_t slot, uint8_t id[6]) const;

  size_t stranger_capacity_;
  std::vector<Slot> slots_;
  std::vector<uint32_t> free_;
  std::unordered_map<Ipv6, uint32_t> by_address_;
  size_t pinned_ = 0;
  uint64_t evictions_ = 0;
};

}  // namespace ofi_dpdk::ip
