// fault_injector.h: makes a real DPDK port behave like a lossy link: drops,
// reorders, duplicates, corrupts and delays received frames as a FaultPlan
// says, so the transport's recovery is tested on real ports and real mbufs.
//
// It works on receive only, through ethdev RX callbacks: it sits between the
// NIC queue and whoever calls rte_eth_rx_burst.  Faults applied at the
// receiver are indistinguishable from faults on the wire.  A TX callback
// could not do the same: rte_eth_tx_burst returns how many entries of the
// caller's array were sent, and a callback that removed frames from that
// array breaks the count, so the caller would retry or free frames the
// callback already freed.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "drivers/net/fault_plan.h"

namespace ofi_dpdk::net {

// Every frame the injector saw counts exactly once, under what was done to
// it.  A frame that was chosen for an action that could not be carried out
// (no room for a duplicate, no mbuf for a copy, hold slots full, too short
// to corrupt) counts as passed.
struct FaultStats {
  uint64_t dropped = 0;
  uint64_t duplicated = 0;
  uint64_t reordered = 0;
  uint64_t corrupted = 0;
  uint64_t delayed = 0;
  uint64_t passed = 0;
};

class FaultInjector {
 public:
  // At most this many frames are held back (reordered or delayed) per RX
  // queue; when all slots are taken, a frame chosen for holding passes.
  static constexpr uint32_t kMaxHeldFrames = 64;
  // A reordered frame goes out after frames of a later burst; when none
  // arrive, it goes out anyway after this many later rx_burst calls or
  // after kReorderMaxHoldUs, whichever comes first.
  static constexpr uint32_t kReorderMaxCalls = 16;
  static constexpr uint32_t kReorderMaxHoldUs = 1000;
  // A due frame that finds the caller's array full is not kept waiting: it
  // takes the place of the burst's newest frames, which are carried over
  // and go out first in the next rx_burst call, order kept.

  // Attaches to every RX queue in [0, nb_rx_queues) of a configured port
  // (before or after rte_eth_dev_start).  Returns nullptr with *error left
  // alone when !config.any(): there is nothing to inject.  Returns nullptr
  // with a reason in *error (when error is not null) if the port is not
  // valid, nb_rx_queues is 0, a rate is outside [0, 1], or a callback cannot
  // be added (DPDK built without RTE_ETHDEV_RXTX_CALLBACKS, queue id out of
  // range); callbacks added before the failure are removed again.
  //
  // Threading rule, for attach failures and for the destructor: no thread
  // may be inside rte_eth_rx_burst on this port while callbacks are
  // removed.  The provider keeps it by holding its port lock (or having the
  // port stopped); the tests poll from the thread that detaches.
  static std::unique_ptr<FaultInjector> attach(uint16_t port_id, uint16_t nb_rx_queues,
                                               const FaultConfig& config, std::string* error);

  // Removes the callbacks and, under the threading rule above, frees their
  // memory at once (rte_eth_remove_rx_callback leaves that to the caller
  // because a concurrent rx_burst could still be running them).  Frames
  // still held are freed: they are lost, as on a link that went down.
  // Destroy the injector before closing the port or freeing its mempool.
  ~FaultInjector();

  FaultInjector(const FaultInjector&) = delete;
  FaultInjector& operator=(const FaultInjector&) = delete;

  // Sum over all queues.  Safe to call while other threads poll the port;
  // the counts are then a moment's snapshot per queue.
  FaultStats stats() const;

  // Frames held back right now, over all queues.  Same threading as stats().
  uint32_t held_frames() const;

  uint16_t port_id() const { return port_id_; }

  struct QueueState;  // defined in fault_injector.cc

 private:
  explicit FaultInjector(uint16_t port_id);
  void detach_all();

  uint16_t port_id_;
  std::vector<std::unique_ptr<QueueState>> queues_;
};

}  // namespace ofi_dpdk::net
