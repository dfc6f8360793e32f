// dpdk_attr.h: the fi_info the provider offers for one port, and the rules
// of fi_getinfo(3) that narrow it to an application's hints.  No DPDK here,
// so the matching rules are unit-tested case by case.
#pragma once

#include <rdma/fabric.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "lib/av/address.h"
#include "lib/ip/ipv4.h"
#include "lib/ip/ipv6.h"
#include "lib/proto/wire.h"

namespace ofi_dpdk::ofi {

// What getinfo knows of a port.
struct PortFacts {
  std::string name;  // the ethdev name: the domain name
  uint8_t mac[6];
  size_t max_msg_size;             // ep_attr->max_msg_size
  size_t unexpected_bytes;         // rx_attr->total_buffered_recv
  uint32_t ipv4 = 0;               // its IPv4 address (FI_DPDK_PORT_ADDR); 0: none
  std::array<uint8_t, 16> ipv6{};  // its IPv6 address; all zero: none
  bool udp = false;                // reaches peers in UDP/IPv4 (port_speaks_udp)
  bool udp6 = false;               // reaches peers in UDP/IPv6
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
// FI_TRIGGER: threshold-triggered operations (dpdk_trigger.cc), granted when
// asked for.
inline constexpr uint64_t kSecondaryCaps = FI_SOURCE | FI_LOCAL_COMM | FI_REMOTE_COMM |
                                           FI_RMA_EVENT | FI_SOURCE_ERR | FI_MULTI_RECV |
                                           kAvSecondaryCaps | kTaggedMultiRecvCap | FI_TRIGGER;
inline constexpr uint64_t kAllCaps = kPrimaryCaps | kModifierCaps | kSecondaryCaps;
// Reported without being asked for: costless secondary capabilities.
// (FI_TAGGED_MULTI_RECV, libfabric 2.x, only when asked for: fabtests 2.1
// still takes it for an unknown bit when offered unasked.)
inline constexpr uint64_t kFreeSecondaryCaps =
    FI_LOCAL_COMM | FI_REMOTE_COMM | FI_MULTI_RECV | kAvSecondaryCaps;
inline constexpr uint64_t kTxCaps = FI_MSG | FI_TAGGED | FI_RMA | FI_ATOMIC | FI_SEND | FI_READ |
                                    FI_WRITE | FI_NAMED_RX_CTX | FI_TRIGGER;
inline constexpr uint64_t kRxCaps =
    FI_MSG | FI_TAGGED | FI_RMA | FI_ATOMIC | FI_RECV | FI_REMOTE_READ | FI_REMOTE_WRITE |
    FI_SOURCE | FI_DIRECTED_RECV | FI_RMA_EVENT | FI_SOURCE_ERR | FI_MULTI_RECV |
    kTaggedDirectedRecvCap | kTaggedMultiRecvCap | FI_TRIGGER;
// FI_EP_DGRAM (lib/proto/datagram.cc): messages, tagged or not, one frame
// each; no RMA, no atomics, no scalable endpoints, no events at the target.
inline constexpr uint64_t kDatagramCaps =
    FI_MSG | FI_TAGGED | FI_SEND | FI_RECV | FI_DIRECTED_RECV | kTaggedDirectedRecvCap |
    kAvPrimaryCaps | FI_SOURCE | FI_SOURCE_ERR | FI_MULTI_RECV | FI_LOCAL_COMM | FI_REMOTE_COMM |
    kAvSecondaryCaps | kTaggedMultiRecvCap;
// A datagram's largest payload: what one frame carries on every port and
// path, a standard 1500-byte Ethernet payload less our header (104 bytes),
// and on a port that speaks UDP (FI_DPDK_ENCAP) less IPv4 and UDP's too.
inline constexpr size_t kDatagramMaxMsgSize = 1500 - sizeof(wire::FrameHeader);
inline constexpr size_t datagram_max_msg_size(size_t encap_overhead) {
  return kDatagramMaxMsgSize - encap_overhead;
}
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
bool info_matches(const fi_info* offer, const fi_info* hints, uint32_t version, std::string* why);

// Narrows a matching offer to the hints: the requested primary caps and
// modifiers, requested values where the provider may return them.
void narrow_info(fi_info* offer, const fi_info* hints, uint32_t version);

// Writes an address into info->src_addr (source) or dest_addr, in the
// info's addr_format.  Returns 0 or -FI_ENOMEM.
int set_info_address(fi_info* info, bool source, const av::Address& address);
// Reads it back; nullopt when absent or malformed.
std::optional<av::Address> info_address(const fi_info* info, bool source);
// dpdk_addr_format.cc: the address formats.  An endpoint's service port
// (FI_SOCKADDR_IN) is FI_DPDK_PORT_BASE + its queue; 0 is any queue.
uint16_t service_port(uint16_t queue);
// The queue of a service port (port - base, modulo 65536: a port outside
// base to base + 63 names a queue no endpoint has); kAnyQueue for 0.
std::optional<uint16_t> queue_of_service_port(uint16_t port);
// A service string: a queue number below kMaxEndpointsPerPort, or a
// service port; nullopt for anything else.
std::optional<uint16_t> parse_service_queue(const char* service);
// A node's IPv4 address (host order): a dotted quad, or a host name the
// system resolves to one (/etc/hosts, DNS); nullopt when neither.
std::optional<uint32_t> host_ipv4(const char* node);
// The same for IPv6: its text form, or a host name that resolves to one.
std::optional<ip::Ipv6> host_ipv6(const char* node);
// Sets address->ipv4, else address->ipv6, from a node (host_ipv4 first);
// false when the node is neither.
bool name_by_host(const char* node, av::Address* address);
// Native (FI_FORMAT_UNSPEC), FI_ADDR_STR, FI_SOCKADDR_IN, FI_SOCKADDR_IN6,
// and FI_SOCKADDR holding either (an array of them, in fi_av_insert, is of
// sockaddr_in).
bool address_format_supported(uint32_t format);
bool is_sockaddr_format(uint32_t format);
// An address's bytes in `format` (FI_ADDR_STR: the string and its NUL);
// empty when the format cannot carry it (a sockaddr for an address with no
// IP address of its family).
std::vector<uint8_t> encode_address(uint32_t format, const av::Address& address);
// Reads one; nullopt when malformed or of another format.  A sockaddr's
// address has its ipv4 (or ipv6) and queue set and a zero MAC (not yet
// resolved); an IPv4-mapped IPv6 address is taken as its IPv4 address.
std::optional<av::Address> decode_address(uint32_t format, const void* in, size_t length);
// The size of one address in an array of them (fi_av_insert), for the
// formats that are not strings.
size_t address_size(uint32_t format);
// fi_av_straddr's text: fi_dpdk://..., fi_sockaddr_in://A.B.C.D:PORT or
// fi_sockaddr_in6://[IPV6]:PORT.
std::string address_string(uint32_t format, const av::Address& address);
// encode_address into a caller's buffer of *length bytes, truncated to it;
// *length becomes the full size.  0, -FI_ETOOSMALL, or -FI_EADDRNOTAVAIL
// when the format cannot carry the address.
int write_address(uint32_t format, const av::Address& address, void* out, size_t* length);
// ep_attr->auth_key: the network key of a 4-byte key, else av::kNoAuthKey.
uint32_t endpoint_network_key(const uint8_t* key, size_t size);

}  // namespace ofi_dpdk::ofi
