// The named AV's shared table (lib/av/shared_table.h) without libfabric:
// two opens of one name see the same indices, FI_READ opens, layouts and
// names that are refused, who removes the object, processes that die (an
// orphaned object, a writer killed holding the lock), concurrent writers,
// readers racing writers, the mirror a process keeps, and what it trusts:
// an object of another owner or writable by others, a header whose fields
// are out of range at open or become so later, a lock held for good.  Each
// open of a name is its own open file description, so two opens in one
// process lock against each other exactly as two processes do.  The other
// user's side: test_shared_table_other_user.sh.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <sched.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "lib/av/shared_table.h"

namespace ofi_dpdk::av {
namespace {

using Table = std::unique_ptr<SharedTable>;

// A name no other test run uses.
std::string unique_name() {
  static int n = 0;
  const auto* test = ::testing::UnitTest::GetInstance()->current_test_info();
  return std::string("unit-") + test->name() + "-" + std::to_string(getpid()) + "-" +
         std::to_string(n++);
}

std::string object_of(const std::string& name) {
  return std::string(kSharedObjectPrefix) + name;
}

bool object_exists(const std::string& name) {
  const int fd = shm_open(object_of(name).c_str(), O_RDONLY, 0);
  if (fd < 0) return false;
  close(fd);
  return true;
}

// Every address names itself: the queue and the MAC's last bytes both hold n.
Address address_of(uint32_t n) {
  Address a;
  a.mac[0] = 0x02;
  a.mac[2] = n >> 24;
  a.mac[3] = n >> 16;
  a.mac[4] = n >> 8;
  a.mac[5] = n;
  a.queue = static_cast<uint16_t>(n);
  a.session = n * 7;
  return a;
}

bool self_consistent(const Address& a) {
  const uint32_t n =
      uint32_t{a.mac[2]} << 24 | uint32_t{a.mac[3]} << 16 | uint32_t{a.mac[4]} << 8 | a.mac[5];
  return a.mac[0] == 0x02 && a.queue == static_cast<uint16_t>(n) && a.session == n * 7;
}

Table open_ok(const std::string& name, SharedTable::Options options = {}) {
  Table table;
  std::string why;
  const int ret = SharedTable::open(name, options, &table, &why);
  EXPECT_EQ(ret, 0) << why;
  return table;
}

int open_error(const std::string& name, SharedTable::Options options, std::string* why) {
  Table table;
  return SharedTable::open(name, options, &table, why);
}

// Maps the whole object `name` read-write, as another process of ours
// would, to change what the table holds behind its back.
class Backdoor {
 public:
  explicit Backdoor(const std::string& name) {
    const int fd = shm_open(object_of(name).c_str(), O_RDWR, 0);
    struct stat st {};
    if (fd < 0 || fstat(fd, &st) != 0) return;
    size_ = static_cast<size_t>(st.st_size);
    void* map = mmap(nullptr, size_, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
    if (map != MAP_FAILED) header_ = static_cast<SharedHeader*>(map);
  }
  ~Backdoor() {
    if (header_ != nullptr) munmap(header_, size_);
  }
  SharedHeader* header() const { return header_; }
  SharedEntry* entries() const { return reinterpret_cast<SharedEntry*>(header_ + 1); }

 private:
  SharedHeader* header_ = nullptr;
  size_t size_ = 0;
};

// An object made by hand as an owner would (mode `mode`, whatever the
// umask; a valid header of `capacity` entries, none used), held open with
// its shared lock as a live owner holds it.  Removed by the destructor.
class HandMadeObject {
 public:
  HandMadeObject(const std::string& name, mode_t mode, uint32_t capacity)
      : object_(object_of(name)) {
    fd_ = shm_open(object_.c_str(), O_RDWR | O_CREAT | O_EXCL, 0600);
    if (fd_ < 0 || fchmod(fd_, mode) != 0 || flock(fd_, LOCK_SH) != 0) return;
    size_ = shared_object_size(capacity);
    if (ftruncate(fd_, static_cast<off_t>(size_)) != 0) return;
    void* map = mmap(nullptr, size_, PROT_READ | PROT_WRITE, MAP_SHARED, fd_, 0);
    if (map == MAP_FAILED) return;
    header_ = static_cast<SharedHeader*>(map);
    header_->magic = kSharedMagic;
    header_->layout_version = kSharedLayoutVersion;
    header_->header_size = sizeof(SharedHeader);
    header_->entry_size = sizeof(SharedEntry);
    header_->capacity = capacity;
    pthread_mutexattr_t attr;
    pthread_mutexattr_init(&attr);
    pthread_mutexattr_setpshared(&attr, PTHREAD_PROCESS_SHARED);
    pthread_mutexattr_setrobust(&attr, PTHREAD_MUTEX_ROBUST);
    pthread_mutex_init(&header_->lock, &attr);
    pthread_mutexattr_destroy(&attr);
    header_->ready.store(kSharedReady);
  }
  ~HandMadeObject() {
    if (header_ != nullptr) munmap(header_, size_);
    if (fd_ >= 0) close(fd_);
    shm_unlink(object_.c_str());
  }
  SharedHeader* header() const { return header_; }
  int fd() const { return fd_; }

