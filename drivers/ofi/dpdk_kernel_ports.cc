// dpdk_kernel_ports.cc: see dpdk_kernel_ports.h.
#include "drivers/ofi/dpdk_kernel_ports.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <ifaddrs.h>
#include <linux/filter.h>
#include <netinet/in.h>
#include <rdma/fi_errno.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <set>

#include "drivers/net/xdp_steer.h"

namespace ofi_dpdk::ofi {
namespace {

// Whether getifaddrs lists an address of `family` whose bytes are `bytes`.
bool kernel_has(int family, const void* bytes, size_t length) {
  ifaddrs* all = nullptr;
  if (getifaddrs(&all) != 0) return false;
  bool found = false;
  for (const ifaddrs* a = all; a != nullptr && !found; a = a->ifa_next) {
    if (a->ifa_addr == nullptr || a->ifa_addr->sa_family != family) continue;
    const void* own =
        family == AF_INET
            ? static_cast<const void*>(&reinterpret_cast<const sockaddr_in*>(a->ifa_addr)->sin_addr)
            : static_cast<const void*>(
                  &reinterpret_cast<const sockaddr_in6*>(a->ifa_addr)->sin6_addr);
    found = std::memcmp(own, bytes, length) == 0;
  }
  freeifaddrs(all);
  return found;
}

in_addr in_addr_of(ip::Ipv4 address) {
  return in_addr{htonl(address)};
}

in6_addr in6_addr_of(const ip::Ipv6& address) {
  in6_addr a;
  std::memcpy(a.s6_addr, address.bytes.data(), 16);
  return a;
}

std::string endpoint_text(int family, const ip::Ipv4* ipv4, const ip::Ipv6* ipv6, uint16_t port) {
  if (family == AF_INET) return ip::format_ipv4(*ipv4) + ":" + std::to_string(port);
  return "[" + ip::format_ipv6(*ipv6) + "]:" + std::to_string(port);
}

// The owner of the socket whose inode is `inode`: "pid N (program)", or ""
// where /proc does not tell (another user's process, to an unprivileged
// caller).
std::string process_of_socket(unsigned long inode) {
  const std::string wanted = "socket:[" + std::to_string(inode) + "]";
  DIR* proc = opendir("/proc");
  if (proc == nullptr) return "";
  std::string found;
  for (dirent* entry; found.empty() && (entry = readdir(proc)) != nullptr;) {
    char* end = nullptr;
    const long pid = std::strtol(entry->d_name, &end, 10);
    if (pid <= 0 || *end != '\0') continue;
    const std::string fd_dir = std::string("/proc/") + entry->d_name + "/fd";
    DIR* fds = opendir(fd_dir.c_str());
    if (fds == nullptr) continue;
    for (dirent* fd; found.empty() && (fd = readdir(fds)) != nullptr;) {
      char target[64];
      const ssize_t length =
          readlink((fd_dir + "/" + fd->d_name).c_str(), target, sizeof(target) - 1);
      if (length <= 0) continue;
      target[length] = '\0';
      if (wanted != target) continue;
      char program[64] = "?";
      if (FILE* comm = std::fopen((std::string("/proc/") + entry->d_name + "/comm").c_str(), "r")) {
        if (std::fgets(program, sizeof program, comm) != nullptr)
          program[std::strcspn(program, "\n")] = '\0';
        std::fclose(comm);
      }
      found = "pid " + std::to_string(pid) + " (" + program + ")";
    }
    closedir(fds);
  }
  closedir(proc);
  return found;
}

// Who binds `port` so that it takes datagrams for `bytes` (4 or 16 bytes,
// network order): a socket on that address, on the wildcard, or (IPv4) a
// dual-stack IPv6 one on :: or ::ffff:A.  From /proc/net/udp and udp6,
// which print each address as 32-bit words in the kernel's own order, as
// they lie in memory.  "uid N, pid M (program)", or "" when none is found.
std::string holder_of(int family, const uint8_t* bytes, uint16_t port) {
  uint8_t wanted[16] = {};
  uint8_t mapped[16] = {};
  if (family == AF_INET) {
    mapped[10] = mapped[11] = 0xFF;
    std::memcpy(mapped + 12, bytes, 4);
  } else {
    std::memcpy(wanted, bytes, 16);
  }
  for (const char* table : {"/proc/net/udp", "/proc/net/udp6"}) {
    const bool table6 = std::strcmp(table, "/proc/net/udp6") == 0;
    FILE* sockets = std::fopen(table, "r");
    if (sockets == nullptr) continue;
    char line[512];
    std::string found;
    while (found.empty() && std::fgets(line, sizeof line, sockets) != nullptr) {
      char local[33];
      unsigned local_port = 0, uid = 0;
      unsigned long inode = 0;
      // sl local_address rem_address st tx:rx tr:when retrnsmt uid timeout inode
      if (std::sscanf(line, " %*u: %32[0-9A-Fa-f]:%x %*s %*x %*s %*s %*s %u %*d %lu", local,
                      &local_port, &uid, &inode) != 4 ||
          local_port != port)
        continue;
      uint8_t address[16] = {};
      const size_t words = table6 ? 4 : 1;
      if (std::strlen(local) != 8 * words) continue;
      for (size_t w = 0; w < words; ++w) {
        const uint32_t word =
            static_cast<uint32_t>(std::strtoul(std::string(local + 8 * w, 8).c_str(), nullptr, 16));
        std::memcpy(address + 4 * w, &word, 4);
      }
      const uint8_t kAny[16] = {};
      bool takes = std::memcmp(address, kAny, table6 ? 16 : 4) == 0;
      if (family == AF_INET)
        takes = takes || (table6 ? std::memcmp(address, mapped, 16) == 0
                                 : std::memcmp(address, bytes, 4) == 0);
      else
        takes = takes || (table6 && std::memcmp(address, wanted, 16) == 0);
      if (!takes) continue;
      found = "uid " + std::to_string(uid);
      if (const std::string process = process_of_socket(inode); !process.empty())
        found += ", " + process;
    }
    std::fclose(sockets);
    if (!found.empty()) return found;
  }
  return "";
}

// A socket bound to `address`, taking nothing: its filter refuses every
// datagram (the kernel drops it at the socket, without queueing or
// answering), and its receive buffer is the smallest there is.  No
// SO_REUSEADDR, no SO_REUSEPORT: no one else can share the port.
// IP_FREEBIND, so that an IPv6 address still in duplicate address
// detection binds too.  Returns the socket, or -errno.
int bind_holder(const sockaddr* address, socklen_t length) {
  const int fd = socket(address->sa_family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -errno;
  const int one = 1;
  if (address->sa_family == AF_INET6) setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof one);
  setsockopt(fd, SOL_IP, IP_FREEBIND, &one, sizeof one);
  setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &one, sizeof one);
  sock_filter take_nothing = BPF_STMT(BPF_RET | BPF_K, 0);
  const sock_fprog filter{1, &take_nothing};
  setsockopt(fd, SOL_SOCKET, SO_ATTACH_FILTER, &filter, sizeof filter);
  if (bind(fd, address, length) != 0) {
    const int error = errno;
    close(fd);
    return -error;
  }
  return fd;
}

}  // namespace

