#include "lib/eal/eal_bootstrap.h"

#include <pthread.h>
#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_lcore.h>
#include <sched.h>

#include <cerrno>
#include <mutex>

#include "lib/eal/eal_args.h"

namespace ofi_dpdk::eal {
namespace {

std::mutex g_lock;
EalState g_state = EalState::kDown;
std::string g_detail;

// rte_lcore_count() is 0 until rte_eal_init has succeeded in this process:
// the one public sign that the host program already did it.
bool eal_is_up() { return rte_lcore_count() > 0; }

}  // namespace

EalStatus eal_status() {
  std::lock_guard guard(g_lock);
  if (g_state == EalState::kDown && eal_is_up()) {
    g_state = EalState::kHostOwned;
    g_detail = "EAL was initialised by the host program";
  }
  return {g_state, g_detail};
}

int eal_bring_up(const std::vector<std::string>& args) {
  std::lock_guard guard(g_lock);
  if (g_state == EalState::kFailed) return -EINVAL;
  if (g_state != EalState::kDown) return -EALREADY;
  if (eal_is_up()) {
    g_state = EalState::kHostOwned;
    g_detail = "EAL was initialised by the host program";
    return -EALREADY;
  }

  // rte_eal_init reorders and keeps pointers into argv: give it a copy that
  // lives as long as the process.
  static std::vector<std::string> kept_args;
  static std::vector<char*> argv;
  kept_args = args;
  argv.clear();
  for (auto& arg : kept_args) argv.push_back(arg.data());
  argv.push_back(nullptr);

  // EAL pins the calling thread to the main lcore; the host thread is not
  // ours to pin.
  cpu_set_t affinity;
  const bool have_affinity =
      pthread_getaffinity_np(pthread_self(), sizeof(affinity), &affinity) == 0;
  const int ret = rte_eal_init(static_cast<int>(kept_args.size()), argv.data());
  const int saved_errno = rte_errno;
  if (have_affinity) pthread_setaffinity_np(pthread_self(), sizeof(affinity), &affinity);

  g_detail.clear();
  for (const auto& arg : args) g_detail += (g_detail.empty() ? "" : " ") + arg;
  if (ret < 0) {
    g_state = EalState::kFailed;
    g_detail = "rte_eal_init(" + g_detail + ") failed: " + rte_strerror(saved_errno);
    if (!wants_no_huge(args))
      g_detail += " (no hugepages? run usertools/dpdk-fi-setup.sh, or add --no-huge)";
    return saved_errno > 0 ? -saved_errno : -EINVAL;
  }
  g_state = EalState::kOurs;
  return 0;
}

}  // namespace ofi_dpdk::eal