 private:
  std::string object_;
  int fd_ = -1;
  size_t size_ = 0;
  SharedHeader* header_ = nullptr;
};

SharedTable::Options read_only() {
  SharedTable::Options options;
  options.read_only = true;
  return options;
}

TEST(SharedTable, TwoOpensSeeTheSameIndices) {
  const std::string name = unique_name();
  Table a = open_ok(name);
  ASSERT_TRUE(a);
  EXPECT_TRUE(a->created());
  EXPECT_EQ(a->capacity(), kSharedDefaultCapacity);
  for (uint32_t i = 0; i < 3; ++i) EXPECT_EQ(a->insert(address_of(10 + i)), i);

  Table b = open_ok(name);
  ASSERT_TRUE(b);
  EXPECT_FALSE(b->created());
  EXPECT_EQ(b->map_addr(), a->map_addr()) << "every opener gets the same map_addr";
  // The fi_addr array, in each opener's own mapping: i for an index in use.
  const auto* array = static_cast<const uint64_t*>(b->fi_addr_array());
  ASSERT_NE(array, static_cast<const uint64_t*>(a->fi_addr_array()));
  for (uint32_t i = 0; i < 3; ++i) EXPECT_EQ(array[i], i);
  EXPECT_EQ(array[3], kSharedNoFiAddr);
  EXPECT_TRUE(b->stale()) << "a new opener has not synced yet";
  AddressTable mirror;
  b->sync(mirror);
  EXPECT_FALSE(b->stale());
  for (uint32_t i = 0; i < 3; ++i) {
    ASSERT_NE(mirror.find(i), nullptr) << i;
    EXPECT_EQ(mirror.find(i)->address, address_of(10 + i));
  }
  EXPECT_EQ(mirror.count(), 3u);
  // The next index is the same for whoever inserts.
  EXPECT_EQ(b->insert(address_of(13)), 3);
  EXPECT_EQ(a->read(3), address_of(13));
  EXPECT_EQ(a->count(), 4u);
}

TEST(SharedTable, LowestUnusedIndexAcrossOpeners) {
  const std::string name = unique_name();
  Table a = open_ok(name), b = open_ok(name);
  for (uint32_t i = 0; i < 4; ++i) ASSERT_EQ(a->insert(address_of(i)), i);
  EXPECT_EQ(a->remove(2), 0);
  EXPECT_EQ(a->remove(1), 0);
  EXPECT_EQ(a->remove(1), -ENOENT) << "removed already";
  EXPECT_EQ(b->remove(99), -ENOENT) << "never used";
  const auto* array = static_cast<const uint64_t*>(b->fi_addr_array());
  EXPECT_EQ(array[1], kSharedNoFiAddr) << "removed by the other opener";
  EXPECT_EQ(array[2], kSharedNoFiAddr);
  EXPECT_EQ(array[3], 3u);
  EXPECT_EQ(b->insert(address_of(21)), 1) << "fi_av(3): the lowest unused index";
  EXPECT_EQ(array[1], 1u);
  EXPECT_EQ(a->insert(address_of(22)), 2);
  EXPECT_EQ(a->insert(address_of(24)), 4);
  // A third opener's mirror (an opener's own changes go into its mirror by
  // its own hand, not by sync).
  Table c = open_ok(name, read_only());
  AddressTable mirror;
  c->sync(mirror);
  EXPECT_EQ(mirror.find(1)->address, address_of(21));
  EXPECT_EQ(mirror.find(4)->address, address_of(24));
}

TEST(SharedTable, ReadOnlyOpens) {
  const std::string name = unique_name();
  std::string why;
  EXPECT_EQ(open_error(name, read_only(), &why), -ENOENT)
      << "fi_av(3): FI_READ needs the AV to exist";
  EXPECT_FALSE(object_exists(name)) << "a read-only open creates nothing";

  Table writer = open_ok(name);
  ASSERT_EQ(writer->insert(address_of(5)), 0);
  Table reader = open_ok(name, read_only());
  ASSERT_TRUE(reader);
  EXPECT_TRUE(reader->read_only());
  EXPECT_EQ(reader->insert(address_of(6)), -EACCES);
  EXPECT_EQ(reader->remove(0), -EACCES);
  AddressTable mirror;
  reader->sync(mirror);
  EXPECT_EQ(mirror.find(0)->address, address_of(5));
  // Changes made after the reader opened reach it.
  ASSERT_EQ(writer->insert(address_of(6)), 1);
  ASSERT_EQ(writer->remove(0), 0);
  EXPECT_TRUE(reader->stale());
  reader->sync(mirror);
  EXPECT_EQ(mirror.find(0), nullptr);
  EXPECT_EQ(mirror.find(1)->address, address_of(6));
  EXPECT_EQ(mirror.count(), 1u);
}

TEST(SharedTable, BadNamesAndSizesAreRefused) {
  std::string why;
  EXPECT_EQ(open_error("", {}, &why), -EINVAL);
  EXPECT_EQ(open_error("/", {}, &why), -EINVAL);
  EXPECT_EQ(open_error("a/b", {}, &why), -EINVAL);
  EXPECT_EQ(open_error("with space", {}, &why), -EINVAL);
  EXPECT_EQ(open_error(std::string(kSharedMaxNameLength + 1, 'x'), {}, &why), -EINVAL);
  EXPECT_NE(why.find("printable"), std::string::npos) << why;
  SharedTable::Options huge;
  huge.capacity = size_t{kSharedMaxCapacity} + 1;
  EXPECT_EQ(open_error(unique_name(), huge, &why), -EINVAL);
  EXPECT_NE(why.find("limit"), std::string::npos) << why;
  // One leading '/' is the POSIX spelling of the same name.
  const std::string name = unique_name();
  Table a = open_ok(name);
  Table b = open_ok("/" + name);
  ASSERT_TRUE(b);
  EXPECT_FALSE(b->created());
}

TEST(SharedTable, CountSizesTheTableAndAnOpenerMayNotAskForMore) {
  const std::string name = unique_name();
  SharedTable::Options small;
  small.capacity = 4;
  Table a = open_ok(name, small);
  ASSERT_TRUE(a);
  EXPECT_EQ(a->capacity(), 4u);
  for (uint32_t i = 0; i < 4; ++i) ASSERT_EQ(a->insert(address_of(i)), i);
  EXPECT_EQ(a->insert(address_of(4)), -ENOSPC);
  std::string why;
  SharedTable::Options bigger;
  bigger.capacity = 5;
  EXPECT_EQ(open_error(name, bigger, &why), -EINVAL);
  EXPECT_NE(why.find("holds 4 entries"), std::string::npos) << why;
  Table b = open_ok(name);  // count 0: whatever it holds
  ASSERT_TRUE(b);
  EXPECT_EQ(b->capacity(), 4u);
}

// An object of another layout, made by hand and held open (as its owner
// would), is refused with the reason; it is left alone.
TEST(SharedTable, AnotherLayoutIsRefused) {
  const std::string name = unique_name();
  const std::string object = object_of(name);
  const int fd = shm_open(object.c_str(), O_RDWR | O_CREAT | O_EXCL, 0600);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(flock(fd, LOCK_SH), 0);
  const size_t size = shared_object_size(8);
  ASSERT_EQ(ftruncate(fd, size), 0);
  void* map = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  ASSERT_NE(map, MAP_FAILED);
  auto* header = static_cast<SharedHeader*>(map);
  header->magic = kSharedMagic;
  header->layout_version = kSharedLayoutVersion + 1;
  header->header_size = sizeof(SharedHeader);
  header->entry_size = sizeof(SharedEntry);
  header->capacity = 8;
  header->ready.store(kSharedReady);
  std::string why;
  EXPECT_EQ(open_error(name, {}, &why), -EINVAL);
  EXPECT_NE(why.find("layout version is " + std::to_string(kSharedLayoutVersion + 1)),
            std::string::npos)
      << why;
  EXPECT_EQ(open_error(name, read_only(), &why), -EINVAL);
  header->layout_version = kSharedLayoutVersion;
  header->capacity = 9;  // the size says 8
  EXPECT_EQ(open_error(name, {}, &why), -EINVAL);
  EXPECT_NE(why.find("size"), std::string::npos) << why;
  header->magic = 0;
  EXPECT_EQ(open_error(name, {}, &why), -EINVAL);
  EXPECT_NE(why.find("not a dpdk provider AV"), std::string::npos) << why;
  EXPECT_TRUE(object_exists(name)) << "a refused object is not removed";
  munmap(map, size);
  close(fd);
  shm_unlink(object.c_str());
}

// A creator that holds the object but never marks it ready.
TEST(SharedTable, ACreatorThatNeverFinishesTimesOut) {
  const std::string name = unique_name();
  const std::string object = object_of(name);
  const int fd = shm_open(object.c_str(), O_RDWR | O_CREAT | O_EXCL, 0600);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(flock(fd, LOCK_SH), 0);
  std::string why;
  const auto start = std::chrono::steady_clock::now();
  EXPECT_EQ(open_error(name, {}, &why), -ETIMEDOUT);
  const double took =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_LT(took, 5.0);
  EXPECT_NE(why.find("never finished"), std::string::npos) << why;
  close(fd);
  shm_unlink(object.c_str());
}

TEST(SharedTable, TheLastCloseRemovesTheObject) {
  const std::string name = unique_name();
  Table a = open_ok(name);
  Table b = open_ok(name, read_only());
  a.reset();
  EXPECT_TRUE(object_exists(name)) << "still open read-only";
  b.reset();
  EXPECT_FALSE(object_exists(name));
  // The name can be used afresh: a new, empty table.
  Table c = open_ok(name);
  ASSERT_TRUE(c);
  EXPECT_TRUE(c->created());
  EXPECT_EQ(c->count(), 0u);
  c.reset();
  EXPECT_FALSE(object_exists(name));
}

// Two holders closing at the same moment: the first to try for the lock
// alone fails (the second still holds its shared lock), and the second
// tries while the first has not closed yet.  The second must still find
// itself last: the first gave its lock up for good.  The pause runs the
// second close exactly inside the first one.
TEST(SharedTable, TwoClosersAtOnceStillRemoveTheObject) {
  const std::string name = unique_name();
  static Table second;
  static int pauses;
  static bool first_alone;
  Table first = open_ok(name);
  second = open_ok(name);
  ASSERT_TRUE(first && second);
  pauses = 0;
  SharedTable::close_pause_for_test = [](bool alone) {
    if (pauses++ != 0) return;  // the second close, run from inside the first
    first_alone = alone;
    second.reset();
  };
  first.reset();
  SharedTable::close_pause_for_test = nullptr;
  EXPECT_EQ(pauses, 2);
  EXPECT_FALSE(first_alone) << "the second holder still held its lock";
  EXPECT_FALSE(object_exists(name)) << "neither closer removed the object";
}

// A process that dies with the table open leaves the object behind, held by
// nobody.  The next opener discards it.
TEST(SharedTable, AnObjectLeftByProcessesThatDiedIsDiscarded) {
  const std::string name = unique_name();
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    Table table;
    std::string why;
    if (SharedTable::open(name, {}, &table, &why) != 0 || table->insert(address_of(1)) != 0)
      _exit(1);
    _exit(0);  // no destructor: as if killed
  }
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  ASSERT_TRUE(object_exists(name)) << "left behind by the dead process";
  std::string why;
  EXPECT_EQ(open_error(name, read_only(), &why), -ENOENT);
  EXPECT_NE(why.find("died"), std::string::npos) << why;
  EXPECT_FALSE(object_exists(name));
  // Again, with a writable opener: it starts an empty table.
  const pid_t again = fork();
  ASSERT_GE(again, 0);
  if (again == 0) {
    Table table;
    std::string reason;
    _exit(SharedTable::open(name, {}, &table, &reason) == 0 && table->insert(address_of(1)) == 0
              ? 0
              : 1);
  }
  ASSERT_EQ(waitpid(again, &status, 0), again);
  Table fresh = open_ok(name);
  ASSERT_TRUE(fresh);
  EXPECT_TRUE(fresh->created());
  EXPECT_EQ(fresh->count(), 0u);
}

// A writer killed inside an insert: it holds the robust mutex and left an
// entry half written.  The next writer repairs both and goes on.
TEST(SharedTable, AWriterKilledHoldingTheLockIsRecoveredFrom) {
  const std::string name = unique_name();
  Table table = open_ok(name);
  ASSERT_EQ(table->insert(address_of(1)), 0);
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    const int fd = shm_open(object_of(name).c_str(), O_RDWR, 0);
    const size_t size = shared_object_size(kSharedDefaultCapacity);
    void* map =
        fd < 0 ? MAP_FAILED : mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (map == MAP_FAILED) _exit(1);
    auto* header = static_cast<SharedHeader*>(map);
    auto* entries = reinterpret_cast<SharedEntry*>(header + 1);
    if (pthread_mutex_lock(&header->lock) != 0) _exit(1);
    // Half of an insert at index 1: busy, never finished.
    entries[1].state.store(2);
    header->high_water.store(2);
    _exit(0);
  }
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  EXPECT_EQ(table->read(1), std::nullopt) << "a half-written entry is not an address";
  EXPECT_EQ(table->insert(address_of(2)), 1) << "the repaired index is reused";
  EXPECT_EQ(table->read(1), address_of(2));
  EXPECT_EQ(table->insert(address_of(3)), 2);
  EXPECT_EQ(table->count(), 3u);
}

TEST(SharedTable, ConcurrentCreatorsAgreeOnOneTable) {
  const std::string name = unique_name();
  constexpr int kOpeners = 6;
  std::vector<Table> tables(kOpeners);
  std::vector<int> results(kOpeners, 1);
  std::vector<std::thread> threads;
  for (int i = 0; i < kOpeners; ++i)
    threads.emplace_back([&, i] {
      std::string why;
      results[i] = SharedTable::open(name, {}, &tables[i], &why);
    });
  for (auto& t : threads) t.join();
  int created = 0;
  for (int i = 0; i < kOpeners; ++i) {
    ASSERT_EQ(results[i], 0);
    created += tables[i]->created() ? 1 : 0;
  }
  EXPECT_EQ(created, 1);
  ASSERT_EQ(tables[0]->insert(address_of(7)), 0);
  for (int i = 1; i < kOpeners; ++i) EXPECT_EQ(tables[i]->read(0), address_of(7)) << i;
}

TEST(SharedTable, ConcurrentWritersGetDistinctIndices) {
  const std::string name = unique_name();
  constexpr int kWriters = 4, kEach = 2000;
  Table keeper = open_ok(name);
  std::vector<std::vector<int64_t>> got(kWriters);
  std::vector<std::thread> threads;
  for (int w = 0; w < kWriters; ++w)
    threads.emplace_back([&, w] {
      Table mine = open_ok(name);
      for (int i = 0; i < kEach; ++i) got[w].push_back(mine->insert(address_of(w * kEach + i)));
    });
  for (auto& t : threads) t.join();
  std::set<int64_t> all;
  for (int w = 0; w < kWriters; ++w)
    for (int i = 0; i < kEach; ++i) {
      const int64_t index = got[w][i];
      ASSERT_GE(index, 0);
      EXPECT_TRUE(all.insert(index).second) << "index " << index << " handed out twice";
      EXPECT_EQ(keeper->read(index), address_of(w * kEach + i));
    }
  EXPECT_EQ(*all.rbegin(), kWriters * kEach - 1) << "no gaps";
}

// Readers take no lock: while a writer inserts and removes, every address a
// reader sees is whole (each names itself), never a mix of two.
TEST(SharedTable, ReadersNeverSeeHalfAnAddress) {
  const std::string name = unique_name();
  Table writer = open_ok(name);
  Table reader = open_ok(name, read_only());
  std::atomic<bool> done{false};
  std::thread churn([&] {
    for (uint32_t round = 0; round < 20000; ++round) {
      const int64_t index = writer->insert(address_of(round));
      if (index >= 0 && round % 2 == 0) writer->remove(index);
      if (index >= 16) writer->remove(index);
    }
    done = true;
  });
  uint64_t seen = 0, torn = 0;
  AddressTable mirror;
  while (!done) {
    for (uint32_t i = 0; i < 20; ++i)
      if (auto a = reader->read(i)) {
        ++seen;
        torn += self_consistent(*a) ? 0 : 1;
      }
    reader->sync(mirror);
  }
  churn.join();
  EXPECT_EQ(torn, 0u) << "of " << seen;
  reader->sync(mirror);
  for (uint32_t i = 0; i < 20; ++i) {
    const auto shared = reader->read(i);
    const Entry* local = mirror.find(i);
    ASSERT_EQ(shared.has_value(), local != nullptr) << i;
    if (shared) {
      EXPECT_EQ(local->address, *shared);
    }
  }
}

// The mirror: this process's inserts keep their user ids across syncs that
// another opener's changes cause; an entry another opener replaced loses it.
TEST(SharedTable, SyncKeepsOwnUserIdsAndDropsReplacedOnes) {
  const std::string name = unique_name();
  Table mine = open_ok(name), other = open_ok(name);
  AddressTable mirror;
  mine->sync(mirror);
  for (uint32_t i = 0; i < 2; ++i) {
    const int64_t index = mine->insert(address_of(i));
    ASSERT_EQ(index, i);
    ASSERT_EQ(mirror.insert_at(index, address_of(i), 0x100 + i), index);
  }
  EXPECT_FALSE(mine->stale()) << "its own inserts do not make it stale";
  ASSERT_EQ(other->insert(address_of(9)), 2);
  ASSERT_EQ(other->remove(1), 0);
  ASSERT_EQ(other->insert(address_of(8)), 1);
  EXPECT_TRUE(mine->stale());
  mine->sync(mirror);
  EXPECT_EQ(mirror.source_id(0), 0x100u) << "own entry keeps its user id";
  EXPECT_EQ(mirror.find(1)->address, address_of(8));
  EXPECT_EQ(mirror.source_id(1), 1u) << "replaced by another opener: its index";
  EXPECT_EQ(mirror.find(2)->address, address_of(9));
  EXPECT_EQ(mirror.find_endpoint(endpoint_key(address_of(9))), 2u);
  EXPECT_EQ(mirror.find_endpoint(endpoint_key(address_of(1))), AddressTable::kNone);
}

// The mode bits an error message shows: "mode 0666".
std::string mode_text(mode_t mode) {
  char text[8];
  snprintf(text, sizeof(text), "0%03o", static_cast<unsigned>(mode));
  return std::string("mode ") + text;
}

// Another user (or another program of ours) could have made the object
// writable by others: whatever its header says, it is not used, in either
// mode, and it is left alone.  Only write access for others matters.
TEST(SharedTable, AnObjectOthersMayWriteIsRefused) {
  for (const mode_t mode : {0666, 0620, 0602}) {
    const std::string name = unique_name();
    HandMadeObject object(name, mode, 8);
    ASSERT_NE(object.header(), nullptr);
    std::string why;
    EXPECT_EQ(open_error(name, {}, &why), -EACCES) << mode_text(mode);
    EXPECT_NE(why.find(mode_text(mode)), std::string::npos) << why;
    EXPECT_NE(why.find(object_of(name)), std::string::npos) << "names the object: " << why;
    EXPECT_EQ(open_error(name, read_only(), &why), -EACCES) << mode_text(mode);
    EXPECT_TRUE(object_exists(name)) << "a refused object is not removed";
  }
  const std::string name = unique_name();
  HandMadeObject readable(name, 0644, 8);
  ASSERT_NE(readable.header(), nullptr);
  Table table = open_ok(name);
  ASSERT_TRUE(table) << "others may read it: that does not change what we see";
}

// Root can open any object, so the check is on the owner, not on access:
// an object of uid 65534 is refused even with mode 0600, held or not (one
// nobody holds is not ours to discard either).
TEST(SharedTable, AnObjectOfAnotherOwnerIsRefused) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root to give an object away (fchown)";
  const std::string name = unique_name();
  HandMadeObject object(name, 0600, 8);
  ASSERT_NE(object.header(), nullptr);
  ASSERT_EQ(fchown(object.fd(), 65534, 65534), 0);
  std::string why;
  EXPECT_EQ(open_error(name, {}, &why), -EACCES);
  EXPECT_NE(why.find("uid 65534"), std::string::npos) << why;
  EXPECT_NE(why.find(object_of(name)), std::string::npos) << why;
  EXPECT_EQ(open_error(name, read_only(), &why), -EACCES);
  ASSERT_EQ(flock(object.fd(), LOCK_UN), 0);  // as if its owner had died
  EXPECT_EQ(open_error(name, {}, &why), -EACCES);
  EXPECT_TRUE(object_exists(name)) << "another user's object is not removed";
}

