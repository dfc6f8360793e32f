// steering_rule.h: the rte_flow rules that send an endpoint's frames to
// its own queue, built in this one place.  An endpoint on queue q is
// reached three ways, each matched by a rule of its own kind:
//
//   kEtherType  our EtherType, the FrameHeader's dst_queue (2 bytes at a
//               fixed offset, a RAW item) equal to q;
//   kUdp4       IPv4 / UDP to destination port `udp_port_base` + q;
//   kUdp6       IPv6 / UDP to the same port.
//
// A device takes some kinds and refuses others (net_tap has no RAW item):
// each is validated and created on its own, and frames of a kind with no
// rule land on whichever queue the device picks, where the software
// demultiplexer still finds their endpoint.
#pragma once

#include <rte_flow.h>

#include <cstdint>
#include <string>

namespace ofi_dpdk::net {

enum class RuleKind : uint8_t { kEtherType, kUdp4, kUdp6 };
inline constexpr int kRuleKinds = 3;
// "EtherType", "UDP/IPv4", "UDP/IPv6": for logs.
const char* rule_kind_name(RuleKind kind);
// The kinds as bits (1 << kind), as fi_dpdk.h's FI_DPDK_RULE_* give them.
inline constexpr uint32_t rule_bit(RuleKind kind) {
  return 1u << static_cast<unsigned>(kind);
}

// What a rule matches and where it sends it; the rte_flow items point into
// the object itself, so it stays where it was made.
class SteeringRule {
 public:
  struct Match {
    RuleKind kind = RuleKind::kEtherType;
    uint16_t ether_type = 0;     // kEtherType
    uint16_t udp_port_base = 0;  // kUdp4, kUdp6
    uint16_t endpoint_queue = 0;
  };
  SteeringRule(const Match& match, uint16_t hw_queue);
  SteeringRule(const SteeringRule&) = delete;
  SteeringRule& operator=(const SteeringRule&) = delete;

  // rte_flow_validate; false with the device's reason in *error.
  bool validate(uint16_t port_id, std::string* error) const;
  // Validates, then creates (some PMDs validate what they then fail to
  // create: only a created rule counts).  nullptr with the reason in *error.
  rte_flow* create(uint16_t port_id, std::string* error) const;

 private:
  rte_flow_attr attr_{};
  rte_flow_item_eth eth_spec_{};
  rte_flow_item_eth eth_mask_{};
  uint16_t queue_be_ = 0;
  uint16_t all_ones_ = 0xffff;
  rte_flow_item_raw raw_spec_{};
  rte_flow_item_raw raw_mask_{};
  rte_flow_item_udp udp_spec_{};
  rte_flow_item_udp udp_mask_{};
  rte_flow_item pattern_[4] = {};
  rte_flow_action_queue queue_{};
  rte_flow_action actions_[2] = {};
};

}  // namespace ofi_dpdk::net
