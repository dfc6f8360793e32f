#include "drivers/net/port.h"

#include <rte_errno.h>
#include <rte_ethdev.h>
#include <rte_flow.h>
#include <rte_mbuf.h>
#include <rte_mempool.h>

#include <algorithm>
#include <charconv>
#include <atomic>
#include <cerrno>
#include <cstring>

#include "drivers/net/fault_injector.h"
#include "drivers/net/mbuf_handoff.h"
#include "lib/proto/wire.h"

namespace ofi_dpdk::net {
namespace {

std::atomic<uint32_t> g_pool_serial{0};

// The frame header's dst_queue, 2 bytes at this offset after the Ethernet
// header, is what an rte_flow rule matches to pick an endpoint's queue.
constexpr uint32_t kDstQueueOffset = offsetof(wire::FrameHeader, dst_queue);

}  // namespace

// One frame carries the MTU's worth after the Ethernet header, bounded by
// what a default mbuf holds.
uint32_t frame_payload_for_mtu(uint16_t mtu) {
  const uint32_t room = RTE_MBUF_DEFAULT_BUF_SIZE - RTE_PKTMBUF_HEADROOM -
                        static_cast<uint32_t>(sizeof(wire::EtherHeader));
  return std::min<uint32_t>(mtu, room) - static_cast<uint32_t>(sizeof(wire::FrameHeader));
}

std::vector<uint16_t> available_ports() {
  std::vector<uint16_t> ports;
  uint16_t port_id;
  RTE_ETH_FOREACH_DEV(port_id) ports.push_back(port_id);
  return ports;
}

std::optional<uint16_t> find_port(std::string_view id_or_name) {
  uint16_t port_id = 0;
  auto [end, err] = std::from_chars(id_or_name.data(), id_or_name.data() + id_or_name.size(), port_id);
  if (err == std::errc() && end == id_or_name.data() + id_or_name.size())
    return rte_eth_dev_is_valid_port(port_id) ? std::optional(port_id) : std::nullopt;
  const std::string name(id_or_name);
  if (rte_eth_dev_get_port_by_name(name.c_str(), &port_id) == 0) return port_id;
  return std::nullopt;
}

bool describe_port(uint16_t port_id, PortDescription* out) {
  if (!rte_eth_dev_is_valid_port(port_id)) return false;
  char name[RTE_ETH_NAME_MAX_LEN] = {};
  if (rte_eth_dev_get_name_by_port(port_id, name) != 0) return false;
  rte_ether_addr mac;
  if (rte_eth_macaddr_get(port_id, &mac) != 0) return false;
  uint16_t mtu = RTE_ETHER_MTU;
  rte_eth_dev_get_mtu(port_id, &mtu);
  out->port_id = port_id;
  out->name = name;
  std::memcpy(out->mac, mac.addr_bytes, 6);
  out->max_frame_payload = frame_payload_for_mtu(mtu);
  return true;
}

const char* steering_name(Steering steering) {
  return steering == Steering::kFlow ? "rte_flow" : "software";
}

int Port::open(uint16_t port_id, const PortConfig& config,
               std::unique_ptr<Port>* out, std::string* error) {
  if (!rte_eth_dev_is_valid_port(port_id)) {
    *error = "port " + std::to_string(port_id) + " does not exist";
    return -ENODEV;
  }
  std::unique_ptr<Port> port(new Port());
  port->port_id_ = port_id;
  port->config_ = config;
  port->ether_type_ = config.ether_type;
  char name[RTE_ETH_NAME_MAX_LEN] = {};
  rte_eth_dev_get_name_by_port(port_id, name);
  port->name_ = name;

  rte_ether_addr mac;
  if (rte_eth_macaddr_get(port_id, &mac) != 0) {
    *error = port->name_ + ": no MAC address";
    return -ENODEV;
  }
  std::memcpy(port->mac_, mac.addr_bytes, 6);

  const std::string pool_name =
      "ofidpdk" + std::to_string(port_id) + "_" + std::to_string(g_pool_serial++);
  port->pool_ = rte_pktmbuf_pool_create(pool_name.c_str(), config.mbufs, 256, 0,
                                        RTE_MBUF_DEFAULT_BUF_SIZE,
                                        rte_eth_dev_socket_id(port_id));
  if (port->pool_ == nullptr) {
    *error = port->name_ + ": cannot create a pool of " +
             std::to_string(config.mbufs) + " mbufs: " + rte_strerror(rte_errno);
    return -ENOMEM;
  }

  rte_eth_dev_info info;
  if (int ret = rte_eth_dev_info_get(port_id, &info); ret != 0) {
    *error = port->name_ + ": rte_eth_dev_info_get failed";
    return ret;
  }

  const uint16_t wanted = std::max<uint16_t>(
      1, std::min({config.queues_wanted, info.max_rx_queues, info.max_tx_queues}));
  const bool try_flow = config.steering != SteeringRequest::kSoftware && wanted > 1;
  int ret = port->configure(try_flow ? wanted : 1, error);
  if (ret == -EBUSY) {
    // A DPDK program that started the port itself keeps its set-up; we share
    // its queue pair 0 with software steering (users of kind 2 in design.md).
    port->steering_ = Steering::kSoftware;
    port->queue_pairs_ = 1;
    port->description_ = port->name_ + ": started by the host program; sharing "
                         "queue pair 0, software steering";
    error->clear();
  } else if (ret != 0) {
    return ret;
  } else {
    // The steering decision is made before the first start: a start and stop
    // of a net_memif port shows its peer a connection that vanishes, and the
    // 22.11 PMD crashes on a HELLO that arrives for the vanished one.
    bool use_flow = try_flow && port->queue_rule_validates();
    if (try_flow && !use_flow) {
      if (config.steering == SteeringRequest::kFlow) {
        *error = port->name_ + ": FI_DPDK_STEERING=flow, but the device "
                 "validates no rte_flow queue rule";
        return -ENOTSUP;
      }
      ret = port->configure(1, error);
      if (ret != 0) return ret;
    }
    ret = port->start(error);
    if (ret != 0) return ret;
    // A device that validated the rule must also create it (net_tap once
    // validated what it then refused); restarting such a port is harmless.
    if (use_flow && !port->probe_flow_steering()) {
      use_flow = false;
      if (config.steering == SteeringRequest::kFlow) {
        *error = port->name_ + ": FI_DPDK_STEERING=flow, but the device "
                 "installs no rte_flow queue rule";
        return -ENOTSUP;
      }
      rte_eth_dev_stop(port_id);
      port->started_by_us_ = false;
      ret = port->configure(1, error);
      if (ret == 0) ret = port->start(error);
      if (ret != 0) return ret;
    }
    port->steering_ = use_flow ? Steering::kFlow : Steering::kSoftware;
    port->description_ = port->name_ + ": " + std::to_string(port->queue_pairs_) +
                         " queue pair(s), " + steering_name(port->steering_) +
                         " steering";
  }

  uint16_t mtu = RTE_ETHER_MTU;
  rte_eth_dev_get_mtu(port_id, &mtu);
  port->max_frame_payload_ = frame_payload_for_mtu(mtu);

  if (config.faults.any()) {
    std::string fault_error;
    port->faults_ = FaultInjector::attach(port_id, port->queue_pairs_, config.faults,
                                          &fault_error);
    if (!port->faults_) {
      *error = port->name_ + ": fault injector: " + fault_error;
      return -ENOTSUP;
    }
    port->description_ += ", fault injector on";
  }
  *out = std::move(port);
  return 0;
}

int Port::configure(uint16_t queue_pairs, std::string* error) {
  rte_eth_conf conf{};
  int ret = rte_eth_dev_configure(port_id_, queue_pairs, queue_pairs, &conf);
  if (ret != 0) {
    *error = name_ + ": rte_eth_dev_configure(" + std::to_string(queue_pairs) +
             " queues): " + rte_strerror(-ret);
    return ret;
  }
  uint16_t rx_desc = config_.rx_descriptors;
  uint16_t tx_desc = config_.tx_descriptors;
  rte_eth_dev_adjust_nb_rx_tx_desc(port_id_, &rx_desc, &tx_desc);
  const int socket = rte_eth_dev_socket_id(port_id_);
  for (uint16_t q = 0; q < queue_pairs; ++q) {
    ret = rte_eth_rx_queue_setup(port_id_, q, rx_desc, socket, nullptr, pool_);
    if (ret == 0) ret = rte_eth_tx_queue_setup(port_id_, q, tx_desc, socket, nullptr);
    if (ret != 0) {
      *error = name_ + ": queue " + std::to_string(q) + " set-up: " + rte_strerror(-ret);
      return ret;
    }
  }
  queue_pairs_ = queue_pairs;
  return 0;
}

int Port::start(std::string* error) {
  const int ret = rte_eth_dev_start(port_id_);
  if (ret != 0) {
    *error = name_ + ": rte_eth_dev_start: " + rte_strerror(-ret);
    return ret;
  }
  started_by_us_ = true;
  return 0;
}

// The rule that sends our EtherType with destination queue `endpoint_queue`
// to hardware queue `hw_queue`.  Its items point into the object itself.
struct Port::QueueRule {
  QueueRule(uint16_t ether_type, uint16_t endpoint_queue, uint16_t hw_queue) {
    attr.ingress = 1;
    eth_spec.hdr.ether_type = rte_cpu_to_be_16(ether_type);
    eth_mask.hdr.ether_type = 0xffff;
    queue_be = rte_cpu_to_be_16(endpoint_queue);
    raw_spec.relative = 1;
    raw_spec.offset = kDstQueueOffset;
    raw_spec.length = sizeof(queue_be);
    raw_spec.pattern = reinterpret_cast<const uint8_t*>(&queue_be);
    raw_mask = raw_spec;
    raw_mask.offset = static_cast<int32_t>(0xffffffff);
    raw_mask.pattern = reinterpret_cast<const uint8_t*>(&all_ones);
    pattern[0] = {RTE_FLOW_ITEM_TYPE_ETH, &eth_spec, nullptr, &eth_mask};
    pattern[1] = {RTE_FLOW_ITEM_TYPE_RAW, &raw_spec, nullptr, &raw_mask};
    pattern[2].type = RTE_FLOW_ITEM_TYPE_END;
    queue.index = hw_queue;
    actions[0] = {RTE_FLOW_ACTION_TYPE_QUEUE, &queue};
    actions[1].type = RTE_FLOW_ACTION_TYPE_END;
  }
  QueueRule(const QueueRule&) = delete;
  QueueRule& operator=(const QueueRule&) = delete;