bool kernel_has_ipv4(ip::Ipv4 address) {
  const in_addr a = in_addr_of(address);
  return kernel_has(AF_INET, &a, sizeof a);
}

bool kernel_has_ipv6(const ip::Ipv6& address) {
  return kernel_has(AF_INET6, address.bytes.data(), 16);
}

namespace {

std::mutex beside_af_xdp_lock;
std::set<std::string>& interfaces_beside_af_xdp() {
  static std::set<std::string> interfaces;  // (few: one per interface named)
  return interfaces;
}

}  // namespace

void note_beside_af_xdp(const std::string& interface) {
  const std::lock_guard<std::mutex> guard(beside_af_xdp_lock);
  interfaces_beside_af_xdp().insert(interface);
}

bool is_beside_af_xdp(const std::string& interface) {
  const std::lock_guard<std::mutex> guard(beside_af_xdp_lock);
  return interfaces_beside_af_xdp().contains(interface);
}

KernelPorts::~KernelPorts() {
  for (uint16_t q = 0; q < kQueues; ++q) release(q);
}

void KernelPorts::hold_on(const std::string& port_name, std::optional<ip::Ipv4> ipv4,
                          std::optional<ip::Ipv6> ipv6, uint16_t port_base) {
  port_name_ = port_name;
  ipv4_ = ipv4;
  ipv6_ = ipv6;
  port_base_ = port_base;
}

