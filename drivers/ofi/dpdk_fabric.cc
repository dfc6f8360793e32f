// dpdk_fabric.cc: fi_fabric.  One fabric, "dpdk"; it owns nothing but the
// count of domains and EQs opened from it.
#include "drivers/ofi/dpdk_fabric.h"

#include <new>

#include "drivers/ofi/dpdk_cm.h"
#include "drivers/ofi/dpdk_cntr.h"
#include "drivers/ofi/dpdk_cq.h"
#include "drivers/ofi/dpdk_domain.h"
#include "drivers/ofi/dpdk_eq.h"
#include "drivers/ofi/dpdk_fid.h"
#include "drivers/ofi/dpdk_limits.h"
#include "drivers/ofi/dpdk_objects.h"
#include "drivers/ofi/dpdk_port_lock.h"

namespace ofi_dpdk::ofi {
namespace {

int fabric_close(fid* fid) {
  Fabric* fabric = from_fid<Fabric>(fid);
  if (fabric->refs.load() != 0) return -FI_EBUSY;
  delete fabric;
  return 0;
}

fi_ops g_fabric_fid_ops = {
    .size = sizeof(fi_ops),
    .close = fabric_close,
    .bind = DPDK_ENOSYS(fi_ops, bind),
    .control = DPDK_ENOSYS(fi_ops, control),
    .ops_open = DPDK_ENOSYS(fi_ops, ops_open),
    .tostr = DPDK_ENOSYS(fi_ops, tostr),
    .ops_set = DPDK_ENOSYS(fi_ops, ops_set),
};

// fi_poll(3), fi_trywait: 0 when every object is empty, so the caller may
// sleep on their descriptors; -FI_EAGAIN when one has something to read.
int fabric_trywait(fid_fabric*, fid** fids, int count) {
  if (fids == nullptr || count < 0) return -FI_EINVAL;
  for (int i = 0; i < count; ++i) {
    if (fids[i] == nullptr) return -FI_EINVAL;
    switch (fids[i]->fclass) {
      case FI_CLASS_CQ: {
        Cq* cq = from_fid<Cq>(fids[i]);
        if (!cq->wait_fd.is_open()) return -FI_EINVAL;
        std::lock_guard guard(whole_lock(*cq->domain->port));
        if (!cq->empty()) return -FI_EAGAIN;
        break;
      }
      case FI_CLASS_CNTR: {
        Cntr* cntr = from_fid<Cntr>(fids[i]);
        if (!cntr->wait_fd.is_open()) return -FI_EINVAL;
        if (cntr->wait_fd.wait(0)) return -FI_EAGAIN;  // changed since last read
        break;
      }
      case FI_CLASS_EQ: {
        Eq* eq = from_fid<Eq>(fids[i]);
        eq->progress_watched();  // connection events arrive through ports
        std::lock_guard guard(eq->lock);
        if (!eq->events.empty() || !eq->errors.empty()) return -FI_EAGAIN;
        break;
      }
      case FI_CLASS_WAIT:
        if (!wait_object_supported(FI_WAIT_SET, reinterpret_cast<fid_wait*>(fids[i])))
          return -FI_EINVAL;
        if (wait_set_trywait(fids[i]) != 0) return -FI_EAGAIN;
        break;
      default:
        return -FI_EINVAL;
    }
  }
  return 0;
}

fi_ops_fabric g_fabric_ops = {
    .size = sizeof(fi_ops_fabric),
    .domain = domain_open,
    .passive_ep = passive_ep_open,
    .eq_open = eq_open,
    .wait_open = wait_open,
    .trywait = fabric_trywait,
    .domain2 = DPDK_ENOSYS(fi_ops_fabric, domain2),
};

}  // namespace

int fabric_open(fi_fabric_attr* attr, fid_fabric** out, void* context) {
  if (attr != nullptr && attr->name != nullptr && std::string(attr->name) != kFabricName)
    return -FI_EINVAL;
  auto* fabric = new (std::nothrow) Fabric();
  if (fabric == nullptr) return -FI_ENOMEM;
  fabric->fid.fid.fclass = FI_CLASS_FABRIC;
  fabric->fid.fid.context = context;
  fabric->fid.fid.ops = &g_fabric_fid_ops;
  fabric->fid.ops = &g_fabric_ops;
  *out = &fabric->fid;
  return 0;
}

}  // namespace ofi_dpdk::ofi
