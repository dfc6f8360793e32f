#include "drivers/ofi/dpdk_params.h"

#include <rdma/fi_errno.h>
#include <rdma/providers/fi_prov.h>
#include <rte_config.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cstdlib>
#include <string_view>

#include "drivers/ofi/dpdk_limits.h"
#include "drivers/ofi/dpdk_log.h"
#include "lib/av/address.h"
#include "lib/ip/neighbour_table.h"
#include "lib/proto/frame_tag.h"
#include "lib/proto/transport.h"

namespace ofi_dpdk::ofi {
namespace {

struct FaultParam {
  const char* name;
  double net::FaultConfig::*field;
  const char* help;
};

const FaultParam kFaultParams[] = {
    {"fault_drop", &net::FaultConfig::drop,
     "Fraction of received frames the fault injector drops, as 0.05 or 5% (default: 0)"},
    {"fault_reorder", &net::FaultConfig::reorder,
     "Fraction of received frames held back and delivered after later ones (default: 0)"},
    {"fault_duplicate", &net::FaultConfig::duplicate,
     "Fraction of received frames delivered twice (default: 0)"},
    {"fault_corrupt", &net::FaultConfig::corrupt,
     "Fraction of received frames with one bit flipped after the Ethernet header (default: 0)"},
    {"fault_delay", &net::FaultConfig::delay,
     "Fraction of received frames held for FI_DPDK_FAULT_DELAY_US (default: 0)"},
};

// The environment variable of a parameter, as the user writes it.
std::string env_name(const char* name) {
  std::string text = "FI_DPDK_";
  for (const char* c = name; *c != 0; ++c) text += static_cast<char>(std::toupper(*c));
  return text;
}

// The value as the user wrote it.  Read from the environment, where
// libfabric reads it too, rather than through fi_param_get: the numbers
// are defined as FI_PARAM_INT or FI_PARAM_SIZE_T (so that fi_info -e
// shows their type), and libfabric's own conversion takes "abc" for 0.
std::string get_string(const char* name) {
  const char* value = std::getenv(env_name(name).c_str());
  return value != nullptr ? value : std::string();
}

// 1, 0 or libfabric's words for a boolean (yes/no, true/false, on/off).
void get_bool(const char* name, std::optional<bool>* out, std::string* errors) {
  std::string text = get_string(name);
  if (text.empty()) return;
  for (char& c : text) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (text == "1" || text == "yes" || text == "true" || text == "on") {
    *out = true;
  } else if (text == "0" || text == "no" || text == "false" || text == "off") {
    *out = false;
  } else {
    *errors += " " + env_name(name) + "=" + get_string(name) +
               " (want 1 or 0, yes or no, true or false, on or off)";
  }
}

template <typename T>
void get_number(const char* name, T min, T max, T* out, std::string* errors) {
  const std::string text = get_string(name);
  if (text.empty()) return;
  T value{};
  const int base = text.starts_with("0x") ? 16 : 10;
  const char* first = text.data() + (base == 16 ? 2 : 0);
  auto [end, err] = std::from_chars(first, text.data() + text.size(), value, base);
  if (err != std::errc() || end != text.data() + text.size() || value < min || value > max) {
    *errors += " " + env_name(name) + "=" + text + " (out of range or not a number)";
    return;
  }
  *out = value;
}

// FI_DPDK_NEIGHBOURS: IP=MAC items, comma-separated.  A malformed item, or
// a MAC no station can have, is refused whole (into the warning), the rest
// taken.
void parse_neighbours(std::string_view text, Params* p) {
  for (std::string_view rest = text; !rest.empty();) {
    const size_t comma = rest.find(',');
    const std::string_view item = rest.substr(0, comma);
    rest = comma == std::string_view::npos ? std::string_view() : rest.substr(comma + 1);
    if (item.empty()) continue;
    const size_t equals = item.find('=');
    std::array<uint8_t, 6> mac{};
    const std::string_view address = item.substr(0, equals);
    const bool mac_ok = equals != std::string_view::npos &&
                        av::parse_mac(item.substr(equals + 1), mac.data()) &&
                        ip::station_mac(mac.data());
    if (const auto ipv4 = ip::parse_ipv4(address); mac_ok && ipv4) {
      p->neighbours.emplace_back(*ipv4, mac);
    } else if (const auto ipv6 = ip::parse_ipv6(address); mac_ok && ipv6) {
      p->neighbours6.emplace_back(*ipv6, mac);
    } else {
      p->errors += " FI_DPDK_NEIGHBOURS=..." + std::string(item) +
                   " (want A.B.C.D=MAC or IPV6=MAC, MAC a station's xx:xx:xx:xx:xx:xx)";
    }
  }
}

// FI_DPDK_PROGRESS_LCORES: lcore ids and ranges, comma-separated ("1,3",
// "1-2"), each at most once, at most kMaxProgressLoops of them.  A
// malformed list is refused whole (into the warning).
void parse_progress_lcores(std::string_view text, Params* p) {
  std::vector<int> lcores;
  bool ok = !text.empty();
  for (std::string_view rest = text; ok && !rest.empty();) {
    const size_t comma = rest.find(',');
    const std::string_view item = rest.substr(0, comma);
    rest = comma == std::string_view::npos ? std::string_view() : rest.substr(comma + 1);
    // An empty item (",1", "1,,2", "1,") names no lcore: refused.
    ok = !item.empty() && !(comma != std::string_view::npos && rest.empty());
    const size_t dash = item.find('-');
    int first = -1, last = -1;
    const auto number = [](std::string_view digits, int* out) {
      const char* end = digits.data() + digits.size();
      const auto [stop, error] = std::from_chars(digits.data(), end, *out);
      return error == std::errc() && stop == end && *out >= 0 && *out < RTE_MAX_LCORE;
    };
    ok = ok && (dash == std::string_view::npos
                    ? number(item, &first) && number(item, &last)
                    : number(item.substr(0, dash), &first) && number(item.substr(dash + 1), &last));
    for (int id = first; ok && id <= last; ++id) {
      ok = std::find(lcores.begin(), lcores.end(), id) == lcores.end() &&
           lcores.size() < Params::kMaxProgressLoops;
      lcores.push_back(id);
    }
    ok = ok && first <= last;
  }
  if (ok)
    p->progress_lcores = std::move(lcores);
  else
    p->errors += " FI_DPDK_PROGRESS_LCORES=" + std::string(text) +
                 " (want lcore ids and ranges such as 1,2 or 1-3, each once, at most " +
                 std::to_string(Params::kMaxProgressLoops) + ")";
}

Params load() {
  Params p;
  p.eal_args = get_string("eal_args");
  p.ports = get_string("ports");
  const std::string steering = get_string("steering");
  if (steering == "software") {
    p.steering = net::SteeringRequest::kSoftware;
  } else if (steering == "flow") {
    p.steering = net::SteeringRequest::kFlow;
  } else if (steering == "rss") {
    p.steering = net::SteeringRequest::kRss;
  } else if (!steering.empty() && steering != "auto") {
    p.errors += " FI_DPDK_STEERING=" + steering + " (want auto, flow, rss or software)";
  }
  get_number<uint16_t>("ethertype", 0x0600, 0xffff, &p.ether_type, &p.errors);
  get_number<uint16_t>("queues", 1, kMaxEndpointsPerPort, &p.queues, &p.errors);
  get_number<size_t>("mbufs", 0, size_t{1} << 24, &p.mbufs, &p.errors);
  get_number<uint16_t>("mtu", 0, 65000, &p.mtu, &p.errors);
  if (p.mtu != 0 && p.mtu < 576) {
    p.errors += " FI_DPDK_MTU=" + std::to_string(p.mtu) + " (0, or 576 to 65000)";
    p.mtu = 9000;
  }
  get_bool("checksum", &p.checksum, &p.errors);
  get_bool("ecn", &p.ecn, &p.errors);
  get_bool("offloads", &p.offloads, &p.errors);
  const std::string mr_mode = get_string("mr_mode");
  if (mr_mode == "minimal") {
    p.mr_mode_minimal = true;
  } else if (!mr_mode.empty() && mr_mode != "offered") {
    p.errors += " FI_DPDK_MR_MODE=" + mr_mode + " (want offered or minimal)";
  }
  get_number<size_t>("max_peers", 16, size_t{1} << 20, &p.max_peers, &p.errors);
  get_number<size_t>("ipv6_peers", 1, size_t{1} << 20, &p.ipv6_peers, &p.errors);
  get_number<size_t>("unexpected_bytes", 0, size_t{1} << 34, &p.unexpected_bytes, &p.errors);
  get_number<size_t>("rendezvous_bytes", 0, size_t{1} << 34, &p.rendezvous_bytes, &p.errors);
  get_number<size_t>("response_bytes", size_t{1} << 16, size_t{1} << 34, &p.response_bytes,
                     &p.errors);
  get_number<uint32_t>("bundle_bytes", 0, 8192, &p.bundle_bytes, &p.errors);
  get_number<uint64_t>("peer_timeout_ms", 1, 3'600'000, &p.peer_timeout_ms, &p.errors);
  get_number<uint32_t>("ack_delay_us", 1, 5'000, &p.ack_delay_us, &p.errors);
  get_number<uint32_t>("pace_from_us", 0, 1'000'000, &p.pace_from_us, &p.errors);
  get_number<uint32_t>("delay_target_us", 0, 1'000'000, &p.delay_target_us, &p.errors);
  get_number<uint32_t>("connect_timeout_ms", 1, 3'600'000, &p.connect_timeout_ms, &p.errors);
  get_number<uint64_t>("delivery_timeout_ms", 0, 86'400'000, &p.delivery_timeout_ms, &p.errors);
  get_number<int>("progress_lcore", -1, RTE_MAX_LCORE - 1, &p.progress_lcore, &p.errors);
  if (const std::string lcores = get_string("progress_lcores"); !lcores.empty())
    parse_progress_lcores(lcores, &p);
  get_number<uint32_t>("progress_net_ms", 0, 1000, &p.progress_net_ms, &p.errors);
  get_number<uint32_t>("idle_yield_us", 0, 1'000'000, &p.idle_yield_us, &p.errors);
  for (const auto& fault : kFaultParams) {
    const std::string text = get_string(fault.name);
    if (text.empty()) continue;
    if (auto rate = net::parse_rate(text)) {
      p.faults.*fault.field = *rate;
    } else {
      p.errors += " " + env_name(fault.name) + "=" + text + " (want 0..1 or 0%..100%)";
    }
  }
  const std::string unmap_guard = get_string("memif_unmap_guard");
  if (!unmap_guard.empty()) {
    if (auto request = net::parse_unmap_guard_request(unmap_guard))
      p.memif_unmap_guard = *request;
    else
      p.errors += " FI_DPDK_MEMIF_UNMAP_GUARD=" + unmap_guard + " (want auto, on or off)";
  }
  const std::string port_addr = get_string("port_addr");
  for (std::string_view rest = port_addr; !rest.empty();) {
    const size_t comma = rest.find(',');
    const std::string_view item = rest.substr(0, comma);
    rest = comma == std::string_view::npos ? std::string_view() : rest.substr(comma + 1);
    if (item.empty()) continue;
    const size_t equals = item.find('=');
    const std::string_view name = equals == std::string_view::npos ? "" : item.substr(0, equals);
    const std::string_view value =
        equals == std::string_view::npos ? item : item.substr(equals + 1);
    if (const auto interface = ip::parse_interface(value))
      p.port_addrs.emplace_back(std::string(name), *interface);
    else if (const auto interface6 = ip::parse_interface6(value))
      p.port_addrs6.emplace_back(std::string(name), *interface6);
    else
      p.errors += " FI_DPDK_PORT_ADDR=..." + std::string(item) +
                  " (want [PORT=]A.B.C.D/N[@GW] or [PORT=]IPV6/N[@GW])";
  }
  get_number<uint16_t>("port_base", 1, 65535 - kMaxEndpointsPerPort, &p.port_base, &p.errors);
  const std::string encap = get_string("encap");
  if (encap == "l2") {
    p.encap_udp = false;
  } else if (!encap.empty() && encap != "udp") {
    p.errors += " FI_DPDK_ENCAP=" + encap + " (want udp or l2)";
  }
  get_number<uint32_t>("resolve_timeout_ms", 1, 600'000, &p.resolve_timeout_ms, &p.errors);
  get_number<uint32_t>("neighbour_lifetime_ms", 1000, 3'600'000, &p.neighbour_lifetime_ms,
                       &p.errors);
  parse_neighbours(get_string("neighbours"), &p);
  get_number<uint32_t>("routed_mtu", 0, 65000, &p.routed_mtu, &p.errors);
  get_number<uint32_t>("spray_paths", 1, proto::kMaxSprayPaths, &p.spray_paths, &p.errors);
  {
    // (Its digits never go to the log: only how many there were.)
    const std::string key = get_string("auth_key");
    std::vector<uint8_t> bytes;
    bool hex = key.size() % 2 == 0;
    for (size_t i = 0; hex && i < key.size(); i += 2) {
      auto digit = [](char c) -> int {
        if (c >= '0' && c <= '9') return c - '0';
        if (c >= 'a' && c <= 'f') return c - 'a' + 10;
        if (c >= 'A' && c <= 'F') return c - 'A' + 10;
        return -1;
      };
      const int high = digit(key[i]), low = digit(key[i + 1]);
      hex = high >= 0 && low >= 0;
      bytes.push_back(static_cast<uint8_t>(high << 4 | low));
    }
    if (!key.empty() &&
        (!hex || bytes.size() < proto::kMinJobKeyBytes || bytes.size() > proto::kMaxJobKeyBytes)) {
      p.errors += " FI_DPDK_AUTH_KEY=(" + std::to_string(key.size()) +
                  " characters) (want 32 to 128 hex digits; no domain opens)";
      p.auth_key_refused = true;
    } else {
      p.auth_key = std::move(bytes);
    }
  }
  if (p.routed_mtu != 0 && p.routed_mtu < 576) {
    p.errors += " FI_DPDK_ROUTED_MTU=" + std::to_string(p.routed_mtu) + " (0, or 576 to 65000)";
    p.routed_mtu = 1500;
  }
  get_number<uint32_t>("fault_delay_us", 0, 10'000'000, &p.faults.delay_us, &p.errors);
  get_number<uint64_t>("fault_seed", 0, UINT64_MAX, &p.faults.seed, &p.errors);
  return p;
}

}  // namespace

void define_params(const fi_provider* provider) {
  fi_param_define(provider, "eal_args", FI_PARAM_STRING,
                  "EAL command line used when the provider initialises DPDK on first use, "
                  "e.g. \"-l 0 --in-memory --vdev=net_memif0,role=server\" (default: empty: "
                  "the provider offers nothing unless the program initialised EAL)");
  fi_param_define(provider, "ports", FI_PARAM_STRING,
                  "Comma-separated DPDK port ids or device names to offer (default: all "
                  "ports; a domain name in the hints also selects one)");
  fi_param_define(provider, "steering", FI_PARAM_STRING,
                  "How frames reach an endpoint's queue: auto, flow (rte_flow rules, fail "
                  "if the device has none), rss (the device's RSS over several queues, "
                  "each endpoint naming to its peers the UDP source ports that land on "
                  "its queue; fail if the device cannot say its key and table) or "
                  "software (demultiplex one shared queue) (default: auto)");
  fi_param_define(provider, "ethertype", FI_PARAM_INT,
                  "EtherType of the provider's frames (default: 0x88b5)");
  fi_param_define(provider, "queues", FI_PARAM_INT,
                  "Queue pairs per port to try for rte_flow steering (default: 4)");
  fi_param_define(provider, "mbufs", FI_PARAM_INT,
                  "Mbufs in each port's pool (default: 0, sized from queue depths)");
  fi_param_define(provider, "mtu", FI_PARAM_INT,
                  "Bytes after the Ethernet header a frame may have: set on the device "
                  "where it can be, within its limits (net_memif and net_ring carry any "
                  "size); each pair of endpoints then uses the smaller of their two; 0 "
                  "keeps the device's (default: 9000)");
  fi_param_define(provider, "checksum", FI_PARAM_BOOL,
                  "1: every frame carries a CRC-32C over its addresses, header and "
                  "payload, and frames whose CRC is wrong are dropped; 0: frames are "
                  "sent without and taken unchecked.  Both sides must agree (default: 1, "
                  "but 0 on ports that are only memory, net_ring and net_memif, where "
                  "nothing corrupts a frame, unless FI_DPDK_FAULT_CORRUPT is set)");
  fi_param_define(provider, "ecn", FI_PARAM_BOOL,
                  "1: frames in UDP say they are ECN-capable (ECT(0)), a receiver "
                  "echoes the congestion marks routers put on them, and the sender "
                  "narrows its window by the share of its frames marked; 0: frames "
                  "go not ECN-capable, and routers drop them instead of marking "
                  "(default: 1)");
  fi_param_define(provider, "offloads", FI_PARAM_BOOL,
                  "1: where the device offers to, it computes the IPv4 header and UDP "
                  "checksums of frames in UDP and checks those it receives, and the "
                  "provider does not (the port's log line lists what it took); 0: the "
                  "provider sums them itself (default: 1)");
  fi_param_define(provider, "mr_mode", FI_PARAM_STRING,
                  "offered: an application that offers FI_MR_PROV_KEY or FI_MR_VIRT_ADDR "
                  "keeps them (each memory region gets a random 64-bit key, which a peer "
                  "not told cannot guess, and RMA addresses are virtual); minimal: "
                  "fi_getinfo clears every mr_mode bit the provider does not need, as "
                  "fi_mr(3) describes, so regions take the application's requested keys "
                  "and RMA addresses are offsets into them (default: offered)");
  fi_param_define(provider, "max_peers", FI_PARAM_INT,
                  "Peers an endpoint holds connections with; a new one beyond it takes "
                  "the place of one silent for twice the peer timeout, or waits "
                  "(default: 4096)");
  fi_param_define(provider, "ipv6_peers", FI_PARAM_INT,
                  "IPv6 peers the process names at once: addresses in its AVs, servers "
                  "it connects to and clients it accepts, each for as long as its AV "
                  "entry or endpoint lives; beyond it fi_av_insert fails -FI_ENOSPC and "
                  "fi_accept FI_ECONNABORTED (default: 32768)");
  fi_param_define(provider, "unexpected_bytes", FI_PARAM_SIZE_T,
                  "Bytes of messages buffered per endpoint that arrive before a receive "
                  "is posted; beyond it the sender waits (default: 67108864)");
  fi_param_define(provider, "bundle_bytes", FI_PARAM_INT,
                  "Messages of at most this many bytes sent to one peer in a row share "
                  "a frame; a send made while earlier ones to that peer are "
                  "unacknowledged leaves with the next progress call (fi_cq_read, the "
                  "progress thread) so that the sends after it can join.  0: a frame "
                  "per message, sent at once (default: 1024)");
  fi_param_define(provider, "rendezvous_bytes", FI_PARAM_SIZE_T,
                  "Messages of at least this many bytes are announced and sent once a "
                  "receive takes them, straight into that receive: an early one costs "
                  "the receiver a record, not its bytes.  Smaller ones are sent at once "
                  "and buffered when early.  0: every message is sent at once "
                  "(default: 65536)");
  fi_param_define(provider, "response_bytes", FI_PARAM_SIZE_T,
                  "Bytes of answers to remote reads and atomics an endpoint holds until "
                  "their initiators acknowledge them, a quarter of it per peer; further "
                  "requests wait.  Each is exceeded by one answer at most (default: 67108864)");
  fi_param_define(provider, "ack_delay_us", FI_PARAM_INT,
                  "Microseconds a receiver may wait before it acknowledges a message "
                  "nobody waits on (an fi_inject), unless 8 are owed first; a message "
                  "whose sender waits (a completion, a counter) is acknowledged at the "
                  "next progress pass.  1 to 5000; set the same in every process of a job: a "
                  "sender allows for its own delay before it resends (default: 20)");
  fi_param_define(provider, "pace_from_us", FI_PARAM_INT,
                  "A connection whose window, spread over its round trip, sends a full "
                  "frame less often than once in this many microseconds sends its frames "
                  "that far apart instead of in bursts: fewer drops and a shorter queue "
                  "where our own connections share a slow link (8 suits 100 Mbit/s to "
                  "10 Gbit/s), but a smaller share beside TCP.  Faster connections are "
                  "not paced.  0: never paced (default: 0)");
  fi_param_define(provider, "delay_target_us", FI_PARAM_INT,
                  "A connection whose round trips run more than this many microseconds "
                  "over the lowest it measured (a queue building on the way) narrows its "
                  "window, once per round trip, the more the further over: a short queue "
                  "without loss where our own connections share a link, raw Ethernet "
                  "included, but a smaller share beside TCP.  Keep it above the ack delay "
                  "(FI_DPDK_ACK_DELAY_US).  0: the delay is not read (default: 0)");
  fi_param_define(provider, "peer_timeout_ms", FI_PARAM_INT,
                  "Milliseconds without an answer after which operations to a peer end "
                  "in FI_ETIMEDOUT error completions (default: 5000)");
  fi_param_define(provider, "connect_timeout_ms", FI_PARAM_INT,
                  "Milliseconds to wait for a peer that is not there yet: a net_memif "
                  "client's server (fi_domain waits for it), and the answer to the first "
                  "frame of a connection (the operations waiting for it then end in "
                  "FI_ETIMEDOUT); ranks of a job start in any order (default: 30000)");
  fi_param_define(provider, "delivery_timeout_ms", FI_PARAM_INT,
                  "Milliseconds a send that waits for the peer's receive (a message of "
                  "FI_DPDK_RENDEZVOUS_BYTES or more, or one sent with FI_DELIVERY_COMPLETE) "
                  "waits for one to take it, however alive the peer; then it ends in an "
                  "FI_ETIMEDOUT error completion.  0: as long as the peer answers "
                  "(default: 60000)");
  fi_param_define(provider, "progress_lcore", FI_PARAM_INT,
                  "DPDK worker lcore that runs automatic progress for domains opened "
                  "with FI_PROGRESS_AUTO; when it is not an idle worker, or the domain "
                  "is not opened from the main lcore, a thread runs it (default: -1, "
                  "the first idle worker lcore)");
  fi_param_define(provider, "progress_lcores", FI_PARAM_STRING,
                  "DPDK worker lcores that each run a progress loop for domains opened "
                  "with FI_PROGRESS_AUTO (ids and ranges: 1,2 or 1-3): ports go to the "
                  "loops in turn, and a port split in lanes (a net_ring steered by "
                  "sender) has its lanes shared out, one loop at a time a lane; a port of "
                  "any other device goes whole to one loop.  A listed lcore that is not an "
                  "idle worker gets a thread instead (default: unset, one loop, on "
                  "FI_DPDK_PROGRESS_LCORE, which is not read when this is set)");
  fi_param_define(provider, "progress_net_ms", FI_PARAM_INT,
                  "Under manual progress, a port no fi_* call has progressed for this "
                  "many milliseconds gets a progress pass from a helper thread, so lost "
                  "frames are retransmitted while the application waits elsewhere; 0 "
                  "turns this off (default: 2)");
  fi_param_define(provider, "idle_yield_us", FI_PARAM_INT,
                  "A thread that keeps reading an empty CQ or a counter while its port "
                  "receives nothing gives up its CPU (sched_yield) on each read after "
                  "this many microseconds of it, so a peer process waiting for the same "
                  "CPU runs; 0: never (default: 5)");
  fi_param_define(provider, "memif_unmap_guard", FI_PARAM_STRING,
                  "Whether net_memif's unmap of a connection's rings (on EAL's interrupt "
                  "thread, when the memif peer goes) first waits for the provider's bursts "
                  "on them to end: auto (on for DPDK 22.11 and 24.11, whose driver lets "
                  "a poller fault there; off for other releases), on, or off.  The guard "
                  "redirects every munmap call net_memif makes, process-wide "
                  "(default: auto)");
  for (const auto& fault : kFaultParams)
    fi_param_define(provider, fault.name, FI_PARAM_STRING, fault.help);
  fi_param_define(provider, "port_addr", FI_PARAM_STRING,
                  "IPv4 addresses of the ports, comma-separated, as PORT=A.B.C.D/N[@GW] "
                  "(PORT an ethdev name, GW the router beyond the subnet) or A.B.C.D/N[@GW] "
                  "for every port not named (an af_packet or af_xdp port that has neither "
                  "takes the kernel's address and default gateway on its interface): a "
                  "port with an address answers ARP and ping "
                  "for it, and its endpoints may be named by it (FI_SOCKADDR_IN, "
                  "fi_getinfo's node) on its subnet, and beyond it through GW with "
                  "FI_DPDK_ENCAP=udp.  An IPv6 item (PORT=fd00::2/64[@GW]) gives a port "
                  "an IPv6 address too, each family on its own: it answers neighbour "
                  "solicitations and ping for it, and its endpoints may be named by it "
                  "(FI_SOCKADDR_IN6) with FI_DPDK_ENCAP=udp "
                  "(default: none)");
  fi_param_define(provider, "encap", FI_PARAM_STRING,
                  "How frames reach peers named by IPv4 address: udp (Ethernet / IPv4 / "
                  "UDP to port_base + queue / our header: routers forward it) or l2 (their "
                  "MACs, resolved by ARP, and our EtherType: one segment only).  Peers "
                  "named by MAC always get our EtherType (default: udp)");
  fi_param_define(provider, "port_base", FI_PARAM_INT,
                  "The service port of an endpoint on queue 0; queue N has port_base + N, "
                  "in FI_SOCKADDR_IN addresses and as fi_getinfo's service (default: 9228)");
  fi_param_define(provider, "spray_paths", FI_PARAM_INT,
                  "Paths (UDP source ports) one connection spreads its frames over at "
                  "once, 1 to 8: routers with equal-cost routes then carry one "
                  "connection on several, a resent segment takes another path, and a "
                  "path that loses a segment is replaced; the receiver takes the "
                  "reordering.  1: one path at a time, moved on a retransmission "
                  "timeout (default: 1)");
  fi_param_define(provider, "auth_key", FI_PARAM_STRING,
                  "A job key, 32 to 128 hex digits (16 to 64 bytes): every frame then "
                  "carries a 64-bit keyed tag over its header and payload in place of its "
                  "CRC, and only frames with a right tag are taken, so nobody without the "
                  "key can forge, reset or redirect anything.  Every process of the job "
                  "needs the same key (default: none)");
  fi_param_define(provider, "routed_mtu", FI_PARAM_INT,
                  "Bytes after the Ethernet header a frame to a peer beyond the gateway may "
                  "have (FI_DPDK_ENCAP=udp): routers' links need not carry the port's MTU, "
                  "and frames go with DF set; 0 takes the port's (default: 1500)");
  fi_param_define(provider, "neighbours", FI_PARAM_STRING,
                  "Static neighbours, comma-separated IP=MAC items (10.0.0.2=02:00:00:00:00:02, "
                  "fd00::2=02:00:00:00:00:03): each port whose subnet or prefix holds the "
                  "address sends to that MAC without asking, and nothing it receives "
                  "replaces it.  An af_packet or af_xdp port also takes the kernel's "
                  "permanent neighbours on its interface (ip neigh ... nud permanent); "
                  "these items win over them (default: none)");
  fi_param_define(provider, "neighbour_lifetime_ms", FI_PARAM_INT,
                  "Milliseconds a neighbour's ARP answer is trusted; one in use is asked "
                  "for again after half of it (default: 60000)");
  fi_param_define(provider, "resolve_timeout_ms", FI_PARAM_INT,
                  "Milliseconds to wait for the ARP answer of a peer named by IPv4 address "
                  "before fi_av_insert or fi_connect gives up on it (default: 3000)");
  fi_param_define(provider, "fault_delay_us", FI_PARAM_INT,
                  "How long the fault injector holds a delayed frame, in microseconds "
                  "(default: 100)");
  fi_param_define(provider, "fault_seed", FI_PARAM_SIZE_T,
                  "Seed of the fault injector's random choices (default: 1)");
}

std::optional<ip::Interface> port_interface(const std::string& port_name,
                                            const std::string& kernel_interface) {
  std::optional<ip::Interface> any;
  for (const auto& [name, interface] : params().port_addrs) {
    if (name == port_name) return interface;
    if (name.empty()) any = interface;
  }
  return any ? any : kernel_interface_address(kernel_interface);
}

std::optional<ip::Interface6> port_interface6(const std::string& port_name,
                                              const std::string& kernel_interface) {
  std::optional<ip::Interface6> any;
  for (const auto& [name, interface] : params().port_addrs6) {
    if (name == port_name) return interface;
    if (name.empty()) any = interface;
  }
  return any ? any : kernel_interface_address6(kernel_interface);
}

const Params& params() {
  // A function-local static: after the first call one load of its guard,
  // where std::call_once went through __tls_get_addr on every call (2 % of
  // a small send, which asks passes_come_anyway()).
  static const Params loaded = [] {
    Params p = load();
    // Said once, wherever the parameters are first read: in a DPDK program
    // that started EAL itself as much as where the provider starts it.
    if (!p.errors.empty())
      DPDK_WARN(FI_LOG_CORE, "ignoring bad parameter values:%s\n", p.errors.c_str());
    return p;
  }();
  return loaded;
}

}  // namespace ofi_dpdk::ofi
