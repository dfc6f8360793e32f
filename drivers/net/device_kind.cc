#include "drivers/net/device_kind.h"

#include <rte_dev.h>
#include <rte_devargs.h>
#include <rte_version.h>

#include <algorithm>
#include <charconv>
#include <cstring>

#include "lib/proto/wire.h"

namespace ofi_dpdk::net {

std::string devarg(const rte_eth_dev_info& info, std::string_view key) {
  const rte_devargs* args = info.device != nullptr ? rte_dev_devargs(info.device) : nullptr;
  if (args == nullptr || args->args == nullptr) return {};
  const std::string_view text = args->args;
  for (size_t at = 0; at < text.size();) {
    const size_t end = std::min(text.find(',', at), text.size());
    const std::string_view item = text.substr(at, end - at);
    if (item.size() > key.size() && item.substr(0, key.size()) == key && item[key.size()] == '=')
      return std::string(item.substr(key.size() + 1));
    at = end + 1;
  }
  return {};
}

bool is_driver(const rte_eth_dev_info& info, const char* name) {
  return info.driver_name != nullptr && std::strcmp(info.driver_name, name) == 0;
}

uint32_t memory_link_limit(const rte_eth_dev_info& info) {
  if (is_driver(info, "net_ring")) return 65000;
  if (!is_driver(info, "net_memif")) return 0;
  // A frame longer than one buffer (devarg bsize, 2048 by default) spans
  // several, which 22.11 does not hand back whole: keep within one.
  uint32_t buffer = 2048;
  const std::string bsize = devarg(info, "bsize");
  uint32_t value = 0;
  const auto [ptr, err] = std::from_chars(bsize.data(), bsize.data() + bsize.size(), value);
  if (!bsize.empty() && err == std::errc() && ptr == bsize.data() + bsize.size() && value > 0)
    buffer = value;
  return buffer > sizeof(wire::EtherHeader) ? buffer - sizeof(wire::EtherHeader) : 0;
}

bool kernel_backed(const rte_eth_dev_info& info) {
  if (info.driver_name == nullptr) return false;
  for (const char* driver : {"net_af_packet", "net_af_xdp", "net_tap", "net_pcap"})
    if (std::strcmp(info.driver_name, driver) == 0) return true;
  return false;
}

bool copies_at_transmit(const rte_eth_dev_info& info) {
  if (is_driver(info, "net_memif"))
    return RTE_VERSION < RTE_VERSION_NUM(23, 3, 0, 0) && devarg(info, "zero-copy") != "yes";
  return is_driver(info, "net_af_packet") || is_driver(info, "net_tap");
}

}  // namespace ofi_dpdk::net
