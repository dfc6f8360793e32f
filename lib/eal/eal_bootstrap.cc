#include "lib/eal/eal_bootstrap.h"

#include <pthread.h>
#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_lcore.h>
#include <sched.h>

#include <fcntl.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <sstream>

#include "lib/eal/eal_args.h"
#include "lib/eal/tap_signal_guard.h"

namespace ofi_dpdk::eal {
namespace {

std::mutex g_lock;
EalState g_state = EalState::kDown;
std::string g_detail;
pid_t g_eal_pid = 0;  // the process EAL came up in

// A child forked after EAL came up inherits our state, not a working EAL.
EalStatus current() {
  if ((g_state == EalState::kOurs || g_state == EalState::kHostOwned) && g_eal_pid != getpid())
    return {EalState::kForked, "EAL came up in process " + std::to_string(g_eal_pid) +
                                   ", which this process was forked from; DPDK does not "
                                   "survive fork: fork before the first fi_* call"};
  return {g_state, g_detail};
}

// rte_lcore_count() is 0 until rte_eal_init has succeeded in this process:
// the one public sign that the host program already did it.
bool eal_is_up() {
  return rte_lcore_count() > 0;
}

// What rte_eal_init writes to the process's stdout (its usage text, on
// bad arguments) and stderr (its log), each held in a memory file while it
// runs.  Other threads writing at that moment are caught too: EAL starts
// once, early.
class OutputCapture {
 public:
  OutputCapture() {
    std::fflush(stdout);
    std::fflush(stderr);
    out_ = memfd_create("eal-stdout", MFD_CLOEXEC);
    err_ = memfd_create("eal-stderr", MFD_CLOEXEC);
    if (out_ < 0 || err_ < 0) return;
    saved_out_ = dup(STDOUT_FILENO);
    saved_err_ = dup(STDERR_FILENO);
    if (saved_out_ < 0 || saved_err_ < 0 || dup2(out_, STDOUT_FILENO) < 0 ||
        dup2(err_, STDERR_FILENO) < 0)
      restore();
  }
  ~OutputCapture() {
    restore();
    for (int fd : {out_, err_})
      if (fd >= 0) close(fd);
  }
  OutputCapture(const OutputCapture&) = delete;
  OutputCapture& operator=(const OutputCapture&) = delete;

  // Puts stdout and stderr back; returns what went to stderr meanwhile
  // (what went to stdout is dropped).
  std::string finish() {
    restore();
    std::string text;
    if (err_ < 0) return text;
    char buffer[4096];
    ssize_t got;
    off_t at = 0;
    while ((got = pread(err_, buffer, sizeof(buffer), at)) > 0) {
      text.append(buffer, static_cast<size_t>(got));
      at += got;
    }
    return text;
  }

 private:
  void restore() {
    std::fflush(stdout);
    std::fflush(stderr);
    if (saved_out_ >= 0) {
      dup2(saved_out_, STDOUT_FILENO);
      close(saved_out_);
      saved_out_ = -1;
    }
    if (saved_err_ >= 0) {
      dup2(saved_err_, STDERR_FILENO);
      close(saved_err_);
      saved_err_ = -1;
    }
  }

