#include "drivers/ofi/dpdk_attr.h"

#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>

#include "drivers/ofi/dpdk_limits.h"
#include "drivers/ofi/dpdk_params.h"
#include "drivers/ofi/dpdk_raw_enum.h"
#include "lib/av/address.h"
#include "lib/av/auth_key_table.h"
#include "lib/ip/udp4.h"
#include "lib/ip/udp6.h"
#include "ofi_dpdk_config.h"  // which libfabric features the headers have

namespace ofi_dpdk::ofi {
namespace {

// The mr_mode a pre-1.5 application understands.  FI_MR_SCALABLE needs no
// local registration, which is what the provider needs for messaging.
constexpr int kLegacyMrMode = 2;  // FI_MR_SCALABLE, without naming the 2.x-deprecated enum

void fill_defaults(fi_info* info) {
  // FI_TAGGED_DIRECTED_RECV narrows FI_DIRECTED_RECV, which is offered, to
  // tagged receives: granted when asked for, as its users do (fabtests 2.1
  // still takes it for an unknown bit when offered unasked).
  info->caps = (kPrimaryCaps & ~kTaggedDirectedRecvCap) | kModifierCaps | kFreeSecondaryCaps;
  info->mode = 0;
  info->addr_format = FI_FORMAT_UNSPEC;

  fi_tx_attr* tx = info->tx_attr;
  tx->caps = kTxCaps & ~FI_TRIGGER;  // secondary: only when asked for
  tx->mode = 0;
  tx->op_flags = 0;
  tx->msg_order = FI_ORDER_SAS;
  tx->comp_order = 0;
  tx->inject_size = 0;  // set per port
  tx->size = kQueueDepth;
  tx->iov_limit = kIovLimit;
  tx->rma_iov_limit = 1;

  fi_rx_attr* rx = info->rx_attr;
  // Secondary ones, and FI_TAGGED_DIRECTED_RECV (above), only when asked for.
  rx->caps = kRxCaps & ~(FI_SOURCE | FI_SOURCE_ERR | FI_RMA_EVENT | kTaggedDirectedRecvCap |
                         kTaggedMultiRecvCap | FI_TRIGGER);
  rx->mode = 0;
  rx->op_flags = 0;
  rx->msg_order = FI_ORDER_SAS;
  rx->comp_order = 0;
  rx->total_buffered_recv = 0;  // set per port
  rx->size = kQueueDepth;
  rx->iov_limit = kIovLimit;

  fi_ep_attr* ep = info->ep_attr;
  ep->type = FI_EP_RDM;
  ep->protocol = FI_PROTO_UNSPEC;
  ep->protocol_version = 1;
  ep->max_msg_size = 0;  // set per port
  ep->msg_prefix_size = 0;
  ep->max_order_raw_size = 0;
  ep->max_order_war_size = 0;
  ep->max_order_waw_size = 0;
  ep->mem_tag_format = kMemTagFormat;
  ep->tx_ctx_cnt = 1;
  ep->rx_ctx_cnt = 1;

  fi_domain_attr* d = info->domain_attr;
  d->threading = FI_THREAD_SAFE;
  d->control_progress = FI_PROGRESS_MANUAL;
  d->data_progress = FI_PROGRESS_MANUAL;
  d->resource_mgmt = FI_RM_ENABLED;
  d->av_type = FI_AV_TABLE;
  d->mr_mode = 0;
  d->mr_key_size = sizeof(uint64_t);
  d->cq_data_size = sizeof(uint64_t);
  d->cq_cnt = 256;
  d->ep_cnt = kMaxEndpointsPerPort;
  d->tx_ctx_cnt = kMaxEndpointsPerPort;
  d->rx_ctx_cnt = kMaxEndpointsPerPort;
  d->max_ep_tx_ctx = kMaxEpContexts;  // scalable endpoints (dpdk_sep.cc)
  d->max_ep_rx_ctx = kMaxEpContexts;
  d->max_ep_stx_ctx = 1;  // shared contexts an endpoint may be bound to
  d->max_ep_srx_ctx = 1;
  d->cntr_cnt = 1024;
  d->mr_iov_limit = 1;
  d->caps = FI_LOCAL_COMM | FI_REMOTE_COMM | kAvSecondaryCaps;
#if OFI_DPDK_HAVE_AV_USER_ID
  // fi_domain(3) 2.x: lets AVs be opened with FI_AV_USER_ID.
  d->caps |= FI_AV_USER_ID;
#endif
  d->mode = 0;
  d->max_err_data = 0;
  d->mr_cnt = 65536;
#if OFI_DPDK_HAVE_AV_AUTH_KEY
  d->max_ep_auth_key = av::kMaxAuthKeys;  // an endpoint enables with its AV's keys
#endif
#if OFI_DPDK_HAVE_MAX_GROUP_ID
  d->max_group_id = kMaxGroupId;  // frames carry a 32-bit group
#endif

  fi_fabric_attr* f = info->fabric_attr;
  f->name = strdup(kFabricName);
  f->prov_version = kProviderVersion;
  f->api_version = FI_VERSION(FI_MAJOR_VERSION, FI_MINOR_VERSION);
}

bool exceeds(size_t requested, size_t offered) {
  return requested > offered;
}

#define DPDK_REQUIRE(cond, text) \
  do {                           \
    if (!(cond)) {               \
      *why = text;               \
      return false;              \
    }                            \
  } while (0)

bool tx_matches(const fi_tx_attr* o, const fi_tx_attr* h, std::string* why) {
  DPDK_REQUIRE((h->caps & ~o->caps) == 0, "tx_attr->caps asks for capabilities it lacks");
  DPDK_REQUIRE((h->op_flags & ~kSupportedTxOpFlags) == 0, "tx_attr->op_flags unsupported");
  DPDK_REQUIRE((h->msg_order & ~o->msg_order) == 0, "tx_attr->msg_order not provided");
  DPDK_REQUIRE((h->comp_order & ~o->comp_order) == 0, "tx_attr->comp_order not provided");
  DPDK_REQUIRE(!exceeds(h->inject_size, o->inject_size), "tx_attr->inject_size too large");
  DPDK_REQUIRE(!exceeds(h->size, o->size), "tx_attr->size too large");
  DPDK_REQUIRE(!exceeds(h->iov_limit, o->iov_limit), "tx_attr->iov_limit too large");
  DPDK_REQUIRE(!exceeds(h->rma_iov_limit, o->rma_iov_limit), "tx_attr->rma_iov_limit too large");
  return true;
}

bool rx_matches(const fi_rx_attr* o, const fi_rx_attr* h, uint64_t type_caps, std::string* why) {
  DPDK_REQUIRE((h->caps & ~(kRxCaps & type_caps)) == 0,
               "rx_attr->caps asks for capabilities it lacks");
  DPDK_REQUIRE((h->op_flags & ~kSupportedRxOpFlags) == 0, "rx_attr->op_flags unsupported");
  DPDK_REQUIRE((h->msg_order & ~o->msg_order) == 0, "rx_attr->msg_order not provided");
  DPDK_REQUIRE((h->comp_order & ~o->comp_order) == 0, "rx_attr->comp_order not provided");
  DPDK_REQUIRE(!exceeds(h->total_buffered_recv, o->total_buffered_recv),
               "rx_attr->total_buffered_recv too large");
  DPDK_REQUIRE(!exceeds(h->size, o->size), "rx_attr->size too large");
  DPDK_REQUIRE(!exceeds(h->iov_limit, o->iov_limit), "rx_attr->iov_limit too large");
  return true;
}

bool endpoint_auth_key_acceptable(const uint8_t* key, size_t size) {
  return size == 0 || endpoint_network_key(key, size) != av::kNoAuthKey;
}

bool ep_matches(const fi_ep_attr* o, const fi_ep_attr* h, uint32_t version, std::string* why) {
  DPDK_REQUIRE(h->type == FI_EP_UNSPEC || h->type == o->type,
               o->type == FI_EP_RDM   ? "ep_attr->type is not FI_EP_RDM"
               : o->type == FI_EP_MSG ? "ep_attr->type is not FI_EP_MSG"
                                      : "ep_attr->type is not FI_EP_DGRAM");
  DPDK_REQUIRE(h->protocol == FI_PROTO_UNSPEC || h->protocol == o->protocol,
               "ep_attr->protocol is not ours");
  DPDK_REQUIRE(h->protocol_version <= o->protocol_version, "ep_attr->protocol_version too new");
  DPDK_REQUIRE(!exceeds(h->max_msg_size, o->max_msg_size), "ep_attr->max_msg_size too large");
  DPDK_REQUIRE(h->msg_prefix_size == 0, "ep_attr->msg_prefix_size: no prefix mode");
  DPDK_REQUIRE(!exceeds(h->max_order_raw_size, o->max_order_raw_size),
               "ep_attr->max_order_raw_size too large");
  DPDK_REQUIRE(!exceeds(h->max_order_war_size, o->max_order_war_size),
               "ep_attr->max_order_war_size too large");
  DPDK_REQUIRE(!exceeds(h->max_order_waw_size, o->max_order_waw_size),
               "ep_attr->max_order_waw_size too large");
  // Up to kMaxEpContexts each for a scalable endpoint, or FI_SHARED_CONTEXT
  // (dpdk_shared_ctx.cc).  Datagram and connected endpoints have one of each.
  const size_t contexts = o->type == FI_EP_RDM ? kMaxEpContexts : 1;
  DPDK_REQUIRE(h->tx_ctx_cnt <= contexts || h->tx_ctx_cnt == FI_SHARED_CONTEXT,
               "ep_attr->tx_ctx_cnt: at most 32 contexts (1 off FI_EP_RDM), or "
               "FI_SHARED_CONTEXT");
  DPDK_REQUIRE(h->rx_ctx_cnt <= contexts || h->rx_ctx_cnt == FI_SHARED_CONTEXT,
               "ep_attr->rx_ctx_cnt: at most 32 contexts (1 off FI_EP_RDM), or "
               "FI_SHARED_CONTEXT");
  // fi_endpoint(3): auth_key_size "is ignored unless the fabric is opened
  // with API version 1.5 or greater".
  if (FI_VERSION_GE(version, FI_VERSION(1, 5)))
    DPDK_REQUIRE(endpoint_auth_key_acceptable(h->auth_key, h->auth_key_size),
                 "ep_attr->auth_key: 4 bytes, a nonzero network key");
  return true;
}

// Manual progress is the default; automatic progress runs on a DPDK lcore
// or a thread (dpdk_auto_progress.cc) and is given to whoever asks.
bool progress_supported(const fi_progress& field) {
  const auto requested = raw_value(field);
  return requested == FI_PROGRESS_UNSPEC || requested == FI_PROGRESS_MANUAL ||
         requested == FI_PROGRESS_AUTO;
}

// domain_attr->auth_key (doc/address-vector.md): none, a 4-byte nonzero
// network key, or (2.x) FI_AV_AUTH_KEY with auth_key NULL.
bool auth_key_acceptable(const fi_domain_attr* h) {
  if (h->auth_key_size == 0) return true;
#if OFI_DPDK_HAVE_AV_AUTH_KEY
  if (h->auth_key_size == FI_AV_AUTH_KEY) return h->auth_key == nullptr;
#endif
  if (h->auth_key_size != av::kAuthKeySize || h->auth_key == nullptr) return false;
  uint32_t key;
  std::memcpy(&key, h->auth_key, sizeof(key));
  return key != av::kNoAuthKey;
}

bool domain_matches(const fi_domain_attr* o, const fi_domain_attr* h, uint32_t version,
                    std::string* why) {
  DPDK_REQUIRE(h->name == nullptr || std::strcmp(h->name, o->name) == 0,
               "domain_attr->name names another port");
  DPDK_REQUIRE(progress_supported(h->control_progress),
               "domain_attr->control_progress: only FI_PROGRESS_MANUAL or FI_PROGRESS_AUTO");
  DPDK_REQUIRE(progress_supported(h->data_progress),
               "domain_attr->data_progress: only FI_PROGRESS_MANUAL or FI_PROGRESS_AUTO");
  DPDK_REQUIRE(raw_value(h->av_type) == FI_AV_UNSPEC || raw_value(h->av_type) == FI_AV_TABLE ||
                   raw_value(h->av_type) == FI_AV_MAP,
               "domain_attr->av_type unknown");
  // mr_mode: the provider requires no bit of it, so whatever the
  // application supports is enough.
  DPDK_REQUIRE(!exceeds(h->mr_key_size, o->mr_key_size), "domain_attr->mr_key_size too large");
  DPDK_REQUIRE(!exceeds(h->cq_data_size, o->cq_data_size), "domain_attr->cq_data_size too large");
  DPDK_REQUIRE(!exceeds(h->cq_cnt, o->cq_cnt), "domain_attr->cq_cnt too large");
  DPDK_REQUIRE(!exceeds(h->ep_cnt, o->ep_cnt), "domain_attr->ep_cnt too large");
  DPDK_REQUIRE(!exceeds(h->tx_ctx_cnt, o->tx_ctx_cnt), "domain_attr->tx_ctx_cnt too large");
  DPDK_REQUIRE(!exceeds(h->rx_ctx_cnt, o->rx_ctx_cnt), "domain_attr->rx_ctx_cnt too large");
  DPDK_REQUIRE(!exceeds(h->max_ep_tx_ctx, o->max_ep_tx_ctx),
               "domain_attr->max_ep_tx_ctx too large");
  DPDK_REQUIRE(!exceeds(h->max_ep_rx_ctx, o->max_ep_rx_ctx),
               "domain_attr->max_ep_rx_ctx too large");
  DPDK_REQUIRE(!exceeds(h->max_ep_stx_ctx, o->max_ep_stx_ctx),
               "domain_attr->max_ep_stx_ctx: one shared transmit context per endpoint");
  DPDK_REQUIRE(!exceeds(h->max_ep_srx_ctx, o->max_ep_srx_ctx),
               "domain_attr->max_ep_srx_ctx: one shared receive context per endpoint");
  DPDK_REQUIRE(!exceeds(h->cntr_cnt, o->cntr_cnt), "domain_attr->cntr_cnt too large");
  DPDK_REQUIRE(!exceeds(h->mr_iov_limit, o->mr_iov_limit), "domain_attr->mr_iov_limit too large");
  DPDK_REQUIRE((h->caps & ~o->caps) == 0, "domain_attr->caps asks for capabilities it lacks");
  if (FI_VERSION_GE(version, FI_VERSION(1, 5)))  // ignored before 1.5, as in ep_attr
    DPDK_REQUIRE(auth_key_acceptable(h),
                 "domain_attr->auth_key: 4 bytes, a nonzero network key, or auth_key_size "
                 "FI_AV_AUTH_KEY with auth_key NULL");
#if OFI_DPDK_HAVE_AV_AUTH_KEY
  DPDK_REQUIRE(!exceeds(h->max_ep_auth_key, o->max_ep_auth_key),
               "domain_attr->max_ep_auth_key too large");
#endif
#if OFI_DPDK_HAVE_MAX_GROUP_ID
  DPDK_REQUIRE(h->max_group_id <= o->max_group_id, "domain_attr->max_group_id too large");
#endif
  DPDK_REQUIRE(!exceeds(h->max_err_data, o->max_err_data), "domain_attr->max_err_data too large");
  DPDK_REQUIRE(!exceeds(h->mr_cnt, o->mr_cnt), "domain_attr->mr_cnt too large");
  return true;
}

}  // namespace

fi_info* make_port_info(const PortFacts& port, uint32_t version, fi_ep_type type) {
  fi_info* info = fi_allocinfo();
  if (info == nullptr) return nullptr;
  fill_defaults(info);
  size_t max_msg_size = port.max_msg_size;
  if (type == FI_EP_DGRAM) {
    info->ep_attr->type = FI_EP_DGRAM;
    info->caps &= kDatagramCaps;
    info->tx_attr->caps &= kDatagramCaps;
    info->rx_attr->caps &= kDatagramCaps;
    // Datagrams are not resent: one lost leaves the next ones where they
    // land, so no order is promised (FI_ORDER_NONE, a name 2.x deprecates).
    info->tx_attr->msg_order = 0;
    info->rx_attr->msg_order = 0;
    info->tx_attr->rma_iov_limit = 0;
    info->ep_attr->mem_tag_format = kMemTagFormat;
    // (As Framer::encap_overhead: IPv6's headers where the port speaks it.)
    max_msg_size = std::min(max_msg_size, datagram_max_msg_size(port.udp6  ? ip::kUdp6Overhead
                                                                : port.udp ? ip::kUdp4Overhead
                                                                           : 0));
  } else if (type == FI_EP_MSG) {
    info->ep_attr->type = FI_EP_MSG;
    info->caps &= kConnectedCaps;
    info->tx_attr->caps &= kConnectedCaps;
    info->rx_attr->caps &= kConnectedCaps;
    info->domain_attr->caps &= ~kAvSecondaryCaps;
  }
  info->tx_attr->inject_size = std::min<size_t>(kInjectSize, max_msg_size);
  info->rx_attr->total_buffered_recv = port.unexpected_bytes;
  info->ep_attr->max_msg_size = max_msg_size;
  info->domain_attr->name = strdup(port.name.c_str());
  if (FI_VERSION_LT(version, FI_VERSION(1, 5)))
    info->domain_attr->mr_mode = kLegacyMrMode;  // an int: 2.x has no enum fi_mr_mode

  av::Address any_queue;
  std::memcpy(any_queue.mac, port.mac, 6);
  any_queue.queue = kAnyQueue;
  any_queue.ipv4 = port.ipv4;
  any_queue.ipv6 = port.ipv6;
  if (set_info_address(info, /*source=*/true, any_queue) != 0 ||
      info->fabric_attr->name == nullptr || info->domain_attr->name == nullptr) {
    fi_freeinfo(info);
    return nullptr;
  }
  return info;
}

int set_info_address(fi_info* info, bool source, const av::Address& address) {
  void*& slot = source ? info->src_addr : info->dest_addr;
  size_t& length = source ? info->src_addrlen : info->dest_addrlen;
  std::free(slot);
  slot = nullptr;
  length = 0;
  const std::vector<uint8_t> bytes = encode_address(info->addr_format, address);
  if (bytes.empty()) return -FI_EADDRNOTAVAIL;
  slot = std::malloc(bytes.size());
  if (slot == nullptr) return -FI_ENOMEM;
  std::memcpy(slot, bytes.data(), bytes.size());
  length = bytes.size();
  return 0;
}

std::optional<av::Address> info_address(const fi_info* info, bool source) {
  const void* slot = source ? info->src_addr : info->dest_addr;
  const size_t length = source ? info->src_addrlen : info->dest_addrlen;
  if (slot == nullptr) return std::nullopt;
  return decode_address(info->addr_format, slot, length);
}

fi_info* make_prov_attr_only_info() {
  fi_info* info = fi_allocinfo();
  if (info == nullptr) return nullptr;
  info->fabric_attr->prov_name = strdup(kProviderName);
  info->fabric_attr->prov_version = kProviderVersion;
  return info;
}

bool info_matches(const fi_info* o, const fi_info* h, uint32_t version, std::string* why) {
  if (h == nullptr) return true;
  const uint64_t requested_caps = h->caps;
  const uint64_t type_caps = caps_of(o->ep_attr->type);
  DPDK_REQUIRE((requested_caps & ~type_caps) == 0,
               o->ep_attr->type == FI_EP_RDM
                   ? "hints->caps asks for capabilities the provider lacks"
                   : "hints->caps asks for capabilities this endpoint type lacks");
  DPDK_REQUIRE(!(requested_caps & FI_SOURCE_ERR) || (requested_caps & FI_SOURCE),
               "hints->caps: FI_SOURCE_ERR must be paired with FI_SOURCE");
  // fi_getinfo(3): FI_RMA_EVENT "requires that FI_REMOTE_READ and/or
  // FI_REMOTE_WRITE be enabled" (naming no modifier enables them all).
  const uint64_t modifiers = requested_caps & kModifierCaps;
  DPDK_REQUIRE(!(requested_caps & FI_RMA_EVENT) || modifiers == 0 ||
                   (modifiers & (FI_REMOTE_READ | FI_REMOTE_WRITE)),
               "hints->caps asks for FI_RMA_EVENT without FI_REMOTE_READ or FI_REMOTE_WRITE");
  // Modes: the provider requires none, so any hints->mode is fine.
  DPDK_REQUIRE(address_format_supported(h->addr_format),
               "hints->addr_format is none of FI_FORMAT_UNSPEC (native), FI_ADDR_STR, "
               "FI_SOCKADDR_IN and FI_SOCKADDR");
  if (h->tx_attr != nullptr && !tx_matches(o->tx_attr, h->tx_attr, why)) return false;
  if (h->rx_attr != nullptr && !rx_matches(o->rx_attr, h->rx_attr, type_caps, why)) return false;
  if (h->ep_attr != nullptr && !ep_matches(o->ep_attr, h->ep_attr, version, why)) return false;
  if (h->domain_attr != nullptr && !domain_matches(o->domain_attr, h->domain_attr, version, why))
    return false;
  if (h->fabric_attr != nullptr && h->fabric_attr->name != nullptr)
    DPDK_REQUIRE(std::strcmp(h->fabric_attr->name, kFabricName) == 0,
                 "fabric_attr->name is not \"dpdk\"");
  return true;
}

void narrow_info(fi_info* o, const fi_info* h, uint32_t version) {
  if (h == nullptr) return;
  if (h->caps != 0) {
    uint64_t primary = h->caps & kPrimaryCaps;
    uint64_t modifiers = h->caps & kModifierCaps;
    // No modifier named means all of them (fi_getinfo(3)).
    if (modifiers == 0) modifiers = kModifierCaps;
    // Only the primary caps asked for: "a provider must enable support for
    // only those primary capabilities which were selected" (fi_getinfo(3)).
    o->caps = (primary | modifiers | (h->caps & kSecondaryCaps) | kFreeSecondaryCaps) &
              caps_of(o->ep_attr->type);
    o->tx_attr->caps = o->caps & kTxCaps;
    o->rx_attr->caps = o->caps & kRxCaps;
    // The domain cap FI_AV_USER_ID goes with the primary cap, or comes when
    // asked for as a domain cap.
    if (!(o->caps & FI_AV_USER_ID) &&
        (h->domain_attr == nullptr || !(h->domain_attr->caps & FI_AV_USER_ID)))
      o->domain_attr->caps &= ~FI_AV_USER_ID;
  }
  // fi_endpoint(3): a requested tag format is kept (we match every bit).
  if (!(o->caps & FI_TAGGED))
    o->ep_attr->mem_tag_format = 0;
  else if (h->ep_attr != nullptr && h->ep_attr->mem_tag_format != 0)
    o->ep_attr->mem_tag_format = h->ep_attr->mem_tag_format;
  // The format asked for (FI_SOCKADDR: ours is FI_SOCKADDR_IN).  getinfo
  // passed over ports that cannot give it (no IPv4 address).
  if (h->addr_format != FI_FORMAT_UNSPEC && o->addr_format != h->addr_format) {
    const auto source = info_address(o, true);
    o->addr_format =
        h->addr_format == FI_SOCKADDR ? static_cast<uint32_t>(FI_SOCKADDR_IN) : h->addr_format;
    if (source) set_info_address(o, true, *source);
  }
  if (h->ep_attr != nullptr) {
    // The counts a scalable endpoint opened from this info gets.
    if (h->ep_attr->tx_ctx_cnt != 0) o->ep_attr->tx_ctx_cnt = h->ep_attr->tx_ctx_cnt;
    if (h->ep_attr->rx_ctx_cnt != 0) o->ep_attr->rx_ctx_cnt = h->ep_attr->rx_ctx_cnt;
  }
  if (h->tx_attr != nullptr) o->tx_attr->op_flags = h->tx_attr->op_flags;
  if (h->rx_attr != nullptr) o->rx_attr->op_flags = h->rx_attr->op_flags;
  if (h->domain_attr != nullptr) {
    fi_domain_attr* d = o->domain_attr;
    if (h->domain_attr->threading != FI_THREAD_UNSPEC) d->threading = h->domain_attr->threading;
    if (h->domain_attr->resource_mgmt != FI_RM_UNSPEC)
      d->resource_mgmt =
          h->domain_attr->resource_mgmt == FI_RM_DISABLED ? FI_RM_ENABLED : d->resource_mgmt;
    if (h->domain_attr->control_progress != FI_PROGRESS_UNSPEC)
      d->control_progress = h->domain_attr->control_progress;
    if (h->domain_attr->data_progress != FI_PROGRESS_UNSPEC)
      d->data_progress = h->domain_attr->data_progress;
    if (h->domain_attr->av_type == FI_AV_MAP) d->av_type = FI_AV_MAP;  // behaves as TABLE
    // The requested key goes to fi_domain with the info.  Without memory
    // for the copy the size stays and the key is NULL: fi_domain refuses it.
    if (FI_VERSION_GE(version, FI_VERSION(1, 5)) && h->domain_attr->auth_key_size != 0) {
      std::free(d->auth_key);
      d->auth_key = nullptr;
      d->auth_key_size = h->domain_attr->auth_key_size;
      if (h->domain_attr->auth_key != nullptr && d->auth_key_size == av::kAuthKeySize) {
        d->auth_key = static_cast<uint8_t*>(std::malloc(av::kAuthKeySize));
        if (d->auth_key != nullptr)
          std::memcpy(d->auth_key, h->domain_attr->auth_key, av::kAuthKeySize);
      }
    }
    const int legacy = h->domain_attr->mr_mode;
    if (legacy == 1 /*FI_MR_BASIC*/ || legacy == kLegacyMrMode)
      d->mr_mode = legacy;
    else if (FI_VERSION_GE(version, FI_VERSION(1, 5)))
      // We need no bit of mr_mode.  By default an application that accepts
      // provider keys gets them (random: a peer cannot guess one), and one
      // that can give virtual addresses for RMA does, as the field's
      // providers do (programs that offer FI_MR_PROV_KEY and register every
      // region with requested key 0 are common).  FI_DPDK_MR_MODE=minimal
      // clears both, as fi_mr(3) has a provider do with bits it does not
      // need: requested keys, offsets.
      d->mr_mode = params().mr_mode_minimal ? 0 : legacy & (FI_MR_PROV_KEY | FI_MR_VIRT_ADDR);
  }
}

uint32_t endpoint_network_key(const uint8_t* key, size_t size) {
  if (size != av::kAuthKeySize || key == nullptr) return av::kNoAuthKey;
  uint32_t value;
  std::memcpy(&value, key, sizeof(value));
  return value;
}

}  // namespace ofi_dpdk::ofi
