// test_kernel_ports.cc: KernelPorts (drivers/ofi/dpdk_kernel_ports.h) on
// the loopback addresses the kernel has: a held port is no one else's, on
// its address or the wildcard, until it is let go; a port another socket
// has is refused with -FI_EADDRINUSE, naming its owner, and leaves nothing
// held; what arrives at a held port is dropped unanswered.  Real kernel
// sockets; no EAL, no device.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <rdma/fi_errno.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <optional>
#include <string>
#include <thread>

#include "drivers/ofi/dpdk_kernel_ports.h"

namespace ofi_dpdk::ofi {
namespace {

constexpr ip::Ipv4 kLoopback = 0x7F000001;

ip::Ipv6 loopback6() {
  ip::Ipv6 a;
  a.bytes[15] = 1;
  return a;
}

// A socket bound as any program binds one; -errno if refused.
int bind_like_anyone(int family, const void* address, uint16_t port) {
  const int fd = socket(family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -errno;
  int ret;
  if (family == AF_INET) {
    sockaddr_in a{};
    a.sin_family = AF_INET;
    std::memcpy(&a.sin_addr, address, 4);
    a.sin_port = htons(port);
    ret = bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a);
  } else {
    sockaddr_in6 a{};
    a.sin6_family = AF_INET6;
    std::memcpy(&a.sin6_addr, address, 16);
    a.sin6_port = htons(port);
    ret = bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a);
  }
  if (ret != 0) {
    const int error = errno;
    close(fd);
    return -error;
  }
  return fd;
}

int bind4(ip::Ipv4 address, uint16_t port) {
  const in_addr a{htonl(address)};
  return bind_like_anyone(AF_INET, &a, port);
}

// Two neighbouring ports no one has now: the base of a KernelPorts whose
// queues 0 and 1 the test uses.
uint16_t free_port_pair() {
  for (int attempt = 0; attempt < 100; ++attempt) {
    const int probe = bind4(kLoopback, 0);
    if (probe < 0) break;
    sockaddr_in a{};
    socklen_t length = sizeof a;
    getsockname(probe, reinterpret_cast<sockaddr*>(&a), &length);
    const uint16_t port = ntohs(a.sin_port);
    close(probe);
    if (port >= 65535) continue;
    const int first = bind4(0, port), second = bind4(0, static_cast<uint16_t>(port + 1));
    if (first >= 0) close(first);
    if (second >= 0) close(second);
    if (first >= 0 && second >= 0) return port;
  }
  ADD_FAILURE() << "no free pair of UDP ports";
  return 0;
}

// The receive queue and drop count /proc/net/udp shows for the socket on
// 127.0.0.1:port; nullopt when there is none.
struct UdpLine {
  unsigned long rx_queue = 0;
  unsigned long drops = 0;
};
std::optional<UdpLine> udp_line(uint16_t port) {
  FILE* table = std::fopen("/proc/net/udp", "r");
  if (table == nullptr) return std::nullopt;
  char line[512];
  std::optional<UdpLine> found;
  while (!found && std::fgets(line, sizeof line, table) != nullptr) {
    unsigned address = 0, local_port = 0;
    UdpLine l;
    // sl local rem st tx:rx tr:when retrnsmt uid timeout inode ref pointer drops
    if (std::sscanf(line, " %*u: %8X:%X %*s %*x %*x:%lx %*s %*s %*u %*d %*u %*d %*s %lu", &address,
                    &local_port, &l.rx_queue, &l.drops) == 4 &&
        local_port == port && address == htonl(kLoopback))
      found = l;
  }
  std::fclose(table);
  return found;
}

TEST(KernelPorts, TheKernelHasItsLoopbackAddressAndNotADocumentationOne) {
  EXPECT_TRUE(kernel_has_ipv4(kLoopback));
  EXPECT_FALSE(kernel_has_ipv4(0xC0000201));  // 192.0.2.1, TEST-NET-1
}

TEST(KernelPorts, AHeldPortIsNoOneElsesUntilItIsLetGo) {
  const uint16_t base = free_port_pair();
  KernelPorts ports;
  ports.hold_on("test", kLoopback, std::nullopt, base);
  std::string why;
  ASSERT_EQ(ports.hold(1, &why), 0) << why;
  EXPECT_TRUE(ports.holds(1));
  const auto port = static_cast<uint16_t>(base + 1);
  // Expect: neither the address nor the wildcard binds.
  EXPECT_EQ(bind4(kLoopback, port), -EADDRINUSE);
  EXPECT_EQ(bind4(0, port), -EADDRINUSE);
  // Expect: queue 0's port is anyone's still.
  const int other = bind4(kLoopback, base);
  EXPECT_GE(other, 0);
  if (other >= 0) close(other);
  ports.release(1);
  EXPECT_FALSE(ports.holds(1));
  const int after = bind4(kLoopback, port);
  EXPECT_GE(after, 0) << "let go, the port is anyone's";
  if (after >= 0) close(after);
}

TEST(KernelPorts, APortAnotherSocketHasIsRefusedNamingItsOwner) {
  const uint16_t base = free_port_pair();
  const int squatter = bind4(0, base);  // the wildcard catches it too
  ASSERT_GE(squatter, 0);
  KernelPorts ports;
  ports.hold_on("test", kLoopback, std::nullopt, base);
  std::string why;
  EXPECT_EQ(ports.hold(0, &why), -FI_EADDRINUSE);
  EXPECT_FALSE(ports.holds(0));
  EXPECT_NE(why.find("127.0.0.1:" + std::to_string(base)), std::string::npos) << why;
  EXPECT_NE(why.find("uid " + std::to_string(getuid())), std::string::npos) << why;
  EXPECT_NE(why.find("pid " + std::to_string(getpid())), std::string::npos) << why;
  close(squatter);
  EXPECT_EQ(ports.hold(0, &why), 0) << why;
}

TEST(KernelPorts, WhatArrivesAtAHeldPortIsDroppedUnanswered) {
  const uint16_t base = free_port_pair();
  KernelPorts ports;
  ports.hold_on("test", kLoopback, std::nullopt, base);
  std::string why;
  ASSERT_EQ(ports.hold(0, &why), 0) << why;
  // A connected socket learns of a port unreachable as ECONNREFUSED.
  const int sender = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  ASSERT_GE(sender, 0);
  sockaddr_in to{};
  to.sin_family = AF_INET;
  to.sin_addr.s_addr = htonl(kLoopback);
  to.sin_port = htons(base);
  ASSERT_EQ(connect(sender, reinterpret_cast<sockaddr*>(&to), sizeof to), 0);
  const char datagram[64] = "a datagram for the provider's port";
  constexpr int kDatagrams = 10;
  for (int i = 0; i < kDatagrams; ++i) {
    EXPECT_EQ(send(sender, datagram, sizeof datagram, 0), static_cast<ssize_t>(sizeof datagram))
        << "datagram " << i << ": " << std::strerror(errno) << " (the kernel answered)";
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  int error = 0;
  socklen_t length = sizeof error;
  getsockopt(sender, SOL_SOCKET, SO_ERROR, &error, &length);
  EXPECT_EQ(error, 0) << std::strerror(error);
  close(sender);
  // Expect: nothing queued at the holder; every datagram dropped there.
  const auto line = udp_line(base);
  ASSERT_TRUE(line.has_value());
  EXPECT_EQ(line->rx_queue, 0u);
  EXPECT_EQ(line->drops, static_cast<unsigned long>(kDatagrams));
}

TEST(KernelPorts, BothFamiliesAreHeldAndLetGoTogether) {
  if (!kernel_has_ipv6(loopback6())) GTEST_SKIP() << "no ::1 here";
  const uint16_t base = free_port_pair();
  KernelPorts ports;
  ports.hold_on("test", kLoopback, loopback6(), base);
  std::string why;
  ASSERT_EQ(ports.hold(0, &why), 0) << why;
  const in6_addr any6 = in6addr_any;
  EXPECT_EQ(bind_like_anyone(AF_INET6, loopback6().bytes.data(), base), -EADDRINUSE);
  EXPECT_EQ(bind_like_anyone(AF_INET6, &any6, base), -EADDRINUSE);
  EXPECT_EQ(bind4(kLoopback, base), -EADDRINUSE);
  ports.release(0);
  const int after = bind_like_anyone(AF_INET6, loopback6().bytes.data(), base);
  EXPECT_GE(after, 0);
  if (after >= 0) close(after);
  // Expect: one family taken by another socket holds neither.
  const int squatter = bind_like_anyone(AF_INET6, loopback6().bytes.data(), base);
  ASSERT_GE(squatter, 0);
  EXPECT_EQ(ports.hold(0, &why), -FI_EADDRINUSE);
  EXPECT_NE(why.find("[::1]:" + std::to_string(base)), std::string::npos) << why;
  const int v4 = bind4(kLoopback, base);
  EXPECT_GE(v4, 0) << "the IPv4 port taken first was let go";
  if (v4 >= 0) close(v4);
  close(squatter);
}

TEST(KernelPorts, WithoutAnAddressNothingIsHeld) {
  const uint16_t base = free_port_pair();
  KernelPorts ports;
  ports.hold_on("test", std::nullopt, std::nullopt, base);
  EXPECT_FALSE(ports.active());
  std::string why;
  EXPECT_EQ(ports.hold(0, &why), 0);
  const int anyone = bind4(kLoopback, base);
  EXPECT_GE(anyone, 0);
  if (anyone >= 0) close(anyone);
}

}  // namespace
}  // namespace ofi_dpdk::ofi