// Header fields that are out of range when the object is opened: refused
// with the field named, never used.
TEST(SharedTable, AHeaderOutOfRangeIsRefusedAtOpen) {
  const std::string name = unique_name();
  HandMadeObject object(name, 0600, 8);
  SharedHeader* h = object.header();
  ASSERT_NE(h, nullptr);
  struct Case {
    const char* field;
    void (*spoil)(SharedHeader*);
  };
  const Case cases[] = {
      {"high water", [](SharedHeader* x) { x->high_water.store(9); }},
      {"free hint", [](SharedHeader* x) { x->free_hint = 1000; }},
      {"count", [](SharedHeader* x) { x->count = 9; }},
      {"holes", [](SharedHeader* x) { x->holes = ~0u; }},
  };
  for (const Case& c : cases) {
    c.spoil(h);
    std::string why;
    EXPECT_EQ(open_error(name, {}, &why), -EINVAL) << c.field;
    EXPECT_NE(why.find(c.field), std::string::npos) << why;
    EXPECT_EQ(open_error(name, read_only(), &why), -EINVAL) << c.field;
    h->high_water.store(0);
    h->free_hint = h->count = h->holes = 0;
  }
  Table table = open_ok(name);  // once repaired, it opens
  ASSERT_TRUE(table);
  EXPECT_EQ(table->insert(address_of(1)), 0);
}

