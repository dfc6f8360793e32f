#include "lib/ip/ipv6.h"

#include <arpa/inet.h>

#include <algorithm>
#include <charconv>
#include <cstdio>

#include "lib/ip/ipv4.h"

namespace ofi_dpdk::ip {

bool Ipv6::unspecified() const {
  return std::all_of(bytes.begin(), bytes.end(), [](uint8_t b) { return b == 0; });
}

bool Ipv6::loopback() const {
  return std::all_of(bytes.begin(), bytes.end() - 1, [](uint8_t b) { return b == 0; }) &&
         bytes[15] == 1;
}

bool Ipv6::v4_mapped() const {
  return std::all_of(bytes.begin(), bytes.begin() + 10, [](uint8_t b) { return b == 0; }) &&
         bytes[10] == 0xFF && bytes[11] == 0xFF;
}

namespace {

std::optional<uint32_t> parse_prefix(std::string_view text) {
  if (text.empty() || text.size() > 3) return std::nullopt;
  uint32_t value = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc() || end != text.data() + text.size() || value > 128) return std::nullopt;
  return value;
}

}  // namespace

std::optional<Ipv6> parse_ipv6(std::string_view text) {
  // inet_pton wants a C string, and would stop at a NUL inside the text.
  char buffer[INET6_ADDRSTRLEN];
  if (text.size() >= sizeof buffer || text.find('\0') != std::string_view::npos)
    return std::nullopt;
  text.copy(buffer, text.size());
  buffer[text.size()] = '\0';
  Ipv6 address;
  static_assert(sizeof address.bytes == sizeof(in6_addr));
  if (inet_pton(AF_INET6, buffer, address.bytes.data()) != 1) return std::nullopt;
  return address;
}

std::string format_ipv6(const Ipv6& address) {
  // RFC 5952 (the zeros of the longest run, the first of equal ones,
  // compressed; lower case; an IPv4-mapped address ends in its dotted
  // quad), as inet_ntop writes it; but inet_ntop writes the deprecated
  // IPv4-compatible form (::a.b.c.d) for ::/96 too, which RFC 5952 does
  // not ask for: those are written in hex here.
  char text[INET6_ADDRSTRLEN];
  inet_ntop(AF_INET6, address.bytes.data(), text, sizeof text);
  std::string result = text;
  if (!address.v4_mapped() && result.find('.') != std::string::npos) {
    const unsigned high = address.bytes[12] << 8 | address.bytes[13];
    const unsigned low = address.bytes[14] << 8 | address.bytes[15];
    char tail[16];  // (inet_ntop does this only when the 7th group is not 0)
    std::snprintf(tail, sizeof tail, "%x:%x", high, low);
    result = result.substr(0, result.rfind(':') + 1) + tail;
  }
  return result;
}

Ipv6 mapped_ipv4(uint32_t address) {
  Ipv6 mapped;
  mapped.bytes[10] = mapped.bytes[11] = 0xFF;
  for (int i = 0; i < 4; ++i) mapped.bytes[12 + i] = static_cast<uint8_t>(address >> (24 - 8 * i));
  return mapped;
}

uint32_t ipv4_of_mapped(const Ipv6& address) {
  return uint32_t{address.bytes[12]} << 24 | uint32_t{address.bytes[13]} << 16 |
         uint32_t{address.bytes[14]} << 8 | address.bytes[15];
}

Ipv6 solicited_node(const Ipv6& address) {
  Ipv6 group;
  group.bytes = {0xFF, 0x02, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x01, 0xFF};
  std::copy(address.bytes.begin() + 13, address.bytes.end(), group.bytes.begin() + 13);
  return group;
}

void multicast_mac(const Ipv6& group, uint8_t mac[6]) {
  mac[0] = 0x33;
  mac[1] = 0x33;
  std::copy(group.bytes.begin() + 12, group.bytes.end(), mac + 2);
}

namespace {

bool same_prefix(const Ipv6& a, const Ipv6& b, unsigned length) {
  const unsigned whole = length / 8, bits = length % 8;
  if (!std::equal(a.bytes.begin(), a.bytes.begin() + whole, b.bytes.begin())) return false;
  if (bits == 0) return true;
  const uint8_t mask = static_cast<uint8_t>(0xFF00 >> bits);
  return (a.bytes[whole] & mask) == (b.bytes[whole] & mask);
}

bool ownable(const Ipv6& address) {
  return !address.unspecified() && !address.loopback() && !address.multicast() &&
         !address.v4_mapped() && !address.link_local();
}

}  // namespace

bool Interface6::on_link(const Ipv6& other) const {
  return other.link_local() || same_prefix(other, address, prefix_length);
}

Ipv6 Interface6::next_hop(const Ipv6& destination) const {
  return on_link(destination) ? destination : gateway;
}

bool Interface6::unicast(const Ipv6& other) const {
  return !other.unspecified() && !other.loopback() && !other.multicast() && !other.v4_mapped();
}

std::optional<Interface6> parse_interface6(std::string_view text) {
  Interface6 interface;
  std::optional<Ipv6> gateway;
  const size_t at = text.find('@');
  if (at != std::string_view::npos) {
    gateway = parse_ipv6(text.substr(at + 1));
    if (!gateway || !interface.unicast(*gateway)) return std::nullopt;
    text = text.substr(0, at);
  }
  const size_t slash = text.find('/');
  if (slash != std::string_view::npos) {
    const auto length = parse_prefix(text.substr(slash + 1));
    if (!length) return std::nullopt;
    interface.prefix_length = static_cast<uint8_t>(*length);
    text = text.substr(0, slash);
  }
  const auto address = parse_ipv6(text);
  if (!address || !ownable(*address)) return std::nullopt;
  interface.address = *address;
  if (gateway) {
    if (*gateway == *address || !interface.on_link(*gateway)) return std::nullopt;
    interface.gateway = *gateway;
  }
  return interface;
}

std::string format_interface6(const Interface6& interface) {
  std::string text = format_ipv6(interface.address) + "/" + std::to_string(interface.prefix_length);
  if (!interface.gateway.unspecified()) text += "@" + format_ipv6(interface.gateway);
  return text;
}

}  // namespace ofi_dpdk::ip
