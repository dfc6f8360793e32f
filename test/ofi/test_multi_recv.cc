// FI_MULTI_RECV (fi_msg(3), fi_cq(3)) and FI_OPT_MIN_MULTI_RECV
// (fi_endpoint(3)) through stock libfabric on one net_ring port: one posted
// buffer takes successive messages, each completion points at its part, and
// the buffer is released, with a completion flagged FI_MULTI_RECV, once
// less than the minimum is left.
#include <gtest/gtest.h>
#include <rdma/fi_tagged.h>

#include <chrono>
#include <cstring>
#include <string>
#include <vector>

#include "test/support/messaging.h"

namespace ofi_dpdk::test {
namespace {

using Clock = std::chrono::steady_clock;
constexpr double kWait = 5;

template <typename Op>
ssize_t retry(fid_cq* cq, Op op) {
  const auto deadline = Clock::now() + std::chrono::duration<double>(kWait);
  ssize_t ret;
  while ((ret = op()) == -FI_EAGAIN && Clock::now() < deadline) {
    fi_cq_data_entry unused;
    fi_cq_read(cq, &unused, 0);
  }
  return ret;
}

ssize_t send_text(TestEndpoint& from, const std::string& posted, fi_addr_t to) {
  const std::string& text = kept_for_send(posted);
  return retry(from.tx_cq,
               [&] { return fi_send(from.ep, text.data(), text.size(), nullptr, to, nullptr); });
}

ssize_t post_multi(fid_ep* ep, std::vector<char>& buffer, void* context,
                   uint64_t flags = FI_MULTI_RECV) {
  iovec iov{buffer.data(), buffer.size()};
  fi_msg msg{};
  msg.msg_iov = &iov;
  msg.iov_count = 1;
  msg.addr = FI_ADDR_UNSPEC;
  msg.context = context;
  return fi_recvmsg(ep, &msg, flags);
}

int set_min(fid_ep* ep, size_t min) {
  return fi_setopt(&ep->fid, FI_OPT_ENDPOINT, FI_OPT_MIN_MULTI_RECV, &min, sizeof(min));
}

class MultiRecv : public ::testing::Test {
 protected:
  virtual uint64_t caps() const { return FI_MSG | FI_MULTI_RECV; }
  virtual uint64_t bind_flags() const { return 0; }
  virtual fi_cq_format format() const { return FI_CQ_FORMAT_DATA; }
  void SetUp() override {
    ASSERT_EQ(domain_.open(nullptr, caps()), 0) << "no dpdk provider with FI_MULTI_RECV";
    ASSERT_EQ(a_.open(domain_.domain, domain_.av, domain_.info), 0);
    ASSERT_EQ(b_.open(domain_.domain, domain_.av, domain_.info, format(), bind_flags()), 0);
  }
  void TearDown() override {
    a_.close();
    b_.close();
    domain_.close();
  }
  // Reads the next receive completion (an error one is failed).
  fi_cq_data_entry next_recv(fi_addr_t* source = nullptr) {
    fi_cq_data_entry entry{};
    const ssize_t ret = wait_for_completion(b_.rx_cq, &entry, kWait, source);
    EXPECT_EQ(ret, 1) << fi_strerror(static_cast<int>(-ret));
    return entry;
  }
  TestDomain domain_;
  TestEndpoint a_, b_;
};

TEST_F(MultiRecv, CapIsOfferedAndGranted) {
  EXPECT_TRUE(domain_.info->caps & FI_MULTI_RECV);
  EXPECT_TRUE(domain_.info->rx_attr->caps & FI_MULTI_RECV);
}

TEST_F(MultiRecv, MinMultiRecvOptionGetsAndSets) {
  size_t value = 0;
  size_t len = sizeof(value);
  ASSERT_EQ(fi_getopt(&b_.ep->fid, FI_OPT_ENDPOINT, FI_OPT_MIN_MULTI_RECV, &value, &len), 0);
  EXPECT_EQ(len, sizeof(size_t));
  EXPECT_GT(value, 0u) << "a default minimum";
  ASSERT_EQ(set_min(b_.ep, 1234), 0);
  value = 0;
  ASSERT_EQ(fi_getopt(&b_.ep->fid, FI_OPT_ENDPOINT, FI_OPT_MIN_MULTI_RECV, &value, &len), 0);
  EXPECT_EQ(value, 1234u);
}

TEST_F(MultiRecv, MinMultiRecvOptionSizeErrors) {
  const uint32_t small = 8;
  EXPECT_EQ(fi_setopt(&b_.ep->fid, FI_OPT_ENDPOINT, FI_OPT_MIN_MULTI_RECV, &small, sizeof(small)),
            -FI_EINVAL);
  EXPECT_EQ(fi_setopt(&b_.ep->fid, FI_OPT_ENDPOINT, FI_OPT_MIN_MULTI_RECV, nullptr, sizeof(size_t)),
            -FI_EINVAL);
  size_t value = 0;
  size_t len = 4;
  EXPECT_EQ(fi_getopt(&b_.ep->fid, FI_OPT_ENDPOINT, FI_OPT_MIN_MULTI_RECV, &value, &len),
            -FI_ETOOSMALL);
  EXPECT_EQ(len, sizeof(size_t)) << "the size needed";
  // Not an option of ours, or not the endpoint level.
  len = sizeof(value);
  EXPECT_EQ(fi_getopt(&b_.ep->fid, FI_OPT_ENDPOINT, FI_OPT_CM_DATA_SIZE, &value, &len),
            -FI_ENOPROTOOPT);
  EXPECT_EQ(fi_getopt(&b_.ep->fid, FI_OPT_ENDPOINT + 1, FI_OPT_MIN_MULTI_RECV, &value, &len),
            -FI_ENOPROTOOPT);
}

TEST_F(MultiRecv, FlagOnSendsIsRefused) {
  iovec iov{const_cast<char*>("x"), 1};
  fi_msg msg{};
  msg.msg_iov = &iov;
  msg.iov_count = 1;
  msg.addr = b_.addr;
  EXPECT_EQ(fi_sendmsg(a_.ep, &msg, FI_MULTI_RECV), -FI_EBADFLAGS);
  EXPECT_TRUE(stays_empty(a_.tx_cq, 0.05));
}

TEST_F(MultiRecv, ZeroSizeBufferIsEINVAL) {
  std::vector<char> empty;
  int context = 0;
  iovec iov{nullptr, 0};
  fi_msg msg{};
  msg.msg_iov = &iov;
  msg.iov_count = 1;
  msg.addr = FI_ADDR_UNSPEC;
  msg.context = &context;
  EXPECT_EQ(fi_recvmsg(b_.ep, &msg, FI_MULTI_RECV), -FI_EINVAL);
}

// Three 30-byte messages into 100 bytes with a minimum of 16: parts at 0,
// 30 and 60; after the third 10 bytes are left, so it releases the buffer.
TEST_F(MultiRecv, SuccessiveMessagesFillOneBufferThenRelease) {
  ASSERT_EQ(set_min(b_.ep, 16), 0);
  std::vector<char> buffer(100, '.');
  int context = 0;
  ASSERT_EQ(post_multi(b_.ep, buffer, &context), 0);
  const std::string texts[3] = {std::string(30, 'a'), std::string(30, 'b'), std::string(30, 'c')};
  for (const std::string& text : texts) ASSERT_EQ(send_text(a_, text, b_.addr), 0);
  for (int i = 0; i < 3; ++i) {
    SCOPED_TRACE("message " + std::to_string(i));
    const fi_cq_data_entry entry = next_recv();
    EXPECT_EQ(entry.op_context, &context);
    EXPECT_EQ(entry.len, 30u);
    EXPECT_EQ(entry.buf, buffer.data() + 30 * i) << "buf points at the message's part";
    EXPECT_TRUE(entry.flags & FI_RECV);
    EXPECT_TRUE(entry.flags & FI_MSG);
    EXPECT_EQ(std::string(buffer.data() + 30 * i, 30), texts[i]);
    EXPECT_EQ(!!(entry.flags & FI_MULTI_RECV), i == 2) << "released after the last only";
  }
  EXPECT_EQ(std::string(buffer.data() + 90, 10), std::string(10, '.'));
  // Released: the next message waits for the next receive.
  ASSERT_EQ(send_text(a_, "after", b_.addr), 0);
  EXPECT_TRUE(stays_empty(b_.rx_cq, 0.1));
  char plain[16] = {};
  ASSERT_EQ(fi_recv(b_.ep, plain, sizeof(plain), nullptr, FI_ADDR_UNSPEC, plain), 0);
  const fi_cq_data_entry entry = next_recv();
  EXPECT_EQ(entry.op_context, plain);
  EXPECT_EQ(std::string(plain, entry.len), "after");
  EXPECT_FALSE(entry.flags & FI_MULTI_RECV);
}

TEST_F(MultiRecv, MessagesThatCameFirstFillABufferPostedLater) {
  ASSERT_EQ(set_min(b_.ep, 8), 0);
  ASSERT_EQ(send_text(a_, "early one", b_.addr), 0);
  ASSERT_EQ(send_text(a_, "early two!", b_.addr), 0);
  // Both arrive unexpected: the sends complete before any receive exists.
  for (int i = 0; i < 2; ++i) {
    fi_cq_data_entry sent{};
    ASSERT_EQ(wait_for_completion(a_.tx_cq, &sent, kWait), 1);
  }
  std::vector<char> buffer(64, '.');
  int context = 0;
  ASSERT_EQ(post_multi(b_.ep, buffer, &context), 0);
  fi_cq_data_entry first = next_recv();
  fi_cq_data_entry second = next_recv();
  EXPECT_EQ(first.buf, buffer.data());
  EXPECT_EQ(first.len, 9u);
  EXPECT_EQ(second.buf, buffer.data() + 9);
  EXPECT_EQ(second.len, 10u);
  EXPECT_EQ(std::string(buffer.data(), 19), "early oneearly two!");
  EXPECT_FALSE((first.flags | second.flags) & FI_MULTI_RECV) << "45 bytes still free";
  // A later message goes on filling it.
  ASSERT_EQ(send_text(a_, "late", b_.addr), 0);
  const fi_cq_data_entry third = next_recv();
  EXPECT_EQ(third.buf, buffer.data() + 19);
  EXPECT_EQ(std::string(buffer.data() + 19, 4), "late");
  ASSERT_EQ(fi_cancel(&b_.ep->fid, &context), 0);
}

// A message longer than what is left takes the rest, truncated (FI_ETRUNC),
// and the full buffer is released even with a minimum of 0.
TEST_F(MultiRecv, MessageLongerThanWhatIsLeftIsTruncatedAndReleases) {
  ASSERT_EQ(set_min(b_.ep, 0), 0);
  std::vector<char> buffer(50, '.');
  int context = 0;
  ASSERT_EQ(post_multi(b_.ep, buffer, &context), 0);
  ASSERT_EQ(send_text(a_, std::string(30, 'x'), b_.addr), 0);
  ASSERT_EQ(send_text(a_, std::string(40, 'y'), b_.addr), 0);
  // The CQ hands out a queued error first (-FI_EAVAIL), so the first
  // message's entry may come after it.
  fi_cq_data_entry entry{};
  ASSERT_EQ(wait_for_completion(b_.rx_cq, &entry, kWait), -FI_EAVAIL);
  fi_cq_err_entry error{};
  ASSERT_EQ(fi_cq_readerr(b_.rx_cq, &error, 0), 1);
  EXPECT_EQ(error.err, FI_ETRUNC);
  EXPECT_EQ(error.op_context, &context);
  EXPECT_EQ(error.buf, buffer.data() + 30);
  EXPECT_EQ(error.len, 20u);
  EXPECT_EQ(error.olen, 20u);
  EXPECT_TRUE(error.flags & FI_MULTI_RECV);
  EXPECT_EQ(std::string(buffer.data() + 30, 20), std::string(20, 'y'));
  const fi_cq_data_entry first = next_recv();
  EXPECT_EQ(first.buf, buffer.data());
  EXPECT_EQ(first.len, 30u);
  EXPECT_FALSE(first.flags & FI_MULTI_RECV);
}

TEST_F(MultiRecv, CancelReleasesTheBuffer) {
  std::vector<char> buffer(256);
  int context = 0;
  ASSERT_EQ(post_multi(b_.ep, buffer, &context), 0);
  ASSERT_EQ(fi_cancel(&b_.ep->fid, &context), 0);
  fi_cq_data_entry entry{};
  ASSERT_EQ(wait_for_completion(b_.rx_cq, &entry, kWait), -FI_EAVAIL);
  fi_cq_err_entry error{};
  ASSERT_EQ(fi_cq_readerr(b_.rx_cq, &error, 0), 1);
  EXPECT_EQ(error.err, FI_ECANCELED);
  EXPECT_EQ(error.op_context, &context);
  EXPECT_TRUE(error.flags & FI_MULTI_RECV);
}

TEST_F(MultiRecv, EndpointWithoutTheCapRefusesTheFlag) {
  fi_info* info = fi_dupinfo(domain_.info);
  info->caps &= ~FI_MULTI_RECV;
  info->rx_attr->caps &= ~FI_MULTI_RECV;
  TestEndpoint c;
  ASSERT_EQ(c.open(domain_.domain, domain_.av, info), 0);
  std::vector<char> buffer(64);
  int context = 0;
  EXPECT_EQ(post_multi(c.ep, buffer, &context), -FI_EBADFLAGS);
  c.close();
  fi_freeinfo(info);
}

// The flag as a receive operation flag (fi_control FI_SETOPSFLAG) makes
// plain fi_recv calls multi-recv receives.
TEST_F(MultiRecv, RxOpFlagAppliesToFiRecv) {
  uint64_t flags = FI_RECV | FI_MULTI_RECV;
  ASSERT_EQ(fi_control(&b_.ep->fid, FI_SETOPSFLAG, &flags), 0);
  ASSERT_EQ(set_min(b_.ep, 1), 0);
  std::vector<char> buffer(32, '.');
  ASSERT_EQ(fi_recv(b_.ep, buffer.data(), buffer.size(), nullptr, FI_ADDR_UNSPEC, &buffer), 0);
  ASSERT_EQ(send_text(a_, "one", b_.addr), 0);
  ASSERT_EQ(send_text(a_, "two", b_.addr), 0);
  const fi_cq_data_entry first = next_recv();
  const fi_cq_data_entry second = next_recv();
  EXPECT_EQ(first.buf, buffer.data());
  EXPECT_EQ(second.buf, buffer.data() + 3);
  EXPECT_EQ(std::string(buffer.data(), 6), "onetwo");
  ASSERT_EQ(fi_cancel(&b_.ep->fid, &buffer), 0);
}

class MultiRecvSelective : public MultiRecv {
 protected:
  uint64_t bind_flags() const override { return FI_SELECTIVE_COMPLETION; }
};

// fi_msg(3): "an entry to the associated receive completion queue will
// always be generated when the buffer has been consumed, even if other
// receive completions have been suppressed" -- here alone, flags
// FI_MULTI_RECV only (fi_cq(3)).
TEST_F(MultiRecvSelective, ReleaseIsReportedEvenWithoutFiCompletion) {
  ASSERT_EQ(set_min(b_.ep, 20), 0);
  std::vector<char> buffer(40, '.');
  int context = 0;
  ASSERT_EQ(post_multi(b_.ep, buffer, &context, FI_MULTI_RECV), 0);
  ASSERT_EQ(send_text(a_, std::string(10, 'p'), b_.addr), 0);
  EXPECT_TRUE(stays_empty(b_.rx_cq, 0.1)) << "message completions were not asked for";
  ASSERT_EQ(send_text(a_, std::string(15, 'q'), b_.addr), 0);
  const fi_cq_data_entry entry = next_recv();
  EXPECT_EQ(entry.op_context, &context);
  EXPECT_EQ(entry.flags, uint64_t{FI_MULTI_RECV});
  EXPECT_EQ(std::string(buffer.data(), 25), std::string(10, 'p') + std::string(15, 'q'));
  EXPECT_TRUE(stays_empty(b_.rx_cq, 0.05));
}

class MultiRecvSource : public MultiRecv {
 protected:
  uint64_t caps() const override { return FI_MSG | FI_MULTI_RECV | FI_SOURCE; }
};

TEST_F(MultiRecvSource, EachPartReportsItsSender) {
  TestEndpoint c;
  ASSERT_EQ(c.open(domain_.domain, domain_.av, domain_.info), 0);
  std::vector<char> buffer(128, '.');
  int context = 0;
  ASSERT_EQ(post_multi(b_.ep, buffer, &context), 0);
  ASSERT_EQ(send_text(a_, "from a", b_.addr), 0);
  fi_addr_t source = FI_ADDR_UNSPEC;
  fi_cq_data_entry entry = next_recv(&source);
  EXPECT_EQ(source, a_.addr);
  EXPECT_EQ(entry.buf, buffer.data());
  ASSERT_EQ(send_text(c, "from c", b_.addr), 0);
  entry = next_recv(&source);
  EXPECT_EQ(source, c.addr);
  EXPECT_EQ(entry.buf, buffer.data() + 6);
  EXPECT_EQ(std::string(buffer.data(), 12), "from afrom c");
  ASSERT_EQ(fi_cancel(&b_.ep->fid, &context), 0);
  c.close();
}

#ifdef FI_TAGGED_MULTI_RECV
// libfabric 2.x fi_tagged(3): FI_MULTI_RECV on a tagged receive, with the
// secondary cap FI_TAGGED_MULTI_RECV.  The buffer takes only messages its
// tag and ignore mask match, in arrival order, each completion carrying its
// tag; an endpoint without the cap refuses the flag.
class TaggedMultiRecv : public MultiRecv {
 protected:
  uint64_t caps() const override { return FI_TAGGED | FI_TAGGED_MULTI_RECV; }
  fi_cq_format format() const override { return FI_CQ_FORMAT_TAGGED; }
};

TEST_F(TaggedMultiRecv, MatchingTaggedMessagesFillOneBuffer) {
  EXPECT_TRUE(domain_.info->caps & FI_TAGGED_MULTI_RECV);
  ASSERT_EQ(set_min(b_.ep, 16), 0);
  std::vector<char> buffer(64, '.');
  iovec iov{buffer.data(), buffer.size()};
  fi_msg_tagged msg{};
  msg.msg_iov = &iov;
  msg.iov_count = 1;
  msg.addr = FI_ADDR_UNSPEC;
  msg.tag = 0x500;
  msg.ignore = 0xFF;  // any tag 0x5XX
  int context = 0;
  msg.context = &context;
  ASSERT_EQ(fi_trecvmsg(b_.ep, &msg, FI_MULTI_RECV), 0);
  auto tsend = [&](const std::string& posted, uint64_t tag) {
    const std::string& text = kept_for_send(posted);
    return retry(a_.tx_cq, [&] {
      return fi_tsend(a_.ep, text.data(), text.size(), nullptr, b_.addr, tag, nullptr);
    });
  };
  ASSERT_EQ(tsend(std::string(20, 'x'), 0x501), 0);
  ASSERT_EQ(tsend(std::string(20, 'n'), 0x601), 0);  // not for this buffer
  ASSERT_EQ(tsend(std::string(30, 'y'), 0x5FF), 0);
  for (int i = 0; i < 2; ++i) {
    SCOPED_TRACE("message " + std::to_string(i));
    fi_cq_tagged_entry entry{};
    ASSERT_EQ(wait_for_completion(b_.rx_cq, &entry, kWait), 1);
    EXPECT_EQ(entry.op_context, &context);
    EXPECT_TRUE(entry.flags & FI_TAGGED);
    EXPECT_EQ(entry.tag, i == 0 ? 0x501u : 0x5FFu);
    EXPECT_EQ(entry.buf, buffer.data() + 20 * i);
    EXPECT_EQ(entry.len, i == 0 ? 20u : 30u);
    // 64 - 50 = 14 left, below the minimum of 16: released by the second.
    EXPECT_EQ(!!(entry.flags & FI_MULTI_RECV), i == 1);
  }
  EXPECT_EQ(std::string(buffer.data(), 50), std::string(20, 'x') + std::string(30, 'y'));
  char other[32] = {};
  ASSERT_EQ(fi_trecv(b_.ep, other, sizeof(other), nullptr, FI_ADDR_UNSPEC, 0x601, 0, other), 0);
  fi_cq_tagged_entry entry{};
  ASSERT_EQ(wait_for_completion(b_.rx_cq, &entry, kWait), 1);
  EXPECT_EQ(entry.op_context, other);
  EXPECT_EQ(std::string(other, entry.len), std::string(20, 'n'));
  // A peek may not carry the flag.
  msg.context = &context;
  EXPECT_EQ(fi_trecvmsg(b_.ep, &msg, FI_MULTI_RECV | FI_PEEK), -FI_EBADFLAGS);
}

#endif

}  // namespace
}  // namespace ofi_dpdk::test
