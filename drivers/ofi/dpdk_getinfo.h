// dpdk_getinfo.h: fi_getinfo's provider side, and starting EAL, which it needs.
#pragma once

#include <rdma/fabric.h>

#include <cstdint>

namespace ofi_dpdk::ofi {

// Getinfo: see dpdk_getinfo.cc.
int getinfo(uint32_t version, const char* node, const char* service, uint64_t flags,
            const fi_info* hints, fi_info** info);

// Makes sure EAL is up (FI_DPDK_EAL_ARGS on first use).  Returns 0 or
// -FI_ENODATA after logging why.
int ensure_eal();

}  // namespace ofi_dpdk::ofi
