// shared_port.h: one port shared by the processes of a host through DPDK's
// multi-process model, the way a NIC with an embedded switch is shared by
// its queues.
//
// The primary process (app/switch, `dpdk-fi-switch`) owns the port: a
// net_ring device with one queue pair per process.  Every other process
// attaches as a DPDK secondary, claims a slot (a queue pair) in the port's
// table, and uses the block of endpoint queue ids that goes with the slot.
// A process receives from its queue pair through ethdev, and sends each
// frame straight into the RX queue of the slot that owns the frame's
// dst_queue, as a NIC's embedded switch would deliver it after an rte_flow
// rule: no process in between, so no CPU of its own on the data path.  A
// frame for a slot nobody holds, or for another MAC, is dropped and counted
// (the port has no uplink).  The switch process also forwards what arrives
// on the TX queues (a DPDK program calling rte_eth_tx_burst itself).
//
// The table lives in a memzone named after the port, so any process of the
// file prefix finds it.  A slot is held by whoever holds its lock: an
// flock(2) on a file of the slot in EAL's runtime directory, taken before
// the claimer writes its pid into the slot and dropped by the kernel when
// the holder exits, however it exits.  So a pid that was reused, or one
// that means nothing in the reader's pid namespace, decides nothing: the
// pid in the table only routes frames and names the holder.  A slot whose
// lock is free while the table names a holder (a process that exited
// without closing, or crashed) may be taken over by the next claimer, and
// the switch frees it within 50 ms, discarding the frames queued for it.
//
// Each sender, and the switch, puts a frame into a slot's RX ring only while
// the ring holds fewer than a quarter of the sender's pool (kShareOfPool):
// the mbufs in a ring belong to the senders' pools, so a slot whose process
// stopped reading (SIGSTOP, a debugger, a hostile process) would otherwise
// absorb a sender's whole pool and stop it sending to anyone.  What is over
// the share is dropped and counted (dropped_share), as a full NIC queue
// drops; the transport retransmits.
//
// Trust: the processes of one file prefix run as the same user and map the
// same hugepage memory, so they trust each other with memory integrity.  A
// hostile or broken secondary can read and forge any frame, corrupt any
// ring or pool, and delete the lock files; nothing here defends against
// that.  What is bounded anyway, since a stopped or buggy process is common:
// what a slot can hold of others' buffers (the share), who holds a slot
// (kernel locks, not pids), and every read of the table (its fixed fields
// are checked once and copied, SharedPortLayout, so a damaged table makes
// newcomers refuse the port and never makes anyone divide by zero or index
// past an array).
//
// Known limit: a process killed inside a multi-producer ring operation (an
// RX ring here, a mempool's ring in any DPDK multi-process program) leaves
// that ring's other producers waiting; DPDK's rings have no recovery.
#pragma once

#include <sys/types.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <string>
#include <string_view>

struct rte_ring;

