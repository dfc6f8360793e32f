// dpdk-fi-switch: the primary process of a shared port (drivers/net/
// shared_port.h).  It makes a net_ring device with one queue pair per
// process, publishes its table, and moves frames between the processes
// until it is told to stop or, with --linger-ms, until its last process
// has left.
//
//   dpdk-fi-switch [EAL options] -- [--name NAME] [--processes N]
//                  [--ring-size N] [--ether-type T] [--mbufs N] [--mtu N]
//                  [--linger-ms MS]
//                  [--ready-file PATH [--lock-file PATH]] [--quiet]
//
// --mbufs N, --mtu N: each slot's pool, made here so that processes attach
// without asking us for memory (default 2560 mbufs for 9000-byte frames).
// --linger-ms MS: stop MS after the last process left (or 60 s after the
// start when none ever came) instead of waiting for SIGINT or SIGTERM.
//
// Processes attach as DPDK secondaries of the same --file-prefix
// (--proc-type=secondary) and open the port net_ring_NAME through the
// provider like any other.  They send to each other straight into each
// other's RX queues; the switch moves only what a program hands to a TX
// queue with rte_eth_tx_burst, so it mostly sleeps; usertools/dpdk-fi-run.py --topology shared
// starts the switch when a job's first rank needs it.
#include <rte_eal.h>
#include <rte_lcore.h>

#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <charconv>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "app/common/long_options.h"
#include "drivers/net/shared_switch.h"

