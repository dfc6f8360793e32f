// atomic_peer: the exhaustive fi_atomic(3) test between two processes
// (test_memif_atomic.sh starts it twice over net_memif).
//
//   atomic_peer [EAL args] -- --role server|client --rendezvous DIR [--timeout S]
//
// The server is the target: it registers a region, publishes its endpoint
// name, the region's key and address in DIR/server, and serves until the
// client's "done" message arrives.  The client is the initiator.  For every
// class (base, fetch, compare), every point-to-point op and every datatype the
// installed headers define (16 datatypes and 19 ops with libfabric 1.17; 20
// and 20 with 2.x, whose FI_FLOAT16, FI_BFLOAT16, FI_FLOAT8_* and FI_DIFF
// lib/atomic/meson.build detects), it asks
// fi_atomicvalid / fi_fetch_atomicvalid / fi_compare_atomicvalid and
// fi_query_atomic, and then:
//   - a supported cell: sets the target array with fi_write, runs the atomic
//     on every combination of edge values (an array of 64 to 1000 elements),
//     reads the target back with fi_read and compares it, and the fetched old
//     values, with test/support/atomic_reference.h's scalar loop;
//   - an unsupported cell: the call itself must return -FI_EOPNOTSUPP, as
//     the valid call said, and the target must stay as it was.
// Exit status: 0 when every check passed, 1 when one failed, 2 on set-up
// failure.  Every wait is bounded by --timeout.
#include <fi_dpdk.h>
#include <rdma/fabric.h>
#include <rdma/fi_atomic.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_rma.h>

#include <chrono>
#include <cinttypes>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "app/common/provider_path.h"
#include "lib/atomic/atomic_config.h"
#include "test/support/atomic_reference.h"

namespace {

using Clock = std::chrono::steady_clock;
using ofi_dpdk::test::CallClass;

constexpr size_t kRegionBytes = 256 << 10;

// One past the last point-to-point op and datatype of the installed headers
// (2.x's FI_ATOMIC_OP_LAST and FI_DATATYPE_LAST are frozen below these).
#if OFI_DPDK_HAVE_FI_DIFF
constexpr int kOpEnd = FI_DIFF + 1;
#else
constexpr int kOpEnd = FI_MSWAP + 1;
#endif
#if OFI_DPDK_HAVE_FI_FLOAT8_E5M2
constexpr int kDatatypeEnd = FI_FLOAT8_E5M2 + 1;
#else
constexpr int kDatatypeEnd = FI_UINT128 + 1;
#endif
constexpr char kDone[] = "done";

struct Options {
  std::string role;
  std::string rendezvous;
  double timeout = 30;
};

[[noreturn]] void fail_setup(const std::string& text) {
  std::fprintf(stderr, "atomic_peer: %s\n", text.c_str());
  std::exit(2);
}

#define CHECK(call)                                                                      \
  do {                                                                                   \
    const int check_ret = static_cast<int>(call);                                        \
    if (check_ret != 0) fail_setup(std::string(#call) + ": " + fi_strerror(-check_ret)); \
  } while (0)

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 0; i < argc; ++i) {
    const std::string_view arg = argv[i];
    if (i + 1 >= argc) fail_setup("option " + std::string(arg) + " needs a value");
    const std::string value = argv[++i];
    if (arg == "--role")
      o.role = value;
    else if (arg == "--rendezvous")
      o.rendezvous = value;
    else if (arg == "--timeout")
      o.timeout = std::stod(value);
    else
      fail_setup("unknown option " + std::string(arg));
  }
  if (o.role != "server" && o.role != "client") fail_setup("--role wants server or client");
  if (o.rendezvous.empty()) fail_setup("--rendezvous DIR is needed");
  return o;
}

// One endpoint on the first port, with RMA and atomics, virtual addresses
// and provider keys.
struct Fabric {
  fi_info* info = nullptr;
  fid_fabric* fabric = nullptr;
  fid_domain* domain = nullptr;
  fid_av* av = nullptr;
  fid_ep* ep = nullptr;
  fid_cq* tx_cq = nullptr;
  fid_cq* rx_cq = nullptr;
  double timeout = 30;

