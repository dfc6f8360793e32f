// dpdk_getinfo.cc: fi_getinfo for the provider: EAL on first use, one
// fi_info per usable port, node/service/FI_SOURCE resolution, and a log line
// at FI_LOG_LEVEL=info for every port passed over.
#include "drivers/ofi/dpdk_getinfo.h"

#include <cstring>
#include <optional>
#include <string_view>

#include "drivers/ofi/dpdk_attr.h"
#include "drivers/ofi/dpdk_limits.h"
#include "drivers/ofi/dpdk_log.h"
#include "drivers/ofi/dpdk_params.h"

namespace ofi_dpdk::ofi {
namespace {

// The ports FI_DPDK_PORTS names, or all of them.
std::vector<uint16_t> selected_ports() {
  const std::string& list = params().ports;
  if (list.empty()) return net::available_ports();
  std::vector<uint16_t> ports;
  std::string_view rest(list);
  while (!rest.empty()) {
    const size_t comma = rest.find(',');
    const std::string_view item = rest.substr(0, comma);
    if (!item.empty()) {
      if (auto port = net::find_port(item)) {
        ports.push_back(*port);
      } else {
        DPDK_INFO(FI_LOG_CORE, "FI_DPDK_PORTS names %.*s, which is no DPDK port\n",
                  static_cast<int>(item.size()), item.data());
      }
    }
    rest = comma == std::string_view::npos ? std::string_view() : rest.substr(comma + 1);
  }
  return ports;
}

bool names_a_port(const char* node) {
  for (uint16_t port_id : net::available_ports()) {
    net::PortDescription port;
    if (net::describe_port(port_id, &port) && port.name == node) return true;
  }
  return false;
}

// A node as the user may type it: fi_dpdk://MAC/queue[/session], a MAC
// with the queue from service, or an IPv4 or IPv6 address or host name with the
// queue from service (a port's own, with FI_SOURCE, or a peer's).
std::optional<av::Address> parse_node(const char* node, const char* service, uint64_t flags) {
  if (node == nullptr) return std::nullopt;
  std::string_view text(node);
  if (text.starts_with(av::kStringPrefix)) {
    if (service != nullptr) return std::nullopt;  // fi_getinfo(3): service must be NULL
    return av::from_string(text);
  }
  av::Address address;
  if (av::parse_mac(text, address.mac)) return address;
  // (A device name is a local node, not a host name to look up.)
  if ((flags & FI_SOURCE) && names_a_port(node)) return std::nullopt;
  if (name_by_host(node, &address)) {
    // A local address without a service, as a socket's without a port: any
    // queue (a peer's is queue 0 until service names another).
    if ((flags & FI_SOURCE) && service == nullptr) address.queue = kAnyQueue;
    return address;
  }
  return std::nullopt;
}

struct Request {
  std::optional<av::Address> source;  // local address asked for
  bool source_is_port_name = false;
  std::string source_port_name;
  std::optional<av::Address> dest;
  bool sockaddr_format = false;  // hints->addr_format asks for sockaddrs
  bool ipv6_format = false;      // hints->addr_format is FI_SOCKADDR_IN6

