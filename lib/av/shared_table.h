// shared_table.h: a named address table shared by the processes of one node
// (fi_av(3) `name`, FI_SHARED_AV), without libfabric or DPDK.
//
// The table is a POSIX shared-memory object, "/fi_dpdk_av.<name>": a
// 128-byte SharedHeader, then `capacity` 16-byte SharedEntry slots, then as
// many 8-byte fi_addr elements (fi_av_open's map_addr points there).  Index i
// names the same endpoint in every process that has the name open.  Only the
// table is shared: each process keeps its own connections, and its own
// AddressTable as a mirror of this one (the send path's one indexed load and
// FI_SOURCE's reverse index stay local), brought up to date by sync()
// whenever the header's generation moved.
//
// Concurrency: writers take the header's robust, process-shared mutex, for
// at most kSharedLockWait (a holder that is stopped or hostile costs a
// bounded wait, not the caller's port); a writer that dies holding it leaves
// it to the next writer, which repairs half-written entries.  Readers take
// no lock: every entry is a sequence lock (its state word), so a reader
// never sees half an address.  Read-only openers map the object read-only.
//
// Trust: only an object that belongs to this process's effective uid and
// that no other user may write is used (root too: it could open any).  Its
// creator makes it 0600.  A process of the same uid is trusted with the
// entries (it can change any address), but not with this process's memory:
// the capacity is read once at open, and every header field is checked
// against it before it indexes anything, at open and under the lock at
// each use, so a corrupt header is an error (-EINVAL at open, -EIO on
// change), never an access out of bounds.
//
// Lifetime: a process that has the object open holds a shared flock(2) on
// it, which the kernel drops when the process dies.  The last process to
// close unlinks the object; an object no process holds (its users died) is
// discarded by the next opener.  doc/address-vector.md has the full story.
#pragma once

#include <pthread.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "lib/av/address.h"
#include "lib/av/av_table.h"

namespace ofi_dpdk::av {

inline constexpr uint64_t kSharedMagic = 0x5641'4b44'5044'4946ull;  // "FIDPDKAV"
inline constexpr uint32_t kSharedLayoutVersion = 2;
inline constexpr uint32_t kSharedReady = 0x52454459;  // set last by the creator
// Entries when fi_av_attr::count is 0.  The object is sparse (tmpfs): pages
// are only allocated as entries are written.
inline constexpr uint32_t kSharedDefaultCapacity = 65536;
inline constexpr uint32_t kSharedMaxCapacity = uint32_t{1} << 24;  // 256 MiB
inline constexpr std::string_view kSharedObjectPrefix = "/fi_dpdk_av.";
inline constexpr size_t kSharedMaxNameLength = 200;
// How long a writer waits for the lock.  A live writer holds it for a few
// hundred ns; the wait is taken under the caller's port lock.
inline constexpr std::chrono::milliseconds kSharedLockWait{500};

// An element of the fi_addr array (after the `capacity` entries, one
// uint64_t each) whose index is not in use: FI_ADDR_NOTAVAIL.
inline constexpr uint64_t kSharedNoFiAddr = ~uint64_t{0};

// The layout below is what every process of the node maps; any change to it
// bumps kSharedLayoutVersion.  Host byte order: the object never leaves the
// node.  Fields marked "lock" change only under `lock`.
struct SharedHeader {
  uint64_t magic;                    // kSharedMagic
  uint32_t layout_version;           // kSharedLayoutVersion
  uint32_t header_size;              // sizeof(SharedHeader)
  uint32_t entry_size;               // sizeof(SharedEntry)
  uint32_t capacity;                 // entries after the header
  uint64_t map_addr;                 // fi_av_attr::map_addr given back to openers
  std::atomic<uint32_t> ready;       // kSharedReady once initialised
  std::atomic<uint32_t> high_water;  // 1 + highest index ever used
  std::atomic<uint64_t> generation;  // lock: bumped by every change
  uint32_t count;                    // lock: indices in use
  uint32_t holes;                    // lock: unused indices below high_water
  uint32_t free_hint;                // lock: no unused index below it
  uint32_t reserved;
  pthread_mutex_t lock;  // robust, process-shared; writers only
  uint8_t pad[64 - sizeof(pthread_mutex_t)];
};
static_assert(sizeof(pthread_mutex_t) <= 64, "the header keeps 64 bytes for the mutex");
static_assert(sizeof(SharedHeader) == 128, "the shared AV header is 128 bytes");

// The object's size: the header, `capacity` entries, then as many fi_addr
// elements.
size_t shared_object_size(uint32_t capacity);

// One index.  words: MAC bytes 0-3; MAC bytes 4-5 and the queue (bits
// 16-31); the session.  state: bit 0 valid, bit 1 being written, bits 2-31 a
// count of changes to this index (the sequence readers check).
struct SharedEntry {
  std::atomic<uint32_t> words[3];
  std::atomic<uint32_t> state;
};
static_assert(sizeof(SharedEntry) == 16, "a shared AV entry is 16 bytes");
static_assert(std::atomic<uint32_t>::is_always_lock_free &&
                  std::atomic<uint64_t>::is_always_lock_free,
              "atomics in shared memory must be lock-free");

class SharedTable {
 public:
  struct Options {
    size_t capacity = 0;     // 0: kSharedDefaultCapacity, or whatever an existing one holds
    bool read_only = false;  // FI_READ: open an existing table, never create or change it
    uint64_t map_addr = 0;   // recorded by the creator
  };

