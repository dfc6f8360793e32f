// dpdk_attr.h: the fi_info the provider offers for one port, and the rules
// of fi_getinfo(3) that narrow it to an application's hints.  No DPDK here,
// so the matching rules are unit-tested case by case.
#pragma once

#include <rdma/fabric.h>

#include <cstdint>
#include <optional>
#include <string>

#include "lib/av/address.h"

namespace ofi_dpdk::ofi {

// What getinfo knows of a port.
struct PortFacts {
  std::string name;       // the ethdev name: the domain name
  uint8_t mac[6];
  size_t max_msg_size;      // ep_attr->max_msg_size
  size_t unexpected_bytes;  // rx_attr->total_buffered_recv
};

// fi_av (doc/address-vector.md).  FI_AV_USER_ID is in no class in the 1.17
// man pages; like later libfabric, we treat it as primary: granted when
// asked for, or with caps 0.  FI_SHARED_AV (named AVs) is secondary and
// costs nothing until a name is used, so it is always reported, in
// domain_attr->caps too (fi_domain(3)).
inline constexpr uint64_t kAvPrimaryCaps = FI_AV_USER_ID;
inline constexpr uint64_t kAvSecondaryCaps = FI_SHARED_AV;

// libfabric 2.x splits the receive capabilities by kind: FI_DIRECTED_RECV
// for tagged receives only (primary), FI_MULTI_RECV on tagged receives
// (secondary, costless).  0 where the headers lack them.
#ifdef FI_TAGGED_DIRECTED_RECV
inline constexpr uint64_t kTaggedDirectedRecvCap = FI_TAGGED_DIRECTED_RECV;
#else
inline constexpr uint64_t kTaggedDirectedRecvCap = 0;
#endif
#ifdef FI_TAGGED_MULTI_RECV
inline constexpr uint64_t kTaggedMultiRecvCap = FI_TAGGED_MULTI_RECV;
#else
inline constexpr uint64_t kTaggedMultiRecvCap = 0;
#endif

// Capabilities this provider implements (and tests prove).
// FI_NAMED_RX_CTX: fi_rx_addr reaches a receive context of a scalable
// endpoint (dpdk_sep.cc).
inline constexpr uint64_t kPrimaryCaps = FI_MSG | FI_TAGGED | FI_RMA | FI_ATOMIC |
                                         FI_DIRECTED_RECV | FI_NAMED_RX_CTX | kAvPrimaryCaps |
                                         kTaggedDirectedRecvCap;
inline constexpr uint64_t kModifierCaps =
    FI_SEND | FI_RECV | FI_READ | FI_WRITE | FI_REMOTE_READ | FI_REMOTE_WRITE;
// FI_RMA_EVENT: counters bound with FI_REMOTE_READ / FI_REMOTE_WRITE (to the
// endpoint or, with fi_mr_bind, to a region) count what peers do to our
// memory; granted only when asked for (doc/rma.md, "Target-side events").
// FI_SOURCE_ERR (with FI_SOURCE): unknown senders as FI_EADDRNOTAVAIL
// errors carrying their address.  FI_MULTI_RECV costs nothing unused.
// FI_LOCAL_COMM: endpoints of one host reach each other, on one port
// (frames to the port's own MAC are handed over in software, dpdk_msg.cc)
// or on two (memif, veths, a bridge); FI_REMOTE_COMM: other hosts.
inline constexpr uint64_t kSecondaryCaps =
    FI_SOURCE | FI_LOCAL_COMM | FI_REMOTE_COMM | FI_RMA_EVENT | FI_SOURCE_ERR | FI_MULTI_RECV |
    kAvSecondaryCaps | kTaggedMultiRecvCap;
inline constexpr uint64_t kAllCaps = kPrimaryCaps | kModifierCaps | kSecondaryCaps;
// Reported without being asked for: costless secondary capabilities.
inline constexpr uint64_t kFreeSecondaryCaps =
    FI_LOCAL_COMM | FI_REMOTE_COMM | FI_MULTI_RECV | kAvSecondaryCaps | kTaggedMultiRecvCap;
inline constexpr uint64_t kTxCaps =
    FI_MSG | FI_TAGGED | FI_RMA | FI_ATOMIC | FI_SEND | FI_READ | FI_WRITE | FI_NAMED_RX_CTX;
inline constexpr uint64_t kRxCaps =
    FI_MSG | FI_TAGGED | FI_RMA | FI_ATOMIC | FI_RECV | FI_REMOTE_READ | FI_REMOTE_WRITE |
    FI_SOURCE | FI_DIRECTED_RECV | FI_RMA_EVENT | FI_SOURCE_ERR | FI_MULTI_RECV |
    kTaggedDirectedRecvCap | kTaggedMultiRecvCap;
// FI_EP_DGRAM (lib/proto/datagram.cc): messages, tagged or not, one frame
// each; no RMA, no atomics, no scalable endpoints, no events at the target.
inline constexpr uint64_t kDatagramCaps =
    FI_MSG | FI_TAGGED | FI_SEND | FI_RECV | FI_DIRECTED_RECV | kTaggedDirectedRecvCap |
    kAvPrimaryCaps | FI_SOURCE | FI_SOURCE_ERR | FI_MULTI_RECV | FI_LOCAL_COMM | FI_REMOTE_COMM |
    kAvSecondaryCaps | kTaggedMultiRecvCap;
// A datagram's largest payload: what one frame carries on every port and
// path, a standard 1500-byte Ethernet payload less our header (88 bytes).
inline constexpr size_t kDatagramMaxMsgSize = 1412;
// FI_EP_MSG (drivers/ofi/dpdk_cm.cc): RDM's operations over a connection,
// which names the one peer: nothing that chooses or reports an address.
inline constexpr uint64_t kConnectedCaps =
    kAllCaps & ~(FI_DIRECTED_RECV | kTaggedDirectedRecvCap | FI_NAMED_RX_CTX | FI_SOURCE |
                 FI_SOURCE_ERR | kAvPrimaryCaps | kAvSecondaryCaps);
// The capabilities an endpoint type can have.
constexpr uint64_t caps_of(fi_ep_type type) {
  return type == FI_EP_DGRAM ? kDatagramCaps : type == FI_EP_MSG ? kConnectedCaps : kAllCaps;
}
constexpr const char* ep_type_name(fi_ep_type type) {
  return type == FI_EP_DGRAM ? "FI_EP_DGRAM" : type == FI_EP_MSG ? "FI_EP_MSG" : "FI_EP_RDM";
}
// ep_attr->mem_tag_format: all 64 tag bits match, any ignore mask works;
// offered as the generic format (alternating bits), or the application's own.
inline constexpr uint64_t kMemTagFormat = 0xAAAAAAAAAAAAAAAAull;
inline constexpr uint64_t kSupportedTxOpFlags = FI_COMPLETION | FI_INJECT | FI_INJECT_COMPLETE |
                                                FI_TRANSMIT_COMPLETE | FI_DELIVERY_COMPLETE |
                                                FI_MORE;
inline constexpr uint64_t kSupportedRxOpFlags = FI_COMPLETION | FI_MORE | FI_MULTI_RECV;

// The full fi_info for a port and an endpoint type (FI_EP_RDM, FI_EP_MSG
// or FI_EP_DGRAM; caps_of(type) less what costs), as fi_info with NULL hints
// shows it.  The caller frees it with fi_freeinfo.
fi_info* make_port_info(const PortFacts& port, uint32_t version, fi_ep_type type = FI_EP_RDM);

// The one fi_info of FI_PROV_ATTR_ONLY: defaults plus fabric_attr's
// prov_name and prov_version.
fi_info* make_prov_attr_only_info();

// Checks `offer` against `hints` as fi_getinfo(3) says.  Returns true if it
// matches; otherwise false with the first reason in *why.
bool info_matches(const fi_info* offer, const fi_info* hints, uint32_t version,
                  std::string* why);

// Narrows a matching offer to the hints: the requested primary caps and
// modifiers, requested values where the provider may return them.
void narrow_info(fi_info* offer, const fi_info* hints, uint32_t version);

// Writes an address into info->src_addr (source) or dest_addr, in the
// info's addr_format.  Returns 0 or -FI_ENOMEM.
int set_info_address(fi_info* info, bool source, const av::Address& address);
// Reads it back; nullopt when absent or malformed.
std::optional<av::Address> info_address(const fi_info* info, bool source);
// ep_attr->auth_key: the network key of a 4-byte key, else av::kNoAuthKey.
uint32_t endpoint_network_key(const uint8_t* key, size_t size);

}  // namespace ofi_dpdk::ofi
