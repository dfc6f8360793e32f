// table_peer: the honest sides of the table tests (test_tables.sh), each a
// plain fi_* program that names its peers by IPv6 address, as a user would.
//
//   table_peer [EAL args] -- --role ROLE --rendezvous DIR [--peer ADDRESS]
//              [--count N] [--limit S]
//
// Roles (the target ones on service 9228, queue 0, of their port):
//   rdm-target    an RDM endpoint with a region (key 0x7AB1E, FI_REMOTE_READ
//                 and WRITE) that takes messages from whoever sends and
//                 inserts no one; writes DIR/ready, ends at DIR/stop.
//   rdm-client    reaches the rdm-target at --peer: a round of 8 messages,
//                 a write and a read back of the region; DIR/round1; then,
//                 idle, waits for DIR/flooded and does a second round.
//                 DIR/round2 holds "ok" or why not.  Exit 1 when it failed.
//   dgram-target  a DGRAM endpoint (FI_SOURCE) that posts no receive until
//                 DIR/drain: until then what arrives waits as unexpected
//                 (or is dropped).  --peer is the dgram-client's address,
//                 inserted so that FI_SOURCE names it.  Then it takes
//                 everything that waits, and writes DIR/dgram-result:
//                 "client N others M".
//   dgram-client  waits for DIR/flooded, sends --count datagrams of 512
//                 bytes to the dgram-target at --peer, writes DIR/sent.
//   msg-target    a passive endpoint.  Until DIR/accept it answers no
//                 connection request and counts them (DIR/requests-held:
//                 the count once it has been still for a second); then it
//                 refuses those and accepts every later one: a message,
//                 the client's shutdown, the endpoint closed.  At DIR/stop
//                 it writes DIR/msg-result "accepted N failed M".
//   msg-asker     opens --count endpoints that each fi_connect to the
//                 msg-target at --peer; counts the refusals that come before
//                 DIR/accept (DIR/refused-early), then ends.
//   msg-client    one connection to the msg-target at --peer: connected, a
//                 message, fi_shutdown, closed.  Exit 0 when all went well.
// Exit status 0, 1 on a failed operation, 2 on set-up errors.
#include <fi_dpdk.h>
#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_rma.h>

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
using std::chrono::milliseconds;

constexpr const char* kService = "9228";
constexpr uint64_t kRegionKey = 0x7AB1E;
constexpr size_t kRegionBytes = 4096;
constexpr size_t kMessageBytes = 1024;

struct Options {
  std::string role;
  std::string rendezvous;
  std::string peer;
  int count = 20;
  double limit_s = 60;
};

[[noreturn]] void setup_error(const std::string& what) {
  std::fprintf(stderr, "table_peer: %s\n", what.c_str());
  std::exit(2);
}

void check(long ret, const char* what) {
  if (ret < 0) setup_error(std::string(what) + ": " + fi_strerror(static_cast<int>(-ret)));
}

bool exists(const Options& o, const char* name) {
  return std::filesystem::exists(o.rendezvous + "/" + name);
}

void write_file(const Options& o, const char* name, const std::string& text) {
  const std::string path = o.rendezvous + "/" + name;
  std::ofstream(path + ".partial") << text << "\n";
  std::filesystem::rename(path + ".partial", path);
}

// Waits for DIR/name, calling `meanwhile` (progress) between looks.
template <typename Meanwhile>
bool wait_for(const Options& o, const char* name, Meanwhile meanwhile) {
  const auto deadline = Clock::now() + std::chrono::duration<double>(o.limit_s);
  while (!exists(o, name)) {
    if (Clock::now() > deadline) return false;
    meanwhile();
  }
  return true;
}
bool wait_idle_for(const Options& o, const char* name) {
  return wait_for(o, name, [] { std::this_thread::sleep_for(milliseconds(20)); });
}

