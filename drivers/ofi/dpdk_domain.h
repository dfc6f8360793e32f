// dpdk_domain.h: the domain object (dpdk_domain.cc).
#pragma once

#include <rdma/fabric.h>
#include <rdma/fi_domain.h>

#include <atomic>
#include <cstdint>
#include <memory>

#include "lib/remote/regions.h"

namespace ofi_dpdk::ofi {

struct Fabric;
struct PortContext;
struct Mr;

struct Domain {
  fid_domain fid;
  Fabric* fabric;
  std::shared_ptr<PortContext> port;
  fi_info* info;  // a copy of what the domain was opened with
  uint32_t api_version;
  std::atomic<int> refs{0};
  // The registered regions by key, unique per domain, which endpoints'
  // targets read (lib/remote/regions.h).  Changed with the whole port lock
  // held (dpdk_mr.cc), so a request served at the target reads them under
  // the lane lock its pass already holds, with no lock of the domain's.
  remote::Regions regions{true};
  bool auto_progress = false;  // FI_PROGRESS_AUTO: the port is in the progress loop
  // domain_attr->auth_key (4 bytes, API 1.5 and later): the network key of
  // endpoints that name none; 0 when none.
  uint32_t default_auth_key = 0;
  // domain_attr->auth_key_size == FI_AV_AUTH_KEY (libfabric 2.x): endpoints
  // take their keys from the AV (fi_av_insert_auth_key).
  bool av_auth_keys = false;
  // domain_attr->max_group_id (2.x): peer groups are on when non-zero, and
  // the top 32 bits of an fi_addr then name the group (dpdk_ep_addr.cc).
  uint32_t max_group_id = 0;
};

}  // namespace ofi_dpdk::ofi
