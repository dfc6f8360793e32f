// test_flow_steering.cc: rte_flow steering on a device that installs rules,
// through stock libfabric and the provider.  Two net_tap ports of one
// process, bridged by the kernel they run on (test_flow_steering_vm.sh
// boots one whose kernel has TC flower, skbedit and a multiq qdisc, what
// net_tap's rte_flow needs), with addresses of one subnet in IPv4 and IPv6.
// Endpoints on queues 1..3 of both ports, each reached in UDP to
// FI_DPDK_PORT_BASE + its queue, trade messages; each must then have had
// every one of its frames read from its own device queue, which only the
// rules can arrange: the kernel spreads the frames of flows no rule
// matches over all four queues by their hash.  The EtherType rule (a RAW
// item, which net_tap lacks) must be refused, and the log says so.
//
// net_tap gives the kernel's tap interface the port's MAC, and a bridge
// keeps its ports' MACs as its own: frames to a port would stop at the
// bridge.  So once the ports are open the program tells the script (file
// `opened` in $OFI_DPDK_STEERING_SYNC), which gives the interfaces other
// MACs, and waits for its answer (file `go`) before any traffic.
//
// With FI_DPDK_STEERING=rss (test_rss_vm.sh: two virtio-net NICs with
// QEMU's RSS, named by OFI_DPDK_STEERING_PORTS) the same exchange shows
// RSS steering: each endpoint names in its HELLO_ACKs the source ports its
// NIC's RSS puts on its queue, and its peer's frames come from them.  Only
// the few frames sent before a side learned the other's ports (HELLOs, an
// answer, acks before the side opened its own connection) land by hash.
#include <fi_dpdk.h>
#include <gtest/gtest.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "test/support/fabric_helpers.h"
#include "test/support/sockaddr_domain.h"

