// dpdk-fi-bench: the benchmark.  Two processes (a server and a client) or
// one process with both roles' endpoints on one port run a pattern over the
// provider and print one JSON object with the figures:
//
//   latency    pingpong of --size bytes; half round trip percentiles
//   bandwidth  client streams --count messages of --size with --window sends
//              in flight; goodput
//   mixed      like bandwidth with sizes from 1 B to --max-size, mostly
//              small; every message is checked: once, in order, byte-exact
//   fanin      --senders client endpoints stream into one server endpoint;
//              per-sender goodput and Jain's fairness index
//   atomic     (--role both) --senders endpoints each do --count
//              fi_fetch_atomic FI_SUM of 1 on one uint64 at the server
//              endpoint, --window at a time: op latency (window 1) and rate;
//              checks the final value and that the fetched values are
//              exactly 0 .. total-1, each once
//
//   dpdk-fi-bench [EAL args] -- --role server|client|both --pattern P
//       [--size B] [--max-size B] [--count N] [--window W] [--senders K]
//       [--rendezvous DIR] [--timeout S] [--seed N]
//
// Server and client find each other through files in --rendezvous (each
// writes its endpoint names, then waits for the other's).  Exit status: 0
// when every check passed, 1 on a data mismatch, loss, duplicate or error
// completion, 2 on bad arguments or set-up failure.
#include <fi_dpdk.h>
#include <rdma/fi_atomic.h>
#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "app/common/provider_path.h"

namespace {

using Clock = std::chrono::steady_clock;

struct Options {
  std::string role = "both";
  std::string pattern = "latency";
  size_t size = 64;
  size_t max_size = 1 << 20;
  uint64_t count = 10000;
  size_t window = 64;
  int senders = 2;
  std::string rendezvous = "/tmp/ofi-dpdk-bench";
  double timeout = 30;
  uint64_t seed = 1;
};

[[noreturn]] void fail_setup(const std::string& text) {
  std::fprintf(stderr, "dpdk-fi-bench: %s\n", text.c_str());
  std::exit(2);
}

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 0; i < argc; ++i) {
    const std::string_view arg = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) fail_setup("option " + std::string(arg) + " needs a value");
      return argv[++i];
    };
    if (arg == "--role") o.role = value();
    else if (arg == "--pattern") o.pattern = value();
    else if (arg == "--size") o.size = std::stoull(value());
    else if (arg == "--max-size") o.max_size = std::stoull(value());
    else if (arg == "--count") o.count = std::stoull(value());
    else if (arg == "--window") o.window = std::stoull(value());
    else if (arg == "--senders") o.senders = std::stoi(value());
    else if (arg == "--rendezvous") o.rendezvous = value();
    else if (arg == "--timeout") o.timeout = std::stod(value());
    else if (arg == "--seed") o.seed = std::stoull(value());
    else fail_setup("unknown option " + std::string(arg) + " (see the comment at the top of bench.cc)");
  }
  if (o.role != "server" && o.role != "client" && o.role != "both") fail_setup("bad --role");
  if (o.pattern != "latency" && o.pattern != "bandwidth" && o.pattern != "mixed" &&
      o.pattern != "fanin" && o.pattern != "atomic")
    fail_setup("bad --pattern");
  if (o.pattern == "atomic" && o.role != "both") fail_setup("--pattern atomic needs --role both");
  if (o.window == 0 || o.window > 512) fail_setup("--window wants 1..512");
  if (o.senders < 1 || o.senders > 8) fail_setup("--senders wants 1..8");
  return o;
}

