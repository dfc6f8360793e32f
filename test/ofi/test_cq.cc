// fi_cq(3) through stock libfabric on one net_ring port: entry formats,
// empty and partial reads, blocking reads with a timeout, errors, and the
// CQ's life cycle.
#include <fi_dpdk.h>
#include <gtest/gtest.h>
#include <rdma/fi_eq.h>

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstring>
#include <string>
#include <thread>

#include "test/support/messaging.h"

namespace ofi_dpdk::test {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

constexpr double kWait = 5;  // seconds any single completion may take
constexpr uint8_t kCanary = 0xA5;
constexpr uint64_t kData = 0x1122334455667788;

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

ssize_t send_to(TestEndpoint& from, const void* buf, size_t len, fi_addr_t to, void* context) {
  return retry(from.tx_cq, [&] { return fi_send(from.ep, buf, len, nullptr, to, context); });
}

long elapsed_ms(Clock::time_point since) {
  return static_cast<long>(std::chrono::duration_cast<milliseconds>(Clock::now() - since).count());
}

uint64_t cq_data_mask(const fi_info* info) {
  const size_t bytes = info->domain_attr->cq_data_size;
  return bytes >= 8 ? ~uint64_t{0} : (uint64_t{1} << (8 * bytes)) - 1;
}

// A domain with two endpoints whose CQs use `format`.
class CqTest : public ::testing::Test {
 protected:
  void open(fi_cq_format format) {
    ASSERT_EQ(domain_.open(), 0) << "no dpdk provider on the net_ring port";
    ASSERT_EQ(a_.open(domain_.domain, domain_.av, domain_.info, format), 0);
    ASSERT_EQ(b_.open(domain_.domain, domain_.av, domain_.info, format), 0);
  }
  void SetUp() override { open(FI_CQ_FORMAT_DATA); }
  void TearDown() override {
    a_.close();
    b_.close();
    domain_.close();
  }

