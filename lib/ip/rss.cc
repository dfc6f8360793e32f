// rss.cc: the Toeplitz hash and the search for source ports (rss.h).
#include "lib/ip/rss.h"

#include <algorithm>
#include <array>

#include "lib/ip/byte_order.h"

namespace ofi_dpdk::ip {
namespace {

constexpr uint32_t kFirstPort = 49152;
constexpr uint32_t kPorts = 65536 - kFirstPort;

// The 32 key bits starting at bit `bit` (bit 0: the first byte's highest).
uint32_t key_window(std::span<const uint8_t> key, size_t bit) {
  const size_t byte = bit / 8, shift = bit % 8;
  uint64_t bits = 0;
  for (size_t i = 0; i < 5; ++i) bits = bits << 8 | (byte + i < key.size() ? key[byte + i] : 0);
  return static_cast<uint32_t>(bits >> (8 - shift));
}

void put_port(uint8_t* out, uint16_t port) {
  put16(out, port);
}

// The hash is linear in its input: the hash of a tuple is the hash of its
// addresses and destination port XOR that of its source port alone (at
// the source port's offset), so the search hashes two bytes per port.
template <size_t N>
size_t reaching_ports(const RssConfig& rss, std::array<uint8_t, N> tuple, uint16_t queue,
                      uint16_t first, std::span<uint16_t> out) {
  if (!rss.usable() || out.empty()) return 0;
  // A queue the table never names has no ports: no search through all.
  if (std::find(rss.reta.begin(), rss.reta.end(), queue) == rss.reta.end()) return 0;
  constexpr size_t kSourcePort = N - 4;
  put_port(&tuple[kSourcePort], 0);
  const uint32_t fixed = toeplitz_hash(rss.key, tuple);
  uint32_t windows[16];
  for (int bit = 0; bit < 16; ++bit) windows[bit] = key_window(rss.key, kSourcePort * 8 + bit);
  const uint32_t start = first >= kFirstPort ? first - kFirstPort : 0;
  size_t found = 0;
  for (uint32_t i = 0; i < kPorts && found < out.size(); ++i) {
    const auto port = static_cast<uint16_t>(kFirstPort + (start + i) % kPorts);
    uint32_t hash = fixed;
    for (int bit = 0; bit < 16; ++bit)
      if ((port >> (15 - bit) & 1) != 0) hash ^= windows[bit];
    if (rss.queue_of(hash) == queue) out[found++] = port;
  }
  return found;
}

std::array<uint8_t, 12> tuple4(Ipv4 source, Ipv4 destination, uint16_t source_port,
                               uint16_t destination_port) {
  std::array<uint8_t, 12> tuple{};
  for (int i = 0; i < 4; ++i) {
    tuple[i] = static_cast<uint8_t>(source >> (24 - 8 * i));
    tuple[4 + i] = static_cast<uint8_t>(destination >> (24 - 8 * i));
  }
  put_port(&tuple[8], source_port);
  put_port(&tuple[10], destination_port);
  return tuple;
}

std::array<uint8_t, 36> tuple6(const Ipv6& source, const Ipv6& destination, uint16_t source_port,
                               uint16_t destination_port) {
  std::array<uint8_t, 36> tuple{};
  for (int i = 0; i < 16; ++i) {
    tuple[i] = source.bytes[i];
    tuple[16 + i] = destination.bytes[i];
  }
  put_port(&tuple[32], source_port);
  put_port(&tuple[34], destination_port);
  return tuple;
}

}  // namespace

uint32_t toeplitz_hash(std::span<const uint8_t> key, std::span<const uint8_t> input) {
  uint32_t hash = 0;
  for (size_t byte = 0; byte < input.size(); ++byte)
    for (int bit = 0; bit < 8; ++bit)
      if ((input[byte] >> (7 - bit) & 1) != 0) hash ^= key_window(key, byte * 8 + bit);
  return hash;
}

bool RssConfig::usable() const {
  const size_t size = reta.size();
  return size != 0 && (size & (size - 1)) == 0 && key.size() >= 36 + 4;
}

uint32_t udp4_rss_hash(const RssConfig& rss, Ipv4 source, Ipv4 destination, uint16_t source_port,
                       uint16_t destination_port) {
  return toeplitz_hash(rss.key, tuple4(source, destination, source_port, destination_port));
}

uint32_t udp6_rss_hash(const RssConfig& rss, const Ipv6& source, const Ipv6& destination,
                       uint16_t source_port, uint16_t destination_port) {
  return toeplitz_hash(rss.key, tuple6(source, destination, source_port, destination_port));
}

size_t udp4_reaching_ports(const RssConfig& rss, Ipv4 source, Ipv4 destination,
                           uint16_t destination_port, uint16_t queue, uint16_t first,
                           std::span<uint16_t> out) {
  return reaching_ports(rss, tuple4(source, destination, 0, destination_port), queue, first, out);
}

size_t udp6_reaching_ports(const RssConfig& rss, const Ipv6& source, const Ipv6& destination,
                           uint16_t destination_port, uint16_t queue, uint16_t first,
                           std::span<uint16_t> out) {
  return reaching_ports(rss, tuple6(source, destination, 0, destination_port), queue, first, out);
}

}  // namespace ofi_dpdk::ip