  void open() {
    fi_info* hints = fi_allocinfo();
    hints->fabric_attr->prov_name = strdup("dpdk");
    hints->ep_attr->type = FI_EP_RDM;
    hints->caps = FI_MSG | FI_RMA | FI_ATOMIC;
    hints->domain_attr->mr_mode = FI_MR_PROV_KEY | FI_MR_VIRT_ADDR;
    CHECK(fi_getinfo(FI_VERSION(1, 17), nullptr, nullptr, 0, hints, &info));
    fi_freeinfo(hints);
    CHECK(fi_fabric(info->fabric_attr, &fabric, nullptr));
    CHECK(fi_domain(fabric, info, &domain, nullptr));
    fi_av_attr av_attr{};
    av_attr.type = FI_AV_TABLE;
    CHECK(fi_av_open(domain, &av_attr, &av, nullptr));
    fi_cq_attr cq_attr{};
    cq_attr.format = FI_CQ_FORMAT_DATA;
    CHECK(fi_cq_open(domain, &cq_attr, &tx_cq, nullptr));
    CHECK(fi_cq_open(domain, &cq_attr, &rx_cq, nullptr));
    CHECK(fi_endpoint(domain, info, &ep, nullptr));
    CHECK(fi_ep_bind(ep, &av->fid, 0));
    CHECK(fi_ep_bind(ep, &tx_cq->fid, FI_TRANSMIT));
    CHECK(fi_ep_bind(ep, &rx_cq->fid, FI_RECV));
    CHECK(fi_enable(ep));
  }

  void close() {
    fi_close(&ep->fid);
    fi_close(&tx_cq->fid);
    fi_close(&rx_cq->fid);
    fi_close(&av->fid);
    fi_close(&domain->fid);
    fi_close(&fabric->fid);
    fi_freeinfo(info);
  }

  // The next completion of `cq`: 1, the negative fi_errno of an error
  // completion (its err), or -FI_ETIMEDOUT.
  ssize_t wait(fid_cq* cq, fi_cq_data_entry* entry) {
    const auto deadline = Clock::now() + std::chrono::duration<double>(timeout);
    for (;;) {
      const ssize_t ret = fi_cq_read(cq, entry, 1);
      if (ret == 1) return 1;
      if (ret == -FI_EAVAIL) {
        fi_cq_err_entry error{};
        fi_cq_readerr(cq, &error, 0);
        return -error.err;
      }
      if (ret != -FI_EAGAIN) return ret;
      if (Clock::now() > deadline) return -FI_ETIMEDOUT;
    }
  }
};

// ---- The target ----

int serve(const Options& o) {
  Fabric f;
  f.timeout = o.timeout;
  f.open();
  static_assert(kRegionBytes % 64 == 0);
  auto* region = static_cast<uint8_t*>(std::aligned_alloc(64, kRegionBytes));
  if (region == nullptr) fail_setup("no memory for the region");
  std::memset(region, 0, kRegionBytes);
  fid_mr* mr = nullptr;
  CHECK(fi_mr_reg(f.domain, region, kRegionBytes, FI_REMOTE_READ | FI_REMOTE_WRITE, 0, 0, 0, &mr,
                  nullptr));
  char done[sizeof(kDone)] = {};
  CHECK(fi_recv(f.ep, done, sizeof(done), nullptr, FI_ADDR_UNSPEC, nullptr));

  // Name (hex), key, address and length, one per line; renamed into place
  // so the client never reads half a file.
  char name[64];
  size_t name_len = sizeof(name);
  CHECK(fi_getname(&f.ep->fid, name, &name_len));
  std::error_code ignored;
  std::filesystem::create_directories(o.rendezvous, ignored);
  const std::string path = o.rendezvous + "/server";
  {
    std::ofstream out(path + ".tmp");
    for (size_t i = 0; i < name_len; ++i) {
      char hex[3];
      std::snprintf(hex, sizeof(hex), "%02x", static_cast<unsigned char>(name[i]));
      out << hex;
    }
    out << "\n"
        << fi_mr_key(mr) << "\n"
        << reinterpret_cast<uintptr_t>(region) << "\n"
        << kRegionBytes << "\n";
  }
  std::filesystem::rename(path + ".tmp", path);

  // Reading the receive CQ is what progresses the port while the client's
  // requests are served.
  fi_cq_data_entry entry{};
  const ssize_t ret = f.wait(f.rx_cq, &entry);
  int status = 0;
  if (ret != 1 || std::memcmp(done, kDone, sizeof(kDone)) != 0) {
    std::fprintf(stderr, "atomic_peer: no done message from the client (%s)\n",
                 fi_strerror(static_cast<int>(-ret)));
    status = 1;
  }
  fi_close(&mr->fid);
  f.close();  // lingers while the client still retransmits
  std::free(region);
  std::printf("{\"role\":\"server\",\"ok\":%s}\n", status == 0 ? "true" : "false");
  return status;
}

// ---- The initiator ----

const char* class_name(CallClass c) {
  return c == CallClass::kBase ? "base" : c == CallClass::kFetch ? "fetch" : "compare";
}

class Initiator {
 public:
  explicit Initiator(const Options& o) : o_(o) {}

