#include "lib/ip/ipv4.h"

#include <arpa/inet.h>

#include <charconv>

namespace ofi_dpdk::ip {
namespace {

// A decimal number of at most `digits` digits and at most `max`, the whole
// of `text`.
std::optional<uint32_t> parse_decimal(std::string_view text, size_t digits, uint32_t max) {
  if (text.empty() || text.size() > digits) return std::nullopt;
  uint32_t value = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc() || end != text.data() + text.size() || value > max) return std::nullopt;
  return value;
}

}  // namespace

std::optional<Ipv4> parse_ipv4(std::string_view text) {
  // inet_pton wants a C string (a dotted quad is at most 15 characters),
  // and would stop at a NUL inside the text.
  char buffer[INET_ADDRSTRLEN];
  if (text.size() >= sizeof buffer || text.find('\0') != std::string_view::npos)
    return std::nullopt;
  text.copy(buffer, text.size());
  buffer[text.size()] = '\0';
  in_addr address{};
  if (inet_pton(AF_INET, buffer, &address) != 1) return std::nullopt;
  return ntohl(address.s_addr);
}

std::string format_ipv4(Ipv4 address) {
  const in_addr wire{htonl(address)};
  char text[INET_ADDRSTRLEN];
  return inet_ntop(AF_INET, &wire, text, sizeof text);
}

bool Interface::on_link(Ipv4 other) const {
  if (prefix_length == 0) return true;
  const Ipv4 mask = prefix_length >= 32 ? ~Ipv4{0} : ~(~Ipv4{0} >> prefix_length);
  return (other & mask) == (address & mask);
}

Ipv4 Interface::next_hop(Ipv4 destination) const {
  return on_link(destination) ? destination : gateway;
}

namespace {

bool ownable(Ipv4 address) {
  return address != 0 && address != 0xFFFFFFFF && (address >> 28) != 0xE;
}

}  // namespace

bool Interface::unicast(Ipv4 other) const {
  if (other == 0 || other >= 0xE0000000) return false;  // 224/4 and 240/4
  if (prefix_length >= 31 || !on_link(other)) return true;
  const Ipv4 host_bits = ~Ipv4{0} >> prefix_length;
  return (other & host_bits) != host_bits;
}

std::optional<Interface> parse_interface(std::string_view text) {
  Interface interface;
  interface.prefix_length = 32;
  std::optional<Ipv4> gateway;
  const size_t at = text.find('@');
  if (at != std::string_view::npos) {
    gateway = parse_ipv4(text.substr(at + 1));
    if (!gateway || !ownable(*gateway)) return std::nullopt;
    text = text.substr(0, at);
  }
  const size_t slash = text.find('/');
  if (slash != std::string_view::npos) {
    const auto length = parse_decimal(text.substr(slash + 1), 2, 32);
    if (!length) return std::nullopt;
    interface.prefix_length = static_cast<uint8_t>(*length);
    text = text.substr(0, slash);
  }
  const auto address = parse_ipv4(text);
  if (!address || !ownable(*address)) return std::nullopt;
  interface.address = *address;
  if (gateway) {
    if (*gateway == *address || !interface.on_link(*gateway)) return std::nullopt;
    interface.gateway = *gateway;
  }
  return interface;
}

std::string format_interface(const Interface& interface) {
  std::string text = format_ipv4(interface.address) + "/" + std::to_string(interface.prefix_length);
  if (interface.gateway != 0) text += "@" + format_ipv4(interface.gateway);
  return text;
}

}  // namespace ofi_dpdk::ip
