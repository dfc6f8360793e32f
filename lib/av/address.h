// address.h: an endpoint's address, in the two forms users see.
//
// Native form (what fi_getname returns and fi_av_insert takes), 16 bytes:
//   byte 0      kAddressFormatTag (0xDF), byte 1 kAddressVersion (1)
//   bytes 2-7   MAC address of the port
//   bytes 8-9   queue id of the endpoint at that port, big-endian
//   bytes 10-11 zero
//   bytes 12-15 session (incarnation) of the endpoint, big-endian;
//               0 means "whichever incarnation answers"
// String form (FI_ADDR_STR, fi_av_straddr):
//   fi_dpdk://02:00:00:00:00:01/3           (session 0)
//   fi_dpdk://02:00:00:00:00:01/3/5f3a9c01  (session in hex)
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace ofi_dpdk::av {

inline constexpr uint8_t kAddressFormatTag = 0xDF;
inline constexpr uint8_t kAddressVersion = 1;
inline constexpr size_t kNativeAddressSize = 16;
inline constexpr std::string_view kStringPrefix = "fi_dpdk://";
// Longest string form plus the terminating NUL.
inline constexpr size_t kStringAddressSize =
    10 /*prefix*/ + 17 /*mac*/ + 1 + 5 /*queue*/ + 1 + 8 /*session*/ + 1;

struct Address {
  uint8_t mac[6] = {};
  uint16_t queue = 0;
  uint32_t session = 0;
  // The IPv4 address (host order) the endpoint was named by or is known
  // by, when it has one (FI_SOCKADDR_IN); 0: none.  Not in the native or
  // string forms.  An address named only by IPv4 has a zero MAC until its
  // port resolves it (ARP).
  uint32_t ipv4 = 0;
  // The IPv6 address it was named by or is known by (FI_SOCKADDR_IN6), in
  // network order; all zero: none.  Not in the native or string forms
  // either; such a peer's MAC is its peer id (lib/ip/ipv6_peers.h) once its
  // port named it.
  std::array<uint8_t, 16> ipv6{};

  bool has_ipv6() const {
    for (uint8_t b : ipv6)
      if (b != 0) return true;
    return false;
  }
  // Named by an IP address of either family.
  bool has_ip() const { return ipv4 != 0 || has_ipv6(); }
  // Named by an IPv6 address alone: its peer id is still to be given.
  bool named_by_ipv6_alone() const {
    for (uint8_t b : mac)
      if (b != 0) return false;
    return ipv4 == 0 && has_ipv6();
  }

  bool same_endpoint(const Address& other) const;  // MAC and queue
  bool operator==(const Address&) const = default;
};

// Writes the native form to out (kNativeAddressSize bytes).
void to_native(const Address& address, uint8_t* out);
// Parses the native form; nullopt if the length, tag or version is wrong.
std::optional<Address> from_native(const void* in, size_t length);

// The string form, as above.
std::string to_string(const Address& address);
// Parses the string form; nullopt on any syntax error or out-of-range field.
std::optional<Address> from_string(std::string_view text);

// The highest queue id an address may name: 0xFFFF means "any queue".
inline constexpr uint16_t kMaxQueue = 0xFFFE;

// A service string as fi_av_insertsvc takes it: a decimal queue id, 0 to
// kMaxQueue.  nullopt on anything else.
std::optional<uint16_t> parse_queue(std::string_view text);
// fi_av_insertsvc's node and service: a MAC and a decimal queue, or an
// fi_dpdk:// string with service NULL (fi_av(3)).  nullopt on error.
std::optional<Address> from_node_service(const char* node, const char* service);

// fi_av_insertsym: `nodecnt` consecutive MACs (the MAC counted as one 48-bit
// number) times `svccnt` consecutive queues from `first`.  The range fits
// when neither count is 0 and neither the MAC nor the queue runs past its top.
bool symmetric_range_fits(const Address& first, size_t nodecnt, size_t svccnt);
// The i-th address of that range, in fi_av(3)'s order: every queue of a
// node before the next node.  Session 0.
Address symmetric_address(const Address& first, size_t svccnt, size_t i);

// Parses "02:00:00:00:00:01" (also with '-').  Returns false on error.
bool parse_mac(std::string_view text, uint8_t mac[6]);
std::string format_mac(const uint8_t mac[6]);

}  // namespace ofi_dpdk::av
