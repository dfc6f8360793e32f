// Lanes (doc/architecture.md, "Threading and locking"): on a net_ring of its
// own, steered by sender, threads whose endpoints share no CQ get a lock
// each once they meet on the port's lock.
//
// What must hold: with two threads each streaming between its own two
// endpoints, every message arrives once and intact, the port splits into
// lanes (each endpoint's lane is then its own queue pair, and its frames
// arrive on that queue pair); and after the split one thread that polls
// only the receiver's CQ still moves a large message whose sender, in
// another lane, needs its acknowledgements processed.  Run with the safety
// net off (FI_DPDK_PROGRESS_NET_MS=0, meson sets it): nothing but the
// calls moves data.  Meant for ThreadSanitizer too.
#include <fi_dpdk.h>
#include <gtest/gtest.h>
#include <rdma/fi_domain.h>
#include <rte_launch.h>
#include <rte_lcore.h>

#include <array>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "test/support/fabric_helpers.h"
#include "test/support/messaging.h"

namespace ofi_dpdk::test {
namespace {

constexpr int kThreads = 2;
constexpr std::array<size_t, 5> kSizes = {8, 1436, 1437, 4096, 10000};

uint8_t pattern_byte(int thread, int seq, size_t offset) {
  uint64_t x = (uint64_t(thread) << 48) ^ (uint64_t(seq) << 20) ^ offset;
  x *= 0x9E3779B97F4A7C15ull;
  return static_cast<uint8_t>(x >> 56);
}

class Lanes : public ::testing::Test {
 protected:
  virtual fi_progress data_progress() const { return FI_PROGRESS_MANUAL; }
  void SetUp() override {
    domain_.info = get_dpdk_info(nullptr, FI_MSG);
    ASSERT_NE(domain_.info, nullptr);
    domain_.info->domain_attr->data_progress = data_progress();
    ASSERT_EQ(fi_fabric(domain_.info->fabric_attr, &domain_.fabric, nullptr), 0);
    ASSERT_EQ(fi_domain(domain_.fabric, domain_.info, &domain_.domain, nullptr), 0);
    fi_av_attr attr{};
    attr.type = FI_AV_TABLE;
    ASSERT_EQ(fi_av_open(domain_.domain, &attr, &domain_.av, nullptr), 0);
    ASSERT_EQ(fi_open_ops(&domain_.domain->fid, FI_DPDK_STATS_OPS_NAME, 0,
                          reinterpret_cast<void**>(&ops_), nullptr),
              0);
    ASSERT_GE(ops_->size, offsetof(fi_dpdk_ops_stats, ep_steering) + sizeof(ops_->ep_steering));
    fi_dpdk_port_stats port{};
    ASSERT_EQ(ops_->port_stats(domain_.domain, &port), 0);
    if (port.steering != 3)
      GTEST_SKIP() << "the port is not steered by sender (FI_DPDK_STEERING, FI_DPDK_QUEUES)";
    queue_pairs_ = port.queues;
    ASSERT_GE(queue_pairs_, 4u);
    for (auto& ep : eps_) ASSERT_EQ(ep.open(domain_.domain, domain_.av, domain_.info), 0);
  }
  void TearDown() override {
    for (auto& ep : eps_) ep.close();
    domain_.close();
  }

  fi_dpdk_ep_steering steering(const TestEndpoint& ep) {
    fi_dpdk_ep_steering out{};
    EXPECT_EQ(ops_->ep_steering(ep.ep, &out), 0);
    return out;
  }

