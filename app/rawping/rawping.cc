// dpdk-fi-rawping: the floor the provider is measured against.  A pingpong
// of small frames over a DPDK port with nothing but rte_ethdev: the client
// sends a frame, the server sends it back, the client times the round trip.
// No provider, no transport, no checksum; the same port (a memif pair, a
// veth under af_packet) the benchmarks run over.
//
//   dpdk-fi-rawping [EAL args] -- --role server|client [--size B]
//                   [--count N] [--warmup N] [--timeout S]
//
// The client prints one JSON line: the one-way time (half the round trip)
// as mean, p50, p90, p99, p99.9 and max in microseconds.  Both sides stop
// after --count round trips (the server when the client's last frame is
// back, or --timeout seconds without a frame).  Exit status: 0, 1 on a
// timeout, 2 on set-up errors.
#include <rte_cycles.h>
#include <rte_eal.h>
#include <rte_ethdev.h>
#include <rte_lcore.h>
#include <rte_mbuf.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "app/common/long_options.h"
#include "app/common/option_number.h"

namespace {

using Clock = std::chrono::steady_clock;

struct Options {
  bool server = false;
  uint16_t size = 64;
  uint64_t count = 100000;
  uint64_t warmup = 1000;
  double timeout = 30;
};

[[noreturn]] void fail(const std::string& why) {
  std::fprintf(stderr, "dpdk-fi-rawping: %s\n", why.c_str());
  std::exit(2);
}

template <typename T>
T number(const std::string& option, const std::string& text) {
  const std::optional<T> value = ofi_dpdk::app::option_number<T>(text);
  if (!value) fail(option + ": not a number: " + text);
  return *value;
}

Options parse(int argc, char** argv) {
  Options o;
  bool role = false;
  ofi_dpdk::app::read_long_options(
      "dpdk-fi-rawping", argc, argv,
      {{"role", true},
       {"size", true},
       {"count", true},
       {"warmup", true},
       {"timeout", true},
       {"help", false}},
      [&](const std::string& name, const char* value) {
        const std::string option = "--" + name;
        if (name == "help") {
          std::printf(
              "usage: dpdk-fi-rawping [EAL args] -- --role server|client [--size B] "
              "[--count N] [--warmup N] [--timeout S] [--help]\n");
          std::exit(0);
        } else if (name == "role") {
          const std::string r = value;
          if (r != "server" && r != "client") fail("--role server or client");
          o.server = r == "server";
          role = true;
        } else if (name == "size") {
          o.size = number<uint16_t>(option, value);
        } else if (name == "count") {
          o.count = number<uint64_t>(option, value);
          if (o.count == 0) fail("--count: at least one round trip");  // the median of none
        } else if (name == "warmup") {
          o.warmup = number<uint64_t>(option, value);
        } else if (name == "timeout") {
          o.timeout = number<double>(option, value);
        }
      },
      [](const std::string& why) { fail(why); });
  if (!role) fail("--role server|client is required");
  if (o.size < 60 || o.size > 1500) fail("--size wants 60..1500");
  return o;
}

// Port 0 with one queue pair, started, and its link up (a memif peer
// connected) within the timeout.
rte_mempool* open_port(const Options& o) {
  if (rte_eth_dev_count_avail() == 0) fail("no port: give a --vdev");
  rte_mempool* pool =
      rte_pktmbuf_pool_create("rawping", 4095, 256, 0, RTE_MBUF_DEFAULT_BUF_SIZE, rte_socket_id());
  if (pool == nullptr) fail("no mbuf pool");
  rte_eth_conf conf{};
  if (rte_eth_dev_configure(0, 1, 1, &conf) != 0) fail("rte_eth_dev_configure");
  if (rte_eth_rx_queue_setup(0, 0, 512, rte_eth_dev_socket_id(0), nullptr, pool) != 0)
    fail("rx queue");
  if (rte_eth_tx_queue_setup(0, 0, 512, rte_eth_dev_socket_id(0), nullptr) != 0) fail("tx queue");
  if (rte_eth_dev_start(0) != 0) fail("rte_eth_dev_start");
  const auto deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                           std::chrono::duration<double>(o.timeout));
  for (;;) {
    rte_eth_link link{};
    if (rte_eth_link_get_nowait(0, &link) == 0 && link.link_status == RTE_ETH_LINK_UP) break;
    if (Clock::now() > deadline) fail("the link did not come up");
    rte_delay_ms(10);
  }
  return pool;
}

