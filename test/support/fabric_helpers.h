// fabric_helpers.h: small helpers for tests that drive the provider through
// stock libfabric: open the objects of one endpoint, wait for completions
// with a time limit so no test can hang.
#pragma once

#include <gtest/gtest.h>
#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>

#include <chrono>
#include <cstring>
#include <string>

namespace ofi_dpdk::test {

// Hints for the dpdk provider's RDM messaging, optionally on one port.
inline fi_info* dpdk_hints(const char* domain = nullptr) {
  fi_info* hints = fi_allocinfo();
  hints->fabric_attr->prov_name = strdup("dpdk");
  hints->ep_attr->type = FI_EP_RDM;
  hints->caps = FI_MSG;
  if (domain != nullptr) hints->domain_attr->name = strdup(domain);
  return hints;
}

inline fi_info* get_dpdk_info(const char* domain = nullptr, uint64_t caps = FI_MSG) {
  fi_info* hints = dpdk_hints(domain);
  hints->caps = caps;
  fi_info* info = nullptr;
  const int ret = fi_getinfo(FI_VERSION(1, 17), nullptr, nullptr, 0, hints, &info);
  fi_freeinfo(hints);
  return ret == 0 ? info : nullptr;
}

// One endpoint with its own CQs, on an AV and domain it may share.
struct TestEndpoint {
  fid_ep* ep = nullptr;
  fid_cq* tx_cq = nullptr;
  fid_cq* rx_cq = nullptr;
  fi_addr_t addr = FI_ADDR_NOTAVAIL;  // its index in the AV
  uint8_t name[64] = {};
  size_t name_len = 0;

  // Returns 0 or the first failing call's error.  A counter, when given, is
  // bound with counter_flags before fi_enable.
  int open(fid_domain* domain, fid_av* av, fi_info* info, fi_cq_format format = FI_CQ_FORMAT_DATA,
           uint64_t cq_bind_flags = 0, fid_cntr* counter = nullptr, uint64_t counter_flags = 0,
           size_t cq_size = 0) {
    fi_cq_attr attr{};
    attr.format = format;
    attr.size = cq_size;
    attr.wait_obj = FI_WAIT_UNSPEC;
    int ret;
    if ((ret = fi_cq_open(domain, &attr, &tx_cq, nullptr))) return ret;
    if ((ret = fi_cq_open(domain, &attr, &rx_cq, nullptr))) return ret;
    if ((ret = fi_endpoint(domain, info, &ep, nullptr))) return ret;
    if ((ret = fi_ep_bind(ep, &av->fid, 0))) return ret;
    if ((ret = fi_ep_bind(ep, &tx_cq->fid, FI_TRANSMIT | cq_bind_flags))) return ret;
    if ((ret = fi_ep_bind(ep, &rx_cq->fid, FI_RECV | cq_bind_flags))) return ret;
    if (counter != nullptr && (ret = fi_ep_bind(ep, &counter->fid, counter_flags))) return ret;
    if ((ret = fi_enable(ep))) return ret;
    name_len = sizeof(name);
    if ((ret = fi_getname(&ep->fid, name, &name_len))) return ret;
    return fi_av_insert(av, name, 1, &addr, 0, nullptr) == 1 ? 0 : -FI_EINVAL;
  }

  void close() {
    if (ep) {
      EXPECT_EQ(fi_close(&ep->fid), 0);
    }
    if (tx_cq) {
      EXPECT_EQ(fi_close(&tx_cq->fid), 0);
    }
    if (rx_cq) {
      EXPECT_EQ(fi_close(&rx_cq->fid), 0);
    }
    ep = nullptr;
    tx_cq = rx_cq = nullptr;
  }
};

// Reads one entry, polling for at most `seconds`.  Returns what the last
// fi_cq_read(from) returned: 1, -FI_EAVAIL, or -FI_EAGAIN on timeout.
template <typename Entry>
ssize_t wait_for_completion(fid_cq* cq, Entry* entry, double seconds = 5,
                            fi_addr_t* source = nullptr) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  ssize_t ret;
  do {
    ret = source ? fi_cq_readfrom(cq, entry, 1, source) : fi_cq_read(cq, entry, 1);
  } while (ret == -FI_EAGAIN && std::chrono::steady_clock::now() < deadline);
  return ret;
}

// Polls `cq` for `seconds` and returns true if no completion showed up.
inline bool stays_empty(fid_cq* cq, double seconds = 0.2) {
  fi_cq_data_entry entry;
  return wait_for_completion(cq, &entry, seconds) == -FI_EAGAIN;
}

}  // namespace ofi_dpdk::test
