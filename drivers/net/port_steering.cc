// port_steering.cc: which queue pair an endpoint's frames arrive on
// (Port::bind_endpoint_queue): rte_flow rules per endpoint queue where the
// device takes them (probed at start, rule_kinds_taken), the RSS the device
// hashes with where it does not (read_rss: key and redirection table, for
// lib/ip/rss.h to predict), the sender's queue on a looping net_ring, or
// one queue pair and software demultiplexing.
#include <rte_ethdev.h>
#include <rte_flow.h>
#include <rte_version.h>

#include <cstdio>
#include <iterator>
#include <string>
#include <vector>

#include "drivers/net/port.h"

namespace ofi_dpdk::net {

bool Port::read_rss(std::string* error) {
  rte_eth_dev_info info{};
  if (rte_eth_dev_info_get(port_id_, &info) != 0 || queue_pairs_ < 2) {
    *error = name_ + ": RSS needs a device with several queues";
    return false;
  }
  if ((info.flow_type_rss_offloads & RTE_ETH_RSS_NONFRAG_IPV4_UDP) == 0 ||
      (info.flow_type_rss_offloads & RTE_ETH_RSS_NONFRAG_IPV6_UDP) == 0) {
    char offloads[24];
    std::snprintf(offloads, sizeof offloads, "%#llx",
                  static_cast<unsigned long long>(info.flow_type_rss_offloads));
    *error =
        name_ + ": the device does not hash UDP over IPv4 and IPv6 (RSS offloads " + offloads + ")";
    return false;
  }
  ip::RssConfig rss;
  rss.key.assign(info.hash_key_size != 0 ? info.hash_key_size : 40, 0);
  rte_eth_rss_conf conf{};
  conf.rss_key = rss.key.data();
  conf.rss_key_len = static_cast<uint8_t>(rss.key.size());
  if (const int ret = rte_eth_dev_rss_hash_conf_get(port_id_, &conf); ret != 0) {
    *error = name_ + ": rte_eth_dev_rss_hash_conf_get: " + rte_strerror(-ret);
    return false;
  }
  rss.key.resize(conf.rss_key_len);
  // What it hashes now, and how: the predictions assume Toeplitz over both
  // UDP tuples.
  if ((conf.rss_hf & RTE_ETH_RSS_NONFRAG_IPV4_UDP) == 0 ||
      (conf.rss_hf & RTE_ETH_RSS_NONFRAG_IPV6_UDP) == 0) {
    *error = name_ + ": the device's RSS does not hash UDP over IPv4 and IPv6 as configured";
    return false;
  }
#if RTE_VERSION >= RTE_VERSION_NUM(23, 11, 0, 0)
  if (conf.algorithm != RTE_ETH_HASH_FUNCTION_DEFAULT &&
      conf.algorithm != RTE_ETH_HASH_FUNCTION_TOEPLITZ) {
    *error = name_ + ": the device's RSS hash is not Toeplitz (function " +
             std::to_string(static_cast<int>(conf.algorithm)) + ")";
    return false;
  }
#endif
  const uint16_t size = info.reta_size;
  std::vector<rte_eth_rss_reta_entry64> groups((size + RTE_ETH_RETA_GROUP_SIZE - 1) /
                                               RTE_ETH_RETA_GROUP_SIZE);
  for (auto& group : groups) group.mask = ~uint64_t{0};
  const int ret = size == 0 ? -ENOTSUP : rte_eth_dev_rss_reta_query(port_id_, groups.data(), size);
  if (ret != 0) {
    *error = name_ + ": rte_eth_dev_rss_reta_query(" + std::to_string(size) +
             " entries): " + rte_strerror(-ret);
    return false;
  }
  for (uint16_t i = 0; i < size; ++i)
    rss.reta.push_back(groups[i / RTE_ETH_RETA_GROUP_SIZE].reta[i % RTE_ETH_RETA_GROUP_SIZE]);
  if (!rss.usable()) {
    *error = name_ + ": an RSS key of " + std::to_string(rss.key.size()) +
             " bytes and a table of " + std::to_string(size) +
             " entries: not a configuration rss.h can predict";
    return false;
  }
  rss_ = std::move(rss);
  return true;
}

uint32_t Port::wanted_rule_kinds() const {
  uint32_t kinds = rule_bit(RuleKind::kEtherType);
  if (config_.udp4) kinds |= rule_bit(RuleKind::kUdp4);
  if (config_.udp6) kinds |= rule_bit(RuleKind::kUdp6);
  return kinds;
}

SteeringRule::Match Port::rule_match(RuleKind kind, uint16_t endpoint_queue) const {
  return {kind, ether_type_, config_.udp_port_base, endpoint_queue};
}

uint32_t Port::rule_kinds_taken(uint32_t kinds, bool create, std::string* refused) {
  uint32_t taken = 0;
  for (int k = 0; k < kRuleKinds; ++k) {
    const RuleKind kind = RuleKind(k);
    if ((kinds & rule_bit(kind)) == 0) continue;
    const SteeringRule rule(rule_match(kind, 1), 1);
    std::string error;
    bool ok = false;
    if (!create) {
      ok = rule.validate(port_id_, &error);
    } else if (rte_flow* probe = rule.create(port_id_, &error)) {
      rte_flow_error flow_error{};
      rte_flow_destroy(port_id_, probe, &flow_error);
      ok = true;
    }
    if (ok)
      taken |= rule_bit(kind);
    else
      *refused += std::string(refused->empty() ? "" : "; ") + rule_kind_name(kind) + ": " + error;
  }
  return taken;
}

uint32_t Port::endpoint_rule_kinds(uint16_t endpoint_queue) const {
  if (endpoint_queue >= std::size(endpoint_rules_)) return 0;
  uint32_t kinds = 0;
  for (int k = 0; k < kRuleKinds; ++k)
    if (endpoint_rules_[endpoint_queue][k] != nullptr) kinds |= rule_bit(RuleKind(k));
  return kinds;
}

uint16_t Port::bind_endpoint_queue(uint16_t endpoint_queue, std::string* refused) {
  refused->clear();
  if (steering_ == Steering::kSoftware) return 0;
  // RSS: the queue the endpoint's frames are steered to by the source
  // ports it names to its peers (lib/ip/rss.h).
  if (steering_ == Steering::kRss || steering_ == Steering::kSender)
    return endpoint_queue % queue_pairs_;
  unbind_endpoint_queue(endpoint_queue);  // a queue bound twice keeps one set of rules
  if (endpoint_queue >= queue_pairs_ || endpoint_queue >= std::size(endpoint_rules_)) {
    *refused = "queue " + std::to_string(endpoint_queue) + " is beyond the device's " +
               std::to_string(queue_pairs_) + " queue pairs";
    return 0;
  }
  for (int k = 0; k < kRuleKinds; ++k) {
    const RuleKind kind = RuleKind(k);
    if ((rule_kinds_ & rule_bit(kind)) == 0) continue;
    const SteeringRule rule(rule_match(kind, endpoint_queue), endpoint_queue);
    std::string error;
    endpoint_rules_[endpoint_queue][k] = rule.create(port_id_, &error);
    if (endpoint_rules_[endpoint_queue][k] == nullptr)
      *refused += std::string(refused->empty() ? "" : "; ") + rule_kind_name(kind) + ": " + error;
  }
  return endpoint_queue;
}

void Port::unbind_endpoint_queue(uint16_t endpoint_queue) {
  if (steering_ != Steering::kFlow || endpoint_queue >= std::size(endpoint_rules_)) return;
  for (rte_flow*& rule : endpoint_rules_[endpoint_queue]) {
    if (rule == nullptr) continue;
    rte_flow_error flow_error{};
    rte_flow_destroy(port_id_, rule, &flow_error);
    rule = nullptr;
  }
}

}  // namespace ofi_dpdk::net
