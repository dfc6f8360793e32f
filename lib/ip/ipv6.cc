#include "lib/ip/ipv6.h"

#include <algorithm>
#include <charconv>
#include <vector>

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

// The groups of one side of "::": 16-bit groups, the last of which may be
// a dotted IPv4 address (two groups) when `tail_may_be_ipv4`.  False on
// any syntax error.
bool parse_groups(std::string_view text, bool tail_may_be_ipv4, std::vector<uint16_t>* groups) {
  if (text.empty()) return true;
  while (true) {
    const size_t colon = text.find(':');
    const std::string_view group = text.substr(0, colon);
    if (colon == std::string_view::npos && tail_may_be_ipv4 &&
        group.find('.') != std::string_view::npos) {
      const auto v4 = parse_ipv4(group);
      if (!v4) return false;
      groups->push_back(static_cast<uint16_t>(*v4 >> 16));
      groups->push_back(static_cast<uint16_t>(*v4));
      return true;
    }
    if (group.empty() || group.size() > 4) return false;
    uint16_t value = 0;
    const auto [end, error] = std::from_chars(group.data(), group.data() + group.size(), value, 16);
    if (error != std::errc() || end != group.data() + group.size()) return false;
    groups->push_back(value);
    if (colon == std::string_view::npos) return true;
    text = text.substr(colon + 1);
  }
}

std::optional<uint32_t> parse_prefix(std::string_view text) {
  if (text.empty() || text.size() > 3) return std::nullopt;
  uint32_t value = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc() || end != text.data() + text.size() || value > 128) return std::nullopt;
  return value;
}

}  // namespace

std::optional<Ipv6> parse_ipv6(std::string_view text) {
  // Hex digits, colons and dots only: from_chars would take a sign.
  if (text.empty() || text.size() > 45 ||
      text.find_first_not_of("0123456789abcdefABCDEF:.") != std::string_view::npos)
    return std::nullopt;
  std::vector<uint16_t> head, tail;
  const size_t gap = text.find("::");
  if (gap == std::string_view::npos) {
    if (!parse_groups(text, true, &head) || head.size() != 8) return std::nullopt;
  } else {
    const std::string_view before = text.substr(0, gap), after = text.substr(gap + 2);
    if (after.find("::") != std::string_view::npos) return std::nullopt;
    if (!parse_groups(before, false, &head) || !parse_groups(after, true, &tail) ||
        head.size() + tail.size() > 7)
      return std::nullopt;
    head.resize(8 - tail.size(), 0);
    head.insert(head.end(), tail.begin(), tail.end());
  }
  Ipv6 address;
  for (size_t i = 0; i < 8; ++i) {
    address.bytes[2 * i] = static_cast<uint8_t>(head[i] >> 8);
    address.bytes[2 * i + 1] = static_cast<uint8_t>(head[i]);
  }
  return address;
}

std::string format_ipv6(const Ipv6& address) {
  // RFC 5952 section 5: an IPv4-mapped address ends in its dotted quad.
  if (address.v4_mapped()) return "::ffff:" + format_ipv4(ipv4_of_mapped(address));
  uint16_t groups[8];
  for (int i = 0; i < 8; ++i)
    groups[i] = static_cast<uint16_t>(address.bytes[2 * i] << 8 | address.bytes[2 * i + 1]);
  int best_start = -1, best_length = 1;  // a run must be two groups or more
  for (int i = 0; i < 8;) {
    if (groups[i] != 0) {
      ++i;
      continue;
    }
    int end = i;
    while (end < 8 && groups[end] == 0) ++end;
    if (end - i > best_length) best_start = i, best_length = end - i;
    i = end;
  }
  std::string text;
  char digits[8];
  for (int i = 0; i < 8; ++i) {
    if (i == best_start) {
      text += "::";
      i += best_length - 1;
      continue;
    }
    if (!text.empty() && text.back() != ':') text += ':';
    const auto [end, error] = std::to_chars(digits, digits + sizeof digits, groups[i], 16);
    text.append(digits, end);
  }
  return text;
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
  std::string text =
      format_ipv6(interface.address) + "/" + std::to_string(interface.prefix_length);
  if (!interface.gateway.unspecified()) text += "@" + format_ipv6(interface.gateway);
  return text;
}

}  // namespace ofi_dpdk::ip
