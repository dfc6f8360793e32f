// dpdk_av_insert.cc: fi_av_insert, fi_av_insertsvc and fi_av_insertsym
// (dpdk_av.cc has the rest of fi_av(3)).  Every insert call ends in
// insert_addresses: addresses in the lowest unused indices, a named AV's
// through the node's shared table, failures logged and reported as the
// flags ask (synchronously, FI_SYNC_ERR, or to the bound EQ with FI_EVENT).
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
namespace {

constexpr uint64_t kInsertFlags = FI_MORE | FI_SYNC_ERR | FI_AV_USER_ID | kAuthKeyFlag;
// Insert calls return the count inserted as an int.
constexpr size_t kMaxInsert = std::numeric_limits<int>::max();

int from_table_error(int64_t ret) {
  switch (ret) {
    case -ENOSPC:
      return FI_ENOSPC;
    case -EAGAIN:
      return FI_EAGAIN;
    case -EIO:
      return FI_EIO;
    default:
      return FI_ENOMEM;
  }
}

// Notes when `index` (an insert's result) went in, for fi_av_remove
// (Av::inserted_ns); without memory for it the time stays unknown.
int64_t stamp_insert(Av* av, int64_t index) {
  if (index < 0) return index;
  const auto at = static_cast<size_t>(index);
  if (at >= av->inserted_ns.size()) {
    try {
      av->inserted_ns.resize(std::max<size_t>(at + 1, av->table.high_water()));
    } catch (const std::bad_alloc&) {
      return index;
    }
  }
  av->inserted_ns[at] = now_ns();
  return index;
}

// One address into the AV: a named AV picks the index in the node's table
// and mirrors it (the key and user id stay in this process's mirror).
// Returns the index or -ENOSPC / -ENOMEM / -EAGAIN / -EIO (the shared
// table's lock stayed held, or it is corrupt: logged here).
int64_t insert_one(Av* av, const av::Address& address, std::optional<uint64_t> user_id,
                   uint32_t network_key) {
  if (av->shared == nullptr)
    return stamp_insert(av, av->table.insert(address, user_id, network_key));
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
  return stamp_insert(av, mirrored);
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
  if (av->shared == nullptr && av->domain->port->framer->udp6 &&
      hold_ipv6_peer(address.mac, ip::Ipv6Peers::Use::kNamed))
    return 0;
  if (av->shared == nullptr && av->domain->port->framer->udp6 && ipv6_of_peer_id(address.mac)) {
    DPDK_WARN(FI_LOG_AV,
              "%s: the process names %zu IPv6 peers already, the most it can "
              "(FI_DPDK_IPV6_PEERS)\n",
              av::format_mac(address.mac).c_str(), params().ipv6_peers);
    return -FI_ENOSPC;
  }
  DPDK_INFO(FI_LOG_AV,
            "%s: an IPv6 peer's native or string form names it in this process "
            "alone%s: insert its sockaddr_in6\n",
            av::format_mac(address.mac).c_str(),
            av->shared != nullptr             ? ", not in a named AV"
            : !av->domain->port->framer->udp6 ? ", on a port that reaches IPv6 peers in UDP"
                                              : ", and this one is gone");
  return -FI_EINVAL;
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
  std::memcpy(&port_be,
              bytes + (family == AF_INET ? offsetof(sockaddr_in, sin_port)
                                         : offsetof(sockaddr_in6, sin6_port)),
              sizeof(port_be));
  return "port " + std::to_string(ntohs(port_be)) +
         " is no endpoint's: " + std::to_string(params().port_base) + " to " +
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
    DPDK_INFO(FI_LOG_AV,
              "insert flag FI_AV_USER_ID: not with an AV opened FI_AV_USER_ID or "
              "an FI_AV_AUTH_KEY domain; use fi_av_set_user_id\n");
    return -FI_EINVAL;
  }
  if ((flags & kAuthKeyFlag) && !av->domain->av_auth_keys) {
    DPDK_INFO(FI_LOG_AV,
              "insert flag FI_AUTH_KEY needs a domain with auth_key_size "
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
        DPDK_INFO(FI_LOG_AV,
                  "address %zu not inserted: FI_AUTH_KEY, and fi_addr[%zu] %#lx is "
                  "no key handle of this AV\n",
                  i, i, static_cast<unsigned long>(fi_addr[i]));
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
            DPDK_INFO(FI_LOG_AV,
                      "address %zu not inserted: the AV holds its most, %lu "
                      "entries (rx_ctx_bits, a named AV's count)\n",
                      i, static_cast<unsigned long>(av->table.limit()));
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
    DPDK_INFO(FI_LOG_AV, "%zu of %zu addresses not inserted; the first, %zu: %s\n", failed, count,
              first_failed, fi_strerror(first_error));
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
int insert_resolved(Av* av, std::vector<std::optional<av::Address>>& addresses, Describe describe,
                    fi_addr_t* fi_addr, uint64_t flags, void* context) {
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

}  // namespace

int av_insert(fid_av* av_fid, const void* addr, size_t count, fi_addr_t* fi_addr, uint64_t flags,
              void* context) {
  Av* av = from_fid<Av>(av_fid);
  if (addr == nullptr && count != 0) {
    // (fabtests 1.17's fi_dgram_pingpong client, run without -s, asks
    // fi_getinfo for its own address alone, FI_SOURCE, and inserts the
    // answer's dest_addr: NULL.)
    DPDK_INFO(FI_LOG_AV,
              "fi_av_insert: addr is NULL, count %zu: no address to insert (an "
              "fi_info from fi_getinfo with FI_SOURCE and no hints->dest_addr has "
              "dest_addr NULL)\n",
              count);
    return -FI_EINVAL;
  }
  if (count > kMaxInsert) {
    DPDK_INFO(FI_LOG_AV, "fi_av_insert: count %zu is more than one call can report\n", count);
    return -FI_EINVAL;
  }
  const auto describe = [&](size_t i) { return why_not_an_address(av, addr, i); };
  if (!is_sockaddr_format(av->addr_format))
    return insert_addresses(
        av, count, [&](size_t i) { return parse_address(av, addr, i); }, describe, fi_addr, flags,
        context);
  std::vector<std::optional<av::Address>> addresses(count);
  for (size_t i = 0; i < count; ++i) addresses[i] = parse_address(av, addr, i);
  return insert_resolved(av, addresses, describe, fi_addr, flags, context);
}

namespace {

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

}  // namespace

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
    const bool fits = first->has_ip() ? nodecnt - 1 <= 0xFFFFFFFFu - low &&
                                            svccnt - 1 <= size_t{av::kMaxQueue} - first->queue
                                      : av::symmetric_range_fits(*first, nodecnt, svccnt);
    if (__builtin_mul_overflow(nodecnt, svccnt, &count) || count > kMaxInsert || !fits) {
      DPDK_INFO(FI_LOG_AV, "insertsym: %zu nodes x %zu queues from %s runs out of range\n", nodecnt,
                svccnt, node);
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
      for (int b = 0; b < 4; ++b)
        a.ipv6[12 + b] = static_cast<uint8_t>(node_number >> (24 - 8 * b));
    }
    a.queue = static_cast<uint16_t>(first->queue + i % svccnt);
    addresses[i] = a;
  }
  return insert_resolved(
      av, addresses, [](size_t) { return std::string("it names no peer"); }, fi_addr, flags,
      context);
}

}  // namespace ofi_dpdk::ofi
