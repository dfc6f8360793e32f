// auth_key_table.h: an address vector's authorization keys
// (fi_av_insert_auth_key, FI_AV_AUTH_KEY domains), without libfabric or DPDK.
//
// Our key is a network key: a nonzero uint32_t carried in every frame, so
// that jobs sharing a wire cannot see each other's traffic.  The table maps
// a key to a handle, an fi_addr_t the application names it by with
// FI_AUTH_KEY.  Handles live in a range of their own, above every index an
// address can get (the AV caps its address table below kAuthKeyHandleBase),
// so fi_av_lookup_auth_key, which takes no flags, tells a handle from an
// address by its value.
//
// Fixed size (kMaxAuthKeys slots, no allocation): the endpoint enables with
// every key of its AV, and max_ep_auth_key says how many that may be.
// Process-local, also for named AVs.
//
// Not thread-safe: the caller serialises (the provider holds the port lock).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

namespace ofi_dpdk::av {

// The key's wire form in fi_av_insert_auth_key and domain_attr->auth_key:
// exactly 4 bytes, a uint32_t in host byte order.
inline constexpr size_t kAuthKeySize = sizeof(uint32_t);
// Key 0 means "no key" in a frame: never a key of its own.
inline constexpr uint32_t kNoAuthKey = 0;
// Keys per AV, and so per endpoint (domain_attr->max_ep_auth_key).
inline constexpr size_t kMaxAuthKeys = 16;
// Handle of slot i: kAuthKeyHandleBase + i.  Below 2^32 - 2 (fi_group_addr
// puts a group id in the upper 32 bits of an fi_addr_t, and the address
// table's indices stop at 2^32 - 2).
inline constexpr uint64_t kAuthKeyHandleBase = 0xFFFF'FF00ull;
static_assert(kAuthKeyHandleBase + kMaxAuthKeys < 0xFFFF'FFFEull,
              "handles fit below the address table's last index");

class AuthKeyTable {
 public:
  static constexpr uint64_t kNone = ~uint64_t{0};  // FI_ADDR_NOTAVAIL

  // The handle for key: its existing one when the key is in the table,
  // else a new one (lowest free slot) whose user id is kNone.  -EINVAL for
  // kNoAuthKey, -ENOSPC when kMaxAuthKeys keys are in.
  int64_t insert(uint32_t key);
  // 0; -ENOENT when handle names no key; -EBUSY while endpoints use it
  // (use()).  The table is unchanged on error.
  int remove(uint64_t handle);

  bool valid(uint64_t handle) const { return slot(handle) != nullptr; }
  // The key of handle, or kNoAuthKey when it is not a handle.
  uint32_t key(uint64_t handle) const;
  // The handle holding key, or kNone.
  uint64_t handle_of(uint32_t key) const;
  // FI_AV_USER_ID: false when handle names no key.
  bool set_user_id(uint64_t handle, uint64_t user_id);
  // The user id set for handle (kNone until set, or for no handle).
  uint64_t user_id(uint64_t handle) const;
  // Endpoints enabled with the key: +1 at enable, -1 at close.  Never
  // below 0; a handle naming no key is ignored.
  void use(uint64_t handle, int delta);
  uint32_t users(uint64_t handle) const;

  size_t count() const;
  // (handle, key) of every key in the table, lowest handle first.
  std::vector<std::pair<uint64_t, uint32_t>> entries() const;

  static bool is_handle_range(uint64_t value) {
    return value >= kAuthKeyHandleBase && value < kAuthKeyHandleBase + kMaxAuthKeys;
  }

 private:
  struct Slot {
    uint32_t key = kNoAuthKey;  // kNoAuthKey: free
    uint32_t users = 0;
    uint64_t user_id = kNone;
  };
  const Slot* slot(uint64_t handle) const;
  Slot* slot(uint64_t handle) {
    return const_cast<Slot*>(static_cast<const AuthKeyTable*>(this)->slot(handle));
  }

  std::array<Slot, kMaxAuthKeys> slots_{};
};

}  // namespace ofi_dpdk::av
