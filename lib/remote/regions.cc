// regions.cc: a request's key, address and length checked against the
// registered regions (regions.h).
#include "lib/remote/regions.h"

#include <rdma/fi_errno.h>

namespace ofi_dpdk::remote {

bool Regions::set_counter(uint64_t key, void* counter) {
  auto it = regions_.find(key);
  if (it == regions_.end()) return false;
  it->second.counter = counter;
  return true;
}

int Regions::resolve(uint64_t key, uint64_t addr, uint64_t length, uint64_t access, uint8_t** out,
                     void** counter) const {
  auto it = regions_.find(key);
  if (it == regions_.end()) return FI_EKEYREJECTED;
  const Region& r = it->second;
  if ((r.access & access) != access) return FI_EACCES;
  // A region registered with bytes at address 0 (fi_mr_reg(NULL, len),
  // which libfabric lets pass, as shm and tcp do) has no memory to reach:
  // an access with bytes fails, not the target process.
  if (r.base == nullptr && length != 0) return FI_EFAULT;
  const auto base = reinterpret_cast<uint64_t>(r.base);
  if (!virtual_addressing_ && addr < r.offset) return FI_EFAULT;
  const uint64_t start = virtual_addressing_ ? addr : base + (addr - r.offset);
  if (start < base || start - base > r.length || length > r.length - (start - base))
    return FI_EFAULT;
  *out = reinterpret_cast<uint8_t*>(start);
  *counter = r.counter;
  return 0;
}

}  // namespace ofi_dpdk::remote
