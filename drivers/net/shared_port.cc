#include "drivers/net/shared_port.h"

#include <rte_memzone.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>

namespace ofi_dpdk::net {

std::string shared_table_name(std::string_view port_name) {
  return "fisw_table_" + std::string(port_name);
}

SharedPortTable* find_shared_table(std::string_view port_name) {
  const rte_memzone* zone = rte_memzone_lookup(shared_table_name(port_name).c_str());
  if (zone == nullptr || zone->len < sizeof(SharedPortTable)) return nullptr;
  auto* table = static_cast<SharedPortTable*>(zone->addr);
  if (table->magic != kSharedTableMagic || table->version != kSharedTableVersion) return nullptr;
  return table;
}

bool pid_alive(int32_t pid) { return pid > 0 && (kill(pid, 0) == 0 || errno == EPERM); }

int claim_shared_slot(SharedPortTable& table, int32_t pid) {
  // Free slots first: a dead owner's slot may still hold its frames.
  for (uint16_t slot = 0; slot < table.slots; ++slot) {
    int32_t expected = 0;
    if (table.owner[slot].compare_exchange_strong(expected, pid)) return slot;
  }
  for (uint16_t slot = 0; slot < table.slots; ++slot) {
    int32_t holder = table.owner[slot].load();
    if (holder != pid && !pid_alive(holder) &&
        table.owner[slot].compare_exchange_strong(holder, pid))
      return slot;
  }
  return -1;
}

void release_shared_slot(SharedPortTable& table, int slot, int32_t pid) {
  if (slot < 0 || slot >= table.slots) return;
  int32_t expected = pid;
  table.owner[slot].compare_exchange_strong(expected, 0);
}

}  // namespace ofi_dpdk::net
