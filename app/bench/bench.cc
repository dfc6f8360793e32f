// dpdk-fi-bench: the benchmark.  Two processes (a server and a client) or
// one process with both roles' endpoints on one port run a pattern over a
// libfabric provider (dpdk by default) and print one JSON object:
//
//   latency    pingpong of --size bytes; half round trip percentiles
//   bandwidth  client streams --count messages of --size with --window sends
//              in flight; goodput and message rate (--size 8: the rate)
//   tagged     the same with fi_tsend / fi_trecv
//   mixed      like bandwidth with sizes from 1 B to --max-size, mostly
//              small; every message is checked: once, in order, byte-exact
//   fanin      --senders client endpoints stream into one server endpoint;
//              per-sender goodput and Jain's fairness index
//   write      client does --count fi_write of --size into a region the
//              server registered, --window in flight; goodput
//   read       the same with fi_read (every read's bytes are checked)
//   atomic     --senders endpoints (one with two processes) each do --count
//              fi_fetch_atomic FI_SUM of 1 on one uint64 at the server
//              (at the start of a region of --size bytes, at least 8),
//              --window at a time: op latency (window 1) and rate; checks
//              that the fetched values are exactly 0 .. total-1, each once
//
//   dpdk-fi-bench [EAL args] -- --role server|client|both --pattern P
//       [--provider NAME] [--size B] [--max-size B] [--count N] [--window W]
//       [--senders K] [--threads N] [--rendezvous DIR] [--timeout S] [--seed N]
//       [--interval MS]
//
// --interval MS (bandwidth, tagged, mixed, fanin): the receiving side
// reports each sender's goodput in every MS from the first arrival, as
// "sender_series_MBps" (one list per sender): how shares move over a run
// (usertools/dpdk-fi-bottleneck.py draws them).
//
// --threads N (with --role both, --pattern bandwidth or tagged): N
// threads in this one process, each streaming between its own two
// endpoints (and their CQs) on one domain asked for FI_THREAD_COMPLETION;
// the report sums them over the slowest thread's time.  The rate of N
// threads against one's is how the provider scales with cores.
//
// With --provider other than dpdk (shm, "tcp;ofi_rxm", ...) no EAL starts:
// give no EAL arguments, only the program's own (after "--" or not).
// Server and client find each other through files in --rendezvous (each
// writes its endpoint names, then waits for the other's).  Exit status: 0
// when every check passed, 1 on a data mismatch, loss, duplicate or error
// completion, 2 on bad arguments or set-up failure.
#include <fi_dpdk.h>
#include <rdma/fi_errno.h>

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "app/bench/bench.h"
#include "app/common/long_options.h"
#include "app/common/option_number.h"
#include "app/common/provider_path.h"

