// adversary: forged frames against a provider process (the target) while a
// live pair (the target and its peer, dpdk-fi-bench fetch-adds over
// net_af_packet on a veth pair) runs beside it.  The adversary sits on the
// peer's end of the pair, so what it sends reaches the target as if from
// the wire, and it sees everything the target sends.
//
//   adversary --iface IFACE --rendezvous DIR --target-pid PID
//             [--cases a,b,...] [--seed N] [--max-peers N]
//             [--unexpected-bytes N] [--peer-timeout-ms N]
//             [--response-bytes N] [--region-bytes N]
//             [--rss-limit-kb N] [--progress-floor F]
//
// The target's names are DIR/server, the peer's DIR/client (the bench's
// rendezvous files; the server's also names its region, address and key).
// --max-peers, --unexpected-bytes, --peer-timeout-ms and --response-bytes
// are what the target was started with (FI_DPDK_*); --region-bytes is the
// size of its region.  The cases after "wrong_keys" play a peer that
// completed its handshake and then misbehaves (the hardening issue's second
// round): segments parked ahead of a gap, reads whose answers it never
// acknowledges, remote CQ data, and a replay of an evicted connection's
// request.
// Each case reports what the target did, its resident memory growth and
// the live pair's progress (frames the peer sent per second, against the
// rate before the first case); it fails when the target misbehaves, grows
// by more than --rss-limit-kb, or the pair stops (or falls below
// --progress-floor of its rate, 0 unless given).  Exit 0 when every case passed, 1 otherwise, 2 on
// set-up errors.
//
// What the program shares with its cases is in adversary.h; the cases are
// in adversary_forgeries.cc, adversary_budgets.cc and adversary_parking.cc.
#include <algorithm>
#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "test/adversarial/adversary.h"
#include "test/adversarial/forge.h"
#include "test/adversarial/injector.h"
#include "test/adversarial/raw_link.h"

namespace ofi_dpdk::adversarial {
namespace {

const std::vector<std::string> kAllCases = {
    "stranger_flood",    "forged_hello",   "forged_reset",    "pinned_budget",
    "unacked_responses", "wrong_keys",     "handshake_flood", "parked_segments",
    "response_memory",   "remote_cq_data", "evicted_replay"};
// Cases run only when named (--cases): they need a target set up for them
// (test_lockout.sh).
const std::vector<std::string> kNamedOnlyCases = {"held_lockout", "on_path_forgeries",
                                                  "out_of_window_resets"};

[[noreturn]] void setup_error(const std::string& what) {
  std::fprintf(stderr, "adversary: %s\n", what.c_str());
  std::exit(2);
}

Options parse(int argc, char** argv) {
  Options o;
  o.cases = kAllCases;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) setup_error(arg + " needs a value");
      return argv[++i];
    };
    if (arg == "--iface")
      o.iface = value();
    else if (arg == "--rendezvous")
      o.rendezvous = value();
    else if (arg == "--target-pid")
      o.target_pid = std::stol(value());
    else if (arg == "--seed")
      o.seed = std::stoull(value());
    else if (arg == "--max-peers")
      o.max_peers = std::stoull(value());
    else if (arg == "--unexpected-bytes")
      o.unexpected_bytes = std::stoull(value());
    else if (arg == "--peer-timeout-ms")
      o.peer_timeout_ms = std::stoull(value());
    else if (arg == "--response-bytes")
      o.response_bytes = std::stoull(value());
    else if (arg == "--region-bytes")
      o.region_bytes = std::stoull(value());
    else if (arg == "--rss-limit-kb")
      o.rss_limit_kb = std::stol(value());
    else if (arg == "--progress-floor")
      o.progress_floor = std::stod(value());
    else if (arg == "--stations")
      o.stations = std::stoull(value());
    else if (arg == "--quiet-ms")
      o.quiet_ms = std::stoull(value());
    else if (arg == "--cases") {
      o.cases.clear();
      std::stringstream list(value());
      for (std::string name; std::getline(list, name, ',');) {
        if (std::find(kAllCases.begin(), kAllCases.end(), name) == kAllCases.end() &&
            std::find(kNamedOnlyCases.begin(), kNamedOnlyCases.end(), name) ==
                kNamedOnlyCases.end())
          setup_error("no case " + name);
        o.cases.push_back(name);
      }
    } else {
      setup_error("unknown option " + arg);
    }
  }
  if (o.iface.empty() || o.rendezvous.empty() || o.target_pid <= 0)
    setup_error("--iface, --rendezvous and --target-pid are required");
  return o;
}

