// device_kind.h: what a port's driver is, as far as the port must know:
// its devargs, whether frames are memory handed over or go through a
// kernel interface, and whether the driver is done with a frame's bytes
// when its transmit burst returns.
#pragma once

#include <rte_ethdev.h>

#include <cstdint>
#include <string>
#include <string_view>

namespace ofi_dpdk::net {

// The value of devarg `key` of the device (net_memif's bsize, role), or
// empty when not given.
std::string devarg(const rte_eth_dev_info& info, std::string_view key);

bool is_driver(const rte_eth_dev_info& info, const char* name);

// Drivers whose frames are memory handed over, not limited by the MTU they
// report: net_ring passes the mbufs themselves; net_memif copies each frame
// into one of its ring buffers (22.11 reports 1500 and refuses to change
// it).  Their limit in bytes after the Ethernet header, or 0 for others.
uint32_t memory_link_limit(const rte_eth_dev_info& info);

// Drivers in front of a kernel interface: setting their MTU would change the
// host's interface (and their ring frames may be smaller still), so the
// operator's MTU stands (`ip link set IF mtu 9000` for jumbo frames).
bool kernel_backed(const rte_eth_dev_info& info);

// Drivers that copy every segment of a frame into their own ring within
// rte_eth_tx_burst and free the mbuf there, the frame arriving whole:
// net_memif in copy mode (not zero-copy=yes) before 23.03, net_af_packet
// (into its TPACKET ring), net_tap (writev).  From 23.03 net_memif's
// transmit gives each segment a descriptor of its own, which the peer's
// receive hands back as a chained mbuf (or, on its slow path, with both
// written at one offset).
// A chained segment may then point at memory that is only lent for the
// call (rte_pktmbuf_attach_extbuf).  Not net_ring, which hands the mbuf
// itself to its peer; not a NIC, which reads it by DMA after the call; not
// net_af_xdp (22.11 copies the first segment alone).
bool copies_at_transmit(const rte_eth_dev_info& info);

}  // namespace ofi_dpdk::net
