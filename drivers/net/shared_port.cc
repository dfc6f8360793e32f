#include "drivers/net/shared_port.h"

#include <rte_mbuf.h>
#include <rte_memzone.h>
#include <rte_ring.h>
#include <signal.h>
#include <unistd.h>

#include <endian.h>

#include <cerrno>
#include <cstddef>
#include <cstring>

#include "drivers/net/mbuf_handoff.h"
#include "lib/proto/wire.h"

namespace ofi_dpdk::net {

std::string shared_table_name(std::string_view port_name) {
  return "fisw_table_" + std::string(port_name);
}

std::string shared_ring_name(std::string_view name, const char* direction, uint16_t slot) {
  return "fisw_" + std::string(name) + "_" + direction + std::to_string(slot);
}

SharedPortTable* find_shared_table(std::string_view port_name) {
  const rte_memzone* zone = rte_memzone_lookup(shared_table_name(port_name).c_str());
  if (zone == nullptr || zone->len < sizeof(SharedPortTable)) return nullptr;
  auto* table = static_cast<SharedPortTable*>(zone->addr);
  if (table->magic != kSharedTableMagic || table->version != kSharedTableVersion) return nullptr;
  return table;
}

int shared_destination(const SharedPortTable& table, const uint8_t* frame, uint32_t length) {
  constexpr size_t kDstQueueAt =
      sizeof(wire::EtherHeader) + offsetof(wire::FrameHeader, dst_queue);
  uint16_t ether_type_be;
  uint16_t dst_queue_be;
  if (length < kDstQueueAt + sizeof(dst_queue_be)) return kSharedNotOurs;
  std::memcpy(&ether_type_be, frame + offsetof(wire::EtherHeader, ether_type), 2);
  std::memcpy(&dst_queue_be, frame + kDstQueueAt, 2);
  if (std::memcmp(frame, table.mac, 6) != 0 || be16toh(ether_type_be) != table.ether_type)
    return kSharedNotOurs;
  const int slot = slot_of_queue(table, be16toh(dst_queue_be));
  // (A slot being emptied after its owner died, kSlotDraining, takes
  // nothing either.)
  if (slot < 0 || table.owner[slot].load(std::memory_order_relaxed) <= 0) return kSharedNoOwner;
  return slot;
}

bool pid_alive(int32_t pid) { return pid > 0 && (kill(pid, 0) == 0 || errno == EPERM); }

std::string shared_pool_name(uint16_t port_id, uint16_t slot) {
  return "fisw_p" + std::to_string(port_id) + "_" + std::to_string(slot);
}

int claim_shared_slot(SharedPortTable& table, int32_t pid) {
  for (int attempt = 0; attempt < 1000; ++attempt) {
    // Free slots first: a dead owner's slot may still hold its frames.
    for (uint16_t slot = 0; slot < table.slots; ++slot) {
      int32_t expected = 0;
      if (table.owner[slot].compare_exchange_strong(expected, pid)) return slot;
    }
    bool draining = false;
    for (uint16_t slot = 0; slot < table.slots; ++slot) {
      int32_t holder = table.owner[slot].load();
      draining |= holder == kSlotDraining;
      if (holder > 0 && holder != pid && !pid_alive(holder) &&
          table.owner[slot].compare_exchange_strong(holder, pid))
        return slot;
    }
    // A slot the switch is emptying is free in a moment.
    if (!draining) break;
    usleep(1000);
  }
  return -1;
}

uint32_t drain_shared_ring(rte_ring* ring) {
  uint32_t drained = 0;
  void* frames[32];
  unsigned got;
  while ((got = rte_ring_sc_dequeue_burst(ring, frames, 32, nullptr)) > 0) {
    for (unsigned i = 0; i < got; ++i) free_frame(static_cast<rte_mbuf*>(frames[i]));
    drained += got;
  }
  return drained;
}

void release_shared_slot(SharedPortTable& table, int slot, int32_t pid, rte_ring* ring) {
  if (slot < 0 || slot >= table.slots) return;
  // Only the holder gives a slot back and empties its ring, while no frame
  // may enter it: a process forked from the holder closing what it
  // inherited must not consume the holder's ring beside it.
  int32_t expected = pid;
  if (!table.owner[slot].compare_exchange_strong(expected, kSlotDraining)) return;
  if (ring != nullptr) drain_shared_ring(ring);
  table.owner[slot].store(0);
}

}  // namespace ofi_dpdk::net
