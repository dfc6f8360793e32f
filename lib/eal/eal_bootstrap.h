// eal_bootstrap.h: bringing DPDK's EAL up exactly once per process, whoever
// asks first: the host program (a DPDK application), fi_dpdk_eal_init(), or
// the provider on first use with FI_DPDK_EAL_ARGS.
#pragma once

#include <string>
#include <vector>

namespace ofi_dpdk::eal {

enum class EalState {
  kDown,       // nobody initialised EAL yet
  kOurs,       // we initialised it
  kHostOwned,  // the host program called rte_eal_init itself
  kFailed,     // our rte_eal_init failed: EAL cannot be retried in this process
  kForked,     // EAL came up in the process this one was forked from: DPDK
               // does not survive fork (its threads, its queues are the parent's)
};

struct EalStatus {
  EalState state;
  std::string detail;  // why it failed, or what was passed
};

// Returns the current state, noticing an EAL the host program brought up.
EalStatus eal_status();

// Initialises EAL with `args` (args[0] is a program name) unless it is up
// already.  Keeps the calling thread's CPU affinity, and hands EAL a copy of
// the arguments.  Returns 0 when EAL is up afterwards (now or before),
// -EALREADY when it was up before this call, or a negative errno after a
// failed rte_eal_init, with the reason in eal_status().detail.  With
// `quiet`, what EAL prints while it starts is held back: on success it goes
// to stderr as before, on failure only the lines that say what was wrong
// reach detail (a program given bad FI_DPDK_EAL_ARGS must not find DPDK's
// usage text on its stdout).
int eal_bring_up(const std::vector<std::string>& args, bool quiet = false);

}  // namespace ofi_dpdk::eal