  // Thread `t` sends `count` messages from its first endpoint to its second,
  // one at a time, each checked byte for byte.  Returns what went wrong, or
  // "" when every message arrived once and intact.
  std::string stream(int t, int first_seq, int count) {
    TestEndpoint& from = eps_[2 * t];
    TestEndpoint& to = eps_[2 * t + 1];
    std::vector<uint8_t> out(kSizes.back()), in(kSizes.back());
    for (int seq = first_seq; seq < first_seq + count; ++seq) {
      const size_t size = kSizes[seq % kSizes.size()];
      for (size_t i = 0; i < size; ++i) out[i] = pattern_byte(t, seq, i);
      std::memset(in.data(), 0, in.size());
      if (fi_recv(to.ep, in.data(), in.size(), nullptr, FI_ADDR_UNSPEC, &in) != 0)
        return "fi_recv failed";
      ssize_t ret;
      while ((ret = fi_send(from.ep, out.data(), size, nullptr, to.addr, &out)) == -FI_EAGAIN) {
        fi_cq_data_entry entry{};
        fi_cq_read(from.tx_cq, &entry, 1);
      }
      if (ret != 0) return "fi_send: " + std::string(fi_strerror(static_cast<int>(-ret)));
      fi_cq_data_entry entry{};
      if (wait_for_completion(to.rx_cq, &entry, 30) != 1) return "no receive completion";
      if (entry.op_context != &in || entry.len != size) return "a wrong receive completion";
      for (size_t i = 0; i < size; ++i)
        if (in[i] != pattern_byte(t, seq, i)) return "message " + std::to_string(seq) + " torn";
      if (wait_for_completion(from.tx_cq, &entry, 30) != 1 || entry.op_context != &out)
        return "no send completion";
    }
    return "";
  }

  // Both threads stream at once, round after round, until the port has
  // split (two threads met on lane 0's lock) or `rounds` ran.  Returns
  // whether it split.
  bool stream_until_split(int rounds) {
    for (int round = 0; round < rounds; ++round) {
      std::array<std::string, kThreads> failures;
      std::vector<std::thread> threads;
      for (int t = 0; t < kThreads; ++t)
        threads.emplace_back([&, t] { failures[t] = stream(t, round * 200, 200); });
      for (auto& thread : threads) thread.join();
      for (int t = 0; t < kThreads; ++t) EXPECT_EQ(failures[t], "") << "thread " << t;
      if (steering(eps_[3]).lane != 0) return true;
    }
    return false;
  }

