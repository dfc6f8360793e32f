#include "drivers/net/shared_switch.h"

#include <rte_errno.h>
#include <rte_eth_ring.h>
#include <rte_ethdev.h>
#include <rte_mbuf.h>
#include <rte_memzone.h>
#include <rte_ring.h>

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstddef>
#include <cstdio>
#include <cstring>
#include <memory>

#include "drivers/net/mbuf_handoff.h"
#include "lib/proto/wire.h"

namespace ofi_dpdk::net {
namespace {

constexpr uint32_t kBurst = 32;

}  // namespace

SharedSwitch* SharedSwitch::create(const Config& config, std::string* error) {
  if (rte_eal_process_type() != RTE_PROC_PRIMARY) {
    *error = "the switch must be DPDK's primary process (--proc-type=primary)";
    return nullptr;
  }
  if (config.slots == 0 || config.slots > kMaxSharedProcesses ||
      kSharedEndpointQueues / config.slots == 0) {
    *error = "--processes must be 1 to " + std::to_string(kMaxSharedProcesses);
    return nullptr;
  }
  std::unique_ptr<SharedSwitch> sw(new SharedSwitch());
  sw->config_ = config;
  for (uint16_t slot = 0; slot < config.slots; ++slot) {
    // A slot's RX ring has one consumer, its process, and many producers:
    // every process sends straight into it (shared_port.h).  A TX ring is
    // one process's and the switch's.
    sw->rx_[slot] = rte_ring_create(shared_ring_name(config.name, "rx", slot).c_str(),
                                    config.ring_size, SOCKET_ID_ANY, RING_F_SC_DEQ);
    sw->tx_[slot] = rte_ring_create(shared_ring_name(config.name, "tx", slot).c_str(),
                                    config.ring_size, SOCKET_ID_ANY, RING_F_SP_ENQ | RING_F_SC_DEQ);
    if (sw->rx_[slot] == nullptr || sw->tx_[slot] == nullptr) {
      *error = "cannot create the rings of slot " + std::to_string(slot) + ": " +
               rte_strerror(rte_errno);
      return nullptr;
    }
  }
  const int port = rte_eth_from_rings(config.name.c_str(), sw->rx_, config.slots, sw->tx_,
                                      config.slots, static_cast<unsigned>(rte_socket_id()));
  if (port < 0) {
    *error = "rte_eth_from_rings(" + config.name + "): " + rte_strerror(rte_errno);
    return nullptr;
  }
  sw->port_id_ = static_cast<uint16_t>(port);
  char name[RTE_ETH_NAME_MAX_LEN] = {};
  rte_eth_dev_get_name_by_port(sw->port_id_, name);
  sw->port_name_ = name;
  // net_ring hands over the senders' mbufs and allocates none, but ethdev
  // wants a pool for each RX queue.
  sw->pool_ = rte_pktmbuf_pool_create(("fiswpool_" + config.name).c_str(), 63, 0, 0,
                                      RTE_MBUF_DEFAULT_BUF_SIZE, SOCKET_ID_ANY);
  if (sw->pool_ == nullptr) {
    *error = "cannot create the switch's pool: " + std::string(rte_strerror(rte_errno));
    return nullptr;
  }
  // The device is configured and started once, here: secondaries may not.
  rte_eth_conf conf{};
  int ret = rte_eth_dev_configure(sw->port_id_, config.slots, config.slots, &conf);
  for (uint16_t q = 0; ret == 0 && q < config.slots; ++q) {
    ret = rte_eth_rx_queue_setup(sw->port_id_, q, 512, SOCKET_ID_ANY, nullptr, sw->pool_);
    if (ret == 0) ret = rte_eth_tx_queue_setup(sw->port_id_, q, 512, SOCKET_ID_ANY, nullptr);
  }
  if (ret == 0) ret = rte_eth_dev_start(sw->port_id_);
  if (ret != 0) {
    *error = sw->port_name_ + ": set-up: " + rte_strerror(-ret);
    return nullptr;
  }
  const uint32_t room = RTE_PKTMBUF_HEADROOM + sizeof(wire::EtherHeader) + uint32_t{config.mtu};
  for (uint16_t slot = 0; slot < config.slots; ++slot) {
    const std::string name = shared_pool_name(sw->port_id_, slot);
    if (rte_pktmbuf_pool_create(name.c_str(), config.mbufs_per_slot, 0, 0,
                                static_cast<uint16_t>(std::min<uint32_t>(room, UINT16_MAX)),
                                SOCKET_ID_ANY) == nullptr) {
      *error = "cannot create the pool of slot " + std::to_string(slot) + " (" +
               std::to_string(config.mbufs_per_slot) + " mbufs of " + std::to_string(room) +
               " bytes): " + rte_strerror(rte_errno);
      return nullptr;
    }
  }
  // (Never freed: processes still attached when we stop keep reading it.)
  const rte_memzone* zone = rte_memzone_reserve(shared_table_name(sw->port_name_).c_str(),
                                                sizeof(SharedPortTable), SOCKET_ID_ANY, 0);
  if (zone == nullptr) {
    *error = "cannot reserve the table " + shared_table_name(sw->port_name_) + ": " +
             rte_strerror(rte_errno);
    return nullptr;
  }
  auto* table = new (zone->addr) SharedPortTable();
  std::snprintf(table->name, sizeof(table->name), "%s", config.name.c_str());
  table->slots = config.slots;
  table->queues_per_slot = static_cast<uint16_t>(kSharedEndpointQueues / config.slots);
  table->ether_type = config.ether_type;
  rte_ether_addr mac;
  rte_eth_macaddr_get(sw->port_id_, &mac);
  std::memcpy(table->mac, mac.addr_bytes, 6);
  table->switch_pid = getpid();
  for (auto& owner : table->owner) owner.store(0);
  table->version = kSharedTableVersion;
  std::string why;
  if (read_shared_layout(*table, &sw->layout_, &why) != 0) {
    table->magic = 0;
    *error = "the table we wrote does not check: " + why;
    return nullptr;
  }
  sw->table_ = table;
  sw->share_ = ring_share(config.mbufs_per_slot);
  for (uint16_t slot = 0; slot < config.slots; ++slot) {
    const std::string path = shared_slot_lock_path(sw->layout_, slot);
    sw->lock_fds_[slot] = open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    if (sw->lock_fds_[slot] < 0) {
      table->magic = 0;
      *error = "cannot create the slot lock " + path + ": " + std::strerror(errno);
      return nullptr;
    }
  }
  // Last: a process that finds the magic finds the rest in place.
  std::atomic_thread_fence(std::memory_order_release);
  table->magic = kSharedTableMagic;
  return sw.release();
}

SharedSwitch::~SharedSwitch() {
  // The table stays: processes still attached read it on every send and
  // write it when they close; with the magic gone no new one takes a slot.
  if (table_ != nullptr) table_->magic = 0;
  // Their locks stay held through their descriptors; newcomers, refused
  // anyway, find no file.
  for (uint16_t slot = 0; slot < kMaxSharedProcesses; ++slot) {
    if (lock_fds_[slot] < 0) continue;
    unlink(shared_slot_lock_path(layout_, slot).c_str());
    close(lock_fds_[slot]);
  }
}

bool SharedSwitch::take_slot_lock(uint16_t slot, bool keep) const {
  if (flock(lock_fds_[slot], LOCK_EX | LOCK_NB) != 0) return false;
  if (!keep) flock(lock_fds_[slot], LOCK_UN);
  return true;
}

uint32_t SharedSwitch::reap_dead_owners() {
  uint32_t reaped = 0;
  for (uint16_t slot = 0; slot < layout_.slots; ++slot) {
    int32_t holder = table_->owner[slot].load();
    // (A holder that died giving the slot back leaves it draining.)
    if (holder == 0 || !take_slot_lock(slot, true)) continue;
    if (table_->owner[slot].compare_exchange_strong(holder, kSlotDraining)) {
      // While it drains, the slot takes no frames, and claimers wait.
      table_->dropped_no_owner.fetch_add(drain_shared_ring(rx_[slot]), std::memory_order_relaxed);
      mark_slot_released(*table_, slot);
      table_->owner[slot].store(0);
      ++reaped;
    }
    flock(lock_fds_[slot], LOCK_UN);
  }
  return reaped;
}

bool SharedSwitch::in_use() const {
  for (uint16_t slot = 0; slot < layout_.slots; ++slot)
    if (table_->owner[slot].load(std::memory_order_relaxed) != 0 && !take_slot_lock(slot, false))
      return true;
  return false;
}

// Where one frame goes: the RX ring of the slot owning its dst_queue.
void SharedSwitch::route(rte_mbuf* frame, uint32_t* counts, rte_mbuf*** outs) {
  const int slot = shared_destination(layout_, *table_, rte_pktmbuf_mtod(frame, const uint8_t*),
                                      rte_pktmbuf_data_len(frame));
  if (slot >= 0) {
    outs[slot][counts[slot]++] = frame;
    return;
  }
  (slot == kSharedNotOurs ? table_->dropped_foreign : table_->dropped_no_owner)
      .fetch_add(1, std::memory_order_relaxed);
  free_frame(frame);
}

uint32_t SharedSwitch::forward() {
  rte_mbuf* taken[kBurst];
  rte_mbuf* by_slot[kMaxSharedProcesses][kBurst];
  rte_mbuf** outs[kMaxSharedProcesses];
  for (uint16_t slot = 0; slot < layout_.slots; ++slot) outs[slot] = by_slot[slot];
  uint32_t moved = 0;
  for (uint16_t from = 0; from < layout_.slots; ++from) {
    const unsigned got =
        rte_ring_sc_dequeue_burst(tx_[from], reinterpret_cast<void**>(taken), kBurst, nullptr);
    if (got == 0) continue;
    handoff_acquire(taken, got);
    moved += got;
    uint32_t counts[kMaxSharedProcesses] = {};
    for (unsigned i = 0; i < got; ++i) route(taken[i], counts, outs);
    for (uint16_t to = 0; to < layout_.slots; ++to) {
      if (counts[to] == 0) continue;
      handoff_release(by_slot[to], counts[to]);
      // A slot takes no more than its share of a pool (shared_port.h).
      const uint32_t queued = rte_ring_count(rx_[to]);
      const uint32_t offered = std::min(counts[to], queued < share_ ? share_ - queued : 0);
      const unsigned put =
          offered == 0 ? 0
                       : rte_ring_mp_enqueue_burst(rx_[to], reinterpret_cast<void**>(by_slot[to]),
                                                   offered, nullptr);
      table_->forwarded.fetch_add(put, std::memory_order_relaxed);
      // A full ring is a full NIC queue: the frame is lost, and the
      // transport's retransmission deals with it.
      for (unsigned i = put; i < counts[to]; ++i) {
        (i < offered ? table_->dropped_full : table_->dropped_share)
            .fetch_add(1, std::memory_order_relaxed);
        free_frame(by_slot[to][i]);
      }
    }
  }
  return moved;
}

}  // namespace ofi_dpdk::net
