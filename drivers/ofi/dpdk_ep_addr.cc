// dpdk_ep_addr.cc: how an endpoint turns an fi_addr_t into what the
// transport needs.  A destination is a peer address with the network key its
// frames carry and the peer group of the message; a receive's source is a
// filter on the sender's address, key and group.  fi_enable fixes the keys
// the endpoint takes frames with (doc/man/fi_dpdk.7, AUTHORIZATION KEYS).
#include <algorithm>
#include <cstring>

#include "drivers/ofi/dpdk_attr.h"
#include "drivers/ofi/dpdk_av.h"
#include "drivers/ofi/dpdk_domain.h"
#include "drivers/ofi/dpdk_endpoint.h"
#include "drivers/ofi/dpdk_limits.h"
#include "drivers/ofi/dpdk_log.h"
#include "drivers/ofi/dpdk_port.h"

namespace ofi_dpdk::ofi {
namespace {

// fi_group_addr (2.x) puts the group above the low 32 bits of an fi_addr.
constexpr int kGroupShift = 32;
constexpr fi_addr_t kIndexBits = 0xFFFF'FFFFull;
// A receive's source whose low 32 bits are all ones: any sender of its
// group (fi_group_addr(FI_ADDR_UNSPEC, g) would be FI_ADDR_UNSPEC itself).
constexpr fi_addr_t kAnySourceInGroup = kIndexBits;

// Splits `addr` into its peer group and the rest, when the endpoint has
// peer groups; false for a group above max_group_id.
bool split_group(const Endpoint& ep, fi_addr_t addr, uint32_t* group, fi_addr_t* rest) {
  *group = 0;
  *rest = addr;
  if (!ep.peer_groups() || addr == FI_ADDR_UNSPEC) return true;
  *group = static_cast<uint32_t>(addr >> kGroupShift);
  *rest = addr & kIndexBits;
  return *group <= ep.domain->max_group_id;
}

}  // namespace

bool Endpoint::peer_groups() const {
  // fi_rx_addr uses the same top bits for receive contexts.
  return domain->max_group_id != 0 && (av == nullptr || av->attr.rx_ctx_bits == 0);
}

bool Endpoint::accepts_key(uint32_t key) const {
  // One key, or a few: a plain loop (std::find's unrolled one costs more
  // before it reaches the first).
  for (const uint32_t accepted : auth_keys)
    if (accepted == key) return true;
  return false;
}

av::Address Endpoint::own_address() const {
  av::Address self;
  std::memcpy(self.mac, port().port->mac(), 6);
  self.queue = queue;
  self.session = session;
  return self;
}

int Endpoint::destination(fi_addr_t dest, proto::PeerAddress* out, uint32_t* group) {
  if (is_msg()) {
    // fi_msg(3): a connected endpoint ignores dest_addr; its peer is the
    // one the connection names.
    if (cm_state != CmState::kConnected && cm_state != CmState::kAccepting) return -FI_ENOTCONN;
    std::memcpy(out->mac, peer.mac, 6);
    out->queue = peer.queue;
    out->session = peer.session;
    out->auth_key = transmit_key;
    if (group != nullptr) *group = 0;
    return 0;
  }
  fi_addr_t index;
  uint32_t peer_group;
  if (!split_group(*this, dest, &peer_group, &index)) return -FI_EINVAL;
  const av::Entry* entry = nullptr;
  const av::Address* peer = av != nullptr ? av->resolve(index, &entry) : nullptr;
  if (peer == nullptr) return -FI_EINVAL;
  const uint64_t slot = index & av->index_mask;
  // Inserted before its neighbour answered ARP: reachable once it has.
  if (entry->unresolved) {
    if (!av->complete(slot, port())) return -FI_EHOSTUNREACH;
    peer = av->resolve(index);
  }
  std::memcpy(out->mac, peer->mac, 6);
  out->queue = peer->queue;
  out->session = peer->session;
  // The key belongs to the address, whichever receive context is named.
  uint32_t key = av->table.network_key_of_found(slot);
  if (key == 0) key = transmit_key;
  if (!accepts_key(key)) {
    // The peer's answers would carry this key, which we would drop.
    DPDK_INFO(FI_LOG_EP_DATA,
              "fi_addr %#lx: its authorization key %#x is not one this endpoint was enabled "
              "with\n",
              static_cast<unsigned long>(dest), key);
    return -FI_EINVAL;
  }
  out->auth_key = key;
  if (group != nullptr) *group = peer_group;
  return 0;
}

int Endpoint::receive_filter(fi_addr_t source, uint64_t flags, proto::RecvRequest* request) {
  if (source == FI_ADDR_UNSPEC || is_msg()) return 0;  // connected: one peer
  fi_addr_t index;
  if (!split_group(*this, source, &request->group, &index)) return -FI_EINVAL;
  if (peer_groups() && index == kAnySourceInGroup) return 0;
  // Without FI_DIRECTED_RECV the source only names a group (fi_msg(3)).
  const bool directed =
      has_cap(FI_DIRECTED_RECV) || (request->tagged && has_cap(kTaggedDirectedRecvCap));
  if (!directed || av == nullptr) return 0;
  if (flags & kAuthKeyFlag) {
    // fi_av(3): an authorization key fi_addr takes any sender with that key.
    const uint32_t key = av->network_key_of_handle(index);
    if (key == 0 || !accepts_key(key)) return -FI_EINVAL;
    request->match_auth_key = true;
    request->auth_key = key;
    return 0;
  }
  const av::Address* peer = av->resolve(index);
  if (peer == nullptr) return -FI_EINVAL;
  request->any_source = false;
  request->source_key = proto::peer_key(peer->mac, peer->queue);
  // An address inserted with a key is that address under that key only.
  if (const uint32_t key = av->network_key_of(index & av->index_mask); key != 0) {
    request->match_auth_key = true;
    request->auth_key = key;
  }
  return 0;
}

int Endpoint::enable_auth_keys() {
  auth_keys.clear();
  auth_key_handles.clear();
  transmit_key = 0;
  if (endpoint_auth_key != 0) {
    auth_keys.push_back(endpoint_auth_key);
    transmit_key = endpoint_auth_key;
  } else if (domain->default_auth_key != 0) {
    auth_keys.push_back(domain->default_auth_key);
    transmit_key = domain->default_auth_key;
  } else if (domain->av_auth_keys && av != nullptr) {
    // fi_av(3): the AV's keys at enable time; later ones do not propagate.
    // Sends then go only to addresses inserted with one of them.
    for (const auto& [handle, key] : av->auth_keys()) {
      auth_keys.push_back(key);
      auth_key_handles.push_back(handle);
    }
    for (const fi_addr_t handle : auth_key_handles) av->auth_key_use(handle, +1);
  }
  if (auth_keys.empty()) auth_keys.push_back(0);  // no key: frames carry 0
  engine->set_accepted_keys(auth_keys);
  return 0;
}

void Endpoint::release_auth_keys() {
  if (av != nullptr)
    for (const fi_addr_t handle : auth_key_handles) av->auth_key_use(handle, -1);
  auth_key_handles.clear();
}

}  // namespace ofi_dpdk::ofi
