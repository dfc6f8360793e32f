// dpdk-fi-avbench: the address vector at scale.  Opens the dpdk provider
// through stock libfabric, inserts --count addresses (default 1,000,000) in
// batches of --batch, then looks every one up in random order, then removes
// them all, and prints one JSON object with the rates and the memory the
// table took per entry (resident set growth over the inserts).
//
//   dpdk-fi-avbench [EAL args] -- [--count N] [--batch B] [--seed S]
//
// e.g. over an in-memory net_ring port, no hugepages:
//   dpdk-fi-avbench -l 0 --no-huge -m 512 --no-shconf --no-pci
//       --no-telemetry --vdev=net_ring0 -- --count 1000000
//
// Exit status: 0 when every lookup returned the inserted address, 1 on a
// mismatch, 2 on bad arguments or set-up failure.
#include <fi_dpdk.h>
#include <rdma/fabric.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_errno.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <numeric>
#include <random>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "app/common/long_options.h"
#include "app/common/option_number.h"
#include "app/common/provider_path.h"

namespace {

using Clock = std::chrono::steady_clock;
constexpr size_t kNativeSize = 16;  // lib/av/address.h: the native form

struct Options {
  size_t count = 1'000'000;
  size_t batch = 1000;
  uint64_t seed = 1;
};

[[noreturn]] void fail_setup(const std::string& text) {
  std::fprintf(stderr, "dpdk-fi-avbench: %s\n", text.c_str());
  std::exit(2);
}

#define CHECK(call)                                                                      \
  do {                                                                                   \
    const int check_ret = static_cast<int>(call);                                        \
    if (check_ret != 0) fail_setup(std::string(#call) + ": " + fi_strerror(-check_ret)); \
  } while (0)

Options parse(int argc, char** argv) {
  Options o;
  auto number = [](const std::string& name, const char* text, auto* out) {
    const auto parsed = ofi_dpdk::app::option_number<std::remove_pointer_t<decltype(out)>>(text);
    if (!parsed) fail_setup("option --" + name + ": not a number: " + text);
    *out = *parsed;
  };
  ofi_dpdk::app::read_long_options(
      "dpdk-fi-avbench", argc, argv,
      {{"count", true}, {"batch", true}, {"seed", true}, {"help", false}},
      [&](const std::string& name, const char* value) {
        if (name == "count")
          number(name, value, &o.count);
        else if (name == "batch")
          number(name, value, &o.batch);
        else if (name == "seed")
          number(name, value, &o.seed);
        else if (name == "help") {
          std::printf("dpdk-fi-avbench [EAL args] -- [--count N] [--batch B] [--seed S]\n");
          std::exit(0);
        }
      },
      [](const std::string& why) { fail_setup(why); });
  if (o.count == 0 || o.batch == 0) fail_setup("--count and --batch must be above 0");
  return o;
}

// Resident set size in bytes.
size_t resident_bytes() {
  std::ifstream statm("/proc/self/statm");
  size_t pages = 0, resident = 0;
  statm >> pages >> resident;
  return resident * static_cast<size_t>(sysconf(_SC_PAGESIZE));
}

// The i-th address, native form: MAC 02:00 + 32 bits of i / 64, queue i % 64.
void make_address(size_t i, uint8_t* out) {
  const uint64_t node = i / 64;
  const uint8_t bytes[kNativeSize] = {0xDF,
                                      1,
                                      0x02,
                                      0x00,
                                      static_cast<uint8_t>(node >> 24),
                                      static_cast<uint8_t>(node >> 16),
                                      static_cast<uint8_t>(node >> 8),
                                      static_cast<uint8_t>(node),
                                      0,
                                      static_cast<uint8_t>(i % 64),
                                      0,
                                      0,
                                      0,
                                      0,
                                      0,
                                      0};
  std::memcpy(out, bytes, kNativeSize);
}

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

}  // namespace

int main(int argc, char** argv) {
  ofi_dpdk::app::point_libfabric_at_provider();
  const int consumed = fi_dpdk_eal_init(argc, argv);
  if (consumed < 0) fail_setup(std::string("EAL did not start: ") + fi_strerror(-consumed));
  const Options o = parse(argc - consumed, argv + consumed);

  fi_info* hints = fi_allocinfo();
  hints->fabric_attr->prov_name = strdup("dpdk");
  hints->ep_attr->type = FI_EP_RDM;
  hints->caps = FI_MSG;
  fi_info* info = nullptr;
  const int ret = fi_getinfo(FI_VERSION(1, 17), nullptr, nullptr, 0, hints, &info);
  fi_freeinfo(hints);
  if (ret != 0) fail_setup(std::string("no dpdk port (fi_getinfo: ") + fi_strerror(-ret) + ")");
  fid_fabric* fabric = nullptr;
  fid_domain* domain = nullptr;
  fid_av* av = nullptr;
  CHECK(fi_fabric(info->fabric_attr, &fabric, nullptr));
  CHECK(fi_domain(fabric, info, &domain, nullptr));

  std::vector<uint8_t> addresses(o.count * kNativeSize);
  for (size_t i = 0; i < o.count; ++i) make_address(i, addresses.data() + i * kNativeSize);
  std::vector<fi_addr_t> fi_addrs(o.count, FI_ADDR_NOTAVAIL);
  std::vector<size_t> order(o.count);
  std::iota(order.begin(), order.end(), size_t{0});
  std::shuffle(order.begin(), order.end(), std::mt19937_64(o.seed));

  const size_t rss_before = resident_bytes();
  fi_av_attr attr{};
  attr.type = FI_AV_TABLE;
  attr.count = o.count;
  CHECK(fi_av_open(domain, &attr, &av, nullptr));

  // Inserts, in batches.
  auto start = Clock::now();
  for (size_t first = 0; first < o.count; first += o.batch) {
    const size_t n = std::min(o.batch, o.count - first);
    const int inserted = fi_av_insert(av, addresses.data() + first * kNativeSize, n,
                                      fi_addrs.data() + first, 0, nullptr);
    if (inserted != static_cast<int>(n))
      fail_setup("fi_av_insert: " + std::to_string(inserted) + " of " + std::to_string(n));
  }
  const double insert_s = seconds_since(start);
  const size_t rss_after = resident_bytes();

  // Lookups, in random order, each checked.
  bool ok = true;
  uint8_t out[64];
  start = Clock::now();
  for (const size_t i : order) {
    size_t length = sizeof(out);
    if (fi_av_lookup(av, fi_addrs[i], out, &length) != 0 || length != kNativeSize ||
        std::memcmp(out, addresses.data() + i * kNativeSize, kNativeSize) != 0)
      ok = false;
  }
  const double lookup_s = seconds_since(start);

  // Removals, in batches, in random order.
  std::vector<fi_addr_t> shuffled(o.count);
  for (size_t i = 0; i < o.count; ++i) shuffled[i] = fi_addrs[order[i]];
  start = Clock::now();
  for (size_t first = 0; first < o.count; first += o.batch)
    CHECK(fi_av_remove(av, shuffled.data() + first, std::min(o.batch, o.count - first), 0));
  const double remove_s = seconds_since(start);

  CHECK(fi_close(&av->fid));
  CHECK(fi_close(&domain->fid));
  CHECK(fi_close(&fabric->fid));
  fi_freeinfo(info);

  const double n = static_cast<double>(o.count);
  std::printf(
      "{\"bench\":\"avbench\",\"count\":%zu,\"batch\":%zu,\"insert_s\":%.3f,"
      "\"inserts_per_s\":%.0f,\"lookups_per_s\":%.0f,\"lookup_ns\":%.1f,"
      "\"removes_per_s\":%.0f,\"rss_bytes_per_entry\":%.1f,\"ok\":%s}\n",
      o.count, o.batch, insert_s, n / insert_s, n / lookup_s, lookup_s * 1e9 / n, n / remove_s,
      static_cast<double>(rss_after - std::min(rss_before, rss_after)) / n, ok ? "true" : "false");
  return ok ? 0 : 1;
}
