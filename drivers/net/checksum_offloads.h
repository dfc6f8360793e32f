// checksum_offloads.h: the IPv4 header and UDP checksums a port leaves to
// its device (issue 44's offloads), of those the device offers.
#pragma once

#include <string>

struct rte_eth_conf;
struct rte_eth_dev_info;

namespace ofi_dpdk::net {

// The checksums of frames in UDP the device computes (tx) and checks (rx),
// of those it offers (rte_eth_dev_info's offload capabilities) and the port
// enabled.  A frame the device checked and found good carries
// RTE_MBUF_F_RX_IP_CKSUM_GOOD / RTE_MBUF_F_RX_L4_CKSUM_GOOD, and is not
// summed again.
struct ChecksumOffloads {
  bool tx_ipv4_header = false;
  bool tx_udp = false;
  bool rx_ipv4_header = false;
  bool rx_udp = false;
  bool any() const { return tx_ipv4_header || tx_udp || rx_ipv4_header || rx_udp; }
};

// The offloads to ask for in rte_eth_dev_configure: of ours, what `offered`
// has.
void choose_checksum_offloads(const rte_eth_dev_info& offered, rte_eth_conf* conf);
// What a configuration took.
ChecksumOffloads checksum_offloads_of(const rte_eth_conf& conf);
// For the port's line: "checksums by the device: IPv4 header (tx, rx),
// UDP (tx)", or "" when none.
std::string describe(const ChecksumOffloads& offloads);

}  // namespace ofi_dpdk::net