#define CHECK(call)                                                                   \
  do {                                                                                \
    const int check_ret = static_cast<int>(call);                                     \
    if (check_ret != 0)                                                               \
      fail_setup(std::string(#call) + ": " + fi_strerror(-check_ret));               \
  } while (0)

// The bytes of message `index`: its first 8 bytes carry the index, the rest
// a pattern of (index, offset), so misplaced, stale or corrupted data shows.
void fill(uint8_t* buf, size_t size, uint64_t index) {
  for (size_t i = 0; i < size; ++i) buf[i] = static_cast<uint8_t>((index * 2654435761u) >> (i % 24) ^ i);
  if (size >= 8) std::memcpy(buf, &index, 8);
}
bool verify(const uint8_t* buf, size_t size, uint64_t index) {
  if (size >= 8) {
    uint64_t got;
    std::memcpy(&got, buf, 8);
    if (got != index) return false;
  }
  for (size_t i = size >= 8 ? 8 : 0; i < size; ++i)
    if (buf[i] != static_cast<uint8_t>((index * 2654435761u) >> (i % 24) ^ i)) return false;
  return true;
}

// Sizes of the mixed pattern: 90 % up to 4 KiB, 9 % up to 64 KiB, 1 % up to
// max_size, each uniform in its band; the same sequence on both sides.
class SizeSequence {
 public:
  SizeSequence(uint64_t seed, size_t max_size) : rng_(seed), max_(max_size) {}
  size_t next() {
    const uint32_t band = rng_() % 100;
    const size_t top = band < 90 ? 4096 : band < 99 ? 65536 : max_;
    return 1 + rng_() % std::min(top, max_);
  }
 private:
  std::mt19937_64 rng_;
  size_t max_;
};

struct Endpoint {
  fid_ep* ep = nullptr;
  fid_cq* tx_cq = nullptr;
  fid_cq* rx_cq = nullptr;
  std::string name;
};

class Bench {
 public:
  explicit Bench(const Options& o) : o_(o) {}

  void open() {
    fi_info* hints = fi_allocinfo();
    hints->fabric_attr->prov_name = strdup("dpdk");
    hints->ep_attr->type = FI_EP_RDM;
    hints->caps = o_.pattern == "atomic" ? FI_MSG | FI_ATOMIC : FI_MSG;
    hints->domain_attr->mr_mode = FI_MR_PROV_KEY | FI_MR_VIRT_ADDR;
    const int ret = fi_getinfo(FI_VERSION(1, 17), nullptr, nullptr, 0, hints, &info_);
    fi_freeinfo(hints);
    if (ret != 0) fail_setup(std::string("no dpdk port (fi_getinfo: ") + fi_strerror(-ret) + ")");
    CHECK(fi_fabric(info_->fabric_attr, &fabric_, nullptr));
    CHECK(fi_domain(fabric_, info_, &domain_, nullptr));
    fi_av_attr av_attr{};
    av_attr.type = FI_AV_TABLE;
    CHECK(fi_av_open(domain_, &av_attr, &av_, nullptr));
    CHECK(fi_open_ops(&domain_->fid, FI_DPDK_STATS_OPS_NAME, 0, reinterpret_cast<void**>(&stats_), nullptr));
  }

  Endpoint make_endpoint() {
    Endpoint e;
    fi_cq_attr attr{};
    attr.format = FI_CQ_FORMAT_MSG;
    CHECK(fi_cq_open(domain_, &attr, &e.tx_cq, nullptr));
    CHECK(fi_cq_open(domain_, &attr, &e.rx_cq, nullptr));
    CHECK(fi_endpoint(domain_, info_, &e.ep, nullptr));
    CHECK(fi_ep_bind(e.ep, &av_->fid, 0));
    CHECK(fi_ep_bind(e.ep, &e.tx_cq->fid, FI_TRANSMIT));
    CHECK(fi_ep_bind(e.ep, &e.rx_cq->fid, FI_RECV));
    CHECK(fi_enable(e.ep));
    char name[64];
    size_t len = sizeof(name);
    CHECK(fi_getname(&e.ep->fid, name, &len));
    e.name.assign(name, len);
    return e;
  }

  fi_addr_t insert(const std::string& name) {
    fi_addr_t addr;
    if (fi_av_insert(av_, name.data(), 1, &addr, 0, nullptr) != 1) fail_setup("fi_av_insert failed");
    return addr;
  }

  // Writes our names, waits for the peer's (hex, one per line).
  std::vector<std::string> exchange(const std::vector<Endpoint>& mine, const char* me,
                                    const char* peer) {
    const std::string dir = o_.rendezvous;
    std::error_code ignored;
    std::filesystem::create_directories(dir, ignored);
    std::ofstream out(dir + "/" + me + ".tmp");
    for (const auto& e : mine) {
      for (unsigned char c : e.name) out << "0123456789abcdef"[c >> 4] << "0123456789abcdef"[c & 15];
      out << "\n";
    }
    out.close();
    std::rename((dir + "/" + me + ".tmp").c_str(), (dir + "/" + me).c_str());
    const auto deadline = Clock::now() + std::chrono::duration<double>(o_.timeout);
    // A peer's file from an earlier run (older than this run's --timeout
    // window) is not our peer's: wait for a fresh one.
    const std::string peer_file = dir + "/" + peer;
    const auto oldest = std::filesystem::file_time_type::clock::now() -
                        std::chrono::duration_cast<std::filesystem::file_time_type::duration>(
                            std::chrono::duration<double>(o_.timeout));
    const auto fresh = [&] {
      std::error_code error;
      const auto written = std::filesystem::last_write_time(peer_file, error);
      return !error && written >= oldest;
    };
    std::ifstream in;
    while (!fresh() || !(in = std::ifstream(peer_file)).good()) {
      if (Clock::now() > deadline) fail_setup("no peer in " + dir + " within --timeout");
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    std::vector<std::string> names;
    for (std::string line; std::getline(in, line);) {
      std::string bytes;
      for (size_t i = 0; i + 1 < line.size(); i += 2) bytes += static_cast<char>(std::stoi(line.substr(i, 2), nullptr, 16));
      names.push_back(bytes);
    }
    return names;
  }

  // Polls one CQ entry; false (and a message) on error or timeout.
  bool wait(fid_cq* cq, fi_cq_msg_entry* entry) {
    const auto deadline = Clock::now() + std::chrono::duration<double>(o_.timeout);
    for (;;) {
      const ssize_t ret = fi_cq_read(cq, entry, 1);
      if (ret == 1) return true;
      if (ret == -FI_EAVAIL) {
        fi_cq_err_entry err{};
        fi_cq_readerr(cq, &err, 0);
        std::fprintf(stderr, "dpdk-fi-bench: error completion: %s (%s)\n", fi_strerror(err.err),
                     fi_cq_strerror(cq, err.prov_errno, err.err_data, nullptr, 0));
        return false;
      }
      if (Clock::now() > deadline) {
        std::fprintf(stderr, "dpdk-fi-bench: nothing completed within %.0f s\n", o_.timeout);
        return false;
      }
    }
  }

  bool send(const Endpoint& e, const void* buf, size_t size, fi_addr_t to, void* context) {
    const auto deadline = Clock::now() + std::chrono::duration<double>(o_.timeout);
    for (;;) {
      const ssize_t ret = fi_send(e.ep, buf, size, nullptr, to, context);
      if (ret == 0) return true;
      if (ret != -FI_EAGAIN || Clock::now() > deadline) return false;
      fi_cq_msg_entry none;
      fi_cq_read(e.tx_cq, &none, 0);
    }
  }

  void close(std::vector<Endpoint>& eps) {
    for (auto& e : eps) {
      fi_close(&e.ep->fid);
      fi_close(&e.tx_cq->fid);
      fi_close(&e.rx_cq->fid);
    }
  }

  void finish() {
    fi_close(&av_->fid);
    fi_close(&domain_->fid);
    fi_close(&fabric_->fid);
    fi_freeinfo(info_);
  }

  uint64_t retransmitted(const std::vector<Endpoint>& eps) {
    uint64_t total = 0;
    for (const auto& e : eps) {
      fi_dpdk_ep_stats s{};
      stats_->ep_stats(e.ep, &s);
      total += s.retransmitted;
    }
    return total;
  }

  fi_dpdk_port_stats port_stats() {
    fi_dpdk_port_stats s{};
    stats_->port_stats(domain_, &s);
    return s;
  }

  const Options& o_;
  fi_info* info_ = nullptr;
  fid_fabric* fabric_ = nullptr;
  fid_domain* domain_ = nullptr;
  fid_av* av_ = nullptr;
  fi_dpdk_ops_stats* stats_ = nullptr;
};

// ---- the patterns: each side's loop --------------------------------------

struct Result {
  bool ok = true;
  uint64_t messages = 0;
  uint64_t bytes = 0;
  double seconds = 0;
  std::vector<double> latencies_us;
  std::vector<double> sender_goodput;
};

Result latency_client(Bench& b, const Endpoint& e, fi_addr_t peer) {
  Result r;
  std::vector<uint8_t> tx(b.o_.size), rx(b.o_.size);
  fill(tx.data(), tx.size(), 7);
  const auto start = Clock::now();
  for (uint64_t i = 0; i < b.o_.count && r.ok; ++i) {
    const auto t0 = Clock::now();
    CHECK(fi_recv(e.ep, rx.data(), rx.size(), nullptr, FI_ADDR_UNSPEC, nullptr));
    fi_cq_msg_entry entry;
    r.ok = b.send(e, tx.data(), tx.size(), peer, nullptr) && b.wait(e.tx_cq, &entry) &&
           b.wait(e.rx_cq, &entry) && entry.len == tx.size() && verify(rx.data(), rx.size(), 7);
    r.latencies_us.push_back(std::chrono::duration<double, std::micro>(Clock::now() - t0).count() / 2);
  }
  r.seconds = std::chrono::duration<double>(Clock::now() - start).count();
  r.messages = b.o_.count;
  r.bytes = b.o_.count * b.o_.size;
  return r;
}

Result latency_server(Bench& b, const Endpoint& e, fi_addr_t peer) {
  Result r;
  std::vector<uint8_t> buf(b.o_.size);
  for (uint64_t i = 0; i < b.o_.count && r.ok; ++i) {
    CHECK(fi_recv(e.ep, buf.data(), buf.size(), nullptr, FI_ADDR_UNSPEC, nullptr));
    fi_cq_msg_entry entry;
    r.ok = b.wait(e.rx_cq, &entry) && b.send(e, buf.data(), entry.len, peer, nullptr) &&
           b.wait(e.tx_cq, &entry);
  }
  r.messages = b.o_.count;
  return r;
}

// Streams count messages (fixed or mixed sizes) with `window` in flight.
Result stream_client(Bench& b, const Endpoint& e, fi_addr_t peer, uint64_t seed) {
  Result r;
  const size_t buffer = b.o_.pattern == "mixed" ? b.o_.max_size : b.o_.size;
  std::vector<std::vector<uint8_t>> slots(b.o_.window, std::vector<uint8_t>(buffer));
  std::vector<size_t> free_slots;
  for (size_t i = 0; i < b.o_.window; ++i) free_slots.push_back(i);
  SizeSequence sizes(seed, b.o_.max_size);
  const auto start = Clock::now();
  uint64_t sent = 0, completed = 0;
  while (completed < b.o_.count && r.ok) {
    while (sent < b.o_.count && !free_slots.empty()) {
      const size_t slot = free_slots.back();
      const size_t size = b.o_.pattern == "mixed" ? sizes.next() : b.o_.size;
      fill(slots[slot].data(), size, sent);
      const ssize_t ret = fi_send(e.ep, slots[slot].data(), size, nullptr, peer,
                                  reinterpret_cast<void*>(slot));
      if (ret == -FI_EAGAIN) break;
      if (ret != 0) {
        r.ok = false;
        break;
      }
      free_slots.pop_back();
      r.bytes += size;
      ++sent;
    }
    fi_cq_msg_entry entries[16];
    const ssize_t n = fi_cq_read(e.tx_cq, entries, 16);
    if (n > 0) {
      for (ssize_t i = 0; i < n; ++i) free_slots.push_back(reinterpret_cast<size_t>(entries[i].op_context));
      completed += static_cast<uint64_t>(n);
    } else if (n == -FI_EAVAIL) {
      fi_cq_msg_entry one;
      r.ok = b.wait(e.tx_cq, &one);
    } else if (std::chrono::duration<double>(Clock::now() - start).count() > b.o_.timeout * 10) {
      std::fprintf(stderr, "dpdk-fi-bench: stream did not finish\n");
      r.ok = false;
    }
  }
  r.seconds = std::chrono::duration<double>(Clock::now() - start).count();
  r.messages = completed;
  return r;
}

// Receives count messages per sender with `window` receives posted; checks
// each is the next one expected from its sender (source via the sequence in
// the first bytes), whole and byte-exact.
Result stream_server(Bench& b, const Endpoint& e, int senders, uint64_t seed) {
  Result r;
  const size_t buffer = b.o_.pattern == "mixed" ? b.o_.max_size : std::max<size_t>(b.o_.size, 8);
  std::vector<std::vector<uint8_t>> slots(b.o_.window, std::vector<uint8_t>(buffer));
  for (size_t i = 0; i < b.o_.window; ++i)
    CHECK(fi_recv(e.ep, slots[i].data(), buffer, nullptr, FI_ADDR_UNSPEC, reinterpret_cast<void*>(i)));
  SizeSequence sizes(seed, b.o_.max_size);
  std::vector<size_t> expected_sizes;
  std::vector<uint64_t> next(senders, 0);
  std::vector<uint64_t> per_sender_bytes(senders, 0);
  const uint64_t total = b.o_.count * static_cast<uint64_t>(senders);
  const auto start = Clock::now();
  for (uint64_t got = 0; got < total && r.ok; ++got) {
    fi_cq_msg_entry entry;
    if (!b.wait(e.rx_cq, &entry)) {
      r.ok = false;
      break;
    }
    const size_t slot = reinterpret_cast<size_t>(entry.op_context);
    const uint8_t* data = slots[slot].data();
    // Fixed-size streams carry the index in their first 8 bytes; with
    // several senders the sender is found by which expected index matches.
    int sender = 0;
    if (senders > 1) {
      uint64_t index;
      std::memcpy(&index, data, 8);
      sender = -1;
      for (int s = 0; s < senders; ++s)
        if (next[s] == index && verify(data, entry.len, index)) sender = s;
      if (sender < 0) {
        std::fprintf(stderr, "dpdk-fi-bench: message out of order, duplicated or corrupt\n");
        r.ok = false;
        break;
      }
    }
    const uint64_t index = next[sender]++;
    size_t want = b.o_.size;
    if (b.o_.pattern == "mixed") {
      while (expected_sizes.size() <= index) expected_sizes.push_back(sizes.next());
      want = expected_sizes[index];
    }
    if (entry.len != want || !verify(data, entry.len, index)) {
      std::fprintf(stderr, "dpdk-fi-bench: message %" PRIu64 " wrong: %zu bytes (want %zu)\n",
                   index, entry.len, want);
      r.ok = false;
      break;
    }
    per_sender_bytes[sender] += entry.len;
    r.bytes += entry.len;
    ++r.messages;
    CHECK(fi_recv(e.ep, slots[slot].data(), buffer, nullptr, FI_ADDR_UNSPEC, entry.op_context));
  }
  r.seconds = std::chrono::duration<double>(Clock::now() - start).count();
  for (uint64_t bytes : per_sender_bytes) r.sender_goodput.push_back(bytes / r.seconds / 1e6);
  return r;
}

// --pattern atomic: each client endpoint keeps up to --window fetch-adds
// in flight on one counter registered at the server endpoint.
Result atomic_clients(Bench& b, std::vector<Endpoint>& clients, fi_addr_t server,
                      uint64_t* counter, uint64_t key) {
  Result r;
  std::vector<std::vector<uint64_t>> fetched(clients.size());
  std::vector<std::vector<double>> latencies(clients.size());
  std::vector<bool> ok(clients.size(), true);
  const auto start = Clock::now();
  auto run = [&](size_t who) {
    const Endpoint& e = clients[who];
    const uint64_t one = 1;
    std::vector<uint64_t> results(b.o_.window);
    std::vector<Clock::time_point> posted(b.o_.window);
    std::vector<size_t> free_slots;
    for (size_t i = 0; i < b.o_.window; ++i) free_slots.push_back(i);
    uint64_t issued = 0, done = 0;
    while (done < b.o_.count && ok[who]) {
      while (issued < b.o_.count && !free_slots.empty()) {
        const size_t slot = free_slots.back();
        const ssize_t ret = fi_fetch_atomic(e.ep, &one, 1, nullptr, &results[slot], nullptr, server,
                                            reinterpret_cast<uint64_t>(counter), key, FI_UINT64,
                                            FI_SUM, reinterpret_cast<void*>(slot + 1));
        if (ret == -FI_EAGAIN) break;
        if (ret != 0) {
          ok[who] = false;
          return;
        }
        posted[slot] = Clock::now();
        free_slots.pop_back();
        ++issued;
      }
      fi_cq_msg_entry entry;
      if (!b.wait(e.tx_cq, &entry)) {
        ok[who] = false;
        return;
      }
      const size_t slot = reinterpret_cast<uintptr_t>(entry.op_context) - 1;
      latencies[who].push_back(
          std::chrono::duration<double, std::micro>(Clock::now() - posted[slot]).count());
      fetched[who].push_back(results[slot]);
      free_slots.push_back(slot);
      ++done;
    }
  };
  std::vector<std::thread> threads;
  for (size_t i = 1; i < clients.size(); ++i) threads.emplace_back(run, i);
  run(0);
  for (auto& t : threads) t.join();
  r.seconds = std::chrono::duration<double>(Clock::now() - start).count();
  std::vector<uint64_t> all;
  for (size_t i = 0; i < clients.size(); ++i) {
    r.ok = r.ok && ok[i];
    all.insert(all.end(), fetched[i].begin(), fetched[i].end());
    r.latencies_us.insert(r.latencies_us.end(), latencies[i].begin(), latencies[i].end());
  }
  const uint64_t total = b.o_.count * clients.size();
  std::sort(all.begin(), all.end());
  for (uint64_t i = 0; i < all.size() && r.ok; ++i)
    if (all[i] != i) {
      std::fprintf(stderr, "dpdk-fi-bench: fetched values are not 0..%" PRIu64 " once each\n",
                   total - 1);
      r.ok = false;
    }
  if (all.size() != total || *counter != total) {
    std::fprintf(stderr, "dpdk-fi-bench: counter %" PRIu64 ", want %" PRIu64 "\n", *counter, total);
    r.ok = false;
  }
  r.messages = all.size();
  r.bytes = all.size() * sizeof(uint64_t);
  return r;
}

double percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<size_t>(p / 100 * static_cast<double>(v.size())))];
}

