// av_table.h: the address vector's table, without libfabric or DPDK.
//
// An index is an fi_addr (FI_AV_TABLE): entry i is one 20-byte Entry in a
// vector, so the send path resolves an fi_addr with one indexed load.  An
// address goes in at the lowest unused index (fi_av(3)); removed indices
// are reused, lowest first.  A reverse index maps (MAC, queue) to the
// lowest valid index naming that endpoint, for FI_SOURCE, in O(1): open
// addressing with linear probing, 8-byte slots, load at most 1/2.
//
// Memory per entry: 36 bytes of Entry, 16 to 32 bytes of reverse-index
// slots (capacity is a power of two), 8 more bytes once any entry has a user
// id (FI_AV_USER_ID), 4 more once any entry has a network key (FI_AUTH_KEY),
// 4 bytes per removed index waiting for reuse.
//
// Not thread-safe: the caller serialises (the provider holds the port lock).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <queue>
#include <vector>

#include "lib/av/address.h"

namespace ofi_dpdk::av {

struct Entry {
  Address address;          // 32 bytes: MAC, queue, session, IPv4 and IPv6 addresses
  uint8_t valid = 0;        // 1 while the index is in use
  uint8_t has_user_id = 0;  // FI_AV_USER_ID: user_id() answers FI_SOURCE
  // Named by IPv4 address, its MAC not known yet (set_resolved gives it).
  uint8_t unresolved = 0;
  uint8_t reserved = 0;
};
static_assert(sizeof(Entry) == 36, "an AV entry is 36 bytes");

// (MAC, queue) as one 64-bit key: queue in the top 16 bits, then the MAC,
// first byte highest.  The same value as proto::peer_key.
inline uint64_t endpoint_key(const uint8_t mac[6], uint16_t queue) {
  uint64_t key = queue;
  for (int i = 0; i < 6; ++i) key = key << 8 | mac[i];
  return key;
}
inline uint64_t endpoint_key(const Address& a) {
  return endpoint_key(a.mac, a.queue);
}

class AddressTable {
 public:
  static constexpr uint64_t kNone = ~uint64_t{0};
  // Indices are 32-bit inside the reverse index; 0xFFFFFFFF marks a free slot.
  static constexpr uint64_t kMaxEntries = 0xFFFFFFFEull;

  // A sizing hint (fi_av_attr::count); best effort, never fails.
  void reserve(size_t count);
  // Caps the number of indices (fi_addr bits left by rx_ctx_bits).
  void set_limit(uint64_t limit) { limit_ = limit < kMaxEntries ? limit : kMaxEntries; }
  uint64_t limit() const { return limit_; }

  // Inserts at the lowest unused index and returns it; -ENOSPC when the
  // limit is reached, -ENOMEM when memory ran out (the table is unchanged).
  // network_key: the authorization key frames to this address carry (0:
  // none).
  int64_t insert(const Address& address, std::optional<uint64_t> user_id = std::nullopt,
                 uint32_t network_key = 0);
  // Puts address at `index`, replacing what was there: a mirror of a table
  // whose indices are chosen elsewhere (a shared AV).  Returns index,
  // -ENOSPC beyond the limit, -ENOMEM (then the index is unused).
  int64_t insert_at(uint64_t index, const Address& address,
                    std::optional<uint64_t> user_id = std::nullopt, uint32_t network_key = 0);
  // Frees an index; false if it was not in use.
  bool remove(uint64_t index);
  // An entry named by IPv4 address whose neighbour has not answered yet:
  // marked unresolved, then given its MAC when it does (re-indexed, so
  // find_endpoint knows it).  Both false when the index is unused.
  bool mark_unresolved(uint64_t index);
  bool set_resolved(uint64_t index, const uint8_t mac[6]);

  // The entry at index, or nullptr if unused: one bounds check and one load.
  const Entry* find(uint64_t index) const {
    if (index >= entries_.size()) return nullptr;
    const Entry* entry = entries_.data() + index;
    return entry->valid ? entry : nullptr;
  }
  // Lowest valid index naming (MAC, queue), or kNone.
  uint64_t find_endpoint(uint64_t key) const;
  // What FI_SOURCE reports for index: its user id if it has one, else index.
  uint64_t source_id(uint64_t index) const {
    const Entry* entry = find(index);
    if (entry == nullptr) return kNone;
    return entry->has_user_id ? user_ids_[index] : index;
  }
  // fi_av_set_user_id: gives index a user id (replacing one it had).
  // false when the index is unused, or without memory for the first id.
  bool set_user_id(uint64_t index, uint64_t user_id);
  // The network key index was inserted with; 0 when none or unused.
  uint32_t network_key(uint64_t index) const {
    if (find(index) == nullptr) return 0;
    return network_key_of_found(index);
  }
  // The same for an index find() just found in use: no second look.
  uint32_t network_key_of_found(uint64_t index) const {
    return index < network_keys_.size() ? network_keys_[index] : 0;
  }

  size_t count() const { return count_; }                // indices in use
  size_t high_water() const { return entries_.size(); }  // 1 + highest index ever used
  // Bytes the table holds now (capacities, not sizes).
  size_t memory_bytes() const;

 private:
  struct Slot {
    uint32_t index;  // kFreeSlot when empty
    uint32_t hash;   // of the entry's key; its home slot is hash & mask
  };
  static constexpr uint32_t kFreeSlot = 0xFFFFFFFFu;
  static uint32_t hash_key(uint64_t key);

  int64_t occupy(uint64_t index, const Address& address, std::optional<uint64_t> user_id,
                 uint32_t network_key);
  // Sizes the per-index side vectors for entries_; false without memory.
  bool size_side_vectors(bool user_id, uint32_t network_key);
  bool grow_slots();  // doubles the reverse index; false without memory
  void place(Slot slot);
  void unlink(uint64_t index, uint32_t hash);

  std::vector<Entry> entries_;
  std::vector<uint64_t> user_ids_;      // empty until the first user id
  std::vector<uint32_t> network_keys_;  // empty until the first network key
  std::priority_queue<uint32_t, std::vector<uint32_t>, std::greater<uint32_t>> free_;
  std::vector<Slot> slots_;  // power-of-two size, or empty
  size_t count_ = 0;
  uint64_t limit_ = kMaxEntries;
};

}  // namespace ofi_dpdk::av