namespace ofi_dpdk::bench {
namespace {

constexpr const char* kUsage =
    "usage: dpdk-fi-bench [EAL args] -- --role server|client|both --pattern P\n"
    "    [--provider NAME] [--size B] [--max-size B] [--count N] [--window W]\n"
    "    [--senders K] [--threads N] [--rendezvous DIR] [--timeout S] [--seed N]\n"
    "    [--interval MS]\n"
    "patterns: latency bandwidth tagged mixed fanin write read atomic\n";

Options parse(int argc, char** argv) {
  Options o;
  // (A value that is not a number is a usage error, exit status 2.)
  auto number = [&]<typename T>(const std::string& name, const char* text, T* out) {
    const std::optional<T> parsed = app::option_number<T>(text);
    if (!parsed) fail_setup("option --" + name + ": not a number: " + text);
    *out = *parsed;
  };
  app::read_long_options(
      "dpdk-fi-bench", argc, argv,
      {{"provider", true},
       {"role", true},
       {"pattern", true},
       {"size", true},
       {"max-size", true},
       {"count", true},
       {"window", true},
       {"senders", true},
       {"rendezvous", true},
       {"timeout", true},
       {"seed", true},
       {"threads", true},
       {"interval", true},
       {"help", false}},
      [&](const std::string& name, const char* value) {
        if (name == "help") {
          std::fputs(kUsage, stdout);
          std::exit(0);
        }
        if (name == "provider")
          o.provider = value;
        else if (name == "role")
          o.role = value;
        else if (name == "pattern")
          o.pattern = value;
        else if (name == "size")
          number(name, value, &o.size);
        else if (name == "max-size")
          number(name, value, &o.max_size);
        else if (name == "count")
          number(name, value, &o.count);
        else if (name == "window")
          number(name, value, &o.window);
        else if (name == "senders")
          number(name, value, &o.senders);
        else if (name == "rendezvous")
          o.rendezvous = value;
        else if (name == "timeout")
          number(name, value, &o.timeout);
        else if (name == "seed")
          number(name, value, &o.seed);
        else if (name == "threads")
          number(name, value, &o.threads);
        else if (name == "interval")
          number(name, value, &o.interval_ms);
      },
      [](const std::string& why) { fail_setup(why + "\n" + kUsage); });
  if (o.role != "server" && o.role != "client" && o.role != "both") fail_setup("bad --role");
  static constexpr std::string_view kPatterns[] = {"latency", "bandwidth", "tagged", "mixed",
                                                   "fanin",   "write",     "read",   "atomic"};
  if (std::find(std::begin(kPatterns), std::end(kPatterns), o.pattern) == std::end(kPatterns))
    fail_setup("bad --pattern");
  if ((o.pattern == "write" || o.pattern == "read") && o.role == "both")
    fail_setup("--pattern " + o.pattern + " needs two processes (--role server and client)");
  if (o.window == 0 || o.window > 512) fail_setup("--window wants 1..512");
  if (o.senders < 1 || o.senders > 8) fail_setup("--senders wants 1..8");
  if (o.pattern == "atomic" && o.role != "both") o.senders = 1;
  if (o.threads != 0) {
    if (o.threads < 1 || o.threads > 8) fail_setup("--threads wants 1..8");
    if (o.role != "both" || (o.pattern != "bandwidth" && o.pattern != "tagged"))
      fail_setup("--threads goes with --role both and --pattern bandwidth or tagged");
  }
  return o;
}

double percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<size_t>(p / 100 * static_cast<double>(v.size())))];
}

