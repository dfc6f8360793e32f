// dpdk_log.h: the provider's log lines, through libfabric's logging
// (FI_LOG_LEVEL, FI_LOG_PROV=dpdk, FI_LOG_SUBSYS select them).
#pragma once

#include <rdma/fabric.h>
#include <rdma/providers/fi_log.h>
#include <rdma/providers/fi_prov.h>

namespace ofi_dpdk::ofi {

extern fi_provider g_provider;

#define DPDK_WARN(subsys, ...) FI_WARN(&::ofi_dpdk::ofi::g_provider, subsys, __VA_ARGS__)
#define DPDK_INFO(subsys, ...) FI_INFO(&::ofi_dpdk::ofi::g_provider, subsys, __VA_ARGS__)
#define DPDK_DBG(subsys, ...) FI_DBG(&::ofi_dpdk::ofi::g_provider, subsys, __VA_ARGS__)

}  // namespace ofi_dpdk::ofi