// Waits for one frame; nullptr after the timeout.
rte_mbuf* receive_one(double timeout) {
  rte_mbuf* frame = nullptr;
  uint64_t polls = 0;
  Clock::time_point deadline{};
  while (rte_eth_rx_burst(0, 0, &frame, 1) == 0) {
    if (++polls % 4096 != 0) continue;
    const auto now = Clock::now();
    if (deadline == Clock::time_point{})
      deadline =
          now + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(timeout));
    else if (now > deadline)
      return nullptr;
  }
  return frame;
}

void send_one(rte_mbuf* frame) {
  while (rte_eth_tx_burst(0, 0, &frame, 1) == 0) {
  }
}

int serve(const Options& o) {
  for (uint64_t n = 0; n < o.warmup + o.count; ++n) {
    rte_mbuf* frame = receive_one(o.timeout);
    if (frame == nullptr) return 1;
    send_one(frame);  // back as it came: the client only times it
  }
  return 0;
}

int ping(const Options& o, rte_mempool* pool) {
  std::vector<double> one_way_us;
  one_way_us.reserve(o.count);
  const double ns_per_cycle = 1e9 / static_cast<double>(rte_get_tsc_hz());
  for (uint64_t n = 0; n < o.warmup + o.count; ++n) {
    rte_mbuf* frame = rte_pktmbuf_alloc(pool);
    if (frame == nullptr) fail("mbuf pool empty");
    char* bytes = rte_pktmbuf_append(frame, o.size);
    std::memset(bytes, 0, o.size);
    // Ethernet broadcast, a local experimental EtherType: nothing to route.
    std::memset(bytes, 0xff, 6);
    bytes[12] = static_cast<char>(0x88);
    bytes[13] = static_cast<char>(0xb6);
    const uint64_t t0 = rte_rdtsc();
    send_one(frame);
    rte_mbuf* back = receive_one(o.timeout);
    const uint64_t t1 = rte_rdtsc();
    if (back == nullptr) return 1;
    rte_pktmbuf_free(back);
    if (n >= o.warmup) one_way_us.push_back(static_cast<double>(t1 - t0) * ns_per_cycle / 2e3);
  }
  double sum = 0;
  for (double v : one_way_us) sum += v;
  std::vector<double> sorted = one_way_us;
  std::sort(sorted.begin(), sorted.end());
  const auto at = [&](double p) {
    return sorted[std::min(sorted.size() - 1, static_cast<size_t>(p / 100 * sorted.size()))];
  };
  std::printf(
      "{\"program\":\"dpdk-fi-rawping\",\"size\":%u,\"count\":%zu,\"one_way_us\":{"
      "\"mean\":%.3f,\"p50\":%.3f,\"p90\":%.3f,\"p99\":%.3f,\"p999\":%.3f,\"max\":%.3f}}\n",
      o.size, sorted.size(), sum / static_cast<double>(sorted.size()), at(50), at(90), at(99),
      at(99.9), sorted.back());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const int used = rte_eal_init(argc, argv);
  if (used < 0) fail("rte_eal_init failed");
  const Options o = parse(argc - used - 1, argv + used + 1);
  rte_mempool* pool = open_port(o);
  const int status = o.server ? serve(o) : ping(o, pool);
  rte_eth_dev_stop(0);
  rte_eth_dev_close(0);
  return status;
}
