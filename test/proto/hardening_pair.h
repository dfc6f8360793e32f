// hardening_pair.h: what the hardening tests (test_hardening*.cc) share: the
// two MACs, time units, operation contexts and the engine pair
// (engine_pair.h).  Header-only.
#pragma once

#include <cstdint>

#include "test/proto/engine_pair.h"
#include "test/proto/lossy_link.h"

namespace ofi_dpdk::proto {

using sim::LossyLink;

inline constexpr uint8_t kMacA[6] = {0x02, 0, 0, 0, 0, 0x0A};
inline constexpr uint8_t kMacB[6] = {0x02, 0, 0, 0, 0, 0x0B};
inline constexpr uint64_t kMs = 1'000'000;
inline constexpr uint64_t kSec = 1'000'000'000;

inline void* ctx(uintptr_t n) {
  return reinterpret_cast<void*>(n);
}

using sim::Pair;

}  // namespace ofi_dpdk::proto
