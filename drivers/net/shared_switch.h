// shared_switch.h: the primary process's side of a shared port
// (shared_port.h): it makes the net_ring device, its rings and its table,
// and moves each frame a process sent to the RX ring of the process that
// owns the frame's dst_queue.  Used by app/switch (dpdk-fi-switch) and its
// tests; the provider never links it.
#pragma once

#include <cstdint>
#include <string>

#include "drivers/net/shared_port.h"

struct rte_ring;
struct rte_mbuf;
struct rte_mempool;

namespace ofi_dpdk::net {

// The switch: creates the port and its table in the primary process, and
// moves frames from the processes' TX rings to their RX rings.
class SharedSwitch {
 public:
  struct Config {
    std::string name = "shared0";  // the device is net_ring_<name>
    uint16_t slots = 8;
    uint32_t ring_size = 4096;  // frames each ring holds (a power of 2)
    uint16_t ether_type = 0x88B5;
    // Each slot's pool (shared_pool_name): mbufs, and the frame size they
    // hold (FI_DPDK_MTU's default).
    uint32_t mbufs_per_slot = 2560;
    uint16_t mtu = 9000;
  };
  // Returns nullptr with *error set when the rings, the port or the table
  // cannot be made (a second switch of the same name, a secondary process).
  static SharedSwitch* create(const Config& config, std::string* error);
  ~SharedSwitch();
  SharedSwitch(const SharedSwitch&) = delete;
  SharedSwitch& operator=(const SharedSwitch&) = delete;

  // One pass over every TX ring; returns the frames moved or dropped.
  uint32_t forward();
  // Whether any slot is held by a live process.
  bool in_use() const;
  // Frees the slots of processes that died holding them, and the frames
  // queued for them.  Returns how many slots.
  uint32_t reap_dead_owners();
  const SharedPortTable& table() const { return *table_; }
  const SharedPortLayout& layout() const { return layout_; }
  const std::string& port_name() const { return port_name_; }
  uint16_t port_id() const { return port_id_; }

 private:
  SharedSwitch() = default;
  void route(rte_mbuf* frame, uint32_t* counts, rte_mbuf*** outs);
  // Whether slot `slot`'s lock is free; if so, and `keep`, we now hold it.
  bool take_slot_lock(uint16_t slot, bool keep) const;

  Config config_;
  // What we wrote into the table: we route by it, whatever the table says
  // now (a process of the prefix may have written over it).
  SharedPortLayout layout_;
  uint32_t share_ = 0;  // ring_share of a slot's pool
  std::string port_name_;
  uint16_t port_id_ = 0;
  rte_mempool* pool_ = nullptr;
  SharedPortTable* table_ = nullptr;
  rte_ring* rx_[kMaxSharedProcesses] = {};
  rte_ring* tx_[kMaxSharedProcesses] = {};
  int lock_fds_[kMaxSharedProcesses] = {-1, -1, -1, -1, -1, -1, -1, -1,
                                        -1, -1, -1, -1, -1, -1, -1, -1};
};

}  // namespace ofi_dpdk::net
