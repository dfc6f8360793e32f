// dpdk-fi-msgcost: what one small message costs a provider, counted in
// instructions.  Two RDM endpoints of one process, each with its own CQ;
// one message at a time from the first to the second: fi_recv posted,
// fi_inject (or fi_send for messages above the inject size), fi_cq_read on
// both CQs until the receive completes.  The measured loop (after --warmup
// messages) is `measured_loop`, for
//
//   valgrind --tool=callgrind --toggle-collect='*measured_loop*'
//       dpdk-fi-msgcost [EAL args] -- --provider dpdk --size 8 --count 20000
//
// (one command line)
//
// whose total divided by --count is the instructions per message
// (deterministic: the same on a quiet or a busy machine).  Without
// valgrind it prints the mean time per message.  With --provider other
// than dpdk (shm, "tcp;ofi_rxm") no EAL starts: give no EAL arguments.
//
// `--op fetch_add` measures the target's path instead: one
// fi_fetch_atomic (FI_SUM of one FI_UINT64) at a time from the first
// endpoint into a region the second registered, both CQs read until it
// completes; the final value is checked against the count.
//
//   dpdk-fi-msgcost [EAL args] -- [--provider NAME] [--op msg|fetch_add]
//                                 [--size B] [--count N] [--warmup N]
//
// Prints one JSON line.  Exit status 0, 1 on an error completion, 2 on
// bad arguments or set-up failure.
#include <fi_dpdk.h>
#include <rdma/fabric.h>
#include <rdma/fi_atomic.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <type_traits>
#include <vector>

#include "app/common/long_options.h"
#include "app/common/option_number.h"
#include "app/common/provider_path.h"

