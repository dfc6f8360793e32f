// msg_fixture.h: what the fi_msg tests (test_msg*.cc) share: payload
// patterns, completion helpers and the Messaging fixtures (two endpoints,
// three, directed receives, FI_SOURCE).  Header-only.
#pragma once

#include <gtest/gtest.h>
#include <rdma/fi_atomic.h>
#include <rdma/fi_rma.h>
#include <rdma/fi_tagged.h>
#include <sys/mman.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "test/support/messaging.h"

namespace ofi_dpdk::test {

using Clock = std::chrono::steady_clock;

inline constexpr uint8_t kFill = 0xEE;  // what receive buffers hold before delivery
inline constexpr size_t kGuard = 32;    // bytes after a receive buffer that must stay kFill
inline constexpr double kWait = 5;      // seconds any single completion may take

inline std::vector<uint8_t> pattern(size_t length, unsigned seed) {
  std::vector<uint8_t> bytes(length);
  for (size_t i = 0; i < length; ++i) bytes[i] = static_cast<uint8_t>(i * 7 + seed * 13 + 1);
  return bytes;
}

// Index of the first byte where a and b differ, or -1.
inline long first_difference(const uint8_t* a, const uint8_t* b, size_t length) {
  for (size_t i = 0; i < length; ++i)
    if (a[i] != b[i]) return static_cast<long>(i);
  return -1;
}

inline bool all_fill(const uint8_t* bytes, size_t length) {
  return std::all_of(bytes, bytes + length, [](uint8_t b) { return b == kFill; });
}

// Calls `op` until it returns something other than -FI_EAGAIN, driving
// progress through `cq` in between, for at most kWait seconds.  Returns
// op's last result.
template <typename Op>
inline ssize_t retry(fid_cq* cq, Op op) {
  const auto deadline = Clock::now() + std::chrono::duration<double>(kWait);
  ssize_t ret;
  while ((ret = op()) == -FI_EAGAIN && Clock::now() < deadline) {
    fi_cq_data_entry unused;
    fi_cq_read(cq, &unused, 0);
  }
  return ret;
}

inline ssize_t send_to(TestEndpoint& from, const void* buf, size_t len, fi_addr_t to,
                       void* context) {
  return retry(from.tx_cq, [&] { return fi_send(from.ep, buf, len, nullptr, to, context); });
}

// Polls `cq` for `seconds` without expecting anything: lets the provider
// move frames (manual progress).  Returns false if a completion or an
// error showed up.
inline bool progress_quietly(fid_cq* cq, double seconds = 0.1) {
  return stays_empty(cq, seconds);
}

// The error entry at the head of `cq` (after fi_cq_read said -FI_EAVAIL).
inline fi_cq_err_entry read_error(fid_cq* cq) {
  fi_cq_err_entry error{};
  EXPECT_EQ(fi_cq_readerr(cq, &error, 0), 1);
  return error;
}

// Expects one successful send completion for `context` on `ep`'s TX CQ.
inline void expect_send_completion(TestEndpoint& ep, void* context) {
  fi_cq_data_entry entry{};
  const ssize_t ret = wait_for_completion(ep.tx_cq, &entry, kWait);
  ASSERT_EQ(ret, 1) << "TX completion: " << fi_strerror(static_cast<int>(-ret));
  EXPECT_EQ(entry.op_context, context);
  EXPECT_TRUE(entry.flags & FI_SEND);
  EXPECT_TRUE(entry.flags & FI_MSG);
}

// Waits for one successful receive completion on `ep`'s RX CQ.
inline fi_cq_data_entry expect_recv_completion(TestEndpoint& ep, void* context) {
  fi_cq_data_entry entry{};
  const ssize_t ret = wait_for_completion(ep.rx_cq, &entry, kWait);
  EXPECT_EQ(ret, 1) << "RX completion: " << fi_strerror(static_cast<int>(-ret));
  if (ret != 1) return {};
  EXPECT_EQ(entry.op_context, context);
  EXPECT_TRUE(entry.flags & FI_RECV);
  EXPECT_TRUE(entry.flags & FI_MSG);
  return entry;
}

inline uint64_t cq_data_mask(const fi_info* info) {
  const size_t bytes = info->domain_attr->cq_data_size;
  return bytes >= 8 ? ~uint64_t{0} : (uint64_t{1} << (8 * bytes)) - 1;
}

// Two endpoints, a and b, on one domain and one AV (a.addr, b.addr).
class Messaging : public ::testing::Test {
 protected:
  virtual uint64_t caps() const { return FI_MSG; }

  void SetUp() override {
    ASSERT_EQ(domain_.open(nullptr, caps()), 0) << "no dpdk provider on the net_ring port";
    ASSERT_EQ(a_.open(domain_.domain, domain_.av, domain_.info), 0);
    ASSERT_EQ(b_.open(domain_.domain, domain_.av, domain_.info), 0);
  }

  void TearDown() override {
    a_.close();
    b_.close();
    domain_.close();
  }

  size_t max_msg_size() const { return domain_.info->ep_attr->max_msg_size; }
  size_t inject_size() const { return domain_.info->tx_attr->inject_size; }

  TestDomain domain_;
  TestEndpoint a_, b_;
};

// A third endpoint, c, on the same AV.
class ThreeEndpoints : public Messaging {
 protected:
  void SetUp() override {
    Messaging::SetUp();
    if (HasFatalFailure()) return;
    ASSERT_EQ(c_.open(domain_.domain, domain_.av, domain_.info), 0);
  }
  void TearDown() override {
    c_.close();
    Messaging::TearDown();
  }
  TestEndpoint c_;
};

class DirectedRecv : public ThreeEndpoints {
 protected:
  uint64_t caps() const override { return FI_MSG | FI_DIRECTED_RECV; }
};

class SourceAddress : public ThreeEndpoints {
 protected:
  uint64_t caps() const override { return FI_MSG | FI_SOURCE; }
};

}  // namespace ofi_dpdk::test