  TestDomain domain_;
  TestEndpoint a_, b_;
};

// ---- formats ----

size_t entry_size(fi_cq_format format) {
  switch (format) {
    case FI_CQ_FORMAT_CONTEXT:
      return sizeof(fi_cq_entry);
    case FI_CQ_FORMAT_MSG:
      return sizeof(fi_cq_msg_entry);
    case FI_CQ_FORMAT_DATA:
      return sizeof(fi_cq_data_entry);
    case FI_CQ_FORMAT_TAGGED:
      return sizeof(fi_cq_tagged_entry);
    default:
      return 0;
  }
}

const char* format_name(fi_cq_format format) {
  switch (format) {
    case FI_CQ_FORMAT_CONTEXT:
      return "Context";
    case FI_CQ_FORMAT_MSG:
      return "Msg";
    case FI_CQ_FORMAT_DATA:
      return "Data";
    case FI_CQ_FORMAT_TAGGED:
      return "Tagged";
    default:
      return "Unknown";
  }
}

// Room for two of the largest entries, filled with kCanary, so a read of
// one entry that writes past its format's size shows.
struct RawEntry {
  alignas(fi_cq_tagged_entry) uint8_t bytes[2 * sizeof(fi_cq_tagged_entry)];
  RawEntry() { std::memset(bytes, kCanary, sizeof(bytes)); }
  bool canary_intact_after(size_t size) const {
    for (size_t i = size; i < sizeof(bytes); ++i)
      if (bytes[i] != kCanary) return false;
    return true;
  }
  template <typename T>
  T as() const {
    T entry;
    std::memcpy(&entry, bytes, sizeof(T));
    return entry;
  }
};

class CqFormat : public CqTest, public ::testing::WithParamInterface<fi_cq_format> {
 protected:
  void SetUp() override { open(GetParam()); }
};

TEST_P(CqFormat, EachFormatFillsExactlyItsFields) {
  const fi_cq_format format = GetParam();
  const size_t size = entry_size(format);
  const uint64_t data = kData & cq_data_mask(domain_.info);
  char buffer[32] = {};
  int send_context = 0;
  ASSERT_EQ(fi_recv(b_.ep, buffer, sizeof(buffer), nullptr, FI_ADDR_UNSPEC, buffer), 0);
  ASSERT_EQ(
      retry(a_.tx_cq,
            [&] { return fi_senddata(a_.ep, "format", 6, nullptr, data, b_.addr, &send_context); }),
      0);

  RawEntry tx;
  ASSERT_EQ(wait_for_completion(a_.tx_cq, tx.bytes, kWait), 1);
  EXPECT_TRUE(tx.canary_intact_after(size))
      << "wrote more than one " << format_name(format) << " entry";
  EXPECT_EQ(tx.as<fi_cq_entry>().op_context, &send_context);
  if (format != FI_CQ_FORMAT_CONTEXT) {
    const auto msg = tx.as<fi_cq_msg_entry>();
    EXPECT_EQ(msg.flags & (FI_SEND | FI_RECV | FI_MSG), uint64_t{FI_SEND | FI_MSG});
  }

  RawEntry rx;
  ASSERT_EQ(wait_for_completion(b_.rx_cq, rx.bytes, kWait), 1);
  EXPECT_TRUE(rx.canary_intact_after(size))
      << "wrote more than one " << format_name(format) << " entry";
  EXPECT_EQ(rx.as<fi_cq_entry>().op_context, buffer);
  if (format != FI_CQ_FORMAT_CONTEXT) {
    const auto msg = rx.as<fi_cq_msg_entry>();
    EXPECT_EQ(msg.flags & (FI_SEND | FI_RECV | FI_MSG), uint64_t{FI_RECV | FI_MSG});
    EXPECT_TRUE(msg.flags & FI_REMOTE_CQ_DATA);
    EXPECT_EQ(msg.len, 6u);
  }
  if (format == FI_CQ_FORMAT_DATA || format == FI_CQ_FORMAT_TAGGED) {
    EXPECT_EQ(rx.as<fi_cq_data_entry>().data, data);
  }
  EXPECT_EQ(std::string(buffer, 6), "format");
}

INSTANTIATE_TEST_SUITE_P(AllFormats, CqFormat,
                         ::testing::Values(FI_CQ_FORMAT_CONTEXT, FI_CQ_FORMAT_MSG,
                                           FI_CQ_FORMAT_DATA, FI_CQ_FORMAT_TAGGED),
                         [](const auto& info) { return std::string(format_name(info.param)); });

// ---- reading ----

TEST_F(CqTest, ReadOnEmptyIsEAGAIN) {
  fi_cq_data_entry entry{};
  fi_addr_t source;
  EXPECT_EQ(fi_cq_read(b_.rx_cq, &entry, 1), -FI_EAGAIN);
  EXPECT_EQ(fi_cq_readfrom(b_.rx_cq, &entry, 1, &source), -FI_EAGAIN);
  EXPECT_EQ(fi_cq_read(a_.tx_cq, &entry, 1), -FI_EAGAIN);
  fi_cq_err_entry error{};
  EXPECT_EQ(fi_cq_readerr(b_.rx_cq, &error, 0), -FI_EAGAIN);
}

// Open MPI's OFI MTL spins on fi_cq_read until a blocking send completes,
// which takes the peer's answer; with more processes than CPUs that peer
// may be waiting for this very CPU.  (FI_DPDK_IDLE_YIELD_US, 5 by default:
// 20 ms of empty reads are well past it.)
TEST_F(CqTest, ReadingAnEmptyCqForAWhileGivesUpTheCpu) {
  fi_dpdk_ops_stats* stats = nullptr;
  ASSERT_EQ(fi_open_ops(&domain_.domain->fid, FI_DPDK_STATS_OPS_NAME, 0,
                        reinterpret_cast<void**>(&stats), nullptr),
            0);
  ASSERT_GE(stats->size, offsetof(fi_dpdk_ops_stats, port_polls) + sizeof(stats->port_polls));
  fi_dpdk_port_polls before{}, after{};
  ASSERT_EQ(stats->port_polls(domain_.domain, &before), 0);
  uint64_t reads = 0;
  fi_cq_data_entry entry{};
  for (const auto until = Clock::now() + milliseconds(20); Clock::now() < until; ++reads)
    ASSERT_EQ(fi_cq_read(b_.rx_cq, &entry, 1), -FI_EAGAIN);
  ASSERT_EQ(stats->port_polls(domain_.domain, &after), 0);
  EXPECT_GT(after.idle_yields, before.idle_yields);
  EXPECT_LE(after.idle_yields - before.idle_yields, reads);
  EXPECT_EQ(stats->port_polls(nullptr, &after), -FI_EINVAL);
}

// An application that polls its send and receive CQs in turn (fabtests'
// wait loops, MPI's progress) makes one progress pass per round: a read of
// an empty CQ takes the pass another CQ's read just ran, once per pass.  A
// CQ polled alone still makes a pass per read, and the round still moves
// messages.
TEST_F(CqTest, ReadsOfTwoCqsInTurnShareOnePassPerRound) {
  fi_dpdk_ops_stats* stats = nullptr;
  ASSERT_EQ(fi_open_ops(&domain_.domain->fid, FI_DPDK_STATS_OPS_NAME, 0,
                        reinterpret_cast<void**>(&stats), nullptr),
            0);
  auto polls = [&] {
    fi_dpdk_port_polls out{};
    EXPECT_EQ(stats->port_polls(domain_.domain, &out), 0);
    return out;
  };
  fi_cq_data_entry entry{};
  constexpr uint64_t kRounds = 1000;
  fi_dpdk_port_polls before = polls();
  for (uint64_t i = 0; i < kRounds; ++i) {
    ASSERT_EQ(fi_cq_read(b_.rx_cq, &entry, 1), -FI_EAGAIN);
    ASSERT_EQ(fi_cq_read(a_.tx_cq, &entry, 1), -FI_EAGAIN);
  }
  fi_dpdk_port_polls after = polls();
  // (Whether the very first read shares the set-up's last pass depends on
  // who ran it: one read either way.)
  EXPECT_EQ(after.cq_passes - before.cq_passes + after.cq_shared_passes - before.cq_shared_passes,
            2 * kRounds);
  EXPECT_GE(after.cq_passes - before.cq_passes, kRounds - 1);
  EXPECT_LE(after.cq_passes - before.cq_passes, kRounds + 1);

  before = after;
  for (uint64_t i = 0; i < kRounds; ++i) ASSERT_EQ(fi_cq_read(a_.tx_cq, &entry, 1), -FI_EAGAIN);
  after = polls();
  // (Its first read already shared the rx read's last pass.)
  EXPECT_EQ(after.cq_passes - before.cq_passes, kRounds);
  EXPECT_EQ(after.cq_shared_passes, before.cq_shared_passes);

  // Messages sent meanwhile arrive: each round's one pass carries them.
  static char buffers[8][8];
  for (int i = 0; i < 8; ++i) {
    ASSERT_EQ(fi_recv(b_.ep, buffers[i], sizeof(buffers[i]), nullptr, FI_ADDR_UNSPEC, nullptr), 0);
    const char text[8] = {'m', 's', 'g', static_cast<char>('0' + i)};
    ASSERT_EQ(fi_inject(a_.ep, text, sizeof(text), b_.addr), 0);
  }
  int received = 0;
  for (const auto until = Clock::now() + std::chrono::seconds(10);
       received < 8 && Clock::now() < until;) {
    const ssize_t got = fi_cq_read(b_.rx_cq, &entry, 1);
    ASSERT_TRUE(got == 1 || got == -FI_EAGAIN) << got;
    if (got == 1) ++received;
    ASSERT_EQ(fi_cq_read(a_.tx_cq, &entry, 1), -FI_EAGAIN);
  }
  EXPECT_EQ(received, 8);
  for (int i = 0; i < 8; ++i) EXPECT_EQ(buffers[i][3], '0' + i);
}

TEST_F(CqTest, ReadingMoreThanAvailableReturnsWhatIsThere) {
  // Static: a receive still posted when the test ends may be filled while
  // TearDown closes the endpoint, after this frame is gone.
  static char buffers[3][16];
  std::memset(buffers, 0, sizeof(buffers));
  for (auto& buffer : buffers)
    ASSERT_EQ(fi_recv(b_.ep, buffer, sizeof(buffer), nullptr, FI_ADDR_UNSPEC, buffer), 0);
  for (int i = 0; i < 3; ++i) ASSERT_EQ(send_to(a_, "three", 5, b_.addr, &buffers[i]), 0);
  // All three sends completed ...
  fi_cq_data_entry tx[8];
  int sent = 0;
  for (; sent < 3; ++sent)
    if (wait_for_completion(a_.tx_cq, &tx[sent], kWait) != 1) break;
  ASSERT_EQ(sent, 3);
  // ... and b's side has had time to take them in (reading b's TX CQ,
  // which stays empty, drives b's progress).
  EXPECT_TRUE(stays_empty(b_.tx_cq, 0.2));
  fi_cq_data_entry rx[8];
  EXPECT_EQ(fi_cq_read(b_.rx_cq, rx, 8), 3);
  for (int i = 0; i < 3; ++i) EXPECT_EQ(rx[i].op_context, buffers[i]);
  EXPECT_EQ(fi_cq_read(b_.rx_cq, rx, 8), -FI_EAGAIN);
}

// ---- size (fi_cq(3) attr.size) ----

// b's CQs ask for kSmall entries, a minimum (fi_cq(3)): operations posted
// beyond it are taken, and every one of their completions is reported, in
// order, none lost.  (Open MPI's OFI MTL asks for 100 while it may have
// hundreds of receives posted: refusing them deadlocked its one-sided
// operations.)
class CqSize : public ::testing::Test {
 protected:
  static constexpr size_t kSmall = 4;
  void SetUp() override {
    ASSERT_EQ(domain_.open(), 0) << "no dpdk provider on the net_ring port";
    ASSERT_EQ(a_.open(domain_.domain, domain_.av, domain_.info), 0);
    ASSERT_EQ(
        b_.open(domain_.domain, domain_.av, domain_.info, FI_CQ_FORMAT_DATA, 0, nullptr, 0, kSmall),
        0);
  }
  void TearDown() override {
    a_.close();
    b_.close();
    domain_.close();
  }
  ssize_t post_recv(char* buffer) {
    return fi_recv(b_.ep, buffer, 16, nullptr, FI_ADDR_UNSPEC, buffer);
  }
  TestDomain domain_;
  TestEndpoint a_, b_;
};

TEST_F(CqSize, ReceivesBeyondTheSizeAreTakenAndAllComplete) {
  // Static: a receive still posted when the test ends may be filled while
  // TearDown closes the endpoint, after this frame is gone.
  static char buffers[4 * kSmall][16];
  std::memset(buffers, 0, sizeof(buffers));
  for (size_t i = 0; i < 4 * kSmall; ++i)
    ASSERT_EQ(post_recv(buffers[i]), 0) << "receive " << i << " on a CQ of " << kSmall;
  for (size_t i = 0; i < 4 * kSmall; ++i) ASSERT_EQ(send_to(a_, "full", 4, b_.addr, nullptr), 0);
  // All of them land before any entry is read: the CQ holds 16 entries.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (std::memcmp(buffers[4 * kSmall - 1], "full", 4) != 0 &&
         std::chrono::steady_clock::now() < deadline)
    fi_cq_read(a_.tx_cq, nullptr, 0);  // progress only
  ASSERT_EQ(std::memcmp(buffers[4 * kSmall - 1], "full", 4), 0) << "the last receive never filled";
  fi_cq_data_entry rx[4 * kSmall] = {};
  size_t got = 0;
  while (got < 4 * kSmall) {
    const ssize_t n = fi_cq_read(b_.rx_cq, rx + got, 4 * kSmall - got);
    if (n == -FI_EAGAIN) continue;
    ASSERT_GT(n, 0);
    got += static_cast<size_t>(n);
  }
  for (size_t i = 0; i < 4 * kSmall; ++i) EXPECT_EQ(rx[i].op_context, buffers[i]) << i;
  fi_cq_data_entry more{};
  EXPECT_EQ(fi_cq_read(b_.rx_cq, &more, 1), -FI_EAGAIN) << "no entry twice";
}