void report(Bench& b, const Result& r, const std::vector<Endpoint>& eps) {
  fi_dpdk_port_stats port;
  b.port_stats(&port);
  std::printf(
      "{\"provider\":\"%s\",\"role\":\"%s\",\"pattern\":\"%s\",\"ok\":%s,\"size\":%zu,"
      "\"window\":%zu,\"messages\":%" PRIu64 ",\"bytes\":%" PRIu64
      ",\"seconds\":%.6f,\"goodput_MBps\":%.2f,\"msg_rate\":%.0f",
      b.o_.provider.c_str(), b.o_.role.c_str(), b.o_.pattern.c_str(), r.ok ? "true" : "false",
      b.o_.size, b.o_.window, r.messages, r.bytes, r.seconds,
      r.seconds > 0 ? r.bytes / r.seconds / 1e6 : 0.0,
      r.seconds > 0 ? r.messages / r.seconds : 0.0);
  if (!r.latencies_us.empty()) {
    // The mean and the worst beside the percentiles: the stock benchmarks
    // report means, which a few stalls in the tail move far from the median.
    double sum = 0;
    for (double v : r.latencies_us) sum += v;
    std::printf(
        ",\"latency_us\":{\"mean\":%.2f,\"p50\":%.2f,\"p90\":%.2f,\"p99\":%.2f,"
        "\"p999\":%.2f,\"max\":%.2f}",
        sum / static_cast<double>(r.latencies_us.size()), percentile(r.latencies_us, 50),
        percentile(r.latencies_us, 90), percentile(r.latencies_us, 99),
        percentile(r.latencies_us, 99.9),
        *std::max_element(r.latencies_us.begin(), r.latencies_us.end()));
  }
  if (r.sender_goodput.size() > 1) {
    double sum = 0, squares = 0;
    std::printf(",\"sender_goodput_MBps\":[");
    for (size_t i = 0; i < r.sender_goodput.size(); ++i) {
      std::printf("%s%.2f", i ? "," : "", r.sender_goodput[i]);
      sum += r.sender_goodput[i];
      squares += r.sender_goodput[i] * r.sender_goodput[i];
    }
    std::printf("],\"jain_fairness\":%.3f", sum * sum / (r.sender_goodput.size() * squares));
  }
  if (r.first_arrival_unix != 0) std::printf(",\"first_arrival_unix\":%.6f", r.first_arrival_unix);
  if (!r.sender_series.empty()) {
    std::printf(",\"interval_ms\":%" PRIu64 ",\"sender_series_MBps\":[", b.o_.interval_ms);
    for (size_t s = 0; s < r.sender_series.size(); ++s) {
      std::printf("%s[", s ? "," : "");
      for (size_t i = 0; i < r.sender_series[s].size(); ++i)
        std::printf("%s%.2f", i ? "," : "", r.sender_series[s][i]);
      std::printf("]");
    }
    std::printf("]");
  }
  if (b.o_.threads > 0) std::printf(",\"threads\":%d", b.o_.threads);
  fi_dpdk_ep_waits waits{};
  b.waits(eps, &waits);
  std::printf(",\"timer_waits\":{\"retransmit_timeouts\":%" PRIu64 ",\"tail_loss_probes\":%" PRIu64
              ",\"window_probes\":%" PRIu64 ",\"delayed_acks\":%" PRIu64
              ",\"delivery_probes\":%" PRIu64 "}",
              waits.retransmit_timeouts, waits.tail_loss_probes, waits.window_probes,
              waits.delayed_acks, waits.delivery_probes);
  // The transport's own round trips, per endpoint that measured any (its
  // senders: a receive-only endpoint has nothing acknowledged).
  std::printf(",\"round_trips_us\":[");
  bool first_rtt = true;
  for (const fi_dpdk_ep_rtt& r : b.round_trips(eps)) {
    std::printf("%s{\"samples\":%" PRIu64 ",\"p50\":%.1f,\"p90\":%.1f,\"p99\":%.1f,\"max\":%.1f}",
                first_rtt ? "" : ",", r.samples, r.p50_ns / 1e3, r.p90_ns / 1e3, r.p99_ns / 1e3,
                r.max_ns / 1e3);
    first_rtt = false;
  }
  std::printf("]");
  std::printf(",\"retransmitted\":%" PRIu64 ",\"tx_frames\":%" PRIu64 ",\"rx_frames\":%" PRIu64
              ",\"fault_dropped\":%" PRIu64 ",\"fault_reordered\":%" PRIu64
              ",\"fault_duplicated\":%" PRIu64 "}\n",
              b.retransmitted(eps), port.tx_frames, port.rx_frames, port.fault_dropped,
              port.fault_reordered, port.fault_duplicated);
}

// The server's region for write, read and atomic: --window slots of --size
// (for reads each slot filled as `fill` does with its index), or for
// atomics a uint64 counter at 0 in --size bytes (at least 8).
struct ServerRegion {
  explicit ServerRegion(Bench& b)
      : bytes(b.o_.pattern == "atomic" ? std::max<size_t>(b.o_.size, sizeof(uint64_t))
                                       : b.o_.window * std::max<size_t>(b.o_.size, 8)) {
    const size_t slot = std::max<size_t>(b.o_.size, 8);
    // Reads check what they bring back; writes must bring what the server
    // checks at the end, so their slots start empty.
    if (b.o_.pattern == "read")
      for (size_t i = 0; i < b.o_.window; ++i) fill(bytes.data() + i * slot, b.o_.size, i);
    mr = b.register_memory(bytes.data(), bytes.size(), FI_REMOTE_READ | FI_REMOTE_WRITE, &desc);
    view = b.remote_view(mr, bytes.data());
  }
  ~ServerRegion() { fi_close(&mr->fid); }
  ServerRegion(const ServerRegion&) = delete;
  ServerRegion& operator=(const ServerRegion&) = delete;
  uint64_t counter() const {
    uint64_t value;
    std::memcpy(&value, bytes.data(), sizeof(value));
    return value;
  }

