// ipv6.h: IPv6 addresses as the provider names ports and peers by them:
// 16 bytes in network order, RFC 5952 text, and a port's IPv6 interface
// (its address, prefix length and router, FI_DPDK_PORT_ADDR).
#pragma once

#include <array>
#include <compare>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

namespace ofi_dpdk::ip {

struct Ipv6 {
  std::array<uint8_t, 16> bytes{};  // network order; all zero is "none" (::)

  auto operator<=>(const Ipv6&) const = default;       // byte order, as in sets
  bool unspecified() const;                            // ::
  bool multicast() const { return bytes[0] == 0xFF; }  // ff00::/8
  bool link_local() const { return bytes[0] == 0xFE && (bytes[1] & 0xC0) == 0x80; }  // fe80::/10
  bool loopback() const;                                                             // ::1
  bool v4_mapped() const;  // ::ffff:0:0/96
};

// Text forms of RFC 4291 section 2.2: eight groups of up to four hex
// digits, "::" once for a run of zero groups, and a dotted IPv4 tail
// ("::ffff:10.0.0.1").  No zone ("%eth0") and no brackets.  nullopt on any
// error.
std::optional<Ipv6> parse_ipv6(std::string_view text);
// RFC 5952's canonical form: lower case, no leading zeros, the longest run
// of two or more zero groups (the first of equal ones) written "::", and
// an IPv4-mapped address as ::ffff:a.b.c.d.
std::string format_ipv6(const Ipv6& address);

// An IPv4 address as IPv4-mapped IPv6 (::ffff:a.b.c.d, RFC 4291 section
// 2.5.5.2), so that one key names a next hop of either family; and back
// (only for a v4_mapped() address).
Ipv6 mapped_ipv4(uint32_t address);
uint32_t ipv4_of_mapped(const Ipv6& address);

// The solicited-node multicast address of `address` (ff02::1:ffXX:XXXX,
// RFC 4291 section 2.7.1), where a neighbour solicitation for it goes.
Ipv6 solicited_node(const Ipv6& address);
// The Ethernet multicast address of an IPv6 multicast address
// (33:33 and its last four bytes, RFC 2464 section 7).
void multicast_mac(const Ipv6& group, uint8_t mac[6]);

// A port's own IPv6 address, its prefix, and the router beyond it.
struct Interface6 {
  Ipv6 address;
  uint8_t prefix_length = 128;  // 0 to 128
  Ipv6 gateway;                 // :: for none; may be link-local (fe80::/10)

  // Whether `other` is on this interface's link: in its prefix, or
  // link-local.
  bool on_link(const Ipv6& other) const;
  // The neighbour a packet for `destination` goes to: itself on the link,
  // else the gateway; :: when there is none.
  Ipv6 next_hop(const Ipv6& destination) const;
  // Whether `other` may be a peer: a unicast address that is neither ::,
  // loopback nor IPv4-mapped.
  bool unicast(const Ipv6& other) const;
};

// "fd00:1::2/64" (a missing "/N" means /128), optionally "@GATEWAY"
// ("fd00:1::2/64@fd00:1::1", or a link-local router "@fe80::1").  nullopt
// on any error, for an address no port may own (::, loopback, multicast,
// IPv4-mapped, link-local: a port needs an address a router forwards), and
// for a gateway that is neither on the prefix nor link-local, or the
// address itself.
std::optional<Interface6> parse_interface6(std::string_view text);
std::string format_interface6(const Interface6& interface);

}  // namespace ofi_dpdk::ip

template <>
struct std::hash<ofi_dpdk::ip::Ipv6> {
  size_t operator()(const ofi_dpdk::ip::Ipv6& address) const noexcept {
    uint64_t high = 0, low = 0;
    for (int i = 0; i < 8; ++i) high = high << 8 | address.bytes[i];
    for (int i = 8; i < 16; ++i) low = low << 8 | address.bytes[i];
    return std::hash<uint64_t>()(high * 0x9E3779B97F4A7C15ull ^ low);
  }
};
