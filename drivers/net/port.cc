#include "drivers/net/port.h"

#include <net/if.h>

#include <rte_cycles.h>
#include <rte_dev.h>
#include <rte_devargs.h>
#include <rte_errno.h>
#include <rte_ethdev.h>
#include <rte_mbuf.h>
#include <rte_mempool.h>
#include <rte_ring.h>
#include <rte_version.h>

#include <unistd.h>
#include <algorithm>
#include <atomic>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <map>
#include <mutex>
#include <optional>
#include <string_view>
#include <thread>

#include "drivers/net/device_kind.h"
#include "drivers/net/fault_injector.h"
#include "drivers/net/interrupt_thread.h"
#include "drivers/net/kernel_carrier.h"
#include "drivers/net/mbuf_handoff.h"
#include "drivers/net/memif_warm.h"
#include "drivers/net/packet_ring.h"
#include "drivers/net/shared_port.h"
#include "drivers/net/umem_pool.h"
#include "drivers/net/unmap_guard.h"
#include "lib/proto/wire.h"

namespace ofi_dpdk::net {
namespace {

// Mbufs a queue pair's own mempool cache holds (Port::alloc_frame(queue)):
// the pool's ring is met once per this many frames, not once per frame.
constexpr uint32_t kQueueCacheSize = 128;

std::atomic<uint32_t> g_pool_serial{0};

// net_af_xdp makes an XDP socket, and a UMEM over our pool through which
// the kernel writes received frames, at each queue set-up, and lets them
// go only when the device is closed.  Stopped and set up again (the
// process's next domain: fi_rdm_multi_client opens ten in turn), it finds
// the queue's socket still bound ("Failed to reserve fill queue"); closed,
// a vdev is gone for good.  So a device we set up stays set up, started,
// with its pool, until the process ends, and the next Port takes it as it
// is.  (One Port at a time has a device: the provider shares a port among
// its domains.)
struct KeptXdpDevice {
  rte_mempool* pool;
  uint16_t queue_pairs;
  uint16_t mtu;
  uint32_t max_frame_payload;
  std::string description;
};
std::mutex g_kept_xdp_lock;
std::map<uint16_t, KeptXdpDevice> g_kept_xdp;

std::optional<KeptXdpDevice> take_kept_xdp(uint16_t port_id) {
  std::lock_guard<std::mutex> hold(g_kept_xdp_lock);
  auto it = g_kept_xdp.find(port_id);
  if (it == g_kept_xdp.end()) return std::nullopt;
  KeptXdpDevice kept = it->second;
  g_kept_xdp.erase(it);
  return kept;
}

}  // namespace

// The MTU frames of this port get: `wanted` (0: the device's) within what
// the device takes, after setting the device to it where it can be set.
// The device must be configured and stopped.
uint16_t settle_mtu(uint16_t port_id, const rte_eth_dev_info& info, uint16_t wanted) {
  uint16_t mtu = RTE_ETHER_MTU;
  rte_eth_dev_get_mtu(port_id, &mtu);
  if (wanted == 0 || wanted == mtu || kernel_backed(info)) return mtu;
  if (const uint32_t limit = memory_link_limit(info); limit != 0)
    return static_cast<uint16_t>(std::min<uint32_t>(wanted, limit));
  const uint16_t possible = std::clamp<uint16_t>(wanted, info.min_mtu, info.max_mtu);
  if (possible != mtu && rte_eth_dev_set_mtu(port_id, possible) == 0) return possible;
  return mtu;
}

// Room in each mbuf for one whole frame of this MTU (Ethernet header
// included), so frames are never chained.
uint16_t data_room_for(uint16_t mtu) {
  const uint32_t room = uint32_t{mtu} + sizeof(wire::EtherHeader) + RTE_PKTMBUF_HEADROOM;
  return static_cast<uint16_t>(std::clamp<uint32_t>(room, RTE_MBUF_DEFAULT_BUF_SIZE, UINT16_MAX));
}

// Pools of large mbufs hold the same bytes as the default pool would,
// never fewer mbufs than the rings need.
uint32_t pool_mbufs(const PortConfig& config, uint16_t room) {
  return std::max<uint32_t>(config.mbufs * RTE_MBUF_DEFAULT_BUF_SIZE / room,
                            2u * (config.rx_descriptors + config.tx_descriptors) + 511);
}

std::vector<uint16_t> available_ports() {
  std::vector<uint16_t> ports;
  uint16_t port_id;
  RTE_ETH_FOREACH_DEV(port_id) ports.push_back(port_id);
  return ports;
}

std::optional<uint16_t> find_port(std::string_view id_or_name) {
  uint16_t port_id = 0;
  auto [end, err] =
      std::from_chars(id_or_name.data(), id_or_name.data() + id_or_name.size(), port_id);
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
  out->port_id = port_id;
  out->name = name;
  std::memcpy(out->mac, mac.addr_bytes, 6);
  out->kernel_interface.clear();
  rte_eth_dev_info info{};
  char interface[IF_NAMESIZE] = {};
  if (rte_eth_dev_info_get(port_id, &info) == 0 && info.driver_name != nullptr &&
      (std::strcmp(info.driver_name, "net_af_packet") == 0 ||
       std::strcmp(info.driver_name, "net_af_xdp") == 0) &&
      info.if_index != 0 && if_indextoname(info.if_index, interface) != nullptr)
    out->kernel_interface = interface;
  out->xdp = info.driver_name != nullptr && std::strcmp(info.driver_name, "net_af_xdp") == 0;
  out->shared = find_shared_table(out->name) != nullptr;
  return true;
}

const char* steering_name(Steering steering) {
  switch (steering) {
    case Steering::kFlow:
      return "rte_flow";
    case Steering::kRss:
      return "RSS";
    case Steering::kSender:
      return "by sender";
    case Steering::kSoftware:
      break;
  }
  return "software";
}

int Port::open(uint16_t port_id, const PortConfig& config, std::unique_ptr<Port>* out,
               std::string* error) {
  if (!rte_eth_dev_is_valid_port(port_id)) {
    *error = "port " + std::to_string(port_id) + " does not exist";
    return -ENODEV;
  }
  std::unique_ptr<Port> port(new Port());
  port->link_refresh_cycles_ = rte_get_timer_hz() / 1000000 * kLinkRefreshMicros;
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

  rte_eth_dev_info info;
  if (int ret = rte_eth_dev_info_get(port_id, &info); ret != 0) {
    *error = port->name_ + ": rte_eth_dev_info_get failed";
    return ret;
  }
  // Each transmit burst into a kernel interface is a system call, and the
  // kernel's work on the frames runs inside it.
  port->burst_frames_ = kernel_backed(info) ? 32 : 8;
  // (Their drivers call the link up whatever the interface does.)
  if (char interface[IF_NAMESIZE] = {};
      (is_driver(info, "net_af_packet") || is_driver(info, "net_af_xdp")) && info.if_index != 0 &&
      if_indextoname(info.if_index, interface) != nullptr)
    port->carrier_ = std::make_unique<KernelCarrier>(interface);
  port->memory_only_ = memory_link_limit(info) != 0;
  port->may_lend_ = copies_at_transmit(info);
  // net_memif unmaps its rings on EAL's interrupt thread when its peer goes,
  // whatever a poller is doing (unmap_guard.h), on the releases
  // unmap_guard_policy.h names.
  if (is_driver(info, "net_memif")) {
    const UnmapGuardChoice choice = choose_memif_unmap_guard(config.memif_unmap_guard);
    port->unmap_guard_note_ = choice.why;
    port->unmap_guard_note_warns_ = choice.warn;
    if (choice.guard) {
      port->guard_bursts_ = guard_unmaps_of("librte_net_memif.so");
      if (!port->guard_bursts_) {
        port->unmap_guard_note_ +=
            "; but net_memif's munmap cannot be redirected (a static "
            "DPDK build?): a poller may fault when the memif peer goes";
        port->unmap_guard_note_warns_ = true;
      }
    }
    port->warm_on_link_up_ = port->guard_bursts_;
  }
  if (SharedPortTable* table = find_shared_table(port->name_))
    return open_shared(std::move(port), table, info, config, out, error);
  if (rte_eal_process_type() == RTE_PROC_SECONDARY) {
    // A secondary may not configure a port; the primary's is in use.
    *error = port->name_ + " belongs to the primary process of this file prefix" +
             (is_driver(info, "net_ring") ? " (a shared port whose dpdk-fi-switch stopped?)" : "");
    return -ENODEV;
  }
  // Mbufs hold a whole frame of the MTU we aim for; a device that ends up
  // with less only uses part of each.
  uint16_t aimed_mtu = RTE_ETHER_MTU;
  rte_eth_dev_get_mtu(port_id, &aimed_mtu);
  std::optional<PacketRingMtu> ring;
  std::string ring_note;
  if (is_driver(info, "net_af_packet"))
    ring = packet_ring_mtu(devarg(info, "iface"), devarg(info, "framesz"));
  std::optional<uint32_t> xdp_interface_mtu;
  if (is_driver(info, "net_af_xdp"))
    xdp_interface_mtu = kernel_interface_mtu(devarg(info, "iface"));
  if (ring) {
    aimed_mtu = config.mtu != 0 ? std::min(config.mtu, ring->mtu) : ring->mtu;
    port->ring_mtu_ = aimed_mtu;
    if (!ring->note.empty()) ring_note = " (" + ring->note + ")";
  } else if (xdp_interface_mtu) {
    // The interface's MTU, up to what one UMEM chunk holds (a page, less
    // the mbuf and both headrooms: the driver's max_mtu, some 3500 bytes);
    // a veth attaches no XDP program at an MTU above about as much.
    uint32_t mtu = std::min<uint32_t>(*xdp_interface_mtu, info.max_mtu);
    if (config.mtu != 0) mtu = std::min<uint32_t>(mtu, config.mtu);
    aimed_mtu = static_cast<uint16_t>(std::max<uint32_t>(mtu, RTE_ETHER_MIN_MTU));
    port->ring_mtu_ = aimed_mtu;
    if (aimed_mtu < *xdp_interface_mtu && aimed_mtu == info.max_mtu)
      ring_note = " (interface MTU " + std::to_string(*xdp_interface_mtu) +
                  ", one UMEM chunk holds " + std::to_string(info.max_mtu) + ")";
  } else if (config.mtu != 0 && !kernel_backed(info)) {
    const uint32_t limit = memory_link_limit(info);
    aimed_mtu = limit != 0 ? static_cast<uint16_t>(std::min<uint32_t>(config.mtu, limit))
                           : std::clamp<uint16_t>(config.mtu, info.min_mtu, info.max_mtu);
  }
  // net_af_packet copies a whole ring frame's worth into each mbuf.
  const uint16_t room = static_cast<uint16_t>(std::min<uint32_t>(
      std::max<uint32_t>(data_room_for(aimed_mtu), ring ? ring->mbuf_room : 0), UINT16_MAX));
  port->aimed_mtu_ = config.mtu != 0 ? aimed_mtu : 0;
  const uint32_t mbufs = pool_mbufs(config, room);
  const std::string pool_name =
      "ofidpdk" + std::to_string(port_id) + "_" + std::to_string(g_pool_serial++);
  std::string pool_note;
  if (is_driver(info, "net_af_xdp")) {
    port->keep_on_release_ = true;
    if (std::optional<KeptXdpDevice> kept = take_kept_xdp(port_id)) {
      port->pool_ = kept->pool;
      port->queue_pairs_ = kept->queue_pairs;
      port->counters_.assign(kept->queue_pairs, QueueCounters{});
      port->mtu_ = kept->mtu;
      port->started_by_us_ = true;
      port->steering_ = Steering::kSoftware;
      // What came in since the last domain let it go was for that one.
      rte_mbuf* stale[32];
      for (uint16_t q = 0; q < port->queue_pairs_; ++q)
        while (uint16_t n = rte_eth_rx_burst(port_id, q, stale, 32))
          rte_pktmbuf_free_bulk(stale, n);
      port->description_ = kept->description + " (kept from an earlier domain of this process)";
      port->max_frame_payload_ = kept->max_frame_payload;
      if (config.faults.any()) {
        std::string fault_error;
        port->faults_ =
            FaultInjector::attach(port_id, port->queue_pairs_, config.faults, &fault_error);
        if (!port->faults_) {
          *error = port->name_ + ": fault injector: " + fault_error;
          return -ENOTSUP;
        }
      }
      *out = std::move(port);
      return 0;
    }
    // Its UMEM is this pool, which must lie whole inside what the driver
    // registers (umem_pool.h).
    std::string why;
    port->pool_ =
        create_umem_pool(pool_name, mbufs, 256, room, rte_eth_dev_socket_id(port_id), &why);
    if (port->pool_ == nullptr) {
      *error = port->name_ + ": cannot lay out a pool of " + std::to_string(mbufs) +
               " mbufs that net_af_xdp hands to the kernel whole: " + why +
               " (net_af_packet needs no such pool)";
      return -ENOMEM;
    }
    pool_note =
        ", pool of " + std::to_string(mbufs) + " mbufs packed for the UMEM (none beyond it)";
  } else {
    port->pool_ = rte_pktmbuf_pool_create(pool_name.c_str(), mbufs, 256, 0, room,
                                          rte_eth_dev_socket_id(port_id));
  }
  if (port->pool_ == nullptr) {
    *error = port->name_ + ": cannot create a pool of " + std::to_string(mbufs) + " mbufs of " +
             std::to_string(room) + " bytes: " + rte_strerror(rte_errno);
    return -ENOMEM;
  }

  const uint16_t wanted = std::max<uint16_t>(
      1, std::min({config.queues_wanted, info.max_rx_queues, info.max_tx_queues}));
  // A --vdev=net_ringN port; rte_eth_from_rings ports ("net_ring_" and
  // their creator's name) usually cross.
  port->loops_back_ = info.driver_name != nullptr &&
                      std::strcmp(info.driver_name, "net_ring") == 0 &&
                      port->name_.rfind("net_ring", 0) == 0 && port->name_.size() > 8 &&
                      std::isdigit(static_cast<unsigned char>(port->name_[8]));
  // Such a port's TX queue q is its RX queue q's ring: a sender picks the
  // queue its frame arrives on, and each queue pair can serve its own
  // endpoints (Steering::kSender).
  const bool by_sender =
      port->loops_back_ && config.steering == SteeringRequest::kAuto && wanted > 1;
  const bool try_flow = !by_sender && config.steering != SteeringRequest::kSoftware &&
                        config.steering != SteeringRequest::kRss && wanted > 1;
  const bool rss = config.steering == SteeringRequest::kRss;
  int ret = port->configure(try_flow || rss || by_sender ? wanted : 1, error, rss);
  // (A veth takes an XDP program only up to about 3500 bytes of MTU, less
  // than the driver's own limit; the kernel's refusal reaches us as EINVAL.)
  if (ret != 0 && xdp_interface_mtu && *xdp_interface_mtu > RTE_ETHER_MTU)
    *error += " (the interface's MTU is " + std::to_string(*xdp_interface_mtu) +
              ": a veth refuses an XDP program above about 3500, and an XDP socket here "
              "takes no frame above " +
              std::to_string(info.max_mtu) +
              "; a smaller MTU on both ends of the link, or af_packet, which takes 9000)";
  if (by_sender && ret == 0) {
    ret = port->start(error);
    if (ret != 0) return ret;
    port->steering_ = Steering::kSender;
    for (uint16_t queue = 0; queue < port->queue_pairs_; ++queue) {
      rte_mempool_cache* cache = rte_mempool_cache_create(kQueueCacheSize, rte_socket_id());
      if (cache == nullptr) break;  // the pool serves that queue pair plainly
      port->queue_caches_.push_back(cache);
    }
    port->description_ = port->name_ + ": " + std::to_string(port->queue_pairs_) +
                         " queue pair(s), steered by sender (each TX queue loops back to "
                         "its RX queue)";
  } else if (rss) {
    // Asked for alone: a device without RSS fails the open, as flow does.
    if (ret == 0) ret = port->start(error);
    if (ret == 0 && !port->read_rss(error)) ret = -ENOTSUP;
    if (ret != 0) return ret;
    port->steering_ = Steering::kRss;
    port->description_ = port->name_ + ": " + std::to_string(port->queue_pairs_) +
                         " queue pair(s), RSS steering (key " +
                         std::to_string(port->rss_.key.size()) + " bytes, table " +
                         std::to_string(port->rss_.reta.size()) + " entries)";
  } else if (ret == -EBUSY) {
    // A DPDK program that started the port itself keeps its set-up; we share
    // its queue pair 0 with software steering (users of kind 2 in design.md).
    port->steering_ = Steering::kSoftware;
    port->queue_pairs_ = 1;
    port->description_ = port->name_ +
                         ": started by the host program; sharing "
                         "queue pair 0, software steering";
    error->clear();
  } else if (ret != 0) {
    return ret;
  } else {
    // The steering decision is made before the first start: a start and stop
    // of a net_memif port shows its peer a connection that vanishes, and the
    // 22.11 PMD crashes on a HELLO that arrives for the vanished one.
    std::string refused;
    uint32_t kinds =
        try_flow ? port->rule_kinds_taken(port->wanted_rule_kinds(), false, &refused) : 0;
    if (try_flow && kinds == 0) {
      if (config.steering == SteeringRequest::kFlow) {
        *error = port->name_ +
                 ": FI_DPDK_STEERING=flow, but the device validates no "
                 "rte_flow queue rule (" +
                 refused + ")";
        return -ENOTSUP;
      }
      ret = port->configure(1, error);
      if (ret != 0) return ret;
    }
    ret = port->start(error);
    if (ret != 0) return ret;
    // A device that validated a rule must also create it (net_tap once
    // validated what it then refused); restarting such a port is harmless.
    if (kinds != 0) kinds = port->rule_kinds_taken(kinds, true, &refused);
    const bool use_flow = kinds != 0;
    if (try_flow && !use_flow && port->queue_pairs_ > 1) {
      if (config.steering == SteeringRequest::kFlow) {
        *error = port->name_ +
                 ": FI_DPDK_STEERING=flow, but the device installs no "
                 "rte_flow queue rule (" +
                 refused + ")";
        return -ENOTSUP;
      }
      stop_device(port_id);
      port->started_by_us_ = false;
      ret = port->configure(1, error);
      if (ret == 0) ret = port->start(error);
      if (ret != 0) return ret;
    }
    port->steering_ = use_flow ? Steering::kFlow : Steering::kSoftware;
    port->rule_kinds_ = kinds;
    port->description_ = port->name_ + ": " + std::to_string(port->queue_pairs_) +
                         " queue pair(s), " + steering_name(port->steering_) + " steering";
    if (use_flow) {
      std::string taken;
      for (int k = 0; k < kRuleKinds; ++k)
        if ((kinds & rule_bit(RuleKind(k))) != 0)
          taken += std::string(taken.empty() ? "" : ", ") + rule_kind_name(RuleKind(k));
      port->description_ += " (rules: " + taken + ")";
    }
    if (try_flow && !refused.empty()) port->description_ += "; refused: " + refused;
  }

  // configure() settled the MTU on a port we set up; a host program's port
  // keeps its own.
  uint16_t mtu = port->mtu_;
  if (mtu == 0) rte_eth_dev_get_mtu(port_id, &mtu);
  mtu = std::min(mtu, aimed_mtu);
  port->mtu_ = mtu;
  port->max_frame_payload_ =
      std::min<uint32_t>(mtu, room - RTE_PKTMBUF_HEADROOM - sizeof(wire::EtherHeader)) -
      static_cast<uint32_t>(sizeof(wire::FrameHeader));
  char mac_text[24];
  std::snprintf(mac_text, sizeof mac_text, "%02x:%02x:%02x:%02x:%02x:%02x", port->mac_[0],
                port->mac_[1], port->mac_[2], port->mac_[3], port->mac_[4], port->mac_[5]);
  port->description_ +=
      ", MTU " + std::to_string(mtu) + ring_note + ", MAC " + mac_text + pool_note;
  if (port->checksum_offloads_.any())
    port->description_ += ", " + describe(port->checksum_offloads_);
  if (config.faults.any()) {
    std::string fault_error;
    port->faults_ = FaultInjector::attach(port_id, port->queue_pairs_, config.faults, &fault_error);
    if (!port->faults_) {
      *error = port->name_ + ": fault injector: " + fault_error;
      return -ENOTSUP;
    }
    port->description_ += ", fault injector on";
  }
  *out = std::move(port);
  return 0;
}

int Port::open_shared(std::unique_ptr<Port> port, SharedPortTable* table,
                      const rte_eth_dev_info& info, const PortConfig& config,
                      std::unique_ptr<Port>* out, std::string* error) {
  const std::string& name = port->name_;
  SharedPortLayout layout;
  std::string why;
  if (read_shared_layout(*table, &layout, &why) != 0) {
    *error = name + ": the shared port's table is damaged (" + why +
             "): a process of this file prefix wrote over it; restart dpdk-fi-switch";
    return -EINVAL;
  }
  if (layout.ether_type != config.ether_type) {
    *error = name + ": the shared port's switch passes EtherType " +
             std::to_string(layout.ether_type) + ", not FI_DPDK_ETHER_TYPE " +
             std::to_string(config.ether_type);
    return -EINVAL;
  }
  if (config.faults.any()) {
    *error = name + ": the fault injector does not run on a shared port";
    return -ENOTSUP;
  }
  SlotLock lock;
  const int slot = claim_shared_slot(*table, layout, getpid(), &lock, &why);
  if (slot == -EBUSY) {
    *error = name + ": all " + std::to_string(layout.slots) +
             " slots of the shared port are held by running processes "
             "(dpdk-fi-switch --processes sets how many)";
    return -EBUSY;
  }
  if (slot < 0) {
    *error = name + ": " + why;
    return slot;
  }
  // From here ~Port gives the slot back.
  port->shared_table_ = table;
  port->shared_layout_ = layout;
  port->shared_slot_ = slot;
  port->shared_lock_ = std::move(lock);
  for (uint16_t other = 0; other < layout.slots; ++other) {
    port->shared_rx_[other] = rte_ring_lookup(shared_ring_name(layout.name, "rx", other).c_str());
    if (port->shared_rx_[other] == nullptr) {
      *error = name + ": no RX ring for slot " + std::to_string(other) + " of the shared port";
      return -ENODEV;
    }
  }
  port->queue_base_ = static_cast<uint16_t>(slot);
  port->queue_pairs_ = 1;
  port->steering_ = Steering::kSoftware;
  port->endpoint_queue_first_ = static_cast<uint16_t>(slot * layout.queues_per_slot);
  port->endpoint_queue_count_ = layout.queues_per_slot;
  // The switch hands frames for our own MAC back, to whichever process
  // owns their queue: ours included.
  port->loops_back_ = true;
  // Its rings are memory, but the switch forwards frames from its own
  // device, which may be a wire.
  port->memory_only_ = false;
  port->may_lend_ = false;
  const uint32_t limit = memory_link_limit(info);
  uint16_t mtu = config.mtu == 0 || limit == 0
                     ? uint16_t{RTE_ETHER_MTU}
                     : static_cast<uint16_t>(std::min<uint32_t>(config.mtu, limit));
  // Our mbufs travel to the other processes, which free them into our
  // pool: no per-lcore cache (lcore ids repeat across processes), and the
  // pool outlives us, one per slot, made by the switch (or by the slot's
  // first owner), since frames we sent may be freed after we are gone.  An
  // owner asking for larger frames than the pool's gets the pool's: each
  // connection agrees on its segment size anyway.
  const std::string pool_name = shared_pool_name(port->port_id_, static_cast<uint16_t>(slot));
  rte_mempool* pool = rte_mempool_lookup(pool_name.c_str());
  if (pool == nullptr) {
    const uint16_t room = data_room_for(mtu);
    const uint32_t mbufs = pool_mbufs(config, room);
    pool = rte_pktmbuf_pool_create(pool_name.c_str(), mbufs, 0, 0, room,
                                   rte_eth_dev_socket_id(port->port_id_));
    if (pool == nullptr) {  // (~Port gives the slot back)
      *error = name + ": cannot create a pool of " + std::to_string(mbufs) + " mbufs of " +
               std::to_string(room) + " bytes: " + rte_strerror(rte_errno);
      return -ENOMEM;
    }
  }
  const uint16_t room = rte_pktmbuf_data_room_size(pool);
  if (room <= RTE_PKTMBUF_HEADROOM + sizeof(wire::EtherHeader) + 576) {
    *error = name + ": the shared port's mbufs hold " + std::to_string(room) +
             " bytes, too few for a frame (dpdk-fi-switch --mtu)";
    return -EINVAL;  // (~Port gives the slot back)
  }
  const uint32_t fits = room - RTE_PKTMBUF_HEADROOM - sizeof(wire::EtherHeader);
  mtu = static_cast<uint16_t>(std::min<uint32_t>(mtu, fits));
  port->pool_ = pool;
  port->share_frames_ = ring_share(pool->size);
  // Frames queued for the slot's last owner are not ours.
  drain_shared_ring(port->shared_rx_[slot]);
  port->mtu_ = mtu;
  port->max_frame_payload_ = mtu - static_cast<uint32_t>(sizeof(wire::FrameHeader));
  port->description_ = name + ": shared port, slot " + std::to_string(slot) + " of " +
                       std::to_string(layout.slots) + " (endpoint queues " +
                       std::to_string(port->endpoint_queue_first_) + "-" +
                       std::to_string(port->endpoint_queue_first_ + layout.queues_per_slot - 1) +
                       "), MTU " + std::to_string(mtu);
  *out = std::move(port);
  return 0;
}

int Port::configure(uint16_t queue_pairs, std::string* error, bool rss) {
  rte_eth_conf conf{};
  rte_eth_dev_info offered{};
  const bool told = rte_eth_dev_info_get(port_id_, &offered) == 0;
  // The checksums of our UDP frames, where the device offers them.
  if (config_.checksum_offloads && told) choose_checksum_offloads(offered, &conf);
  // Chained frames, for lent payloads, where the device says it takes them.
  const bool lend = may_lend_ && told && (offered.tx_offload_capa & RTE_ETH_TX_OFFLOAD_MULTI_SEGS);
  if (lend) conf.txmode.offloads |= RTE_ETH_TX_OFFLOAD_MULTI_SEGS;
  if (rss) {
    // UDP over either IP by addresses and ports: what rss.h predicts.  (A
    // device that can say which types it hashes before it is configured,
    // unlike virtio, which offers RSS only once asked for it.)
    conf.rxmode.mq_mode = RTE_ETH_MQ_RX_RSS;
    conf.rx_adv_conf.rss_conf.rss_hf = RTE_ETH_RSS_NONFRAG_IPV4_UDP | RTE_ETH_RSS_NONFRAG_IPV6_UDP;
  }
  int ret = rte_eth_dev_configure(port_id_, queue_pairs, queue_pairs, &conf);
  if (ret != 0) {
    *error = name_ + ": rte_eth_dev_configure(" + std::to_string(queue_pairs) +
             " queues): " + rte_strerror(-ret);
    return ret;
  }
  checksum_offloads_ = checksum_offloads_of(conf);
  lends_at_transmit_ = lend;
  // Before the queues: their set-up may depend on it.
  rte_eth_dev_info info;
  if (ring_mtu_ != 0)
    mtu_ = ring_mtu_;
  else if (rte_eth_dev_info_get(port_id_, &info) == 0)
    mtu_ = settle_mtu(port_id_, info, aimed_mtu_);
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
  counters_.assign(queue_pairs, QueueCounters{});
  return 0;
}

int Port::start(std::string* error) {
  // A net_memif client cannot start before its server listens, and a
  // server that listens but has not started its own port yet turns the
  // client away (22.11 does not try again by itself).  Ranks of a job start
  // in any order, so a client tries both again until the connect timeout.
  rte_eth_dev_info info{};
  const bool memif = rte_eth_dev_info_get(port_id_, &info) == 0 && is_driver(info, "net_memif");
  const bool memif_client = memif && devarg(info, "role") == "client";
  const auto deadline =
      std::chrono::steady_clock::now() + std::chrono::milliseconds(config_.connect_timeout_ms);
  auto waited_out = [&] { return std::chrono::steady_clock::now() >= deadline; };
  int ret;
  // The handshake takes milliseconds with a server that is ready and idle,
  // but some ten messages each wait for both sides' interrupt threads, and
  // on a busy machine that took more than half a second.  Hanging up in the
  // middle of it is worse than waiting: the server's net_memif (24.11 as
  // 22.11) then fails a send, closes the socket under EAL's interrupt
  // thread, and that thread panics (seen in fi_rma_bw and an Open MPI job
  // beside a second test run).  So each try waits twice as long as the one
  // before; a server that turned us away costs the first try's wait.
  auto handshake_wait = std::chrono::milliseconds(500);
  for (;;) {
    while ((ret = rte_eth_dev_start(port_id_)) != 0 && memif && !waited_out())
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    if (ret != 0 || !memif_client) break;
    const auto handshake_end =
        std::min(deadline, std::chrono::steady_clock::now() + handshake_wait);
    handshake_wait *= 2;
    while (!read_link() && std::chrono::steady_clock::now() < handshake_end)
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    if (read_link()) break;
    stop_device(port_id_);  // the server may be turning us away meanwhile
    if (waited_out()) {
      *error = name_ +
               ": the memif server did not take the connection within "
               "FI_DPDK_CONNECT_TIMEOUT_MS (" +
               std::to_string(config_.connect_timeout_ms) + " ms)";
      return -ETIMEDOUT;
    }
  }
  if (ret != 0) {
    *error = name_ + ": rte_eth_dev_start: " + rte_strerror(-ret) +
             (memif ? " (no memif server within FI_DPDK_CONNECT_TIMEOUT_MS)" : "");
    return ret;
  }
  started_by_us_ = true;
  return 0;
}

int Port::accept_multicast() {
  if (shared()) return -ENOTSUP;
  return rte_eth_allmulticast_enable(port_id_);
}

Port::Counters Port::counters() const {
  Counters sum;
  for (const QueueCounters& queue : counters_) {
    sum.rx_frames += queue.rx_frames;
    sum.tx_frames += queue.tx_frames;
  }
  return sum;
}

uint16_t Port::rx_burst(uint16_t queue, rte_mbuf** frames, uint16_t count) {
  const GuardedBurst counted(guard_bursts_);
  const uint16_t received = rte_eth_rx_burst(port_id_, queue_base_ + queue, frames, count);
  handoff_acquire(frames, received);
  counters_[queue].rx_frames += received;
  return received;
}

uint16_t Port::tx_burst(uint16_t queue, rte_mbuf** frames, uint16_t count) {
  handoff_release(frames, count);
  const GuardedBurst counted(guard_bursts_);
  const uint16_t sent = shared_table_ != nullptr
                            ? send_shared(frames, count)
                            : rte_eth_tx_burst(port_id_, queue_base_ + queue, frames, count);
  counters_[queue].tx_frames += sent;
  return sent;
}

// A shared port's TX: each frame straight into the RX ring of the process
// that owns its dst_queue (shared_port.h).  What no process may take, or a
// ring over its share or full cannot, is dropped as a NIC's switch would
// drop it (and counted in the table): the transport retransmits, and one
// slow or stopped process holds up neither our frames for the others nor
// our pool.
uint16_t Port::send_shared(rte_mbuf** frames, uint16_t count) {
  SharedPortTable& table = *shared_table_;
  for (uint16_t i = 0; i < count; ++i) {
    rte_mbuf* frame = frames[i];
    const int slot =
        shared_destination(shared_layout_, table, rte_pktmbuf_mtod(frame, const uint8_t*),
                           rte_pktmbuf_data_len(frame));
    std::atomic<uint64_t>* dropped;
    if (slot < 0) {
      dropped = slot == kSharedNotOurs ? &table.dropped_foreign : &table.dropped_no_owner;
    } else if (rte_ring_count(shared_rx_[slot]) >= share_frames_) {
      dropped = &table.dropped_share;
    } else if (rte_ring_mp_enqueue(shared_rx_[slot], frame) == 0) {
      continue;
    } else {
      dropped = &table.dropped_full;
    }
    dropped->fetch_add(1, std::memory_order_relaxed);
    net::free_frame(frame);
  }
  return count;
}

rte_mbuf* Port::alloc_frame() {
  return net::alloc_frame(pool_);
}

uint32_t Port::pool_size() const {
  return pool_ != nullptr ? pool_->size : 0;
}

bool Port::owns(const rte_mbuf* frame) const {
  return pool_ != nullptr && frame->pool == pool_;
}

bool Port::link_up() const {
  // One poller reads the device when it is due; the others take the cache.
  const uint64_t now = rte_get_timer_cycles();
  uint64_t due = link_read_due_.load(std::memory_order_relaxed);
  if (now >= due && link_read_due_.compare_exchange_strong(due, now + link_refresh_cycles_,
                                                           std::memory_order_relaxed))
    return read_link();
  return link_up_.load(std::memory_order_relaxed);
}

bool Port::link_up(uint64_t now_ns) const {
  uint64_t due = link_read_due_ns_.load(std::memory_order_relaxed);
  if (now_ns >= due &&
      link_read_due_ns_.compare_exchange_strong(due, now_ns + uint64_t{kLinkRefreshMicros} * 1000,
                                                std::memory_order_relaxed))
    return read_link();
  return link_up_.load(std::memory_order_relaxed);
}

bool Port::read_link() const {
  rte_eth_link link{};
  const bool up = rte_eth_link_get_nowait(port_id_, &link) == 0 &&
                  link.link_status == RTE_ETH_LINK_UP && (!carrier_ || carrier_->up());
  const bool was_up = link_up_.exchange(up, std::memory_order_relaxed);
  if (up != was_up) link_changes_.fetch_add(1, std::memory_order_relaxed);
  // A memif link comes up with a region mapped afresh: its first frames
  // would each pay page faults (memif_warm.h).  The guard keeps the driver
  // from unmapping it under us meanwhile.
  if (up && !was_up && warm_on_link_up_) {
    const GuardedBurst hold(true);
    // Asked again inside the burst: net_memif marks the link down before it
    // unmaps, and an unmap that starts after that waits for this burst.
    rte_eth_link again{};
    if (rte_eth_link_get_nowait(port_id_, &again) == 0 && again.link_status == RTE_ETH_LINK_UP)
      memif_pages_warmed_.fetch_add(warm_new_memif_regions(), std::memory_order_relaxed);
  }
  link_read_due_.store(rte_get_timer_cycles() + link_refresh_cycles_, std::memory_order_relaxed);
  link_reads_.fetch_add(1, std::memory_order_relaxed);
  return up;
}

FaultStats Port::fault_stats() const {
  return faults_ ? faults_->stats() : FaultStats{};
}

Port::~Port() {
  if (shared_table_ != nullptr) {
    // The device and the pool belong to the switch and the slot; what was
    // queued for us is nobody's now.
    release_shared_slot(*shared_table_, shared_layout_, shared_slot_, getpid(),
                        shared_rx_[shared_slot_]);
    return;  // (then shared_lock_ lets the slot go)
  }
  for (rte_mempool_cache* cache : queue_caches_) {
    rte_mempool_cache_flush(cache, pool_);
    rte_mempool_cache_free(cache);
  }
  for (uint16_t q = 0; q < std::size(endpoint_rules_); ++q) unbind_endpoint_queue(q);
  faults_.reset();  // callers hold the port lock: no rx_burst runs now
  if (started_by_us_ && keep_on_release_) {
    // Left running for the next domain (KeptXdpDevice).
    std::lock_guard<std::mutex> hold(g_kept_xdp_lock);
    g_kept_xdp[port_id_] =
        KeptXdpDevice{pool_, queue_pairs_, mtu_, max_frame_payload_, description_};
    return;
  }
  if (started_by_us_) stop_device(port_id_);  // not beside the driver's own handlers
  // The pool stays: mbufs may still sit in a device ring we no longer own
  // after a host-started port; for ours, the stopped device released them.
  if (started_by_us_ && pool_ != nullptr) rte_mempool_free(pool_);
}

}  // namespace ofi_dpdk::net
