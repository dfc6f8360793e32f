// shared_table_probe: the two sides of test_shared_table_other_user.sh.
//
//   shared_table_probe make NAME MODE
//     Run as another user: makes /fi_dpdk_av.NAME with MODE (octal) and a
//     well-formed header whose index 0 names the maker's own port
//     (fi_dpdk://02:66:66:66:66:66/1), holds it open as a live opener does,
//     prints "ready" and waits for stdin to close (at most 60 s); then
//     removes it.
//   shared_table_probe open NAME [read-only]
//     Opens NAME through SharedTable::open as the victim would.  Prints
//     "refused: <why>" and exits 3 on -EACCES; prints "opened: index 0 is
//     <address or none>" and exits 0 when it used the object; exits 4 on
//     any other error.
#include <fcntl.h>
#include <poll.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>

#include "lib/av/address.h"
#include "lib/av/shared_table.h"

namespace {

using ofi_dpdk::av::SharedEntry;
using ofi_dpdk::av::SharedHeader;
using ofi_dpdk::av::SharedTable;

constexpr uint32_t kCapacity = 8;

int make(const std::string& name, mode_t mode) {
  const std::string object = std::string(ofi_dpdk::av::kSharedObjectPrefix) + name;
  const int fd = shm_open(object.c_str(), O_RDWR | O_CREAT | O_EXCL, 0600);
  if (fd < 0 || fchmod(fd, mode) != 0 || flock(fd, LOCK_SH) != 0) {
    perror("make: shm_open, fchmod or flock");
    return 1;
  }
  const size_t size = sizeof(SharedHeader) + kCapacity * sizeof(SharedEntry);
  void* map = ftruncate(fd, static_cast<off_t>(size)) == 0
                  ? mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0)
                  : MAP_FAILED;
  if (map == MAP_FAILED) {
    perror("make: ftruncate or mmap");
    shm_unlink(object.c_str());
    return 1;
  }
  auto* header = static_cast<SharedHeader*>(map);
  auto* entries = reinterpret_cast<SharedEntry*>(header + 1);
  header->magic = ofi_dpdk::av::kSharedMagic;
  header->layout_version = ofi_dpdk::av::kSharedLayoutVersion;
  header->header_size = sizeof(SharedHeader);
  header->entry_size = sizeof(SharedEntry);
  header->capacity = kCapacity;
  pthread_mutexattr_t attr;
  pthread_mutexattr_init(&attr);
  pthread_mutexattr_setpshared(&attr, PTHREAD_PROCESS_SHARED);
  pthread_mutexattr_setrobust(&attr, PTHREAD_MUTEX_ROBUST);
  pthread_mutex_init(&header->lock, &attr);
  pthread_mutexattr_destroy(&attr);
  // Index 0: 02:66:66:66:66:66, queue 1, valid (state: one change, bit 0).
  entries[0].words[0].store(0x0266'6666);
  entries[0].words[1].store(0x6666'0001);
  entries[0].words[2].store(0);
  entries[0].state.store(4 | 1);
  header->high_water.store(1);
  header->count = 1;
  header->free_hint = 1;
  header->generation.store(1);
  header->ready.store(ofi_dpdk::av::kSharedReady);
  printf("ready\n");
  fflush(stdout);
  pollfd in{STDIN_FILENO, POLLIN, 0};
  char byte;
  if (poll(&in, 1, 60'000) > 0) (void)!read(STDIN_FILENO, &byte, 1);
  shm_unlink(object.c_str());
  return 0;
}

int open_as_victim(const std::string& name, bool read_only) {
  SharedTable::Options options;
  options.read_only = read_only;
  std::unique_ptr<SharedTable> table;
  std::string why;
  const int ret = SharedTable::open(name, options, &table, &why);
  if (ret == -EACCES) {
    printf("refused: %s\n", why.c_str());
    return 3;
  }
  if (ret != 0) {
    printf("error %d: %s\n", ret, why.c_str());
    return 4;
  }
  const auto first = table->read(0);
  printf("opened: index 0 is %s\n", first ? ofi_dpdk::av::to_string(*first).c_str() : "none");
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string verb = argc > 2 ? argv[1] : "";
  if (verb == "make" && argc == 4)
    return make(argv[2], static_cast<mode_t>(strtoul(argv[3], nullptr, 8)));
  if (verb == "open" && (argc == 3 || (argc == 4 && std::string(argv[3]) == "read-only")))
    return open_as_victim(argv[2], argc == 4);
  fprintf(stderr, "usage: %s make NAME MODE | open NAME [read-only]\n", argv[0]);
  return 2;
}
