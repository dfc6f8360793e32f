// lockout_peer: the two honest sides of the held-segment lock-out test
// (test_lockout.sh).  The target is one endpoint that takes messages from
// whoever sends, for as long as the test runs; the client measures how fast
// the target takes its messages before an attack, keeps a trickle going
// during it, and measures again after it, on its own endpoint (a peer the
// target knew before) and on a new one (a peer it never saw).
//
// Each side has a second port, the control: an endpoint pair on a second
// link the adversary never touches, served by the same two processes.  The
// client measures it in turn with the attacked pair, before and after, so
// the test can tell a target the attack slowed from a machine that got
// busier between the two looks: the control sees the machine, not the
// attack.
//
//   lockout_peer [EAL args] -- --role target --rendezvous DIR [--limit S]
//   lockout_peer [EAL args] -- --role client --rendezvous DIR [--limit S]
//
// The attacked port is the EAL's first (--port, net_af_packet0 by default),
// the control its second (--control-port, net_af_packet1).  Files in DIR:
// `server` and `client` hold each side's attacked endpoint name (hex of the
// native address, the form the adversary reads; the target's also a
// `region 0 0` line), `control` the target's control endpoint; the client
// writes `before` once it has measured, and measures again once
// `attack-done` appears; the target ends when `stop` appears.  The client
// prints one JSON line: the best rate of three tries of --try-ms each
// before, of five after, in MB/s (old endpoint, new endpoint, and the
// control beside each look).  Exit status 0, 1 on an error completion, 2 on
// set-up errors.
#include <fi_dpdk.h>
#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "app/common/provider_path.h"

namespace {

using Clock = std::chrono::steady_clock;

constexpr size_t kMessageBytes = 64 * 1024;
constexpr size_t kReceives = 64;
constexpr size_t kWindow = 16;

struct Options {
  std::string role;
  std::string rendezvous;
  double limit_s = 240;
  int try_ms = 700;
  std::string port = "net_af_packet0";
  std::string control_port = "net_af_packet1";
};

[[noreturn]] void setup_error(const std::string& what) {
  std::fprintf(stderr, "lockout_peer: %s\n", what.c_str());
  std::exit(2);
}

void check(int ret, const char* what) {
  if (ret != 0) setup_error(std::string(what) + ": " + fi_strerror(-ret));
}

bool exists(const std::string& path) {
  return std::filesystem::exists(path);
}

void write_file(const std::string& path, const std::string& text) {
  const std::string partial = path + ".partial";
  std::ofstream(partial) << text;
  std::filesystem::rename(partial, path);
}

std::string hex(const std::string& bytes) {
  std::string out;
  for (unsigned char c : bytes) {
    out += "0123456789abcdef"[c >> 4];
    out += "0123456789abcdef"[c & 15];
  }
  return out;
}

std::string read_name(const std::string& path) {
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);
  std::string bytes;
  for (size_t i = 0; i + 1 < line.size(); i += 2)
    bytes += static_cast<char>(std::stoi(line.substr(i, 2), nullptr, 16));
  return bytes;
}

class Fabric {
 public:
  Fabric(const Fabric&) = delete;
  Fabric& operator=(const Fabric&) = delete;
  // After every endpoint on it closed (its domain is busy till then).
  ~Fabric() {
    fi_close(&av_->fid);
    fi_close(&domain_->fid);
    fi_close(&fabric_->fid);
    fi_freeinfo(info_);
  }
  explicit Fabric(const std::string& port) {
    fi_info* hints = fi_allocinfo();
    hints->fabric_attr->prov_name = strdup("dpdk");
    hints->domain_attr->name = strdup(port.c_str());
    hints->ep_attr->type = FI_EP_RDM;
    hints->caps = FI_MSG;
    hints->domain_attr->mr_mode = FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | FI_MR_PROV_KEY;
    check(fi_getinfo(FI_VERSION(1, 17), nullptr, nullptr, 0, hints, &info_), "fi_getinfo");
    fi_freeinfo(hints);
    check(fi_fabric(info_->fabric_attr, &fabric_, nullptr), "fi_fabric");
    check(fi_domain(fabric_, info_, &domain_, nullptr), "fi_domain");
    fi_av_attr av_attr{};
    av_attr.type = FI_AV_TABLE;
    check(fi_av_open(domain_, &av_attr, &av_, nullptr), "fi_av_open");
  }
  fid_domain* domain() const { return domain_; }
  fi_info* info() const { return info_; }
  fid_av* av() const { return av_; }