// Runs `check` in a child process (so that an out-of-bounds access kills
// the child, not the test) and returns its exit code, or 128 + the signal
// that killed it.
template <typename Check>
int in_child(Check check) {
  const pid_t child = fork();
  if (child == 0) _exit(check());
  int status = 0;
  if (child < 0 || waitpid(child, &status, 0) != child) return -1;
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

// Another process of ours may change the header after we opened the table
// (a bug, or on purpose).  No field of it is ever used as an index beyond
// the capacity this process mapped: the change is reported (-EIO) or
// ignored, never a write or read out of bounds.
TEST(SharedTable, HeaderFieldsChangedAfterOpenAreNeverIndices) {
  SharedTable::Options eight;
  eight.capacity = 8;
  {
    // Full, but holes says one is free: the search for it must stop at 8.
    const std::string name = unique_name();
    Table table = open_ok(name, eight);
    ASSERT_TRUE(table);
    for (uint32_t i = 0; i < 8; ++i) ASSERT_EQ(table->insert(address_of(i)), i);
    Backdoor door(name);
    ASSERT_NE(door.header(), nullptr);
    door.header()->holes = 1;
    door.header()->free_hint = 0;
    door.header()->count = 7;
    EXPECT_EQ(table->insert(address_of(99)), -EIO) << "no unused index below 8";
    // Counters that do not add up (count + holes is the high water): a
    // removal would take count below 0.
    door.header()->holes = 0;
    door.header()->count = 0;
    EXPECT_EQ(table->remove(3), -EIO);
    EXPECT_EQ(table->read(3), address_of(3)) << "nothing removed";
  }
  {
    // The header's capacity and high water raised far beyond what was mapped.
    // (Index 0 comes from another opener, for this one's sync to pick up.)
    const std::string name = unique_name();
    Table table = open_ok(name, eight), other = open_ok(name);
    ASSERT_TRUE(table && other);
    ASSERT_EQ(other->insert(address_of(0)), 0);
    Backdoor door(name);
    ASSERT_NE(door.header(), nullptr);
    door.header()->capacity = uint32_t{1} << 20;
    door.header()->high_water.store(uint32_t{1} << 19);
    door.header()->generation.fetch_add(1);
    EXPECT_EQ(in_child([&] {
                if (table->insert(address_of(1)) != -EIO) return 2;
                if (table->remove(uint64_t{1} << 18) != -ENOENT) return 3;
                if (table->read(uint64_t{1} << 18) != std::nullopt) return 4;
                if (table->count() != 1) return 5;
                AddressTable mirror;
                table->sync(mirror);
                if (mirror.count() != 1 || mirror.find(0) == nullptr) return 6;
                if (table->capacity() != 8) return 1;
                return 0;
              }),
              0)
        << "1 capacity, 2 insert, 3 remove, 4 read, 5 count, 6 sync; above 128 a signal";
  }
  {
    // free_hint beyond the high water and the capacity.
    const std::string name = unique_name();
    Table table = open_ok(name, eight);
    ASSERT_TRUE(table);
    ASSERT_EQ(table->insert(address_of(0)), 0);
    ASSERT_EQ(table->insert(address_of(1)), 1);
    ASSERT_EQ(table->remove(0), 0);
    Backdoor door(name);
    ASSERT_NE(door.header(), nullptr);
    door.header()->free_hint = uint32_t{1} << 20;
    EXPECT_EQ(in_child([&] { return table->insert(address_of(2)) == -EIO ? 0 : 1; }), 0);
  }
}

// A process of ours that holds the writers' lock and never lets go (stopped,
// or hostile) costs a writer a bounded wait, not its port: insert and
// remove give up with -EAGAIN.  The holder lets go after 10 s by itself, so
// that the test ends without the bound too.
TEST(SharedTable, ALockHeldForGoodIsWaitedForABoundedTime) {
  const std::string name = unique_name();
  Table table = open_ok(name);
  ASSERT_TRUE(table);
  ASSERT_EQ(table->insert(address_of(0)), 0);
  int ready[2], release[2];
  ASSERT_EQ(pipe(ready), 0);
  ASSERT_EQ(pipe(release), 0);
  const pid_t holder = fork();
  ASSERT_GE(holder, 0);
  if (holder == 0) {
    Backdoor door(name);
    if (door.header() == nullptr || pthread_mutex_lock(&door.header()->lock) != 0) _exit(1);
    char byte = 1;
    if (write(ready[1], &byte, 1) != 1) _exit(1);
    pollfd wait_for{release[0], POLLIN, 0};
    poll(&wait_for, 1, 10'000);
    pthread_mutex_unlock(&door.header()->lock);
    _exit(0);
  }
  char byte = 0;
  ASSERT_EQ(read(ready[0], &byte, 1), 1);
  const auto start = std::chrono::steady_clock::now();
  EXPECT_EQ(table->insert(address_of(1)), -EAGAIN);
  const double took =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_GE(took, 0.2) << "it did wait";
  EXPECT_LT(took, 5.0) << "but not for good";
  EXPECT_EQ(table->remove(0), -EAGAIN);
  EXPECT_EQ(table->read(0), address_of(0)) << "nothing removed";
  ASSERT_EQ(write(release[1], &byte, 1), 1);
  int status = 0;
  ASSERT_EQ(waitpid(holder, &status, 0), holder);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  EXPECT_EQ(table->insert(address_of(1)), 1) << "let go: writers go on";
  for (int fd : {ready[0], ready[1], release[0], release[1]}) close(fd);
}

// A last closer whose shm_unlink fails (here: /dev/shm made read-only under
// it, in a mount namespace of its own) says so, rather than leaving the
// object behind in silence; the table is closed either way.  Needs root
// (unshare, mount); skipped otherwise.
TEST(SharedTable, CloseReportsAnUnlinkThatFailed) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root for a mount namespace";
  const std::string name = unique_name();
  const int result = in_child([&] {
    if (unshare(CLONE_NEWNS) != 0 || mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr))
      return 10;
    Table table;
    std::string why;
    if (SharedTable::open(name, {}, &table, &why) != 0) return 11;
    // A bind mount of /dev/shm that nothing has open can be made read-only.
    SharedTable::close_pause_for_test = [](bool) {
      mount("/dev/shm", "/dev/shm", nullptr, MS_BIND, nullptr);
      mount(nullptr, "/dev/shm", nullptr, MS_REMOUNT | MS_BIND | MS_RDONLY, nullptr);
    };
    if (table->close(&why) != -EROFS) return 1;
    if (why.find("shm_unlink") == std::string::npos) return 2;
    if (why.find(object_of(name)) == std::string::npos) return 3;
    if (table->close(&why) != 0) return 4;  // closed already
    return 0;
  });
  if (result == 10) GTEST_SKIP() << "no mount namespace here";
  EXPECT_EQ(result, 0) << "1 not -EROFS, 2 3 the reason, 4 a second close";
  EXPECT_TRUE(object_exists(name)) << "left behind, as reported";
  shm_unlink(object_of(name).c_str());
}

}  // namespace
}  // namespace ofi_dpdk::av
