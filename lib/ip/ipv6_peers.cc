#include "lib/ip/ipv6_peers.h"

namespace ofi_dpdk::ip {
namespace {

constexpr uint8_t kPeerIdMark = 0x03;  // group bit and local bit set, as udp4.h's
constexpr uint8_t kIpv6Kind = 0x06;    // udp4.h's IPv4 ids have 0 here

void write_id(uint32_t handle, uint8_t id[6]) {
  id[0] = kPeerIdMark;
  id[1] = kIpv6Kind;
  for (int i = 0; i < 4; ++i) id[2 + i] = static_cast<uint8_t>(handle >> (24 - 8 * i));
}

uint32_t handle_of(const uint8_t id[6]) {
  return uint32_t{id[2]} << 24 | uint32_t{id[3]} << 16 | uint32_t{id[4]} << 8 | id[5];
}

}  // namespace

bool is_ipv6_peer_id(const uint8_t id[6]) { return id[0] == kPeerIdMark && id[1] == kIpv6Kind; }

Ipv6Peers::Ipv6Peers(size_t stranger_capacity) : stranger_capacity_(stranger_capacity) {}

void Ipv6Peers::touch(Entry& entry) {
  if (!entry.pinned) strangers_.splice(strangers_.end(), strangers_, entry.in_strangers);
}

uint32_t Ipv6Peers::next_free_handle() {
  // Handles in use are at most kMaxPinned + stranger capacity, far fewer
  // than 2^32: the search ends.
  while (next_handle_ == 0 || by_handle_.contains(next_handle_)) ++next_handle_;
  return next_handle_++;
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

bool Ipv6Peers::id_of(const Ipv6& address, bool pinned, uint8_t id[6]) {
  if (const auto known = by_address_.find(address); known != by_address_.end()) {
    Entry& entry = by_handle_.at(known->second);
    if (pinned && !entry.pinned) {
      if (pinned_ >= kMaxPinned) return false;
      strangers_.erase(entry.in_strangers);
      entry.pinned = true;
      ++pinned_;
    }
    touch(entry);
    write_id(known->second, id);
    return true;
  }
  if (pinned ? pinned_ >= kMaxPinned : stranger_capacity_ == 0) return false;
  if (!pinned && strangers_.size() >= stranger_capacity_) {
    // Full of strangers: the least recently used of them goes.
    const uint32_t gone = strangers_.front();
    strangers_.pop_front();
    by_address_.erase(by_handle_.at(gone).address);
    by_handle_.erase(gone);
    ++evictions_;
  }
  const uint32_t handle = next_free_handle();
  Entry& made = by_handle_[handle];
  made.address = address;
  made.pinned = pinned;
  if (pinned) {
    ++pinned_;
  } else {
    made.in_strangers = strangers_.insert(strangers_.end(), handle);
  }
  by_address_.emplace(address, handle);
  write_id(handle, id);
  return true;
}

}  // namespace ofi_dpdk::ip