fi_info* info_for(fi_ep_type type, uint64_t caps, const std::string& node, uint64_t flags) {
  fi_info* hints = fi_allocinfo();
  hints->fabric_attr->prov_name = strdup("dpdk");
  hints->ep_attr->type = type;
  hints->caps = caps;
  hints->domain_attr->mr_mode = 0;  // requested keys, offsets
  fi_info* info = nullptr;
  check(fi_getinfo(FI_VERSION(1, 17), node.empty() ? nullptr : node.c_str(), kService, flags, hints,
                   &info),
        "fi_getinfo");
  fi_freeinfo(hints);
  return info;
}

struct Objects {
  fi_info* info = nullptr;
  fid_fabric* fabric = nullptr;
  fid_domain* domain = nullptr;
  fid_av* av = nullptr;
  fid_eq* eq = nullptr;

  explicit Objects(fi_info* i) : info(i) {
    check(fi_fabric(info->fabric_attr, &fabric, nullptr), "fi_fabric");
    check(fi_domain(fabric, info, &domain, nullptr), "fi_domain");
    fi_eq_attr eq_attr{};
    eq_attr.wait_obj = FI_WAIT_UNSPEC;  // fi_eq_sread waits on it
    check(fi_eq_open(fabric, &eq_attr, &eq, nullptr), "fi_eq_open");
    if (info->ep_attr->type == FI_EP_MSG) return;
    fi_av_attr av_attr{};
    av_attr.type = FI_AV_TABLE;
    check(fi_av_open(domain, &av_attr, &av, nullptr), "fi_av_open");
  }
  // Closed in order, so that the provider's port goes (and logs its counts).
  ~Objects() {
    if (av != nullptr) fi_close(&av->fid);
    fi_close(&domain->fid);
    fi_close(&eq->fid);
    fi_close(&fabric->fid);
    fi_freeinfo(info);
  }
};

void insert(const Objects& o, const void* address, fi_addr_t* fi_addr, const char* what) {
  const int ret = fi_av_insert(o.av, address, 1, fi_addr, 0, nullptr);
  check(ret == 1 ? 0 : ret < 0 ? ret : -FI_EINVAL, what);
}

struct Ep {
  fid_ep* ep = nullptr;
  fid_cq* cq = nullptr;
  // Before the Objects it was opened on go (their domain is busy till then).
  void close() {
    if (ep != nullptr) fi_close(&ep->fid);
    if (cq != nullptr) fi_close(&cq->fid);
    ep = nullptr;
    cq = nullptr;
  }
};

Ep open_ep(const Objects& o, fi_info* info) {
  Ep e;
  fi_cq_attr attr{};
  attr.format = FI_CQ_FORMAT_TAGGED;
  check(fi_cq_open(o.domain, &attr, &e.cq, nullptr), "fi_cq_open");
  check(fi_endpoint(o.domain, info, &e.ep, nullptr), "fi_endpoint");
  if (o.av != nullptr) check(fi_ep_bind(e.ep, &o.av->fid, 0), "bind av");
  if (info->ep_attr->type == FI_EP_MSG) check(fi_ep_bind(e.ep, &o.eq->fid, 0), "bind eq");
  check(fi_ep_bind(e.ep, &e.cq->fid, FI_TRANSMIT | FI_RECV), "bind cq");
  check(fi_enable(e.ep), "fi_enable");
  return e;
}

// One completion read (progressing): 1, 0 for none, -1 after an error
// completion (its reason in *why).
int reap(const Ep& e, fi_cq_tagged_entry* entry, fi_addr_t* source, std::string* why) {
  const ssize_t n = fi_cq_readfrom(e.cq, entry, 1, source);
  if (n == 1) return 1;
  if (n != -FI_EAVAIL) return 0;
  fi_cq_err_entry err{};
  fi_cq_readerr(e.cq, &err, 0);
  *why = std::string(fi_strerror(err.err)) + " (prov_errno " + std::to_string(err.prov_errno) + ")";
  return -1;
}

// Waits for `count` completions: "" or why not.
std::string complete(const Ep& e, int count, double limit_s) {
  const auto deadline = Clock::now() + std::chrono::duration<double>(limit_s);
  for (int done = 0; done < count;) {
    fi_cq_tagged_entry entry{};
    fi_addr_t source;
    std::string why;
    const int got = reap(e, &entry, &source, &why);
    if (got < 0) return "error completion: " + why;
    done += got;
    if (Clock::now() > deadline) return "no completion within the time limit";
  }
  return "";
}

