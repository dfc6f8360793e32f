// dpdk_mr.cc: fi_mr_reg.  Messaging needs no registration (mr_mode has no
// FI_MR_LOCAL), but applications may register anyway; the region and its
// access are recorded for the RMA issue to enforce.  Keys are the
// application's or random, as the domain's mr_mode says.

#include "drivers/ofi/dpdk_mr.h"

#include "drivers/ofi/dpdk_cntr.h"
#include "drivers/ofi/dpdk_domain.h"
#include "drivers/ofi/dpdk_endpoint.h"
#include "drivers/ofi/dpdk_fid.h"
#include "drivers/ofi/dpdk_log.h"
#include "drivers/ofi/dpdk_objects.h"
#include "drivers/ofi/dpdk_port.h"
#include "drivers/ofi/dpdk_random.h"

namespace ofi_dpdk::ofi {
namespace {

int mr_close(fid* fid) {
  Mr* mr = from_fid<Mr>(fid);
  {
    // The whole port lock: a request being served holds a lane's, and with
    // it this region's counter pointer, which must stay valid until that
    // request is done; and the target reads Domain::regions under it.
    std::lock_guard port_guard(mr->domain->port->lock);
    const std::optional<remote::Region> region = mr->domain->regions.remove(mr->fid.key);
    // The application may free the memory once this returns.  Reads are
    // answered from the region itself until the initiator has them
    // (lib/remote/target.h): those still unacknowledged take a copy now.
    // Writes being placed into it as they arrive place nothing more and
    // fail at their initiator with FI_EKEYREJECTED, as any access to a
    // closed region does (fi_mr(3)).  (Only enabled endpoints serve
    // requests; `enabled` is set under the port lock, after the engine is
    // made.)
    for (Endpoint* ep : mr->domain->port->endpoints) {
      if (ep == nullptr || !ep->enabled || !region) continue;
      ep->engine->recall_lent(region->base, region->length);
      ep->engine->forget_placements(region->base, region->length);
    }
    if (mr->remote_write_cntr != nullptr) mr->remote_write_cntr->refs--;
  }
  mr->domain->refs--;
  delete mr;
  return 0;
}

// fi_mr(3), fi_mr_bind: a counter bound with FI_REMOTE_WRITE counts the
// remote writes and atomics that modify the region.  One counter per region;
// regions belong to the domain, not to endpoints (no FI_MR_ENDPOINT), so
// binding an endpoint is refused.
int mr_bind(fid* mr_fid, fid* bfid, uint64_t flags) {
  Mr* mr = from_fid<Mr>(mr_fid);
  if (bfid == nullptr || bfid->fclass != FI_CLASS_CNTR) return -FI_EINVAL;
  Cntr* cntr = from_fid<Cntr>(bfid);
  if (cntr->domain != mr->domain) return -FI_EINVAL;
  if (flags != FI_REMOTE_WRITE) return -FI_EBADFLAGS;
  std::lock_guard port_guard(mr->domain->port->lock);  // see Domain::regions
  if (mr->remote_write_cntr != nullptr) return -FI_EALREADY;
  mr->remote_write_cntr = cntr;
  mr->domain->regions.set_counter(mr->fid.key, cntr);
  cntr->refs++;
  return 0;
}

// fi_mr_enable: regions are usable from fi_mr_reg on (mr_mode has no
// FI_MR_RMA_EVENT), so enabling one is allowed and changes nothing.
int mr_control(fid*, int command, void*) {
  return command == FI_ENABLE ? 0 : -FI_ENOSYS;
}

fi_ops g_mr_fid_ops = {
    .size = sizeof(fi_ops),
    .close = mr_close,
    .bind = mr_bind,
    .control = mr_control,
    .ops_open = DPDK_ENOSYS(fi_ops, ops_open),
    .tostr = DPDK_ENOSYS(fi_ops, tostr),
    .ops_set = DPDK_ENOSYS(fi_ops, ops_set),
};

// fi_mr(3): without FI_MR_PROV_KEY (and with the legacy FI_MR_SCALABLE) the
// application's requested_key is the key; with it, or the legacy
// FI_MR_BASIC, the provider picks one that a peer cannot guess.
bool provider_picks_keys(const Domain& domain) {
  const int mode = domain.info->domain_attr->mr_mode;
  return (mode & FI_MR_PROV_KEY) != 0 || mode == 1 /*FI_MR_BASIC*/;
}

// Records the key of `mr`, and `region` under it, in its domain: 0, -FI_ENOKEY when an
// application-chosen key is in use already, -FI_EIO when the kernel gives
// no random bytes for a provider-chosen one.
int claim_key(Mr* mr, const remote::Region& region, uint64_t requested_key) {
  Domain& domain = *mr->domain;
  const bool random_key = provider_picks_keys(domain);
  for (;;) {
    // 64 bits from the kernel: a peer that learned other keys of this
    // domain learns nothing of the next one (keys still travel in clear:
    // see doc/rma.md).  Drawn before the locks: they stop every lane.
    uint64_t key = requested_key;
    if (random_key && !kernel_random(&key, sizeof(key))) {
      DPDK_WARN(FI_LOG_MR, "getrandom failed: no memory key can be chosen\n");
      return -FI_EIO;
    }
    // The whole port lock too: a request served on any lane may be
    // looking up a key (Domain::regions), and an insert may rehash the
    // table.
    std::lock_guard port_guard(domain.port->lock);
    if (domain.regions.add(key, region)) {
      mr->fid.key = key;
      return 0;
    }
    if (!random_key) return -FI_ENOKEY;
  }
}

}  // namespace

int mr_regattr(fid* fid, const fi_mr_attr* attr, uint64_t flags, fid_mr** out) {
  // FI_RMA_EVENT announces a counter binding, which needs no preparation here.
  if (fid == nullptr || attr == nullptr || out == nullptr || (flags & ~FI_RMA_EVENT))
    return -FI_EINVAL;
  if (fid->fclass != FI_CLASS_DOMAIN) return -FI_EINVAL;
  if (attr->iov_count > 1) return -FI_EINVAL;  // mr_iov_limit is 1
  auto* mr = new (std::nothrow) Mr();
  if (mr == nullptr) return -FI_ENOMEM;
  mr->domain = from_fid<Domain>(reinterpret_cast<fid_domain*>(fid));
  remote::Region region;
  region.base = attr->iov_count ? static_cast<uint8_t*>(attr->mr_iov[0].iov_base) : nullptr;
  region.length = attr->iov_count ? attr->mr_iov[0].iov_len : 0;
  region.access = attr->access;
  region.offset = attr->offset;
  mr->fid.fid.fclass = FI_CLASS_MR;
  mr->fid.fid.context = attr->context;
  mr->fid.fid.ops = &g_mr_fid_ops;
  mr->fid.mem_desc = mr;
  // Whole before it is published: once its key is in the domain's table, a
  // progress thread serving a peer's request may read it.
  if (int ret = claim_key(mr, region, attr->requested_key); ret != 0) {
    delete mr;
    return ret;
  }
  mr->domain->refs++;
  *out = &mr->fid;
  return 0;
}

int mr_regv(fid* fid, const iovec* iov, size_t count, uint64_t access, uint64_t offset,
            uint64_t requested_key, uint64_t flags, fid_mr** mr, void* context) {
  fi_mr_attr attr{};
  attr.mr_iov = iov;
  attr.iov_count = count;
  attr.access = access;
  attr.offset = offset;
  attr.requested_key = requested_key;
  attr.context = context;
  return mr_regattr(fid, &attr, flags, mr);
}

int mr_reg(fid* fid, const void* buf, size_t len, uint64_t access, uint64_t offset,
           uint64_t requested_key, uint64_t flags, fid_mr** mr, void* context) {
  iovec iov{const_cast<void*>(buf), len};
  return mr_regv(fid, &iov, 1, access, offset, requested_key, flags, mr, context);
}

}  // namespace ofi_dpdk::ofi
