#include "lib/av/shared_table.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <new>
#include <thread>

namespace ofi_dpdk::av {

size_t shared_object_size(uint32_t capacity) {
  return sizeof(SharedHeader) + size_t{capacity} * (sizeof(SharedEntry) + sizeof(uint64_t));
}

namespace {

constexpr uint32_t kValid = 1;
constexpr uint32_t kBusy = 2;
constexpr uint32_t kSequenceStep = 4;
// A creator that is alive takes well under a millisecond to initialise; a
// second is a creator that is stuck, not slow.
constexpr auto kReadyWait = std::chrono::seconds(1);
// Each round of open loses a race only to a close or a stale-object
// clean-up that ran at the same moment; a few rounds always suffice.
constexpr int kOpenRounds = 8;

// The fi_addr array follows the entries.
std::atomic<uint64_t>* fi_addrs_of(void* base, uint32_t capacity) {
  return reinterpret_cast<std::atomic<uint64_t>*>(
      static_cast<uint8_t*>(base) + sizeof(SharedHeader) + size_t{capacity} * sizeof(SharedEntry));
}

void pack(const Address& a, uint32_t words[3]) {
  words[0] =
      uint32_t{a.mac[0]} << 24 | uint32_t{a.mac[1]} << 16 | uint32_t{a.mac[2]} << 8 | a.mac[3];
  words[1] = uint32_t{a.mac[4]} << 24 | uint32_t{a.mac[5]} << 16 | a.queue;
  words[2] = a.session;
}

Address unpack(const uint32_t words[3]) {
  Address a;
  a.mac[0] = words[0] >> 24;
  a.mac[1] = words[0] >> 16;
  a.mac[2] = words[0] >> 8;
  a.mac[3] = words[0];
  a.mac[4] = words[1] >> 24;
  a.mac[5] = words[1] >> 16;
  a.queue = static_cast<uint16_t>(words[1]);
  a.session = words[2];
  return a;
}

int flock_retry(int fd, int operation) {
  int ret;
  while ((ret = flock(fd, operation)) != 0 && errno == EINTR) {
  }
  return ret == 0 ? 0 : -errno;
}

// True when no other process holds the object: we got the exclusive lock.
// Otherwise the shared lock is taken again (a failed conversion drops it).
bool nobody_else_holds(int fd) {
  if (flock_retry(fd, LOCK_EX | LOCK_NB) == 0) return true;
  flock_retry(fd, LOCK_SH);
  return false;
}

bool still_linked(int fd) {
  struct stat st;
  return fstat(fd, &st) == 0 && st.st_nlink > 0;
}

// Records what failed and returns -error.
int system_error(std::string* why, const char* call, int error) {
  *why = std::string(call) + ": " + strerror(error);
  return -error;
}

bool valid_name(std::string_view name) {
  if (!name.empty() && name.front() == '/') name.remove_prefix(1);
  if (name.empty() || name.size() > kSharedMaxNameLength) return false;
  for (char c : name)
    if (c == '/' || static_cast<unsigned char>(c) <= ' ' || c == 0x7f) return false;
  return true;
}

// Writes a fresh header into a new object.  Returns 0 or -errno.
int initialise(SharedHeader* header, uint32_t capacity, uint64_t map_addr, void* base) {
  header->magic = kSharedMagic;
  header->layout_version = kSharedLayoutVersion;
  header->header_size = sizeof(SharedHeader);
  header->entry_size = sizeof(SharedEntry);
  header->capacity = capacity;
  // fi_av(3): with map_addr 0 "the map_addr used by the provider will be
  // returned".  fi_addr values do not depend on it; the creator's mapping
  // address is as good a token as any, and the same for every opener.
  header->map_addr = map_addr != 0 ? map_addr : reinterpret_cast<uintptr_t>(base);
  std::atomic<uint64_t>* fi_addrs = fi_addrs_of(base, capacity);
  for (uint32_t i = 0; i < capacity; ++i)
    fi_addrs[i].store(kSharedNoFiAddr, std::memory_order_relaxed);
  header->high_water.store(0, std::memory_order_relaxed);
  header->generation.store(0, std::memory_order_relaxed);
  header->count = 0;
  header->holes = 0;
  header->free_hint = 0;
  pthread_mutexattr_t attr;
  int ret = pthread_mutexattr_init(&attr);
  if (ret == 0) ret = pthread_mutexattr_setpshared(&attr, PTHREAD_PROCESS_SHARED);
  if (ret == 0) ret = pthread_mutexattr_setrobust(&attr, PTHREAD_MUTEX_ROBUST);
  if (ret == 0) ret = pthread_mutex_init(&header->lock, &attr);
  pthread_mutexattr_destroy(&attr);
  if (ret != 0) return -ret;
  header->ready.store(kSharedReady, std::memory_order_release);
  return 0;
}

// Empty when this process may use the object fd opened: it belongs to our
// effective uid and no other user may write it.  Root opens any file, so
// this is what keeps another user's object out, not the open's access check.
std::string foreign(int fd, const std::string& object, int* error) {
  struct stat st {};
  if (fstat(fd, &st) != 0) {
    *error = errno;
    return "fstat: " + std::string(strerror(*error));
  }
  *error = EACCES;
  char mode[8];
  snprintf(mode, sizeof(mode), "0%03o", static_cast<unsigned>(st.st_mode & 07777));
  const std::string what = "/dev/shm" + object + " belongs to uid " + std::to_string(st.st_uid) +
                           ", mode " + mode + ": ";
  if (st.st_uid != geteuid())
    return what + "a shared AV is only used by its owner (this process is uid " +
           std::to_string(geteuid()) + ")";
  if (st.st_mode & (S_IWGRP | S_IWOTH)) return what + "others may write it";
  return {};
}

std::string layout_mismatch(const SharedHeader& h, size_t size) {
  if (h.magic != kSharedMagic) return "it is not a dpdk provider AV";
  if (h.layout_version != kSharedLayoutVersion)
    return "its layout version is " + std::to_string(h.layout_version) + ", this provider's " +
           std::to_string(kSharedLayoutVersion);
  if (h.header_size != sizeof(SharedHeader) || h.entry_size != sizeof(SharedEntry))
    return "its header or entry size differs from this provider's";
  if (h.capacity == 0 || h.capacity > kSharedMaxCapacity || shared_object_size(h.capacity) != size)
    return "its size does not match its capacity";
  // Values a writer of this layout never leaves, even half-way through a
  // change: each would index beyond the entries.
  const auto above = [&](const char* field, uint64_t value) {
    return "its header is corrupt: " + std::string(field) + " " + std::to_string(value) +
           " is above its capacity " + std::to_string(h.capacity);
  };
  if (h.high_water.load(std::memory_order_relaxed) > h.capacity)
    return above("high water", h.high_water.load(std::memory_order_relaxed));
  if (h.free_hint > h.capacity) return above("free hint", h.free_hint);
  if (h.count > h.capacity) return above("count", h.count);
  if (h.holes > h.capacity) return above("holes", h.holes);
  return {};
}

}  // namespace

int SharedTable::open(std::string_view name, const Options& options,
                      std::unique_ptr<SharedTable>* out, std::string* why) {
  if (!valid_name(name)) {
    *why =
        "the name must be 1 to 200 printable characters without '/' (one "
        "leading '/' allowed)";
    return -EINVAL;
  }
  if (options.capacity > kSharedMaxCapacity) {
    *why = "count " + std::to_string(options.capacity) + " is above the limit of " +
           std::to_string(kSharedMaxCapacity) + " entries of a shared AV";
    return -EINVAL;
  }
  if (name.front() == '/') name.remove_prefix(1);
  std::unique_ptr<SharedTable> table(new (std::nothrow) SharedTable());
  if (table == nullptr) return -ENOMEM;
  table->object_ = std::string(kSharedObjectPrefix) + std::string(name);
  table->read_only_ = options.read_only;
  const char* object = table->object_.c_str();
  const int access = options.read_only ? O_RDONLY : O_RDWR;
  const int protection = options.read_only ? PROT_READ : PROT_READ | PROT_WRITE;

  for (int round = 0; round < kOpenRounds; ++round) {
    bool created = false;
    int fd = -1;
    if (!options.read_only) {
      fd = shm_open(object, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
      if (fd >= 0)
        created = true;
      else if (errno != EEXIST)
        return system_error(why, "shm_open", errno);
    }
    if (fd < 0) {
      fd = shm_open(object, access | O_CLOEXEC, 0);
      if (fd < 0 && errno == ENOENT && !options.read_only) continue;  // closed meanwhile
      if (fd < 0 && errno == ENOENT) {
        *why = "no process has it open";
        return -ENOENT;
      }
      if (fd < 0) return system_error(why, "shm_open", errno);
      // Before anything else touches it (flock could wait on its owner).
      int error = 0;
      if (std::string refusal = foreign(fd, table->object_, &error); !refusal.empty()) {
        ::close(fd);
        *why = std::move(refusal);
        return -error;
      }
    }
    table->fd_ = fd;  // closed by the destructor from here on
    if (const int ret = flock_retry(fd, LOCK_SH); ret != 0) return system_error(why, "flock", -ret);
    // Removed between shm_open and flock (by its last closer, or as stale).
    if (!still_linked(fd)) {
      ::close(fd);
      table->fd_ = -1;
      continue;
    }

    if (created) {
      const uint32_t capacity =
          options.capacity != 0 ? static_cast<uint32_t>(options.capacity) : kSharedDefaultCapacity;
      const size_t size = shared_object_size(capacity);
      if (ftruncate(fd, static_cast<off_t>(size)) != 0) {
        const int error = errno;
        shm_unlink(object);
        return system_error(why, "ftruncate", error);
      }
      void* map = mmap(nullptr, size, protection, MAP_SHARED, fd, 0);
      if (map == MAP_FAILED) {
        const int error = errno;
        shm_unlink(object);
        return system_error(why, "mmap", error);
      }
      table->map_ = map;
      table->map_size_ = size;
      table->header_ = static_cast<SharedHeader*>(map);
      if (const int ret = initialise(table->header_, capacity, options.map_addr, map); ret != 0) {
        shm_unlink(object);
        return system_error(why, "pthread_mutex_init", -ret);
      }
      table->capacity_ = capacity;
      table->created_ = true;
    } else {
      // A clean close removes the object, so one that no other process
      // holds was left by processes that died: start afresh.  (Or its
      // creator has not taken its lock yet; it notices and starts again.)
      if (nobody_else_holds(fd)) {
        if (shm_unlink(object) != 0 && errno != ENOENT)
          return system_error(why, "shm_unlink of an object left by processes that died", errno);
        ::close(fd);
        table->fd_ = -1;
        if (options.read_only) {
          *why =
              "no process has it open (a table left by processes that died "
              "was removed)";
          return -ENOENT;
        }
        continue;
      }
      if (!still_linked(fd)) {
        ::close(fd);
        table->fd_ = -1;
        continue;
      }
      // The creator holds its lock from before it sizes the object, so it
      // is alive; wait for it to finish.
      const auto deadline = std::chrono::steady_clock::now() + kReadyWait;
      struct stat st {};
      SharedHeader* header = nullptr;
      while (true) {
        if (fstat(fd, &st) != 0) return system_error(why, "fstat", errno);
        if (header == nullptr && static_cast<size_t>(st.st_size) >= sizeof(SharedHeader)) {
          void* map = mmap(nullptr, sizeof(SharedHeader), PROT_READ, MAP_SHARED, fd, 0);
          if (map == MAP_FAILED) return system_error(why, "mmap", errno);
          header = static_cast<SharedHeader*>(map);
        }
        if (header != nullptr && header->ready.load(std::memory_order_acquire) == kSharedReady)
          break;
        if (std::chrono::steady_clock::now() > deadline) {
          if (header != nullptr) munmap(header, sizeof(SharedHeader));
          *why = "its creator never finished initialising it";
          return -ETIMEDOUT;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
      }
      const std::string mismatch = layout_mismatch(*header, static_cast<size_t>(st.st_size));
      const uint32_t capacity = header->capacity;
      munmap(header, sizeof(SharedHeader));
      if (!mismatch.empty()) {
        *why = mismatch;
        return -EINVAL;
      }
      if (options.capacity > capacity) {
        *why = "it holds " + std::to_string(capacity) + " entries; count asks for " +
               std::to_string(options.capacity);
        return -EINVAL;
      }
      const size_t size = shared_object_size(capacity);
      void* map = mmap(nullptr, size, protection, MAP_SHARED, fd, 0);
      if (map == MAP_FAILED) return system_error(why, "mmap", errno);
      table->map_ = map;
      table->map_size_ = size;
      table->header_ = static_cast<SharedHeader*>(map);
      table->capacity_ = capacity;
    }
    table->entries_ =
        reinterpret_cast<SharedEntry*>(static_cast<uint8_t*>(table->map_) + sizeof(SharedHeader));
    table->fi_addrs_ = fi_addrs_of(table->map_, table->capacity_);
    *out = std::move(table);
    return 0;
  }
  *why = "it was created and removed again too often while opening";
  return -EAGAIN;
}

int SharedTable::close(std::string* why) {
  if (map_ != nullptr) munmap(map_, map_size_);
  map_ = nullptr;
  header_ = nullptr;
  entries_ = nullptr;
  if (fd_ < 0) return 0;
  // The last one out removes the name.  Each closer gives its shared lock
  // up for good, then tries for the lock alone: of closers racing here,
  // the last to try finds only locks of holders still open (who close
  // later and try in turn) or of a closer that got it (and unlinks), so one
  // of them always unlinks.  Taking the shared lock back after a failed try
  // would let two closers each see the other's and neither unlink.  Anyone
  // opening the name meanwhile waits on the lock, then sees it unlinked and
  // starts afresh.
  flock_retry(fd_, LOCK_UN);
  const bool alone = flock_retry(fd_, LOCK_EX | LOCK_NB) == 0;
  if (close_pause_for_test != nullptr) close_pause_for_test(alone);
  int ret = 0;
  // ENOENT: someone removed it already, which is what we wanted.
  if (alone && still_linked(fd_) && shm_unlink(object_.c_str()) != 0 && errno != ENOENT)
    ret = system_error(why, ("shm_unlink /dev/shm" + object_).c_str(), errno);
  ::close(fd_);
  fd_ = -1;
  return ret;
}

SharedTable::~SharedTable() {
  std::string why;
  close(&why);
}

uint32_t SharedTable::high_water() const {
  return std::min(header_->high_water.load(std::memory_order_acquire), capacity_);
}

uint32_t SharedTable::count() const {
  uint32_t n = 0;
  const uint32_t high = high_water();
  for (uint32_t i = 0; i < high; ++i)
    if (read(i)) ++n;
  return n;
}

int SharedTable::lock() {
  timespec deadline{};
  clock_gettime(CLOCK_MONOTONIC, &deadline);
  const auto wait = std::chrono::duration_cast<std::chrono::nanoseconds>(kSharedLockWait).count();
  deadline.tv_sec += static_cast<time_t>(wait / 1'000'000'000);
  deadline.tv_nsec += static_cast<long>(wait % 1'000'000'000);
  if (deadline.tv_nsec >= 1'000'000'000) {
    deadline.tv_sec += 1;
    deadline.tv_nsec -= 1'000'000'000;
  }
  int ret;
  while ((ret = pthread_mutex_clocklock(&header_->lock, CLOCK_MONOTONIC, &deadline)) == EINTR) {
  }
  if (ret == ETIMEDOUT) {
    problem_ = "its writers' lock stayed held for " + std::to_string(kSharedLockWait.count()) +
               " ms (a process of this uid holds it and does not let go)";
    return -EAGAIN;
  }
  if (ret == EOWNERDEAD) {
    repair();
    if (pthread_mutex_consistent(&header_->lock) == 0)
      ret = 0;
    else
      pthread_mutex_unlock(&header_->lock);
  }
  if (ret != 0) {
    problem_ = "its writers' lock cannot be taken: " + std::string(strerror(ret));
    return -EIO;
  }
  if (!header_sane()) {
    unlock();
    return -EIO;
  }
  return 0;
}

bool SharedTable::header_sane() {
  const SharedHeader& h = *header_;
  const uint32_t high = h.high_water.load(std::memory_order_relaxed);
  const char* wrong = nullptr;
  if (h.capacity != capacity_)
    wrong = "capacity changed";
  else if (high > capacity_)
    wrong = "high water above capacity";
  else if (h.free_hint > high)
    wrong = "free hint above high water";
  else if (h.holes > high || h.count != high - h.holes)
    wrong = "count and holes do not add up to the high water";
  if (wrong == nullptr) return true;
  problem_ = std::string("its header is corrupt (") + wrong + "): capacity " +
             std::to_string(h.capacity) + ", high water " + std::to_string(high) + ", count " +
             std::to_string(h.count) + ", holes " + std::to_string(h.holes) + ", free hint " +
             std::to_string(h.free_hint) + "; this process mapped " + std::to_string(capacity_);
  return false;
}

void SharedTable::repair() {
  // The dead writer may have left one entry half written (busy): free it,
  // then recount what the counters say, which it may have left behind.
  // (Whatever else it left is for header_sane() to judge.)
  const uint32_t high = high_water();
  uint32_t count = 0, first_hole = high;
  for (uint32_t i = 0; i < high; ++i) {
    std::atomic<uint32_t>& state = entries_[i].state;
    uint32_t s = state.load(std::memory_order_relaxed);
    if (s & kBusy) {
      s = (s & ~(kBusy | kValid)) + kSequenceStep;
      state.store(s, std::memory_order_release);
    }
    if (s & kValid)
      ++count;
    else if (first_hole == high)
      first_hole = i;
    fi_addrs_[i].store((s & kValid) ? i : kSharedNoFiAddr, std::memory_order_release);
  }
  header_->count = count;
  header_->holes = high - count;
  header_->free_hint = first_hole;
  header_->generation.fetch_add(1, std::memory_order_release);
}

void SharedTable::publish(uint64_t index, uint32_t state) {
  fi_addrs_[index].store((state & kValid) ? index : kSharedNoFiAddr, std::memory_order_release);
  const uint64_t before = header_->generation.load(std::memory_order_relaxed);
  header_->generation.store(before + 1, std::memory_order_release);
  try {
    if (seen_.size() <= index) seen_.resize(index + 1, 0);
  } catch (const std::bad_alloc&) {
    return;  // the next sync compares every entry again
  }
  seen_[index] = state;
  if (before == synced_) synced_ = before + 1;
}

int64_t SharedTable::insert(const Address& address) {
  if (read_only_) return -EACCES;
  if (const int ret = lock(); ret != 0) return ret;
  SharedHeader& h = *header_;
  const uint32_t high = h.high_water.load(std::memory_order_relaxed);  // <= capacity_: sane
  uint32_t index;
  if (h.holes != 0) {
    index = h.free_hint;
    while (index < high && (entries_[index].state.load(std::memory_order_relaxed) & kValid))
      ++index;
    if (index == high) {
      problem_ = "its header is corrupt: it counts " + std::to_string(h.holes) +
                 " unused indices below " + std::to_string(high) + " from " +
                 std::to_string(h.free_hint) + ", and there are none";
      unlock();
      return -EIO;
    }
  } else if (high < capacity_) {
    index = high;
  } else {
    unlock();
    return -ENOSPC;
  }
  SharedEntry& entry = entries_[index];
  // Sequence lock: busy, the words, then valid with the next sequence.
  const uint32_t old_state = entry.state.load(std::memory_order_relaxed);
  entry.state.store(old_state | kBusy, std::memory_order_relaxed);
  std::atomic_thread_fence(std::memory_order_release);
  uint32_t words[3];
  pack(address, words);
  for (int i = 0; i < 3; ++i) entry.words[i].store(words[i], std::memory_order_relaxed);
  const uint32_t state = ((old_state & ~(kBusy | kValid)) + kSequenceStep) | kValid;
  entry.state.store(state, std::memory_order_release);
  if (index < high) {
    --h.holes;
  } else {
    h.high_water.store(index + 1, std::memory_order_release);
  }
  h.free_hint = index + 1;
  ++h.count;
  publish(index, state);
  unlock();
  return index;
}

int SharedTable::remove(uint64_t index) {
  if (read_only_) return -EACCES;
  if (index >= capacity_) return -ENOENT;
  if (const int ret = lock(); ret != 0) return ret;
  const int ret = remove_locked(index);
  unlock();
  return ret;
}

int SharedTable::remove_all(const uint64_t* indices, size_t n) {
  if (read_only_) return -EACCES;
  if (const int ret = lock(); ret != 0) return ret;
  for (size_t i = 0; i < n; ++i) {
    if (remove_locked(indices[i]) == -EIO) {
      unlock();  // entries marked in use behind the count's back: stops part-way
      return -EIO;
    }
  }
  unlock();
  return 0;
}

int SharedTable::remove_locked(uint64_t index) {
  SharedHeader& h = *header_;
  if (index >= h.high_water.load(std::memory_order_relaxed) ||
      !(entries_[index].state.load(std::memory_order_relaxed) & kValid))
    return -ENOENT;
  if (h.count == 0) {
    problem_ =
        "its header is corrupt: index " + std::to_string(index) + " is in use but the count is 0";
    return -EIO;
  }
  std::atomic<uint32_t>& state = entries_[index].state;
  const uint32_t next = (state.load(std::memory_order_relaxed) & ~(kBusy | kValid)) + kSequenceStep;
  state.store(next, std::memory_order_release);
  --h.count;
  ++h.holes;
  if (index < h.free_hint) h.free_hint = static_cast<uint32_t>(index);
  publish(index, next);
  return 0;
}

bool SharedTable::read_entry(uint64_t index, Address* address, uint32_t* state) const {
  if (index >= capacity_) return false;
  const SharedEntry& entry = entries_[index];
  // A writer holds an entry busy for a few stores; a writer that died
  // there leaves it busy until the next writer repairs it: unused till then.
  for (int attempt = 0; attempt < 1000; ++attempt) {
    const uint32_t before = entry.state.load(std::memory_order_acquire);
    if (before & kBusy) continue;
    uint32_t words[3];
    for (int i = 0; i < 3; ++i) words[i] = entry.words[i].load(std::memory_order_relaxed);
    std::atomic_thread_fence(std::memory_order_acquire);
    if (entry.state.load(std::memory_order_relaxed) != before) continue;
    *state = before;
    if (before & kValid) *address = unpack(words);
    return true;
  }
  *state = kBusy;
  return true;
}

std::optional<Address> SharedTable::read(uint64_t index) const {
  Address address;
  uint32_t state = 0;
  if (!read_entry(index, &address, &state) || !(state & kValid)) return std::nullopt;
  return address;
}

void SharedTable::sync(AddressTable& mirror) {
  const uint64_t generation = header_->generation.load(std::memory_order_acquire);
  const uint32_t high = high_water();
  try {
    if (seen_.size() < high) seen_.resize(high, 0);
  } catch (const std::bad_alloc&) {
    return;  // stays stale: the next call tries again
  }
  bool complete = true;
  for (uint32_t i = 0; i < high; ++i) {
    Address address;
    uint32_t state = 0;
    read_entry(i, &address, &state);
    if (state == seen_[i]) continue;
    if (state & kValid) {
      if (mirror.insert_at(i, address) < 0) {
        complete = false;
        continue;
      }
    } else {
      mirror.remove(i);
    }
    if (state & kBusy)
      complete = false;  // half written: look again next time
    else
      seen_[i] = state;
  }
  if (complete) synced_ = generation;
}

}  // namespace ofi_dpdk::av