namespace ofi_dpdk::net {

inline constexpr uint32_t kSharedTableMagic = 0x6f666973;  // "ofis"
// 3: slots held by a lock file, dropped_share.  4: released (slot reuse).
inline constexpr uint16_t kSharedTableVersion = 4;
// Processes one shared port serves (queue pairs of the net_ring device).
inline constexpr uint16_t kMaxSharedProcesses = 16;
// Endpoint queue ids of a port, split between the slots (the provider's
// kMaxEndpointsPerPort).
inline constexpr uint16_t kSharedEndpointQueues = 64;
inline constexpr int32_t kSlotDraining = -1;
// A slot's RX ring takes a sender's frame while it holds fewer than
// 1/kShareOfPool of the sender's pool (SharedPortTable::dropped_share).
inline constexpr uint32_t kShareOfPool = 4;
inline uint32_t ring_share(uint32_t pool_mbufs) {
  return std::max<uint32_t>(1, pool_mbufs / kShareOfPool);
}

struct SharedPortTable;
// Stamps `slot` as given back now (SharedPortTable::released).
void mark_slot_released(SharedPortTable& table, int slot);

struct SharedPortTable {
  uint32_t magic;
  uint16_t version;
  char name[16];             // the switch's --name: rings are named after it
  uint16_t slots;            // queue pairs, one per attached process
  uint16_t queues_per_slot;  // endpoint queue ids each slot owns
  uint16_t ether_type;       // frames of other types are dropped
  uint8_t mac[6];
  int32_t switch_pid;
  // The pid holding each slot, as the holder sees it; 0 when free;
  // kSlotDraining while its ring is emptied (the holder giving it back, or
  // the switch after the holder died).  Only a process holding the slot's
  // lock writes it.
  std::atomic<int32_t> owner[kMaxSharedProcesses];
  // When each slot was last given back (releases counts them): a claimer
  // takes the free slot given back longest ago, so a slot, and with it its
  // endpoint addresses, goes to a new process only when no fresher one is
  // free -- a peer still finishing with the old holder's address (failing
  // its operations, removing it from an AV) does not meet a newcomer there.
  std::atomic<uint32_t> releases;
  std::atomic<uint32_t> released[kMaxSharedProcesses];
  // Frames the switch moved from TX queues, and frames dropped by anyone
  // (the switch or a sending process): the switch's exit report, tests.
  std::atomic<uint64_t> forwarded;
  std::atomic<uint64_t> dropped_no_owner;  // dst_queue of a free slot, or beyond
  std::atomic<uint64_t> dropped_full;      // the owner's RX ring was full
  std::atomic<uint64_t> dropped_foreign;   // another MAC, EtherType, or runt
  std::atomic<uint64_t> dropped_share;     // the owner's RX ring held its share (kShareOfPool)
};

// The table's fixed fields, checked once and copied: every process routes
// with its copy, so a table overwritten since (any process of the prefix
// can write it) changes nothing for those attached.  Only the owner words
// and the counters are read live.
struct SharedPortLayout {
  char name[16] = {};            // 1 to 15 of a-z, 0-9 and _
  uint16_t slots = 0;            // 1 to kMaxSharedProcesses
  uint16_t queues_per_slot = 0;  // at least 1; slots * queues_per_slot <= kSharedEndpointQueues
  uint16_t ether_type = 0;
  uint8_t mac[6] = {};
  int32_t switch_pid = 0;  // > 0; names the slots' lock files
};

// Checks the fixed fields of a table (find_shared_table checked its magic
// and version) and copies them into *layout.  Returns 0, or -EINVAL with
// what is out of range in *why.
int read_shared_layout(const SharedPortTable& table, SharedPortLayout* layout, std::string* why);

// The mbuf pool of a slot: made by the switch, so that a process attaching
// needs no memory from the primary (a secondary's allocation is a request
// to the primary that times out on a busy host), and kept for the slot's
// next owner.
std::string shared_pool_name(uint16_t port_id, uint16_t slot);

// The rings of slot `slot` ("rx" or "tx") of the switch named `name`.
std::string shared_ring_name(std::string_view name, const char* direction, uint16_t slot);

// The memzone holding a port's table.
std::string shared_table_name(std::string_view port_name);
// The table of the shared port `port_name`, or nullptr when the port is not
// a shared one (or its table is of another version).
SharedPortTable* find_shared_table(std::string_view port_name);

// The slot that owns endpoint queue `dst_queue`, or -1 when none can.
inline int slot_of_queue(const SharedPortLayout& layout, uint16_t dst_queue) {
  const uint32_t slot = dst_queue / layout.queues_per_slot;
  return slot < layout.slots ? static_cast<int>(slot) : -1;
}

// Where a frame on the shared port goes: the slot owning its dst_queue (held
// by a process), kSharedNotOurs for another MAC or EtherType or a runt, or
// kSharedNoOwner for a queue no process holds.
inline constexpr int kSharedNotOurs = -1;
inline constexpr int kSharedNoOwner = -2;
// Reads the table's owner words, and nothing else of it.
int shared_destination(const SharedPortLayout& layout, const SharedPortTable& table,
                       const uint8_t* frame, uint32_t length);

// The file whose flock(2) says who holds slot `slot` (in EAL's runtime
// directory; the switch makes them).
std::string shared_slot_lock_path(const SharedPortLayout& layout, uint16_t slot);

// The lock a slot's holder keeps while it holds the slot.  Closed by its
// destructor in the process that took it; a child forked meanwhile closes
// its copy at the fork, so a child that outlives the holder does not keep
// the slot.
class SlotLock {
 public:
  SlotLock() = default;
  explicit SlotLock(int fd);
  ~SlotLock();
  SlotLock(SlotLock&& other) noexcept;
  SlotLock& operator=(SlotLock&& other) noexcept;
  SlotLock(const SlotLock&) = delete;
  SlotLock& operator=(const SlotLock&) = delete;

 private:
  void close_if_ours();
  int fd_ = -1;
  pid_t pid_ = 0;
};

// Claims a free slot, or one whose holder is gone, for process `pid`:
// takes the slot's lock, then writes `pid` into its owner word.  Returns
// the slot with its lock in *lock, -EBUSY when live processes hold every
// slot (waiting up to a second for slots being emptied or claimed), or
// another negative errno with the reason in *why (a lock file missing).
int claim_shared_slot(SharedPortTable& table, const SharedPortLayout& layout, int32_t pid,
                      SlotLock* lock, std::string* why);
// Gives slot `slot` back if `pid` holds it, first freeing what is queued in
// its RX ring (`ring`, or nullptr when never consumed).  The caller then
// drops the slot's lock.
void release_shared_slot(SharedPortTable& table, const SharedPortLayout& layout, int slot,
                         int32_t pid, rte_ring* ring = nullptr);
// Frees every frame in a slot's RX ring; only its consumer may call it (its
// owner, or whoever set the slot to kSlotDraining).  Returns how many.
uint32_t drain_shared_ring(rte_ring* ring);
// Whether the process that made EAL runtime file `path` (named for `pid`)
// still runs: `pid` of our pid namespace runs and started no later than
// the file was written.  For app/switch; who holds a slot is its lock's
// business.
// A process killed without EAL's cleanup leaves its files, and its pid may
// since belong to another process (soon after a pid namespace restarts,
// as fabtests' gate runs each release in one of its own).
bool file_owner_alive(int32_t pid, const char* path);

}  // namespace ofi_dpdk::net