void report(Bench& b, const Result& r, const std::vector<Endpoint>& eps) {
  const auto port = b.port_stats();
  std::printf("{\"role\":\"%s\",\"pattern\":\"%s\",\"ok\":%s,\"messages\":%" PRIu64
              ",\"bytes\":%" PRIu64 ",\"seconds\":%.6f,\"goodput_MBps\":%.2f,\"msg_rate\":%.0f",
              b.o_.role.c_str(), b.o_.pattern.c_str(), r.ok ? "true" : "false", r.messages,
              r.bytes, r.seconds, r.seconds > 0 ? r.bytes / r.seconds / 1e6 : 0.0,
              r.seconds > 0 ? r.messages / r.seconds : 0.0);
  if (!r.latencies_us.empty())
    std::printf(",\"size\":%zu,\"latency_us\":{\"p50\":%.2f,\"p90\":%.2f,\"p99\":%.2f,\"p999\":%.2f}",
                b.o_.size, percentile(r.latencies_us, 50), percentile(r.latencies_us, 90),
                percentile(r.latencies_us, 99), percentile(r.latencies_us, 99.9));
  if (!r.sender_goodput.empty() && r.sender_goodput.size() > 1) {
    double sum = 0, squares = 0;
    std::printf(",\"sender_goodput_MBps\":[");
    for (size_t i = 0; i < r.sender_goodput.size(); ++i) {
      std::printf("%s%.2f", i ? "," : "", r.sender_goodput[i]);
      sum += r.sender_goodput[i];
      squares += r.sender_goodput[i] * r.sender_goodput[i];
    }
    std::printf("],\"jain_fairness\":%.3f", sum * sum / (r.sender_goodput.size() * squares));
  }
  std::printf(",\"retransmitted\":%" PRIu64 ",\"fault_dropped\":%" PRIu64
              ",\"fault_reordered\":%" PRIu64 ",\"fault_duplicated\":%" PRIu64 "}\n",
              b.retransmitted(eps), port.fault_dropped, port.fault_reordered,
              port.fault_duplicated);
}

}  // namespace

