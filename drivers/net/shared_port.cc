#include "drivers/net/shared_port.h"

#include <fcntl.h>
#include <pthread.h>
#include <rte_eal.h>
#include <rte_mbuf.h>
#include <rte_memzone.h>
#include <rte_ring.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <endian.h>

#include <algorithm>
#include <cerrno>
#include <cstddef>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <string>

#include "drivers/net/mbuf_handoff.h"
#include "lib/proto/wire.h"

namespace ofi_dpdk::net {
namespace {

// The slot locks this process holds, for the fork handler.  (A process
// holds at most one slot per shared port, and tests a few more.)
constexpr int kMaxHeldLocks = 64;
std::atomic<int> g_held_locks[kMaxHeldLocks];
std::once_flag g_fork_handler_once;

// In a child of fork(2): our copies of the parent's slot locks share its
// open file descriptions, which would keep its slots held after it exits.
// Closing the copies leaves the parent's locks alone.
void close_inherited_locks() {
  for (auto& held : g_held_locks) {
    const int fd = held.exchange(-1, std::memory_order_relaxed);
    if (fd >= 0) close(fd);
  }
}

void remember_lock(int fd) {
  std::call_once(g_fork_handler_once, [] {
    for (auto& held : g_held_locks) held.store(-1);
    pthread_atfork(nullptr, nullptr, close_inherited_locks);
  });
  for (auto& held : g_held_locks) {
    int free_entry = -1;
    if (held.compare_exchange_strong(free_entry, fd)) return;
  }
  // (More than kMaxHeldLocks: a child forked from us keeps that slot while
  // it lives.)
}

void forget_lock(int fd) {
  for (auto& held : g_held_locks) {
    int entry = fd;
    if (held.compare_exchange_strong(entry, -1)) return;
  }
}

bool valid_name(const char (&name)[16]) {
  const size_t length = strnlen(name, sizeof(name));
  if (length == 0 || length == sizeof(name)) return false;
  for (size_t i = 0; i < length; ++i) {
    const char c = name[i];
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_')) return false;
  }
  return true;
}

}  // namespace

std::string shared_table_name(std::string_view port_name) {
  return "fisw_table_" + std::string(port_name);
}

std::string shared_ring_name(std::string_view name, const char* direction, uint16_t slot) {
  return "fisw_" + std::string(name) + "_" + direction + std::to_string(slot);
}

SharedPortTable* find_shared_table(std::string_view port_name) {
  const rte_memzone* zone = rte_memzone_lookup(shared_table_name(port_name).c_str());
  if (zone == nullptr || zone->len < sizeof(SharedPortTable)) return nullptr;
  auto* table = static_cast<SharedPortTable*>(zone->addr);
  if (table->magic != kSharedTableMagic || table->version != kSharedTableVersion) return nullptr;
  return table;
}

int read_shared_layout(const SharedPortTable& table, SharedPortLayout* layout, std::string* why) {
  // One copy, then checks on the copy: the table may change meanwhile.
  SharedPortLayout copy;
  std::memcpy(copy.name, table.name, sizeof(copy.name));
  copy.slots = table.slots;
  copy.queues_per_slot = table.queues_per_slot;
  copy.ether_type = table.ether_type;
  std::memcpy(copy.mac, table.mac, sizeof(copy.mac));
  copy.switch_pid = table.switch_pid;
  if (copy.slots == 0 || copy.slots > kMaxSharedProcesses) {
    *why =
        "slots " + std::to_string(copy.slots) + ", not 1 to " + std::to_string(kMaxSharedProcesses);
    return -EINVAL;
  }
  if (copy.queues_per_slot == 0 ||
      uint32_t{copy.slots} * copy.queues_per_slot > kSharedEndpointQueues) {
    *why = "queues_per_slot " + std::to_string(copy.queues_per_slot) + ", not 1 to " +
           std::to_string(kSharedEndpointQueues / copy.slots) + " for " +
           std::to_string(copy.slots) + " slots";
    return -EINVAL;
  }
  if (!valid_name(copy.name)) {
    *why = "name not 1 to 15 of a-z, 0-9 and _";
    return -EINVAL;
  }
  if (copy.switch_pid <= 0) {
    *why = "switch_pid " + std::to_string(copy.switch_pid);
    return -EINVAL;
  }
  *layout = copy;
  return 0;
}

int shared_destination(const SharedPortLayout& layout, const SharedPortTable& table,
                       const uint8_t* frame, uint32_t length) {
  constexpr size_t kDstQueueAt = sizeof(wire::EtherHeader) + offsetof(wire::FrameHeader, dst_queue);
  uint16_t ether_type_be;
  uint16_t dst_queue_be;
  if (length < kDstQueueAt + sizeof(dst_queue_be)) return kSharedNotOurs;
  std::memcpy(&ether_type_be, frame + offsetof(wire::EtherHeader, ether_type), 2);
  std::memcpy(&dst_queue_be, frame + kDstQueueAt, 2);
  if (std::memcmp(frame, layout.mac, 6) != 0 || be16toh(ether_type_be) != layout.ether_type)
    return kSharedNotOurs;
  const int slot = slot_of_queue(layout, be16toh(dst_queue_be));
  // (A slot being emptied, kSlotDraining, takes nothing either.)
  if (slot < 0 || table.owner[slot].load(std::memory_order_relaxed) <= 0) return kSharedNoOwner;
  return slot;
}

namespace {

bool pid_alive(int32_t pid) {
  return pid > 0 && (kill(pid, 0) == 0 || errno == EPERM);
}

// When process `pid` started, in seconds of CLOCK_BOOTTIME (field 22 of
// /proc/PID/stat, in clock ticks since boot); negative if unknown.
double start_seconds_since_boot(int32_t pid) {
  const std::string path = "/proc/" + std::to_string(pid) + "/stat";
  FILE* file = std::fopen(path.c_str(), "r");
  if (file == nullptr) return -1;
  char line[1024];
  const bool read = std::fgets(line, sizeof line, file) != nullptr;
  std::fclose(file);
  // The command name (field 2) is in parentheses and may hold spaces:
  // count the fields after its closing one.
  const char* at = read ? std::strrchr(line, ')') : nullptr;
  if (at == nullptr) return -1;
  unsigned long long start_ticks = 0;
  // Fields 3 to 21 skipped (each a word), then 22.
  if (std::sscanf(at + 1,
                  "%*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s"
                  " %*s %*s %*s %llu",
                  &start_ticks) != 1)
    return -1;
  return static_cast<double>(start_ticks) / static_cast<double>(sysconf(_SC_CLK_TCK));
}

double seconds_of(const timespec& time) {
  return static_cast<double>(time.tv_sec) + static_cast<double>(time.tv_nsec) * 1e-9;
}

}  // namespace

bool file_owner_alive(int32_t pid, const char* path) {
  if (!pid_alive(pid)) return false;
  struct stat status;
  timespec now_real, now_boot;
  const double started = start_seconds_since_boot(pid);
  if (stat(path, &status) != 0 || started < 0 || clock_gettime(CLOCK_REALTIME, &now_real) != 0 ||
      clock_gettime(CLOCK_BOOTTIME, &now_boot) != 0)
    return true;  // cannot tell: as before, the pid decides
  const double written_since_boot =
      seconds_of(status.st_mtim) - (seconds_of(now_real) - seconds_of(now_boot));
  // A second of slack for clock ticks and a stepped wall clock: an owner
  // writes its files after it starts, and a reused pid comes much later.
  constexpr double kSlackSeconds = 1.0;
  return started <= written_since_boot + kSlackSeconds;
}

std::string shared_pool_name(uint16_t port_id, uint16_t slot) {
  return "fisw_p" + std::to_string(port_id) + "_" + std::to_string(slot);
}

std::string shared_slot_lock_path(const SharedPortLayout& layout, uint16_t slot) {
  // (Not ending in digits after an underscore: the switch would take it
  // for a gone secondary's file, runtime_file_pid.)
  return std::string(rte_eal_get_runtime_dir()) + "/fisw_" + layout.name + "_" +
         std::to_string(layout.switch_pid) + "_slot" + std::to_string(slot);
}

SlotLock::SlotLock(int fd) : fd_(fd), pid_(getpid()) {
  remember_lock(fd);
}

SlotLock::~SlotLock() {
  close_if_ours();
}

SlotLock::SlotLock(SlotLock&& other) noexcept : fd_(other.fd_), pid_(other.pid_) {
  other.fd_ = -1;
}

SlotLock& SlotLock::operator=(SlotLock&& other) noexcept {
  if (this != &other) {
    close_if_ours();
    fd_ = other.fd_;
    pid_ = other.pid_;
    other.fd_ = -1;
  }
  return *this;
}

void SlotLock::close_if_ours() {
  // In a forked child the descriptor was closed at the fork, and its number
  // may be another file's now.
  if (fd_ >= 0 && pid_ == getpid()) {
    forget_lock(fd_);
    close(fd_);  // (unlocks)
  }
  fd_ = -1;
}

int claim_shared_slot(SharedPortTable& table, const SharedPortLayout& layout, int32_t pid,
                      SlotLock* lock, std::string* why) {
  int fds[kMaxSharedProcesses];
  for (uint16_t slot = 0; slot < layout.slots; ++slot) {
    const std::string path = shared_slot_lock_path(layout, slot);
    // Never created here: a claimer making a new file beside a deleted one
    // would not see its holder's lock.
    fds[slot] = open(path.c_str(), O_RDWR | O_CLOEXEC);
    if (fds[slot] < 0) {
      const int error = errno;
      *why = "cannot open the slot lock " + path + ": " + std::strerror(error);
      for (uint16_t opened = 0; opened < slot; ++opened) close(fds[opened]);
      return -error;
    }
  }
  int result = -EBUSY;
  for (int attempt = 0; result < 0 && attempt < 1000; ++attempt) {
    if (attempt > 0) usleep(1000);
    // A slot locked while its word says free or draining is being claimed
    // or emptied: free in a moment, or someone's.
    bool settling = false;
    // Free slots first, the longest free first (SharedPortTable::released);
    // a gone holder's slot may still hold its frames.
    uint16_t order[kMaxSharedProcesses];
    for (uint16_t slot = 0; slot < layout.slots; ++slot) order[slot] = slot;
    std::stable_sort(order, order + layout.slots, [&](uint16_t a, uint16_t b) {
      return table.released[a].load(std::memory_order_relaxed) <
             table.released[b].load(std::memory_order_relaxed);
    });
    for (const bool free_pass : {true, false}) {
      for (uint16_t i = 0; i < layout.slots && result < 0; ++i) {
        const uint16_t slot = order[i];
        int32_t holder = table.owner[slot].load();
        if ((holder == 0) != free_pass) continue;
        if (flock(fds[slot], LOCK_EX | LOCK_NB) != 0) {
          settling |= holder == 0 || holder == kSlotDraining || table.owner[slot].load() != holder;
          continue;
        }
        // Nobody live holds it: what the word says is stale.
        if (table.owner[slot].compare_exchange_strong(holder, pid)) {
          result = slot;
        } else {
          flock(fds[slot], LOCK_UN);
          settling = true;
        }
      }
    }
    // (The switch holds a gone holder's lock for an instant before it marks
    // the slot draining: two more looks before giving up.)
    if (!settling && attempt >= 2) break;
  }
  for (uint16_t slot = 0; slot < layout.slots; ++slot)
    if (slot != result) close(fds[slot]);
  if (result >= 0) *lock = SlotLock(fds[result]);
  return result;
}

uint32_t drain_shared_ring(rte_ring* ring) {
  uint32_t drained = 0;
  void* frames[32];
  unsigned got;
  while ((got = rte_ring_sc_dequeue_burst(ring, frames, 32, nullptr)) > 0) {
    for (unsigned i = 0; i < got; ++i) free_frame(static_cast<rte_mbuf*>(frames[i]));
    drained += got;
  }
  return drained;
}

void release_shared_slot(SharedPortTable& table, const SharedPortLayout& layout, int slot,
                         int32_t pid, rte_ring* ring) {
  if (slot < 0 || slot >= layout.slots) return;
  // Only the holder gives a slot back and empties its ring, while no frame
  // may enter it: a process forked from the holder closing what it
  // inherited must not consume the holder's ring beside it.
  int32_t expected = pid;
  if (!table.owner[slot].compare_exchange_strong(expected, kSlotDraining)) return;
  if (ring != nullptr) drain_shared_ring(ring);
  mark_slot_released(table, slot);
  table.owner[slot].store(0);
}

void mark_slot_released(SharedPortTable& table, int slot) {
  table.released[slot].store(table.releases.fetch_add(1, std::memory_order_relaxed) + 1,
                             std::memory_order_relaxed);
}

}  // namespace ofi_dpdk::net