std::string KernelPorts::describe() const {
  std::string addresses;
  if (ipv4_) addresses = ip::format_ipv4(*ipv4_);
  if (ipv6_) addresses += (addresses.empty() ? "" : " and ") + ip::format_ipv6(*ipv6_);
  return addresses + ", UDP ports " + std::to_string(port_base_) + " + queue";
}

int KernelPorts::hold(uint16_t queue, std::string* why) {
  const int ret = hold_sockets(queue, why);
  if (ret != 0 || pass(queue, xdp_passes_, why)) return ret;
  // Its frames would go to the af_xdp port's socket, not here.
  release(queue);
  return -FI_EIO;
}

bool KernelPorts::pass(uint16_t queue, bool passed, std::string* why) {
  if (xdp_interface_.empty()) return true;
  std::string reason;
  if (net::pass_to_kernel(xdp_interface_, queue, passed, &reason) != net::XdpSteering::kUnwritable)
    return true;
  *why = "the XDP program on " + xdp_interface_ + " cannot be told queue " + std::to_string(queue) +
         "'s: " + reason;
  return false;
}

int KernelPorts::hold_sockets(uint16_t queue, std::string* why) {
  if (queue >= kQueues) return -FI_EINVAL;
  Held& held = held_[queue];
  if (held.taken || !active()) {
    held.taken = true;
    return 0;
  }
  const auto port = static_cast<uint16_t>(port_base_ + queue);
  int fds[2] = {-1, -1};
  for (const int family : {AF_INET, AF_INET6}) {
    int fd = -1;
    if (family == AF_INET && ipv4_) {
      sockaddr_in a{};
      a.sin_family = AF_INET;
      a.sin_addr = in_addr_of(*ipv4_);
      a.sin_port = htons(port);
      fd = bind_holder(reinterpret_cast<const sockaddr*>(&a), sizeof a);
    } else if (family == AF_INET6 && ipv6_) {
      sockaddr_in6 a{};
      a.sin6_family = AF_INET6;
      a.sin6_addr = in6_addr_of(*ipv6_);
      a.sin6_port = htons(port);
      fd = bind_holder(reinterpret_cast<const sockaddr*>(&a), sizeof a);
    } else {
      continue;
    }
    // A privileged port this process may not bind: nor may other users.
    if (fd == -EACCES) continue;
    if (fd < 0) {
      const std::string where =
          endpoint_text(family, ipv4_ ? &*ipv4_ : nullptr, ipv6_ ? &*ipv6_ : nullptr, port);
      if (fd == -EADDRINUSE) {
        uint8_t bytes[16];
        if (family == AF_INET) {
          const in_addr a = in_addr_of(*ipv4_);
          std::memcpy(bytes, &a, 4);
        } else {
          std::memcpy(bytes, ipv6_->bytes.data(), 16);
        }
        const std::string holder = holder_of(family, bytes, port);
        *why = where + " is held by another socket" +
               (holder.empty() ? std::string() : ", of " + holder) +
               ": another program, or another process of this provider on the same "
               "address and queue";
      } else {
        *why = "cannot hold " + where + ": " + std::strerror(-fd);
      }
      for (const int opened : fds)
        if (opened >= 0) close(opened);
      return fd == -EADDRINUSE ? -FI_EADDRINUSE : fd;
    }
    fds[family == AF_INET ? 0 : 1] = fd;
  }
  held = {fds[0], fds[1], true};
  return 0;
}

void KernelPorts::release(uint16_t queue) {
  if (queue >= kQueues) return;
  Held& held = held_[queue];
  std::string ignored;  // (what a process that passed a queue and died left, the next takes back)
  if (held.taken && xdp_passes_) pass(queue, false, &ignored);
  if (held.ipv4 >= 0) close(held.ipv4);
  if (held.ipv6 >= 0) close(held.ipv6);
  held = {};
}

bool KernelPorts::recheck_xdp(std::string* why) {
  const uint32_t program = net::steer_program_id(xdp_interface_);
  if (program == passed_program_) return true;
  passed_program_ = program;  // (once per program: a failure is not retried each pass)
  if (program == 0) return true;
  for (uint16_t queue = 0; queue < kQueues; ++queue)
    if (held_[queue].taken && !pass(queue, true, why)) return false;
  return true;
}

bool KernelPorts::holds(uint16_t queue) const {
  return queue < kQueues && held_[queue].taken;
}

}  // namespace ofi_dpdk::ofi
