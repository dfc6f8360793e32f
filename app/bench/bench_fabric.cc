// bench_fabric.cc: the benchmark's libfabric objects, for whichever
// provider --provider names, and the rendezvous through files by which a
// server and a client learn each other's addresses (and the server's
// region, for RMA and atomics).
#include <fi_dpdk.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_errno.h>

#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "app/bench/bench.h"

namespace ofi_dpdk::bench {

void fail_setup(const std::string& text) {
  std::fprintf(stderr, "dpdk-fi-bench: %s\n", text.c_str());
  std::exit(2);
}

void Bench::open() {
  fi_info* hints = fi_allocinfo();
  hints->fabric_attr->prov_name = strdup(o_.provider.c_str());
  hints->ep_attr->type = FI_EP_RDM;
  hints->caps = FI_MSG;
  if (o_.pattern == "tagged") hints->caps |= FI_TAGGED;
  if (o_.pattern == "write" || o_.pattern == "read") hints->caps |= FI_RMA;
  // Atomics on a region that others may also read and write (the
  // adversarial harness does, beside the pair).
  if (o_.pattern == "atomic") hints->caps |= FI_ATOMIC | FI_RMA;
  // What any of the three providers compared can work with; FI_MR_LOCAL
  // only if the provider insists (then every buffer is registered).
  hints->domain_attr->mr_mode = FI_MR_LOCAL | FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | FI_MR_PROV_KEY;
  // Each thread polls only its own CQs and endpoints: what the level says.
  if (o_.threads > 0) hints->domain_attr->threading = FI_THREAD_COMPLETION;
  const int ret = fi_getinfo(FI_VERSION(1, 17), nullptr, nullptr, 0, hints, &info_);
  fi_freeinfo(hints);
  if (ret != 0)
    fail_setup("provider " + o_.provider +
               " offers no endpoint for this pattern (fi_getinfo: " + fi_strerror(-ret) + ")");
  local_mr_ = (info_->domain_attr->mr_mode & FI_MR_LOCAL) != 0;
  BENCH_CHECK(fi_fabric(info_->fabric_attr, &fabric_, nullptr));
  BENCH_CHECK(fi_domain(fabric_, info_, &domain_, nullptr));
  fi_av_attr av_attr{};
  av_attr.type = FI_AV_TABLE;
  BENCH_CHECK(fi_av_open(domain_, &av_attr, &av_, nullptr));
  if (o_.dpdk())
    BENCH_CHECK(fi_open_ops(&domain_->fid, FI_DPDK_STATS_OPS_NAME, 0,
                            reinterpret_cast<void**>(&stats_), nullptr));
}

Endpoint Bench::make_endpoint() {
  Endpoint e;
  fi_cq_attr attr{};
  attr.format = FI_CQ_FORMAT_TAGGED;
  BENCH_CHECK(fi_cq_open(domain_, &attr, &e.tx_cq, nullptr));
  BENCH_CHECK(fi_cq_open(domain_, &attr, &e.rx_cq, nullptr));
  BENCH_CHECK(fi_endpoint(domain_, info_, &e.ep, nullptr));
  BENCH_CHECK(fi_ep_bind(e.ep, &av_->fid, 0));
  BENCH_CHECK(fi_ep_bind(e.ep, &e.tx_cq->fid, FI_TRANSMIT));
  BENCH_CHECK(fi_ep_bind(e.ep, &e.rx_cq->fid, FI_RECV));
  BENCH_CHECK(fi_enable(e.ep));
  char name[256];
  size_t len = sizeof(name);
  BENCH_CHECK(fi_getname(&e.ep->fid, name, &len));
  e.name.assign(name, len);
  return e;
}

fi_addr_t Bench::insert(const std::string& name) {
  fi_addr_t addr;
  if (fi_av_insert(av_, name.data(), 1, &addr, 0, nullptr) != 1) fail_setup("fi_av_insert failed");
  return addr;
}

fid_mr* Bench::register_memory(void* buf, size_t len, uint64_t access, void** desc) {
  fid_mr* mr = nullptr;
  BENCH_CHECK(fi_mr_reg(domain_, buf, len, access, 0, 0, 0, &mr, nullptr));
  if ((info_->domain_attr->mr_mode & FI_MR_ENDPOINT) != 0)
    fail_setup("providers that bind regions to endpoints (FI_MR_ENDPOINT) are not supported");
  *desc = fi_mr_desc(mr);
  return mr;
}

RemoteRegion Bench::remote_view(fid_mr* mr, const void* buf) const {
  RemoteRegion region;
  region.key = fi_mr_key(mr);
  const bool virtual_address = (info_->domain_attr->mr_mode & FI_MR_VIRT_ADDR) != 0;
  region.address = virtual_address ? reinterpret_cast<uintptr_t>(buf) : 0;
  return region;
}

namespace {

std::string hex(const std::string& bytes) {
  std::string out;
  for (unsigned char c : bytes) {
    out += "0123456789abcdef"[c >> 4];
    out += "0123456789abcdef"[c & 15];
  }
  return out;
}

std::string unhex(const std::string& text) {
  std::string bytes;
  for (size_t i = 0; i + 1 < text.size(); i += 2)
    bytes += static_cast<char>(std::stoi(text.substr(i, 2), nullptr, 16));
  return bytes;
}

}  // namespace

std::vector<std::string> Bench::exchange(const std::vector<Endpoint>& mine, const char* me,
                                         const char* peer, const RemoteRegion* mine_region,
                                         RemoteRegion* peer_region) {
  const std::string dir = o_.rendezvous;
  std::error_code ignored;
  std::filesystem::create_directories(dir, ignored);
  {
    std::ofstream out(dir + "/" + me + ".tmp");
    if (mine_region != nullptr)
      out << "region " << mine_region->address << " " << mine_region->key << "\n";
    for (const auto& e : mine) out << hex(e.name) << "\n";
  }
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
    if (line.rfind("region ", 0) == 0) {
      std::istringstream fields(line.substr(7));
      RemoteRegion region;
      fields >> region.address >> region.key;
      if (peer_region != nullptr) *peer_region = region;
      continue;
    }
    names.push_back(unhex(line));
  }
  return names;
}

