// fi_msg(3) through stock libfabric on one net_ring port: endpoints on the
// port talk to each other through the real port (it loops back to itself).
// Every check goes through the public fi_* calls only, so these tests stay
// valid whatever transport sits under the send and receive path.
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
namespace {

using Clock = std::chrono::steady_clock;

constexpr uint8_t kFill = 0xEE;  // what receive buffers hold before delivery
constexpr size_t kGuard = 32;    // bytes after a receive buffer that must stay kFill
constexpr double kWait = 5;      // seconds any single completion may take

std::vector<uint8_t> pattern(size_t length, unsigned seed) {
  std::vector<uint8_t> bytes(length);
  for (size_t i = 0; i < length; ++i) bytes[i] = static_cast<uint8_t>(i * 7 + seed * 13 + 1);
  return bytes;
}

// Index of the first byte where a and b differ, or -1.
long first_difference(const uint8_t* a, const uint8_t* b, size_t length) {
  for (size_t i = 0; i < length; ++i)
    if (a[i] != b[i]) return static_cast<long>(i);
  return -1;
}

bool all_fill(const uint8_t* bytes, size_t length) {
  return std::all_of(bytes, bytes + length, [](uint8_t b) { return b == kFill; });
}

// Calls `op` until it returns something other than -FI_EAGAIN, driving
// progress through `cq` in between, for at most kWait seconds.  Returns
// op's last result.
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

// Polls `cq` for `seconds` without expecting anything: lets the provider
// move frames (manual progress).  Returns false if a completion or an
// error showed up.
bool progress_quietly(fid_cq* cq, double seconds = 0.1) { return stays_empty(cq, seconds); }

// The error entry at the head of `cq` (after fi_cq_read said -FI_EAVAIL).
fi_cq_err_entry read_error(fid_cq* cq) {
  fi_cq_err_entry error{};
  EXPECT_EQ(fi_cq_readerr(cq, &error, 0), 1);
  return error;
}

// Expects one successful send completion for `context` on `ep`'s TX CQ.
void expect_send_completion(TestEndpoint& ep, void* context) {
  fi_cq_data_entry entry{};
  const ssize_t ret = wait_for_completion(ep.tx_cq, &entry, kWait);
  ASSERT_EQ(ret, 1) << "TX completion: " << fi_strerror(static_cast<int>(-ret));
  EXPECT_EQ(entry.op_context, context);
  EXPECT_TRUE(entry.flags & FI_SEND);
  EXPECT_TRUE(entry.flags & FI_MSG);
}

// Waits for one successful receive completion on `ep`'s RX CQ.
fi_cq_data_entry expect_recv_completion(TestEndpoint& ep, void* context) {
  fi_cq_data_entry entry{};
  const ssize_t ret = wait_for_completion(ep.rx_cq, &entry, kWait);
  EXPECT_EQ(ret, 1) << "RX completion: " << fi_strerror(static_cast<int>(-ret));
  if (ret != 1) return {};
  EXPECT_EQ(entry.op_context, context);
  EXPECT_TRUE(entry.flags & FI_RECV);
  EXPECT_TRUE(entry.flags & FI_MSG);
  return entry;
}

uint64_t cq_data_mask(const fi_info* info) {
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

// ---- fi_send / fi_recv ----

// The largest message the byte-exact test sends: max_msg_size, unless a
// segmenting transport offers more than a unit test should move.
constexpr size_t kLargestTested = size_t{16} << 20;

TEST_F(Messaging, SendRecvIsByteExactAtOneSixtyFourAndMaxMsgSize) {
  ASSERT_GE(max_msg_size(), 64u);
  for (size_t size : {size_t{1}, size_t{64}, std::min(max_msg_size(), kLargestTested)}) {
    SCOPED_TRACE("message size " + std::to_string(size));
    const std::vector<uint8_t> message = pattern(size, static_cast<unsigned>(size));
    std::vector<uint8_t> buffer(size + kGuard, kFill);
    ASSERT_EQ(fi_recv(b_.ep, buffer.data(), size, nullptr, FI_ADDR_UNSPEC, &buffer), 0);
    ASSERT_EQ(send_to(a_, message.data(), size, b_.addr, const_cast<uint8_t*>(message.data())), 0);
    expect_send_completion(a_, const_cast<uint8_t*>(message.data()));
    const fi_cq_data_entry entry = expect_recv_completion(b_, &buffer);
    EXPECT_EQ(entry.len, size);
    EXPECT_FALSE(entry.flags & FI_REMOTE_CQ_DATA) << "plain fi_send carries no CQ data";
    EXPECT_EQ(first_difference(buffer.data(), message.data(), size), -1);
    EXPECT_TRUE(all_fill(buffer.data() + size, kGuard)) << "wrote past the posted buffer";
  }
}

TEST_F(Messaging, SendvGathersAndRecvvScatters) {
  ASSERT_GE(domain_.info->tx_attr->iov_limit, 4u);
  ASSERT_GE(domain_.info->rx_attr->iov_limit, 3u);
  const std::vector<uint8_t> message = pattern(139, 3);
  // Gather: four pieces of the message, 5 + 100 + 1 + 33 bytes.
  std::vector<uint8_t> pieces[4] = {
      {message.begin(), message.begin() + 5},
      {message.begin() + 5, message.begin() + 105},
      {message.begin() + 105, message.begin() + 106},
      {message.begin() + 106, message.end()},
  };
  iovec send_iov[4];
  for (int i = 0; i < 4; ++i) send_iov[i] = {pieces[i].data(), pieces[i].size()};
  // Scatter: 10 + 29 + 200 bytes of room; the last one is filled in part.
  std::vector<uint8_t> r0(10, kFill), r1(29, kFill), r2(200, kFill);
  iovec recv_iov[3] = {{r0.data(), r0.size()}, {r1.data(), r1.size()}, {r2.data(), r2.size()}};
  int recv_context = 0, send_context = 0;

  ASSERT_EQ(fi_recvv(b_.ep, recv_iov, nullptr, 3, FI_ADDR_UNSPEC, &recv_context), 0);
  ASSERT_EQ(retry(a_.tx_cq,
                  [&] { return fi_sendv(a_.ep, send_iov, nullptr, 4, b_.addr, &send_context); }),
            0);
  expect_send_completion(a_, &send_context);
  const fi_cq_data_entry entry = expect_recv_completion(b_, &recv_context);
  EXPECT_EQ(entry.len, message.size());
  EXPECT_EQ(first_difference(r0.data(), message.data(), 10), -1);
  EXPECT_EQ(first_difference(r1.data(), message.data() + 10, 29), -1);
  EXPECT_EQ(first_difference(r2.data(), message.data() + 39, 100), -1);
  EXPECT_TRUE(all_fill(r2.data() + 100, 100)) << "wrote past the message in the last iov";
}

TEST_F(Messaging, SendmsgAndRecvmsgCarryContextsAndData) {
  const std::string head = "sendmsg: ", tail = "two pieces";
  iovec send_iov[2] = {{const_cast<char*>(head.data()), head.size()},
                       {const_cast<char*>(tail.data()), tail.size()}};
  char first[8], second[64];
  std::memset(first, 0, sizeof(first));
  std::memset(second, 0, sizeof(second));
  iovec recv_iov[2] = {{first, sizeof(first)}, {second, sizeof(second)}};
  int send_context = 0, recv_context = 0;

  fi_msg recv_msg{};
  recv_msg.msg_iov = recv_iov;
  recv_msg.iov_count = 2;
  recv_msg.addr = FI_ADDR_UNSPEC;
  recv_msg.context = &recv_context;
  ASSERT_EQ(fi_recvmsg(b_.ep, &recv_msg, 0), 0);

  fi_msg send_msg{};
  send_msg.msg_iov = send_iov;
  send_msg.iov_count = 2;
  send_msg.addr = b_.addr;
  send_msg.context = &send_context;
  ASSERT_EQ(retry(a_.tx_cq, [&] { return fi_sendmsg(a_.ep, &send_msg, 0); }), 0);
  expect_send_completion(a_, &send_context);
  fi_cq_data_entry entry = expect_recv_completion(b_, &recv_context);
  EXPECT_EQ(entry.len, head.size() + tail.size());
  EXPECT_EQ(std::string(first, 8) + std::string(second, entry.len - 8), head + tail);
  EXPECT_FALSE(entry.flags & FI_REMOTE_CQ_DATA);

  // The same with FI_REMOTE_CQ_DATA: msg.data reaches the receiver.
  const uint64_t data = 0x00c0ffee12345678 & cq_data_mask(domain_.info);
  ASSERT_EQ(fi_recvmsg(b_.ep, &recv_msg, 0), 0);
  send_msg.data = data;
  ASSERT_EQ(retry(a_.tx_cq, [&] { return fi_sendmsg(a_.ep, &send_msg, FI_REMOTE_CQ_DATA); }), 0);
  expect_send_completion(a_, &send_context);
  entry = expect_recv_completion(b_, &recv_context);
  EXPECT_TRUE(entry.flags & FI_REMOTE_CQ_DATA);
  EXPECT_EQ(entry.data, data);
}

TEST_F(Messaging, ZeroLengthMessageIsDelivered) {
  std::vector<uint8_t> buffer(16, kFill);
  int context = 0;
  ASSERT_EQ(fi_recv(b_.ep, buffer.data(), buffer.size(), nullptr, FI_ADDR_UNSPEC, &buffer), 0);
  ASSERT_EQ(send_to(a_, nullptr, 0, b_.addr, &context), 0);
  expect_send_completion(a_, &context);
  const fi_cq_data_entry entry = expect_recv_completion(b_, &buffer);
  EXPECT_EQ(entry.len, 0u);
  EXPECT_TRUE(all_fill(buffer.data(), buffer.size())) << "a zero-length message wrote bytes";
}

TEST_F(Messaging, EndpointSendsToItself) {
  expect_message_delivered(a_, a_.addr, a_, "to myself");
}

// fi_msg(3) lists FI_TRANSMIT_COMPLETE as applying to fi_sendmsg and
// fi_recvmsg: a receive takes it (and completes as usual).
TEST_F(Messaging, RecvmsgTakesTransmitComplete) {
  char buffer[16] = {};
  iovec iov{buffer, sizeof(buffer)};
  fi_msg msg{};
  msg.msg_iov = &iov;
  msg.iov_count = 1;
  msg.addr = FI_ADDR_UNSPEC;
  msg.context = buffer;
  ASSERT_EQ(fi_recvmsg(b_.ep, &msg, FI_TRANSMIT_COMPLETE), 0);
  ASSERT_EQ(send_to(a_, "tc", 2, b_.addr, nullptr), 0);
  const fi_cq_data_entry entry = expect_recv_completion(b_, buffer);
  EXPECT_EQ(std::string(buffer, entry.len), "tc");
}

// fi_msg(3) lists FI_DELIVERY_COMPLETE for fi_sendmsg; test_delivery_complete.cc
// checks when such a send completes.
TEST_F(Messaging, SendmsgTakesDeliveryComplete) {
  char buffer[16] = {};
  int context = 0;
  ASSERT_EQ(fi_recv(b_.ep, buffer, sizeof(buffer), nullptr, FI_ADDR_UNSPEC, buffer), 0);
  iovec iov{const_cast<char*>("dc"), 2};
  fi_msg msg{};
  msg.msg_iov = &iov;
  msg.iov_count = 1;
  msg.addr = b_.addr;
  msg.context = &context;
  ASSERT_EQ(retry(a_.tx_cq, [&] { return fi_sendmsg(a_.ep, &msg, FI_DELIVERY_COMPLETE); }), 0);
  expect_recv_completion(b_, buffer);
  expect_send_completion(a_, &context);
}

// ---- fi_inject ----

TEST_F(Messaging, InjectFreesTheBufferOnReturnAndNeverCompletes) {
  const std::string original = "injected, then overwritten";
  std::vector<char> buffer(original.begin(), original.end());
  char received[64] = {};
  ASSERT_EQ(fi_recv(b_.ep, received, sizeof(received), nullptr, FI_ADDR_UNSPEC, received), 0);
  ASSERT_EQ(retry(a_.tx_cq,
                  [&] { return fi_inject(a_.ep, buffer.data(), buffer.size(), b_.addr); }),
            0);
  // fi_msg(3): the buffer is available for reuse immediately on return.
  std::fill(buffer.begin(), buffer.end(), 'X');
  const fi_cq_data_entry entry = expect_recv_completion(b_, received);
  EXPECT_EQ(entry.len, original.size());
  EXPECT_EQ(std::string(received, entry.len), original);
  // ...and no CQ entry is written for a successful inject.
  EXPECT_TRUE(stays_empty(a_.tx_cq, 0.3));
}

TEST_F(Messaging, InjectAboveInjectSizeIsEMSGSIZE) {
  ASSERT_GT(inject_size(), 0u);
  std::vector<uint8_t> buffer(inject_size() + 1, 0x5A);
  EXPECT_EQ(fi_inject(a_.ep, buffer.data(), buffer.size(), b_.addr), -FI_EMSGSIZE);
  EXPECT_EQ(fi_injectdata(a_.ep, buffer.data(), buffer.size(), 7, b_.addr), -FI_EMSGSIZE);
  EXPECT_TRUE(stays_empty(a_.tx_cq, 0.1));
}

// A readable buffer of `length` bytes that costs no memory until touched
// (untouched anonymous pages read as zeros): max_msg_size may be large.
class ZeroBuffer {
 public:
  explicit ZeroBuffer(size_t length) : length_(length) {
    void* p = mmap(nullptr, length, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    data_ = p == MAP_FAILED ? nullptr : static_cast<uint8_t*>(p);
  }
  ~ZeroBuffer() {
    if (data_ != nullptr) munmap(data_, length_);
  }
  ZeroBuffer(const ZeroBuffer&) = delete;
  ZeroBuffer& operator=(const ZeroBuffer&) = delete;
  uint8_t* data() const { return data_; }
  size_t size() const { return length_; }

 private:
  uint8_t* data_;
  size_t length_;
};

TEST_F(Messaging, SendAboveMaxMsgSizeIsEMSGSIZE) {
  const ZeroBuffer buffer(max_msg_size() + 1);
  ASSERT_NE(buffer.data(), nullptr);
  int context = 0;
  EXPECT_EQ(fi_send(a_.ep, buffer.data(), buffer.size(), nullptr, b_.addr, &context),
            -FI_EMSGSIZE);
  // Also when only the sum of the iovs is too long.
  iovec iov[2] = {{buffer.data(), 10}, {buffer.data() + 10, buffer.size() - 10}};
  EXPECT_EQ(fi_sendv(a_.ep, iov, nullptr, 2, b_.addr, &context), -FI_EMSGSIZE);
  EXPECT_EQ(fi_senddata(a_.ep, buffer.data(), buffer.size(), nullptr, 1, b_.addr, &context),
            -FI_EMSGSIZE);
  EXPECT_TRUE(stays_empty(a_.tx_cq, 0.1)) << "a refused send must not complete";
}

// ---- remote CQ data ----

TEST_F(Messaging, SenddataDeliversRemoteCqData) {
  ASSERT_GT(domain_.info->domain_attr->cq_data_size, 0u);
  const uint64_t data = 0x0123456789abcdef & cq_data_mask(domain_.info);
  char received[32] = {};
  int context = 0;
  ASSERT_EQ(fi_recv(b_.ep, received, sizeof(received), nullptr, FI_ADDR_UNSPEC, received), 0);
  ASSERT_EQ(retry(a_.tx_cq,
                  [&] { return fi_senddata(a_.ep, "data", 4, nullptr, data, b_.addr, &context); }),
            0);
  expect_send_completion(a_, &context);
  const fi_cq_data_entry entry = expect_recv_completion(b_, received);
  EXPECT_TRUE(entry.flags & FI_REMOTE_CQ_DATA);
  EXPECT_EQ(entry.data, data);
  EXPECT_EQ(entry.len, 4u);
  EXPECT_EQ(std::string(received, 4), "data");
}

TEST_F(Messaging, InjectdataDeliversRemoteCqDataWithoutTxCompletion) {
  ASSERT_GT(domain_.info->domain_attr->cq_data_size, 0u);
  const uint64_t data = 0xfedcba9876543210 & cq_data_mask(domain_.info);
  char payload[] = "injectdata";
  char received[32] = {};
  ASSERT_EQ(fi_recv(b_.ep, received, sizeof(received), nullptr, FI_ADDR_UNSPEC, received), 0);
  ASSERT_EQ(retry(a_.tx_cq,
                  [&] { return fi_injectdata(a_.ep, payload, 10, data, b_.addr); }),
            0);
  std::memset(payload, 'X', 10);
  const fi_cq_data_entry entry = expect_recv_completion(b_, received);
  EXPECT_TRUE(entry.flags & FI_REMOTE_CQ_DATA);
  EXPECT_EQ(entry.data, data);
  EXPECT_EQ(std::string(received, entry.len), "injectdata");
  EXPECT_TRUE(stays_empty(a_.tx_cq, 0.3));
}

// ---- matching ----

TEST_F(Messaging, UnexpectedMessagesCompleteWhenReceivesArePosted) {
  const std::string texts[3] = {"early one", "early two", "early three"};
  int contexts[3] = {};
  for (int i = 0; i < 3; ++i) {
    ASSERT_EQ(send_to(a_, texts[i].data(), texts[i].size(), b_.addr, &contexts[i]), 0);
    expect_send_completion(a_, &contexts[i]);
  }
  // Nothing is posted: b's CQ stays empty while the messages arrive.
  EXPECT_TRUE(progress_quietly(b_.rx_cq, 0.2));
  char buffers[3][32] = {};
  for (int i = 0; i < 3; ++i) {
    SCOPED_TRACE(texts[i]);
    ASSERT_EQ(fi_recv(b_.ep, buffers[i], sizeof(buffers[i]), nullptr, FI_ADDR_UNSPEC, buffers[i]),
              0);
    const fi_cq_data_entry entry = expect_recv_completion(b_, buffers[i]);
    EXPECT_EQ(std::string(buffers[i], entry.len), texts[i]);
  }
}

TEST_F(Messaging, PostedReceivesMatchInPostingOrder) {
  struct Receive {
    char buffer[32];
  } receives[3] = {};  // contexts A, B, C: the addresses of these
  for (auto& r : receives)
    ASSERT_EQ(fi_recv(b_.ep, r.buffer, sizeof(r.buffer), nullptr, FI_ADDR_UNSPEC, &r), 0);
  const std::string texts[3] = {"first", "second", "third"};
  for (const std::string& text : texts)
    ASSERT_EQ(send_to(a_, text.data(), text.size(), b_.addr, nullptr), 0);
  for (int i = 0; i < 3; ++i) {
    SCOPED_TRACE("completion " + std::to_string(i));
    const fi_cq_data_entry entry = expect_recv_completion(b_, &receives[i]);
    EXPECT_EQ(entry.len, texts[i].size());
    EXPECT_EQ(std::string(receives[i].buffer, texts[i].size()), texts[i]);
  }
  fi_cq_data_entry tx[3];
  for (auto& e : tx) ASSERT_EQ(wait_for_completion(a_.tx_cq, &e, kWait), 1);
}

TEST_F(Messaging, MessageLongerThanBufferIsTruncatedWithETRUNC) {
  const std::vector<uint8_t> message = pattern(40, 9);
  constexpr size_t kPosted = 16;
  std::vector<uint8_t> buffer(kPosted + kGuard, kFill);
  int context = 0;
  ASSERT_EQ(fi_recv(b_.ep, buffer.data(), kPosted, nullptr, FI_ADDR_UNSPEC, &context), 0);
  ASSERT_EQ(send_to(a_, message.data(), message.size(), b_.addr, nullptr), 0);

  fi_cq_data_entry entry{};
  ASSERT_EQ(wait_for_completion(b_.rx_cq, &entry, kWait), -FI_EAVAIL);
  const fi_cq_err_entry error = read_error(b_.rx_cq);
  EXPECT_EQ(error.err, FI_ETRUNC);
  EXPECT_EQ(error.op_context, &context);
  EXPECT_TRUE(error.flags & FI_RECV);
  EXPECT_EQ(error.len, kPosted) << "len: bytes placed in the buffer";
  EXPECT_EQ(error.olen, message.size() - kPosted) << "olen: bytes that did not fit";
  EXPECT_EQ(first_difference(buffer.data(), message.data(), kPosted), -1);
  EXPECT_TRUE(all_fill(buffer.data() + kPosted, kGuard)) << "wrote past the posted buffer";
  // The error was consumed: nothing else is queued.
  EXPECT_EQ(fi_cq_read(b_.rx_cq, &entry, 1), -FI_EAGAIN);
  fi_cq_err_entry none{};
  EXPECT_EQ(fi_cq_readerr(b_.rx_cq, &none, 0), -FI_EAGAIN);
  // `message` must outlive the send.
  EXPECT_EQ(wait_for_completion(a_.tx_cq, &entry, kWait), 1);
}

TEST_F(DirectedRecv, ReceiveForOneSourceIgnoresOthers) {
  ASSERT_TRUE(domain_.info->caps & FI_DIRECTED_RECV);
  char from_a[32] = {}, any[32] = {};
  ASSERT_EQ(fi_recv(b_.ep, from_a, sizeof(from_a), nullptr, a_.addr, from_a), 0);
  // c's message does not match the receive posted for a.
  ASSERT_EQ(send_to(c_, "from c", 6, b_.addr, nullptr), 0);
  EXPECT_TRUE(progress_quietly(b_.rx_cq, 0.2)) << "c's message matched a receive for a";
  EXPECT_EQ(from_a[0], 0);
  // a's does.
  ASSERT_EQ(send_to(a_, "from a", 6, b_.addr, nullptr), 0);
  fi_cq_data_entry entry = expect_recv_completion(b_, from_a);
  EXPECT_EQ(std::string(from_a, entry.len), "from a");
  // c's message is still waiting for a receive that takes any source.
  ASSERT_EQ(fi_recv(b_.ep, any, sizeof(any), nullptr, FI_ADDR_UNSPEC, any), 0);
  entry = expect_recv_completion(b_, any);
  EXPECT_EQ(std::string(any, entry.len), "from c");
}

TEST_F(DirectedRecv, UnexpectedMessageMatchesOnlyAReceiveForItsSource) {
  ASSERT_EQ(send_to(c_, "early c", 7, b_.addr, nullptr), 0);
  EXPECT_TRUE(progress_quietly(b_.rx_cq, 0.2));
  char from_a[32] = {}, from_c[32] = {};
  ASSERT_EQ(fi_recv(b_.ep, from_a, sizeof(from_a), nullptr, a_.addr, from_a), 0);
  EXPECT_TRUE(progress_quietly(b_.rx_cq, 0.1)) << "c's message matched a receive for a";
  ASSERT_EQ(fi_recv(b_.ep, from_c, sizeof(from_c), nullptr, c_.addr, from_c), 0);
  const fi_cq_data_entry entry = expect_recv_completion(b_, from_c);
  EXPECT_EQ(std::string(from_c, entry.len), "early c");
  EXPECT_EQ(fi_cancel(&b_.ep->fid, from_a), 0);
}

// ---- FI_SOURCE ----

TEST_F(SourceAddress, ReadfromGivesTheSendersFiAddr) {
  ASSERT_TRUE(domain_.info->caps & FI_SOURCE);
  for (TestEndpoint* sender : {&a_, &c_}) {
    SCOPED_TRACE("sender fi_addr " + std::to_string(sender->addr));
    char buffer[16] = {};
    ASSERT_EQ(fi_recv(b_.ep, buffer, sizeof(buffer), nullptr, FI_ADDR_UNSPEC, buffer), 0);
    ASSERT_EQ(send_to(*sender, "who?", 4, b_.addr, nullptr), 0);
    fi_cq_data_entry entry{};
    fi_addr_t source = 777;
    ASSERT_EQ(wait_for_completion(b_.rx_cq, &entry, kWait, &source), 1);
    EXPECT_EQ(entry.op_context, buffer);
    EXPECT_EQ(source, sender->addr);
  }
}

TEST_F(SourceAddress, SenderMissingFromTheAvIsFI_ADDR_NOTAVAIL) {
  // d is on its own AV, which knows b; b's AV does not know d.
  fi_av_attr attr{};
  attr.type = FI_AV_TABLE;
  fid_av* other_av = nullptr;
  ASSERT_EQ(fi_av_open(domain_.domain, &attr, &other_av, nullptr), 0);
  TestEndpoint d;
  ASSERT_EQ(d.open(domain_.domain, other_av, domain_.info), 0);
  fi_addr_t b_in_other = FI_ADDR_NOTAVAIL;
  ASSERT_EQ(fi_av_insert(other_av, b_.name, 1, &b_in_other, 0, nullptr), 1);

  char buffer[16] = {};
  ASSERT_EQ(fi_recv(b_.ep, buffer, sizeof(buffer), nullptr, FI_ADDR_UNSPEC, buffer), 0);
  ASSERT_EQ(send_to(d, "stranger", 8, b_in_other, nullptr), 0);
  fi_cq_data_entry entry{};
  fi_addr_t source = 777;
  EXPECT_EQ(wait_for_completion(b_.rx_cq, &entry, kWait, &source), 1);
  EXPECT_EQ(source, FI_ADDR_NOTAVAIL);
  EXPECT_EQ(std::string(buffer, entry.len), "stranger");
  d.close();
  EXPECT_EQ(fi_close(&other_av->fid), 0);
}

// ---- fi_cancel ----

TEST_F(Messaging, CancelledReceiveCompletesWithECANCELED) {
  std::vector<uint8_t> buffer(32, kFill);
  int context = 0;
  ASSERT_EQ(fi_recv(b_.ep, buffer.data(), buffer.size(), nullptr, FI_ADDR_UNSPEC, &context), 0);
  ASSERT_EQ(fi_cancel(&b_.ep->fid, &context), 0);
  fi_cq_data_entry entry{};
  ASSERT_EQ(wait_for_completion(b_.rx_cq, &entry, kWait), -FI_EAVAIL);
  const fi_cq_err_entry error = read_error(b_.rx_cq);
  EXPECT_EQ(error.err, FI_ECANCELED);
  EXPECT_EQ(error.op_context, &context);
  // The cancelled buffer takes no message.
  ASSERT_EQ(send_to(a_, "after cancel", 12, b_.addr, nullptr), 0);
  EXPECT_TRUE(progress_quietly(b_.rx_cq, 0.2));
  EXPECT_TRUE(all_fill(buffer.data(), buffer.size()));
  char fresh[32] = {};
  ASSERT_EQ(fi_recv(b_.ep, fresh, sizeof(fresh), nullptr, FI_ADDR_UNSPEC, fresh), 0);
  entry = expect_recv_completion(b_, fresh);
  EXPECT_EQ(std::string(fresh, entry.len), "after cancel");
  // Cancelling it again finds nothing.
  EXPECT_EQ(fi_cancel(&b_.ep->fid, &context), -FI_ENOENT);
}

TEST_F(Messaging, CancelOfUnknownContextIsENOENT) {
  int never_posted = 0;
  EXPECT_EQ(fi_cancel(&b_.ep->fid, &never_posted), -FI_ENOENT);
  EXPECT_TRUE(stays_empty(b_.rx_cq, 0.05));
}

// ---- FI_SELECTIVE_COMPLETION ----

TEST_F(Messaging, SelectiveCompletionOnTransmitCompletesOnlyWhenAsked) {
  TestEndpoint s;
  ASSERT_EQ(s.open(domain_.domain, domain_.av, domain_.info, FI_CQ_FORMAT_DATA,
                   FI_SELECTIVE_COMPLETION),
            0);
  char buffer[32] = {};
  int context = 0;
  // fi_send: no FI_COMPLETION, no entry; the message still goes.
  ASSERT_EQ(fi_recv(b_.ep, buffer, sizeof(buffer), nullptr, FI_ADDR_UNSPEC, buffer), 0);
  ASSERT_EQ(send_to(s, "quiet", 5, b_.addr, &context), 0);
  fi_cq_data_entry entry = expect_recv_completion(b_, buffer);
  EXPECT_EQ(std::string(buffer, entry.len), "quiet");
  EXPECT_TRUE(stays_empty(s.tx_cq, 0.2)) << "fi_send completed without FI_COMPLETION";

  // fi_sendmsg without FI_COMPLETION: none either; with it: one entry.
  iovec iov{const_cast<char*>("loud"), 4};
  fi_msg msg{};
  msg.msg_iov = &iov;
  msg.iov_count = 1;
  msg.addr = b_.addr;
  msg.context = &context;
  for (uint64_t flags : {uint64_t{0}, uint64_t{FI_COMPLETION}}) {
    SCOPED_TRACE(flags ? "FI_COMPLETION" : "no flags");
    ASSERT_EQ(fi_recv(b_.ep, buffer, sizeof(buffer), nullptr, FI_ADDR_UNSPEC, buffer), 0);
    ASSERT_EQ(retry(s.tx_cq, [&] { return fi_sendmsg(s.ep, &msg, flags); }), 0);
    expect_recv_completion(b_, buffer);
    if (flags) {
      expect_send_completion(s, &context);
    } else {
      EXPECT_TRUE(stays_empty(s.tx_cq, 0.2));
    }
  }

  // FI_COMPLETION as the endpoint's transmit op flag makes fi_send complete.
  uint64_t op_flags = FI_TRANSMIT | FI_COMPLETION;
  ASSERT_EQ(fi_control(&s.ep->fid, FI_SETOPSFLAG, &op_flags), 0);
  ASSERT_EQ(fi_recv(b_.ep, buffer, sizeof(buffer), nullptr, FI_ADDR_UNSPEC, buffer), 0);
  ASSERT_EQ(send_to(s, "flagged", 7, b_.addr, &context), 0);
  expect_recv_completion(b_, buffer);
  expect_send_completion(s, &context);
  s.close();
}

// Bug (crash): a receive posted without FI_COMPLETION on an endpoint whose
// RX CQ is bound with FI_SELECTIVE_COMPLETION segfaults in progress when
// its message arrives: Engine::finish_message (lib/proto/receiver.cc) calls
// complete_recv(), which pushes no completion for such a receive, then
// writes completions_.back().source_key: back() of an empty deque, or,
// with other completions queued, the source of someone else's completion.
// The same pattern is on the claimed-unexpected path.
TEST_F(Messaging, SelectiveCompletionOnReceiveCompletesOnlyWhenAsked) {
  TestEndpoint r;
  ASSERT_EQ(r.open(domain_.domain, domain_.av, domain_.info, FI_CQ_FORMAT_DATA,
                   FI_SELECTIVE_COMPLETION),
            0);
  // fi_recv without FI_COMPLETION: the data lands, no entry is written.
  std::vector<uint8_t> quiet(16, kFill);
  ASSERT_EQ(fi_recv(r.ep, quiet.data(), quiet.size(), nullptr, FI_ADDR_UNSPEC, &quiet), 0);
  ASSERT_EQ(send_to(a_, "landed", 6, r.addr, nullptr), 0);
  const auto deadline = Clock::now() + std::chrono::duration<double>(kWait);
  fi_cq_data_entry entry{};
  ssize_t ret = -FI_EAGAIN;
  while (std::memcmp(quiet.data(), "landed", 6) != 0 && Clock::now() < deadline)
    if ((ret = fi_cq_read(r.rx_cq, &entry, 1)) != -FI_EAGAIN) break;
  EXPECT_EQ(ret, -FI_EAGAIN) << "a receive without FI_COMPLETION made a CQ entry";
  EXPECT_EQ(std::memcmp(quiet.data(), "landed", 6), 0);

  // fi_recvmsg with FI_COMPLETION: an entry.
  char loud[16] = {};
  iovec iov{loud, sizeof(loud)};
  fi_msg msg{};
  msg.msg_iov = &iov;
  msg.iov_count = 1;
  msg.addr = FI_ADDR_UNSPEC;
  msg.context = loud;
  ASSERT_EQ(fi_recvmsg(r.ep, &msg, FI_COMPLETION), 0);
  ASSERT_EQ(send_to(a_, "counted", 7, r.addr, nullptr), 0);
  entry = expect_recv_completion(r, loud);
  EXPECT_EQ(std::string(loud, entry.len), "counted");
  r.close();
}

// ---- endpoint state ----

// fi_tx_size_left and fi_rx_size_left are deprecated in libfabric 1.17
// but still part of the API applications call.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
TEST_F(Messaging, SizeLeftIsPositiveWhenEnabledAndEOPBADSTATEBefore) {
  EXPECT_GT(fi_tx_size_left(a_.ep), 0);
  EXPECT_GT(fi_rx_size_left(a_.ep), 0);
  fid_ep* ep = nullptr;
  ASSERT_EQ(fi_endpoint(domain_.domain, domain_.info, &ep, nullptr), 0);
  EXPECT_EQ(fi_tx_size_left(ep), -FI_EOPBADSTATE);
  EXPECT_EQ(fi_rx_size_left(ep), -FI_EOPBADSTATE);
  EXPECT_EQ(fi_close(&ep->fid), 0);
}
#pragma GCC diagnostic pop

TEST_F(Messaging, DataTransfersBeforeEnableFail) {
  fid_ep* ep = nullptr;
  ASSERT_EQ(fi_endpoint(domain_.domain, domain_.info, &ep, nullptr), 0);
  fi_cq_attr attr{};
  attr.format = FI_CQ_FORMAT_DATA;
  fid_cq* cq = nullptr;
  ASSERT_EQ(fi_cq_open(domain_.domain, &attr, &cq, nullptr), 0);
  char buffer[8] = "early";
  // Once with nothing bound, once bound but not enabled.
  for (int bound = 0; bound < 2; ++bound) {
    SCOPED_TRACE(bound ? "bound, not enabled" : "nothing bound");
    if (bound) {
      ASSERT_EQ(fi_ep_bind(ep, &domain_.av->fid, 0), 0);
      ASSERT_EQ(fi_ep_bind(ep, &cq->fid, FI_TRANSMIT | FI_RECV), 0);
    }
    const ssize_t results[] = {
        fi_send(ep, buffer, 5, nullptr, b_.addr, nullptr),
        fi_inject(ep, buffer, 5, b_.addr),
        fi_senddata(ep, buffer, 5, nullptr, 1, b_.addr, nullptr),
        fi_recv(ep, buffer, sizeof(buffer), nullptr, FI_ADDR_UNSPEC, nullptr),
    };
    for (ssize_t ret : results) {
      EXPECT_LT(ret, 0);
      EXPECT_NE(ret, -FI_EAGAIN) << "retrying would never succeed";
    }
  }
  // Enabled, the same endpoint works.
  ASSERT_EQ(fi_enable(ep), 0);
  EXPECT_EQ(fi_recv(ep, buffer, sizeof(buffer), nullptr, FI_ADDR_UNSPEC, buffer), 0);
  EXPECT_EQ(fi_cancel(&ep->fid, buffer), 0);
  EXPECT_EQ(fi_close(&ep->fid), 0);
  EXPECT_EQ(fi_close(&cq->fid), 0);
}

TEST_F(Messaging, SendToAnFiAddrNotInTheAvFails) {
  constexpr fi_addr_t kUnknown = 12345;
  int context = 0;
  for (ssize_t ret : {fi_send(a_.ep, "lost", 4, nullptr, kUnknown, &context),
                      fi_inject(a_.ep, "lost", 4, kUnknown),
                      fi_senddata(a_.ep, "lost", 4, nullptr, 1, kUnknown, &context)}) {
    EXPECT_LT(ret, 0);
    EXPECT_NE(ret, -FI_EAGAIN) << "retrying would never succeed";
  }
  EXPECT_TRUE(stays_empty(a_.tx_cq, 0.1)) << "a refused send must not complete";
  // The endpoint is still fine.
  expect_message_delivered(a_, b_.addr, b_, "still works");
}

// design.md: operations to a dead peer end in error completions after a
// bounded time; nothing hangs.  Here the peer endpoint is closed.
TEST_F(Messaging, SendToAClosedEndpointEndsInAnErrorNotAHang) {
  const fi_addr_t gone = b_.addr;
  b_.close();
  int context = 0;
  const ssize_t ret = send_to(a_, "anyone there?", 13, gone, &context);
  if (ret != 0) {
    EXPECT_LT(ret, 0);
    EXPECT_NE(ret, -FI_EAGAIN);
    return;  // refused at once: also an answer
  }
  fi_cq_data_entry entry{};
  ASSERT_EQ(wait_for_completion(a_.tx_cq, &entry, 30), -FI_EAVAIL)
      << "a send to a closed endpoint completed successfully, or never";
  const fi_cq_err_entry error = read_error(a_.tx_cq);
  EXPECT_EQ(error.op_context, &context);
  EXPECT_NE(error.err, 0);
  EXPECT_TRUE(error.flags & FI_SEND);
  // a itself still works.
  expect_message_delivered(a_, a_.addr, a_, "still here");
}

TEST_F(Messaging, TaggedRmaAndAtomicCallsAreRefusedWithoutTheirCaps) {
  uint64_t buffer[4] = {};
  int context = 0;
  // These endpoints were opened for FI_MSG only: tagged calls, RMA and
  // atomics are refused, not run.
  EXPECT_EQ(fi_tsend(a_.ep, buffer, 8, nullptr, b_.addr, 42, &context), -FI_EOPNOTSUPP);
  EXPECT_EQ(fi_trecv(a_.ep, buffer, 8, nullptr, FI_ADDR_UNSPEC, 42, 0, &context),
            -FI_EOPNOTSUPP);
  EXPECT_EQ(fi_tinject(a_.ep, buffer, 8, b_.addr, 42), -FI_EOPNOTSUPP);
  EXPECT_EQ(fi_read(a_.ep, buffer, 8, nullptr, b_.addr, 0, 1, &context), -FI_EOPNOTSUPP);
  EXPECT_EQ(fi_write(a_.ep, buffer, 8, nullptr, b_.addr, 0, 1, &context), -FI_EOPNOTSUPP);
  EXPECT_EQ(fi_atomic(a_.ep, buffer, 1, nullptr, b_.addr, 0, 1, FI_UINT64, FI_SUM, &context),
            -FI_EOPNOTSUPP);
  EXPECT_EQ(fi_fetch_atomic(a_.ep, buffer, 1, nullptr, buffer + 1, nullptr, b_.addr, 0, 1,
                            FI_UINT64, FI_SUM, &context),
            -FI_EOPNOTSUPP);
  size_t count = 0;
  EXPECT_EQ(fi_atomicvalid(a_.ep, FI_UINT64, FI_SUM, &count), -FI_EOPNOTSUPP);
  EXPECT_TRUE(stays_empty(a_.tx_cq, 0.05));
  expect_message_delivered(a_, b_.addr, b_, "messaging unaffected");
}

// ---- many messages ----

// Sends kMessages numbered messages from a to b while b keeps kPosted
// receives posted, reposting each one as it completes.  `window` bounds the
// messages sent but not yet received (0: none, send until -FI_EAGAIN).
// Expects every message exactly once, in order.
void run_stream(TestEndpoint& a, TestEndpoint& b, uint32_t window) {
  constexpr uint32_t kMessages = 5000;
  constexpr size_t kPosted = 64, kSize = 64;
  struct Slot {
    uint8_t data[kSize];
  };
  std::vector<Slot> slots(kPosted);
  for (Slot& slot : slots)
    ASSERT_EQ(fi_recv(b.ep, slot.data, kSize, nullptr, FI_ADDR_UNSPEC, &slot), 0);
  // Every message up front: a send buffer must stay valid until its send
  // completes, and static storage outlives even an early return.
  static const std::vector<std::vector<uint8_t>> messages = [] {
    std::vector<std::vector<uint8_t>> all(kMessages);
    for (uint32_t seq = 0; seq < kMessages; ++seq) {
      all[seq] = pattern(kSize, seq);
      std::memcpy(all[seq].data(), &seq, sizeof(seq));
    }
    return all;
  }();

  uint32_t sent = 0, received = 0, send_completions = 0;
  const auto deadline = Clock::now() + std::chrono::seconds(40);
  while (received < kMessages && Clock::now() < deadline) {
    while (sent < kMessages && (window == 0 || sent - received < window)) {
      const ssize_t ret = fi_send(a.ep, messages[sent].data(), kSize, nullptr, b.addr, nullptr);
      if (ret == -FI_EAGAIN) break;
      ASSERT_EQ(ret, 0) << "send " << sent << ": " << fi_strerror(static_cast<int>(-ret));
      ++sent;
    }
    fi_cq_data_entry entries[kPosted];
    ssize_t ret;
    while ((ret = fi_cq_read(a.tx_cq, entries, kPosted)) > 0) send_completions += ret;
    ASSERT_EQ(ret, -FI_EAGAIN) << "TX CQ: " << fi_strerror(static_cast<int>(-ret));
    ret = fi_cq_read(b.rx_cq, entries, kPosted);
    if (ret == -FI_EAGAIN) continue;
    if (ret == -FI_EAVAIL) {
      const fi_cq_err_entry error = read_error(b.rx_cq);
      FAIL() << "RX error after " << received << " messages: " << fi_strerror(error.err);
    }
    ASSERT_GT(ret, 0);
    for (ssize_t i = 0; i < ret; ++i) {
      Slot* slot = static_cast<Slot*>(entries[i].op_context);
      ASSERT_EQ(entries[i].len, kSize);
      uint32_t seq;
      std::memcpy(&seq, slot->data, sizeof(seq));
      ASSERT_EQ(seq, received) << "message lost, duplicated or out of order";
      ASSERT_EQ(first_difference(slot->data, messages[seq].data(), kSize), -1);
      ++received;
      ASSERT_EQ(fi_recv(b.ep, slot->data, kSize, nullptr, FI_ADDR_UNSPEC, slot), 0);
    }
  }
  EXPECT_EQ(sent, kMessages);
  EXPECT_EQ(received, kMessages) << "lost messages (or too slow)";
  // Every send completes, and b has nothing extra.
  fi_cq_data_entry entry;
  while (send_completions < kMessages && wait_for_completion(a.tx_cq, &entry, 1) == 1)
    ++send_completions;
  EXPECT_EQ(send_completions, kMessages);
  EXPECT_TRUE(stays_empty(b.rx_cq, 0.1));
  for (Slot& slot : slots) EXPECT_EQ(fi_cancel(&b.ep->fid, &slot), 0);
}

// The application keeps no more messages in flight than receives posted.
TEST_F(Messaging, FiveThousandMessagesArriveInOrderPaced) { run_stream(a_, b_, 64); }

// No pacing: the sender sends until -FI_EAGAIN.  With FI_RM_ENABLED on an
// RDM endpoint, fi_domain(3)'s resource management table says a message
// that finds no receive buffer is retried, never dropped.  (The provider
// before the reliable transport dropped past 256 unexpected messages.)
TEST_F(Messaging, FiveThousandMessagesArriveInOrderUnpacedBurst) {
  run_stream(a_, b_, 0);
}

}  // namespace
}  // namespace ofi_dpdk::test