// ---- RDM: a peer the target never inserted ----

int run_rdm_target(const Options& o) {
  Objects objects(
      info_for(FI_EP_RDM, FI_MSG | FI_RMA | FI_REMOTE_READ | FI_REMOTE_WRITE, "", FI_SOURCE));
  Ep e = open_ep(objects, objects.info);
  std::vector<uint8_t> region(kRegionBytes, 0);
  fid_mr* mr = nullptr;
  check(fi_mr_reg(objects.domain, region.data(), region.size(), FI_REMOTE_READ | FI_REMOTE_WRITE, 0,
                  kRegionKey, 0, &mr, nullptr),
        "fi_mr_reg");
  if (objects.info->domain_attr->mr_mode & FI_MR_ENDPOINT) {
    check(fi_mr_bind(mr, &e.ep->fid, 0), "fi_mr_bind");
    check(fi_mr_enable(mr), "fi_mr_enable");
  }
  std::vector<std::vector<uint8_t>> buffers(32, std::vector<uint8_t>(kMessageBytes));
  for (auto& buffer : buffers)
    check(fi_recv(e.ep, buffer.data(), buffer.size(), nullptr, FI_ADDR_UNSPEC, &buffer), "fi_recv");
  write_file(o, "ready", "ready");
  uint64_t received = 0, errors = 0;
  wait_for(o, "stop", [&] {
    for (int i = 0; i < 256; ++i) {
      fi_cq_tagged_entry entry{};
      fi_addr_t source;
      std::string why;
      const int got = reap(e, &entry, &source, &why);
      if (got < 0) {
        std::fprintf(stderr, "table_peer: rdm-target: %s\n", why.c_str());
        ++errors;
      }
      if (got <= 0) continue;
      ++received;
      auto* buffer = static_cast<std::vector<uint8_t>*>(entry.op_context);
      check(fi_recv(e.ep, buffer->data(), buffer->size(), nullptr, FI_ADDR_UNSPEC, buffer),
            "fi_recv");
    }
  });
  std::printf("{\"role\": \"rdm-target\", \"received\": %lu, \"errors\": %lu}\n",
              static_cast<unsigned long>(received), static_cast<unsigned long>(errors));
  fi_close(&e.ep->fid);
  fi_close(&e.cq->fid);
  fi_close(&mr->fid);
  return 0;
}

// A round: messages, a write, a read of what was written.  "" or why not.
std::string rdm_round(const Ep& e, fi_addr_t target, uint8_t mark) {
  static std::vector<uint8_t> out(kMessageBytes), back(64);
  std::fill(out.begin(), out.end(), mark);
  for (int i = 0; i < 8; ++i) {
    const ssize_t ret = fi_send(e.ep, out.data(), out.size(), nullptr, target, nullptr);
    if (ret != 0) return std::string("fi_send: ") + fi_strerror(static_cast<int>(-ret));
  }
  if (std::string why = complete(e, 8, 20); !why.empty()) return "sends: " + why;
  ssize_t ret = fi_write(e.ep, out.data(), 64, nullptr, target, 0, kRegionKey, nullptr);
  if (ret != 0) return std::string("fi_write: ") + fi_strerror(static_cast<int>(-ret));
  if (std::string why = complete(e, 1, 20); !why.empty()) return "write: " + why;
  ret = fi_read(e.ep, back.data(), back.size(), nullptr, target, 0, kRegionKey, nullptr);
  if (ret != 0) return std::string("fi_read: ") + fi_strerror(static_cast<int>(-ret));
  if (std::string why = complete(e, 1, 20); !why.empty()) return "read: " + why;
  for (uint8_t b : back)
    if (b != mark) return "the read gave back other bytes than were written";
  return "";
}

