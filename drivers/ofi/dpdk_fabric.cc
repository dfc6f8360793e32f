// dpdk_fabric.cc: fi_fabric.  One fabric, "dpdk"; it owns nothing but the
// count of domains and EQs opened from it.
#include "drivers/ofi/dpdk_prov.h"

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

fi_ops_fabric g_fabric_ops = {
    .size = sizeof(fi_ops_fabric),
    .domain = domain_open,
    .passive_ep = DPDK_ENOSYS(fi_ops_fabric, passive_ep),
    .eq_open = eq_open,
    .wait_open = DPDK_ENOSYS(fi_ops_fabric, wait_open),
    .trywait = DPDK_ENOSYS(fi_ops_fabric, trywait),
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
