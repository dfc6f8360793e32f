// regions.h: a domain's registered memory regions by key, as the target
// side of RMA and atomics reads them (target.h).  The provider keeps one
// per domain (drivers/ofi/dpdk_mr.cc adds and removes regions as
// fi_mr_reg and fi_close come) and hands it to each endpoint's Target when
// the endpoint is opened, so a request's key is looked up here, in this
// library, without a call back into the provider.
//
// No lock of its own: the provider changes it only while no request can be
// served (the whole port lock), and requests are served under a lane's lock.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <unordered_map>

namespace ofi_dpdk::remote {

struct Region {
  uint8_t* base = nullptr;  // null: registered with no memory (fi_mr_reg(NULL, len))
  uint64_t length = 0;
  uint64_t access = 0;  // FI_REMOTE_READ and/or FI_REMOTE_WRITE (and more)
  uint64_t offset = 0;  // fi_mr_reg's offset: the remote address of base without virtual addressing
  // What counts the accesses that modify the region (the provider's
  // FI_RMA_EVENT counter), handed to Host::count_remote; may be null.
  void* counter = nullptr;
};

class Regions {
 public:
  // Virtual addressing (FI_MR_VIRT_ADDR): a request names the byte's
  // address; else its offset from the region's start plus its offset.
  explicit Regions(bool virtual_addressing) : virtual_addressing_(virtual_addressing) {}

  // False when the key is taken.
  bool add(uint64_t key, const Region& region) { return regions_.emplace(key, region).second; }
  // The region `key` named, gone from the table (nullopt: none had it).
  std::optional<Region> remove(uint64_t key) {
    const auto it = regions_.find(key);
    if (it == regions_.end()) return std::nullopt;
    const Region region = it->second;
    regions_.erase(it);
    return region;
  }
  bool contains(uint64_t key) const { return regions_.count(key) != 0; }
  // False when no region has the key.
  bool set_counter(uint64_t key, void* counter);

  // The bytes [addr, addr + length) of region `key`, which must grant
  // `access`: 0 with *out and *counter (the region's), or FI_EKEYREJECTED,
  // FI_EACCES, FI_EFAULT (outside the region, or a region with no memory).
  int resolve(uint64_t key, uint64_t addr, uint64_t length, uint64_t access, uint8_t** out,
              void** counter) const;

 private:
  bool virtual_addressing_;
  std::unordered_map<uint64_t, Region> regions_;
};

}  // namespace ofi_dpdk::remote
