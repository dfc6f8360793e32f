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
constexpr const char* kPassedMap = "ofi_dpdk_passed";

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

// The XDP program on `interface` if it is ours, else -1.
int open_steer_program(const std::string& interface, std::string* why) {
  const unsigned index = if_nametoindex(interface.c_str());
  uint32_t program_id = 0;
  if (index == 0 || bpf_xdp_query_id(static_cast<int>(index), 0, &program_id) != 0 ||
      program_id == 0)
    return -1;
  const int fd = bpf_prog_get_fd_by_id(program_id);
  if (fd < 0) {
    *why = std::string("cannot open the XDP program: ") + std::strerror(errno);
    return -1;
  }
  bpf_prog_info info{};
  uint32_t length = sizeof info;
  if (bpf_obj_get_info_by_fd(fd, &info, &length) != 0 ||
      std::strncmp(info.name, kProgramName, sizeof info.name) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

// Finds our program on `interface` and writes `value` (`size` bytes) at
// `key` in its map `map_name`.
XdpSteering write_map(const std::string& interface, const char* map_name, uint32_t key,
                      const void* value, uint32_t size, std::string* why) {
  const Fd program(open_steer_program(interface, why));
  if (program.fd < 0) return XdpSteering::kNone;
  // The ids of its maps (a first call for their number, a second with room).
  bpf_prog_info info{};
  uint32_t length = sizeof info;
  if (bpf_obj_get_info_by_fd(program.fd, &info, &length) != 0) {
    *why = std::string("cannot read the program's maps: ") + std::strerror(errno);
    return XdpSteering::kUnwritable;
  }
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
        std::strncmp(map_info.name, map_name, sizeof map_info.name) != 0)
      continue;
    if (map_info.value_size != size || bpf_map_update_elem(map.fd, &key, value, BPF_ANY) != 0) {
      *why = std::string("cannot write its map ") + map_name + ": " + std::strerror(errno);
      return XdpSteering::kUnwritable;
    }
    return XdpSteering::kSteered;
  }
  *why = std::string("it has no map ") + map_name;
  return XdpSteering::kUnwritable;
}

}  // namespace

XdpSteering steer_xdp(const std::string& interface, const XdpSteerConfig& config,
                      std::string* why) {
  return write_map(interface, kConfigMap, 0, &config, sizeof config, why);
}

uint32_t steer_program_id(const std::string& interface) {
  std::string why;
  const Fd program(open_steer_program(interface, &why));
  if (program.fd < 0) return 0;
  bpf_prog_info info{};
  uint32_t length = sizeof info;
  return bpf_obj_get_info_by_fd(program.fd, &info, &length) == 0 ? info.id : 0;
}

bool has_steer_program(const std::string& interface) {
  return steer_program_id(interface) != 0;
}

XdpSteering pass_to_kernel(const std::string& interface, uint16_t queue, bool passed,
                           std::string* why) {
  const uint32_t value = passed ? 1 : 0;
  return write_map(interface, kPassedMap, queue, &value, sizeof value, why);
}

}  // namespace ofi_dpdk::net
