// unmap_guard_policy.h: whether net_memif's unmaps are guarded
// (unmap_guard.h), from FI_DPDK_MEMIF_UNMAP_GUARD and the DPDK release.
//
// The guard changes every munmap the driver makes, process-wide, and leans
// on how the driver tears a connection down; it is worth that only on
// releases whose driver is known to unmap under a burst.  Those are the
// ones the race was seen on (doc/upstream/README.md): 22.11 (22.11.11,
// Debian 12) and 24.11 (Debian 13).  Another release may have the fix, or
// a driver the redirection does not fit: there the guard stays off unless
// asked for.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace ofi_dpdk::net {

// FI_DPDK_MEMIF_UNMAP_GUARD.
enum class UnmapGuardRequest : uint8_t {
  kAuto,  // on for the releases the race was seen on, off for the others
  kOn,    // on for any release
  kOff,   // off for any release
};
// "auto", "on" or "off" (also "1", "0", "yes", "no"); nullopt for anything else.
std::optional<UnmapGuardRequest> parse_unmap_guard_request(std::string_view text);

struct DpdkRelease {
  unsigned year = 0;   // 22 for 22.11.11
  unsigned month = 0;  // 11
  unsigned minor = 0;  // 11
};
// "DPDK 22.11.11" (rte_version(), with an optional "-rc1" suffix);
// nullopt when it is not of that form.
std::optional<DpdkRelease> parse_dpdk_version(std::string_view text);
std::string to_string(const DpdkRelease& release);
// Whether net_memif of this release unmaps its rings under a burst.
bool memif_unmap_race_seen_on(const DpdkRelease& release);

struct UnmapGuardChoice {
  bool guard = false;
  // The choice leaves a known race open (off on a release that has it):
  // worth a warning rather than an info line.
  bool warn = false;
  std::string why;  // for the log: the choice and its reason
};
// Decides for the release the program runs with (`running`, parsed from
// rte_version()); `built` is the release the provider was compiled against,
// named in the reason when it differs (a program may run with a newer
// release of the same ABI).
UnmapGuardChoice choose_memif_unmap_guard(UnmapGuardRequest request,
                                          std::optional<DpdkRelease> running,
                                          const DpdkRelease& built);
// choose_memif_unmap_guard for the DPDK of this process.
UnmapGuardChoice choose_memif_unmap_guard(UnmapGuardRequest request);

}  // namespace ofi_dpdk::net