TEST_F(CqSize, SendsBeyondTheSizeAreTakenAndAllComplete) {
  // Static: a receive still posted when the test ends may be filled while
  // TearDown closes the endpoint, after this frame is gone.
  static char buffers[4 * kSmall][16];
  static char contexts[4 * kSmall];
  std::memset(buffers, 0, sizeof(buffers));
  for (size_t i = 0; i < 4 * kSmall; ++i)
    ASSERT_EQ(fi_recv(a_.ep, buffers[i], 16, nullptr, FI_ADDR_UNSPEC, nullptr), 0);
  for (size_t i = 0; i < 4 * kSmall; ++i)
    ASSERT_EQ(fi_send(b_.ep, "s", 1, nullptr, a_.addr, &contexts[i]), 0) << "send " << i;
  fi_cq_data_entry rx{};
  for (size_t i = 0; i < 4 * kSmall; ++i) ASSERT_EQ(wait_for_completion(a_.rx_cq, &rx, kWait), 1);
  fi_cq_data_entry tx[4 * kSmall];
  size_t got = 0;
  while (got < 4 * kSmall) {
    const ssize_t n = fi_cq_read(b_.tx_cq, tx + got, 4 * kSmall - got);
    if (n == -FI_EAGAIN) continue;
    ASSERT_GT(n, 0);
    got += static_cast<size_t>(n);
  }
  for (size_t i = 0; i < 4 * kSmall; ++i) EXPECT_EQ(tx[i].op_context, &contexts[i]) << i;
}

