// rss.h: receive-side scaling as a NIC computes it, for choosing UDP source
// ports.  A NIC with RSS but no flow rules (most cloud virtual NICs) puts
// a UDP frame on queue reta[hash % reta size], the hash being Toeplitz's
// over the source and destination addresses and ports with the NIC's key.
// Our destination port names the endpoint and the addresses are fixed, so
// the sender's source port is the one free input: the receiver, knowing
// its own key and table, can name source ports that land on an endpoint's
// queue (doc/wire-protocol.md, "RSS steering").
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "lib/ip/ipv4.h"
#include "lib/ip/ipv6.h"

namespace ofi_dpdk::ip {

// The Toeplitz hash of `input` (bytes as on the wire) under `key`: for each
// input bit that is set, most significant first, the 32 key bits starting
// at that bit's position are XORed in.  The key must be at least 4 bytes
// longer than the input (NICs use 40 or 52).
uint32_t toeplitz_hash(std::span<const uint8_t> key, std::span<const uint8_t> input);

// A receiver's RSS: its key and redirection table (entry i: the queue of
// hashes whose low bits are i; the table's size is a power of two).
struct RssConfig {
  std::vector<uint8_t> key;
  std::vector<uint16_t> reta;

  // Whether the configuration can be used: a table of 2^n entries and a key
  // long enough for an IPv6 tuple (36 bytes of input).
  bool usable() const;
  uint16_t queue_of(uint32_t hash) const {
    return reta.empty() ? 0 : reta[hash & (reta.size() - 1)];
  }
};

// The RSS hash a receiver computes for a UDP frame (the tuple's order is
// the NICs': source address, destination address, source port,
// destination port, all in network order).
uint32_t udp4_rss_hash(const RssConfig& rss, Ipv4 source, Ipv4 destination, uint16_t source_port,
                       uint16_t destination_port);
uint32_t udp6_rss_hash(const RssConfig& rss, const Ipv6& source, const Ipv6& destination,
                       uint16_t source_port, uint16_t destination_port);

// Up to out.size() source ports in 49152-65535 (the range
// flow_source_port uses), searched upward from `first` and wrapping, that
// the receiver at `destination` puts on `queue` for frames from `source`
// to `destination_port`.  Returns how many were found (fewer when the
// table sends few hashes to the queue; 0 when it sends none).
size_t udp4_reaching_ports(const RssConfig& rss, Ipv4 source, Ipv4 destination,
                           uint16_t destination_port, uint16_t queue, uint16_t first,
                           std::span<uint16_t> out);
size_t udp6_reaching_ports(const RssConfig& rss, const Ipv6& source, const Ipv6& destination,
                           uint16_t destination_port, uint16_t queue, uint16_t first,
                           std::span<uint16_t> out);

}  // namespace ofi_dpdk::ip
