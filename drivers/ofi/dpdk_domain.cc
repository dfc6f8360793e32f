// dpdk_domain.cc: fi_domain.  A domain is one DPDK port (its name is the
// ethdev name); domains on the same port share one PortContext.
#include "drivers/ofi/dpdk_domain.h"

#include <algorithm>
#include <cstring>
#include <map>

#include "drivers/frames/ipv6_peer_ids.h"
#include "drivers/net/xdp_steer.h"
#include "drivers/ofi/dpdk_endpoint.h"
#include "drivers/ofi/dpdk_fabric.h"
#include "drivers/ofi/dpdk_fid.h"
#include "drivers/ofi/dpdk_getinfo.h"
#include "drivers/ofi/dpdk_limits.h"
#include "drivers/ofi/dpdk_log.h"
#include "drivers/ofi/dpdk_objects.h"
#include "drivers/ofi/dpdk_ops.h"
#include "drivers/ofi/dpdk_port.h"
#include "drivers/ofi/dpdk_shared_ctx.h"
#include "drivers/ofi/dpdk_telemetry.h"
#include "include/fi_dpdk.h"
#include "lib/av/auth_key_table.h"
#include "lib/eal/tap_signal_guard.h"
#include "ofi_dpdk_config.h"  // which libfabric features the headers have