int run_rdm_client(const Options& o) {
  Objects objects(info_for(FI_EP_RDM, FI_MSG | FI_RMA, o.peer, 0));
  Ep e = open_ep(objects, objects.info);
  fi_addr_t target = FI_ADDR_UNSPEC;
  insert(objects, objects.info->dest_addr, &target, "fi_av_insert of the target");
  const std::string first = rdm_round(e, target, 0x11);
  write_file(o, "round1", first.empty() ? "ok" : first);
  if (!first.empty()) return 1;
  // Idle now, as a peer between bursts is: not even a progress call.
  if (!wait_idle_for(o, "flooded")) setup_error("no DIR/flooded");
  const std::string second = rdm_round(e, target, 0x22);
  write_file(o, "round2", second.empty() ? "ok" : second);
  std::printf("{\"role\": \"rdm-client\", \"round2\": \"%s\"}\n",
              second.empty() ? "ok" : second.c_str());
  e.close();
  return second.empty() ? 0 : 1;
}

// ---- DGRAM: the unexpected budget under one forged sender ----

int run_dgram_target(const Options& o) {
  Objects objects(info_for(FI_EP_DGRAM, FI_MSG | FI_SOURCE, "", FI_SOURCE));
  Ep e = open_ep(objects, objects.info);
  fi_info* client = info_for(FI_EP_DGRAM, FI_MSG, o.peer, 0);
  fi_addr_t client_addr = FI_ADDR_UNSPEC;
  insert(objects, client->dest_addr, &client_addr, "fi_av_insert of the client");
  fi_freeinfo(client);
  write_file(o, "ready", "ready");
  // Progress (a read that finds nothing) while no receive is posted.
  const auto poll = [&] {
    fi_cq_tagged_entry entry{};
    fi_addr_t source;
    std::string why;
    reap(e, &entry, &source, &why);
  };
  if (!wait_for(o, "drain", poll)) setup_error("no DIR/drain");
  std::vector<uint8_t> buffer(2048);
  uint64_t from_client = 0, others = 0;
  for (auto quiet_since = Clock::now(); Clock::now() - quiet_since < milliseconds(500);) {
    ssize_t ret = fi_recv(e.ep, buffer.data(), buffer.size(), nullptr, FI_ADDR_UNSPEC, nullptr);
    if (ret == -FI_EAGAIN) ret = 0;
    check(ret, "fi_recv");
    for (int i = 0; i < 100; ++i) {
      fi_cq_tagged_entry entry{};
      fi_addr_t source = FI_ADDR_NOTAVAIL;
      std::string why;
      const int got = reap(e, &entry, &source, &why);
      if (got == 0) continue;
      if (got < 0) setup_error("dgram-target: " + why);
      ++(source == client_addr ? from_client : others);
      quiet_since = Clock::now();
      break;
    }
  }
  write_file(o, "dgram-result",
             "client " + std::to_string(from_client) + " others " + std::to_string(others));
  std::printf("{\"role\": \"dgram-target\", \"from_client\": %lu, \"from_others\": %lu}\n",
              static_cast<unsigned long>(from_client), static_cast<unsigned long>(others));
  fi_close(&e.ep->fid);
  fi_close(&e.cq->fid);
  return 0;
}

int run_dgram_client(const Options& o) {
  Objects objects(info_for(FI_EP_DGRAM, FI_MSG, o.peer, 0));
  Ep e = open_ep(objects, objects.info);
  fi_addr_t target = FI_ADDR_UNSPEC;
  insert(objects, objects.info->dest_addr, &target, "fi_av_insert of the target");
  if (!wait_idle_for(o, "flooded")) setup_error("no DIR/flooded");
  std::vector<uint8_t> payload(512, 0x5D);
  for (int i = 0; i < o.count; ++i) {
    ssize_t ret;
    while ((ret = fi_send(e.ep, payload.data(), payload.size(), nullptr, target, nullptr)) ==
           -FI_EAGAIN)
      complete(e, 1, 1);
    check(ret, "fi_send");
    // A datagram's pace: the target's ring takes them as they come.
    std::this_thread::sleep_for(milliseconds(5));
  }
  const std::string why = complete(e, 0, 1);
  write_file(o, "sent", std::to_string(o.count));
  e.close();
  return why.empty() ? 0 : 1;
}