namespace {

std::atomic<bool> g_stop{false};
// With --linger-ms: how long a switch no process ever attached to waits.
constexpr uint64_t kNeverUsedMs = 60'000;
// How long EAL's cleanup may take before we leave without it (stop_eal).
constexpr std::chrono::seconds kCleanupLimit{10};

void on_signal(int) {
  g_stop.store(true);
}

struct Options {
  ofi_dpdk::net::SharedSwitch::Config config;
  long linger_ms = -1;  // -1: run until a signal
  std::string ready_file;
  std::string lock_file;
  bool quiet = false;
};

constexpr const char* kUsage =
    "usage: dpdk-fi-switch [EAL options] -- [--name NAME] [--processes N] "
    "[--ring-size N] [--ether-type T] [--mbufs N] [--mtu N] [--linger-ms MS] "
    "[--ready-file PATH [--lock-file PATH]] [--quiet] [--help]\n";

[[noreturn]] void usage_error(const std::string& why) {
  std::fprintf(stderr, "dpdk-fi-switch: %s\n%s", why.c_str(), kUsage);
  std::exit(2);
}

// The option's value, or -1 (with *why) when it is not a number.
long number(std::string_view option, const char* text, long max, std::string* why) {
  if (text == nullptr) {
    *why = std::string(option) + " needs a value";
    return -1;
  }
  long value = 0;
  const std::string_view s(text);
  const int base = s.starts_with("0x") ? 16 : 10;
  const auto [end, err] =
      std::from_chars(s.data() + (base == 16 ? 2 : 0), s.data() + s.size(), value, base);
  if (err != std::errc() || end != s.data() + s.size() || value < 0 || value > max) {
    *why =
        std::string(option) + ": '" + text + "' is not a number from 0 to " + std::to_string(max);
    return -1;
  }
  return value;
}

std::optional<Options> parse(int argc, char** argv, std::string* why) {
  Options options;
  ofi_dpdk::app::read_long_options(
      "dpdk-fi-switch", argc, argv,
      {{"quiet", false},
       {"name", true},
       {"ready-file", true},
       {"lock-file", true},
       {"processes", true},
       {"ring-size", true},
       {"ether-type", true},
       {"mbufs", true},
       {"mtu", true},
       {"linger-ms", true},
       {"help", false}},
      [&](const std::string& name, const char* value) {
        if (!why->empty()) return;  // the first error is the one told
        const std::string option = "--" + name;
        if (name == "help") {
          std::printf("%s", kUsage);
          std::exit(0);
        } else if (name == "quiet") {
          options.quiet = true;
        } else if (name == "name") {
          options.config.name = value;
        } else if (name == "ready-file") {
          options.ready_file = value;
        } else if (name == "lock-file") {
          options.lock_file = value;
        } else if (name == "processes") {
          options.config.slots = static_cast<uint16_t>(number(option, value, 16, why));
          if (options.config.slots == 0 && why->empty()) *why = "--processes: 1 to 16";
        } else if (name == "ring-size") {
          options.config.ring_size = static_cast<uint32_t>(number(option, value, 1 << 20, why));
        } else if (name == "ether-type") {
          options.config.ether_type = static_cast<uint16_t>(number(option, value, 0xFFFF, why));
        } else if (name == "mbufs") {
          options.config.mbufs_per_slot =
              static_cast<uint32_t>(number(option, value, 1 << 20, why));
        } else if (name == "mtu") {
          options.config.mtu = static_cast<uint16_t>(number(option, value, 65000, why));
          if (why->empty() && options.config.mtu < 576) *why = "--mtu: 576 to 65000";
        } else if (name == "linger-ms") {
          options.linger_ms = number(option, value, 86'400'000, why);
        }
      },
      [](const std::string& why) { usage_error(why); });
  if (!why->empty()) return std::nullopt;
  if (!options.lock_file.empty() && options.ready_file.empty()) {
    *why = "--lock-file goes with --ready-file";
    return std::nullopt;
  }
  const std::string& name = options.config.name;
  if (name.empty() || name.size() > 11 ||
      name.find_first_not_of("abcdefghijklmnopqrstuvwxyz0123456789_") != std::string::npos) {
    *why = "--name: 1 to 11 of a-z, 0-9 and _ (DPDK's names are short)";
    return std::nullopt;
  }
  const uint32_t ring = options.config.ring_size;
  if (ring < 64 || (ring & (ring - 1)) != 0) {
    *why = "--ring-size: a power of 2, at least 64";
    return std::nullopt;
  }
  return options;
}

// EAL keeps its hugepage files after the primary exits; the next primary
// of the prefix would clear them, but another prefix never does.
void remove_hugepage_files(const std::string& prefix) {
  std::ifstream mounts("/proc/mounts");
  std::string device, point, type, rest;
  while (mounts >> device >> point >> type && std::getline(mounts, rest)) {
    if (type != "hugetlbfs") continue;
    std::error_code ec;
    for (const auto& entry : std::filesystem::directory_iterator(point, ec)) {
      // <prefix>map_<n> (or <n>_<m>): nothing else, so that another prefix
      // that merely starts with ours keeps its files.
      const std::string file = entry.path().filename().string();
      const std::string head = prefix + "map_";
      if (file.size() > head.size() && file.starts_with(head) &&
          file.find_first_not_of("0123456789_", head.size()) == std::string::npos)
        std::filesystem::remove(entry.path(), ec);
    }
  }
}

// Whether the switch may stop now that no process uses the port.  With
// --lock-file, a launcher (usertools/dpdk-fi-run.py) that found us under
// that lock touched --ready-file for the process it is about to start,
// which has not attached yet: we stay until the touch is --linger-ms old or
// kNeverUsedMs, whichever is longer.  Deciding to stop, we keep the lock
// until we are gone and remove the ready file, so a launcher either sees
// us stay or starts the next switch after we left.  *lock is the held
// lock's descriptor.
// Whether a DPDK secondary process of our file prefix runs: each has an
// "mp_socket_<pid>_..." in the runtime directory.  One attached but not yet
// holding a slot (its fi_domain still to come) keeps us too.
bool secondaries_attached() {
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(rte_eal_get_runtime_dir(), ec)) {
    const std::string file = entry.path().filename().string();
    constexpr std::string_view kSocket = "mp_socket_";
    if (!file.starts_with(kSocket)) continue;
    int32_t pid = 0;
    const char* first = file.data() + kSocket.size();
    const auto [end, err] = std::from_chars(first, file.data() + file.size(), pid);
    if (err == std::errc() && end != first &&
        ofi_dpdk::net::file_owner_alive(pid, entry.path().c_str()))
      return true;
  }
  return false;
}

// The process a file of the runtime directory belongs to: a secondary's
// "mp_socket_<pid>_<n>" and "<array>_<pid>"; 0 for the primary's own.
int32_t runtime_file_pid(std::string_view file) {
  std::string_view digits;
  if (file.starts_with("mp_socket_")) {
    digits = file.substr(10, file.find('_', 10) - 10);
  } else if (const size_t at = file.rfind('_'); at != std::string_view::npos) {
    digits = file.substr(at + 1);
  }
  int32_t pid = 0;
  const auto [end, err] = std::from_chars(digits.data(), digits.data() + digits.size(), pid);
  return err == std::errc() && end == digits.data() + digits.size() ? pid : 0;
}

