// dpdk_av.cc: fi_av(3), but for the insert calls (dpdk_av_insert.cc).
// FI_AV_TABLE (FI_AV_MAP behaves the same: fi_addr values are indices
// either way).  The table itself is lib/av/av_table.h:
// index i is fi_addr i, an address goes in at the lowest unused index, and
// a reverse index from (MAC, queue) gives the sender's fi_addr for
// FI_SOURCE in O(1).  doc/address-vector.md describes every call.
// Authorization keys (2.x, FI_AV_AUTH_KEY domains) are lib/av/auth_key_table.h;
// an address carries the network key it was inserted with.
//
// Every call takes the port lock: the send path reads the table under it,
// and fi_av_remove reaches into the bound endpoints' transport engines.
#include "drivers/ofi/dpdk_av.h"

#include <algorithm>
#include <cerrno>
#include <cstddef>
#include <cstring>
#include <new>
#include <string>
#include <utility>

#include "drivers/ofi/dpdk_attr.h"
#include "drivers/ofi/dpdk_clock.h"
#include "drivers/ofi/dpdk_domain.h"
#include "drivers/ofi/dpdk_endpoint.h"
#include "drivers/ofi/dpdk_eq.h"
#include "drivers/ofi/dpdk_fid.h"
#include "drivers/ofi/dpdk_ipv6_peers.h"
#include "drivers/ofi/dpdk_limits.h"
#include "drivers/ofi/dpdk_log.h"
#include "drivers/ofi/dpdk_objects.h"
#include "drivers/ofi/dpdk_port.h"
#include "drivers/ofi/dpdk_raw_enum.h"
#include "ofi_dpdk_config.h"  // which libfabric features the headers have

