// dpdk_limits.h: the provider's names, version and limits, as fi_getinfo
// reports them and the objects enforce them.
#pragma once

#include <rdma/fabric.h>

#include <cstddef>
#include <cstdint>

namespace ofi_dpdk::ofi {

inline constexpr const char* kProviderName = "dpdk";
inline constexpr const char* kFabricName = "dpdk";
inline constexpr uint32_t kProviderVersion = FI_VERSION(0, 1);
inline constexpr uint16_t kMaxEndpointsPerPort = 64;
// Transmit, and receive, contexts of one scalable endpoint (domain_attr
// max_ep_tx_ctx, max_ep_rx_ctx): any mix of the two fits a free port.
inline constexpr uint16_t kMaxEpContexts = kMaxEndpointsPerPort / 2;
inline constexpr uint16_t kAnyQueue = 0xFFFF;
inline constexpr size_t kIovLimit = 8;
// Peer groups (2.x): any 32-bit id but all ones, which with an all-ones
// index would be FI_ADDR_UNSPEC.
inline constexpr uint32_t kMaxGroupId = 0xFFFF'FFFEu;
inline constexpr size_t kQueueDepth = 1024;  // tx_attr->size and rx_attr->size
// fi_av(3) 2.x: a receive's source is an authorization key fi_addr.
#ifdef FI_AUTH_KEY
inline constexpr uint64_t kAuthKeyFlag = FI_AUTH_KEY;
#else
inline constexpr uint64_t kAuthKeyFlag = 0;
#endif
inline constexpr size_t kMaxMsgSize = size_t{1} << 30;  // ep_attr->max_msg_size
inline constexpr size_t kInjectSize = 4096;             // copied at the call
// FI_OPT_MIN_MULTI_RECV until the application sets it.
inline constexpr size_t kDefaultMinMultiRecv = 64;
// A CQ opened with attr.size 0: room for every operation of 64 endpoints
// at the advertised tx_attr/rx_attr size (1024).
inline constexpr size_t kDefaultCqSize = 65536;

}  // namespace ofi_dpdk::ofi
