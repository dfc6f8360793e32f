#include "lib/ip/ipv6_peers.h"

#include "lib/ip/byte_order.h"

namespace ofi_dpdk::ip {
namespace {

constexpr uint8_t kPeerIdMark = 0x03;  // group bit and local bit set, as udp4.h's
constexpr uint8_t kIpv6Kind = 0x06;    // udp4.h's IPv4 ids have 0 here

void write_id(uint32_t handle, uint8_t id[6]) {
  id[0] = kPeerIdMark;
  id[1] = kIpv6Kind;
  put32(id + 2, handle);
}

uint32_t handle_of(const uint8_t id[6]) {
  return get32(id + 2);
}

}  // namespace

bool is_ipv6_peer_id(const uint8_t id[6]) {
  return id[0] == kPeerIdMark && id[1] == kIpv6Kind;
}

Ipv6Peers::Ipv6Peers(size_t stranger_capacity, size_t max_named, size_t max_connected)
    : stranger_capacity_(stranger_capacity), max_named_(max_named), max_connected_(max_connected) {}

void Ipv6Peers::touch(Entry& entry) {
  if (entry.kind() == Class::kStranger)
    strangers_.splice(strangers_.end(), strangers_, entry.in_strangers);
}

uint32_t Ipv6Peers::next_free_handle() {
  // Handles in use are at most max_named + max_connected + stranger
  // capacity, far fewer than 2^32: the search ends.
  while (next_handle_ == 0 || by_handle_.contains(next_handle_)) ++next_handle_;
  return next_handle_++;
}

void Ipv6Peers::evict_oldest_stranger() {
  // The list holds strangers only: an entry in use is never in it.
  const uint32_t gone = strangers_.front();
  strangers_.pop_front();
  by_address_.erase(by_handle_.at(gone).address);
  by_handle_.erase(gone);
  ++evictions_;
}

bool Ipv6Peers::has_room(const Entry& entry, Use use) const {
  if (use == Use::kNamed) return entry.named != 0 || named_entries_ < max_named_;
  return entry.kind() != Class::kStranger || connected_entries_ < max_connected_;
}

bool Ipv6Peers::reclass(uint32_t handle, Entry& entry, Class before) {
  const Class after = entry.kind();
  if (after == before) return true;
  if (before == Class::kNamed) --named_entries_;
  if (before == Class::kConnected) --connected_entries_;
  if (after == Class::kNamed) ++named_entries_;
  if (after == Class::kConnected) ++connected_entries_;
  if (before == Class::kStranger) {
    strangers_.erase(entry.in_strangers);
    return true;
  }
  if (after != Class::kStranger) return true;
  // No longer in use: the newest stranger, and the oldest goes if there
  // is no room (with no room at all, this one).
  entry.in_strangers = strangers_.insert(strangers_.end(), handle);
  while (strangers_.size() > stranger_capacity_) {
    const bool itself = strangers_.front() == handle;
    evict_oldest_stranger();
    if (itself) return false;
  }
  return true;
}

std::optional<Ipv6> Ipv6Peers::address_of(const uint8_t id[6]) {
  if (!is_ipv6_peer_id(id)) return std::nullopt;
  const auto it = by_handle_.find(handle_of(id));
  if (it == by_handle_.end()) return std::nullopt;
  touch(it->second);
  return it->second.address;
}

std::optional<Ipv6> Ipv6Peers::peek(const uint8_t id[6]) const {
  if (!is_ipv6_peer_id(id)) return std::nullopt;
  const auto it = by_handle_.find(handle_of(id));
  if (it == by_handle_.end()) return std::nullopt;
  return it->second.address;
}

bool Ipv6Peers::find_id(const Ipv6& address, uint8_t id[6]) const {
  const auto known = by_address_.find(address);
  if (known == by_address_.end()) return false;
  write_id(known->second, id);
  return true;
}

bool Ipv6Peers::hold(const uint8_t id[6], Use use) {
  if (!is_ipv6_peer_id(id)) return false;
  const uint32_t handle = handle_of(id);
  const auto it = by_handle_.find(handle);
  if (it == by_handle_.end()) return false;
  Entry& entry = it->second;
  if (!has_room(entry, use)) {
    ++holds_refused_;
    return false;
  }
  const Class before = entry.kind();
  ++(use == Use::kNamed ? entry.named : entry.connections);
  return reclass(handle, entry, before);
}

bool Ipv6Peers::release(const uint8_t id[6], Use use) {
  if (!is_ipv6_peer_id(id)) return false;
  const uint32_t handle = handle_of(id);
  const auto it = by_handle_.find(handle);
  if (it == by_handle_.end()) return false;
  Entry& entry = it->second;
  uint32_t& uses = use == Use::kNamed ? entry.named : entry.connections;
  if (uses == 0) return false;
  const Class before = entry.kind();
  --uses;
  reclass(handle, entry, before);
  return true;
}

bool Ipv6Peers::id_of(const Ipv6& address, bool pinned, uint8_t id[6]) {
  if (const auto known = by_address_.find(address); known != by_address_.end()) {
    write_id(known->second, id);
    if (pinned) return hold(id, Use::kNamed);
    touch(by_handle_.at(known->second));
    return true;
  }
  if (pinned ? named_entries_ >= max_named_ : stranger_capacity_ == 0) {
    if (pinned) ++holds_refused_;
    return false;
  }
  // Full of strangers: the least recently used of them goes.
  if (!pinned && strangers_.size() >= stranger_capacity_) evict_oldest_stranger();
  const uint32_t handle = next_free_handle();
  Entry& made = by_handle_[handle];
  made.address = address;
  if (pinned) {
    made.named = 1;
    ++named_entries_;
  } else {
    made.in_strangers = strangers_.insert(strangers_.end(), handle);
  }
  by_address_.emplace(address, handle);
  write_id(handle, id);
  return true;
}

}  // namespace ofi_dpdk::ip