// ---- MSG: pending requests per source, accepted clients that come and go ----

// The next EQ event within `limit_s` (its type in *event, the entry in
// *entry): 1, 0 for none, -1 for an error entry (its err in *error).
int next_event(fid_eq* eq, uint32_t* event, fi_eq_cm_entry* entry, int* error, int wait_ms) {
  const ssize_t ret = fi_eq_sread(eq, event, entry, sizeof(*entry), wait_ms, 0);
  if (ret >= static_cast<ssize_t>(sizeof(fid_t))) return 1;
  if (ret != -FI_EAVAIL) return 0;
  fi_eq_err_entry err{};
  fi_eq_readerr(eq, &err, 0);
  *error = err.err;
  return -1;
}

int run_msg_target(const Options& o) {
  Objects objects(info_for(FI_EP_MSG, FI_MSG, "", FI_SOURCE));
  fid_pep* pep = nullptr;
  check(fi_passive_ep(objects.fabric, objects.info, &pep, nullptr), "fi_passive_ep");
  check(fi_pep_bind(pep, &objects.eq->fid, 0), "fi_pep_bind");
  check(fi_listen(pep), "fi_listen");
  write_file(o, "ready", "ready");
  // Phase 1: requests held unanswered, counted.
  std::vector<fid_t> held;
  auto last_request = Clock::now();
  bool reported = false;
  const auto take_requests = [&](int wait_ms) {
    uint32_t event = 0;
    fi_eq_cm_entry entry{};
    int error = 0;
    if (next_event(objects.eq, &event, &entry, &error, wait_ms) != 1 || event != FI_CONNREQ) return;
    held.push_back(entry.info->handle);
    fi_freeinfo(entry.info);
    last_request = Clock::now();
  };
  wait_for(o, "accept", [&] {
    take_requests(20);
    if (!reported && !held.empty() && Clock::now() - last_request > std::chrono::seconds(1)) {
      write_file(o, "requests-held", std::to_string(held.size()));
      reported = true;
    }
  });
  for (fid_t handle : held) fi_reject(pep, handle, nullptr, 0);
  // Phase 2: every request accepted, served and closed.
  uint64_t accepted = 0, failed = 0;
  wait_for(o, "stop", [&] {
    uint32_t event = 0;
    fi_eq_cm_entry entry{};
    int error = 0;
    if (next_event(objects.eq, &event, &entry, &error, 20) != 1 || event != FI_CONNREQ) return;
    Ep e = open_ep(objects, entry.info);
    fi_freeinfo(entry.info);
    std::vector<uint8_t> buffer(kMessageBytes);
    check(fi_recv(e.ep, buffer.data(), buffer.size(), nullptr, 0, nullptr), "fi_recv");
    const int ret = fi_accept(e.ep, nullptr, 0);
    bool ok = ret == 0;
    if (!ok) std::fprintf(stderr, "table_peer: fi_accept: %s\n", fi_strerror(-ret));
    // FI_CONNECTED, the client's message, its FI_SHUTDOWN.
    const auto deadline = Clock::now() + std::chrono::seconds(20);
    bool connected = false, shut = false, message = false;
    while (ok && !(connected && shut && message) && Clock::now() < deadline) {
      if (next_event(objects.eq, &event, &entry, &error, 1) < 0) {
        std::fprintf(stderr, "table_peer: accepted endpoint: %s\n", fi_strerror(error));
        ok = false;
      }
      connected |= event == FI_CONNECTED;
      shut |= event == FI_SHUTDOWN;
      event = 0;
      fi_cq_tagged_entry done{};
      fi_addr_t source;
      std::string why;
      const int got = reap(e, &done, &source, &why);
      if (got < 0) ok = false;
      message |= got > 0;
    }
    ok = ok && connected && shut && message;
    ++(ok ? accepted : failed);
    fi_close(&e.ep->fid);
    fi_close(&e.cq->fid);
  });
  write_file(o, "msg-result",
             "accepted " + std::to_string(accepted) + " failed " + std::to_string(failed));
  std::printf("{\"role\": \"msg-target\", \"held\": %zu, \"accepted\": %lu, \"failed\": %lu}\n",
              held.size(), static_cast<unsigned long>(accepted),
              static_cast<unsigned long>(failed));
  fi_close(&pep->fid);
  return 0;
}