  int run() {
    f_.timeout = o_.timeout;
    f_.open();
    read_rendezvous();
    ofi_dpdk::test::for_each_datatype(
        [this]<typename T>(fi_datatype datatype) { check_datatype<T>(datatype); });
    check_values_outside_the_table();
    const bool told = tell_done();
    // Whether faults were injected, and retransmissions happened.
    fi_dpdk_ops_stats* stats = nullptr;
    fi_dpdk_ep_stats ep_stats{};
    fi_dpdk_port_stats port_stats{};
    if (fi_open_ops(&f_.domain->fid, FI_DPDK_STATS_OPS_NAME, 0, reinterpret_cast<void**>(&stats),
                    nullptr) == 0) {
      stats->ep_stats(f_.ep, &ep_stats);
      stats->port_stats(f_.domain, &port_stats);
    }
    f_.close();
    std::printf(
        "{\"role\":\"client\",\"ops\":%d,\"datatypes\":%d,"
        "\"supported_checked\":%d,\"unsupported_refused\":%d,"
        "\"elements\":%" PRIu64 ",\"retransmitted\":%" PRIu64 ",\"fault_dropped\":%" PRIu64
        ",\"fault_duplicated\":%" PRIu64 ",\"failures\":%d,\"ok\":%s}\n",
        kOpEnd, kDatatypeEnd, supported_, unsupported_, elements_, ep_stats.retransmitted,
        port_stats.fault_dropped, port_stats.fault_duplicated, failures_,
        failures_ == 0 && told ? "true" : "false");
    return failures_ == 0 && told ? 0 : 1;
  }

 private:
  // Counts every failure, prints the first 40.
  __attribute__((format(printf, 2, 3))) void failure(const char* format, ...) {
    ++failures_;
    if (failures_ > 40) return;
    std::fprintf(stderr, "FAIL %s: ", cell_.c_str());
    va_list args;
    va_start(args, format);
    std::vfprintf(stderr, format, args);
    va_end(args);
    std::fprintf(stderr, "\n");
  }