 private:
  fi_info* info_ = nullptr;
  fid_fabric* fabric_ = nullptr;
  fid_domain* domain_ = nullptr;
  fid_av* av_ = nullptr;
};

struct Endpoint {
  fid_ep* ep = nullptr;
  fid_cq* cq = nullptr;
  std::string name;
  void close() {
    if (ep != nullptr) fi_close(&ep->fid);
    if (cq != nullptr) fi_close(&cq->fid);
    ep = nullptr;
    cq = nullptr;
  }
};

Endpoint open_endpoint(const Fabric& f) {
  Endpoint e;
  fi_cq_attr attr{};
  attr.format = FI_CQ_FORMAT_CONTEXT;
  check(fi_cq_open(f.domain(), &attr, &e.cq, nullptr), "fi_cq_open");
  check(fi_endpoint(f.domain(), f.info(), &e.ep, nullptr), "fi_endpoint");
  check(fi_ep_bind(e.ep, &f.av()->fid, 0), "bind av");
  check(fi_ep_bind(e.ep, &e.cq->fid, FI_TRANSMIT | FI_RECV), "bind cq");
  check(fi_enable(e.ep), "fi_enable");
  char name[64];
  size_t len = sizeof(name);
  check(fi_getname(&e.ep->fid, name, &len), "fi_getname");
  e.name.assign(name, len);
  return e;
}

// Reads the CQ once: completions, or -1 after an error completion (logged).
ssize_t reap(const Endpoint& e, std::vector<void*>* done) {
  fi_cq_entry entries[16];
  const ssize_t n = fi_cq_read(e.cq, entries, 16);
  if (n > 0) {
    for (ssize_t i = 0; i < n; ++i) done->push_back(entries[i].op_context);
    return n;
  }
  if (n == -FI_EAVAIL) {
    fi_cq_err_entry err{};
    fi_cq_readerr(e.cq, &err, 0);
    std::fprintf(stderr, "lockout_peer: error completion: %s (prov_errno %d)\n",
                 fi_strerror(err.err), err.prov_errno);
    return -1;
  }
  return 0;
}

// An endpoint that takes 64 KiB messages from anyone and posts each
// buffer again as it completes.
class Sink {
 public:
  explicit Sink(const Fabric& f)
      : e_(open_endpoint(f)), buffers_(kReceives, std::vector<uint8_t>(kMessageBytes)) {
    for (auto& buffer : buffers_) post(&buffer);
  }
  ~Sink() { e_.close(); }
  const std::string& name() const { return e_.name; }
  uint64_t received() const { return received_; }

  // One look at the CQ; false after an error completion.
  bool serve() {
    if (reap(e_, &done_) < 0) return false;
    for (void* context : done_) {
      ++received_;
      post(static_cast<std::vector<uint8_t>*>(context));
    }
    done_.clear();
    return true;
  }

 private:
  void post(std::vector<uint8_t>* buffer) {
    ssize_t ret;
    while ((ret = fi_recv(e_.ep, buffer->data(), kMessageBytes, nullptr, FI_ADDR_UNSPEC, buffer)) ==
           -FI_EAGAIN)
      reap(e_, &done_);
    check(static_cast<int>(ret), "fi_recv");
  }

  Endpoint e_;
  std::vector<std::vector<uint8_t>> buffers_;
  std::vector<void*> done_;
  uint64_t received_ = 0;
};

// Which of the target's endpoints the client measures, from the `lane`
// file: the target serves that one alone (and the other once in a while),
// so that what the attack costs the attacked endpoint's passes is not paid
// by the control's tries too.
struct Serving {
  bool attacked = true;
  bool control = true;
};

Serving read_lane(const std::string& rendezvous) {
  std::ifstream in(rendezvous + "/lane");
  std::string lane;
  std::getline(in, lane);
  if (lane == "attacked") return {true, false};
  if (lane == "control") return {false, true};
  return {};
}