  rte_flow_attr attr{};
  rte_flow_item_eth eth_spec{};
  rte_flow_item_eth eth_mask{};
  uint16_t queue_be = 0;
  uint16_t all_ones = 0xffff;
  rte_flow_item_raw raw_spec{};
  rte_flow_item_raw raw_mask{};
  rte_flow_item pattern[3] = {};
  rte_flow_action_queue queue{};
  rte_flow_action actions[2] = {};
};

bool Port::queue_rule_validates() {
  const QueueRule rule(ether_type_, 1, 1);
  rte_flow_error flow_error{};
  if (rte_flow_validate(port_id_, &rule.attr, rule.pattern, rule.actions, &flow_error) == 0)
    return true;
  description_ = std::string("rte_flow_validate: ") +
                 (flow_error.message ? flow_error.message : "refused");
  return false;
}

rte_flow* Port::create_queue_rule(uint16_t endpoint_queue, uint16_t hw_queue,
                                  std::string* error) {
  const QueueRule rule(ether_type_, endpoint_queue, hw_queue);
  rte_flow_error flow_error{};
  if (rte_flow_validate(port_id_, &rule.attr, rule.pattern, rule.actions, &flow_error) != 0) {
    *error = std::string("rte_flow_validate: ") +
             (flow_error.message ? flow_error.message : "refused");
    return nullptr;
  }
  // Some PMDs (net_tap) validate what they then fail to create: only a
  // created rule counts.
  rte_flow* flow =
      rte_flow_create(port_id_, &rule.attr, rule.pattern, rule.actions, &flow_error);
  if (flow == nullptr)
    *error = std::string("rte_flow_create: ") +
             (flow_error.message ? flow_error.message : "failed");
  return flow;
}

bool Port::probe_flow_steering() {
  std::string error;
  rte_flow* probe = create_queue_rule(1, 1, &error);
  if (probe == nullptr) {
    description_ = error;
    return false;
  }
  rte_flow_error flow_error{};
  rte_flow_destroy(port_id_, probe, &flow_error);
  return true;
}

int Port::bind_endpoint_queue(uint16_t endpoint_queue) {
  if (steering_ == Steering::kSoftware) return 0;
  if (endpoint_queue >= queue_pairs_ || endpoint_queue >= std::size(endpoint_rules_))
    return -ENOSPC;
  std::string error;
  rte_flow* rule = create_queue_rule(endpoint_queue, endpoint_queue, &error);
  if (rule == nullptr) return -ENOTSUP;
  endpoint_rules_[endpoint_queue] = rule;
  return endpoint_queue;
}

void Port::unbind_endpoint_queue(uint16_t endpoint_queue) {
  if (steering_ == Steering::kSoftware || endpoint_queue >= std::size(endpoint_rules_))
    return;
  if (rte_flow* rule = endpoint_rules_[endpoint_queue]) {
    rte_flow_error flow_error{};
    rte_flow_destroy(port_id_, rule, &flow_error);
    endpoint_rules_[endpoint_queue] = nullptr;
  }
}

uint16_t Port::rx_burst(uint16_t queue, rte_mbuf** frames, uint16_t count) {
  const uint16_t received = rte_eth_rx_burst(port_id_, queue, frames, count);
  handoff_acquire(frames, received);
  counters_.rx_frames += received;
  return received;
}

uint16_t Port::tx_burst(uint16_t queue, rte_mbuf** frames, uint16_t count) {
  handoff_release(frames, count);
  const uint16_t sent = rte_eth_tx_burst(port_id_, queue, frames, count);
  counters_.tx_frames += sent;
  return sent;
}

rte_mbuf* Port::alloc_frame() { return net::alloc_frame(pool_); }

bool Port::link_up() const {
  rte_eth_link link{};
  return rte_eth_link_get_nowait(port_id_, &link) == 0 &&
         link.link_status == RTE_ETH_LINK_UP;
}

FaultStats Port::fault_stats() const { return faults_ ? faults_->stats() : FaultStats{}; }

Port::~Port() {
  for (uint16_t q = 0; q < std::size(endpoint_rules_); ++q) unbind_endpoint_queue(q);
  faults_.reset();  // callers hold the port lock: no rx_burst runs now
  if (started_by_us_) {
    rte_eth_dev_stop(port_id_);
  }
  // The pool stays: mbufs may still sit in a device ring we no longer own
  // after a host-started port; for ours, the stopped device released them.
  if (started_by_us_ && pool_ != nullptr) rte_mempool_free(pool_);
}

}  // namespace ofi_dpdk::net
