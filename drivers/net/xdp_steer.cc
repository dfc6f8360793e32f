#include "drivers/net/xdp_steer.h"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <net/if.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <vector>

namespace ofi_dpdk::net {
namespace {

constexpr const char* kProgramName = "ofi_dpdk_steer";
constexpr const char* kConfigMap = "ofi_dpdk_config";

// Closes a descriptor when it goes out of scope.
struct Fd {
  int fd;
  explicit Fd(int value) : fd(value) {}
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
};

}  // namespace

XdpSteering steer_xdp(const std::string& interface, const XdpSteerConfig& config,
                      std::string* why) {
  const unsigned index = if_nametoindex(interface.c_str());
  uint32_t program_id = 0;
  if (index == 0 || bpf_xdp_query_id(static_cast<int>(index), 0, &program_id) != 0 ||
      program_id == 0)
    return XdpSteering::kNone;
  const Fd program(bpf_prog_get_fd_by_id(program_id));
  if (program.fd < 0) {
    *why = std::string("cannot open the XDP program: ") + std::strerror(errno);
    return XdpSteering::kNone;
  }
  // Its name first, then the ids of its maps (a second call, with room).
  bpf_prog_info info{};
  uint32_t length = sizeof info;
  if (bpf_obj_get_info_by_fd(program.fd, &info, &length) != 0 ||
      std::strncmp(info.name, kProgramName, sizeof info.name) != 0)
    return XdpSteering::kNone;
  std::vector<uint32_t> map_ids(info.nr_map_ids);
  const uint32_t maps = info.nr_map_ids;
  info = bpf_prog_info{};
  info.nr_map_ids = maps;
  info.map_ids = reinterpret_cast<uintptr_t>(map_ids.data());
  length = sizeof info;
  if (bpf_obj_get_info_by_fd(program.fd, &info, &length) != 0) {
    *why = std::string("cannot read the program's maps: ") + std::strerror(errno);
    return XdpSteering::kUnwritable;
  }
  for (uint32_t id : map_ids) {
    const Fd map(bpf_map_get_fd_by_id(id));
    if (map.fd < 0) continue;
    bpf_map_info map_info{};
    uint32_t map_length = sizeof map_info;
    if (bpf_obj_get_info_by_fd(map.fd, &map_info, &map_length) != 0 ||
        std::strncmp(map_info.name, kConfigMap, sizeof map_info.name) != 0)
      continue;
    const uint32_t key = 0;
    if (map_info.value_size != sizeof config ||
        bpf_map_update_elem(map.fd, &key, &config, BPF_ANY) != 0) {
      *why = std::string("cannot write its map ") + kConfigMap + ": " + std::strerror(errno);
      return XdpSteering::kUnwritable;
    }
    return XdpSteering::kSteered;
  }
  *why = std::string("it has no map ") + kConfigMap;
  return XdpSteering::kUnwritable;
}

}  // namespace ofi_dpdk::net
