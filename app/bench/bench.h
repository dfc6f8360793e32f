// bench.h: what the benchmark's files share (bench.cc: options, report and
// main; bench_fabric.cc: the libfabric objects and the rendezvous;
// bench_patterns.cc: each pattern's loops).  The benchmark runs over any
// libfabric provider, so the same program measures dpdk, shm and
// tcp;ofi_rxm side by side (devtools/dpdk-fi-compare.sh).
#pragma once

#include <rdma/fabric.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <latch>
#include <string>
#include <vector>

struct fi_dpdk_ops_stats;
struct fi_dpdk_port_stats;
struct fi_dpdk_ep_waits;
struct fi_dpdk_ep_rtt;

namespace ofi_dpdk::bench {

using Clock = std::chrono::steady_clock;

struct Options {
  std::string provider = "dpdk";
  std::string role = "both";
  std::string pattern = "latency";
  size_t size = 64;
  size_t max_size = 1 << 20;
  uint64_t count = 10000;
  size_t window = 64;
  int senders = 2;
  // --threads N (role both, bandwidth or tagged): N threads, each with its
  // own sending and receiving endpoint, on one domain asked for
  // FI_THREAD_COMPLETION; 0 when not given.
  int threads = 0;
  std::string rendezvous = "/tmp/ofi-dpdk-bench";
  double timeout = 30;
  uint64_t seed = 1;
  // --interval MS (stream patterns, at the receiving side): each sender's
  // goodput in every MS from the first arrival, as a time series; 0: none.
  uint64_t interval_ms = 0;

  bool dpdk() const { return provider == "dpdk"; }
  // Patterns that need a registered region at the server.
  bool remote() const { return pattern == "write" || pattern == "read" || pattern == "atomic"; }
};

// Ends the program with status 2 and the message.
[[noreturn]] void fail_setup(const std::string& text);

#define BENCH_CHECK(call)                                                                 \
  do {                                                                                    \
    const int check_ret = static_cast<int>(call);                                         \
    if (check_ret != 0)                                                                   \
      ::ofi_dpdk::bench::fail_setup(std::string(#call) + ": " + fi_strerror(-check_ret)); \
  } while (0)

struct Endpoint {
  fid_ep* ep = nullptr;
  fid_cq* tx_cq = nullptr;
  fid_cq* rx_cq = nullptr;
  std::string name;
};

// A region the server registers for RMA and atomics, as the client targets
// it: the address to name (virtual or offset, as the provider's mr_mode
// says) and the key.
struct RemoteRegion {
  uint64_t address = 0;
  uint64_t key = 0;
};

struct Result {
  bool ok = true;
  uint64_t messages = 0;
  uint64_t bytes = 0;
  double seconds = 0;
  std::vector<double> latencies_us;
  std::vector<double> sender_goodput;
  // When a stream's first message arrived (Unix time, s): where its
  // seconds lie on another program's clock.
  double first_arrival_unix = 0;
  // --interval: per sender, its goodput (MB/s) in each interval.
  std::vector<std::vector<double>> sender_series;
};

class Bench {
 public:
  explicit Bench(const Options& o) : o_(o) {}

  void open();
  Endpoint make_endpoint();
  fi_addr_t insert(const std::string& name);
  // Registers [buf, buf + len) with `access`; returns the region, and its
  // descriptor for local use in *desc (nullptr when the provider needs none).
  fid_mr* register_memory(void* buf, size_t len, uint64_t access, void** desc);
  RemoteRegion remote_view(fid_mr* mr, const void* buf) const;
  // Writes our endpoint names (and a region, when given), waits for the
  // peer's.  Returns the peer's names; its region goes to *region.
  std::vector<std::string> exchange(const std::vector<Endpoint>& mine, const char* me,
                                    const char* peer, const RemoteRegion* mine_region,
                                    RemoteRegion* peer_region);
  // Polls one CQ entry; false (and a message) on an error or the timeout.
  bool wait(fid_cq* cq, fi_cq_tagged_entry* entry);
  // Sends, retrying while the provider says -FI_EAGAIN.
  bool send(const Endpoint& e, const void* buf, size_t size, fi_addr_t to, void* context);
  void close(std::vector<Endpoint>& eps);
  void finish();
  // The dpdk provider's counters (zero for other providers).
  uint64_t retransmitted(const std::vector<Endpoint>& eps);
  void port_stats(fi_dpdk_port_stats* out);
  // Timer waits summed over the endpoints (zero where the provider has none).
  void waits(const std::vector<Endpoint>& eps, fi_dpdk_ep_waits* out);
  // Each endpoint's measured round trips (those with samples).
  std::vector<fi_dpdk_ep_rtt> round_trips(const std::vector<Endpoint>& eps);

  const Options& o_;
  fi_info* info_ = nullptr;
  fid_fabric* fabric_ = nullptr;
  fid_domain* domain_ = nullptr;
  fid_av* av_ = nullptr;
  fi_dpdk_ops_stats* stats_ = nullptr;
  bool local_mr_ = false;  // the provider wants local buffers registered (FI_MR_LOCAL)
};

// The patterns (bench_patterns.cc); each side's loop.
Result latency_client(Bench& b, const Endpoint& e, fi_addr_t peer);
Result latency_server(Bench& b, const Endpoint& e, fi_addr_t peer);
Result stream_client(Bench& b, const Endpoint& e, fi_addr_t peer, uint64_t seed);
Result stream_server(Bench& b, const Endpoint& e, int senders, uint64_t seed);
// RMA write or read of --size bytes, --window in flight, into the server's
// region; then a message tells the server it is done.
Result rma_client(Bench& b, const Endpoint& e, fi_addr_t peer, const RemoteRegion& region);
// One thread's stream from `sender` to `receiver` (both its own, in this
// process; --threads): --window sends in flight, every message checked.
// Waits at `start_line` (every thread's set-up done) before its clock
// starts, so the threads' runs overlap.
Result pair_stream(Bench& b, const Endpoint& sender, const Endpoint& receiver,
                   fi_addr_t receiver_addr, std::latch& start_line);
// Serves RMA (or atomics) until the client's closing message.
Result remote_server(Bench& b, const Endpoint& e);
// Fetch-adds of 1 on one uint64 at the server, --window at a time, from
// each client endpoint (threads); checks the values fetched.
Result atomic_clients(Bench& b, std::vector<Endpoint>& clients, fi_addr_t server,
                      const RemoteRegion& counter, const uint64_t* local_counter);

// The bytes of message `index` (bench_patterns.cc says how they show
// misplaced, stale or corrupted data).  prepare_pattern(largest message)
// runs once, before any thread fills or checks.
void prepare_pattern(size_t max_size);
void fill(uint8_t* buf, size_t size, uint64_t index);
bool verify(const uint8_t* buf, size_t size, uint64_t index);

}  // namespace ofi_dpdk::bench
