// test_tap_signals.cc: a program on a net_tap port gets no signals from it.
//
// net_tap asks for a signal per received frame (the first free real-time
// one) when it opens a queue, which cuts the program's own timed blocking
// calls short with EINTR (stock fi_pingpong lost its control connection
// so).  The provider brings EAL up and opens the port with those signals
// held (lib/eal/tap_signal_guard.h): afterwards each must be as the program
// left it (default: one such signal would end the process), and frames
// arriving on the tap must raise none.  Needs root and /dev/net/tun; the
// tap interface lives as long as the process.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <linux/if_packet.h>
#include <net/ethernet.h>
#include <net/if.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <cstdlib>
#include <string>
#include <thread>

#include "test/support/fabric_helpers.h"

namespace ofi_dpdk::test {
namespace {

// Sends `count` frames from the kernel's side of `interface` into the
// port's queue; 0 or -errno.
int send_into_tap(const std::string& interface, int count) {
  const unsigned index = if_nametoindex(interface.c_str());
  if (index == 0) return -errno;
  const int fd = socket(AF_PACKET, SOCK_RAW, 0);
  if (fd < 0) return -errno;
  sockaddr_ll to{};
  to.sll_family = AF_PACKET;
  to.sll_ifindex = static_cast<int>(index);
  to.sll_halen = ETH_ALEN;
  // To everyone, from a local MAC, in the local experimental EtherType.
  unsigned char frame[64] = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff,  //
                             0x02, 0x00, 0x00, 0x00, 0x00, 0x01,  //
                             0x88, 0xb5};
  int ret = 0;
  for (int i = 0; i < count && ret == 0; ++i)
    if (sendto(fd, frame, sizeof frame, 0, reinterpret_cast<sockaddr*>(&to), sizeof to) < 0)
      ret = -errno;
  close(fd);
  return ret;
}

TEST(TapSignals, ThePortLeavesTheSignalsToTheProgram) {
  if (geteuid() != 0 || access("/dev/net/tun", R_OK | W_OK) != 0)
    GTEST_SKIP() << "needs root and /dev/net/tun";
  const std::string interface = "ofisig" + std::to_string(getpid() % 100000);
  const std::string eal =
      "--no-huge -m 256 --no-shconf --no-pci --no-telemetry "
      "--log-level=lib.eal:error --vdev=net_tap0,iface=" +
      interface;
  setenv("FI_DPDK_EAL_ARGS", eal.c_str(), 1);
  for (int signo : {SIGIO, SIGRTMIN + 1}) {
    struct sigaction before {};
    ASSERT_EQ(sigaction(signo, nullptr, &before), 0);
    ASSERT_EQ(before.sa_handler, SIG_DFL);
  }

  fi_info* info = get_dpdk_info("net_tap0");
  ASSERT_NE(info, nullptr) << "no dpdk fi_info for net_tap0";
  fid_fabric* fabric = nullptr;
  fid_domain* domain = nullptr;
  ASSERT_EQ(fi_fabric(info->fabric_attr, &fabric, nullptr), 0);
  ASSERT_EQ(fi_domain(fabric, info, &domain, nullptr), 0);  // the port opens here

  for (int signo = SIGRTMIN + 1; signo < SIGRTMAX; ++signo) {
    struct sigaction after {};
    ASSERT_EQ(sigaction(signo, nullptr, &after), 0);
    EXPECT_EQ(after.sa_handler, SIG_DFL) << "the port took signal " << signo;
  }
  struct sigaction after {};
  ASSERT_EQ(sigaction(SIGIO, nullptr, &after), 0);
  EXPECT_EQ(after.sa_handler, SIG_DFL) << "the port took SIGIO";
  // With a signal set on a queue, the first of these would end the process.
  ASSERT_EQ(send_into_tap(interface, 32), 0);
  std::this_thread::sleep_for(std::chrono::milliseconds(200));

  fi_close(&domain->fid);
  fi_close(&fabric->fid);
  fi_freeinfo(info);
}

}  // namespace
}  // namespace ofi_dpdk::test