  std::vector<uint8_t> bytes;
  fid_mr* mr = nullptr;
  void* desc = nullptr;
  RemoteRegion view;
};

// --threads: each thread streams between its own two endpoints; one
// report of the sum (messages, bytes) over the slowest thread's time.
int run_threads(Bench& b) {
  const Options& o = b.o_;
  std::vector<Endpoint> senders, receivers;
  std::vector<fi_addr_t> receiver_addrs;
  for (int i = 0; i < o.threads; ++i) {
    senders.push_back(b.make_endpoint());
    receivers.push_back(b.make_endpoint());
    receiver_addrs.push_back(b.insert(receivers.back().name));
  }
  std::vector<Result> results(o.threads);
  std::vector<std::thread> threads;
  std::latch start_line(o.threads);
  for (int i = 0; i < o.threads; ++i)
    threads.emplace_back([&, i] {
      results[i] = pair_stream(b, senders[i], receivers[i], receiver_addrs[i], start_line);
    });
  for (auto& thread : threads) thread.join();
  Result total;
  for (const Result& r : results) {
    total.ok = total.ok && r.ok;
    total.messages += r.messages;
    total.bytes += r.bytes;
    total.seconds = std::max(total.seconds, r.seconds);
  }
  report(b, total, senders);
  b.close(senders);
  b.close(receivers);
  return total.ok ? 0 : 1;
}

int run_both(Bench& b) {
  const Options& o = b.o_;
  if (o.threads > 0) return run_threads(b);
  const int senders = o.pattern == "fanin" || o.pattern == "atomic" ? o.senders : 1;
  // Everything in one process on one port: server endpoint 0, senders after.
  std::vector<Endpoint> server{b.make_endpoint()};
  std::vector<Endpoint> clients;
  for (int i = 0; i < senders; ++i) clients.push_back(b.make_endpoint());
  const fi_addr_t server_addr = b.insert(server[0].name);
  bool ok = true;
  if (o.pattern == "atomic") {
    // The server endpoint only serves: the clients' CQ reads progress the
    // port they share with it.
    ServerRegion region(b);
    const Result r = atomic_clients(b, clients, server_addr, region.view,
                                    reinterpret_cast<const uint64_t*>(region.bytes.data()));
    report(b, r, clients);
    ok = r.ok;
  } else if (o.pattern == "latency") {
    // One thread per side keeps the pingpong honest.
    const fi_addr_t client_addr = b.insert(clients[0].name);
    Result rs;
    std::thread t([&] { rs = latency_server(b, server[0], client_addr); });
    Result rc = latency_client(b, clients[0], server_addr);
    t.join();
    report(b, rc, clients);
    ok = rc.ok && rs.ok;
  } else {
    Result rs;
    std::thread t([&] { rs = stream_server(b, server[0], senders, o.seed); });
    std::vector<std::thread> threads;
    std::vector<Result> rcs(senders);
    for (int i = 0; i < senders; ++i)
      threads.emplace_back([&, i] { rcs[i] = stream_client(b, clients[i], server_addr, o.seed); });
    for (auto& thread : threads) thread.join();
    t.join();
    report(b, rs, clients);
    ok = rs.ok;
    for (const auto& rc : rcs) ok = ok && rc.ok;
  }
  b.close(server);
  b.close(clients);
  return ok ? 0 : 1;
}