int main(int argc, char** argv) {
  ofi_dpdk::app::point_libfabric_at_provider();
  const int consumed = fi_dpdk_eal_init(argc, argv);
  if (consumed < 0) fail_setup(std::string("EAL did not start: ") + fi_strerror(-consumed));
  const Options o = parse(argc - consumed, argv + consumed);
  Bench b(o);
  b.open();
  const int senders = o.pattern == "fanin" || o.pattern == "atomic" ? o.senders : 1;
  bool ok = true;
  if (o.role == "both") {
    // Everything in one process on one port: server endpoint 0, senders after.
    std::vector<Endpoint> server{b.make_endpoint()};
    std::vector<Endpoint> clients;
    for (int i = 0; i < senders; ++i) clients.push_back(b.make_endpoint());
    const fi_addr_t server_addr = b.insert(server[0].name);
    if (o.pattern == "atomic") {
      // The server endpoint only serves: the clients' CQ reads progress the
      // port they share with it.
      alignas(64) static uint64_t counter = 0;
      fid_mr* mr = nullptr;
      CHECK(fi_mr_reg(b.domain_, &counter, sizeof(counter), FI_REMOTE_READ | FI_REMOTE_WRITE, 0,
                      0, 0, &mr, nullptr));
      const Result r = atomic_clients(b, clients, server_addr, &counter, fi_mr_key(mr));
      report(b, r, clients);
      ok = r.ok;
      fi_close(&mr->fid);
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
  } else if (o.role == "server") {
    std::vector<Endpoint> eps{b.make_endpoint()};
    const auto peers = b.exchange(eps, "server", "client");
    std::vector<fi_addr_t> addrs;
    for (const auto& name : peers) addrs.push_back(b.insert(name));
    const Result r = o.pattern == "latency" ? latency_server(b, eps[0], addrs[0])
                                            : stream_server(b, eps[0], static_cast<int>(addrs.size()), o.seed);
    report(b, r, eps);
    ok = r.ok;
    b.close(eps);
  } else {
    std::vector<Endpoint> eps;
    for (int i = 0; i < senders; ++i) eps.push_back(b.make_endpoint());
    const auto peers = b.exchange(eps, "client", "server");
    const fi_addr_t server_addr = b.insert(peers.at(0));
    Result r;
    if (o.pattern == "latency") {
      r = latency_client(b, eps[0], server_addr);
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
    ok = r.ok;
    b.close(eps);
  }
  b.finish();
  return ok ? 0 : 1;
}