namespace {

struct Options {
  std::string provider = "dpdk";
  bool fetch_add = false;  // --op fetch_add
  size_t size = 8;
  uint64_t count = 100000;
  uint64_t warmup = 1000;
};

[[noreturn]] void setup_error(const std::string& what) {
  std::fprintf(stderr, "dpdk-fi-msgcost: %s\n", what.c_str());
  std::exit(2);
}

void check(int ret, const char* what) {
  if (ret != 0) setup_error(std::string(what) + ": " + fi_strerror(-ret));
}

struct Side {
  fid_ep* ep = nullptr;
  fid_cq* cq = nullptr;
  fi_addr_t peer = FI_ADDR_UNSPEC;
};

struct Fabric {
  fi_info* info = nullptr;
  fid_fabric* fabric = nullptr;
  fid_domain* domain = nullptr;
  fid_av* av = nullptr;
  Side sender, receiver;
  size_t inject_size = 0;
  // --op fetch_add: the receiver's registered word, and how to name it.
  fid_mr* mr = nullptr;
  uint64_t target_word = 0;
  uint64_t target_key = 0;
};

Side open_side(Fabric& f) {
  Side s;
  fi_cq_attr attr{};
  attr.format = FI_CQ_FORMAT_CONTEXT;
  check(fi_cq_open(f.domain, &attr, &s.cq, nullptr), "fi_cq_open");
  check(fi_endpoint(f.domain, f.info, &s.ep, nullptr), "fi_endpoint");
  check(fi_ep_bind(s.ep, &f.av->fid, 0), "bind av");
  check(fi_ep_bind(s.ep, &s.cq->fid, FI_TRANSMIT | FI_RECV), "bind cq");
  check(fi_enable(s.ep), "fi_enable");
  return s;
}

fi_addr_t insert(Fabric& f, const Side& s) {
  char name[256];
  size_t len = sizeof(name);
  check(fi_getname(&s.ep->fid, name, &len), "fi_getname");
  fi_addr_t addr = FI_ADDR_UNSPEC;
  if (fi_av_insert(f.av, name, 1, &addr, 0, nullptr) != 1) setup_error("fi_av_insert failed");
  return addr;
}

Fabric open_fabric(const Options& o) {
  Fabric f;
  fi_info* hints = fi_allocinfo();
  hints->fabric_attr->prov_name = strdup(o.provider.c_str());
  hints->ep_attr->type = FI_EP_RDM;
  hints->caps = o.fetch_add ? FI_MSG | FI_ATOMIC : FI_MSG;
  hints->domain_attr->mr_mode = FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | FI_MR_PROV_KEY;
  check(fi_getinfo(FI_VERSION(1, 17), nullptr, nullptr, 0, hints, &f.info), "fi_getinfo");
  fi_freeinfo(hints);
  f.inject_size = f.info->tx_attr->inject_size;
  check(fi_fabric(f.info->fabric_attr, &f.fabric, nullptr), "fi_fabric");
  check(fi_domain(f.fabric, f.info, &f.domain, nullptr), "fi_domain");
  fi_av_attr av_attr{};
  av_attr.type = FI_AV_TABLE;
  check(fi_av_open(f.domain, &av_attr, &f.av, nullptr), "fi_av_open");
  f.sender = open_side(f);
  f.receiver = open_side(f);
  f.sender.peer = insert(f, f.receiver);
  f.receiver.peer = insert(f, f.sender);
  return f;
}

// Registers the receiver's word for --op fetch_add (after the Fabric took
// its place: the region names its address).
void register_target(Fabric& f) {
  check(fi_mr_reg(f.domain, &f.target_word, sizeof(f.target_word), FI_REMOTE_READ | FI_REMOTE_WRITE,
                  0, 0, 0, &f.mr, nullptr),
        "fi_mr_reg");
  if (f.info->domain_attr->mr_mode & FI_MR_ENDPOINT) {
    check(fi_mr_bind(f.mr, &f.receiver.ep->fid, 0), "fi_mr_bind");
    check(fi_mr_enable(f.mr), "fi_mr_enable");
  }
  f.target_key = fi_mr_key(f.mr);
}

// Drains a CQ; true when `wanted` completed (false on an error completion
// too, after saying why).
bool reap(fid_cq* cq, void* wanted, bool* found, bool* failed) {
  fi_cq_entry entries[8];
  const ssize_t n = fi_cq_read(cq, entries, 8);
  if (n > 0) {
    for (ssize_t i = 0; i < n; ++i)
      if (entries[i].op_context == wanted) *found = true;
    return true;
  }
  if (n == -FI_EAVAIL) {
    fi_cq_err_entry err{};
    fi_cq_readerr(cq, &err, 0);
    std::fprintf(stderr, "dpdk-fi-msgcost: error completion: %s\n", fi_strerror(err.err));
    *failed = true;
  }
  return false;
}

// `count` messages, one at a time.  Returns false on an error completion.
__attribute__((noinline)) bool message_loop(Fabric& f, std::vector<uint8_t>& out,
                                            std::vector<uint8_t>& in, uint64_t count) {
  static int receive_context, send_context;
  const bool inject = out.size() <= f.inject_size;
  for (uint64_t i = 0; i < count; ++i) {
    ssize_t ret;
    while ((ret = fi_recv(f.receiver.ep, in.data(), in.size(), nullptr, FI_ADDR_UNSPEC,
                          &receive_context)) == -FI_EAGAIN) {
    }
    if (ret != 0) return false;
    while ((ret = inject ? fi_inject(f.sender.ep, out.data(), out.size(), f.sender.peer)
                         : fi_send(f.sender.ep, out.data(), out.size(), nullptr, f.sender.peer,
                                   &send_context)) == -FI_EAGAIN) {
      // Both sides progress: shm maps its peer's region on the first send.
      bool found = false, failed = false;
      reap(f.sender.cq, nullptr, &found, &failed);
      reap(f.receiver.cq, nullptr, &found, &failed);
      if (failed) return false;
    }
    if (ret != 0) return false;
    bool received = false, failed = false;
    while (!received) {
      reap(f.receiver.cq, &receive_context, &received, &failed);
      bool sent = false;
      reap(f.sender.cq, &send_context, &sent, &failed);
      if (failed) return false;
    }
  }
  return true;
}

// `count` fetch-adds of 1, one at a time.  Returns false on an error
// completion or a fetched value out of sequence.
__attribute__((noinline)) bool fetch_add_loop(Fabric& f, uint64_t count) {
  static int context;
  const uint64_t one = 1;
  const bool virtual_address = (f.info->domain_attr->mr_mode & FI_MR_VIRT_ADDR) != 0;
  const uint64_t address = virtual_address ? reinterpret_cast<uint64_t>(&f.target_word) : 0;
  for (uint64_t i = 0; i < count; ++i) {
    const uint64_t expected = __atomic_load_n(&f.target_word, __ATOMIC_RELAXED);
    uint64_t fetched = ~uint64_t{0};
    ssize_t ret;
    bool done = false, failed = false;
    while ((ret = fi_fetch_atomic(f.sender.ep, &one, 1, nullptr, &fetched, nullptr, f.sender.peer,
                                  address, f.target_key, FI_UINT64, FI_SUM, &context)) ==
           -FI_EAGAIN) {
      reap(f.sender.cq, nullptr, &done, &failed);
      reap(f.receiver.cq, nullptr, &done, &failed);
      if (failed) return false;
    }
    if (ret != 0) return false;
    while (!done) {
      reap(f.sender.cq, &context, &done, &failed);
      bool unused = false;
      reap(f.receiver.cq, nullptr, &unused, &failed);
      if (failed) return false;
    }
    if (fetched != expected) {
      std::fprintf(stderr, "dpdk-fi-msgcost: fetched %llu where %llu was\n",
                   static_cast<unsigned long long>(fetched),
                   static_cast<unsigned long long>(expected));
      return false;
    }
  }
  return true;
}

// The loop measured: not inlined, so callgrind's --toggle-collect finds it
// and counts what the warm-up did apart.
__attribute__((noinline)) bool measured_loop(Fabric& f, std::vector<uint8_t>& out,
                                             std::vector<uint8_t>& in, uint64_t count,
                                             bool fetch_add) {
  return fetch_add ? fetch_add_loop(f, count) : message_loop(f, out, in, count);
}

Options parse(int argc, char** argv) {
  Options o;
  auto number = [](const std::string& name, const char* text, auto* out) {
    const auto parsed = ofi_dpdk::app::option_number<std::remove_pointer_t<decltype(out)>>(text);
    if (!parsed) setup_error("option --" + name + ": not a number: " + text);
    *out = *parsed;
  };
  ofi_dpdk::app::read_long_options(
      "dpdk-fi-msgcost", argc, argv,
      {{"provider", true},
       {"op", true},
       {"size", true},
       {"count", true},
       {"warmup", true},
       {"help", false}},
      [&](const std::string& name, const char* value) {
        if (name == "help") {
          std::printf(
              "usage: dpdk-fi-msgcost [EAL args] -- [--provider NAME] [--op msg|fetch_add] "
              "[--size B] [--count N] [--warmup N] [--help]\n");
          std::exit(0);
        } else if (name == "provider") {
          o.provider = value;
        } else if (name == "op") {
          if (std::strcmp(value, "fetch_add") != 0 && std::strcmp(value, "msg") != 0)
            setup_error(std::string("option --op: want msg or fetch_add, not ") + value);
          o.fetch_add = std::strcmp(value, "fetch_add") == 0;
        } else if (name == "size")
          number(name, value, &o.size);
        else if (name == "count")
          number(name, value, &o.count);
        else if (name == "warmup")
          number(name, value, &o.warmup);
      },
      [](const std::string& why) { setup_error(why); });
  if (o.count == 0) setup_error("--count wants at least 1");
  return o;
}

struct FrameCounts {
  bool known = false;
  uint64_t data_sent = 0, port_sent = 0;
};

// The data frames the sender sent so far and all frames the port sent
// (data and acks), through our stats ops (dpdk only).
FrameCounts frame_counts(Fabric& f) {
  FrameCounts counts;
  fi_dpdk_ops_stats* ops = nullptr;
  if (fi_open_ops(&f.domain->fid, FI_DPDK_STATS_OPS_NAME, 0, reinterpret_cast<void**>(&ops),
                  nullptr) != 0)
    return counts;
  fi_dpdk_ep_stats sender{};
  fi_dpdk_port_stats port{};
  if (ops->ep_stats(f.sender.ep, &sender) != 0 || ops->port_stats(f.domain, &port) != 0)
    return counts;
  counts.known = true;
  counts.data_sent = sender.frames_sent;
  counts.port_sent = port.tx_frames;
  return counts;
}

}  // namespace