// Each secondary leaves files in EAL's runtime directory (a memory file
// system) when it exits, about 1.5 MiB: remove those of processes that are
// gone, so a switch serving many short jobs does not pile them up.
void remove_files_of_gone_secondaries() {
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(rte_eal_get_runtime_dir(), ec)) {
    const int32_t pid = runtime_file_pid(entry.path().filename().string());
    if (pid > 0 && !ofi_dpdk::net::file_owner_alive(pid, entry.path().c_str()))
      std::filesystem::remove(entry.path(), ec);
  }
}

// EAL's cleanup, and what it leaves: the hugepage files and the runtime
// directory (a memory file system), which no later primary of another
// prefix would clear.  Only a primary's, and the directory only when no
// secondary of ours still runs: its mp socket there is what tells a
// launcher not to start a new switch under it.  (A switch started as a
// secondary of a running one leaves everything to that one.)
void stop_eal(const std::string& prefix) {
  const bool primary = rte_eal_process_type() == RTE_PROC_PRIMARY;
  const bool attached = primary && secondaries_attached();
  const std::string runtime_dir = rte_eal_get_runtime_dir();
  if (attached) remove_files_of_gone_secondaries();
  auto remove_files = [&] {
    if (!primary) return;
    remove_hugepage_files(prefix);
    if (attached) return;
    std::error_code ec;
    std::filesystem::remove_all(runtime_dir, ec);
  };
  // rte_eal_cleanup takes EAL's memory lock, which lives in shared memory:
  // a secondary killed while it held it (a rank killed during its EAL
  // start-up) leaves it held, and the cleanup would spin on it forever, a
  // core at 100 % with no ready file left to find us by (seen once).  Give
  // it a while, then leave without it.
  std::mutex lock;
  std::condition_variable done_changed;
  bool done = false;
  std::thread watchdog([&] {
    std::unique_lock guard(lock);
    if (done_changed.wait_for(guard, kCleanupLimit, [&] { return done; })) return;
    std::fprintf(stderr,
                 "dpdk-fi-switch: EAL's cleanup did not finish in %lld s (a process "
                 "died holding its memory lock?): leaving without it\n",
                 static_cast<long long>(kCleanupLimit.count()));
    remove_files();
    std::fflush(nullptr);  // (_Exit flushes nothing: the report above included)
    std::_Exit(1);
  });
  rte_eal_cleanup();
  {
    std::lock_guard guard(lock);
    done = true;
  }
  done_changed.notify_one();
  watchdog.join();
  remove_files();
}

bool busy(const ofi_dpdk::net::SharedSwitch& sw) {
  return sw.in_use() || secondaries_attached();
}

bool may_stop(const Options& options, const ofi_dpdk::net::SharedSwitch& sw, int* lock) {
  if (options.lock_file.empty()) return true;
  const int fd = open(options.lock_file.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) return true;
  if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
    close(fd);
    return false;  // a launcher is looking at us
  }
  std::error_code ec;
  const auto touched = std::filesystem::last_write_time(options.ready_file, ec);
  const auto age = std::filesystem::file_time_type::clock::now() - touched;
  const auto grace = std::chrono::milliseconds(std::max<long>(options.linger_ms, kNeverUsedMs));
  if (busy(sw) || (!ec && age < grace)) {
    close(fd);  // (unlocks)
    return false;
  }
  std::filesystem::remove(options.ready_file, ec);
  *lock = fd;
  return true;
}

std::string file_prefix(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg = argv[i];
    if (arg == "--file-prefix" && i + 1 < argc) return argv[i + 1];
    if (arg.starts_with("--file-prefix=")) return std::string(arg.substr(14));
  }
  return "rte";
}

uint64_t now_ms() {
  return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::milliseconds>(
                                   std::chrono::steady_clock::now().time_since_epoch())
                                   .count());
}

}  // namespace