  // Opens the table `name` names, creating it unless read_only.  Returns 0,
  // or a negative errno with the reason in *why:
  //   -EINVAL     a name that is empty, too long or holds '/' after the
  //               first byte; a capacity above kSharedMaxCapacity; an object
  //               of another layout; one with fewer entries than asked for;
  //               one whose header holds a value out of range
  //   -EACCES     an object of another uid, or one others may write
  //   -ENOENT     read_only and no process has the table open
  //   -ETIMEDOUT  its creator is alive but never finished initialising it
  //   others      from shm_open, ftruncate, mmap (-EACCES, -ENOSPC, -ENOMEM)
  static int open(std::string_view name, const Options& options, std::unique_ptr<SharedTable>* out,
                  std::string* why);
  // Unmaps; the last process to close unlinks the object.  Returns 0, or
  // -errno of a failed shm_unlink (the object stays in /dev/shm) with the
  // reason in *why.  The table is closed either way; a second call is a no-op.
  int close(std::string* why);
  ~SharedTable();  // close(), its error dropped
  // Tests only: called by the destructor between its try for the lock
  // alone (`alone`: it got it) and closing the descriptor, so a test can
  // make two closers interleave exactly there.
  static inline void (*close_pause_for_test)(bool alone) = nullptr;
  SharedTable(const SharedTable&) = delete;
  SharedTable& operator=(const SharedTable&) = delete;

  bool read_only() const { return read_only_; }
  bool created() const { return created_; }
  uint32_t capacity() const { return capacity_; }
  uint64_t map_addr() const { return header_->map_addr; }
  // Where this process maps the table's fi_addr array: element i is i while
  // index i is in use, kSharedNoFiAddr otherwise (what fabtests and other
  // programs read through the map_addr fi_av_open returns).
  const void* fi_addr_array() const { return fi_addrs_; }
  const std::string& object_name() const { return object_; }
  // The table's own count of indices in use (all processes).
  uint32_t count() const;

  // Inserts at the lowest unused index and returns it; -ENOSPC when full,
  // -EACCES when read-only, -EAGAIN when the lock stayed held for
  // kSharedLockWait, -EIO when the lock cannot be recovered or the header
  // is corrupt (problem() says how).
  int64_t insert(const Address& address);
  // 0, or -ENOENT for an index not in use, -EACCES, -EAGAIN, -EIO.
  int remove(uint64_t index);
  // Removes every index of `indices` that is in use, under one hold of the
  // lock: all, or nothing on -EACCES or -EAGAIN (-EIO, a corrupt table,
  // may stop part-way).  Indices not in use (another process removed them
  // first, or named twice) are skipped.
  int remove_all(const uint64_t* indices, size_t n);
  // What the last -EIO or -EAGAIN of insert or remove was about.
  const std::string& problem() const { return problem_; }
  // The address at index, or nullopt when unused.
  std::optional<Address> read(uint64_t index) const;

  // Whether the table changed since this process last synced (one load).
  bool stale() const { return header_->generation.load(std::memory_order_acquire) != synced_; }
  // Makes `mirror` hold exactly the table's valid entries at the same
  // indices.  The caller puts its own inserts and removals into the mirror
  // itself; those entries, unchanged since, keep their user ids.  An entry
  // the mirror has no memory for is retried on the next sync.
  void sync(AddressTable& mirror);

 private:
  SharedTable() = default;
  // 0 and the lock held with a sane header; -EAGAIN, -EIO (problem_ set).
  int lock();
  void unlock() { pthread_mutex_unlock(&header_->lock); }
  void repair();  // after a writer died holding the lock
  // Under the lock: whether the counters fit capacity_ and each other;
  // otherwise problem_ says which does not.
  bool header_sane();
  // Under the lock: 0, or -ENOENT for an index not in use, -EIO.
  int remove_locked(uint64_t index);
  // The header's high water, never above capacity_ (for lock-free readers).
  uint32_t high_water() const;
  // Under the lock, after this process changed `index`: bumps the
  // generation, and if nothing else changed since the last sync, keeps the
  // mirror counted as current.
  void publish(uint64_t index, uint32_t state);
  bool read_entry(uint64_t index, Address* address, uint32_t* state) const;

  int fd_ = -1;
  bool read_only_ = false;
  bool created_ = false;
  std::string object_;
  void* map_ = nullptr;
  size_t map_size_ = 0;
  SharedHeader* header_ = nullptr;
  SharedEntry* entries_ = nullptr;
  std::atomic<uint64_t>* fi_addrs_ = nullptr;  // capacity_ of them, after the entries
  uint32_t capacity_ = 0;  // entries mapped: read once at open, never from the header again
  std::string problem_;
  uint64_t synced_ = ~uint64_t{0};  // generation the mirror reflects
  std::vector<uint32_t> seen_;      // per index: the state the mirror reflects
};

}  // namespace ofi_dpdk::av