namespace ofi_dpdk::ofi {
namespace {

std::mutex g_ports_lock;
std::map<uint16_t, std::weak_ptr<PortContext>> g_ports;

int domain_close(fid* fid) {
  Domain* domain = from_fid<Domain>(fid);
  if (domain->refs.load() != 0) return -FI_EBUSY;
  domain->fabric->refs--;
  if (domain->auto_progress) auto_progress_remove(domain->port.get());
  {
    // The last domain on a port stops it; do that under the registry lock
    // so a concurrent fi_domain cannot pick up a half-closed port.
    std::lock_guard guard(g_ports_lock);
    domain->port.reset();
  }
  fi_freeinfo(domain->info);
  delete domain;
  return 0;
}

// The endpoint an ep_* stats call names (an endpoint or a context of a
// scalable one), or nullptr for anything else.
Endpoint* stats_endpoint(void* ep_fid, const void* out) {
  if (ep_fid == nullptr || out == nullptr) return nullptr;
  Endpoint* ep = from_fid<Endpoint>(static_cast<fid_ep*>(ep_fid));
  const size_t fclass = ep->fid.fid.fclass;
  if (fclass != FI_CLASS_EP && fclass != FI_CLASS_TX_CTX && fclass != FI_CLASS_RX_CTX)
    return nullptr;
  return ep;
}

int ep_stats(void* ep_fid, fi_dpdk_ep_stats* out) {
  Endpoint* ep = stats_endpoint(ep_fid, out);
  if (ep == nullptr) return -FI_EINVAL;
  std::lock_guard guard(ep->port().lock);
  const proto::TransportStats& s = ep->engine->stats();
  *out = {s.frames_sent,       s.frames_received, s.messages_sent,
          s.messages_received, s.retransmitted,   s.bad_frames + s.stale_session + s.out_of_window,
          s.stalled_no_buffer};
  return 0;
}

int ep_waits(void* ep_fid, fi_dpdk_ep_waits* out) {
  Endpoint* ep = stats_endpoint(ep_fid, out);
  if (ep == nullptr) return -FI_EINVAL;
  std::lock_guard guard(ep->port().lock);
  const proto::TransportStats& s = ep->engine->stats();
  *out = {s.retransmit_timeouts, s.tail_loss_probes, s.window_probes, s.delayed_acks,
          s.delivery_probes};
  return 0;
}

int ep_rtt(void* ep_fid, fi_dpdk_ep_rtt* out) {
  Endpoint* ep = stats_endpoint(ep_fid, out);
  if (ep == nullptr) return -FI_EINVAL;
  std::lock_guard guard(ep->port().lock);
  const proto::RttHistogram& r = ep->engine->stats().round_trips;
  *out = {};
  out->samples = r.samples();
  out->p50_ns = r.percentile(500);
  out->p90_ns = r.percentile(900);
  out->p99_ns = r.percentile(990);
  out->max_ns = r.max_ns();
  return 0;
}

int port_stats(void* domain_fid, fi_dpdk_port_stats* out) {
  if (domain_fid == nullptr || out == nullptr) return -FI_EINVAL;
  Domain* domain = from_fid<Domain>(static_cast<fid_domain*>(domain_fid));
  if (domain->fid.fid.fclass != FI_CLASS_DOMAIN) return -FI_EINVAL;
  PortContext& ctx = *domain->port;
  std::lock_guard guard(ctx.lock);
  const net::FaultStats faults = ctx.port->fault_stats();
  *out = {};
  out->rx_frames = ctx.port->counters().rx_frames;
  out->tx_frames = ctx.port->counters().tx_frames;
  out->fault_dropped = faults.dropped;
  out->fault_duplicated = faults.duplicated;
  out->fault_reordered = faults.reordered;
  out->fault_corrupted = faults.corrupted;
  out->fault_delayed = faults.delayed;
  out->rx_not_ours = ctx.framer->rx_not_ours + ctx.rx_no_endpoint;
  out->steering = ctx.port->steering() == net::Steering::kFlow     ? 1
                  : ctx.port->steering() == net::Steering::kRss    ? 2
                  : ctx.port->steering() == net::Steering::kSender ? 3
                                                                   : 0;
  out->queues = ctx.port->queue_pairs();
  return 0;
}

int port_polls(void* domain_fid, fi_dpdk_port_polls* out) {
  if (domain_fid == nullptr || out == nullptr) return -FI_EINVAL;
  Domain* domain = from_fid<Domain>(static_cast<fid_domain*>(domain_fid));
  if (domain->fid.fid.fclass != FI_CLASS_DOMAIN) return -FI_EINVAL;
  PortContext& ctx = *domain->port;
  std::lock_guard guard(ctx.lock);
  *out = {};
  out->idle_yields = ctx.idle_yields;
  for (const PortContext::LaneState& lane : ctx.lane_state) {
    out->cq_passes += lane.reader_passes;
    out->cq_shared_passes += lane.shared_passes;
  }
  return 0;
}

int port_checks(void* domain_fid, fi_dpdk_port_checks* out) {
  if (domain_fid == nullptr || out == nullptr) return -FI_EINVAL;
  Domain* domain = from_fid<Domain>(static_cast<fid_domain*>(domain_fid));
  if (domain->fid.fid.fclass != FI_CLASS_DOMAIN) return -FI_EINVAL;
  PortContext& ctx = *domain->port;
  std::lock_guard guard(ctx.lock);
  *out = {};
  // With a job key the tag alone is checked (frame_codec.h's FrameCheck).
  const frames::Framer& framer = *ctx.framer;
  out->checks = framer.frame_key ? FI_DPDK_CHECK_KEYED : framer.checksums ? FI_DPDK_CHECK_CRC : 0;
  out->rx_bad_frames = framer.rx_bad_frames;
  out->rx_unsealed = framer.rx_unsealed;
  out->rx_bad_tags = framer.rx_bad_tags;
  out->rx_key_mismatch = framer.rx_key_mismatch;
  return 0;
}

static_assert(net::rule_bit(net::RuleKind::kEtherType) == FI_DPDK_RULE_ETHERTYPE &&
              net::rule_bit(net::RuleKind::kUdp4) == FI_DPDK_RULE_UDP4 &&
              net::rule_bit(net::RuleKind::kUdp6) == FI_DPDK_RULE_UDP6);

int ep_steering(void* ep_fid, fi_dpdk_ep_steering* out) {
  Endpoint* ep = stats_endpoint(ep_fid, out);
  if (ep == nullptr) return -FI_EINVAL;
  std::lock_guard guard(ep->port().lock);
  *out = {};
  out->queue = ep->queue;
  out->hw_queue = ep->hw_queue;
  out->rules = ep->port().port->endpoint_rule_kinds(ep->queue);
  out->frames_on_own_queue = ep->frames_on_own_queue;
  out->frames_on_other_queue = ep->frames_on_other_queue;
  out->lane = ep->port().lanes() == 1 ? kWholePort : ep->lane.load(std::memory_order_relaxed);
  const uint16_t lane = ep->port().effective_lane(ep->lane.load(std::memory_order_relaxed));
  out->progress_loop = ep->port().lane_state[lane == kWholePort ? 0 : lane].passed_by_loop.load(
      std::memory_order_relaxed);
  return 0;
}

fi_dpdk_ops_stats g_stats_ops = {
    .size = sizeof(fi_dpdk_ops_stats),
    .ep_stats = ep_stats,
    .port_stats = port_stats,
    .ep_waits = ep_waits,
    .port_polls = port_polls,
    .ep_steering = ep_steering,
    .port_checks = port_checks,
    .ep_rtt = ep_rtt,
};

int domain_ops_open(fid*, const char* name, uint64_t, void** ops, void*) {
  if (name != nullptr && std::strcmp(name, FI_DPDK_STATS_OPS_NAME) == 0) {
    *ops = &g_stats_ops;
    return 0;
  }
  return -FI_ENOSYS;
}

fi_ops g_domain_fid_ops = {
    .size = sizeof(fi_ops),
    .close = domain_close,
    .bind = DPDK_ENOSYS(fi_ops, bind),
    .control = DPDK_ENOSYS(fi_ops, control),
    .ops_open = domain_ops_open,
    .tostr = DPDK_ENOSYS(fi_ops, tostr),
    .ops_set = DPDK_ENOSYS(fi_ops, ops_set),
};

fi_ops_domain g_domain_ops = {
    .size = sizeof(fi_ops_domain),
    .av_open = av_open,
    .cq_open = cq_open,
    .endpoint = endpoint_open,
    .scalable_ep = scalable_ep_open,
    .cntr_open = cntr_open,
    .poll_open = poll_open,
    .stx_ctx = stx_open,
    .srx_ctx = srx_open,
    .query_atomic = query_atomic,
    .query_collective = DPDK_ENOSYS(fi_ops_domain, query_collective),
    .endpoint2 = DPDK_ENOSYS(fi_ops_domain, endpoint2),
};

fi_ops_mr g_mr_ops = {
    .size = sizeof(fi_ops_mr),
    .reg = mr_reg,
    .regv = mr_regv,
    .regattr = mr_regattr,
};

// Pool size from the attributes: every descriptor of every queue pair may
// hold an mbuf, plus a TX and an RX queue's depth of frames in flight and
// slack for bursts and per-lcore caches.
uint32_t pool_size(const Params& p, const net::PortConfig& config) {
  if (p.mbufs != 0) return static_cast<uint32_t>(p.mbufs);
  const uint32_t per_queue_pair = config.rx_descriptors + config.tx_descriptors;
  return config.queues_wanted * per_queue_pair + 2 * kQueueDepth + 511;
}

// domain_attr->auth_key (fi_domain(3); ignored before API 1.5): size 0,
// none; av::kAuthKeySize bytes, a nonzero network key (host byte order) that
// endpoints naming no key use; FI_AV_AUTH_KEY (2.x) with auth_key NULL,
// keys from the AV.  Anything else is -FI_EINVAL.
int take_auth_key(const fi_info* info, Domain* domain) {
  const uint32_t version = info->fabric_attr != nullptr
                               ? info->fabric_attr->api_version
                               : FI_VERSION(FI_MAJOR_VERSION, FI_MINOR_VERSION);
  if (FI_VERSION_LT(version, FI_VERSION(1, 5))) return 0;
  const fi_domain_attr* attr = info->domain_attr;
#if OFI_DPDK_HAVE_AV_AUTH_KEY
  if (attr->auth_key_size == FI_AV_AUTH_KEY) {
    if (attr->auth_key != nullptr) {
      DPDK_INFO(FI_LOG_DOMAIN, "auth_key_size FI_AV_AUTH_KEY: auth_key must be NULL\n");
      return -FI_EINVAL;
    }
    domain->av_auth_keys = true;
    return 0;
  }
#endif
  if (attr->auth_key_size == 0) return 0;
  uint32_t key = av::kNoAuthKey;
  if (attr->auth_key_size == av::kAuthKeySize && attr->auth_key != nullptr)
    std::memcpy(&key, attr->auth_key, sizeof(key));
  if (key == av::kNoAuthKey) {
    DPDK_INFO(FI_LOG_DOMAIN,
              "auth_key: %zu bytes, a nonzero network key, or "
              "auth_key_size 0 (got %zu bytes%s)\n",
              av::kAuthKeySize, attr->auth_key_size, attr->auth_key == nullptr ? ", NULL" : "");
    return -FI_EINVAL;
  }
  domain->default_auth_key = key;
  return 0;
}

}  // namespace

void for_each_open_port(const std::function<void(uint16_t port_id, PortContext& port)>& visit) {
  std::lock_guard guard(g_ports_lock);
  for (auto& [id, weak] : g_ports)
    if (const auto port = weak.lock()) visit(id, *port);
}

int acquire_port(uint16_t port_id, std::shared_ptr<PortContext>* out, std::string* error) {
  register_telemetry();
  std::lock_guard guard(g_ports_lock);
  if (auto existing = g_ports[port_id].lock()) {
    *out = existing;
    return 0;
  }
  const Params& p = params();
  if (p.auth_key_refused) {
    // A job key mistyped must not leave frames unkeyed without a word.
    *error =
        "FI_DPDK_AUTH_KEY is set but is not 32 to 128 hex digits: no port opens "
        "unkeyed in its place";
    return -FI_EINVAL;
  }
  net::PortConfig config;
  config.queues_wanted = p.queues;
  config.mbufs = pool_size(p, config);
  config.ether_type = p.ether_type;
  config.mtu = p.mtu;
  config.checksum_offloads = p.offloads.value_or(true);
  config.connect_timeout_ms = p.connect_timeout_ms;
  config.steering = p.steering;
  config.faults = p.faults;
  config.memif_unmap_guard = p.memif_unmap_guard;
  auto ctx = std::make_shared<PortContext>();
  std::optional<proto::FrameKey> frame_key;
  if (!p.auth_key.empty()) frame_key = proto::FrameKey::derive(p.auth_key);
  // The port's addresses are known before it opens: its steering rules
  // match the UDP it will be reached in.
  net::PortDescription description;
  if (!net::describe_port(port_id, &description)) description = {};
  const std::optional<ip::Interface> interface =
      port_interface(description.name, description.kernel_interface);
  const std::optional<ip::Interface6> interface6 =
      port_interface6(description.name, description.kernel_interface);
  config.udp4 = port_speaks_udp(interface.has_value(), description.shared);
  config.udp6 = port_speaks_udp(interface6.has_value(), description.shared);
  config.udp_port_base = p.port_base;
  // Read before the port opens: starting an af_packet port takes its
  // interface down and up, which flushes the kernel's neighbours,
  // permanent ones too.
  const KernelNeighbours kernel_neighbours = kernel_permanent_neighbours(
      description.kernel_interface, ip::NeighbourTable::kDefaultCapacity);
  int ret;
  {
    // net_tap opens its queues here: no signal per frame into the program.
    const eal::TapSignalGuard tap_signals;
    ret = net::Port::open(port_id, config, &ctx->port, error);
  }
  if (ret != 0) return ret;
  frames::Settings settings;
  settings.port_base = p.port_base;
  settings.queues = kMaxEndpointsPerPort;
  settings.ecn = p.ecn.value_or(true);
  settings.routed_mtu = p.routed_mtu;
  settings.resolve_timeout_ms = p.resolve_timeout_ms;
  settings.clock_ns = now_ns;
  frames::set_ipv6_peer_capacity(p.ipv6_peers);
  ctx->framer = std::make_unique<frames::Framer>(*ctx->port, *ctx, settings);
  frames::Framer& framer = *ctx->framer;
  framer.frame_key = frame_key;
  framer.interface = interface;
  framer.interface6 = interface6;
  framer.loops_back = ctx->port->loops_back();
  ctx->idle_yield_ns = uint64_t{p.idle_yield_us} * 1000;
  // A device whose sender picks the arriving queue gives each queue pair
  // a lane of its own (PortContext).
  if (ctx->port->steering() == net::Steering::kSender)
    ctx->lock.set_count(ctx->port->queue_pairs());
  // The CRC guards a frame against what a wire or a device does to it: on
  // memory links nothing does, and both ends of one are such ports (a
  // net_ring in this process, the two net_memif ends), so both leave it
  // out alike (doc/wire-protocol.md, "Integrity").  The fault injector's
  // corruption is the one exception.
  framer.checksums = p.checksum.value_or(!ctx->port->memory_only() || p.faults.corrupt > 0);
  if (!p.checksum && !framer.checksums)
    DPDK_INFO(FI_LOG_DOMAIN,
              "%s: frames carry no CRC-32C and are taken unchecked: the port "
              "is memory, where nothing corrupts a frame (FI_DPDK_CHECKSUM=1 in every "
              "process checks them)\n",
              ctx->port->name().c_str());
  framer.neighbours = ip::NeighbourTable(ip::NeighbourTable::kDefaultCapacity,
                                         uint64_t{p.neighbour_lifetime_ms} * 1'000'000);
  // A shared port's switch passes our EtherType alone.
  framer.udp = port_speaks_udp(framer.interface.has_value(), ctx->port->shared());
  if (framer.interface6 && ctx->port->shared()) {
    DPDK_INFO(FI_LOG_DOMAIN,
              "%s: a shared port's switch passes our EtherType alone: its "
              "IPv6 address %s is not used\n",
              ctx->port->name().c_str(), ip::format_interface6(*framer.interface6).c_str());
    framer.interface6.reset();
  }
  framer.neighbours6 = ip::Neighbour6Table(ip::Neighbour6Table::kDefaultCapacity,
                                           uint64_t{p.neighbour_lifetime_ms} * 1'000'000);
  framer.udp6 = port_speaks_udp(framer.interface6.has_value(), ctx->port->shared());
  ctx->pin_static_neighbours(kernel_neighbours, description.kernel_interface);
  if (framer.interface6) {
    // Solicitations for our address go to a group (a NIC filters those
    // out unless told); a virtual device passes them anyway.
    const int multicast = ctx->port->accept_multicast();
    DPDK_INFO(FI_LOG_DOMAIN,
              "%s: IPv6 address %s (multicast %s); peers named by IPv6 "
              "address get %s\n",
              ctx->port->name().c_str(), ip::format_interface6(*framer.interface6).c_str(),
              multicast == 0 ? "accepted" : "left to the device",
              framer.udp6 ? "UDP/IPv6" : "nothing (FI_DPDK_ENCAP=l2: IPv6 needs udp)");
  }
  if (framer.interface)
    DPDK_INFO(FI_LOG_DOMAIN, "%s: IPv4 address %s; peers named by address get %s\n",
              ctx->port->name().c_str(), ip::format_interface(*framer.interface).c_str(),
              framer.udp ? "UDP/IPv4" : "our EtherType (one subnet)");
  // An af_packet or af_xdp port's interface is the kernel's too: where the
  // kernel has the port's addresses, it takes the UDP to our endpoints'
  // ports as its own, so each endpoint's port is held there while the
  // endpoint has it (dpdk_kernel_ports.h).
  if (!description.kernel_interface.empty()) {
    std::optional<ip::Ipv4> shared4;
    std::optional<ip::Ipv6> shared6;
    if (framer.udp && kernel_has_ipv4(framer.interface->address))
      shared4 = framer.interface->address;
    if (framer.udp6 && kernel_has_ipv6(framer.interface6->address))
      shared6 = framer.interface6->address;
    ctx->kernel_ports.hold_on(ctx->port->name(), shared4, shared6, p.port_base);
    std::string why;
    // Beside an af_xdp port of another process on the same interface (our
    // XDP program there), an af_packet port has the program pass its
    // queues' UDP to the kernel; the af_xdp port takes its own back.
    if (description.xdp) {
      ctx->kernel_ports.pass_through_xdp(description.kernel_interface, false);
    } else if (is_beside_af_xdp(description.kernel_interface) ||
               net::has_steer_program(description.kernel_interface)) {
      ctx->kernel_ports.pass_through_xdp(description.kernel_interface, true);
      DPDK_INFO(FI_LOG_DOMAIN,
                "%s: %s has the XDP program of an af_xdp port of another process, or will "
                "have: the UDP of this port's queues is passed to the kernel, and so here\n",
                ctx->port->name().c_str(), description.kernel_interface.c_str());
    }
    // Our XDP program (the launcher's xdp_prog=) hands the socket only the
    // port's frames, once told which; net_af_xdp's own hands it all.
    if (description.xdp) {
      const net::XdpSteering steering = net::steer_xdp(
          description.kernel_interface,
          net::XdpSteerConfig{p.ether_type, p.port_base, kMaxEndpointsPerPort, 0}, &why);
      if (steering == net::XdpSteering::kSteered)
        DPDK_INFO(FI_LOG_DOMAIN,
                  "%s: XDP program ofi_dpdk_steer hands the socket EtherType %#x and UDP to "
                  "ports %u-%u; the kernel keeps the rest of %s\n",
                  ctx->port->name().c_str(), p.ether_type, p.port_base,
                  p.port_base + kMaxEndpointsPerPort - 1, description.kernel_interface.c_str());
      else if (steering == net::XdpSteering::kUnwritable)
        DPDK_WARN(FI_LOG_DOMAIN, "%s: XDP program ofi_dpdk_steer not told the port's frames: %s\n",
                  ctx->port->name().c_str(), why.c_str());
      else
        DPDK_INFO(FI_LOG_DOMAIN,
                  "%s: net_af_xdp's own XDP program: the socket takes every frame of %s, and "
                  "the kernel none\n",
                  ctx->port->name().c_str(), description.kernel_interface.c_str());
    }
    if (description.xdp && (framer.interface || framer.interface6) &&
        !ctx->neighbour_copies.open(description.kernel_interface, &why))
      DPDK_WARN(FI_LOG_DOMAIN,
                "%s: no copies of the kernel's ARP and neighbour discovery frames (%s): "
                "with an XDP program that passes them to the kernel, next hops go "
                "unanswered\n",
                ctx->port->name().c_str(), why.c_str());
    if (ctx->kernel_ports.active())
      DPDK_INFO(FI_LOG_DOMAIN,
                "%s: the kernel has the port's address too: each endpoint's "
                "port is held with a kernel socket while the endpoint has it (%s)\n",
                ctx->port->name().c_str(), ctx->kernel_ports.describe().c_str());
  }
  if (const std::string& note = ctx->port->unmap_guard_note(); !note.empty()) {
    if (ctx->port->unmap_guard_note_warns())
      DPDK_WARN(FI_LOG_DOMAIN, "%s: %s\n", ctx->port->name().c_str(), note.c_str());
    else
      DPDK_INFO(FI_LOG_DOMAIN, "%s: %s\n", ctx->port->name().c_str(), note.c_str());
  }
  // A process on a shared port has its slot's block of queue ids; the rest
  // belong to the other processes, as if held by them.
  const net::Port& nic = *ctx->port;
  for (uint16_t q = 0; q < kMaxEndpointsPerPort; ++q)
    if (q < nic.endpoint_queue_first() ||
        q - nic.endpoint_queue_first() >= nic.endpoint_queue_count())
      ctx->held[q] = true;
  // Frames to the port's own MAC are passed over in software; with another
  // open port of the same MAC they could be that port's, so they go to the
  // device, as a switch would have them.
  for (auto& [id, weak] : g_ports) {
    const auto other = weak.lock();
    if (!other || std::memcmp(other->port->mac(), ctx->port->mac(), 6) != 0) continue;
    DPDK_WARN(FI_LOG_DOMAIN,
              "ports %s and %s share one MAC address: frames between endpoints of one port "
              "go through the device\n",
              other->port->name().c_str(), ctx->port->name().c_str());
    other->framer->loops_back = ctx->framer->loops_back = true;
  }
  g_ports[port_id] = ctx;
  progress_net_add(ctx.get());  // ~PortContext takes it out again
  *out = ctx;
  return 0;
}

int domain_open(fid_fabric* fabric_fid, fi_info* info, fid_domain** out, void* context) {
  if (info == nullptr || info->domain_attr == nullptr || info->domain_attr->name == nullptr)
    return -FI_EINVAL;
  if (ensure_eal() != 0) return -FI_ENODEV;
  const auto port_id = net::find_port(info->domain_attr->name);
  if (!port_id) {
    DPDK_WARN(FI_LOG_DOMAIN, "no DPDK port named %s\n", info->domain_attr->name);
    return -FI_ENODEV;
  }
  auto* domain = new (std::nothrow) Domain();
  if (domain == nullptr) return -FI_ENOMEM;
  if (const int ret = take_auth_key(info, domain); ret != 0) {
    delete domain;
    return ret;
  }
#if OFI_DPDK_HAVE_MAX_GROUP_ID
  if (info->domain_attr->max_group_id > kMaxGroupId) {
    DPDK_INFO(FI_LOG_DOMAIN, "domain_attr->max_group_id %u: at most %u\n",
              info->domain_attr->max_group_id, kMaxGroupId);
    delete domain;
    return -FI_EINVAL;
  }
#endif
  std::string error;
  if (int ret = acquire_port(*port_id, &domain->port, &error); ret != 0) {
    DPDK_WARN(FI_LOG_DOMAIN, "%s\n", error.c_str());
    delete domain;
    // (-EBUSY: every slot of a shared port is held; -FI_EINVAL: a parameter
    // that must not be passed over, FI_DPDK_AUTH_KEY.)
    return ret == -ENOMEM      ? -FI_ENOMEM
           : ret == -EBUSY     ? -FI_EBUSY
           : ret == -FI_EINVAL ? -FI_EINVAL
                               : -FI_ENODEV;
  }
  DPDK_INFO(FI_LOG_DOMAIN, "%s\n", domain->port->port->description().c_str());
  domain->info = fi_dupinfo(info);
  if (domain->info == nullptr) {
    delete domain;
    return -FI_ENOMEM;
  }
  // Requests name bytes by address with FI_MR_VIRT_ADDR (or the legacy
  // FI_MR_BASIC), else by offset from the region's start (plus the offset
  // it was registered with).
  const int mr_mode = domain->info->domain_attr->mr_mode;
  domain->regions =
      remote::Regions((mr_mode & FI_MR_VIRT_ADDR) != 0 || mr_mode == 1 /*FI_MR_BASIC*/);
  domain->fabric = from_fid<Fabric>(fabric_fid);
  domain->fabric->refs++;
  domain->api_version = domain->info->fabric_attr->api_version;
#if OFI_DPDK_HAVE_MAX_GROUP_ID
  // fi_domain(3): a non-zero max_group_id asks for peer groups.
  domain->max_group_id = domain->info->domain_attr->max_group_id;
#endif
  // Control operations (AV, MR, CQ set-up) complete within their calls, so
  // FI_PROGRESS_AUTO for control needs no loop; for data it does.
  if (domain->info->domain_attr->data_progress == FI_PROGRESS_AUTO) {
    domain->auto_progress = true;
    auto_progress_add(domain->port.get());
  }
  domain->fid.fid.fclass = FI_CLASS_DOMAIN;
  domain->fid.fid.context = context;
  domain->fid.fid.ops = &g_domain_fid_ops;
  domain->fid.ops = &g_domain_ops;
  domain->fid.mr = &g_mr_ops;
  *out = &domain->fid;
  return 0;
}

}  // namespace ofi_dpdk::ofi