namespace ofi_dpdk::ofi {

bool Av::complete(uint64_t index, PortContext& port) {
  const av::Entry* entry = table.find(index);
  if (entry == nullptr) return false;
  if (!entry->unresolved) return true;
  const uint64_t now = now_ns();
  uint8_t mac[6];
  if (port.framer->neighbours.find(entry->address.ipv4, now, mac))
    return table.set_resolved(index, mac);
  port.framer->ask_neighbour(entry->address.ipv4, now);
  return false;
}

fi_addr_t Av::lookup_source(uint64_t key) {
  refresh();
  const uint64_t index = table.find_endpoint(key);
  return index == av::AddressTable::kNone ? FI_ADDR_NOTAVAIL : table.source_id(index);
}

uint32_t Av::network_key_of(fi_addr_t addr) {
  refresh();
  return table.network_key(addr & index_mask);  // every receive context: the entry's key
}

bool Av::auth_key_handle_valid(fi_addr_t handle) {
  return auth_key_table.valid(handle);
}

uint32_t Av::network_key_of_handle(fi_addr_t handle) {
  return auth_key_table.key(handle);
}

std::vector<std::pair<fi_addr_t, uint32_t>> Av::auth_keys() {
  return auth_key_table.entries();
}

fi_addr_t Av::auth_key_handle_of(uint32_t key) {
  const uint64_t handle = auth_key_table.handle_of(key);
  return handle == av::AuthKeyTable::kNone ? FI_ADDR_NOTAVAIL : handle;
}

void Av::auth_key_use(fi_addr_t handle, int delta) {
  auth_key_table.use(handle, delta);
}

fi_addr_t Av::lookup_source_key(uint32_t key) {
  const uint64_t handle = auth_key_table.handle_of(key);
  if (handle == av::AuthKeyTable::kNone) return FI_ADDR_NOTAVAIL;
  // fi_av(3): with FI_AV_USER_ID, FI_ADDR_NOTAVAIL until the user id is set.
  return user_ids ? auth_key_table.user_id(handle) : handle;
}

namespace {

// kAuthKeyFlag (dpdk_limits.h) is 0 in 1.x: there no call names a key.
#if OFI_DPDK_HAVE_AV_USER_ID
// 2.x: ids come from fi_av_set_user_id (fi_av(3)).
constexpr uint64_t kOpenFlags = FI_EVENT | FI_READ | FI_SYMMETRIC | FI_AV_USER_ID;
#else
constexpr uint64_t kOpenFlags = FI_EVENT | FI_READ | FI_SYMMETRIC;
#endif
constexpr int kMaxRxCtxBits = 32;

// The IPv6 peer id an entry holds a named use of, given back as the entry
// goes.  Lock held.
void forget_ipv6_peer(const av::Entry& entry) {
  if (ip::is_ipv6_peer_id(entry.address.mac))
    release_ipv6_peer(entry.address.mac, ip::Ipv6Peers::Use::kNamed);
}

#if OFI_DPDK_HAVE_AV_AUTH_KEY
// fi_av_remove(FI_AUTH_KEY): key handles, all or nothing: -FI_EINVAL when
// one names no key, -FI_EBUSY while an enabled endpoint uses one.
// Addresses inserted with a removed key keep it.
int remove_auth_keys(Av* av, const fi_addr_t* handles, size_t count) {
  if (!av->domain->av_auth_keys) {
    DPDK_INFO(FI_LOG_AV, "remove FI_AUTH_KEY: the domain has no FI_AV_AUTH_KEY\n");
    return -FI_EINVAL;
  }
  if (handles == nullptr && count != 0) return -FI_EINVAL;
  std::lock_guard guard(av->domain->port->lock);
  for (size_t i = 0; i < count; ++i) {
    if (!av->auth_key_table.valid(handles[i])) {
      DPDK_INFO(FI_LOG_AV, "remove FI_AUTH_KEY: %#lx is no key handle; nothing removed\n",
                static_cast<unsigned long>(handles[i]));
      return -FI_EINVAL;
    }
    if (av->auth_key_table.users(handles[i]) != 0) {
      DPDK_INFO(FI_LOG_AV, "remove FI_AUTH_KEY: key %#lx is used by %u enabled endpoints\n",
                static_cast<unsigned long>(handles[i]), av->auth_key_table.users(handles[i]));
      return -FI_EBUSY;
    }
  }
  for (size_t i = 0; i < count; ++i) av->auth_key_table.remove(handles[i]);  // twice: -ENOENT
  return 0;
}
#endif

// Removes all or nothing: any index not in use (or with receive-context
// bits) fails the call with -FI_EINVAL.  A peer no other entry names is
// dropped from every bound endpoint's transport, so its sends in flight
// end now with an error completion (FI_EIO) instead of at the peer timeout.
int av_remove(fid_av* av_fid, fi_addr_t* fi_addr, size_t count, uint64_t flags) {
  Av* av = from_fid<Av>(av_fid);
  if ((flags & FI_AV_USER_ID) && (av->user_ids || av->domain->av_auth_keys)) {
    DPDK_INFO(FI_LOG_AV,
              "remove flag FI_AV_USER_ID: not with an AV opened FI_AV_USER_ID or "
              "an FI_AV_AUTH_KEY domain\n");
    return -FI_EINVAL;
  }
#if OFI_DPDK_HAVE_AV_AUTH_KEY
  if (flags == FI_AUTH_KEY) return remove_auth_keys(av, fi_addr, count);
#endif
  if (flags != 0) return -FI_EBADFLAGS;
  if (fi_addr == nullptr && count != 0) return -FI_EINVAL;
  if (av->shared != nullptr && av->shared->read_only()) {
    DPDK_INFO(FI_LOG_AV, "AV \"%s\" was opened FI_READ: no removals\n", av->name.c_str());
    return -FI_EACCES;
  }
  std::lock_guard guard(av->domain->port->lock);
  av->refresh();
  for (size_t i = 0; i < count; ++i) {
    if ((fi_addr[i] & ~av->index_mask) || av->table.find(fi_addr[i]) == nullptr) {
      DPDK_INFO(FI_LOG_AV, "remove: fi_addr %#lx is not in the AV; nothing removed\n",
                static_cast<unsigned long>(fi_addr[i]));
      return -FI_EINVAL;
    }
  }
  // The node's table first, all at once: when its lock stays held nothing
  // is removed anywhere.  Indices another process removed first are skipped.
  if (av->shared != nullptr) {
    if (const int ret = av->shared->remove_all(fi_addr, count); ret != 0) {
      DPDK_WARN(FI_LOG_AV, "named AV \"%s\": remove: %s\n", av->name.c_str(),
                av->shared->problem().c_str());
      return ret == -EAGAIN ? -FI_EAGAIN : -FI_EIO;
    }
  }
  for (size_t i = 0; i < count; ++i) {
    const av::Entry* entry = av->table.find(fi_addr[i]);
    if (entry == nullptr) continue;  // named twice in this call
    const uint64_t key = av::endpoint_key(entry->address);
    const uint32_t session = entry->address.session;
    uint64_t inserted_ns = 0;
    if (fi_addr[i] < av->inserted_ns.size()) std::swap(inserted_ns, av->inserted_ns[fi_addr[i]]);
    forget_ipv6_peer(*entry);
    av->table.remove(fi_addr[i]);
    if (av->table.find_endpoint(key) != av::AddressTable::kNone) continue;
    for (Endpoint* ep : av->endpoints) {
      if (!ep->engine) continue;
      ep->engine->drop_peer(key, session, inserted_ns);
      if (ep->enabled) ep->flush();
    }
  }
  return 0;
}

// Copies `text` and its NUL into out, truncated to room (still
// NUL-terminated when room > 0).
void copy_string(const std::string& text, void* out, size_t room) {
  if (out == nullptr || room == 0) return;
  const size_t n = std::min(room - 1, text.size());
  std::memcpy(out, text.data(), n);
  static_cast<char*>(out)[n] = '\0';
}

// The receive-context bits of fi_rx_addr are ignored: the address is the
// endpoint's.  -FI_ENOENT for an unused index, -FI_ETOOSMALL (after
// writing what fits) when the buffer is short.
int av_lookup(fid_av* av_fid, fi_addr_t fi_addr, void* addr, size_t* addrlen) {
  Av* av = from_fid<Av>(av_fid);
  if (addrlen == nullptr) return -FI_EINVAL;
  std::lock_guard guard(av->domain->port->lock);
  av->refresh();
  const av::Entry* entry = av->table.find(fi_addr & av->index_mask);
  if (entry == nullptr) return -FI_ENOENT;
  av::Address address = entry->address;
  av->domain->port->name_by_ip(&address);
  return write_address(av->addr_format, address, addr, addrlen);
}

// NULL when buf or len is NULL or addr is not a dpdk address.
const char* av_straddr(fid_av* av_fid, const void* addr, char* buf, size_t* len) {
  Av* av = from_fid<Av>(av_fid);
  if (addr == nullptr || buf == nullptr || len == nullptr) return nullptr;
  const std::optional<av::Address> address =
      av->addr_format == FI_ADDR_STR
          ? decode_address(FI_ADDR_STR, addr, std::strlen(static_cast<const char*>(addr)) + 1)
          : decode_address(av->addr_format, addr, address_size(av->addr_format));
  if (!address) return nullptr;
  const std::string text = address_string(av->addr_format, *address);
  copy_string(text, buf, *len);
  *len = text.size() + 1;
  return buf;
}

// fi_av_bind: one EQ of the AV's fabric; flags must be 0.
int av_bind(fid* av_fid, fid* bfid, uint64_t flags) {
  Av* av = from_fid<Av>(av_fid);
  if (flags != 0) return -FI_EBADFLAGS;
  if (bfid == nullptr || bfid->fclass != FI_CLASS_EQ) return -FI_EINVAL;
  Eq* eq = from_fid<Eq>(bfid);
  if (eq->fabric != av->domain->fabric) return -FI_EINVAL;
  std::lock_guard guard(av->domain->port->lock);
  if (av->eq != nullptr) return -FI_EALREADY;
  av->eq = eq;
  eq->refs++;
  return 0;
}

#if OFI_DPDK_HAVE_AV_AUTH_KEY
// fi_av_insert_auth_key: our key is av::kAuthKeySize bytes, a nonzero
// uint32_t network key in host byte order.  *fi_addr gets its handle (the
// one it already has when the key is in).  -FI_EINVAL without an
// FI_AV_AUTH_KEY domain, for a NULL argument, another size or key 0;
// -FI_EBADFLAGS for any flag; -FI_ENOSPC beyond av::kMaxAuthKeys keys.
int av_insert_auth_key(fid_av* av_fid, const void* auth_key, size_t auth_key_size,
                       fi_addr_t* fi_addr, uint64_t flags) {
  Av* av = from_fid<Av>(av_fid);
  if (!av->domain->av_auth_keys) {
    DPDK_INFO(FI_LOG_AV,
              "fi_av_insert_auth_key: the domain's auth_key_size is not "
              "FI_AV_AUTH_KEY\n");
    return -FI_EINVAL;
  }
  if (flags != 0) return -FI_EBADFLAGS;
  if (auth_key == nullptr || fi_addr == nullptr) return -FI_EINVAL;
  if (auth_key_size != av::kAuthKeySize) {
    DPDK_INFO(FI_LOG_AV, "fi_av_insert_auth_key: a key is %zu bytes, not %zu\n", av::kAuthKeySize,
              auth_key_size);
    return -FI_EINVAL;
  }
  uint32_t key;
  std::memcpy(&key, auth_key, sizeof(key));
  if (key == av::kNoAuthKey) {
    DPDK_INFO(FI_LOG_AV, "fi_av_insert_auth_key: key 0 means \"no key\"\n");
    return -FI_EINVAL;
  }
  std::lock_guard guard(av->domain->port->lock);
  const int64_t handle = av->auth_key_table.insert(key);
  if (handle == -ENOSPC) {
    DPDK_INFO(FI_LOG_AV, "fi_av_insert_auth_key: the AV holds %zu keys already\n",
              av::kMaxAuthKeys);
    return -FI_ENOSPC;
  }
  if (handle < 0) return -FI_EINVAL;
  *fi_addr = static_cast<fi_addr_t>(handle);
  return 0;
}

// fi_av_lookup_auth_key: addr is a key handle, or an address (receive
// context bits ignored) inserted with FI_AUTH_KEY.  Writes what fits of
// the key and sets *auth_key_size to av::kAuthKeySize; -FI_ETOOSMALL when
// that truncated (as fi_av_lookup).  -FI_ENOKEY for an address inserted
// without a key; -FI_EINVAL for anything else.
int av_lookup_auth_key(fid_av* av_fid, fi_addr_t addr, void* auth_key, size_t* auth_key_size) {
  Av* av = from_fid<Av>(av_fid);
  if (!av->domain->av_auth_keys) return -FI_EINVAL;
  if (auth_key_size == nullptr || (auth_key == nullptr && *auth_key_size != 0)) return -FI_EINVAL;
  uint32_t key = av::kNoAuthKey;
  {
    std::lock_guard guard(av->domain->port->lock);
    av->refresh();
    if (av::AuthKeyTable::is_handle_range(addr)) {
      key = av->auth_key_table.key(addr);
      if (key == av::kNoAuthKey) return -FI_EINVAL;
    } else {
      const uint64_t index = addr & av->index_mask;
      if (av->table.find(index) == nullptr) return -FI_EINVAL;
      key = av->table.network_key(index);
      if (key == av::kNoAuthKey) return -FI_ENOKEY;
    }
  }
  const size_t room = *auth_key_size;
  if (room > 0) std::memcpy(auth_key, &key, std::min(room, sizeof(key)));
  *auth_key_size = sizeof(key);
  return room < sizeof(key) ? -FI_ETOOSMALL : 0;
}
#endif

#if OFI_DPDK_HAVE_AV_USER_ID
// fi_av_set_user_id, for AVs opened with FI_AV_USER_ID (-FI_EINVAL
// otherwise): the id FI_SOURCE reports for an address, or with
// FI_AUTH_KEY the id FI_SOURCE_ERR reports for a key handle.  -FI_EINVAL
// for an fi_addr that names nothing, -FI_EBADFLAGS for other flags.
int av_set_user_id(fid_av* av_fid, fi_addr_t fi_addr, fi_addr_t user_id, uint64_t flags) {
  Av* av = from_fid<Av>(av_fid);
  if (!av->user_ids) {
    DPDK_INFO(FI_LOG_AV, "fi_av_set_user_id: the AV was not opened with FI_AV_USER_ID\n");
    return -FI_EINVAL;
  }
  if (flags & ~kAuthKeyFlag) return -FI_EBADFLAGS;
  std::lock_guard guard(av->domain->port->lock);
  if (flags & kAuthKeyFlag)
    return av->auth_key_table.set_user_id(fi_addr, user_id) ? 0 : -FI_EINVAL;
  av->refresh();
  if ((fi_addr & ~av->index_mask) || av->table.find(fi_addr) == nullptr) {
    DPDK_INFO(FI_LOG_AV, "fi_av_set_user_id: fi_addr %#lx is not in the AV\n",
              static_cast<unsigned long>(fi_addr));
    return -FI_EINVAL;
  }
  return av->table.set_user_id(fi_addr, user_id) ? 0 : -FI_ENOMEM;
}
#endif

int av_close(fid* fid) {
  Av* av = from_fid<Av>(fid);
  if (av->refs.load() != 0) {
    DPDK_INFO(FI_LOG_AV, "AV close: %d endpoints still bound\n", av->refs.load());
    return -FI_EBUSY;
  }
  // A named AV's last closer removes the object: when that fails it stays
  // in /dev/shm (and the next opener of the name finds it), so say so.  The
  // AV is closed either way.
  int ret = 0;
  if (av->shared != nullptr) {
    std::string why;
    if (const int unlinked = av->shared->close(&why); unlinked != 0) {
      DPDK_WARN(FI_LOG_AV, "named AV \"%s\" closed, but its object was not removed: %s\n",
                av->name.c_str(), why.c_str());
      ret = unlinked == -EACCES || unlinked == -EPERM ? unlinked : -FI_EIO;
    }
  }
  {
    std::lock_guard guard(av->domain->port->lock);
    for (uint64_t index = 0; index < av->table.high_water(); ++index)
      if (const av::Entry* entry = av->table.find(index)) forget_ipv6_peer(*entry);
  }
  if (av->eq != nullptr) av->eq->refs--;
  av->domain->refs--;
  delete av;
  return ret;
}

fi_ops g_av_fid_ops = {
    .size = sizeof(fi_ops),
    .close = av_close,
    .bind = av_bind,
    .control = DPDK_ENOSYS(fi_ops, control),
    .ops_open = DPDK_ENOSYS(fi_ops, ops_open),
    .tostr = DPDK_ENOSYS(fi_ops, tostr),
    .ops_set = DPDK_ENOSYS(fi_ops, ops_set),
};

fi_ops_av g_av_ops = {
    .size = sizeof(fi_ops_av),
    .insert = av_insert,
    .insertsvc = av_insertsvc,
    .insertsym = av_insertsym,
    .remove = av_remove,
    .lookup = av_lookup,
    .straddr = av_straddr,
    .av_set = DPDK_ENOSYS(fi_ops_av, av_set),
#if OFI_DPDK_HAVE_AV_AUTH_KEY  // libfabric 2.x
    .insert_auth_key = av_insert_auth_key,
    .lookup_auth_key = av_lookup_auth_key,
#endif
#if OFI_DPDK_HAVE_AV_USER_ID  // libfabric 2.x
    .set_user_id = av_set_user_id,
#endif
};

// fi_av_attr::name: the table of the processes of this node that use the
// name (lib/av/shared_table.h), created unless FI_READ.  The errno values of
// SharedTable::open are the fabric errno values of the same name.
int open_shared(Av* av, fi_av_attr* attr) {
  av::SharedTable::Options options;
  options.capacity = attr->count;
  options.read_only = (attr->flags & FI_READ) != 0;
  options.map_addr = reinterpret_cast<uintptr_t>(attr->map_addr);
  std::string why;
  int ret;
  try {
    av->name = attr->name;
    ret = av::SharedTable::open(av->name, options, &av->shared, &why);
  } catch (const std::bad_alloc&) {
    return -FI_ENOMEM;
  }
  if (ret == -EACCES) {
    DPDK_WARN(FI_LOG_AV, "named AV \"%s\"%s refused: %s\n", attr->name,
              options.read_only ? " (FI_READ)" : "", why.c_str());
    return ret;
  }
  if (ret != 0) {
    DPDK_INFO(FI_LOG_AV, "named AV \"%s\"%s: %s\n", attr->name,
              options.read_only ? " (FI_READ)" : "", why.c_str());
    return ret;
  }
  // fi_av(3): with a name and map_addr 0, the map_addr used is returned:
  // where this process maps the table's fi_addr array, which programs read
  // as one (element i is the fi_addr of index i while it is in use; fabtests'
  // fi_rdm_shared_av sends to element 0).  fi_addr values are indices, the
  // same whatever map_addr each process gives.
  if (attr->map_addr == nullptr) attr->map_addr = const_cast<void*>(av->shared->fi_addr_array());
  DPDK_INFO(FI_LOG_AV, "named AV \"%s\": %s %s, %u entries\n", attr->name,
            av->shared->created() ? "created" : "opened", av->shared->object_name().c_str(),
            av->shared->capacity());
  return 0;
}

}  // namespace

int av_open(fid_domain* domain_fid, fi_av_attr* attr, fid_av** out, void* context) {
  if (attr == nullptr || out == nullptr) return -FI_EINVAL;
  Domain* domain = from_fid<Domain>(domain_fid);
  if (const auto type = raw_value(attr->type);
      type != FI_AV_UNSPEC && type != FI_AV_TABLE && type != FI_AV_MAP) {
    DPDK_INFO(FI_LOG_AV, "AV type %d unknown\n", static_cast<int>(type));
    return -FI_EINVAL;
  }
  if (attr->flags & ~kOpenFlags) {
    DPDK_INFO(FI_LOG_AV, "AV flags %#lx not supported\n", attr->flags & ~kOpenFlags);
    return -FI_EINVAL;
  }
  if (attr->rx_ctx_bits < 0 || attr->rx_ctx_bits > kMaxRxCtxBits) {
    DPDK_INFO(FI_LOG_AV, "rx_ctx_bits %d: 0 to %d\n", attr->rx_ctx_bits, kMaxRxCtxBits);
    return -FI_EINVAL;
  }
  if ((attr->flags & FI_READ) && attr->name == nullptr) {
    DPDK_INFO(FI_LOG_AV, "FI_READ opens a named AV: name is NULL\n");
    return -FI_EINVAL;
  }
  // fi_domain(3): without the domain capability FI_AV_USER_ID, "address
  // vectors cannot be opened with FI_AV_USER_ID".
  if ((attr->flags & kOpenFlags & FI_AV_USER_ID) &&
      !(domain->info->domain_attr->caps & FI_AV_USER_ID)) {
    DPDK_INFO(FI_LOG_AV, "AV flag FI_AV_USER_ID: the domain lacks the FI_AV_USER_ID cap\n");
    return -FI_EINVAL;
  }
  auto* av = new (std::nothrow) Av();
  if (av == nullptr) return -FI_ENOMEM;
  if (attr->name != nullptr) {
    if (const int ret = open_shared(av, attr); ret != 0) {
      delete av;
      return ret;
    }
  }
  if (attr->type == FI_AV_UNSPEC) attr->type = FI_AV_TABLE;
  av->attr = *attr;
  av->attr.name = nullptr;
  av->domain = domain;
  av->user_ids = (attr->flags & kOpenFlags & FI_AV_USER_ID) != 0;
  av->addr_format = av->domain->info->addr_format;
  if (!address_format_supported(av->addr_format)) av->addr_format = FI_FORMAT_UNSPEC;
  if (attr->rx_ctx_bits > 0) {
    av->index_mask = ~uint64_t{0} >> attr->rx_ctx_bits;
    av->table.set_limit(av->index_mask);
  }
  if (av->shared != nullptr)
    av->table.set_limit(std::min<uint64_t>(av->table.limit(), av->shared->capacity()));
  // Key handles are values no address index reaches (fi_av_lookup_auth_key
  // takes either).
  if (domain->av_auth_keys)
    av->table.set_limit(std::min<uint64_t>(av->table.limit(), av::kAuthKeyHandleBase));
  av->table.reserve(attr->count);
  av->domain->refs++;
  av->fid.fid.fclass = FI_CLASS_AV;
  av->fid.fid.context = context;
  av->fid.fid.ops = &g_av_fid_ops;
  av->fid.ops = &g_av_ops;
  *out = &av->fid;
  return 0;
}

}  // namespace ofi_dpdk::ofi
