// tagged_fixture.h: what the fi_tagged tests (test_tagged*.cc) share:
// payload patterns, completion helpers and the Tagged fixtures (two
// endpoints with FI_CQ_FORMAT_TAGGED CQs, three, directed, FI_SOURCE).
// Header-only.
#pragma once

#include <gtest/gtest.h>
#include <rdma/fi_tagged.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "test/support/messaging.h"

namespace ofi_dpdk::test {

using Clock = std::chrono::steady_clock;

inline constexpr uint8_t kFill = 0xEE;
inline constexpr double kWait = 5;  // seconds any single completion may take

inline std::vector<uint8_t> pattern(size_t length, unsigned seed) {
  std::vector<uint8_t> bytes(length);
  for (size_t i = 0; i < length; ++i)
    bytes[i] = static_cast<uint8_t>(i * 31 + seed * 7 + (i >> 11) + 3);
  return bytes;
}

inline bool all_fill(const uint8_t* bytes, size_t length) {
  return std::all_of(bytes, bytes + length, [](uint8_t b) { return b == kFill; });
}

// Polls `cq` (FI_CQ_FORMAT_TAGGED) for `seconds`; true if nothing came.
inline bool quiet(fid_cq* cq, double seconds = 0.2) {
  fi_cq_tagged_entry entry;
  return wait_for_completion(cq, &entry, seconds) == -FI_EAGAIN;
}

inline fi_cq_err_entry read_error(fid_cq* cq) {
  fi_cq_err_entry error{};
  EXPECT_EQ(fi_cq_readerr(cq, &error, 0), 1);
  return error;
}

// Calls `op` until it stops returning -FI_EAGAIN, driving progress on `cq`.
template <typename Op>
inline ssize_t retry(fid_cq* cq, Op op) {
  const auto deadline = Clock::now() + std::chrono::duration<double>(kWait);
  ssize_t ret;
  while ((ret = op()) == -FI_EAGAIN && Clock::now() < deadline) {
    fi_cq_tagged_entry unused;
    fi_cq_read(cq, &unused, 0);
  }
  return ret;
}

inline fi_cq_tagged_entry expect_completion(fid_cq* cq, void* context, uint64_t flags) {
  fi_cq_tagged_entry entry{};
  const ssize_t ret = wait_for_completion(cq, &entry, kWait);
  EXPECT_EQ(ret, 1) << fi_strerror(static_cast<int>(-ret));
  if (ret == -FI_EAVAIL) {
    const fi_cq_err_entry error = read_error(cq);
    ADD_FAILURE() << "error completion: " << fi_strerror(error.err);
  }
  if (ret != 1) return {};
  EXPECT_EQ(entry.op_context, context);
  EXPECT_EQ(entry.flags & flags, flags);
  return entry;
}

// Two endpoints a and b (c for directed tests) with FI_CQ_FORMAT_TAGGED CQs.
class Tagged : public ::testing::Test {
 protected:
  virtual uint64_t caps() const { return FI_TAGGED | FI_MSG; }

  void SetUp() override {
    ASSERT_EQ(domain_.open(nullptr, caps()), 0) << "no dpdk provider offering FI_TAGGED";
    ASSERT_TRUE(domain_.info->caps & FI_TAGGED);
    ASSERT_EQ(a_.open(domain_.domain, domain_.av, domain_.info, FI_CQ_FORMAT_TAGGED), 0);
    ASSERT_EQ(b_.open(domain_.domain, domain_.av, domain_.info, FI_CQ_FORMAT_TAGGED), 0);
  }
  void TearDown() override {
    a_.close();
    b_.close();
    domain_.close();
  }

  size_t inject_size() const { return domain_.info->tx_attr->inject_size; }

  ssize_t tsend(TestEndpoint& from, const void* buf, size_t len, fi_addr_t to, uint64_t tag,
                void* context) {
    return retry(from.tx_cq,
                 [&] { return fi_tsend(from.ep, buf, len, nullptr, to, tag, context); });
  }
  // Sends and waits for the send's completion: the message is then whole at
  // the receiver's transport (unexpected unless a receive took it).
  void tsend_acked(TestEndpoint& from, const void* buf, size_t len, fi_addr_t to, uint64_t tag) {
    int context = 0;
    ASSERT_EQ(tsend(from, buf, len, to, tag, &context), 0);
    expect_completion(from.tx_cq, &context, FI_TAGGED | FI_SEND);
  }
  // fi_trecvmsg with one buffer (or none) and `flags`.
  ssize_t trecvmsg(TestEndpoint& at, void* buf, size_t len, uint64_t tag, uint64_t ignore,
                   void* context, uint64_t flags, fi_addr_t source = FI_ADDR_UNSPEC) {
    iovec iov{buf, len};
    fi_msg_tagged msg{};
    msg.msg_iov = buf != nullptr ? &iov : nullptr;
    msg.iov_count = buf != nullptr ? 1 : 0;
    msg.addr = source;
    msg.tag = tag;
    msg.ignore = ignore;
    msg.context = context;
    return fi_trecvmsg(at.ep, &msg, flags);
  }

  TestDomain domain_;
  TestEndpoint a_, b_;
};

class TaggedThree : public Tagged {
 protected:
  void SetUp() override {
    Tagged::SetUp();
    if (HasFatalFailure()) return;
    ASSERT_EQ(c_.open(domain_.domain, domain_.av, domain_.info, FI_CQ_FORMAT_TAGGED), 0);
  }
  void TearDown() override {
    c_.close();
    Tagged::TearDown();
  }
  TestEndpoint c_;
};

class TaggedDirected : public TaggedThree {
 protected:
  uint64_t caps() const override { return FI_TAGGED | FI_MSG | FI_DIRECTED_RECV; }
};

class TaggedSource : public TaggedThree {
 protected:
  uint64_t caps() const override { return FI_TAGGED | FI_SOURCE; }
};

}  // namespace ofi_dpdk::test