int main(int argc, char** argv) {
  ofi_dpdk::app::point_libfabric_at_provider();
  // EAL arguments only for dpdk, and only when given (before "--"); other
  // providers start no EAL, whatever precedes "--".
  int consumed = 1;
  const bool dpdk = ofi_dpdk::app::provider_named(argc, argv) == "dpdk";
  bool has_separator = false;
  for (int i = 1; i < argc; ++i) has_separator |= std::strcmp(argv[i], "--") == 0;
  if (has_separator && dpdk) {
    consumed = fi_dpdk_eal_init(argc, argv);
    if (consumed < 0) setup_error(std::string("EAL: ") + fi_strerror(-consumed));
  } else if (has_separator) {
    while (consumed < argc && std::strcmp(argv[consumed], "--") != 0) ++consumed;
    ++consumed;  // past "--"
  }
  const Options o = parse(argc - consumed, argv + consumed);
  Fabric f = open_fabric(o);
  if (o.fetch_add) register_target(f);
  std::vector<uint8_t> out(o.size, 0x5a), in(o.size);
  if (!(o.fetch_add ? fetch_add_loop(f, o.warmup) : message_loop(f, out, in, o.warmup))) return 1;
  const FrameCounts before = frame_counts(f);
  const auto start = std::chrono::steady_clock::now();
  if (!measured_loop(f, out, in, o.count, o.fetch_add)) return 1;
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const FrameCounts after = frame_counts(f);
  const auto per_message = [&](uint64_t from, uint64_t to) {
    return static_cast<double>(to - from) / static_cast<double>(o.count);
  };
  std::printf(
      "{\"provider\": \"%s\", \"op\": \"%s\", \"size\": %zu, \"count\": %llu, \"ns_per_message\": "
      "%.1f",
      o.provider.c_str(), o.fetch_add ? "fetch_add" : "msg", o.size,
      static_cast<unsigned long long>(o.count), seconds * 1e9 / static_cast<double>(o.count));
  // The frames behind the figure: data one way, acks the other (under
  // valgrind the ack delay, a time, passes within fewer messages).
  if (after.known)
    std::printf(", \"data_frames_per_message\": %.3f, \"frames_per_message\": %.3f",
                per_message(before.data_sent, after.data_sent),
                per_message(before.port_sent, after.port_sent));
  std::printf("}\n");
  return 0;
}
