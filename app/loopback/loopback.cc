// dpdk-fi-loopback: the testpmd-style loopback tester.  It is an ordinary
// fi_* program that hands its EAL arguments to the provider, opens endpoints
// on one DPDK port, runs a traffic pattern between them through that port,
// checks every byte, and prints per-endpoint counters.
//
//   dpdk-fi-loopback [EAL args] -- [--pattern pingpong|stream] [--count N]
//       [--seconds T] [--size BYTES] [--endpoints N] [--port NAME]
//       [--timeout SECONDS] [--rounds R]
//
// --rounds R opens the fabric, domain and endpoints, runs, and closes them
// R times in the one process: a port must serve the next domain after the
// last one let it go.
//
// Exits 0 when every message arrived once with the right bytes, 1 on any
// mismatch or timeout, 2 on bad arguments or set-up failure.
#include <fi_dpdk.h>
#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>

#include <chrono>
#include <cinttypes>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "app/common/long_options.h"
#include "app/common/option_number.h"
#include "app/common/provider_path.h"

namespace {

using Clock = std::chrono::steady_clock;

struct Options {
  std::string pattern = "pingpong";
  uint64_t count = 1000;
  double seconds = 0;  // when > 0, run for this long instead of count
  size_t size = 64;
  int endpoints = 2;
  std::string port;
  double timeout = 10;
  uint64_t rounds = 1;
};

constexpr const char* kUsage =
    "usage: dpdk-fi-loopback [EAL args] -- [--pattern pingpong|stream] [--count N]\n"
    "       [--seconds T] [--size BYTES] [--endpoints N] [--port NAME] [--timeout SECONDS]\n"
    "       [--rounds R]\n";

[[noreturn]] void usage_error(const char* text) {
  std::fprintf(stderr, "dpdk-fi-loopback: %s\n%s", text, kUsage);
  std::exit(2);
}

Options parse_options(int argc, char** argv) {
  Options o;
  auto number = [](const std::string& name, const char* text, auto* out) {
    const auto parsed = ofi_dpdk::app::option_number<std::remove_pointer_t<decltype(out)>>(text);
    if (!parsed) usage_error(("option --" + name + ": not a number: " + text).c_str());
    *out = *parsed;
  };
  ofi_dpdk::app::read_long_options(
      "dpdk-fi-loopback", argc, argv,
      {{"pattern", true},
       {"count", true},
       {"seconds", true},
       {"size", true},
       {"endpoints", true},
       {"port", true},
       {"timeout", true},
       {"rounds", true},
       {"help", false}},
      [&](const std::string& name, const char* value) {
        if (name == "pattern")
          o.pattern = value;
        else if (name == "count")
          number(name, value, &o.count);
        else if (name == "seconds")
          number(name, value, &o.seconds);
        else if (name == "size")
          number(name, value, &o.size);
        else if (name == "endpoints")
          number(name, value, &o.endpoints);
        else if (name == "port")
          o.port = value;
        else if (name == "timeout")
          number(name, value, &o.timeout);
        else if (name == "rounds")
          number(name, value, &o.rounds);
        else if (name == "help") {
          std::fputs(kUsage, stdout);
          std::exit(0);
        }
      },
      [](const std::string& why) { usage_error(why.c_str()); });
  if (o.pattern != "pingpong" && o.pattern != "stream") usage_error("unknown pattern");
  if (o.endpoints < 2 || o.endpoints > 16) usage_error("--endpoints wants 2..16");
  if (o.size == 0) usage_error("--size wants at least 1 byte");
  if (o.rounds == 0) usage_error("--rounds wants at least 1");
  return o;
}

#define CHECK(call)                                                                       \
  do {                                                                                    \
    int check_ret = static_cast<int>(call);                                               \
    if (check_ret != 0) {                                                                 \
      std::fprintf(stderr, "dpdk-fi-loopback: %s: %s\n", #call, fi_strerror(-check_ret)); \
      std::exit(2);                                                                       \
    }                                                                                     \
  } while (0)

struct Peer {
  fid_ep* ep = nullptr;
  fid_cq* tx_cq = nullptr;
  fid_cq* rx_cq = nullptr;
  fi_addr_t addr = FI_ADDR_UNSPEC;
  std::vector<uint8_t> tx_buf, rx_buf;
  uint64_t sent = 0, received = 0, mismatched = 0;
};

void fill(uint8_t* buf, size_t size, uint64_t sequence) {
  for (size_t i = 0; i < size; ++i) buf[i] = static_cast<uint8_t>(sequence * 131 + i * 7);
}

bool verify(const uint8_t* buf, size_t size, uint64_t sequence) {
  for (size_t i = 0; i < size; ++i)
    if (buf[i] != static_cast<uint8_t>(sequence * 131 + i * 7)) return false;
  return true;
}

class Tester {
 public:
  explicit Tester(const Options& options) : o_(options) {}

  void open() {
    fi_info* hints = fi_allocinfo();
    hints->fabric_attr->prov_name = strdup("dpdk");
    hints->ep_attr->type = FI_EP_RDM;
    hints->caps = FI_MSG;
    if (!o_.port.empty()) hints->domain_attr->name = strdup(o_.port.c_str());
    int ret = fi_getinfo(FI_VERSION(1, 17), nullptr, nullptr, 0, hints, &info_);
    fi_freeinfo(hints);
    if (ret != 0) {
      std::fprintf(stderr,
                   "dpdk-fi-loopback: no dpdk port to test (fi_getinfo: %s); "
                   "FI_LOG_LEVEL=info says why\n",
                   fi_strerror(-ret));
      std::exit(2);
    }
    if (o_.size > info_->ep_attr->max_msg_size) {
      std::fprintf(stderr, "dpdk-fi-loopback: --size %zu exceeds max_msg_size %zu\n", o_.size,
                   info_->ep_attr->max_msg_size);
      std::exit(2);
    }
    CHECK(fi_fabric(info_->fabric_attr, &fabric_, nullptr));
    CHECK(fi_domain(fabric_, info_, &domain_, nullptr));
    fi_av_attr av_attr{};
    av_attr.type = FI_AV_TABLE;
    CHECK(fi_av_open(domain_, &av_attr, &av_, nullptr));
    peers_.resize(o_.endpoints);
    for (Peer& p : peers_) {
      fi_cq_attr cq_attr{};
      cq_attr.format = FI_CQ_FORMAT_MSG;
      cq_attr.size = 1024;
      CHECK(fi_cq_open(domain_, &cq_attr, &p.tx_cq, nullptr));
      CHECK(fi_cq_open(domain_, &cq_attr, &p.rx_cq, nullptr));
      CHECK(fi_endpoint(domain_, info_, &p.ep, nullptr));
      CHECK(fi_ep_bind(p.ep, &av_->fid, 0));
      CHECK(fi_ep_bind(p.ep, &p.tx_cq->fid, FI_TRANSMIT));
      CHECK(fi_ep_bind(p.ep, &p.rx_cq->fid, FI_RECV));
      CHECK(fi_enable(p.ep));
      uint8_t name[64];
      size_t len = sizeof(name);
      CHECK(fi_getname(&p.ep->fid, name, &len));
      if (fi_av_insert(av_, name, 1, &p.addr, 0, nullptr) != 1) {
        std::fprintf(stderr, "dpdk-fi-loopback: fi_av_insert failed\n");
        std::exit(2);
      }
      p.tx_buf.resize(o_.size);
      p.rx_buf.resize(o_.size * kWindow);
      char text[64];
      size_t text_len = sizeof(text);
      fi_av_straddr(av_, name, text, &text_len);
      std::printf("endpoint %zu: %s\n", static_cast<size_t>(&p - peers_.data()), text);
    }
    CHECK(fi_open_ops(&domain_->fid, FI_DPDK_STATS_OPS_NAME, 0, reinterpret_cast<void**>(&stats_),
                      nullptr));
  }

  // Runs the pattern between endpoint pairs (0,1), (2,3), ...  Returns
  // false on any mismatch or timeout.
  bool run() {
    const auto start = Clock::now();
    bool ok = true;
    if (o_.pattern == "pingpong") {
      for (size_t a = 0; a + 1 < peers_.size(); a += 2) ok &= pingpong(peers_[a], peers_[a + 1]);
    } else {
      for (size_t a = 0; a + 1 < peers_.size(); a += 2) ok &= stream(peers_[a], peers_[a + 1]);
    }
    const double elapsed = std::chrono::duration<double>(Clock::now() - start).count();
    report(elapsed);
    return ok;
  }

  void close() {
    for (Peer& p : peers_) {
      fi_close(&p.ep->fid);
      fi_close(&p.tx_cq->fid);
      fi_close(&p.rx_cq->fid);
    }
    fi_close(&av_->fid);
    fi_close(&domain_->fid);
    fi_close(&fabric_->fid);
    fi_freeinfo(info_);
  }

 private:
  static constexpr size_t kWindow = 16;

  bool done(uint64_t iteration, Clock::time_point start) const {
    if (o_.seconds > 0)
      return std::chrono::duration<double>(Clock::now() - start).count() >= o_.seconds;
    return iteration >= o_.count;
  }

  // Waits for one completion on cq; false on timeout or error completion.
  bool wait(fid_cq* cq, fi_cq_msg_entry* entry) {
    const auto deadline = Clock::now() + std::chrono::duration<double>(o_.timeout);
    for (;;) {
      ssize_t ret = fi_cq_read(cq, entry, 1);
      if (ret == 1) return true;
      if (ret == -FI_EAVAIL) {
        fi_cq_err_entry err{};
        fi_cq_readerr(cq, &err, 0);
        std::fprintf(stderr, "dpdk-fi-loopback: error completion: %s\n", fi_strerror(err.err));
        return false;
      }
      if (ret != -FI_EAGAIN) return false;
      if (Clock::now() > deadline) {
        std::fprintf(stderr, "dpdk-fi-loopback: no completion within %.1f s\n", o_.timeout);
        return false;
      }
    }
  }

  bool post_send(Peer& from, const Peer& to, uint64_t sequence) {
    fill(from.tx_buf.data(), o_.size, sequence);
    const auto deadline = Clock::now() + std::chrono::duration<double>(o_.timeout);
    for (;;) {
      ssize_t ret = fi_send(from.ep, from.tx_buf.data(), o_.size, nullptr, to.addr, nullptr);
      if (ret == 0) break;
      if (ret != -FI_EAGAIN || Clock::now() > deadline) return false;
      fi_cq_msg_entry drain;
      fi_cq_read(from.tx_cq, &drain, 0);
    }
    fi_cq_msg_entry entry;
    if (!wait(from.tx_cq, &entry)) return false;
    ++from.sent;
    return true;
  }

  bool receive(Peer& at, uint8_t* buf, uint64_t sequence) {
    fi_cq_msg_entry entry;
    if (!wait(at.rx_cq, &entry)) return false;
    ++at.received;
    if (entry.len != o_.size || !verify(buf, o_.size, sequence)) {
      ++at.mismatched;
      return false;
    }
    return true;
  }

  bool pingpong(Peer& a, Peer& b) {
    const auto start = Clock::now();
    for (uint64_t i = 0; !done(i, start); ++i) {
      CHECK(fi_recv(b.ep, b.rx_buf.data(), o_.size, nullptr, FI_ADDR_UNSPEC, nullptr));
      CHECK(fi_recv(a.ep, a.rx_buf.data(), o_.size, nullptr, FI_ADDR_UNSPEC, nullptr));
      if (!post_send(a, b, 2 * i) || !receive(b, b.rx_buf.data(), 2 * i)) return false;
      if (!post_send(b, a, 2 * i + 1) || !receive(a, a.rx_buf.data(), 2 * i + 1)) return false;
      ++operations_;
    }
    return true;
  }

  // a sends a stream to b with kWindow receives posted ahead; messages must
  // arrive in sequence (single queue, no loss injected).
  bool stream(Peer& a, Peer& b) {
    const auto start = Clock::now();
    uint64_t next_expected = 0;
    for (size_t slot = 0; slot < kWindow; ++slot)
      CHECK(fi_recv(b.ep, b.rx_buf.data() + slot * o_.size, o_.size, nullptr, FI_ADDR_UNSPEC,
                    reinterpret_cast<void*>(slot)));
    uint64_t i = 0;
    for (; !done(i, start); ++i) {
      if (!post_send(a, b, i)) return false;
      if (i + 1 - next_expected >= kWindow / 2) {
        if (!drain_one(b, next_expected++)) return false;
      }
    }
    while (next_expected < i)
      if (!drain_one(b, next_expected++)) return false;
    operations_ += i;
    return true;
  }

  bool drain_one(Peer& b, uint64_t sequence) {
    fi_cq_msg_entry entry;
    if (!wait(b.rx_cq, &entry)) return false;
    ++b.received;
    const auto slot = reinterpret_cast<size_t>(entry.op_context);
    uint8_t* buf = b.rx_buf.data() + slot * o_.size;
    const bool ok = entry.len == o_.size && verify(buf, o_.size, sequence);
    if (!ok) ++b.mismatched;
    CHECK(fi_recv(b.ep, buf, o_.size, nullptr, FI_ADDR_UNSPEC, entry.op_context));
    return ok;
  }

  void report(double elapsed) {
    fi_dpdk_port_stats port{};
    stats_->port_stats(domain_, &port);
    std::printf("pattern %s, %zu-byte messages, %" PRIu64 " operations in %.3f s (%.0f ops/s)\n",
                o_.pattern.c_str(), o_.size, operations_, elapsed,
                elapsed > 0 ? static_cast<double>(operations_) / elapsed : 0.0);
    std::printf("port %s: %u queue pair(s), %s steering, rx %" PRIu64 " tx %" PRIu64
                " frames, fault injector dropped %" PRIu64 " duplicated %" PRIu64
                " reordered %" PRIu64 " corrupted %" PRIu64 " delayed %" PRIu64 "\n",
                info_->domain_attr->name, port.queues,
                port.steering == 1   ? "rte_flow"
                : port.steering == 2 ? "RSS"
                : port.steering == 3 ? "by-sender"
                                     : "software",
                port.rx_frames, port.tx_frames, port.fault_dropped, port.fault_duplicated,
                port.fault_reordered, port.fault_corrupted, port.fault_delayed);
    // The last four columns are the timer waits (fi_dpdk_ep_waits): RTOs,
    // tail loss probes, window probes, delayed acks.
    std::printf("%-9s %10s %10s %10s %13s %12s %10s %7s %7s %7s %7s\n", "endpoint", "sent",
                "received", "mismatched", "retransmitted", "bad frames", "no buffer", "rto", "tlp",
                "winprb", "delack");
    const bool has_waits =
        stats_->size >= offsetof(fi_dpdk_ops_stats, ep_waits) + sizeof(stats_->ep_waits);
    for (size_t i = 0; i < peers_.size(); ++i) {
      fi_dpdk_ep_stats s{};
      stats_->ep_stats(peers_[i].ep, &s);
      fi_dpdk_ep_waits w{};
      if (has_waits) stats_->ep_waits(peers_[i].ep, &w);
      std::printf("%-9zu %10" PRIu64 " %10" PRIu64 " %10" PRIu64 " %13" PRIu64 " %12" PRIu64
                  " %10" PRIu64 " %7" PRIu64 " %7" PRIu64 " %7" PRIu64 " %7" PRIu64 "\n",
                  i, peers_[i].sent, peers_[i].received, peers_[i].mismatched, s.retransmitted,
                  s.dropped_bad_frame, s.dropped_no_buffer, w.retransmit_timeouts,
                  w.tail_loss_probes, w.window_probes, w.delayed_acks);
    }
  }

  Options o_;
  fi_info* info_ = nullptr;
  fid_fabric* fabric_ = nullptr;
  fid_domain* domain_ = nullptr;
  fid_av* av_ = nullptr;
  fi_dpdk_ops_stats* stats_ = nullptr;
  std::vector<Peer> peers_;
  uint64_t operations_ = 0;
};

}  // namespace

int main(int argc, char** argv) {
  ofi_dpdk::app::point_libfabric_at_provider();
  const int consumed = fi_dpdk_eal_init(argc, argv);
  if (consumed < 0) {
    std::fprintf(stderr, "dpdk-fi-loopback: EAL did not start (%s); see the log above\n",
                 fi_strerror(-consumed));
    return 2;
  }
  const Options options = parse_options(argc - consumed, argv + consumed);
  bool ok = true;
  for (uint64_t round = 1; ok && round <= options.rounds; ++round) {
    if (options.rounds > 1)
      std::printf("round %" PRIu64 " of %" PRIu64 "\n", round, options.rounds);
    Tester tester(options);
    tester.open();
    ok = tester.run();
    tester.close();
  }
  std::printf("%s\n",
              ok ? "loopback: all messages arrived once, bytes verified" : "loopback: MISMATCH");
  return ok ? 0 : 1;
}
