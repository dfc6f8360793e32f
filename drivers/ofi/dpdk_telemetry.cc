// dpdk_telemetry.cc: what a running process's ports and endpoints are
// doing, for an operator outside it.  DPDK's telemetry socket
// (/var/run/dpdk/<file-prefix>/dpdk_telemetry.v2, read with
// dpdk-telemetry.py) serves these commands when EAL runs without
// --no-telemetry:
//
//   /ofi_dpdk/ports                 the ids of the ports the provider has open
//   /ofi_dpdk/port,<id>             a port's frame counters, checks, steering
//   /ofi_dpdk/endpoints,<id>        the queue ids of the port's open endpoints
//   /ofi_dpdk/endpoint,<id>,<queue> an endpoint's transport counters
//   /ofi_dpdk/connections,<id>,<queue>  its connections, column by column
//   /ofi_dpdk/counters,<id>         the port's endpoints' counters, summed
//
// The callbacks run on EAL's telemetry thread and take the registry's lock
// and then each port's, as an fi_* call would: a read costs the data path
// one lock hand-over, only while someone asks.
#include "drivers/ofi/dpdk_telemetry.h"

#include <rte_telemetry.h>

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <cstring>
#include <functional>
#include <mutex>
#include <string_view>
#include <vector>

#include "drivers/ofi/dpdk_endpoint.h"
#include "drivers/ofi/dpdk_log.h"
#include "drivers/ofi/dpdk_port.h"
#include "ofi_dpdk_config.h"  // OFI_DPDK_HAVE_TEL_DICT_UINT: #if reads 0 without it

