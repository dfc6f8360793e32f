// icmp.h: ICMP echo (RFC 792), so that `ping` reaches a port's address
// for diagnosis.  Pure byte work: no DPDK, no state.
#pragma once

#include <cstddef>
#include <cstdint>

#include "lib/ip/udp4.h"

namespace ofi_dpdk::ip {

// The reply to an echo request: `frame` is the request's Ethernet frame
// and `packet` its parsed IPv4 packet, addressed to us.  Writes the reply
// frame to `out` (room for `capacity` bytes; the request's length is
// always enough) back to the request's sender MAC (the router, for an
// off-link sender), from `our_mac`, and returns its length.  0, nothing
// written, for anything but a whole echo request with a correct checksum.
size_t build_echo_reply(const uint8_t* frame, const Ipv4Packet& packet, const uint8_t our_mac[6],
                        uint8_t* out, size_t capacity);

}  // namespace ofi_dpdk::ip
