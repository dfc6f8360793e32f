#include "drivers/net/memif_warm.h"

#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstring>

namespace ofi_dpdk::net {
namespace {

// The name net_memif (22.11 and 24.11) gives the memfd of its regions; the
// kernel shows it in /proc/self/maps.  A release that names them otherwise
// is only slower to start, so nothing else depends on the name.
constexpr char kRegionName[] = "/memfd:memif_region_";

}  // namespace

size_t warm_memif_regions() {
  FILE* maps = std::fopen("/proc/self/maps", "re");
  if (maps == nullptr) return 0;
  const long page = sysconf(_SC_PAGESIZE);
  size_t pages = 0;
  char line[8192];  // a path is at most PATH_MAX
  while (std::fgets(line, sizeof line, maps) != nullptr) {
    unsigned long start = 0, end = 0;
    char perms[5] = {};
    if (std::strstr(line, kRegionName) == nullptr ||
        std::sscanf(line, "%lx-%lx %4s", &start, &end, perms) != 3 || perms[1] != 'w' ||
        page <= 0)
      continue;
    for (uintptr_t at = start; at < end; at += static_cast<uintptr_t>(page)) {
      __atomic_fetch_add(reinterpret_cast<uint8_t*>(at), uint8_t{0}, __ATOMIC_RELAXED);
      ++pages;
    }
  }
  std::fclose(maps);
  return pages;
}

}  // namespace ofi_dpdk::net