TEST_F(CqTest, SreadOnEmptyTimesOutWithEAGAIN) {
  fi_cq_data_entry entry{};
  const auto start = Clock::now();
  EXPECT_EQ(fi_cq_sread(b_.rx_cq, &entry, 1, nullptr, 100), -FI_EAGAIN);
  const long waited = elapsed_ms(start);
  EXPECT_GE(waited, 95) << "returned before the timeout";
  EXPECT_LT(waited, 1000) << "overslept a 100 ms timeout";
}

TEST_F(CqTest, SreadReturnsWhenACompletionArrives) {
  char buffer[16] = {};
  ASSERT_EQ(fi_recv(b_.ep, buffer, sizeof(buffer), nullptr, FI_ADDR_UNSPEC, buffer), 0);
  std::atomic<ssize_t> send_result{1};
  std::thread sender([&] {
    std::this_thread::sleep_for(milliseconds(50));
    send_result = send_to(a_, "wake", 4, b_.addr, nullptr);
  });
  fi_cq_data_entry entry{};
  const auto start = Clock::now();
  const ssize_t ret = fi_cq_sread(b_.rx_cq, &entry, 1, nullptr, 4000);
  const long waited = elapsed_ms(start);
  sender.join();
  ASSERT_EQ(send_result.load(), 0);
  ASSERT_EQ(ret, 1) << fi_strerror(static_cast<int>(-ret));
  EXPECT_EQ(entry.op_context, buffer);
  EXPECT_EQ(std::string(buffer, entry.len), "wake");
  EXPECT_GE(waited, 40) << "completed before the message was sent";
  EXPECT_LT(waited, 3000) << "waited for the timeout instead of the completion";
  ASSERT_EQ(wait_for_completion(a_.tx_cq, &entry, kWait), 1);
}

