// checksum_offloads.cc: which checksums the device makes and checks
// (checksum_offloads.h).
#include "drivers/net/checksum_offloads.h"

#include <rte_ethdev.h>

namespace ofi_dpdk::net {

void choose_checksum_offloads(const rte_eth_dev_info& offered, rte_eth_conf* conf) {
  conf->txmode.offloads |=
      offered.tx_offload_capa & (RTE_ETH_TX_OFFLOAD_IPV4_CKSUM | RTE_ETH_TX_OFFLOAD_UDP_CKSUM);
  conf->rxmode.offloads |=
      offered.rx_offload_capa & (RTE_ETH_RX_OFFLOAD_IPV4_CKSUM | RTE_ETH_RX_OFFLOAD_UDP_CKSUM);
}

ChecksumOffloads checksum_offloads_of(const rte_eth_conf& conf) {
  ChecksumOffloads c;
  c.tx_ipv4_header = conf.txmode.offloads & RTE_ETH_TX_OFFLOAD_IPV4_CKSUM;
  c.tx_udp = conf.txmode.offloads & RTE_ETH_TX_OFFLOAD_UDP_CKSUM;
  c.rx_ipv4_header = conf.rxmode.offloads & RTE_ETH_RX_OFFLOAD_IPV4_CKSUM;
  c.rx_udp = conf.rxmode.offloads & RTE_ETH_RX_OFFLOAD_UDP_CKSUM;
  return c;
}

std::string describe(const ChecksumOffloads& c) {
  if (!c.any()) return "";
  const auto sides = [](bool tx, bool rx) {
    return std::string(tx && rx ? "tx, rx" : tx ? "tx" : "rx");
  };
  std::string text;
  if (c.tx_ipv4_header || c.rx_ipv4_header)
    text = "IPv4 header (" + sides(c.tx_ipv4_header, c.rx_ipv4_header) + ")";
  if (c.tx_udp || c.rx_udp)
    text += (text.empty() ? "" : ", ") + std::string("UDP (") + sides(c.tx_udp, c.rx_udp) + ")";
  return "checksums by the device: " + text;
}

}  // namespace ofi_dpdk::net
