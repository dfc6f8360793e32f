// dpdk_kernel_neigh.cc: the neighbours the kernel holds permanent on the
// interface a port shares (net_af_packet, net_af_xdp): what an operator
// pinned with `ip neigh replace A lladdr M nud permanent dev IF`, read once
// when the port opens, by an rtnetlink dump (RTM_GETNEIGH).  Only
// permanent entries: the kernel's others are learned from the wire (it
// takes a request's sender), which is what the port must not trust.
#include <linux/neighbour.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <net/if.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <cstring>
#include <vector>

#include "drivers/ofi/dpdk_params.h"

namespace ofi_dpdk::ofi {
namespace {

// One RTM_NEWNEIGH message: its entry, when it is a permanent one on
// `ifindex` with an Ethernet address.
void take_neighbour(const nlmsghdr* header, int ifindex, size_t most, KernelNeighbours* out) {
  if (header->nlmsg_type != RTM_NEWNEIGH || header->nlmsg_len < NLMSG_LENGTH(sizeof(ndmsg))) return;
  const auto* entry = static_cast<const ndmsg*>(NLMSG_DATA(header));
  if (entry->ndm_ifindex != ifindex || (entry->ndm_state & NUD_PERMANENT) == 0 ||
      (entry->ndm_family != AF_INET && entry->ndm_family != AF_INET6))
    return;
  const uint8_t* address = nullptr;
  size_t address_length = 0;
  const uint8_t* mac = nullptr;
  int left = static_cast<int>(header->nlmsg_len - NLMSG_LENGTH(sizeof(ndmsg)));
  for (auto* attribute = reinterpret_cast<const rtattr*>(reinterpret_cast<const uint8_t*>(entry) +
                                                         NLMSG_ALIGN(sizeof(ndmsg)));
       RTA_OK(attribute, left); attribute = RTA_NEXT(attribute, left)) {
    const auto* data = static_cast<const uint8_t*>(RTA_DATA(attribute));
    if (attribute->rta_type == NDA_DST) {
      address = data;
      address_length = RTA_PAYLOAD(attribute);
    } else if (attribute->rta_type == NDA_LLADDR && RTA_PAYLOAD(attribute) == 6) {
      mac = data;
    }
  }
  if (address == nullptr || mac == nullptr) return;
  std::array<uint8_t, 6> link{};
  std::memcpy(link.data(), mac, 6);
  if (entry->ndm_family == AF_INET && address_length == 4 && out->ipv4.size() < most) {
    out->ipv4.emplace_back(ip::Ipv4{address[0]} << 24 | ip::Ipv4{address[1]} << 16 |
                               ip::Ipv4{address[2]} << 8 | address[3],
                           link);
  } else if (entry->ndm_family == AF_INET6 && address_length == 16 && out->ipv6.size() < most) {
    ip::Ipv6 ipv6;
    std::memcpy(ipv6.bytes.data(), address, 16);
    out->ipv6.emplace_back(ipv6, link);
  }
}

}  // namespace

KernelNeighbours kernel_permanent_neighbours(const std::string& interface, size_t most) {
  KernelNeighbours found;
  const unsigned ifindex = interface.empty() ? 0 : if_nametoindex(interface.c_str());
  if (ifindex == 0) return found;
  const int sock = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE);
  if (sock < 0) return found;
  // A kernel that never answers costs a second, not a hang.
  timeval timeout{1, 0};
  setsockopt(sock, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof(timeout));
  struct {
    nlmsghdr header;
    ndmsg entry;
  } request{};
  request.header.nlmsg_len = sizeof(request);
  request.header.nlmsg_type = RTM_GETNEIGH;
  request.header.nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP;
  request.header.nlmsg_seq = 1;
  request.entry.ndm_family = AF_UNSPEC;
  request.entry.ndm_ifindex = static_cast<int>(ifindex);  // a filter newer kernels apply
  sockaddr_nl kernel{};
  kernel.nl_family = AF_NETLINK;
  if (sendto(sock, &request, sizeof(request), 0, reinterpret_cast<sockaddr*>(&kernel),
             sizeof(kernel)) != static_cast<ssize_t>(sizeof(request))) {
    close(sock);
    return found;
  }
  std::vector<uint8_t> buffer(32768);  // (new's alignment suits nlmsghdr)
  for (bool done = false; !done;) {
    const ssize_t length = recv(sock, buffer.data(), buffer.size(), 0);
    if (length <= 0) break;
    int left = static_cast<int>(length);
    for (auto* header = reinterpret_cast<const nlmsghdr*>(buffer.data()); NLMSG_OK(header, left);
         header = NLMSG_NEXT(header, left)) {
      if (header->nlmsg_seq != request.header.nlmsg_seq) continue;
      if (header->nlmsg_type == NLMSG_DONE || header->nlmsg_type == NLMSG_ERROR) {
        done = true;
        break;
      }
      take_neighbour(header, static_cast<int>(ifindex), most, &found);
    }
  }
  close(sock);
  return found;
}

}  // namespace ofi_dpdk::ofi
