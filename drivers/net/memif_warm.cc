#include "drivers/net/memif_warm.h"

#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <new>
#include <utility>
#include <vector>

namespace ofi_dpdk::net {
namespace {

// The name net_memif (22.11 and 24.11) gives the memfd of its regions; the
// kernel shows it in /proc/self/maps.  A release that names them otherwise
// is only slower to start, so nothing else depends on the name.
constexpr char kRegionName[] = "/memfd:memif_region_";

using Range = std::pair<uintptr_t, uintptr_t>;

// The writable memif mappings of this process now.
std::vector<Range> memif_mappings() {
  std::vector<Range> found;
  FILE* maps = std::fopen("/proc/self/maps", "re");
  if (maps == nullptr) return found;
  char line[8192];  // a path is at most PATH_MAX
  while (std::fgets(line, sizeof line, maps) != nullptr) {
    unsigned long start = 0, end = 0;
    char perms[5] = {};
    if (std::strstr(line, kRegionName) != nullptr &&
        std::sscanf(line, "%lx-%lx %4s", &start, &end, perms) == 3 && perms[1] == 'w')
      found.emplace_back(start, end);
  }
  std::fclose(maps);
  return found;
}

}  // namespace

size_t write_each_page(void* start, size_t length) {
  const long page = sysconf(_SC_PAGESIZE);
  if (page <= 0) return 0;
  auto* bytes = static_cast<uint8_t*>(start);
  size_t pages = 0;
  for (size_t at = 0; at < length; at += static_cast<size_t>(page), ++pages)
    __atomic_fetch_add(bytes + at, uint8_t{0}, __ATOMIC_RELAXED);
  return pages;
}

size_t warm_new_memif_regions() {
  // Mappings warmed before and still there; one that went is forgotten, so
  // a region mapped again at its place is new.
  static std::mutex lock;
  static std::vector<Range> warmed;
  const std::lock_guard guard(lock);
  size_t pages = 0;
  try {  // a poller calls this: no exception may leave it
    std::vector<Range> now = memif_mappings();
    for (const Range& range : now)
      if (std::find(warmed.begin(), warmed.end(), range) == warmed.end())
        pages += write_each_page(reinterpret_cast<void*>(range.first), range.second - range.first);
    warmed = std::move(now);
  } catch (const std::bad_alloc&) {
  }
  return pages;
}

}  // namespace ofi_dpdk::net