int run_target(const Options& o) {
  Fabric attacked_port(o.port), control_port(o.control_port);
  Sink attacked(attacked_port), control(control_port);
  write_file(o.rendezvous + "/control", hex(control.name()) + "\n");
  write_file(o.rendezvous + "/server", hex(attacked.name()) + "\nregion 0 0\n");
  const auto deadline = Clock::now() + std::chrono::duration<double>(o.limit_s);
  Serving serving;
  uint64_t polls = 0;
  while (Clock::now() < deadline) {
    const bool look_around = ++polls % 4096 == 0;
    if ((serving.attacked || look_around) && !attacked.serve()) return 1;
    if ((serving.control || look_around) && !control.serve()) return 1;
    if (look_around) {
      if (exists(o.rendezvous + "/stop")) break;
      serving = read_lane(o.rendezvous);
    }
  }
  std::printf("{\"role\": \"target\", \"received\": %llu, \"control_received\": %llu}\n",
              static_cast<unsigned long long>(attacked.received()),
              static_cast<unsigned long long>(control.received()));
  return 0;
}

// One endpoint and the target it measures.
struct Lane {
  const Endpoint* endpoint;
  fi_addr_t to;
  const char* label;
  const char* side;  // what the target serves meanwhile: "attacked" or "control"
};

class Client {
 public:
  explicit Client(const Options& o) : o_(o), payload_(kMessageBytes, 0x5a) {}

  // The best rate of each lane in `tries` rounds, MB/s, the lanes taking
  // turns within a round; empty after an error completion.  The best,
  // because a busy machine only ever takes from a try: what the target can
  // do shows in the least disturbed one.
  std::vector<double> best_rates(const std::vector<Lane>& lanes, int tries) {
    std::vector<double> best(lanes.size(), 0);
    for (int attempt = 0; attempt < tries; ++attempt)
      for (size_t i = 0; i < lanes.size(); ++i) {
        write_file(o_.rendezvous + "/lane", std::string(lanes[i].side) + "\n");
        const double rate = rate_once(*lanes[i].endpoint, lanes[i].to);
        if (rate < 0) return {};
        // Each try on stderr: a failing run shows whether the load or the
        // target took the rate.
        std::fprintf(stderr, "lockout_peer: %s try %d of %d: %.1f MB/s\n", lanes[i].label,
                     attempt + 1, tries, rate);
        best[i] = std::max(best[i], rate);
      }
    return best;
  }

  // Small messages, one at a time, until `file` appears: a peer that keeps
  // talking through the attack.
  bool trickle_until(const Endpoint& e, fi_addr_t to, const std::string& file) {
    std::vector<void*> done;
    for (uint64_t n = 0; !exists(file); ++n) {
      ssize_t ret;
      while ((ret = fi_send(e.ep, payload_.data(), 8, nullptr, to, &payload_)) == -FI_EAGAIN)
        if (reap(e, &done) < 0) return false;
      if (ret != 0) return false;
      const auto until = Clock::now() + std::chrono::milliseconds(5);
      while (Clock::now() < until)
        if (reap(e, &done) < 0) return false;
    }
    return drain(e);
  }

 private:
  double rate_once(const Endpoint& e, fi_addr_t to) {
    std::vector<void*> done;
    size_t in_flight = 0;
    uint64_t completed = 0;
    const auto start = Clock::now();
    const auto until = start + std::chrono::milliseconds(o_.try_ms);
    while (Clock::now() < until) {
      while (in_flight < kWindow) {
        const ssize_t ret = fi_send(e.ep, payload_.data(), kMessageBytes, nullptr, to, &payload_);
        if (ret == -FI_EAGAIN) break;
        if (ret != 0) return -1;
        ++in_flight;
      }
      const ssize_t n = reap(e, &done);
      if (n < 0) return -1;
      in_flight -= static_cast<size_t>(n);
      completed += static_cast<uint64_t>(n);
      done.clear();
    }
    const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
    if (!drain(e, &in_flight)) return -1;
    return static_cast<double>(completed) * kMessageBytes / seconds / 1e6;
  }

