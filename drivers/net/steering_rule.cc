// steering_rule.cc: the rte_flow patterns of steering_rule.h.
#include "drivers/net/steering_rule.h"

#include <rte_byteorder.h>

#include <cstddef>

#include "lib/proto/wire.h"

namespace ofi_dpdk::net {
namespace {

// The FrameHeader's dst_queue, 2 bytes at this offset after the Ethernet
// header.
constexpr uint32_t kDstQueueOffset = offsetof(wire::FrameHeader, dst_queue);

std::string reason(const char* call, const rte_flow_error& error, const char* fallback) {
  return std::string(call) + ": " + (error.message != nullptr ? error.message : fallback);
}

}  // namespace

const char* rule_kind_name(RuleKind kind) {
  switch (kind) {
    case RuleKind::kEtherType:
      return "EtherType";
    case RuleKind::kUdp4:
      return "UDP/IPv4";
    case RuleKind::kUdp6:
      return "UDP/IPv6";
  }
  return "?";
}

SteeringRule::SteeringRule(const Match& match, uint16_t hw_queue) {
  attr_.ingress = 1;
  queue_.index = hw_queue;
  actions_[0] = {RTE_FLOW_ACTION_TYPE_QUEUE, &queue_};
  actions_[1].type = RTE_FLOW_ACTION_TYPE_END;
  if (match.kind == RuleKind::kEtherType) {
    eth_spec_.hdr.ether_type = rte_cpu_to_be_16(match.ether_type);
    eth_mask_.hdr.ether_type = 0xffff;
    queue_be_ = rte_cpu_to_be_16(match.endpoint_queue);
    raw_spec_.relative = 1;
    raw_spec_.offset = kDstQueueOffset;
    raw_spec_.length = sizeof(queue_be_);
    raw_spec_.pattern = reinterpret_cast<const uint8_t*>(&queue_be_);
    raw_mask_ = raw_spec_;
    raw_mask_.offset = static_cast<int32_t>(0xffffffff);
    raw_mask_.pattern = reinterpret_cast<const uint8_t*>(&all_ones_);
    pattern_[0] = {RTE_FLOW_ITEM_TYPE_ETH, &eth_spec_, nullptr, &eth_mask_};
    pattern_[1] = {RTE_FLOW_ITEM_TYPE_RAW, &raw_spec_, nullptr, &raw_mask_};
    pattern_[2].type = RTE_FLOW_ITEM_TYPE_END;
    return;
  }
  // Any Ethernet and IP header: the destination port alone names the
  // endpoint (the frame reached this port's MAC and, by the time a device
  // steers it, the kernel or the wire checked nothing else we need).
  udp_spec_.hdr.dst_port = rte_cpu_to_be_16(uint16_t(match.udp_port_base + match.endpoint_queue));
  udp_mask_.hdr.dst_port = 0xffff;
  pattern_[0].type = RTE_FLOW_ITEM_TYPE_ETH;
  pattern_[1].type =
      match.kind == RuleKind::kUdp4 ? RTE_FLOW_ITEM_TYPE_IPV4 : RTE_FLOW_ITEM_TYPE_IPV6;
  pattern_[2] = {RTE_FLOW_ITEM_TYPE_UDP, &udp_spec_, nullptr, &udp_mask_};
  pattern_[3].type = RTE_FLOW_ITEM_TYPE_END;
}

bool SteeringRule::validate(uint16_t port_id, std::string* error) const {
  rte_flow_error flow_error{};
  if (rte_flow_validate(port_id, &attr_, pattern_, actions_, &flow_error) == 0) return true;
  *error = reason("rte_flow_validate", flow_error, "refused");
  return false;
}

rte_flow* SteeringRule::create(uint16_t port_id, std::string* error) const {
  if (!validate(port_id, error)) return nullptr;
  rte_flow_error flow_error{};
  rte_flow* flow = rte_flow_create(port_id, &attr_, pattern_, actions_, &flow_error);
  if (flow == nullptr) *error = reason("rte_flow_create", flow_error, "failed");
  return flow;
}

}  // namespace ofi_dpdk::net
