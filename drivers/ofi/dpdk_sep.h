// dpdk_sep.h: the scalable endpoint (dpdk_sep.cc).
#pragma once

#include <rdma/fabric.h>
#include <rdma/fi_endpoint.h>

#include <cstdint>
#include <vector>

namespace ofi_dpdk::ofi {

struct Domain;
struct Endpoint;
struct Av;

// fi_scalable_ep (dpdk_sep.cc).  It holds rx_count + tx_count queue ids
// from base at its port: receive context i is queue base + i, transmit
// context j queue base + rx_count + j.  Its address is (MAC, base).
struct ScalableEp {
  fid_ep fid;
  Domain* domain;
  fi_info* info;
  Av* av = nullptr;  // fi_scalable_ep_bind: every context uses it
  uint16_t base = 0;
  uint16_t rx_count = 0;
  uint16_t tx_count = 0;
  bool enabled = false;
  // The open contexts by index (nullptr: not open).  Port lock.
  std::vector<Endpoint*> rx;
  std::vector<Endpoint*> tx;
};

}  // namespace ofi_dpdk::ofi