namespace ofi_dpdk::ofi {
namespace {

void add_count(rte_tel_data* data, const char* name, uint64_t value) {
#if OFI_DPDK_HAVE_TEL_DICT_UINT
  rte_tel_data_add_dict_uint(data, name, value);
#else
  rte_tel_data_add_dict_u64(data, name, value);
#endif
}

// The numbers of `params` ("3" or "3,7"), each below 2^16; false for
// anything else.
bool parse_ids(const char* params, uint16_t* first, uint16_t* second) {
  if (params == nullptr) return false;
  const std::string_view text(params);
  const size_t comma = text.find(',');
  const auto number = [](std::string_view part, uint16_t* out) {
    unsigned value = 0;
    const auto [end, error] = std::from_chars(part.data(), part.data() + part.size(), value);
    if (error != std::errc() || end != part.data() + part.size() || part.empty() ||
        value > UINT16_MAX)
      return false;
    *out = static_cast<uint16_t>(value);
    return true;
  };
  if (second == nullptr) return comma == std::string_view::npos && number(text, first);
  return comma != std::string_view::npos && number(text.substr(0, comma), first) &&
         number(text.substr(comma + 1), second);
}

// Runs `visit` with the port `params` names ("ID") and its lock held: 0,
// or -EINVAL for a malformed id or a port the provider does not have open.
int on_port(const char* params, const std::function<void(PortContext&)>& visit) {
  uint16_t wanted = 0;
  if (!parse_ids(params, &wanted, nullptr)) return -EINVAL;
  bool found = false;
  for_each_open_port([&](uint16_t id, PortContext& ctx) {
    if (id != wanted) return;
    found = true;
    std::lock_guard guard(ctx.lock);
    visit(ctx);
  });
  return found ? 0 : -EINVAL;
}

// The same for the endpoint `params` names ("ID,QUEUE").
int on_endpoint(const char* params, const std::function<void(Endpoint&)>& visit) {
  uint16_t wanted_port = 0, wanted_queue = 0;
  if (!parse_ids(params, &wanted_port, &wanted_queue)) return -EINVAL;
  bool found = false;
  for_each_open_port([&](uint16_t id, PortContext& ctx) {
    if (id != wanted_port) return;
    std::lock_guard guard(ctx.lock);
    const auto endpoints = ctx.open_endpoints();
    if (wanted_queue >= endpoints.size() || endpoints[wanted_queue] == nullptr) return;
    found = true;
    visit(*endpoints[wanted_queue]);
  });
  return found ? 0 : -EINVAL;
}

int list_ports(const char*, const char*, rte_tel_data* data) {
  rte_tel_data_start_array(data, RTE_TEL_INT_VAL);
  for_each_open_port([&](uint16_t id, PortContext&) { rte_tel_data_add_array_int(data, id); });
  return 0;
}

int show_port(const char*, const char* params, rte_tel_data* data) {
  return on_port(params, [&](PortContext& ctx) {
    const frames::Framer& framer = *ctx.framer;
    rte_tel_data_start_dict(data);
    rte_tel_data_add_dict_string(data, "name", ctx.port->name().c_str());
    rte_tel_data_add_dict_string(data, "checks",
                                 framer.frame_key   ? "keyed"
                                 : framer.checksums ? "crc"
                                                    : "none");
    rte_tel_data_add_dict_string(data, "steering", net::steering_name(ctx.port->steering()));
    add_count(data, "queues", ctx.port->queue_pairs());
    add_count(data, "mtu", ctx.port->mtu());
    add_count(data, "link_up", ctx.port->link_up() ? 1 : 0);
    size_t endpoints = 0;
    for (const Endpoint* ep : ctx.open_endpoints()) endpoints += ep != nullptr;
    add_count(data, "endpoints", endpoints);
    add_count(data, "rx_frames", ctx.port->counters().rx_frames);
    add_count(data, "tx_frames", ctx.port->counters().tx_frames);
    add_count(data, "rx_not_ours", framer.rx_not_ours);
    add_count(data, "rx_no_endpoint", ctx.rx_no_endpoint);
    add_count(data, "rx_bad_frames", framer.rx_bad_frames);
    add_count(data, "rx_unsealed", framer.rx_unsealed);
    add_count(data, "rx_bad_tags", framer.rx_bad_tags);
    add_count(data, "rx_key_mismatch", framer.rx_key_mismatch);
    add_count(data, "no_memory", ctx.no_memory);
    add_count(data, "kept_frames", ctx.kept_frames.load(std::memory_order_relaxed));
    add_count(data, "idle_yields", ctx.idle_yields);
    add_count(data, "neighbours", framer.neighbours.size());
    add_count(data, "neighbours6", framer.neighbours6.size());
    add_count(data, "frames_waiting_for_neighbour", framer.frames_waiting());
    add_count(data, "frames_not_resolved", framer.frames_not_resolved);
    add_count(data, "rx_udp", framer.rx_udp);
    add_count(data, "rx_udp6", framer.rx_udp6);
    const net::FaultStats faults = ctx.port->fault_stats();
    add_count(data, "fault_dropped", faults.dropped);
    add_count(data, "fault_corrupted", faults.corrupted);
  });
}

int list_endpoints(const char*, const char* params, rte_tel_data* data) {
  return on_port(params, [&](PortContext& ctx) {
    rte_tel_data_start_array(data, RTE_TEL_INT_VAL);
    for (const Endpoint* ep : ctx.open_endpoints())
      if (ep != nullptr) rte_tel_data_add_array_int(data, ep->queue);
  });
}

int show_endpoint(const char*, const char* params, rte_tel_data* data) {
  return on_endpoint(params, [&](Endpoint& ep) {
    const proto::TransportStats& s = ep.engine->stats();
    rte_tel_data_start_dict(data);
    add_count(data, "queue", ep.queue);
    add_count(data, "hw_queue", ep.hw_queue);
    add_count(data, "enabled", ep.enabled ? 1 : 0);
    add_count(data, "frames_sent", s.frames_sent);
    add_count(data, "frames_received", s.frames_received);
    add_count(data, "messages_sent", s.messages_sent);
    add_count(data, "messages_received", s.messages_received);
    add_count(data, "retransmitted", s.retransmitted);
    add_count(data, "acks_sent", s.acks_sent);
    add_count(data, "duplicates", s.duplicates);
    add_count(data, "bad_frames", s.bad_frames + s.stale_session + s.out_of_window);
    add_count(data, "stalled_no_buffer", s.stalled_no_buffer);
    add_count(data, "fast_retransmits", s.fast_retransmits);
    add_count(data, "retransmit_timeouts", s.retransmit_timeouts);
    add_count(data, "window_cuts_loss", s.window_cuts_loss);
    add_count(data, "window_cuts_deepened", s.window_cuts_deepened);
    add_count(data, "window_cuts_marks", s.window_cuts_marks);
    add_count(data, "window_cuts_delay", s.window_cuts_delay);
    add_count(data, "delay_yields", s.delay_yields);
    add_count(data, "delay_slowdowns", s.delay_slowdowns);
    add_count(data, "paced_waits", s.paced_waits);
    add_count(data, "round_trips_measured", s.round_trips.samples());
    add_count(data, "round_trip_p50_ns", s.round_trips.percentile(500));
    add_count(data, "round_trip_p99_ns", s.round_trips.percentile(990));
    add_count(data, "congestion_marks_received", s.congestion_marks_received);
    add_count(data, "congestion_echoes_received", s.congestion_echoes_received);
    add_count(data, "timeout_cuts_undone", s.timeout_cuts_undone);
    add_count(data, "tail_loss_probes", s.tail_loss_probes);
    add_count(data, "window_probes", s.window_probes);
    add_count(data, "delayed_acks", s.delayed_acks);
    add_count(data, "timeouts", s.timeouts);
    add_count(data, "peers_failed", s.peers_failed);
    add_count(data, "connections_opened", s.connections_opened);
    add_count(data, "connections_evicted", s.connections_evicted);
    add_count(data, "requests_served", s.requests_served);
    add_count(data, "rendezvous_sent", s.rendezvous_sent);
    add_count(data, "frames_not_sent", ep.frames_not_sent);
  });
}

void add_column_value(rte_tel_data* column, uint64_t value) {
#if OFI_DPDK_HAVE_TEL_DICT_UINT
  rte_tel_data_add_array_uint(column, value);
#else
  rte_tel_data_add_array_u64(column, value);
#endif
}

int show_connections(const char*, const char* params, rte_tel_data* data) {
  // Column by column: a 22.11 dict holds arrays, not dicts.
  static constexpr size_t kRoom = RTE_TEL_MAX_ARRAY_ENTRIES;
  return on_endpoint(params, [&](Endpoint& ep) {
    std::vector<proto::ConnectionSummary> rows(std::min<size_t>(kRoom, 4096));
    const size_t total = ep.engine->summarize_connections(rows.data(), rows.size());
    rows.resize(std::min(total, rows.size()));
    rte_tel_data_start_dict(data);
    add_count(data, "connections", total);
    add_count(data, "shown", rows.size());
    rte_tel_data* peers = rte_tel_data_alloc();
    rte_tel_data* transmit = rte_tel_data_alloc();
    rte_tel_data_start_array(peers, RTE_TEL_STRING_VAL);
    rte_tel_data_start_array(transmit, RTE_TEL_STRING_VAL);
    for (const proto::ConnectionSummary& row : rows) {
      char name[32];
      std::snprintf(name, sizeof name, "%02x:%02x:%02x:%02x:%02x:%02x/%u", row.peer_mac[0],
                    row.peer_mac[1], row.peer_mac[2], row.peer_mac[3], row.peer_mac[4],
                    row.peer_mac[5], row.peer_queue);
      rte_tel_data_add_array_string(peers, name);
      rte_tel_data_add_array_string(transmit, row.transmit);
    }
    rte_tel_data_add_dict_container(data, "peer", peers, 0);
    rte_tel_data_add_dict_container(data, "transmit", transmit, 0);
    const auto column = [&](const char* name, auto field) {
      rte_tel_data* values = rte_tel_data_alloc();
      rte_tel_data_start_array(values, RTE_TEL_U64_VAL);
      for (const proto::ConnectionSummary& row : rows) add_column_value(values, field(row));
      rte_tel_data_add_dict_container(data, name, values, 0);
    };
    using Row = const proto::ConnectionSummary&;
    column("receiving", [](Row r) -> uint64_t { return r.receiving ? 1 : 0; });
    column("cwnd", [](Row r) -> uint64_t { return r.cwnd; });
    column("ssthresh", [](Row r) -> uint64_t { return r.ssthresh; });
    column("peer_window", [](Row r) -> uint64_t { return r.peer_window; });
    column("in_flight", [](Row r) -> uint64_t { return r.in_flight; });
    column("messages_waiting", [](Row r) -> uint64_t { return r.messages_waiting; });
    column("held_segments", [](Row r) -> uint64_t { return r.held_segments; });
    column("srtt_us", [](Row r) -> uint64_t { return r.srtt_ns / 1000; });
    column("rto_us", [](Row r) -> uint64_t { return r.rto_ns / 1000; });
    column("quiet_ms", [](Row r) -> uint64_t { return r.quiet_ns / 1'000'000; });
    column("path", [](Row r) -> uint64_t { return r.path; });
    column("cuts_loss", [](Row r) -> uint64_t { return r.cuts_loss; });
    column("cuts_deepened", [](Row r) -> uint64_t { return r.cuts_deepened; });
    column("cuts_timeout", [](Row r) -> uint64_t { return r.cuts_timeout; });
    column("cuts_undone", [](Row r) -> uint64_t { return r.cuts_undone; });
    column("cuts_marks", [](Row r) -> uint64_t { return r.cuts_marks; });
    column("marks_received", [](Row r) -> uint64_t { return r.marks_received; });
    column("marked_share_x1024", [](Row r) -> uint64_t { return r.marked_share_x1024; });
    column("cuts_delay", [](Row r) -> uint64_t { return r.cuts_delay; });
    column("base_rtt_ns", [](Row r) -> uint64_t { return r.base_rtt_ns; });
    column("slowdowns", [](Row r) -> uint64_t { return r.slowdowns; });
    column("pace_interval_ns", [](Row r) -> uint64_t { return r.pace_interval_ns; });
    column("paced_waits", [](Row r) -> uint64_t { return r.paced_waits; });
  });
}

// The transport counters of all of a port's endpoints, summed.
int show_counters(const char*, const char* params, rte_tel_data* data) {
  return on_port(params, [&](PortContext& ctx) {
    proto::TransportStats sum;
    size_t endpoints = 0;
    for (const Endpoint* ep : ctx.open_endpoints()) {
      if (ep == nullptr) continue;
      ++endpoints;
      const proto::TransportStats& s = ep->engine->stats();
      sum.frames_sent += s.frames_sent;
      sum.frames_received += s.frames_received;
      sum.messages_sent += s.messages_sent;
      sum.messages_received += s.messages_received;
      sum.retransmitted += s.retransmitted;
      sum.fast_retransmits += s.fast_retransmits;
      sum.retransmit_timeouts += s.retransmit_timeouts;
      sum.tail_loss_probes += s.tail_loss_probes;
      sum.timeouts += s.timeouts;
      sum.duplicates += s.duplicates;
      sum.bad_frames += s.bad_frames + s.stale_session + s.out_of_window;
      sum.connections_opened += s.connections_opened;
      sum.connections_evicted += s.connections_evicted;
    }
    rte_tel_data_start_dict(data);
    add_count(data, "endpoints", endpoints);
    add_count(data, "frames_sent", sum.frames_sent);
    add_count(data, "frames_received", sum.frames_received);
    add_count(data, "messages_sent", sum.messages_sent);
    add_count(data, "messages_received", sum.messages_received);
    add_count(data, "retransmitted", sum.retransmitted);
    add_count(data, "fast_retransmits", sum.fast_retransmits);
    add_count(data, "retransmit_timeouts", sum.retransmit_timeouts);
    add_count(data, "tail_loss_probes", sum.tail_loss_probes);
    add_count(data, "timeouts", sum.timeouts);
    add_count(data, "duplicates", sum.duplicates);
    add_count(data, "bad_frames", sum.bad_frames);
    add_count(data, "connections_opened", sum.connections_opened);
    add_count(data, "connections_evicted", sum.connections_evicted);
  });
}

}  // namespace

void register_telemetry() {
  static std::once_flag once;
  std::call_once(once, [] {
    const struct {
      const char* command;
      telemetry_cb callback;
      const char* help;
    } commands[] = {
        {"/ofi_dpdk/ports", list_ports, "The ids of the ports the dpdk provider has open."},
        {"/ofi_dpdk/port", show_port, "A port's frame counters and settings. Parameter: port id."},
        {"/ofi_dpdk/endpoints", list_endpoints,
         "The queue ids of a port's open endpoints. Parameter: port id."},
        {"/ofi_dpdk/endpoint", show_endpoint,
         "An endpoint's transport counters. Parameters: port id, queue id."},
        {"/ofi_dpdk/connections", show_connections,
         "An endpoint's connections, column by column: peer, state, windows, RTT, "
         "segments in flight. Parameters: port id, queue id."},
        {"/ofi_dpdk/counters", show_counters,
         "The transport counters of a port's endpoints, summed. Parameter: port id."},
    };
    for (const auto& command : commands)
      if (const int ret =
              rte_telemetry_register_cmd(command.command, command.callback, command.help);
          ret != 0)
        DPDK_WARN(FI_LOG_CORE, "telemetry command %s not registered: %s\n", command.command,
                  std::strerror(-ret));
  });
}

}  // namespace ofi_dpdk::ofi