int run_server(Bench& b) {
  const Options& o = b.o_;
  std::vector<Endpoint> eps{b.make_endpoint()};
  std::unique_ptr<ServerRegion> region;
  if (o.remote()) region = std::make_unique<ServerRegion>(b);
  const auto peers = b.exchange(eps, "server", "client", region ? &region->view : nullptr, nullptr);
  std::vector<fi_addr_t> addrs;
  for (const auto& name : peers) addrs.push_back(b.insert(name));
  Result r;
  if (o.remote()) {
    r = remote_server(b, eps[0]);
    if (o.pattern == "atomic" && region->counter() != o.count) {
      std::fprintf(stderr, "dpdk-fi-bench: counter %" PRIu64 ", want %" PRIu64 "\n",
                   region->counter(), o.count);
      r.ok = false;
    }
    if (o.pattern == "write") {
      // Every slot holds what the client wrote into it: its own pattern.
      const size_t slot = std::max<size_t>(o.size, 8);
      for (size_t i = 0; i < std::min<uint64_t>(o.window, o.count); ++i)
        if (!verify(region->bytes.data() + i * slot, o.size, i)) {
          std::fprintf(stderr, "dpdk-fi-bench: written slot %zu holds wrong bytes\n", i);
          r.ok = false;
        }
    }
  } else if (o.pattern == "latency") {
    r = latency_server(b, eps[0], addrs[0]);
  } else {
    r = stream_server(b, eps[0], static_cast<int>(addrs.size()), o.seed);
  }
  report(b, r, eps);
  region.reset();
  b.close(eps);
  return r.ok ? 0 : 1;
}

int run_client(Bench& b) {
  const Options& o = b.o_;
  const int senders = o.pattern == "fanin" ? o.senders : 1;
  std::vector<Endpoint> eps;
  for (int i = 0; i < senders; ++i) eps.push_back(b.make_endpoint());
  RemoteRegion region;
  const auto peers = b.exchange(eps, "client", "server", nullptr, &region);
  const fi_addr_t server_addr = b.insert(peers.at(0));
  Result r;
  if (o.pattern == "latency") {
    r = latency_client(b, eps[0], server_addr);
  } else if (o.pattern == "write" || o.pattern == "read") {
    r = rma_client(b, eps[0], server_addr, region);
  } else if (o.pattern == "atomic") {
    r = atomic_clients(b, eps, server_addr, region, nullptr);
    static const char kDone[8] = "done";
    fi_cq_tagged_entry entry;
    r.ok = b.send(eps[0], kDone, sizeof(kDone), server_addr, nullptr) &&
           b.wait(eps[0].tx_cq, &entry) && r.ok;
  } else {
    std::vector<std::thread> threads;
    std::vector<Result> rcs(senders);
    for (int i = 0; i < senders; ++i)
      threads.emplace_back([&, i] { rcs[i] = stream_client(b, eps[i], server_addr, o.seed); });
    for (auto& thread : threads) thread.join();
    r = rcs[0];
    for (int i = 1; i < senders; ++i) {
      r.ok = r.ok && rcs[i].ok;
      r.bytes += rcs[i].bytes;
      r.messages += rcs[i].messages;
      r.seconds = std::max(r.seconds, rcs[i].seconds);
    }
  }
  report(b, r, eps);
  b.close(eps);
  return r.ok ? 0 : 1;
}

}  // namespace
}  // namespace ofi_dpdk::bench

int main(int argc, char** argv) {
  using namespace ofi_dpdk::bench;
  int consumed = 1;
  if (ofi_dpdk::app::provider_named(argc, argv) == "dpdk") {
    ofi_dpdk::app::point_libfabric_at_provider();
    consumed = fi_dpdk_eal_init(argc, argv);
    if (consumed < 0) fail_setup(std::string("EAL did not start: ") + fi_strerror(-consumed));
  } else if (argc > 1 && std::string_view(argv[1]) == "--") {
    consumed = 2;
  }
  const Options o = parse(argc - consumed, argv + consumed);
  prepare_pattern(std::max(o.size, o.max_size));
  Bench b(o);
  b.open();
  const int status = o.role == "both"     ? run_both(b)
                     : o.role == "server" ? run_server(b)
                                          : run_client(b);
  b.finish();
  return status;
}
