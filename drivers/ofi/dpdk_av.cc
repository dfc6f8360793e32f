// dpdk_av.cc: fi_av(3).  FI_AV_TABLE (FI_AV_MAP behaves the same: fi_addr
// values are indices either way).  The table itself is lib/av/av_table.h:
// index i is fi_addr i, an address goes in at the lowest unused index, and
// a reverse index from (MAC, queue) gives the sender's fi_addr for
// FI_SOURCE in O(1).  doc/address-vector.md describes every call.
// Authorization keys (2.x, FI_AV_AUTH_KEY domains) are lib/av/auth_key_table.h;
// an address carries the network key it was inserted with.
//
// Every call takes the port lock: the send path reads the table under it,
// and fi_av_remove reaches into the bound endpoints' transport engines.
#include "drivers/ofi/dpdk_av.h"

#include <arpa/inet.h>
#include <netinet/in.h>

#include <algorithm>
#include <cerrno>
#include <cstddef>
#include <cstring>
#include <limits>
#include <new>
#include <string>

#include "drivers/ofi/dpdk_attr.h"
#include "drivers/ofi/dpdk_common.h"
#include "drivers/ofi/dpdk_domain.h"
#include "drivers/ofi/dpdk_endpoint.h"
#include "drivers/ofi/dpdk_eq.h"
#include "drivers/ofi/dpdk_ipv6_peers.h"
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
  if (port.neighbours.find(entry->address.ipv4, now, mac)) return table.set_resolved(index, mac);
  port.ask_neighbour(entry->address.ipv4, now);
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

bool Av::auth_key_handle_valid(fi_addr_t handle) { return auth_key_table.valid(handle); }

uint32_t Av::network_key_of_handle(fi_addr_t handle) { return auth_key_table.key(handle); }

std::vector<std::pair<fi_addr_t, uint32_t>> Av::auth_keys() { return auth_key_table.entries(); }

fi_addr_t Av::auth_key_handle_of(uint32_t key) {
  const uint64_t handle = auth_key_table.handle_of(key);
  return handle == av::AuthKeyTable::kNone ? FI_ADDR_NOTAVAIL : handle;
}

void Av::auth_key_use(fi_addr_t handle, int delta) { auth_key_table.use(handle, delta); }

fi_addr_t Av::lookup_source_key(uint32_t key) {
  const uint64_t handle = auth_key_table.handle_of(key);
  if (handle == av::AuthKeyTable::kNone) return FI_ADDR_NOTAVAIL;
  // fi_av(3): with FI_AV_USER_ID, FI_ADDR_NOTAVAIL until the user id is set.
  return user_ids ? auth_key_table.user_id(handle) : handle;
}

