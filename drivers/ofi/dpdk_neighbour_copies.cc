#include "drivers/ofi/dpdk_neighbour_copies.h"

#include <arpa/inet.h>
#include <linux/filter.h>
#include <linux/if_ether.h>
#include <linux/if_packet.h>
#include <net/if.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace ofi_dpdk::ofi {
namespace {

// A classic BPF filter: ARP, or IPv6 whose next header is ICMPv6 with type
// 135 or 136 (neighbour solicitation, advertisement).  Offsets from the
// Ethernet header: EtherType 12, IPv6 next header 20, ICMPv6 type 54.
constexpr uint16_t kLoadHalf = BPF_LD | BPF_H | BPF_ABS;
constexpr uint16_t kLoadByte = BPF_LD | BPF_B | BPF_ABS;
constexpr uint16_t kJumpEqual = BPF_JMP | BPF_JEQ | BPF_K;
constexpr uint16_t kReturn = BPF_RET | BPF_K;
const sock_filter kNeighbourFrames[] = {
    {kLoadHalf, 0, 0, 12},
    {kJumpEqual, 6, 0, ETH_P_ARP},   // to take
    {kJumpEqual, 0, 6, ETH_P_IPV6},  // else to drop
    {kLoadByte, 0, 0, 20},
    {kJumpEqual, 0, 4, 58},  // ICMPv6, else drop
    {kLoadByte, 0, 0, 54},
    {kJumpEqual, 1, 0, 135},
    {kJumpEqual, 0, 1, 136},
    {kReturn, 0, 0, 0xFFFF},  // take
    {kReturn, 0, 0, 0},       // drop
};

}  // namespace

NeighbourCopies::~NeighbourCopies() {
  if (fd_ >= 0) ::close(fd_);
}

bool NeighbourCopies::open(const std::string& interface, std::string* why) {
  const unsigned index = if_nametoindex(interface.c_str());
  if (index == 0) {
    *why = "no interface " + interface;
    return false;
  }
  const int fd = socket(AF_PACKET, SOCK_RAW | SOCK_NONBLOCK | SOCK_CLOEXEC, htons(ETH_P_ALL));
  if (fd < 0) {
    *why = std::string("socket(AF_PACKET): ") + std::strerror(errno);
    return false;
  }
  // The filter before the bind: nothing else is queued meanwhile.
  sock_fprog program{static_cast<unsigned short>(std::size(kNeighbourFrames)),
                     const_cast<sock_filter*>(kNeighbourFrames)};
  sockaddr_ll address{};
  address.sll_family = AF_PACKET;
  address.sll_protocol = htons(ETH_P_ALL);
  address.sll_ifindex = static_cast<int>(index);
  if (setsockopt(fd, SOL_SOCKET, SO_ATTACH_FILTER, &program, sizeof program) != 0 ||
      bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0) {
    *why = std::string("AF_PACKET socket on ") + interface + ": " + std::strerror(errno);
    ::close(fd);
    return false;
  }
  fd_ = fd;
  return true;
}

size_t NeighbourCopies::next(uint8_t* frame, size_t capacity) {
  for (;;) {
    sockaddr_ll from{};
    socklen_t from_length = sizeof from;
    const ssize_t length = recvfrom(fd_, frame, capacity, MSG_DONTWAIT,
                                    reinterpret_cast<sockaddr*>(&from), &from_length);
    if (length <= 0) return 0;
    // What the host sent (the kernel's answers, our own questions) is no
    // news.
    if (from.sll_pkttype == PACKET_OUTGOING) continue;
    return static_cast<size_t>(length);
  }
}

}  // namespace ofi_dpdk::ofi
