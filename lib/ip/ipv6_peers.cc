#include "lib/ip/ipv6_peers.h"

#include <algorithm>

namespace ofi_dpdk::ip {
namespace {

constexpr uint8_t kPeerIdMark = 0x03;  // group bit and local bit set, as udp4.h's
constexpr uint8_t kIpv6Kind = 0x06;    // udp4.h's IPv4 ids have 0 here

}  // namespace

bool is_ipv6_peer_id(const uint8_t id[6]) { return id[0] == kPeerIdMark && id[1] == kIpv6Kind; }

// Slots are 16 bits of the id: pinned and stranger entries together fit.
Ipv6Peers::Ipv6Peers(size_t stranger_capacity)
    : stranger_capacity_(std::min(stranger_capacity, size_t{65536} - kMaxPinned)) {}

void Ipv6Peers::write_id(uint32_t slot, uint8_t id[6]) const {
  const uint16_t generation = slots_[slot].generation;
  id[0] = kPeerIdMark;
  id[1] = kIpv6Kind;
  id[2] = static_cast<uint8_t>(slot >> 8);
  id[3] = static_cast<uint8_t>(slot);
  id[4] = static_cast<uint8_t>(generation >> 8);
  id[5] = static_cast<uint8_t>(generation);
}

const Ipv6Peers::Slot* Ipv6Peers::slot_of(const uint8_t id[6]) const {
  if (!is_ipv6_peer_id(id)) return nullptr;
  const uint32_t slot = uint32_t{id[2]} << 8 | id[3];
  const uint16_t generation = static_cast<uint16_t>(id[4] << 8 | id[5]);
  if (slot >= slots_.size() || !slots_[slot].used || slots_[slot].generation != generation)
    return nullptr;
  return &slots_[slot];
}

std::optional<Ipv6> Ipv6Peers::address_of(const uint8_t id[6], uint64_t now_ns) {
  const Slot* slot = slot_of(id);
  if (slot == nullptr) return std::nullopt;
  const_cast<Slot*>(slot)->last_used_ns = now_ns;
  return slot->address;
}

std::optional<Ipv6> Ipv6Peers::address_of(const uint8_t id[6]) const {
  const Slot* slot = slot_of(id);
  if (slot == nullptr) return std::nullopt;
  return slot->address;
}

bool Ipv6Peers::id_of(const Ipv6& address, bool pinned, uint64_t now_ns, uint8_t id[6]) {
  if (const auto it = by_address_.find(address); it != by_address_.end()) {
    Slot& slot = slots_[it->second];
    if (pinned && !slot.pinned) {
      if (pinned_ >= kMaxPinned) return false;
      slot.pinned = true;
      ++pinned_;
    }
    slot.last_used_ns = now_ns;
    write_id(it->second, id);
    return true;
  }
  if (pinned ? pinned_ >= kMaxPinned : stranger_capacity_ == 0) return false;
  if (!pinned && by_address_.size() - pinned_ >= stranger_capacity_) {
    // Full of strangers: the least recently used of them goes (a scan of
    // the slots; a stranger's first frame is what pays for it).
    uint32_t oldest = 0;
    bool found = false;
    for (uint32_t s = 0; s < slots_.size(); ++s) {
      const Slot& candidate = slots_[s];
      if (!candidate.used || candidate.pinned) continue;
      if (!found || candidate.last_used_ns < slots_[oldest].last_used_ns) oldest = s;
      found = true;
    }
    Slot& gone = slots_[oldest];
    by_address_.erase(gone.address);
    gone.used = false;
    ++gone.generation;
    free_.push_back(oldest);
    ++evictions_;
  }
  uint32_t slot;
  if (!free_.empty()) {
    slot = free_.back();
    free_.pop_back();
  } else {
    slot = static_cast<uint32_t>(slots_.size());
    slots_.emplace_back();
  }
  Slot& made = slots_[slot];
  made.address = address;
  made.used = true;
  made.pinned = pinned;
  made.last_used_ns = now_ns;
  pinned_ += pinned ? 1 : 0;
  by_address_.emplace(address, slot);
  write_id(slot, id);
  return true;
}

}  // namespace ofi_dpdk::ip