  int out_ = -1;
  int err_ = -1;
  int saved_out_ = -1;
  int saved_err_ = -1;
};

// The lines of EAL's output that say what was wrong, joined: its complaint
// about an option, what it could not do, and its fatal verdict, not the
// usage text.
std::string complaints(const std::string& output) {
  std::istringstream lines(output);
  std::string line, found;
  while (std::getline(lines, line)) {
    const bool telling =
        line.find("unrecognized option") != std::string::npos ||
        line.find("invalid") != std::string::npos || line.find("Invalid") != std::string::npos ||
        line.find("FATAL") != std::string::npos ||
        line.find("requires an argument") != std::string::npos ||
        line.find("Error") != std::string::npos ||
        // why memory or a secondary's attach failed
        line.find("Cannot") != std::string::npos || line.find("Could not") != std::string::npos ||
        line.find("couldn't") != std::string::npos || line.find("ailed") != std::string::npos;
    if (!telling || found.find(line) != std::string::npos) continue;
    found += (found.empty() ? "" : "; ") + line;
  }
  return found;
}

// DPDK secondaries of one primary start one at a time.  Several starting at
// once (the ranks of an MPI job) now and then fail in DPDK 22.11, one in
// about 80 8-rank MPI jobs: "couldn't lock .../fbarray_memseg-..._PID",
// "Cannot init memory".  They take turns on a lock file in the primary's
// runtime directory; one that waits 30 s goes ahead.  Returns the
// descriptor holding the turn, or -1.
int take_start_up_turn(const std::vector<std::string>& args) {
  if (option_value(args, "--proc-type", "") != "secondary") return -1;
  const std::string prefix = option_value(args, "--file-prefix", "rte");
  if (prefix.empty() || prefix.find('/') != std::string::npos) return -1;
  std::string base = "/var/run/dpdk";
  if (getuid() != 0) {
    const char* runtime = std::getenv("XDG_RUNTIME_DIR");
    base = std::string(runtime != nullptr ? runtime : "/tmp") + "/dpdk";
  }
  const std::string path = base + "/" + prefix + "/ofi-dpdk-start-up.lock";
  const int fd = open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  if (fd < 0) return -1;  // no primary's directory: EAL will say so
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (flock(fd, LOCK_EX | LOCK_NB) != 0) {
    if (errno != EWOULDBLOCK || std::chrono::steady_clock::now() >= give_up) {
      close(fd);
      return -1;
    }
    usleep(5000);
  }
  return fd;
}

}  // namespace

EalStatus eal_status() {
  std::lock_guard guard(g_lock);
  if (g_state == EalState::kDown && eal_is_up()) {
    g_state = EalState::kHostOwned;
    g_detail = "EAL was initialised by the host program";
    g_eal_pid = getpid();
  }
  return current();
}

int eal_bring_up(const std::vector<std::string>& args, bool quiet) {
  std::lock_guard guard(g_lock);
  if (g_state == EalState::kFailed || current().state == EalState::kForked) return -EINVAL;
  if (g_state != EalState::kDown) return -EALREADY;
  if (eal_is_up()) {
    g_state = EalState::kHostOwned;
    g_detail = "EAL was initialised by the host program";
    g_eal_pid = getpid();
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
  std::string output;
  int ret;
  {
    // (The turn first: the host's other threads may print while we wait.)
    const int turn = take_start_up_turn(kept_args);
    std::unique_ptr<OutputCapture> capture(quiet ? new OutputCapture() : nullptr);
    const TapSignalGuard tap_signals;  // a --vdev=net_tap port opens its first queue here
    ret = rte_eal_init(static_cast<int>(kept_args.size()), argv.data());
    if (capture) output = capture->finish();
    if (turn >= 0) close(turn);  // (unlocks)
  }
  const int saved_errno = rte_errno;
  // What EAL says on success stays on stderr, where it always went.
  if (ret >= 0 && !output.empty()) {
    if (::write(STDERR_FILENO, output.data(), output.size()) < 0) {
    }
  }
  if (have_affinity) pthread_setaffinity_np(pthread_self(), sizeof(affinity), &affinity);

  g_detail.clear();
  for (const auto& arg : args) g_detail += (g_detail.empty() ? "" : " ") + arg;
  if (ret < 0) {
    g_state = EalState::kFailed;
    g_detail = "rte_eal_init(" + g_detail + ") failed: " + rte_strerror(saved_errno);
    if (const std::string why = complaints(output); !why.empty())
      g_detail += " (" + why + ")";
    else if (!wants_no_huge(args))
      g_detail += " (no hugepages? run usertools/dpdk-fi-setup.sh, or add --no-huge)";
    return saved_errno > 0 ? -saved_errno : -EINVAL;
  }
  g_state = EalState::kOurs;
  g_eal_pid = getpid();
  return 0;
}

}  // namespace ofi_dpdk::eal