TEST_F(CqTest, ErrorEntryBlocksReadsUntilReadAndStrerrorDescribesIt) {
  int context = 0;
  char buffer[16];
  ASSERT_EQ(fi_recv(b_.ep, buffer, sizeof(buffer), nullptr, FI_ADDR_UNSPEC, &context), 0);
  ASSERT_EQ(fi_cancel(&b_.ep->fid, &context), 0);
  fi_cq_data_entry entry{};
  ASSERT_EQ(wait_for_completion(b_.rx_cq, &entry, kWait), -FI_EAVAIL);
  EXPECT_EQ(fi_cq_read(b_.rx_cq, &entry, 1), -FI_EAVAIL) << "the error entry stays until read";
  fi_cq_err_entry error{};
  ASSERT_EQ(fi_cq_readerr(b_.rx_cq, &error, 0), 1);
  EXPECT_EQ(error.err, FI_ECANCELED);
  char text[128];
  std::memset(text, 0, sizeof(text));
  const char* described =
      fi_cq_strerror(b_.rx_cq, error.prov_errno, error.err_data, text, sizeof(text));
  ASSERT_NE(described, nullptr);
  EXPECT_GT(std::strlen(described), 0u);
  EXPECT_EQ(fi_cq_read(b_.rx_cq, &entry, 1), -FI_EAGAIN);
}