Station read_station(const std::string& path) {
  std::ifstream in(path);
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("region ", 0) == 0) continue;
    if (auto station = station_from_name(line)) return *station;
  }
  setup_error("no endpoint name in " + path);
}

Region read_region(const std::string& path) {
  std::ifstream in(path);
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("region ", 0) != 0) continue;
    std::istringstream fields(line.substr(7));
    Region region;
    fields >> region.address >> region.key;
    return region;
  }
  setup_error("no region line in " + path);
}

long resident_kb(long pid) {
  std::ifstream status("/proc/" + std::to_string(pid) + "/status");
  for (std::string line; std::getline(status, line);)
    if (line.rfind("VmRSS:", 0) == 0) return std::stol(line.substr(6));
  return -1;  // the target is gone
}

}  // namespace

double seconds_since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

uint64_t interface_counter(const std::string& iface, const char* name) {
  std::ifstream in("/sys/class/net/" + iface + "/statistics/" + name);
  uint64_t value = 0;
  in >> value;
  return value;
}

bool to_station(const proto::DecodedFrame& f, const Station& s) {
  return std::equal(s.mac.begin(), s.mac.end(), f.dst_mac) && f.header.dst_queue == s.queue;
}

namespace {

// Frames the live pair's peer must send during each case (its pace is
// thousands a second even on a busy machine).
constexpr uint64_t kMinPairFrames = 50;

int run(const Options& o) {
  const Station target = read_station(o.rendezvous + "/server");
  const Station peer = read_station(o.rendezvous + "/client");
  RawLink link(o.iface, wire::kDefaultEtherType, target_filter(target.mac, peer.mac));
  Injector injector(link, target, peer, o.seed);
  Adversary adversary(o, injector, read_region(o.rendezvous + "/server"));
  std::printf("target %s/%u, peer %s/%u, on %s\n", mac_text(target.mac).c_str(), target.queue,
              mac_text(peer.mac).c_str(), peer.queue, o.iface.c_str());

  // The pair's pace before anything: frames the peer sends per second, once
  // it runs (its first seconds may go to bringing the link up on a busy
  // machine).
  double baseline = 0;
  for (int attempt = 0; attempt < 30 && baseline < 100; ++attempt) {
    const uint64_t frames_before = adversary.pair_frames();
    const auto started = Clock::now();
    adversary.listen(std::chrono::seconds(1));
    baseline = (adversary.pair_frames() - frames_before) / seconds_since(started);
  }
  std::printf("live pair: %.0f frames/s from the peer; target resident %ld kB\n", baseline,
              resident_kb(o.target_pid));
  if (baseline < 100) {
    std::printf("FAIL: the live pair is not running\n");
    return 1;
  }

  int failed = 0;
  for (const std::string& name : o.cases) {
    const long rss_before = resident_kb(o.target_pid);
    const uint64_t pair_before = adversary.pair_frames();
    const auto case_started = Clock::now();
    Finding finding;
    try {
      finding = adversary.run(name);
    } catch (const std::exception& e) {
      finding.fail(e.what());
    }
    // The pair's progress over at least a second, and the target's memory
    // once it has worked through what was sent.
    const double elapsed = seconds_since(case_started);
    if (elapsed < 1.0)
      adversary.listen(std::chrono::duration_cast<Clock::duration>(
          std::chrono::duration<double>(1.0 - elapsed)));
    adversary.listen(milliseconds(200));
    const double rate = (adversary.pair_frames() - pair_before) / seconds_since(case_started);
    const long rss_after = resident_kb(o.target_pid);
    const long grown = rss_after - rss_before;
    if (rss_after < 0)
      finding.fail("the target process is gone");
    else if (grown > o.rss_limit_kb)
      finding.fail("the target grew by " + std::to_string(grown) + " kB");
    if (adversary.pair_frames() - pair_before < kMinPairFrames)
      finding.fail("the live pair stopped");
    else if (rate < o.progress_floor * baseline)
      finding.fail("the live pair slowed to " +
                   std::to_string(static_cast<int>(100 * rate / baseline)) + " %");
    std::printf("%s %s: %s; target %+ld kB; live pair at %.0f %% of its rate\n",
                finding.ok ? "ok  " : "FAIL", name.c_str(), finding.detail.c_str(), grown,
                100 * rate / baseline);
    std::fflush(stdout);
    failed += !finding.ok;
  }
  return failed == 0 ? 0 : 1;
}

}  // namespace
}  // namespace ofi_dpdk::adversarial

int main(int argc, char** argv) {
  const auto options = ofi_dpdk::adversarial::parse(argc, argv);
  try {
    return ofi_dpdk::adversarial::run(options);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "adversary: %s\n", e.what());
    return 2;
  }
}