int main(int argc, char** argv) {
  const std::string prefix = file_prefix(argc, argv);
  const int eal_args = rte_eal_init(argc, argv);
  if (eal_args < 0) {
    std::fprintf(stderr, "dpdk-fi-switch: rte_eal_init failed (see above)\n");
    return 1;
  }
  // rte_eal_init consumed its options and the "--", and put the program's
  // name where our options start.
  const int rest = argc - eal_args - 1;
  char** rest_argv = argv + eal_args + 1;
  std::string why;
  const auto parsed = parse(rest, rest_argv, &why);
  if (!parsed) {
    stop_eal(prefix);
    usage_error(why);
  }
  const Options& options = *parsed;
  std::string error;
  std::unique_ptr<ofi_dpdk::net::SharedSwitch> sw(
      ofi_dpdk::net::SharedSwitch::create(options.config, &error));
  if (!sw) {
    std::fprintf(stderr, "dpdk-fi-switch: %s\n", error.c_str());
    stop_eal(prefix);
    return 1;
  }
  signal(SIGINT, on_signal);
  signal(SIGTERM, on_signal);
  const auto& table = sw->table();
  // The ready file first: a launcher takes a banner without it for a
  // failure.
  if (!options.ready_file.empty()) {
    // Whole or not at all: a reader finds our pid in it.
    const std::string part = options.ready_file + ".part";
    {
      std::ofstream ready(part);
      ready << getpid() << " " << sw->layout().slots << "\n";
    }
    std::filesystem::rename(part, options.ready_file);
  }
  if (!options.quiet)
    std::printf(
        "dpdk-fi-switch: port %s (id %u), %u processes of %u endpoint queues each, "
        "file prefix %s\n",
        sw->port_name().c_str(), sw->port_id(), sw->layout().slots, sw->layout().queues_per_slot,
        prefix.c_str());
  std::fflush(stdout);

  // Poll while frames flow; when idle, give the CPU to the processes it
  // serves (a small host has fewer cores than pollers), then sleep.  Every
  // 50 ms, free the slots of processes that died, and see whether we may
  // stop.
  prctl(PR_SET_TIMERSLACK, 1UL);
  uint64_t passes = 0;
  uint64_t idle_passes = 0;
  bool ever_used = false;
  uint64_t unused_since = now_ms();
  uint64_t next_housekeeping = 0;
  uint64_t housekeeping = 0;
  int stop_lock = -1;  // held until we are gone: a launcher waits for that
  while (!g_stop.load(std::memory_order_relaxed)) {
    const bool moved = sw->forward() != 0;
    idle_passes = moved ? 0 : idle_passes + 1;
    // (Every pass once we sleep between them: they are few then.)
    if (((++passes & 255) == 0 || idle_passes >= 10'000) && now_ms() >= next_housekeeping) {
      next_housekeeping = now_ms() + 50;
      sw->reap_dead_owners();
      if (++housekeeping % 20 == 0) remove_files_of_gone_secondaries();
      if (options.linger_ms >= 0) {
        if (busy(*sw)) {
          ever_used = true;
          unused_since = now_ms();
        } else {
          const uint64_t wait_ms =
              ever_used ? static_cast<uint64_t>(options.linger_ms) : kNeverUsedMs;
          if (now_ms() - unused_since >= wait_ms && may_stop(options, *sw, &stop_lock)) break;
        }
      }
    }
    if (moved || idle_passes < 256) continue;
    // Processes send to each other directly; we only move what a program
    // puts on a TX queue itself, so idle is our usual state: sleep long
    // enough not to preempt the processes polling our CPU.
    if (idle_passes < 10'000) {
      sched_yield();
    } else {
      const timespec pause{0, 1'000'000};
      nanosleep(&pause, nullptr);
    }
  }
  if (busy(*sw))
    std::fprintf(stderr,
                 "dpdk-fi-switch: stopping while processes still use the port: "
                 "they can no longer attach, open or take over slots\n");
  if (!options.quiet)
    std::printf(
        "dpdk-fi-switch: forwarded %lu frames from TX queues; dropped %lu for no "
        "process, %lu on a full queue, %lu over a slot's share, %lu not ours\n",
        static_cast<unsigned long>(table.forwarded.load()),
        static_cast<unsigned long>(table.dropped_no_owner.load()),
        static_cast<unsigned long>(table.dropped_full.load()),
        static_cast<unsigned long>(table.dropped_share.load()),
        static_cast<unsigned long>(table.dropped_foreign.load()));
  if (!options.ready_file.empty() && stop_lock < 0) std::filesystem::remove(options.ready_file);
  sw.reset();
  stop_eal(prefix);
  return 0;
}