  TestDomain domain_;
  fi_dpdk_ops_stats* ops_ = nullptr;
  uint32_t queue_pairs_ = 0;
  std::array<TestEndpoint, 2 * kThreads> eps_;
};

TEST_F(Lanes, ThreadsOnTheirOwnEndpointsSplitThePortIntoLanes) {
  // Until two threads meet, the port is one lane: lane 0's lock.
  for (const auto& ep : eps_) EXPECT_EQ(steering(ep).lane, 0u);
  ASSERT_TRUE(stream_until_split(50)) << "two threads never met on the port's lock";
  // Each endpoint (its own CQs) is now a lane of its own queue pair.
  for (const auto& ep : eps_) {
    const fi_dpdk_ep_steering s = steering(ep);
    EXPECT_EQ(s.lane, s.hw_queue) << "endpoint queue " << s.queue;
    EXPECT_EQ(s.hw_queue, s.queue % queue_pairs_);
  }
  // After the split a receiver's frames come on its own queue pair.
  const uint64_t before = steering(eps_[3]).frames_on_own_queue;
  ASSERT_EQ(stream(1, 100000, 20), "");
  EXPECT_GE(steering(eps_[3]).frames_on_own_queue, before + 20);
}

TEST_F(Lanes, OneThreadPollingTheReceiverMovesASenderOnAnotherLane) {
  ASSERT_TRUE(stream_until_split(50)) << "two threads never met on the port's lock";
  // Two endpoints opened after the split, in lanes of their own.
  TestEndpoint sender, receiver;
  ASSERT_EQ(sender.open(domain_.domain, domain_.av, domain_.info), 0);
  ASSERT_EQ(receiver.open(domain_.domain, domain_.av, domain_.info), 0);
  ASSERT_NE(steering(sender).lane, steering(receiver).lane);
  // Far more than the initial window: the sender must take acknowledgements
  // on its own lane to send it all, and nobody reads the sender's CQ.
  const size_t size = 1 << 20;
  std::vector<uint8_t> out(size), in(size);
  for (size_t i = 0; i < size; ++i) out[i] = pattern_byte(7, 1, i);
  ASSERT_EQ(fi_recv(receiver.ep, in.data(), in.size(), nullptr, FI_ADDR_UNSPEC, &in), 0);
  ASSERT_EQ(fi_send(sender.ep, out.data(), size, nullptr, receiver.addr, &out), 0);
  fi_cq_data_entry entry{};
  ASSERT_EQ(wait_for_completion(receiver.rx_cq, &entry, 30), 1);
  EXPECT_EQ(entry.len, size);
  EXPECT_TRUE(in == out);
  ASSERT_EQ(wait_for_completion(sender.tx_cq, &entry, 30), 1);
  EXPECT_EQ(entry.op_context, &out);
  sender.close();
  receiver.close();
}

// FI_PROGRESS_AUTO, with a progress loop on each lcore of
// FI_DPDK_PROGRESS_LCORES where meson gives a list (ofi_lanes_auto: lcores
// 1 and 2), or one loop on a thread (ofi_lanes): every message of the two
// threads still arrives once and intact, the port split as under manual
// progress, and the loops share the four lanes out, two each
// (fi_dpdk_ep_steering's progress_loop: the loop whose own pass last had
// the endpoint's lane).
class AutoLanes : public Lanes {
 protected:
  fi_progress data_progress() const override { return FI_PROGRESS_AUTO; }
};

std::vector<unsigned> listed_progress_lcores() {
  std::vector<unsigned> lcores;
  const char* text = std::getenv("FI_DPDK_PROGRESS_LCORES");
  for (const char* at = text; at != nullptr && *at != '\0';) {
    char* end = nullptr;
    lcores.push_back(static_cast<unsigned>(std::strtoul(at, &end, 10)));
    at = *end == ',' ? end + 1 : end;
    if (end == at && *at != '\0') break;  // (the test's own list: ids and commas)
  }
  return lcores;
}

TEST_F(AutoLanes, LoopsShareTheLanesAndEveryMessageArrivesOnce) {
  const std::vector<unsigned> lcores = listed_progress_lcores();
  for (unsigned lcore : lcores)
    EXPECT_EQ(rte_eal_get_lcore_state(lcore), RUNNING) << "no progress loop on lcore " << lcore;
  ASSERT_TRUE(stream_until_split(50)) << "two threads never met on the port's lock";
  for (const auto& ep : eps_) {
    const fi_dpdk_ep_steering s = steering(ep);
    EXPECT_EQ(s.lane, s.hw_queue) << "endpoint queue " << s.queue;
  }
  // Split, each lane on one loop: the threads stream on.
  std::array<std::string, kThreads> failures;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&, t] { failures[t] = stream(t, 50000, 300); });
  for (auto& thread : threads) thread.join();
  for (int t = 0; t < kThreads; ++t) EXPECT_EQ(failures[t], "") << "thread " << t;
  // Each lane is its loop's, and the loops share them: four lanes (an
  // endpoint each) between the loops in turn.
  const unsigned loops = lcores.empty() ? 1 : static_cast<unsigned>(lcores.size());
  std::vector<unsigned> passes_by_loop(loops + 1, 0);
  for (const auto& ep : eps_) {
    const unsigned loop = steering(ep).progress_loop;
    ASSERT_GE(loop, 1u) << "no loop passed over endpoint " << steering(ep).queue << "'s lane";
    ASSERT_LE(loop, loops);
    ++passes_by_loop[loop];
  }
  for (unsigned loop = 1; loop <= loops; ++loop)
    EXPECT_EQ(passes_by_loop[loop], eps_.size() / loops) << "lanes of loop " << loop;
  TearDown();
  for (unsigned lcore : lcores)
    EXPECT_EQ(rte_eal_get_lcore_state(lcore), WAIT) << "lcore " << lcore << " after the close";
}

}  // namespace
}  // namespace ofi_dpdk::test
