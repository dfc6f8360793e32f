#include "lib/av/av_table.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <new>

namespace ofi_dpdk::av {

uint32_t AddressTable::hash_key(uint64_t key) {
  // splitmix64's finaliser: every key bit reaches the top 32 bits.
  key ^= key >> 30;
  key *= 0xbf58476d1ce4e5b9ull;
  key ^= key >> 27;
  key *= 0x94d049bb133111ebull;
  key ^= key >> 31;
  return static_cast<uint32_t>(key >> 32);
}

void AddressTable::reserve(size_t count) {
  constexpr size_t kMaxHint = size_t{1} << 20;  // 1M entries: 32 MiB at most
  count = std::min<size_t>({count, kMaxHint, static_cast<size_t>(limit_)});
  try {
    entries_.reserve(count);
    while (slots_.size() < 2 * count)
      if (!grow_slots()) break;
  } catch (const std::bad_alloc&) {
    // Only a hint: the table grows on demand.
  }
}

bool AddressTable::grow_slots() {
  std::vector<Slot> old;
  try {
    std::vector<Slot> bigger(std::max<size_t>(16, slots_.size() * 2), Slot{kFreeSlot, 0});
    old.swap(slots_);
    slots_.swap(bigger);
  } catch (const std::bad_alloc&) {
    return false;
  }
  for (const Slot& slot : old)
    if (slot.index != kFreeSlot) place(slot);
  return true;
}

void AddressTable::place(Slot slot) {
  const size_t mask = slots_.size() - 1;
  size_t i = slot.hash & mask;
  while (slots_[i].index != kFreeSlot) i = (i + 1) & mask;
  slots_[i] = slot;
}

void AddressTable::unlink(uint64_t index, uint32_t hash) {
  const size_t mask = slots_.size() - 1;
  size_t hole = hash & mask;
  while (slots_[hole].index != index) hole = (hole + 1) & mask;
  // Backward-shift deletion: pull later members of the cluster into the
  // hole when their home slot is at or before it, so no tombstones remain.
  for (size_t j = (hole + 1) & mask; slots_[j].index != kFreeSlot; j = (j + 1) & mask) {
    const size_t home = slots_[j].hash & mask;
    if (((j - home) & mask) >= ((j - hole) & mask)) {
      slots_[hole] = slots_[j];
      hole = j;
    }
  }
  slots_[hole].index = kFreeSlot;
}

bool AddressTable::size_side_vectors(bool user_id, uint32_t network_key) {
  try {
    if ((user_id || !user_ids_.empty()) && user_ids_.size() < entries_.size())
      user_ids_.resize(entries_.size());
    if ((network_key != 0 || !network_keys_.empty()) && network_keys_.size() < entries_.size())
      network_keys_.resize(entries_.size(), 0);
  } catch (const std::bad_alloc&) {
    return false;
  }
  return true;
}

int64_t AddressTable::insert(const Address& address, std::optional<uint64_t> user_id,
                             uint32_t network_key) {
  // insert_at may have filled an index that was waiting for reuse.
  while (!free_.empty() && entries_[free_.top()].valid) free_.pop();
  const bool append = free_.empty();
  if (append && entries_.size() >= limit_) return -ENOSPC;
  const uint64_t index = append ? entries_.size() : free_.top();
  // Every allocation first, so running out of memory changes nothing.
  if (slots_.size() < 2 * (count_ + 1) && !grow_slots()) return -ENOMEM;
  try {
    if (append) entries_.emplace_back();
  } catch (const std::bad_alloc&) {
    return -ENOMEM;
  }
  if (!size_side_vectors(user_id.has_value(), network_key)) {
    if (append) entries_.pop_back();
    return -ENOMEM;
  }
  if (!append) free_.pop();
  return occupy(index, address, user_id, network_key);
}

// Fills the reserved slot `index` and indexes it for reverse lookup.
int64_t AddressTable::occupy(uint64_t index, const Address& address,
                             std::optional<uint64_t> user_id, uint32_t network_key) {
  Entry& entry = entries_[index];
  entry.address = address;
  entry.valid = 1;
  entry.has_user_id = user_id ? 1 : 0;
  entry.unresolved = 0;
  if (user_id) user_ids_[index] = *user_id;
  if (!network_keys_.empty()) network_keys_[index] = network_key;
  place({static_cast<uint32_t>(index), hash_key(endpoint_key(address))});
  ++count_;
  return static_cast<int64_t>(index);
}

int64_t AddressTable::insert_at(uint64_t index, const Address& address,
                                std::optional<uint64_t> user_id, uint32_t network_key) {
  if (index >= limit_) return -ENOSPC;
  remove(index);
  const size_t old_size = entries_.size();
  if (slots_.size() < 2 * (count_ + 1) && !grow_slots()) return -ENOMEM;
  try {
    if (index >= old_size) entries_.resize(index + 1);
  } catch (const std::bad_alloc&) {
    return -ENOMEM;
  }
  // On failure entries_ has grown by invalid entries only.
  if (!size_side_vectors(user_id.has_value(), network_key)) return -ENOMEM;
  // Indices skipped over are unused: insert() may hand them out.
  try {
    for (size_t gap = old_size; gap < index; ++gap) free_.push(static_cast<uint32_t>(gap));
  } catch (const std::bad_alloc&) {
    // They are not reused; the table stays correct.
  }
  return occupy(index, address, user_id, network_key);
}

bool AddressTable::set_user_id(uint64_t index, uint64_t user_id) {
  if (find(index) == nullptr || !size_side_vectors(true, 0)) return false;
  user_ids_[index] = user_id;
  entries_[index].has_user_id = 1;
  return true;
}

bool AddressTable::mark_unresolved(uint64_t index) {
  if (find(index) == nullptr) return false;
  entries_[index].unresolved = 1;
  return true;
}

bool AddressTable::set_resolved(uint64_t index, const uint8_t mac[6]) {
  if (find(index) == nullptr) return false;
  Entry& entry = entries_[index];
  unlink(index, hash_key(endpoint_key(entry.address)));
  std::memcpy(entry.address.mac, mac, 6);
  entry.unresolved = 0;
  place({static_cast<uint32_t>(index), hash_key(endpoint_key(entry.address))});
  return true;
}

bool AddressTable::remove(uint64_t index) {
  const Entry* found = find(index);
  if (found == nullptr) return false;
  Entry& entry = entries_[index];
  unlink(index, hash_key(endpoint_key(entry.address)));
  entry.valid = 0;
  entry.has_user_id = 0;
  entry.unresolved = 0;
  --count_;
  try {
    free_.push(static_cast<uint32_t>(index));
  } catch (const std::bad_alloc&) {
    // The index is not reused; the table stays correct.
  }
  return true;
}

uint64_t AddressTable::find_endpoint(uint64_t key) const {
  if (slots_.empty()) return kNone;
  const uint32_t hash = hash_key(key);
  const size_t mask = slots_.size() - 1;
  uint64_t lowest = kNone;
  // Duplicates of one endpoint share a cluster: scan it to its end.
  for (size_t i = hash & mask; slots_[i].index != kFreeSlot; i = (i + 1) & mask) {
    const Slot& slot = slots_[i];
    if (slot.hash == hash && slot.index < lowest &&
        endpoint_key(entries_[slot.index].address) == key)
      lowest = slot.index;
  }
  return lowest;
}

size_t AddressTable::memory_bytes() const {
  return entries_.capacity() * sizeof(Entry) + user_ids_.capacity() * sizeof(uint64_t) +
         network_keys_.capacity() * sizeof(uint32_t) + slots_.capacity() * sizeof(Slot) +
         free_.size() * sizeof(uint32_t);
}

}  // namespace ofi_dpdk::av
