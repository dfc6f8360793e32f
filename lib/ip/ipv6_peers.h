// ipv6_peers.h: names for peers reached by IPv6.  The transport names a
// peer by a 6-byte link address; an IPv4 address fits in one (udp4.h's
// peer id), an IPv6 address does not.  So each IPv6 peer gets a 32-bit
// handle in this table, and its peer id is 03:06 then the handle: the
// group bit set, as no sender's MAC has it.  Handles are handed out in
// order and never to two entries at once, so a handle of an address the
// table let go names no other address until 2^32 more were handed out
// (what still holds an old id finds nothing, not someone else).
//
// Bounded, and no stranger can flush or fill what is in use.  An entry is
// in use while it holds uses, counted:
//   - named uses: the program named the address (an AV entry, fi_connect's
//     server, fi_accept's client), one per naming, given back when that
//     naming ends (fi_av_remove, the endpoint's close);
//   - connection uses: an endpoint's transport holds a live connection
//     with the peer (one per endpoint and peer queue), given back when the
//     connection goes.
// Entries in use are never evicted.  At most max_named entries hold named
// uses, and at most max_connected more hold connection uses alone: a
// stranger that completes handshakes fills the second class, never the
// first, whose refusal fi_av_insert and fi_accept would report.  Every
// other entry is a stranger's (a frame from a sender nobody named): at
// most `stranger_capacity` of them, the least recently used going first
// to make room for a new one, in constant time; an entry whose last use
// ends becomes the most recently used stranger.  Pure data structure: no
// DPDK, no lock.
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
  static constexpr size_t kMaxPinned = 32768;     // entries with named uses
  static constexpr size_t kMaxConnected = 32768;  // entries with connection uses alone
  static constexpr size_t kDefaultStrangerCapacity = 1024;
  enum class Use : uint8_t { kNamed, kConnection };

  explicit Ipv6Peers(size_t stranger_capacity = kDefaultStrangerCapacity,
                     size_t max_named = kMaxPinned, size_t max_connected = kMaxConnected);

  // The peer id of `address` (written to id), made if new; marks it used.
  // `pinned`: takes one named use (release() gives it back).  False when
  // the table cannot take it (max_named entries with named uses; or a
  // stranger with stranger capacity 0).
  bool id_of(const Ipv6& address, bool pinned, uint8_t id[6]);
  // One more use of the entry `id` names.  False when it names none, or
  // the entry would join a class that is full (a named use of an entry
  // without one: max_named; a connection use of a stranger: max_connected).
  bool hold(const uint8_t id[6], Use use);
  // Gives one use of that kind back; an entry whose last use it was
  // becomes the most recently used stranger.  False when `id` names no
  // entry holding such a use.
  bool release(const uint8_t id[6], Use use);
  // The peer id of `address` if the table holds it (written to id),
  // making nothing and marking nothing.
  bool find_id(const Ipv6& address, uint8_t id[6]) const;
  // The address of a peer id, if it names one still in the table; marks
  // it used.
  std::optional<Ipv6> address_of(const uint8_t id[6]);
  // The same without marking it.
  std::optional<Ipv6> peek(const uint8_t id[6]) const;

  size_t size() const { return by_handle_.size(); }
  size_t pinned() const { return named_entries_; }         // entries with named uses
  size_t connected() const { return connected_entries_; }  // held by connections alone
  size_t strangers() const { return strangers_.size(); }
  uint64_t evictions() const { return evictions_; }
  uint64_t holds_refused() const { return holds_refused_; }

 private:
  enum class Class : uint8_t { kStranger, kConnected, kNamed };
  struct Entry {
    Ipv6 address;
    uint32_t named = 0;
    uint32_t connections = 0;
    std::list<uint32_t>::iterator in_strangers;  // while a stranger
    Class kind() const {
      return named != 0 ? Class::kNamed : connections != 0 ? Class::kConnected : Class::kStranger;
    }
  };
  void touch(Entry& entry);
  uint32_t next_free_handle();
  // Whether `entry` may take a use of `use` (the class it would join has room).
  bool has_room(const Entry& entry, Use use) const;
  // Moves `entry` (of `handle`) from class `before` to the one its uses
  // give it now; false when that evicted it (a stranger table of size 0).
  bool reclass(uint32_t handle, Entry& entry, Class before);
  void evict_oldest_stranger();

  size_t stranger_capacity_;
  size_t max_named_;
  size_t max_connected_;
  std::unordered_map<uint32_t, Entry> by_handle_;
  std::unordered_map<Ipv6, uint32_t> by_address_;
  std::list<uint32_t> strangers_;  // least recently used first
  uint32_t next_handle_ = 1;
  size_t named_entries_ = 0;
  size_t connected_entries_ = 0;
  uint64_t evictions_ = 0;
  uint64_t holds_refused_ = 0;
};

}  // namespace ofi_dpdk::ip