int run_msg_asker(const Options& o) {
  Objects objects(info_for(FI_EP_MSG, FI_MSG, o.peer, 0));
  std::vector<Ep> eps;
  for (int i = 0; i < o.count; ++i) {
    eps.push_back(open_ep(objects, objects.info));
    check(fi_connect(eps.back().ep, objects.info->dest_addr, nullptr, 0), "fi_connect");
  }
  int refused = 0;
  wait_for(o, "requests-held", [&] {
    uint32_t event = 0;
    fi_eq_cm_entry entry{};
    int error = 0;
    if (next_event(objects.eq, &event, &entry, &error, 20) < 0 && error == FI_ECONNREFUSED)
      ++refused;
  });
  // What was still on its way when the target counted.
  for (int i = 0; i < 50; ++i) {
    uint32_t event = 0;
    fi_eq_cm_entry entry{};
    int error = 0;
    if (next_event(objects.eq, &event, &entry, &error, 20) < 0 && error == FI_ECONNREFUSED)
      ++refused;
  }
  write_file(o, "refused-early", std::to_string(refused));
  std::printf("{\"role\": \"msg-asker\", \"asked\": %d, \"refused_early\": %d}\n", o.count,
              refused);
  for (Ep& e : eps) e.close();
  return 0;
}

int run_msg_client(const Options& o) {
  Objects objects(info_for(FI_EP_MSG, FI_MSG, o.peer, 0));
  Ep e = open_ep(objects, objects.info);
  check(fi_connect(e.ep, objects.info->dest_addr, nullptr, 0), "fi_connect");
  uint32_t event = 0;
  fi_eq_cm_entry entry{};
  int error = 0;
  const auto deadline = Clock::now() + std::chrono::seconds(20);
  while (event != FI_CONNECTED && Clock::now() < deadline) {
    if (next_event(objects.eq, &event, &entry, &error, 20) < 0) {
      std::fprintf(stderr, "table_peer: fi_connect: %s\n", fi_strerror(error));
      return 1;
    }
  }
  if (event != FI_CONNECTED) {
    std::fprintf(stderr, "table_peer: not connected within 20 s\n");
    return 1;
  }
  std::vector<uint8_t> payload(64, 0x4D);
  check(fi_send(e.ep, payload.data(), payload.size(), nullptr, 0, nullptr), "fi_send");
  if (std::string why = complete(e, 1, 20); !why.empty()) {
    std::fprintf(stderr, "table_peer: send: %s\n", why.c_str());
    return 1;
  }
  check(fi_shutdown(e.ep, 0), "fi_shutdown");
  e.close();
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
    else if (arg == "--peer")
      o.peer = value();
    else if (arg == "--count")
      o.count = std::stoi(value());
    else if (arg == "--limit")
      o.limit_s = std::stod(value());
    else
      setup_error("unknown option " + arg);
  }
  if (o.role.empty() || o.rendezvous.empty()) setup_error("--role and --rendezvous are required");
  return o;
}

}  // namespace

int main(int argc, char** argv) {
  ofi_dpdk::app::point_libfabric_at_provider();
  const int consumed = fi_dpdk_eal_init(argc, argv);
  if (consumed < 0) setup_error(std::string("EAL: ") + fi_strerror(-consumed));
  const Options o = parse(argc - consumed, argv + consumed);
  if (o.role == "rdm-target") return run_rdm_target(o);
  if (o.role == "rdm-client") return run_rdm_client(o);
  if (o.role == "dgram-target") return run_dgram_target(o);
  if (o.role == "dgram-client") return run_dgram_client(o);
  if (o.role == "msg-target") return run_msg_target(o);
  if (o.role == "msg-asker") return run_msg_asker(o);
  if (o.role == "msg-client") return run_msg_client(o);
  setup_error("unknown role " + o.role);
}
