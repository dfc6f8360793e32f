#include "lib/av/auth_key_table.h"

#include <cerrno>

namespace ofi_dpdk::av {

const AuthKeyTable::Slot* AuthKeyTable::slot(uint64_t handle) const {
  if (!is_handle_range(handle)) return nullptr;
  const Slot& s = slots_[handle - kAuthKeyHandleBase];
  return s.key != kNoAuthKey ? &s : nullptr;
}

int64_t AuthKeyTable::insert(uint32_t key) {
  if (key == kNoAuthKey) return -EINVAL;
  if (const uint64_t existing = handle_of(key); existing != kNone)
    return static_cast<int64_t>(existing);
  for (size_t i = 0; i < slots_.size(); ++i) {
    if (slots_[i].key != kNoAuthKey) continue;
    slots_[i] = Slot{key, 0, kNone};
    return static_cast<int64_t>(kAuthKeyHandleBase + i);
  }
  return -ENOSPC;
}

int AuthKeyTable::remove(uint64_t handle) {
  Slot* s = slot(handle);
  if (s == nullptr) return -ENOENT;
  if (s->users != 0) return -EBUSY;
  *s = Slot{};
  return 0;
}

uint32_t AuthKeyTable::key(uint64_t handle) const {
  const Slot* s = slot(handle);
  return s != nullptr ? s->key : kNoAuthKey;
}

uint64_t AuthKeyTable::handle_of(uint32_t key) const {
  if (key == kNoAuthKey) return kNone;
  for (size_t i = 0; i < slots_.size(); ++i)
    if (slots_[i].key == key) return kAuthKeyHandleBase + i;
  return kNone;
}

bool AuthKeyTable::set_user_id(uint64_t handle, uint64_t user_id) {
  Slot* s = slot(handle);
  if (s == nullptr) return false;
  s->user_id = user_id;
  return true;
}

uint64_t AuthKeyTable::user_id(uint64_t handle) const {
  const Slot* s = slot(handle);
  return s != nullptr ? s->user_id : kNone;
}

void AuthKeyTable::use(uint64_t handle, int delta) {
  Slot* s = slot(handle);
  if (s == nullptr) return;
  if (delta < 0) {
    const uint32_t down = static_cast<uint32_t>(-static_cast<int64_t>(delta));
    s->users = s->users > down ? s->users - down : 0;
  } else {
    s->users += static_cast<uint32_t>(delta);
  }
}

uint32_t AuthKeyTable::users(uint64_t handle) const {
  const Slot* s = slot(handle);
  return s != nullptr ? s->users : 0;
}

size_t AuthKeyTable::count() const {
  size_t n = 0;
  for (const Slot& s : slots_) n += s.key != kNoAuthKey;
  return n;
}

std::vector<std::pair<uint64_t, uint32_t>> AuthKeyTable::entries() const {
  std::vector<std::pair<uint64_t, uint32_t>> out;
  out.reserve(kMaxAuthKeys);
  for (size_t i = 0; i < slots_.size(); ++i)
    if (slots_[i].key != kNoAuthKey) out.emplace_back(kAuthKeyHandleBase + i, slots_[i].key);
  return out;
}

}  // namespace ofi_dpdk::av
