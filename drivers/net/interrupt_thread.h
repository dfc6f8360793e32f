// interrupt_thread.h: runs a piece of device control on EAL's interrupt
// thread, where the drivers' own event handlers run.
//
// net_memif (22.11 and 24.11) tears a connection down on that thread when
// its peer's socket closes, and rte_eth_dev_stop tears it down too, on the
// caller's thread; the two share no lock, and both free the same regions.
// A stop that meets a peer's disconnect frees them twice and corrupts the
// rte_malloc heap (multiproc_memif_atomic crashed in rte_free inside
// rte_eth_dev_stop once in CI, with both processes closing at once).
// Handlers on the interrupt thread run one after another, so a stop run
// there cannot meet one.
#pragma once

#include <cstdint>
#include <functional>

namespace ofi_dpdk::net {

// Runs `work` on EAL's interrupt thread (through an alarm of 1 µs) and
// returns when it has run.  On that thread already, or when no alarm can
// be set, runs it here.
void run_on_interrupt_thread(const std::function<void()>& work);

// rte_eth_dev_stop(port_id), run on the interrupt thread; its result.
int stop_device(uint16_t port_id);

}  // namespace ofi_dpdk::net