  bool drain(const Endpoint& e, size_t* in_flight = nullptr) {
    std::vector<void*> done;
    const auto limit = Clock::now() + std::chrono::seconds(60);
    size_t left = in_flight != nullptr ? *in_flight : 0;
    while (left > 0 && Clock::now() < limit) {
      const ssize_t n = reap(e, &done);
      if (n < 0) return false;
      left -= std::min<size_t>(left, static_cast<size_t>(n));
    }
    // A trickle's last send: whatever is still out completes or errs here.
    for (int i = 0; i < 1000; ++i)
      if (reap(e, &done) < 0) return false;
    if (in_flight != nullptr) *in_flight = left;
    return left == 0;
  }

  const Options& o_;
  std::vector<uint8_t> payload_;
};

fi_addr_t insert_named(const Fabric& fabric, const std::string& file, double limit_s) {
  const auto deadline = Clock::now() + std::chrono::duration<double>(limit_s);
  while (!exists(file)) {
    if (Clock::now() > deadline) setup_error("no target named in " + file);
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  const std::string name = read_name(file);
  fi_addr_t addr = FI_ADDR_UNSPEC;
  if (fi_av_insert(fabric.av(), name.data(), 1, &addr, 0, nullptr) != 1)
    setup_error("fi_av_insert of the target in " + file + " failed");
  return addr;
}

int run_client(const Options& o) {
  Fabric attacked_port(o.port), control_port(o.control_port);
  Endpoint old_peer = open_endpoint(attacked_port);
  Endpoint control_peer = open_endpoint(control_port);
  const fi_addr_t target = insert_named(attacked_port, o.rendezvous + "/server", o.limit_s);
  const fi_addr_t control = insert_named(control_port, o.rendezvous + "/control", o.limit_s);
  write_file(o.rendezvous + "/client", hex(old_peer.name) + "\n");

  Client client(o);
  const std::vector<double> before = client.best_rates(
      {{&old_peer, target, "before", "attacked"}, {&control_peer, control, "control", "control"}},
      3);
  if (before.empty()) return 1;
  write_file(o.rendezvous + "/before", std::to_string(before[0]) + "\n");
  write_file(o.rendezvous + "/lane", "both\n");
  if (!client.trickle_until(old_peer, target, o.rendezvous + "/attack-done")) return 1;
  Endpoint new_peer = open_endpoint(attacked_port);
  const std::vector<double> after =
      client.best_rates({{&old_peer, target, "after, old peer", "attacked"},
                         {&control_peer, control, "control", "control"},
                         {&new_peer, target, "after, new peer", "attacked"}},
                        5);
  if (after.empty()) return 1;
  std::printf(
      "{\"role\": \"client\", \"before_MBps\": %.1f, \"before_control_MBps\": %.1f, "
      "\"after_old_MBps\": %.1f, \"after_new_MBps\": %.1f, \"after_control_MBps\": %.1f}\n",
      before[0], before[1], after[0], after[2], after[1]);
  new_peer.close();
  control_peer.close();
  old_peer.close();
  return 0;
}

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 0; i < argc; ++i) {
    const std::string arg = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) setup_error(arg + " needs a value");
      return argv[++i];
    };
    if (arg == "--role")
      o.role = value();
    else if (arg == "--rendezvous")
      o.rendezvous = value();
    else if (arg == "--limit")
      o.limit_s = std::stod(value());
    else if (arg == "--try-ms")
      o.try_ms = std::stoi(value());
    else if (arg == "--port")
      o.port = value();
    else if (arg == "--control-port")
      o.control_port = value();
    else
      setup_error("unknown option " + arg);
  }
  if ((o.role != "target" && o.role != "client") || o.rendezvous.empty())
    setup_error("--role target|client and --rendezvous DIR are required");
  return o;
}

}  // namespace

int main(int argc, char** argv) {
  ofi_dpdk::app::point_libfabric_at_provider();
  const int consumed = fi_dpdk_eal_init(argc, argv);
  if (consumed < 0) setup_error(std::string("EAL: ") + fi_strerror(-consumed));
  const Options o = parse(argc - consumed, argv + consumed);
  return o.role == "target" ? run_target(o) : run_client(o);
}