namespace ofi_dpdk::test {
namespace {

// test_flow_steering_vm.sh: net_tap0 is 10.9.0.1/24 and fd00:9::1/64,
// net_tap1 10.9.0.2/24 and fd00:9::2/64, four queue pairs each.
constexpr int kRoundTrips = 200;
constexpr size_t kMessage = 3000;                     // two frames at the tap's MTU of 1500
constexpr auto kPatience = std::chrono::seconds(60);  // software-emulated CPUs

bool rss() {
  const char* steering = std::getenv("FI_DPDK_STEERING");
  return steering != nullptr && std::strcmp(steering, "rss") == 0;
}

// The two ports: OFI_DPDK_STEERING_PORTS ("A,B"), else the two net_taps.
std::pair<std::string, std::string> port_names() {
  const char* names = std::getenv("OFI_DPDK_STEERING_PORTS");
  const std::string text = names != nullptr ? names : "net_tap0,net_tap1";
  const size_t comma = text.find(',');
  return {text.substr(0, comma), comma == std::string::npos ? "" : text.substr(comma + 1)};
}

bool in_the_vm() {
  return std::getenv("OFI_DPDK_STEERING_SYNC") != nullptr;
}

fi_dpdk_ops_stats* stats_ops(fid_domain* domain) {
  void* ops = nullptr;
  if (fi_open_ops(&domain->fid, FI_DPDK_STATS_OPS_NAME, 0, &ops, nullptr) != 0) return nullptr;
  auto* stats = static_cast<fi_dpdk_ops_stats*>(ops);
  // A provider older than ep_steering ends before it.
  if (stats->size < offsetof(fi_dpdk_ops_stats, ep_steering) + sizeof(stats->ep_steering))
    return nullptr;
  return stats;
}

// Tells the script `name` happened and waits for its `answer`.
void sync_with_script(const char* name, const char* answer) {
  const char* dir = std::getenv("OFI_DPDK_STEERING_SYNC");
  ASSERT_NE(dir, nullptr) << "OFI_DPDK_STEERING_SYNC is not set";
  std::ofstream(std::string(dir) + "/" + name) << name << "\n";
  const std::string done = std::string(dir) + "/" + answer;
  const auto deadline = std::chrono::steady_clock::now() + kPatience;
  while (!std::ifstream(done).good()) {
    ASSERT_LT(std::chrono::steady_clock::now(), deadline) << "the script did not answer";
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
}

// One endpoint at a given port, family and queue, in a domain of its own.
struct Place {
  SockaddrDomain domain;
  TestEndpoint endpoint;

  void open(const char* port, uint32_t format, const char* node, int queue) {
    domain.open(format, port, node, std::to_string(queue).c_str(), FI_SOURCE);
    if (::testing::Test::HasFatalFailure()) return;
    ASSERT_EQ(endpoint.open(domain.domain, domain.av, domain.info), 0);
  }
  fi_addr_t insert(const Place& peer) {
    fi_addr_t addr = FI_ADDR_NOTAVAIL;
    EXPECT_EQ(fi_av_insert(domain.av, peer.endpoint.name, 1, &addr, 0, nullptr), 1);
    return addr;
  }
  fi_dpdk_ep_steering steering() {
    fi_dpdk_ep_steering out{};
    fi_dpdk_ops_stats* ops = stats_ops(domain.domain);
    EXPECT_NE(ops, nullptr) << "no ep_steering op";
    if (ops != nullptr) {
      EXPECT_EQ(ops->ep_steering(endpoint.ep, &out), 0);
    }
    return out;
  }
  void close() {
    endpoint.close();
    domain.close();
  }
};

// Waits for one completion on `cq`, polling `other` too (its port must
// answer for ours to complete).
void complete(fid_cq* cq, fid_cq* other, const char* what) {
  const auto deadline = std::chrono::steady_clock::now() + kPatience;
  fi_cq_data_entry entry{};
  for (;;) {
    const ssize_t got = fi_cq_read(cq, &entry, 1);
    if (got == 1) return;
    ASSERT_EQ(got, -FI_EAGAIN) << what;
    fi_cq_read(other, &entry, 0);
    ASSERT_LT(std::chrono::steady_clock::now(), deadline) << what << ": no completion";
  }
}

// `from` sends to `to` (its fi_addr `to_addr`), which checks the bytes.
void deliver(Place& from, fi_addr_t to_addr, Place& to, char tag) {
  static std::vector<char> out(kMessage);
  std::vector<char> in(kMessage, 0);
  for (size_t i = 0; i < kMessage; ++i) out[i] = static_cast<char>(tag + i * 7);
  ASSERT_EQ(fi_recv(to.endpoint.ep, in.data(), in.size(), nullptr, FI_ADDR_UNSPEC, nullptr), 0);
  const auto deadline = std::chrono::steady_clock::now() + kPatience;
  ssize_t ret;
  while ((ret = fi_send(from.endpoint.ep, out.data(), out.size(), nullptr, to_addr, nullptr)) ==
         -FI_EAGAIN) {
    fi_cq_data_entry drain;
    fi_cq_read(from.endpoint.tx_cq, &drain, 0);
    ASSERT_LT(std::chrono::steady_clock::now(), deadline);
  }
  ASSERT_EQ(ret, 0) << fi_strerror(static_cast<int>(-ret));
  complete(to.endpoint.rx_cq, from.endpoint.tx_cq, "receive");
  complete(from.endpoint.tx_cq, to.endpoint.rx_cq, "send");
  ASSERT_EQ(in, out);
}

TEST(FlowSteering, EachEndpointsFramesArriveOnItsOwnQueue) {
  if (!in_the_vm()) GTEST_SKIP() << "needs the VM of test_flow_steering_vm.sh or test_rss_vm.sh";
  const auto [port_a, port_b] = port_names();
  const char* kPortA = port_a.c_str();
  const char* kPortB = port_b.c_str();
  // Pairs across the ports, one in each family, on different queues.
  Place a1, a2, b3, b1;
  a1.open(kPortA, FI_SOCKADDR_IN, "10.9.0.1", 1);
  a2.open(kPortA, FI_SOCKADDR_IN6, "fd00:9::1", 2);
  b3.open(kPortB, FI_SOCKADDR_IN, "10.9.0.2", 3);
  b1.open(kPortB, FI_SOCKADDR_IN6, "fd00:9::2", 1);
  if (HasFatalFailure()) return;

  fi_dpdk_port_stats port{};
  fi_dpdk_ops_stats* ops = stats_ops(a1.domain.domain);
  ASSERT_NE(ops, nullptr) << "no ep_steering op";
  ASSERT_EQ(ops->port_stats(a1.domain.domain, &port), 0);
  ASSERT_EQ(port.steering, rss() ? 2u : 1u) << "the device installed no rule: see the log";
  ASSERT_EQ(port.queues, 4u);
  sync_with_script("opened", "go");
  if (HasFatalFailure()) return;

  const fi_addr_t b3_to_a1 = b3.insert(a1), a1_to_b3 = a1.insert(b3);
  const fi_addr_t b1_to_a2 = b1.insert(a2), a2_to_b1 = a2.insert(b1);
  for (int i = 0; i < kRoundTrips && !HasFatalFailure(); ++i) {
    deliver(b3, b3_to_a1, a1, 'a');
    deliver(a1, a1_to_b3, b3, 'b');
    deliver(b1, b1_to_a2, a2, 'c');
    deliver(a2, a2_to_b1, b1, 'd');
  }
  if (HasFatalFailure()) return;

  for (Place* place : {&a1, &a2, &b3, &b1}) {
    const fi_dpdk_ep_steering s = place->steering();
    SCOPED_TRACE(std::string(place->domain.info->domain_attr->name) + " queue " +
                 std::to_string(s.queue));
    // Installed for this endpoint: both UDP kinds; not the EtherType's.
    EXPECT_EQ(s.rules, rss() ? 0u : FI_DPDK_RULE_UDP4 | FI_DPDK_RULE_UDP6);
    EXPECT_EQ(s.hw_queue, s.queue);
    // Each message is two frames, and each side acks.
    EXPECT_GE(s.frames_on_own_queue, uint64_t{kRoundTrips} * 2);
    // By hash, three frames in four would land on another queue.
    EXPECT_LE(s.frames_on_other_queue, rss() ? 8u : 0u);
    std::printf("%s queue %u: %llu frames on its queue, %llu on others\n",
                place->domain.info->domain_attr->name, s.queue,
                static_cast<unsigned long long>(s.frames_on_own_queue),
                static_cast<unsigned long long>(s.frames_on_other_queue));
  }
  // Closing the endpoints removes their rules while the ports stay open
  // (the domains hold them): the script lists the filters meanwhile.
  for (Place* place : {&a1, &a2, &b3, &b1}) place->endpoint.close();
  sync_with_script("closed", "checked");
  for (Place* place : {&a1, &a2, &b3, &b1}) place->domain.close();
}

}  // namespace
}  // namespace ofi_dpdk::test
