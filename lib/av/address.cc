#include "lib/av/address.h"

#include <netinet/ether.h>

#include <cctype>
#include <charconv>
#include <cstdio>
#include <cstring>

namespace ofi_dpdk::av {

bool Address::same_endpoint(const Address& other) const {
  return std::memcmp(mac, other.mac, sizeof(mac)) == 0 && queue == other.queue;
}

void to_native(const Address& a, uint8_t* out) {
  out[0] = kAddressFormatTag;
  out[1] = kAddressVersion;
  std::memcpy(out + 2, a.mac, 6);
  out[8] = static_cast<uint8_t>(a.queue >> 8);
  out[9] = static_cast<uint8_t>(a.queue);
  out[10] = out[11] = 0;
  for (int i = 0; i < 4; ++i) out[12 + i] = static_cast<uint8_t>(a.session >> (24 - 8 * i));
}

std::optional<Address> from_native(const void* in, size_t length) {
  if (in == nullptr || length < kNativeAddressSize) return std::nullopt;
  const auto* b = static_cast<const uint8_t*>(in);
  if (b[0] != kAddressFormatTag || b[1] != kAddressVersion) return std::nullopt;
  Address a;
  std::memcpy(a.mac, b + 2, 6);
  a.queue = static_cast<uint16_t>(b[8] << 8 | b[9]);
  for (int i = 0; i < 4; ++i) a.session = a.session << 8 | b[12 + i];
  return a;
}

std::string format_mac(const uint8_t mac[6]) {
  char text[18];
  std::snprintf(text, sizeof(text), "%02x:%02x:%02x:%02x:%02x:%02x", mac[0], mac[1], mac[2], mac[3],
                mac[4], mac[5]);
  return text;
}

bool parse_mac(std::string_view text, uint8_t mac[6]) {
  // Six bytes of two hex digits each, split by ':' or '-' (ether_aton_r
  // takes one digit too, stops at the sixth byte whatever follows, and
  // knows only ':').
  if (text.size() != 17) return false;
  char buffer[18];
  for (size_t i = 0; i < 17; ++i) {
    const char c = text[i];
    if (i % 3 == 2) {
      if (c != ':' && c != '-') return false;
      buffer[i] = ':';
    } else {
      if (!std::isxdigit(static_cast<unsigned char>(c))) return false;
      buffer[i] = c;
    }
  }
  buffer[17] = '\0';
  ether_addr parsed;
  if (ether_aton_r(buffer, &parsed) == nullptr) return false;
  std::memcpy(mac, parsed.ether_addr_octet, 6);
  return true;
}

std::string to_string(const Address& a) {
  std::string text(kStringPrefix);
  text += format_mac(a.mac);
  text += '/';
  text += std::to_string(a.queue);
  if (a.session != 0) {
    char session[9];
    std::snprintf(session, sizeof(session), "%08x", a.session);
    text += '/';
    text += session;
  }
  return text;
}

namespace {

template <typename T>
bool parse_number(std::string_view text, int base, T* out) {
  if (text.empty()) return false;
  auto [end, err] = std::from_chars(text.data(), text.data() + text.size(), *out, base);
  return err == std::errc() && end == text.data() + text.size();
}

}  // namespace

std::optional<Address> from_string(std::string_view text) {
  if (!text.starts_with(kStringPrefix)) return std::nullopt;
  text.remove_prefix(kStringPrefix.size());
  Address a;
  if (text.size() < 19 || !parse_mac(text.substr(0, 17), a.mac) || text[17] != '/')
    return std::nullopt;
  text.remove_prefix(18);
  const size_t slash = text.find('/');
  if (!parse_number(text.substr(0, slash), 10, &a.queue)) return std::nullopt;
  if (slash != std::string_view::npos &&
      (text.size() - slash - 1 > 8 || !parse_number(text.substr(slash + 1), 16, &a.session)))
    return std::nullopt;
  return a;
}

std::optional<uint16_t> parse_queue(std::string_view text) {
  uint32_t queue = 0;
  if (!parse_number(text, 10, &queue) || queue > kMaxQueue) return std::nullopt;
  return static_cast<uint16_t>(queue);
}

std::optional<Address> from_node_service(const char* node, const char* service) {
  if (node == nullptr) return std::nullopt;
  const std::string_view text(node);
  if (text.starts_with(kStringPrefix)) {
    if (service != nullptr) return std::nullopt;
    auto address = from_string(text);
    if (!address || address->queue > kMaxQueue) return std::nullopt;
    return address;
  }
  Address address;
  if (service == nullptr || !parse_mac(text, address.mac)) return std::nullopt;
  const auto queue = parse_queue(service);
  if (!queue) return std::nullopt;
  address.queue = *queue;
  return address;
}

namespace {

constexpr uint64_t kMacTop = (uint64_t{1} << 48) - 1;

uint64_t mac_number(const uint8_t mac[6]) {
  uint64_t value = 0;
  for (int i = 0; i < 6; ++i) value = value << 8 | mac[i];
  return value;
}

}  // namespace

bool symmetric_range_fits(const Address& first, size_t nodecnt, size_t svccnt) {
  if (nodecnt == 0 || svccnt == 0) return false;
  if (first.queue > kMaxQueue || nodecnt - 1 > kMacTop - mac_number(first.mac)) return false;
  return svccnt - 1 <= static_cast<size_t>(kMaxQueue - first.queue);
}

Address symmetric_address(const Address& first, size_t svccnt, size_t i) {
  Address address;
  uint64_t mac = mac_number(first.mac) + i / svccnt;
  for (int b = 5; b >= 0; --b, mac >>= 8) address.mac[b] = static_cast<uint8_t>(mac);
  address.queue = static_cast<uint16_t>(first.queue + i % svccnt);
  return address;
}

}  // namespace ofi_dpdk::av
