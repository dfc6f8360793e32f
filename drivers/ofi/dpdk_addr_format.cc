// dpdk_addr_format.cc: the address formats the provider speaks, in one
// place: native (FI_FORMAT_UNSPEC, av::to_native), FI_ADDR_STR
// (fi_dpdk://MAC/queue), FI_SOCKADDR_IN and FI_SOCKADDR_IN6 (an IP address
// and a service port: FI_DPDK_PORT_BASE + the endpoint's queue), and
// FI_SOCKADDR (either, by its family).  Every fi_* entry point
// that takes or gives an address (fi_getinfo, fi_getname, fi_av_*, fi_cm)
// goes through here.
#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>

#include <cstddef>
#include <cstring>

#include "drivers/ofi/dpdk_attr.h"
#include "drivers/ofi/dpdk_limits.h"
#include "drivers/ofi/dpdk_params.h"

namespace ofi_dpdk::ofi {

// Ports and queues map one to one, modulo 65536: port = base + queue.  Only
// queues below kMaxEndpointsPerPort are endpoints; the ports of the others
// are still addresses (of no endpoint here), as any UDP port is one.  Port 0
// is any queue; the queue whose port would be 0, and the port that would
// be kAnyQueue's (base - 1), have no counterpart.
uint16_t service_port(uint16_t queue) {
  return queue == kAnyQueue ? 0 : static_cast<uint16_t>(params().port_base + queue);
}

std::optional<uint16_t> queue_of_service_port(uint16_t port) {
  if (port == 0) return kAnyQueue;
  const auto queue = static_cast<uint16_t>(port - params().port_base);
  if (queue == kAnyQueue) return std::nullopt;
  return queue;
}

std::optional<uint16_t> parse_service_queue(const char* service) {
  if (service == nullptr || *service == '\0') return std::nullopt;
  uint32_t value = 0;
  for (const char* c = service; *c != '\0'; ++c) {
    if (*c < '0' || *c > '9' || value > 0xFFFF) return std::nullopt;
    value = value * 10 + static_cast<uint32_t>(*c - '0');
  }
  if (value > 0xFFFF) return std::nullopt;
  if (value < kMaxEndpointsPerPort) return static_cast<uint16_t>(value);
  const auto queue = queue_of_service_port(static_cast<uint16_t>(value));
  if (!queue || *queue >= kMaxEndpointsPerPort) return std::nullopt;
  return queue;
}

// An IPv4 address for a node: a dotted quad, or a host name the system
// resolves to one (/etc/hosts, DNS).
std::optional<uint32_t> host_ipv4(const char* node) {
  if (auto numeric = ip::parse_ipv4(node)) return numeric;
  addrinfo hints{};
  hints.ai_family = AF_INET;
  addrinfo* found = nullptr;
  if (getaddrinfo(node, nullptr, &hints, &found) != 0 || found == nullptr) return std::nullopt;
  uint32_t address = 0;
  for (addrinfo* a = found; a != nullptr && address == 0; a = a->ai_next)
    if (a->ai_family == AF_INET && a->ai_addrlen >= sizeof(sockaddr_in))
      address = ntohl(reinterpret_cast<const sockaddr_in*>(a->ai_addr)->sin_addr.s_addr);
  freeaddrinfo(found);
  if (address == 0) return std::nullopt;
  return address;
}

// An IPv6 address for a node: its text form, or a host name the system
// resolves to one (and to no IPv4 address: host_ipv4 is asked first).
std::optional<ip::Ipv6> host_ipv6(const char* node) {
  if (auto numeric = ip::parse_ipv6(node)) return numeric;
  addrinfo hints{};
  hints.ai_family = AF_INET6;
  addrinfo* found = nullptr;
  if (getaddrinfo(node, nullptr, &hints, &found) != 0 || found == nullptr) return std::nullopt;
  std::optional<ip::Ipv6> address;
  for (addrinfo* a = found; a != nullptr && !address; a = a->ai_next) {
    if (a->ai_family != AF_INET6 || a->ai_addrlen < sizeof(sockaddr_in6)) continue;
    ip::Ipv6 candidate;
    std::memcpy(candidate.bytes.data(),
                reinterpret_cast<const sockaddr_in6*>(a->ai_addr)->sin6_addr.s6_addr, 16);
    if (!candidate.unspecified()) address = candidate;
  }
  freeaddrinfo(found);
  return address;
}

bool name_by_host(const char* node, av::Address* address) {
  if (auto ipv4 = host_ipv4(node)) {
    address->ipv4 = *ipv4;
    return true;
  }
  if (auto ipv6 = host_ipv6(node)) {
    address->ipv6 = ipv6->bytes;
    return true;
  }
  return false;
}

bool address_format_supported(uint32_t format) {
  return format == FI_FORMAT_UNSPEC || format == FI_ADDR_STR || format == FI_SOCKADDR_IN ||
         format == FI_SOCKADDR_IN6 || format == FI_SOCKADDR;
}

bool is_sockaddr_format(uint32_t format) {
  return format == FI_SOCKADDR_IN || format == FI_SOCKADDR_IN6 || format == FI_SOCKADDR;
}

namespace {

// FI_SOCKADDR gives IPv6 sockaddrs for addresses known by IPv6 alone.
bool speaks_ipv6(uint32_t format, const av::Address& address) {
  return format == FI_SOCKADDR_IN6 ||
         (format == FI_SOCKADDR && address.ipv4 == 0 && address.has_ipv6());
}

}  // namespace

std::vector<uint8_t> encode_address(uint32_t format, const av::Address& address) {
  if (format == FI_ADDR_STR) {
    const std::string text = av::to_string(address);
    return std::vector<uint8_t>(text.c_str(), text.c_str() + text.size() + 1);
  }
  if (speaks_ipv6(format, address)) {
    if (!address.has_ip() && address.queue != kAnyQueue) return {};
    if (address.queue != kAnyQueue && service_port(address.queue) == 0) return {};
    sockaddr_in6 in6{};
    in6.sin6_family = AF_INET6;
    in6.sin6_port = htons(service_port(address.queue));
    // A peer known by IPv4 alone, as IPv4-mapped (an FI_SOCKADDR_IN6
    // endpoint on a port of both families hears from IPv4 peers too).
    const auto bytes6 = address.has_ipv6() || address.ipv4 == 0
                            ? address.ipv6
                            : ip::mapped_ipv4(address.ipv4).bytes;
    std::memcpy(in6.sin6_addr.s6_addr, bytes6.data(), 16);
    const auto* bytes = reinterpret_cast<const uint8_t*>(&in6);
    return std::vector<uint8_t>(bytes, bytes + sizeof(in6));
  }
  if (is_sockaddr_format(format)) {
    if (address.ipv4 == 0 && address.queue != kAnyQueue) return {};
    if (address.queue != kAnyQueue && service_port(address.queue) == 0) return {};
    sockaddr_in in{};
    in.sin_family = AF_INET;
    in.sin_port = htons(service_port(address.queue));
    in.sin_addr.s_addr = htonl(address.ipv4);
    const auto* bytes = reinterpret_cast<const uint8_t*>(&in);
    return std::vector<uint8_t>(bytes, bytes + sizeof(in));
  }
  std::vector<uint8_t> native(av::kNativeAddressSize);
  av::to_native(address, native.data());
  return native;
}

std::optional<av::Address> decode_address(uint32_t format, const void* in, size_t length) {
  if (in == nullptr) return std::nullopt;
  if (format == FI_ADDR_STR) {
    const auto* text = static_cast<const char*>(in);
    return av::from_string(std::string_view(text, strnlen(text, length)));
  }
  if (is_sockaddr_format(format)) {
    sa_family_t family;
    if (length < sizeof(family)) return std::nullopt;
    std::memcpy(&family, static_cast<const uint8_t*>(in) + offsetof(sockaddr, sa_family),
                sizeof(family));
    if (family == AF_INET6 && format != FI_SOCKADDR_IN) {
      sockaddr_in6 sin6;
      if (length < sizeof(sin6)) return std::nullopt;
      std::memcpy(&sin6, in, sizeof(sin6));
      const auto queue = queue_of_service_port(ntohs(sin6.sin6_port));
      if (!queue) return std::nullopt;
      av::Address address;
      address.queue = *queue;
      std::memcpy(address.ipv6.data(), sin6.sin6_addr.s6_addr, 16);
      // An IPv4-mapped address (::ffff:a.b.c.d) is that IPv4 address.
      if (ip::Ipv6{address.ipv6}.v4_mapped()) {
        address.ipv4 = ip::ipv4_of_mapped(ip::Ipv6{address.ipv6});
        address.ipv6 = {};
      }
      return address;
    }
    sockaddr_in sin;
    if (format == FI_SOCKADDR_IN6 || length < sizeof(sin)) return std::nullopt;
    std::memcpy(&sin, in, sizeof(sin));
    if (sin.sin_family != AF_INET) return std::nullopt;
    const auto queue = queue_of_service_port(ntohs(sin.sin_port));
    if (!queue) return std::nullopt;
    av::Address address;
    address.queue = *queue;
    address.ipv4 = ntohl(sin.sin_addr.s_addr);
    return address;
  }
  if (format != FI_FORMAT_UNSPEC) return std::nullopt;
  return av::from_native(in, length);
}

size_t address_size(uint32_t format) {
  if (format == FI_SOCKADDR_IN6) return sizeof(sockaddr_in6);
  return is_sockaddr_format(format) ? sizeof(sockaddr_in) : av::kNativeAddressSize;
}

std::string address_string(uint32_t format, const av::Address& address) {
  if (speaks_ipv6(format, address))
    return "fi_sockaddr_in6://[" + ip::format_ipv6(ip::Ipv6{address.ipv6}) +
           "]:" + std::to_string(service_port(address.queue));
  if (is_sockaddr_format(format))
    return "fi_sockaddr_in://" + ip::format_ipv4(address.ipv4) + ":" +
           std::to_string(service_port(address.queue));
  return av::to_string(address);
}

int write_address(uint32_t format, const av::Address& address, void* out, size_t* length) {
  const std::vector<uint8_t> bytes = encode_address(format, address);
  if (bytes.empty()) return -FI_EADDRNOTAVAIL;
  const size_t room = *length;
  *length = bytes.size();
  // fi_cm(3), fi_av(3): a larger address is truncated to the buffer.
  if (out != nullptr && room != 0) {
    std::memcpy(out, bytes.data(), std::min(room, bytes.size()));
    // A string cut short still ends in its NUL.
    if (format == FI_ADDR_STR && room < bytes.size()) static_cast<char*>(out)[room - 1] = '\0';
  }
  return room < bytes.size() ? -FI_ETOOSMALL : 0;
}

}  // namespace ofi_dpdk::ofi
