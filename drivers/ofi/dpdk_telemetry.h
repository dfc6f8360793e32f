// dpdk_telemetry.h: the provider's commands in DPDK's telemetry, and the
// port registry walk they read through.
#pragma once

#include <cstdint>
#include <functional>

namespace ofi_dpdk::ofi {

struct PortContext;

// Registers the /ofi_dpdk/ commands with DPDK's telemetry, once per
// process (dpdk_telemetry.cc).  Called when the first port opens; harmless
// where EAL runs with --no-telemetry (nothing serves the commands).
void register_telemetry();

// Calls `visit` for each port the provider has open, with the port
// registry's lock held, so none closes meanwhile (dpdk_domain.cc).  `visit`
// takes the port's own lock if it reads the port's state.
void for_each_open_port(const std::function<void(uint16_t port_id, PortContext& port)>& visit);

}  // namespace ofi_dpdk::ofi