// ---- opening and closing ----

// A wait set is taken only with a set to join (test_wait_set.cc).
TEST_F(CqTest, WaitSetWithoutASetAndMutexCondAreRefused) {
  for (fi_wait_obj wait : {FI_WAIT_SET, FI_WAIT_MUTEX_COND}) {
    fi_cq_attr attr{};
    attr.format = FI_CQ_FORMAT_DATA;
    attr.wait_obj = wait;
    fid_cq* cq = nullptr;
    const int ret = fi_cq_open(domain_.domain, &attr, &cq, nullptr);
    EXPECT_EQ(ret, -FI_ENOSYS) << wait;
    if (ret == 0) fi_close(&cq->fid);
  }
}

TEST_F(CqTest, UnknownFormatIsRefused) {
  fi_cq_attr attr{};
  attr.format = static_cast<fi_cq_format>(1000);
  fid_cq* cq = nullptr;
  const int ret = fi_cq_open(domain_.domain, &attr, &cq, nullptr);
  EXPECT_LT(ret, 0);
  if (ret == 0) fi_close(&cq->fid);
}

TEST_F(CqTest, UnspecFormatAndWaitNoneOpen) {
  fi_cq_attr attr{};
  attr.format = FI_CQ_FORMAT_UNSPEC;
  attr.wait_obj = FI_WAIT_NONE;
  fid_cq* cq = nullptr;
  ASSERT_EQ(fi_cq_open(domain_.domain, &attr, &cq, nullptr), 0);
  EXPECT_EQ(fi_close(&cq->fid), 0);
}

TEST_F(CqTest, ClosingABoundCqIsEBUSYUntilTheEndpointCloses) {
  fi_cq_attr attr{};
  attr.format = FI_CQ_FORMAT_DATA;
  fid_cq* cq = nullptr;
  ASSERT_EQ(fi_cq_open(domain_.domain, &attr, &cq, nullptr), 0);
  fid_ep* ep = nullptr;
  ASSERT_EQ(fi_endpoint(domain_.domain, domain_.info, &ep, nullptr), 0);
  ASSERT_EQ(fi_ep_bind(ep, &domain_.av->fid, 0), 0);
  ASSERT_EQ(fi_ep_bind(ep, &cq->fid, FI_TRANSMIT | FI_RECV), 0);
  ASSERT_EQ(fi_enable(ep), 0);
  EXPECT_EQ(fi_close(&cq->fid), -FI_EBUSY);
  // Still usable after the refused close.
  fi_cq_data_entry entry;
  EXPECT_EQ(fi_cq_read(cq, &entry, 1), -FI_EAGAIN);
  EXPECT_EQ(fi_close(&ep->fid), 0);
  EXPECT_EQ(fi_close(&cq->fid), 0);
}

}  // namespace
}  // namespace ofi_dpdk::test