  bool by_ipv4() const { return (source && source->ipv4 != 0) || (dest && dest->ipv4 != 0); }
  bool by_ipv6() const {
    return (source && source->has_ipv6()) || (dest && dest->has_ipv6()) || ipv6_format;
  }
};

// Turns node, service, FI_SOURCE and the hints' addresses into a request.
// Returns false (after logging) when they cannot be parsed.
bool parse_request(const char* node, const char* service, uint64_t flags, const fi_info* hints,
                   Request* request) {
  const bool have_node_or_service = node != nullptr || service != nullptr;
  std::optional<uint16_t> queue;
  if (service != nullptr) {
    // An endpoint's queue is one of a port's first kMaxEndpointsPerPort,
    // named by its number or its service port: a service beyond them (a
    // program's default port number, say) names no endpoint this provider
    // can open or reach.
    queue = parse_service_queue(service);
    if (!queue) {
      DPDK_INFO(FI_LOG_CORE,
                "service \"%s\" names no endpoint: a queue number 0 to %u, or a port %u to %u "
                "(FI_DPDK_PORT_BASE)\n",
                service, kMaxEndpointsPerPort - 1, params().port_base,
                params().port_base + kMaxEndpointsPerPort - 1);
      return false;
    }
  }
  std::optional<av::Address> node_address;
  if (node != nullptr) {
    node_address = parse_node(node, service, flags);
    if (!node_address && !(flags & FI_SOURCE)) {
      DPDK_INFO(FI_LOG_CORE,
                "node \"%s\" is no MAC address, fi_dpdk://MAC/queue, IP address or host "
                "name of one\n",
                node);
      return false;
    }
    if (node_address && queue) node_address->queue = *queue;
  }
  if (flags & FI_SOURCE) {
    if (node != nullptr && !node_address) {
      // A local node may also be a port's device name.
      request->source_is_port_name = true;
      request->source_port_name = node;
    }
    if (node_address) {
      request->source = node_address;
    } else if (queue) {
      request->source = av::Address{};
      request->source->queue = *queue;
    }
    if (hints != nullptr && hints->dest_addr != nullptr) {
      request->dest = info_address(hints, false);
      if (!request->dest) {
        DPDK_INFO(FI_LOG_CORE, "hints->dest_addr is not an address of this provider\n");
        return false;
      }
    }
    return true;
  }
  if (node_address) {
    request->dest = node_address;
  } else if (queue) {
    // Only a service: a local address with that queue.
    request->source = av::Address{};
    request->source->queue = *queue;
  }
  if (hints != nullptr && hints->src_addr != nullptr) {
    request->source = info_address(hints, true);
    if (!request->source) {
      DPDK_INFO(FI_LOG_CORE, "hints->src_addr is not an address of this provider\n");
      return false;
    }
  }
  if (!have_node_or_service && hints != nullptr && hints->dest_addr != nullptr) {
    request->dest = info_address(hints, false);
    if (!request->dest) {
      DPDK_INFO(FI_LOG_CORE, "hints->dest_addr is not an address of this provider\n");
      return false;
    }
  }
  return true;
}

bool mac_is_zero(const uint8_t mac[6]) {
  static constexpr uint8_t kZero[6] = {};
  return std::memcmp(mac, kZero, 6) == 0;
}

// Why this port cannot serve the requested source address, or "" if it can.
// Why this port cannot serve a request by IPv6 address, or "" if it can:
// the port needs an IPv6 address and UDP (FI_DPDK_ENCAP=udp, not a shared
// port), the source must be its address, and a destination on its prefix
// or reached through its router.
std::string ipv6_mismatch(const Request& request, const net::PortDescription& port,
                          const std::optional<ip::Interface6>& interface6) {
  if (!interface6) return "it has no IPv6 address (FI_DPDK_PORT_ADDR)";
  if (!port_speaks_udp(true, port.shared))
    return port.shared ? "a shared port carries our EtherType only, and IPv6 peers need UDP"
                       : "IPv6 peers need UDP, and FI_DPDK_ENCAP=l2";
  if (request.source && request.source->has_ipv6() &&
      ip::Ipv6{request.source->ipv6} != interface6->address)
    return "source address " + ip::format_ipv6(ip::Ipv6{request.source->ipv6}) +
           " is not its address " + ip::format_interface6(*interface6);
  if (request.dest && request.dest->has_ipv6() &&
      interface6->next_hop(ip::Ipv6{request.dest->ipv6}).unspecified())
    return ip::format_ipv6(ip::Ipv6{request.dest->ipv6}) + " is not on its prefix " +
           ip::format_interface6(*interface6) + " and it has no router";
  return {};
}

// Why this port cannot serve the request's source and destination
// addresses, or "" if it can.  Addresses by IPv4 need the port to have an
// address (FI_DPDK_PORT_ADDR): the source's own, a destination on its
// subnet or, in UDP, beyond its gateway.
std::string port_mismatch(const Request& request, const net::PortDescription& port,
                          const std::optional<ip::Interface>& interface,
                          const std::optional<ip::Interface6>& interface6) {
  if (request.source_is_port_name && request.source_port_name != port.name)
    return "node names port " + request.source_port_name;
  if (request.source && !mac_is_zero(request.source->mac) &&
      std::memcmp(request.source->mac, port.mac, 6) != 0)
    return "source address " + av::format_mac(request.source->mac) + " is not its MAC";
  if (request.by_ipv6()) return ipv6_mismatch(request, port, interface6);
  // FI_SOCKADDR asks for either family.
  if (request.sockaddr_format && !request.by_ipv4() && !interface && interface6)
    return ipv6_mismatch(request, port, interface6);
  const bool by_ip = (request.source && request.source->ipv4 != 0) ||
                     (request.dest && request.dest->ipv4 != 0) || request.sockaddr_format;
  if (by_ip && !interface) return "it has no IPv4 address (FI_DPDK_PORT_ADDR)";
  if (request.source && request.source->ipv4 != 0 && request.source->ipv4 != interface->address)
    return "source address " + ip::format_ipv4(request.source->ipv4) + " is not its address " +
           ip::format_interface(*interface);
  // Beyond the subnet: through the gateway, in UDP.
  if (request.dest && request.dest->ipv4 != 0 && !interface->on_link(request.dest->ipv4) &&
      (interface->gateway == 0 || !port_speaks_udp(true, port.shared)))
    return ip::format_ipv4(request.dest->ipv4) + " is not on its subnet " +
           ip::format_interface(*interface) +
           (interface->gateway == 0 ? " and it has no gateway"
            : port.shared           ? " and a shared port carries our EtherType only"
                                    : " and FI_DPDK_ENCAP=l2");
  return {};
}

}  // namespace

int getinfo(uint32_t version, const char* node, const char* service, uint64_t flags,
            const fi_info* hints, fi_info** info) {
  *info = nullptr;
  if (flags & FI_PROV_ATTR_ONLY) {
    *info = make_prov_attr_only_info();
    return *info != nullptr ? 0 : -FI_ENOMEM;
  }
  const fi_ep_type wanted_type =
      hints != nullptr && hints->ep_attr != nullptr ? hints->ep_attr->type : FI_EP_UNSPEC;
  if (wanted_type != FI_EP_UNSPEC && wanted_type != FI_EP_RDM && wanted_type != FI_EP_MSG &&
      wanted_type != FI_EP_DGRAM) {
    DPDK_INFO(FI_LOG_CORE, "passed over: only FI_EP_RDM, FI_EP_MSG and FI_EP_DGRAM endpoints\n");
    return -FI_ENODATA;
  }
  if (ensure_eal() != 0) return -FI_ENODATA;

  Request request;
  if (!parse_request(node, service, flags, hints, &request)) return -FI_ENODATA;
  request.sockaddr_format = hints != nullptr && is_sockaddr_format(hints->addr_format);
  request.ipv6_format = hints != nullptr && hints->addr_format == FI_SOCKADDR_IN6;
  if ((request.by_ipv4() || request.by_ipv6()) && hints != nullptr &&
      hints->addr_format == FI_ADDR_STR) {
    DPDK_INFO(FI_LOG_CORE,
              "an IP node has no FI_ADDR_STR form: ask for FI_SOCKADDR_IN or "
              "FI_SOCKADDR_IN6\n");
    return -FI_ENODATA;
  }
  if (request.by_ipv4() && request.ipv6_format) {
    DPDK_INFO(FI_LOG_CORE, "an IPv4 node in FI_SOCKADDR_IN6: ask for FI_SOCKADDR_IN\n");
    return -FI_ENODATA;
  }
  if (request.by_ipv6() && hints != nullptr && hints->addr_format == FI_SOCKADDR_IN) {
    DPDK_INFO(FI_LOG_CORE, "an IPv6 node in FI_SOCKADDR_IN: ask for FI_SOCKADDR_IN6\n");
    return -FI_ENODATA;
  }

  const std::vector<uint16_t> ports = selected_ports();
  if (ports.empty()) DPDK_INFO(FI_LOG_CORE, "no DPDK ports: nothing to offer\n");
  fi_info* head = nullptr;
  fi_info** tail = &head;
  for (uint16_t port_id : ports) {
    net::PortDescription port;
    if (!net::describe_port(port_id, &port)) {
      DPDK_INFO(FI_LOG_CORE, "port %u passed over: no name or MAC address\n", port_id);
      continue;
    }
    const std::optional<ip::Interface> interface = port_interface(port.name, port.kernel_interface);
    const std::optional<ip::Interface6> interface6 =
        port_interface6(port.name, port.kernel_interface);
    if (std::string mismatch = port_mismatch(request, port, interface, interface6);
        !mismatch.empty()) {
      DPDK_INFO(FI_LOG_CORE, "port %s passed over: %s\n", port.name.c_str(), mismatch.c_str());
      continue;
    }
    PortFacts facts{port.name, {}, kMaxMsgSize, params().unexpected_bytes};
    std::memcpy(facts.mac, port.mac, 6);
    if (interface) facts.ipv4 = interface->address;
    if (interface6) facts.ipv6 = interface6->address.bytes;
    facts.udp = port_speaks_udp(interface.has_value(), port.shared);
    facts.udp6 = port_speaks_udp(interface6.has_value(), port.shared);
    // In IPv6: named by an IPv6 address, asked for FI_SOCKADDR_IN6, or on
    // a port that speaks UDP in IPv6 alone.
    const bool in_ipv6 = request.by_ipv6() || (!request.by_ipv4() && !facts.udp && facts.udp6 &&
                                               (!request.sockaddr_format || !interface));
    // Reliable endpoints first: what an application that names no type gets.
    for (const fi_ep_type type : {FI_EP_RDM, FI_EP_MSG, FI_EP_DGRAM}) {
      if (wanted_type != FI_EP_UNSPEC && wanted_type != type) continue;
      fi_info* offer = make_port_info(facts, version, type);
      if (offer == nullptr) {
        fi_freeinfo(head);
        return -FI_ENOMEM;
      }
      std::string why;
      if (!info_matches(offer, hints, version, &why)) {
        DPDK_INFO(FI_LOG_CORE, "port %s passed over for %s: %s\n", port.name.c_str(),
                  ep_type_name(type), why.c_str());
        fi_freeinfo(offer);
        continue;
      }
      narrow_info(offer, hints, version);
      // Named by IP address, or on a port that reaches its peers in UDP:
      // the answer speaks FI_SOCKADDR_IN (or _IN6), so that the addresses
      // fi_getname gives out are routable ones.  (The native form has no
      // room for the port's address: put it back.)
      if (((request.by_ipv4() || request.by_ipv6() || facts.udp || facts.udp6) &&
           offer->addr_format == FI_FORMAT_UNSPEC) ||
          is_sockaddr_format(offer->addr_format)) {
        auto any = info_address(offer, true);
        offer->addr_format = in_ipv6 ? FI_SOCKADDR_IN6 : FI_SOCKADDR_IN;
        if (any) {
          any->ipv4 = in_ipv6 ? 0 : facts.ipv4;
          any->ipv6 = in_ipv6 ? facts.ipv6 : std::array<uint8_t, 16>{};
          set_info_address(offer, true, *any);
        }
      }
      int ret = 0;
      if (request.source) {
        av::Address source = *request.source;
        std::memcpy(source.mac, port.mac, 6);
        source.ipv4 = in_ipv6 ? 0 : facts.ipv4;
        source.ipv6 = in_ipv6 ? facts.ipv6 : std::array<uint8_t, 16>{};
        ret = set_info_address(offer, true, source);
      }
      if (ret == 0 && request.dest) ret = set_info_address(offer, false, *request.dest);
      // fi_getinfo(3): a passive endpoint in hints->handle comes back in
      // info->handle (fi_endpoint then acquires its address).
      if (hints != nullptr && hints->handle != nullptr && hints->handle->fclass == FI_CLASS_PEP)
        offer->handle = hints->handle;
      if (ret != 0) {
        fi_freeinfo(offer);
        fi_freeinfo(head);
        return ret;
      }
      *tail = offer;
      tail = &offer->next;
    }
  }
  if (head == nullptr) return -FI_ENODATA;
  *info = head;
  return 0;
}

}  // namespace ofi_dpdk::ofi
