// shared_port.h: one port shared by the processes of a host through DPDK's
// multi-process model, the way a NIC with an embedded switch is shared by
// its queues.
//
// The primary process (app/switch, `dpdk-fi-switch`) owns the port: a
// net_ring device with one queue pair per process, whose TX rings it drains
// and whose RX rings it fills.  Every other process attaches as a DPDK
// secondary, claims a slot (a queue pair) in the port's table, and uses the
// block of endpoint queue ids that goes with the slot.  The switch hands
// each frame to the slot that owns the frame's dst_queue, as a NIC would
// steer it with an rte_flow rule; a frame for a slot nobody holds, or for
// another MAC, is dropped and counted (the port has no uplink).
//
// The table lives in a memzone named after the port, so any process of the
// file prefix finds it; slots are claimed with a compare-and-swap of the
// claimer's pid and given back when the port is closed; a slot whose pid is
// gone (a crashed process) may be taken over.
#pragma once

#include <atomic>
#include <cstdint>
#include <string>
#include <string_view>


namespace ofi_dpdk::net {

inline constexpr uint32_t kSharedTableMagic = 0x6f666973;  // "ofis"
inline constexpr uint16_t kSharedTableVersion = 1;
// Processes one shared port serves (queue pairs of the net_ring device).
inline constexpr uint16_t kMaxSharedProcesses = 16;
// Endpoint queue ids of a port, split between the slots (the provider's
// kMaxEndpointsPerPort).
inline constexpr uint16_t kSharedEndpointQueues = 64;

struct SharedPortTable {
  uint32_t magic;
  uint16_t version;
  uint16_t slots;              // queue pairs, one per attached process
  uint16_t queues_per_slot;    // endpoint queue ids each slot owns
  uint16_t ether_type;         // frames of other types are dropped
  uint8_t mac[6];
  int32_t switch_pid;
  std::atomic<int32_t> owner[kMaxSharedProcesses];  // pid holding the slot, or 0
  // What the switch did, for its exit report and for tests.
  std::atomic<uint64_t> forwarded;
  std::atomic<uint64_t> dropped_no_owner;   // dst_queue of a free slot, or beyond
  std::atomic<uint64_t> dropped_full;       // the owner's RX ring was full
  std::atomic<uint64_t> dropped_foreign;    // another MAC, EtherType, or runt
};

// The memzone holding a port's table.
std::string shared_table_name(std::string_view port_name);
// The table of the shared port `port_name`, or nullptr when the port is not
// a shared one (or its table is of another version).
SharedPortTable* find_shared_table(std::string_view port_name);

// The slot that owns endpoint queue `dst_queue`, or -1 when none can.
inline int slot_of_queue(const SharedPortTable& table, uint16_t dst_queue) {
  const uint32_t slot = dst_queue / table.queues_per_slot;
  return slot < table.slots ? static_cast<int>(slot) : -1;
}

// Claims a free slot (or one whose owner died) for process `pid`; returns
// it, or -1 when all are held by live processes.
int claim_shared_slot(SharedPortTable& table, int32_t pid);
void release_shared_slot(SharedPortTable& table, int slot, int32_t pid);
// Whether the process holding a slot still runs.
bool pid_alive(int32_t pid);

}  // namespace ofi_dpdk::net