  void read_rendezvous() {
    const std::string path = o_.rendezvous + "/server";
    const auto deadline = Clock::now() + std::chrono::duration<double>(o_.timeout);
    std::ifstream in;
    while (!(in = std::ifstream(path)).good()) {
      if (Clock::now() > deadline) fail_setup("no server in " + o_.rendezvous);
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    std::string hex;
    size_t length = 0;
    if (!(in >> hex >> key_ >> base_ >> length) || length < kRegionBytes)
      fail_setup("malformed " + path);
    std::string name;
    for (size_t i = 0; i + 1 < hex.size(); i += 2)
      name += static_cast<char>(std::stoi(hex.substr(i, 2), nullptr, 16));
    if (fi_av_insert(f_.av, name.data(), 1, &server_, 0, nullptr) != 1)
      fail_setup("fi_av_insert of the server's name failed");
  }

  // Posts `post` until it stops saying -FI_EAGAIN, then waits for its
  // completion; returns 1 or the error.
  template <typename Post>
  ssize_t post_and_wait(Post post, fi_cq_data_entry* entry) {
    ssize_t ret;
    const auto deadline = Clock::now() + std::chrono::duration<double>(o_.timeout);
    while ((ret = post()) == -FI_EAGAIN && Clock::now() < deadline) {
      fi_cq_data_entry none;
      fi_cq_read(f_.tx_cq, &none, 0);
    }
    if (ret != 0) return ret;
    return f_.wait(f_.tx_cq, entry);
  }

  bool write_target(const void* bytes, size_t length) {
    fi_cq_data_entry entry{};
    const ssize_t ret = post_and_wait(
        [&] { return fi_write(f_.ep, bytes, length, nullptr, server_, base_, key_, &context_); },
        &entry);
    if (ret != 1) failure("fi_write of the initial values: %s", fi_strerror(int(-ret)));
    return ret == 1;
  }

  bool read_target(void* bytes, size_t length) {
    fi_cq_data_entry entry{};
    const ssize_t ret = post_and_wait(
        [&] { return fi_read(f_.ep, bytes, length, nullptr, server_, base_, key_, &context_); },
        &entry);
    if (ret != 1) failure("fi_read of the target: %s", fi_strerror(int(-ret)));
    return ret == 1;
  }

  int valid(CallClass c, fi_datatype datatype, fi_op op, size_t* count) {
    switch (c) {
      case CallClass::kBase:
        return fi_atomicvalid(f_.ep, datatype, op, count);
      case CallClass::kFetch:
        return fi_fetch_atomicvalid(f_.ep, datatype, op, count);
      case CallClass::kCompare:
        return fi_compare_atomicvalid(f_.ep, datatype, op, count);
    }
    return -FI_EINVAL;
  }

  int query(CallClass c, fi_datatype datatype, fi_op op, fi_atomic_attr* attr) {
    const uint64_t flags = c == CallClass::kFetch     ? FI_FETCH_ATOMIC
                           : c == CallClass::kCompare ? FI_COMPARE_ATOMIC
                                                      : 0;
    return fi_query_atomic(f_.domain, datatype, op, attr, flags);
  }

  // Posts one atomic of `count` elements at the region's start.
  ssize_t post_atomic(CallClass c, fi_datatype datatype, fi_op op, const void* operand,
                      const void* compare, void* result, size_t count) {
    switch (c) {
      case CallClass::kBase:
        return fi_atomic(f_.ep, operand, count, nullptr, server_, base_, key_, datatype, op,
                         &context_);
      case CallClass::kFetch:
        return fi_fetch_atomic(f_.ep, operand, count, nullptr, result, nullptr, server_, base_,
                               key_, datatype, op, &context_);
      case CallClass::kCompare:
        return fi_compare_atomic(f_.ep, operand, count, nullptr, compare, nullptr, result, nullptr,
                                 server_, base_, key_, datatype, op, &context_);
    }
    return -FI_EINVAL;
  }

  template <typename T>
  void check_datatype(fi_datatype datatype) {
    // A sentinel in the target while the unsupported cells are tried: none
    // of them may change a byte.
    std::vector<uint8_t> sentinel(64 * sizeof(T));
    for (size_t i = 0; i < sentinel.size(); ++i) sentinel[i] = static_cast<uint8_t>(0x5A ^ i);
    for (CallClass c : {CallClass::kBase, CallClass::kFetch, CallClass::kCompare}) {
      for (int op = FI_MIN; op < kOpEnd; ++op) {
        cell_ = std::string(class_name(c)) + " op " + std::to_string(op) + " datatype " +
                std::to_string(datatype);
        const bool supported = ofi_dpdk::test::expect_supported(c, op, datatype);
        size_t count = 0;
        const int valid_ret = valid(c, datatype, static_cast<fi_op>(op), &count);
        fi_atomic_attr attr{};
        const int query_ret = query(c, datatype, static_cast<fi_op>(op), &attr);
        if (supported) {
          if (valid_ret != 0) failure("the valid call says %s", fi_strerror(-valid_ret));
          if (query_ret != 0 || attr.size != sizeof(T) || attr.count != count)
            failure("fi_query_atomic says %d, size %zu count %zu (valid: count %zu)", query_ret,
                    attr.size, attr.count, count);
          if (valid_ret == 0) check_supported<T>(c, datatype, static_cast<fi_op>(op), count);
          ++supported_;
        } else {
          if (valid_ret != -FI_EOPNOTSUPP)
            failure("the valid call says %d, not -FI_EOPNOTSUPP", valid_ret);
          if (query_ret != -FI_EOPNOTSUPP)
            failure("fi_query_atomic says %d, not -FI_EOPNOTSUPP", query_ret);
          if (!write_target(sentinel.data(), sentinel.size())) continue;
          check_refused<T>(c, datatype, static_cast<fi_op>(op));
          std::vector<uint8_t> after(sentinel.size());
          if (read_target(after.data(), after.size()) && after != sentinel)
            failure("a refused call changed the target");
          ++unsupported_;
        }
      }
    }
  }

  // The call fi_*valid refused is refused too, at the call, with no
  // completion.
  template <typename T>
  void check_refused(CallClass c, fi_datatype datatype, fi_op op) {
    std::vector<T> operand(4, T(1)), compare(4, T(1)), result(4, T(0));
    const ssize_t ret =
        post_atomic(c, datatype, op, operand.data(), compare.data(), result.data(), 4);
    if (ret != -FI_EOPNOTSUPP)
      failure("the call returned %zd (%s), not -FI_EOPNOTSUPP", ret,
              fi_strerror(static_cast<int>(-ret)));
    if (ret == 0) {
      fi_cq_data_entry entry{};
      f_.wait(f_.tx_cq, &entry);
    }
  }

  template <typename T>
  void check_supported(CallClass c, fi_datatype datatype, fi_op op, size_t max_count) {
    using ofi_dpdk::test::describe;
    using ofi_dpdk::test::same_value;
    // Every (target, operand[, compare]) combination of the edge values, one
    // element each.
    const std::vector<T> values = ofi_dpdk::test::edge_values<T>();
    const bool compares = c == CallClass::kCompare;
    std::vector<T> initial, operand, compare;
    for (const T& t : values)
      for (const T& v : values)
        for (size_t k = 0; k < (compares ? values.size() : 1); ++k) {
          initial.push_back(t);
          operand.push_back(v);
          compare.push_back(values[k]);
        }
    const size_t count = initial.size();
    if (count > max_count || count * sizeof(T) > kRegionBytes) {
      failure("%zu elements exceed the maximum count %zu", count, max_count);
      return;
    }
    if (!write_target(initial.data(), count * sizeof(T))) return;
    std::vector<T> result(count, T(42));
    // fi_atomic(3): FI_ATOMIC_READ takes a NULL buf.
    const void* operand_buffer = op == FI_ATOMIC_READ ? nullptr : operand.data();
    fi_cq_data_entry entry{};
    const ssize_t ret = post_and_wait(
        [&] {
          return post_atomic(c, datatype, op, operand_buffer, compare.data(), result.data(), count);
        },
        &entry);
    if (ret != 1) {
      failure("the atomic failed: %s", fi_strerror(static_cast<int>(-ret)));
      return;
    }
    const uint64_t flags = FI_ATOMIC | (c == CallClass::kBase ? FI_WRITE : FI_READ);
    if (entry.op_context != &context_ || entry.flags != flags)
      failure("completion flags %#" PRIx64 " (want %#" PRIx64 ") or context wrong", entry.flags,
              flags);
    std::vector<T> target(count);
    if (!read_target(target.data(), count * sizeof(T))) return;
    int shown = 0;
    for (size_t i = 0; i < count && shown < 3; ++i) {
      const std::optional<T> expected =
          ofi_dpdk::test::reference(op, initial[i], operand[i], compare[i]);
      if (!expected) {
        failure("the reference has no rule for this op");
        return;
      }
      if (!same_value(target[i], *expected)) {
        ++shown;
        failure("element %zu: target %s operand %s compare %s: now %s, expected %s", i,
                describe(initial[i]).c_str(), describe(operand[i]).c_str(),
                describe(compare[i]).c_str(), describe(target[i]).c_str(),
                describe(*expected).c_str());
      }
      if (c != CallClass::kBase && !same_value(result[i], initial[i])) {
        ++shown;
        failure("element %zu: fetched %s, not the old value %s", i, describe(result[i]).c_str(),
                describe(initial[i]).c_str());
      }
    }
    elements_ += count;
  }

  // Values that are no point-to-point datatype or op (the collective
  // FI_VOID and FI_NOOP, one past the last): refused by every valid call.
  void check_values_outside_the_table() {
    cell_ = "outside the table";
    const fi_datatype datatypes[] = {FI_VOID, static_cast<fi_datatype>(kDatatypeEnd)};
    const fi_op ops[] = {FI_NOOP, static_cast<fi_op>(kOpEnd)};
    for (CallClass c : {CallClass::kBase, CallClass::kFetch, CallClass::kCompare}) {
      size_t count = 0;
      for (fi_datatype datatype : datatypes)
        if (valid(c, datatype, FI_SUM, &count) == 0)
          failure("datatype %d accepted", static_cast<int>(datatype));
      for (fi_op op : ops)
        if (valid(c, FI_UINT64, op, &count) == 0) failure("op %d accepted", static_cast<int>(op));
    }
  }

  bool tell_done() {
    cell_ = "done message";
    fi_cq_data_entry entry{};
    const ssize_t ret = post_and_wait(
        [&] { return fi_send(f_.ep, kDone, sizeof(kDone), nullptr, server_, &context_); }, &entry);
    if (ret != 1) failure("the done message failed: %s", fi_strerror(static_cast<int>(-ret)));
    return ret == 1;
  }

  const Options& o_;
  Fabric f_;
  fi_addr_t server_ = FI_ADDR_NOTAVAIL;
  uint64_t key_ = 0;
  uint64_t base_ = 0;
  int context_ = 0;
  std::string cell_;
  int failures_ = 0;
  int supported_ = 0;
  int unsupported_ = 0;
  uint64_t elements_ = 0;
};

}  // namespace

int main(int argc, char** argv) {
  ofi_dpdk::app::point_libfabric_at_provider();
  const int consumed = fi_dpdk_eal_init(argc, argv);
  if (consumed < 0) fail_setup(std::string("EAL did not start: ") + fi_strerror(-consumed));
  const Options o = parse(argc - consumed, argv + consumed);
  if (o.role == "server") return serve(o);
  return Initiator(o).run();
}