bool Bench::wait(fid_cq* cq, fi_cq_tagged_entry* entry) {
  // The clock is read once per kPollsPerClockRead empty polls, and the
  // deadline set at the first read: a clock read per poll was a tenth of a
  // latency run's time, for every provider.
  constexpr unsigned kPollsPerClockRead = 256;
  Clock::time_point deadline{};
  for (unsigned polls = 1;; ++polls) {
    const ssize_t ret = fi_cq_read(cq, entry, 1);
    if (ret == 1) return true;
    if (ret == -FI_EAVAIL) {
      fi_cq_err_entry err{};
      fi_cq_readerr(cq, &err, 0);
      std::fprintf(stderr, "dpdk-fi-bench: error completion: %s (%s)\n", fi_strerror(err.err),
                   fi_cq_strerror(cq, err.prov_errno, err.err_data, nullptr, 0));
      return false;
    }
    if (polls % kPollsPerClockRead != 0) continue;
    const auto now = Clock::now();
    if (deadline == Clock::time_point{}) {
      deadline = now + std::chrono::duration_cast<Clock::duration>(
                           std::chrono::duration<double>(o_.timeout));
    } else if (now > deadline) {
      std::fprintf(stderr, "dpdk-fi-bench: nothing completed within %.0f s\n", o_.timeout);
      return false;
    }
  }
}

bool Bench::send(const Endpoint& e, const void* buf, size_t size, fi_addr_t to, void* context) {
  const auto deadline = Clock::now() + std::chrono::duration<double>(o_.timeout);
  for (;;) {
    const ssize_t ret = fi_send(e.ep, buf, size, nullptr, to, context);
    if (ret == 0) return true;
    if (ret != -FI_EAGAIN || Clock::now() > deadline) return false;
    fi_cq_tagged_entry none;
    fi_cq_read(e.tx_cq, &none, 0);
  }
}

void Bench::close(std::vector<Endpoint>& eps) {
  for (auto& e : eps) {
    fi_close(&e.ep->fid);
    fi_close(&e.tx_cq->fid);
    fi_close(&e.rx_cq->fid);
  }
}

void Bench::finish() {
  fi_close(&av_->fid);
  fi_close(&domain_->fid);
  fi_close(&fabric_->fid);
  fi_freeinfo(info_);
}

uint64_t Bench::retransmitted(const std::vector<Endpoint>& eps) {
  uint64_t total = 0;
  if (stats_ == nullptr) return 0;
  for (const auto& e : eps) {
    fi_dpdk_ep_stats s{};
    stats_->ep_stats(e.ep, &s);
    total += s.retransmitted;
  }
  return total;
}

void Bench::waits(const std::vector<Endpoint>& eps, fi_dpdk_ep_waits* out) {
  *out = fi_dpdk_ep_waits{};
  if (stats_ == nullptr ||
      stats_->size < offsetof(fi_dpdk_ops_stats, ep_waits) + sizeof(stats_->ep_waits))
    return;
  for (const auto& e : eps) {
    fi_dpdk_ep_waits w{};
    if (stats_->ep_waits(e.ep, &w) != 0) continue;
    out->retransmit_timeouts += w.retransmit_timeouts;
    out->tail_loss_probes += w.tail_loss_probes;
    out->window_probes += w.window_probes;
    out->delayed_acks += w.delayed_acks;
    out->delivery_probes += w.delivery_probes;
  }
}

std::vector<fi_dpdk_ep_rtt> Bench::round_trips(const std::vector<Endpoint>& eps) {
  std::vector<fi_dpdk_ep_rtt> out;
  if (stats_ == nullptr ||
      stats_->size < offsetof(fi_dpdk_ops_stats, ep_rtt) + sizeof(stats_->ep_rtt))
    return out;
  for (const auto& e : eps) {
    fi_dpdk_ep_rtt r{};
    if (stats_->ep_rtt(e.ep, &r) == 0 && r.samples != 0) out.push_back(r);
  }
  return out;
}

void Bench::port_stats(fi_dpdk_port_stats* out) {
  *out = fi_dpdk_port_stats{};
  if (stats_ != nullptr) stats_->port_stats(domain_, out);
}

}  // namespace ofi_dpdk::bench
