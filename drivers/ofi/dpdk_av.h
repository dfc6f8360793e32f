// dpdk_av.h: the address vector (dpdk_av.cc).
#pragma once

#include <rdma/fabric.h>
#include <rdma/fi_domain.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "drivers/ofi/dpdk_limits.h"
#include "lib/av/address.h"
#include "lib/av/auth_key_table.h"
#include "lib/av/av_table.h"
#include "lib/av/shared_table.h"

namespace ofi_dpdk::ofi {

struct Domain;
struct PortContext;
struct Endpoint;
struct Eq;

// fi_av (dpdk_av.cc).  The table and every field below are guarded by the
// port lock, which the send path holds too.
struct Av {
  fid_av fid;
  Domain* domain;
  fi_av_attr attr;
  int addr_format;         // the domain's: native, FI_ADDR_STR or FI_SOCKADDR(_IN)
  av::AddressTable table;  // fi_addr -> 16-byte entry; (MAC, queue) -> fi_addr
  // A named AV: the node's table, which `table` mirrors (refresh()).
  std::unique_ptr<av::SharedTable> shared;
  std::string name;  // fi_av_attr::name, for logs
  // fi_rx_addr puts a receive context in the top rx_ctx_bits of an fi_addr:
  // the index is what this mask keeps.
  uint64_t index_mask = ~uint64_t{0};
  bool user_ids = false;  // opened with FI_AV_USER_ID: ids come from fi_av_set_user_id
  // fi_av_insert_auth_key (FI_AV_AUTH_KEY domains); process-local.
  av::AuthKeyTable auth_key_table;
  Eq* eq = nullptr;                  // fi_av_bind; FI_EVENT reports here
  std::vector<Endpoint*> endpoints;  // bound: fi_av_remove drops their peers
  // When each index went in (now_ns; 0: not known, as for one another
  // process of a named AV inserted): fi_av_remove leaves alone a
  // connection that a newer incarnation of the peer took over since.
  std::vector<uint64_t> inserted_ns;
  std::atomic<int> refs{0};

  // Named AVs: takes in what other processes changed, when the shared
  // generation moved (one load when it did not).
  void refresh() {
    if (shared != nullptr && shared->stale()) shared->sync(table);
  }
  // The address fi_addr names for a transfer: receive context i of an
  // entry (fi_rx_addr) is its queue + i, which scalable endpoints give
  // their receive contexts (dpdk_sep.cc).  nullptr when the index is unused
  // or the queue lies beyond the ids a port gives endpoints.  Valid until
  // the next call (port lock).  *found, when given: the entry (its
  // unresolved flag, its index's network key), so a transfer looks once.
  const av::Address* resolve(fi_addr_t fi_addr, const av::Entry** found = nullptr) {
    refresh();
    const av::Entry* entry = table.find(fi_addr & index_mask);
    if (entry == nullptr) return nullptr;
    if (found != nullptr) *found = entry;
    const uint64_t context = attr.rx_ctx_bits > 0 ? fi_addr >> (64 - attr.rx_ctx_bits) : 0;
    if (context == 0) return &entry->address;
    if (entry->address.queue + context >= kMaxEndpointsPerPort) return nullptr;
    context_address = entry->address;
    context_address.queue = static_cast<uint16_t>(context_address.queue + context);
    return &context_address;
  }
  av::Address context_address;  // resolve()'s answer for receive context > 0
  // An entry inserted before its neighbour answered ARP (av::Entry::
  // unresolved): completed with its MAC when the port has learned it since,
  // else asked for again; false while unknown.  Port lock held.
  bool complete(uint64_t index, PortContext& port);
  // FI_SOURCE: the sender's fi_addr (its FI_AV_USER_ID if it has one), or
  // FI_ADDR_NOTAVAIL for an unknown sender (key: proto::peer_key).
  fi_addr_t lookup_source(uint64_t key);
  // Whether a sender (proto::peer_key) is in the AV, whatever its user id.
  bool knows_sender(uint64_t key) {
    refresh();
    return table.find_endpoint(key) != av::AddressTable::kNone;
  }

  // Authorization keys (dpdk_av.cc), for the endpoints.  A key is a nonzero
  // network key (av::kAuthKeySize bytes); a handle is what
  // fi_av_insert_auth_key returned (av::kAuthKeyHandleBase and up).
  // The key `addr` (an fi_addr resolve() takes; receive-context bits are
  // ignored) was inserted with; 0 when none or unknown.
  uint32_t network_key_of(fi_addr_t addr);
  bool auth_key_handle_valid(fi_addr_t handle);
  // 0 when handle names no key.
  uint32_t network_key_of_handle(fi_addr_t handle);
  // (handle, key) of every key in the table now, lowest handle first.
  // Throws std::bad_alloc.
  std::vector<std::pair<fi_addr_t, uint32_t>> auth_keys();
  // FI_ADDR_NOTAVAIL when key is not in the table.
  fi_addr_t auth_key_handle_of(uint32_t key);
  // Endpoint enable (+1) and close (-1) for each key it enabled with: while
  // any endpoint uses a key, fi_av_remove(FI_AUTH_KEY) of it is -FI_EBUSY.
  void auth_key_use(fi_addr_t handle, int delta);
  // FI_SOURCE_ERR's src_addr for a frame carrying `key`: the key's handle,
  // or its user id in an AV opened with FI_AV_USER_ID (FI_ADDR_NOTAVAIL
  // until fi_av_set_user_id); FI_ADDR_NOTAVAIL for a key not in the table.
  fi_addr_t lookup_source_key(uint32_t key);
};

// fi_av_insert, fi_av_insertsvc, fi_av_insertsym (dpdk_av_insert.cc).
int av_insert(fid_av* av_fid, const void* addr, size_t count, fi_addr_t* fi_addr, uint64_t flags,
              void* context);
int av_insertsvc(fid_av* av_fid, const char* node, const char* service, fi_addr_t* fi_addr,
                 uint64_t flags, void* context);
int av_insertsym(fid_av* av_fid, const char* node, size_t nodecnt, const char* service,
                 size_t svccnt, fi_addr_t* fi_addr, uint64_t flags, void* context);

}  // namespace ofi_dpdk::ofi