namespace {

// kAuthKeyFlag (dpdk_common.h) is 0 in 1.x: there no call names a key.
#if OFI_DPDK_HAVE_AV_USER_ID
// 2.x: ids come from fi_av_set_user_id (fi_av(3)).
constexpr uint64_t kOpenFlags = FI_EVENT | FI_READ | FI_SYMMETRIC | FI_AV_USER_ID;
#else
constexpr uint64_t kOpenFlags = FI_EVENT | FI_READ | FI_SYMMETRIC;
#endif
constexpr uint64_t kInsertFlags = FI_MORE | FI_SYNC_ERR | FI_AV_USER_ID | kAuthKeyFlag;
constexpr int kMaxRxCtxBits = 32;
// Insert calls return the count inserted as an int.
constexpr size_t kMaxInsert = std::numeric_limits<int>::max();

int from_table_error(int64_t ret) {
  switch (ret) {
    case -ENOSPC: return FI_ENOSPC;
    case -EAGAIN: return FI_EAGAIN;
    case -EIO: return FI_EIO;
    default: return FI_ENOMEM;
  }
}

// One address into the AV: a named AV picks the index in the node's table
// and mirrors it (the key and user id stay in this process's mirror).
// Returns the index or -ENOSPC / -ENOMEM / -EAGAIN / -EIO (the shared
// table's lock stayed held, or it is corrupt: logged here).
int64_t insert_one(Av* av, const av::Address& address, std::optional<uint64_t> user_id,
                   uint32_t network_key) {
  if (av->shared == nullptr) return av->table.insert(address, user_id, network_key);
  const int64_t index = av->shared->insert(address);
  if (index == -EAGAIN || index == -EIO)
    DPDK_WARN(FI_LOG_AV, "named AV \"%s\": insert: %s\n", av->name.c_str(),
              av->shared->problem().c_str());
  if (index < 0) return index;
  const int64_t mirrored =
      av->table.insert_at(static_cast<uint64_t>(index), address, user_id, network_key);
  if (mirrored < 0 && av->shared->remove(static_cast<uint64_t>(index)) != 0)
    DPDK_WARN(FI_LOG_AV, "named AV \"%s\": index %ld stays taken, not mirrored: %s\n",
              av->name.c_str(), static_cast<long>(index), av->shared->problem().c_str());
  return mirrored;
}

// An address whose MAC is an IPv6 peer id (resolved from a sockaddr_in6,
// or its native or string form, as fi_av_lookup gave it): the id is this
// process's own, so it goes in only where it names a peer this process
// still knows, and never in a named AV, whose other processes it names
// nothing to.  The entry holds a named use of the id (ipv6_peers.h) until
// fi_av_remove or fi_av_close: no stranger takes its place meanwhile.
// Returns 0 or why not (-FI_EINVAL, -FI_ENOSPC), logged.
int keep_ipv6_peer(Av* av, const av::Address& address) {
  // (Only a port that speaks UDP/IPv6 sends to one: on another its id
  // would go out as a group MAC.)
  if (av->shared == nullptr && av->domain->port->udp6 &&
      hold_ipv6_peer(address.mac, ip::Ipv6Peers::Use::kNamed))
    return 0;
  if (av->shared == nullptr && av->domain->port->udp6 && ipv6_of_peer_id(address.mac)) {
    DPDK_WARN(FI_LOG_AV, "%s: the process names %zu IPv6 peers already, the most it can "
              "(FI_DPDK_IPV6_PEERS)\n", av::format_mac(address.mac).c_str(), params().ipv6_peers);
    return -FI_ENOSPC;
  }
  DPDK_INFO(FI_LOG_AV, "%s: an IPv6 peer's native or string form names it in this process "
            "alone%s: insert its sockaddr_in6\n", av::format_mac(address.mac).c_str(),
            av->shared != nullptr                 ? ", not in a named AV"
            : !av->domain->port->udp6 ? ", on a port that reaches IPv6 peers in UDP"
                                                  : ", and this one is gone");
  return -FI_EINVAL;
}

// The IPv6 peer id an entry holds a named use of, given back as the entry
// goes.  Lock held.
void forget_ipv6_peer(const av::Entry& entry) {
  if (ip::is_ipv6_peer_id(entry.address.mac))
    release_ipv6_peer(entry.address.mac, ip::Ipv6Peers::Use::kNamed);
}

// Why the `index`-th address of an insert call is none of ours, for the log.
std::string why_not_an_address(const Av* av, const void* addr, size_t index) {
  const uint32_t format = static_cast<uint32_t>(av->addr_format);
  if (format == FI_ADDR_STR) {
    const char* text = static_cast<const char* const*>(addr)[index];
    if (text == nullptr) return "its string is NULL";
    return "\"" + std::string(text, strnlen(text, 128)) + "\" is no fi_dpdk:// address";
  }
  const size_t size = address_size(format);
  const auto* bytes = static_cast<const uint8_t*>(addr) + index * size;
  if (!is_sockaddr_format(format))
    return "not a native address of this provider (" + std::to_string(size) + " bytes)";
  sa_family_t family;
  std::memcpy(&family, bytes + offsetof(sockaddr, sa_family), sizeof(family));
  if (family != AF_INET && family != AF_INET6)
    return "address family " + std::to_string(family) + " is neither AF_INET nor AF_INET6";
  if (family == AF_INET6 && format == FI_SOCKADDR_IN)
    return "an AF_INET6 address in an FI_SOCKADDR_IN AV";
  if (family == AF_INET && format == FI_SOCKADDR_IN6)
    return "an AF_INET address in an FI_SOCKADDR_IN6 AV";
  uint16_t port_be;
  std::memcpy(&port_be, bytes + (family == AF_INET ? offsetof(sockaddr_in, sin_port)
                                                   : offsetof(sockaddr_in6, sin6_port)),
              sizeof(port_be));
  return "port " + std::to_string(ntohs(port_be)) + " is no endpoint's: " +
         std::to_string(params().port_base) + " to " +
         std::to_string(params().port_base + kMaxEndpointsPerPort - 1) +
         " (FI_DPDK_PORT_BASE + queue)";
}

// Every insert call ends here: `address_at(i)` gives the i-th address (or
// nullopt when it is not a dpdk address: `describe(i)` then says why, for
// the log; every address refused is logged).  Synchronous AVs return the
// number inserted; FI_EVENT AVs return 0 and report to the bound EQ: one
// error entry per failed address (data: its index within the call), then
// one FI_AV_COMPLETE (data: the number inserted).  Failed addresses get
// FI_ADDR_NOTAVAIL in fi_addr, and with FI_SYNC_ERR their fabric errno
// (positive, 0 for success) in the int array `context` points to.  When a
// named AV's lock stays held (FI_EAGAIN), the rest of the call is aborted
// (FI_ECANCELED, fi_av(3)) rather than waiting again for each address.
// With FI_AUTH_KEY, fi_addr[i] holds on input the key handle of address i
// (one that names no key fails that address with FI_EINVAL).
// `errors`, when given, holds the fabric errno (negative) of each address
// that address_at cannot give (resolution failed); FI_EINVAL otherwise.
// `unresolved`, when given, marks the addresses to insert before their
// neighbour answered ARP (av::Entry::unresolved).
template <typename AddressAt, typename Describe>
int insert_addresses(Av* av, size_t count, AddressAt address_at, Describe describe,
                     fi_addr_t* fi_addr, uint64_t flags, void* context,
                     const std::vector<int>* errors = nullptr,
                     const std::vector<bool>* unresolved = nullptr) {
  if (flags & ~kInsertFlags) {
    DPDK_INFO(FI_LOG_AV, "insert flags %#lx not supported\n", flags & ~kInsertFlags);
    return -FI_EBADFLAGS;
  }
  const bool async = (av->attr.flags & FI_EVENT) != 0;
  if ((flags & FI_SYNC_ERR) && (async || (context == nullptr && count != 0))) {
    DPDK_INFO(FI_LOG_AV, "FI_SYNC_ERR needs a synchronous AV and an int array in context\n");
    return -FI_EINVAL;
  }
  if ((flags & FI_AV_USER_ID) && (av->user_ids || av->domain->av_auth_keys)) {
    DPDK_INFO(FI_LOG_AV, "insert flag FI_AV_USER_ID: not with an AV opened FI_AV_USER_ID or "
                         "an FI_AV_AUTH_KEY domain; use fi_av_set_user_id\n");
    return -FI_EINVAL;
  }
  if ((flags & kAuthKeyFlag) && !av->domain->av_auth_keys) {
    DPDK_INFO(FI_LOG_AV, "insert flag FI_AUTH_KEY needs a domain with auth_key_size "
                         "FI_AV_AUTH_KEY\n");
    return -FI_EINVAL;
  }
  if ((flags & (FI_AV_USER_ID | kAuthKeyFlag)) && fi_addr == nullptr && count != 0) {
    DPDK_INFO(FI_LOG_AV, "FI_AV_USER_ID and FI_AUTH_KEY take input from fi_addr, which is NULL\n");
    return -FI_EINVAL;
  }
  if (av->shared != nullptr && av->shared->read_only()) {
    DPDK_INFO(FI_LOG_AV, "AV \"%s\" was opened FI_READ: no inserts\n", av->name.c_str());
    return -FI_EACCES;
  }
  int* status = (flags & FI_SYNC_ERR) ? static_cast<int*>(context) : nullptr;
  std::vector<fi_eq_err_entry> failures;
  size_t inserted = 0, failed = 0;
  int first_error = 0;
  size_t first_failed = 0;
  {
    std::lock_guard guard(av->domain->port->lock);
    if (async && av->eq == nullptr) {
      DPDK_INFO(FI_LOG_AV, "FI_EVENT AV: fi_av_bind an EQ before inserting\n");
      return -FI_ENOEQ;
    }
    av->refresh();
    bool aborted = false;
    for (size_t i = 0; i < count; ++i) {
      int error = 0;
      const std::optional<av::Address> address = address_at(i);
      if (aborted) {
        error = FI_ECANCELED;
      } else if (!address) {
        // (A reason given in `errors` was logged where it was found.)
        error = errors != nullptr && (*errors)[i] != 0 ? -(*errors)[i] : FI_EINVAL;
        if (errors == nullptr || (*errors)[i] == 0)
          DPDK_INFO(FI_LOG_AV, "address %zu not inserted: %s\n", i, describe(i).c_str());
      } else if ((flags & kAuthKeyFlag) && !av->auth_key_table.valid(fi_addr[i])) {
        DPDK_INFO(FI_LOG_AV, "address %zu not inserted: FI_AUTH_KEY, and fi_addr[%zu] %#lx is "
                  "no key handle of this AV\n", i, i, static_cast<unsigned long>(fi_addr[i]));
        error = FI_EINVAL;
      } else if (int kept = ip::is_ipv6_peer_id(address->mac) ? keep_ipv6_peer(av, *address) : 0;
                 kept != 0) {
        error = -kept;
      } else {
        std::optional<uint64_t> user_id;
        // fi_av(3): an FI_AV_USER_ID AV reports FI_ADDR_NOTAVAIL until
        // fi_av_set_user_id.
        if (av->user_ids) user_id = FI_ADDR_NOTAVAIL;
        if (flags & FI_AV_USER_ID) user_id = fi_addr[i];
        const uint32_t network_key =
            (flags & kAuthKeyFlag) ? av->auth_key_table.key(fi_addr[i]) : av::kNoAuthKey;
        const int64_t index = insert_one(av, *address, user_id, network_key);
        if (index < 0) {
          error = from_table_error(index);
          aborted = error == FI_EAGAIN;
          if (ip::is_ipv6_peer_id(address->mac))
            release_ipv6_peer(address->mac, ip::Ipv6Peers::Use::kNamed);
          if (index == -ENOSPC)
            DPDK_INFO(FI_LOG_AV, "address %zu not inserted: the AV holds its most, %lu "
                      "entries (rx_ctx_bits, a named AV's count)\n", i,
                      static_cast<unsigned long>(av->table.limit()));
          else if (index == -ENOMEM)
            DPDK_WARN(FI_LOG_AV, "address %zu not inserted: out of memory\n", i);
        } else {
          if (unresolved != nullptr && (*unresolved)[i]) av->table.mark_unresolved(index);
          if (fi_addr != nullptr) fi_addr[i] = static_cast<fi_addr_t>(index);
          ++inserted;
        }
      }
      if (status != nullptr) status[i] = error;
      if (error == 0) continue;
      if (fi_addr != nullptr) fi_addr[i] = FI_ADDR_NOTAVAIL;
      if (failed++ == 0) {
        first_error = error;
        first_failed = i;
      }
      if (async) {
        fi_eq_err_entry entry{};
        entry.fid = &av->fid.fid;
        entry.context = context;
        entry.data = i;
        entry.err = error;
        entry.prov_errno = error;
        try {
          failures.push_back(entry);
        } catch (const std::bad_alloc&) {
          DPDK_WARN(FI_LOG_AV, "error entry for address %zu lost: out of memory\n", i);
        }
      }
    }
  }
  if (failed != 0)
    DPDK_INFO(FI_LOG_AV, "%zu of %zu addresses not inserted; the first, %zu: %s\n", failed,
              count, first_failed, fi_strerror(first_error));
  if (!async) return static_cast<int>(inserted);
  for (const fi_eq_err_entry& entry : failures) av->eq->push_error(entry);
  fi_eq_entry done{};
  done.fid = &av->fid.fid;
  done.context = context;
  done.data = inserted;
  av->eq->push_event(FI_AV_COMPLETE, &done, sizeof(done));
  return 0;
}

std::optional<av::Address> parse_address(const Av* av, const void* addr, size_t index) {
  if (av->addr_format == FI_ADDR_STR) {
    const char* const* strings = static_cast<const char* const*>(addr);
    if (strings[index] == nullptr) return std::nullopt;
    return decode_address(FI_ADDR_STR, strings[index], std::strlen(strings[index]) + 1);
  }
  const size_t size = address_size(av->addr_format);
  return decode_address(av->addr_format, static_cast<const uint8_t*>(addr) + index * size, size);
}

// Inserts `addresses`, those named by IPv4 alone resolved first (ARP; see
// PortContext::resolve): one that does not resolve fails with its reason.
// `describe(i)` says why addresses[i] is empty, when it is.
template <typename Describe>
int insert_resolved(Av* av, std::vector<std::optional<av::Address>>& addresses,
                    Describe describe, fi_addr_t* fi_addr, uint64_t flags, void* context) {
  std::vector<av::Address*> named;
  std::vector<size_t> where;
  std::vector<int> errors(addresses.size(), 0);
  for (size_t i = 0; i < addresses.size(); ++i) {
    if (!addresses[i]) continue;
    // A sockaddr of 0.0.0.0 (or ::) names no peer.
    if (is_sockaddr_format(av->addr_format) && !addresses[i]->has_ip()) {
      DPDK_INFO(FI_LOG_AV, "address %zu not inserted: 0.0.0.0 or :: names no peer\n", i);
      errors[i] = -FI_EINVAL;
      addresses[i].reset();
      continue;
    }
    // A named AV's entries are read by other processes, to which this
    // process's IPv6 peer ids mean nothing.
    if (addresses[i]->has_ipv6() && av->shared != nullptr) {
      DPDK_INFO(FI_LOG_AV, "an IPv6 peer cannot go in a named AV (FI_SHARED_AV)\n");
      errors[i] = -FI_EOPNOTSUPP;
      addresses[i].reset();
      continue;
    }
    named.push_back(&*addresses[i]);
    where.push_back(i);
  }
  // Those named by IPv6 address alone get their peer ids there, each with
  // a named use taken that the entry, once in, takes over with one of its
  // own (keep_ipv6_peer): given back below either way.
  std::vector<bool> named_by_ipv6(named.size());
  for (size_t k = 0; k < named.size(); ++k) named_by_ipv6[k] = named[k]->named_by_ipv6_alone();
  const std::vector<int> results = av->domain->port->resolve(named);
  std::vector<av::Address> resolved_ipv6;
  for (size_t k = 0; k < results.size(); ++k)
    if (results[k] == 0 && named_by_ipv6[k] && ip::is_ipv6_peer_id(named[k]->mac))
      resolved_ipv6.push_back(*named[k]);
  // A neighbour that has not answered yet is still an address (fi_av(3)
  // asks no more): it goes in unresolved, and a send to it fails with
  // FI_EHOSTUNREACH until it answers.  (Not in a named AV, whose entries
  // other processes read.)
  std::vector<bool> unresolved(addresses.size(), false);
  for (size_t k = 0; k < results.size(); ++k) {
    if (results[k] == 0) continue;
    if (results[k] == -FI_ETIMEDOUT && av->shared == nullptr) {
      unresolved[where[k]] = true;
      continue;
    }
    errors[where[k]] = results[k] == -FI_ETIMEDOUT ? -FI_EHOSTUNREACH : results[k];
    addresses[where[k]].reset();
  }
  const int ret = insert_addresses(
      av, addresses.size(), [&](size_t i) { return addresses[i]; }, describe, fi_addr, flags,
      context, &errors, &unresolved);
  for (const av::Address& a : resolved_ipv6) release_ipv6_peer(a.mac, ip::Ipv6Peers::Use::kNamed);
  return ret;
}

int av_insert(fid_av* av_fid, const void* addr, size_t count, fi_addr_t* fi_addr,
              uint64_t flags, void* context) {
  Av* av = from_fid<Av>(av_fid);
  if (addr == nullptr && count != 0) {
    // (fabtests 1.17's fi_dgram_pingpong client, run without -s, asks
    // fi_getinfo for its own address alone, FI_SOURCE, and inserts the
    // answer's dest_addr: NULL.)
    DPDK_INFO(FI_LOG_AV, "fi_av_insert: addr is NULL, count %zu: no address to insert (an "
              "fi_info from fi_getinfo with FI_SOURCE and no hints->dest_addr has "
              "dest_addr NULL)\n", count);
    return -FI_EINVAL;
  }
  if (count > kMaxInsert) {
    DPDK_INFO(FI_LOG_AV, "fi_av_insert: count %zu is more than one call can report\n", count);
    return -FI_EINVAL;
  }
  const auto describe = [&](size_t i) { return why_not_an_address(av, addr, i); };
  if (!is_sockaddr_format(av->addr_format))
    return insert_addresses(
        av, count, [&](size_t i) { return parse_address(av, addr, i); }, describe, fi_addr,
        flags, context);
  std::vector<std::optional<av::Address>> addresses(count);
  for (size_t i = 0; i < count; ++i) addresses[i] = parse_address(av, addr, i);
  return insert_resolved(av, addresses, describe, fi_addr, flags, context);
}

// fi_av_insertsvc's and fi_av_insertsym's node and service: a MAC and a
// queue, an fi_dpdk:// string with service NULL, or an IPv4 address (or
// host name) and a queue or service port.
std::optional<av::Address> node_service_address(const char* node, const char* service) {
  if (auto address = av::from_node_service(node, service)) return address;
  if (service == nullptr) return std::nullopt;
  const auto queue = parse_service_queue(service);
  av::Address address;
  if (!queue || !name_by_host(node, &address)) return std::nullopt;
  address.queue = *queue;
  return address;
}

// node: a MAC ("02:00:00:00:00:01") with service a decimal queue id, an
// fi_dpdk:// string with service NULL, or an IPv4 address or host name with
// a queue id or service port (resolved by ARP).  A node that is none of
// these is one failed address, reported like any other.
int av_insertsvc(fid_av* av_fid, const char* node, const char* service, fi_addr_t* fi_addr,
                 uint64_t flags, void* context) {
  if (node == nullptr) {
    DPDK_INFO(FI_LOG_AV, "insertsvc: node is NULL\n");
    return -FI_EINVAL;
  }
  std::vector<std::optional<av::Address>> address{node_service_address(node, service)};
  const auto describe = [&](size_t) {
    return "\"" + std::string(node) + "\" \"" + (service != nullptr ? service : "(null)") +
           "\" is no MAC, IP address or host name and queue, nor fi_dpdk://";
  };
  return insert_resolved(from_fid<Av>(av_fid), address, describe, fi_addr, flags, context);
}

// nodecnt MACs from node (counted as a 48-bit number), or nodecnt IPv4
// addresses from node's, times svccnt queues from service, every queue of
// a node before the next node.  node may also be an fi_dpdk:// string with
// service NULL: its queue is the first one.
int av_insertsym(fid_av* av_fid, const char* node, size_t nodecnt, const char* service,
                 size_t svccnt, fi_addr_t* fi_addr, uint64_t flags, void* context) {
  Av* av = from_fid<Av>(av_fid);
  if (node == nullptr) {
    DPDK_INFO(FI_LOG_AV, "insertsym: node is NULL\n");
    return -FI_EINVAL;
  }
  std::optional<av::Address> first = node_service_address(node, service);
  if (!first) {
    DPDK_INFO(FI_LOG_AV,
              "insertsym: \"%s\" \"%s\" is no MAC, IP address or host name and queue, "
              "nor fi_dpdk://\n",
              node, service != nullptr ? service : "(null)");
    return -FI_EINVAL;
  }
  size_t count = 0;
  // IP addresses count up as numbers (an IPv6 one in its last 32 bits).
  const uint32_t low = first->ipv4 != 0 ? first->ipv4 : ip::ipv4_of_mapped(ip::Ipv6{first->ipv6});
  if (nodecnt != 0 && svccnt != 0) {
    const bool fits = first->has_ip()
                          ? nodecnt - 1 <= 0xFFFFFFFFu - low &&
                                svccnt - 1 <= size_t{av::kMaxQueue} - first->queue
                          : av::symmetric_range_fits(*first, nodecnt, svccnt);
    if (__builtin_mul_overflow(nodecnt, svccnt, &count) || count > kMaxInsert || !fits) {
      DPDK_INFO(FI_LOG_AV, "insertsym: %zu nodes x %zu queues from %s runs out of range\n",
                nodecnt, svccnt, node);
      return -FI_EINVAL;
    }
  }
  if (!first->has_ip())
    return insert_addresses(
        av, count,
        [&](size_t i) -> std::optional<av::Address> {
          return av::symmetric_address(*first, svccnt, i);
        },
        [&](size_t i) { return "address " + std::to_string(i) + " of the range is out of it"; },
        fi_addr, flags, context);
  std::vector<std::optional<av::Address>> addresses(count);
  for (size_t i = 0; i < count; ++i) {
    av::Address a = *first;
    const uint32_t node_number = low + static_cast<uint32_t>(i / svccnt);
    if (first->ipv4 != 0) {
      a.ipv4 = node_number;
    } else {
      for (int b = 0; b < 4; ++b) a.ipv6[12 + b] = static_cast<uint8_t>(node_number >> (24 - 8 * b));
    }
    a.queue = static_cast<uint16_t>(first->queue + i % svccnt);
    addresses[i] = a;
  }
  return insert_resolved(
      av, addresses, [](size_t) { return std::string("it names no peer"); }, fi_addr, flags,
      context);
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
    DPDK_INFO(FI_LOG_AV, "remove flag FI_AV_USER_ID: not with an AV opened FI_AV_USER_ID or "
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
    forget_ipv6_peer(*entry);
    av->table.remove(fi_addr[i]);
    if (av->table.find_endpoint(key) != av::AddressTable::kNone) continue;
    for (Endpoint* ep : av->endpoints) {
      if (!ep->engine) continue;
      ep->engine->drop_peer(key);
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
    DPDK_INFO(FI_LOG_AV, "fi_av_insert_auth_key: the domain's auth_key_size is not "
                         "FI_AV_AUTH_KEY\n");
    return -FI_EINVAL;
  }
  if (flags != 0) return -FI_EBADFLAGS;
  if (auth_key == nullptr || fi_addr == nullptr) return -FI_EINVAL;
  if (auth_key_size != av::kAuthKeySize) {
    DPDK_INFO(FI_LOG_AV, "fi_av_insert_auth_key: a key is %zu bytes, not %zu\n",
              av::kAuthKeySize, auth_key_size);
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
            av->shared->created() ? "created" : "opened",
            av->shared->object_name().c_str(), av->shared->capacity());
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
