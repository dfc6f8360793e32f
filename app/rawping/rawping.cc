// dpdk-fi-rawping: the floor and the ceiling the provider is measured
// against, over a DPDK port with nothing but rte_ethdev: no provider, no
// transport, no checksum; the same port (a memif pair, a veth under
// af_packet) the benchmarks run over.
//
//   dpdk-fi-rawping [EAL args] -- --role server|client [--pattern latency|stream]
//                   [--size B] [--count N] [--warmup N] [--timeout S]
//                   [--seconds S] [--both]
//
// latency (the floor): a pingpong of small frames.  After a hello comes
// back (the server is up), the client sends a frame, the server sends it
// back, the client times the round trip and
// prints one JSON line: the one-way time (half the round trip) as mean,
// p50, p90, p99, p99.9 and max in microseconds.  Both sides stop after
// --count round trips, the client first (the server when the client has
// closed its port, or --timeout seconds without a frame).
//
// stream (the ceiling): the client sends --size-byte frames (9000 by
// default, as the provider sends on the launcher's memif pair) in bursts
// for --seconds, writing only their Ethernet headers (as testpmd's txonly
// does), and the server takes them; with --both the server sends as much
// back meanwhile, as a test that moves data both ways (fi_rma_bw) does.
// Each side prints one JSON line with the MB/s it sent and received.  The
// client ends the stream with a frame of its own, on which the server
// stops.
//
// Exit status: 0, 1 on a timeout, 2 on set-up errors.
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
  bool stream = false;
  bool both = false;
  double seconds = 2;
  uint16_t size = 0;  // 64 for latency, 9000 for stream
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
       {"pattern", true},
       {"size", true},
       {"seconds", true},
       {"both", false},
       {"count", true},
       {"warmup", true},
       {"timeout", true},
       {"help", false}},
      [&](const std::string& name, const char* value) {
        const std::string option = "--" + name;
        if (name == "help") {
          std::printf(
              "usage: dpdk-fi-rawping [EAL args] -- --role server|client "
              "[--pattern latency|stream] [--size B] [--count N] [--warmup N] [--timeout S] "
              "[--seconds S] [--both] [--help]\n");
          std::exit(0);
        } else if (name == "role") {
          const std::string r = value;
          if (r != "server" && r != "client") fail("--role server or client");
          o.server = r == "server";
          role = true;
        } else if (name == "pattern") {
          const std::string p = value;
          if (p != "latency" && p != "stream") fail("--pattern latency or stream");
          o.stream = p == "stream";
        } else if (name == "seconds") {
          o.seconds = number<double>(option, value);
          if (!(o.seconds > 0 && o.seconds <= 3600)) fail("--seconds wants (0, 3600]");
        } else if (name == "both") {
          o.both = true;
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
  if (o.size == 0) o.size = o.stream ? 9000 : 64;
  if (!o.stream && (o.size < 60 || o.size > 1500)) fail("--size wants 60..1500");
  if (o.stream && (o.size < 60 || o.size > 9000)) fail("--size wants 60..9000 with a stream");
  if (o.both && !o.stream) fail("--both is for --pattern stream");
  return o;
}

// Port 0 with one queue pair, started, and its link up (a memif peer
// connected) within the timeout.
rte_mempool* open_port(const Options& o) {
  if (rte_eth_dev_count_avail() == 0) fail("no port: give a --vdev");
  // A frame in one mbuf, as the provider's are.
  const uint16_t room = std::max<uint16_t>(RTE_MBUF_DEFAULT_BUF_SIZE,
                                           static_cast<uint16_t>(o.size + RTE_PKTMBUF_HEADROOM));
  rte_mempool* pool = rte_pktmbuf_pool_create("rawping", 4095, 256, 0, room, rte_socket_id());
  if (pool == nullptr) fail("no mbuf pool");
  // (No MTU is set: net_memif reports 1500 and refuses another, yet carries
  // a frame as long as its ring buffers, devarg bsize, as the provider
  // relies on; a device that does enforce it drops the longer frames.)
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

// Ethernet broadcast, a local experimental EtherType: nothing to route.
// The other one marks control frames: the hello a pingpong starts with,
// the end of a stream.
constexpr uint8_t kFrameType = 0xb6, kControlType = 0xb5;
void write_ether_header(char* bytes, uint8_t type = kFrameType) {
  std::memset(bytes, 0xff, 6);
  std::memset(bytes + 6, 0, 6);
  bytes[12] = static_cast<char>(0x88);
  bytes[13] = static_cast<char>(type);
}

bool is_control(const rte_mbuf* frame) {
  return rte_pktmbuf_mtod(frame, const uint8_t*)[13] == kControlType;
}

rte_mbuf* new_frame(rte_mempool* pool, uint16_t size, uint8_t type) {
  rte_mbuf* frame = rte_pktmbuf_alloc(pool);
  if (frame == nullptr) fail("mbuf pool empty");
  char* bytes = rte_pktmbuf_append(frame, size);
  if (bytes == nullptr) fail("a frame does not fit an mbuf");
  std::memset(bytes, 0, size);
  write_ether_header(bytes, type);
  return frame;
}

// Waits, no longer polling the port, until the peer has closed its side
// (or the timeout): a memif peer that goes away unmaps the rings under
// whoever still polls them, and two peers closing at once race in the
// driver's disconnect.  One side stops first; the other waits here.
void wait_for_peer_to_close(double timeout) {
  const uint64_t give_up = rte_rdtsc() + static_cast<uint64_t>(timeout * rte_get_tsc_hz());
  for (;;) {
    rte_eth_link link{};
    if (rte_eth_link_get_nowait(0, &link) == 0 && link.link_status == RTE_ETH_LINK_DOWN) return;
    if (rte_rdtsc() > give_up) return;
    rte_delay_ms(10);
  }
}

// The server echoes until the client's last frame, then lets the client
// close first.
int serve(const Options& o) {
  for (uint64_t n = 0; n < o.warmup + o.count;) {
    rte_mbuf* frame = receive_one(o.timeout);
    if (frame == nullptr) return 1;
    if (!is_control(frame)) ++n;  // hellos go back uncounted
    send_one(frame);              // back as it came: the client only times it
  }
  wait_for_peer_to_close(o.timeout);
  return 0;
}

// Hellos until one comes back: a frame sent while the server still sets its
// port up may be lost, and a lost ping would wait for ever.
bool say_hello(const Options& o, rte_mempool* pool) {
  const uint64_t hz = rte_get_tsc_hz();
  const uint64_t give_up = rte_rdtsc() + static_cast<uint64_t>(o.timeout * hz);
  while (rte_rdtsc() < give_up) {
    send_one(new_frame(pool, 60, kControlType));
    for (const uint64_t retry = rte_rdtsc() + hz / 20; rte_rdtsc() < retry;) {
      rte_mbuf* back = nullptr;
      if (rte_eth_rx_burst(0, 0, &back, 1) == 0) continue;
      const bool hello = is_control(back);
      rte_pktmbuf_free(back);
      if (hello) return true;
    }
  }
  return false;
}

// The echo of a ping: echoes of earlier hellos are passed over.
rte_mbuf* receive_echo(double timeout) {
  for (;;) {
    rte_mbuf* back = receive_one(timeout);
    if (back == nullptr || !is_control(back)) return back;
    rte_pktmbuf_free(back);
  }
}

int ping(const Options& o, rte_mempool* pool) {
  std::vector<double> one_way_us;
  one_way_us.reserve(o.count);
  const double ns_per_cycle = 1e9 / static_cast<double>(rte_get_tsc_hz());
  if (!say_hello(o, pool)) return 1;
  for (uint64_t n = 0; n < o.warmup + o.count; ++n) {
    rte_mbuf* frame = new_frame(pool, o.size, kFrameType);
    const uint64_t t0 = rte_rdtsc();
    send_one(frame);
    rte_mbuf* back = receive_echo(o.timeout);
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

struct StreamCount {
  uint64_t sent_bytes = 0, received_bytes = 0;
  uint64_t first_tsc = 0, last_tsc = 0;  // the measured span
};

// One turn of a stream side: what is left of the last burst goes first (a
// full ring takes it later: nothing is dropped here), then a new burst;
// and what came in is counted and freed.
class StreamSide {
 public:
  StreamSide(const Options& o, rte_mempool* pool) : o_(o), pool_(pool) {}

  void send(StreamCount* count) {
    if (left_ == 0) {
      if (rte_pktmbuf_alloc_bulk(pool_, frames_, kBurst) != 0) return;  // all in flight
      for (rte_mbuf* frame : frames_) {
        char* bytes = rte_pktmbuf_append(frame, o_.size);
        if (bytes == nullptr) fail("a frame does not fit an mbuf");
        write_ether_header(bytes);
      }
      next_ = 0;
      left_ = kBurst;
    }
    const uint16_t sent = rte_eth_tx_burst(0, 0, frames_ + next_, left_);
    next_ = static_cast<uint16_t>(next_ + sent);
    left_ = static_cast<uint16_t>(left_ - sent);
    count->sent_bytes += uint64_t{sent} * o_.size;
  }

  // How many frames came; *ended when one of them ends the stream.
  uint16_t receive(StreamCount* count, bool* ended) {
    rte_mbuf* in[kBurst];
    const uint16_t got = rte_eth_rx_burst(0, 0, in, kBurst);
    for (uint16_t i = 0; i < got; ++i) {
      if (is_control(in[i]))
        *ended = true;
      else
        count->received_bytes += rte_pktmbuf_pkt_len(in[i]);
    }
    rte_pktmbuf_free_bulk(in, got);
    return got;
  }

  ~StreamSide() { rte_pktmbuf_free_bulk(frames_ + next_, left_); }

 private:
  static constexpr uint16_t kBurst = 32;
  const Options& o_;
  rte_mempool* pool_;
  rte_mbuf* frames_[kBurst];
  uint16_t next_ = 0, left_ = 0;
};

void print_stream(const Options& o, const StreamCount& count) {
  const double seconds =
      static_cast<double>(count.last_tsc - count.first_tsc) / static_cast<double>(rte_get_tsc_hz());
  const auto rate = [&](uint64_t bytes) { return seconds > 0 ? bytes / seconds / 1e6 : 0.0; };
  std::printf(
      "{\"program\":\"dpdk-fi-rawping\",\"pattern\":\"stream\",\"role\":\"%s\",\"size\":%u,"
      "\"both\":%s,\"seconds\":%.3f,\"sent_MBps\":%.1f,\"received_MBps\":%.1f}\n",
      o.server ? "server" : "client", o.size, o.both ? "true" : "false", seconds,
      rate(count.sent_bytes), rate(count.received_bytes));
}

// The client: sends for --seconds (and takes what comes back with --both),
// then ends the stream and waits for the server to close its side (the
// server stops first here; in a pingpong the client does).
int stream_client(const Options& o, rte_mempool* pool) {
  StreamCount count;
  const uint64_t hz = rte_get_tsc_hz();
  {
    StreamSide side(o, pool);
    bool ended = false;
    count.first_tsc = rte_rdtsc();
    const uint64_t end =
        count.first_tsc + static_cast<uint64_t>(o.seconds * static_cast<double>(hz));
    for (uint64_t now = count.first_tsc; now < end; now = rte_rdtsc()) {
      side.send(&count);
      if (o.both) side.receive(&count, &ended);
    }
    count.last_tsc = rte_rdtsc();
  }
  rte_mbuf* end = new_frame(pool, 60, kControlType);
  const uint64_t give_up = rte_rdtsc() + static_cast<uint64_t>(o.timeout * hz);
  while (rte_eth_tx_burst(0, 0, &end, 1) == 0)
    if (rte_rdtsc() > give_up) fail("the server takes nothing more");
  wait_for_peer_to_close(o.timeout);
  if (count.sent_bytes == 0) return 1;  // the port took nothing
  print_stream(o, count);
  return 0;
}

// The server: takes frames (and sends as many back with --both) from the
// first that comes until the client ends the stream (or, should its end be
// lost, none has come for half a second).
int stream_server(const Options& o, rte_mempool* pool) {
  StreamCount count;
  StreamSide side(o, pool);
  const uint64_t hz = rte_get_tsc_hz();
  const uint64_t start = rte_rdtsc();
  for (bool ended = false; !ended;) {
    const uint64_t now = rte_rdtsc();
    if (side.receive(&count, &ended) != 0) {
      if (count.first_tsc == 0) count.first_tsc = now;
      count.last_tsc = now;
    } else if (count.first_tsc == 0 ? now - start > static_cast<uint64_t>(o.timeout * hz)
                                    : now - count.last_tsc > hz / 2) {
      break;
    }
    if (o.both && count.first_tsc != 0) side.send(&count);
  }
  if (count.first_tsc == 0) return 1;
  print_stream(o, count);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const int used = rte_eal_init(argc, argv);
  if (used < 0) fail("rte_eal_init failed");
  const Options o = parse(argc - used - 1, argv + used + 1);
  rte_mempool* pool = open_port(o);
  const int status = o.stream ? (o.server ? stream_server(o, pool) : stream_client(o, pool))
                              : (o.server ? serve(o) : ping(o, pool));
  rte_eth_dev_stop(0);
  rte_eth_dev_close(0);
  return status;
}
