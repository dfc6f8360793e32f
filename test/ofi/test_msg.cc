// fi_msg(3) through stock libfabric on one net_ring port: endpoints on the
// port talk to each other through the real port (it loops back to itself).
// Every check goes through the public fi_* calls only, so these tests stay
// valid whatever transport sits under the send and receive path.  Here: the
// calls, fi_inject, remote CQ data, matching and FI_SOURCE; cancellation,
// selective completion and endpoint state are in test_msg_state.cc, long
// streams in test_msg_stream.cc.
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

#include "test/ofi/msg_fixture.h"
#include "test/support/messaging.h"

namespace ofi_dpdk::test {
namespace {

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
  ASSERT_EQ(
      retry(a_.tx_cq, [&] { return fi_inject(a_.ep, buffer.data(), buffer.size(), b_.addr); }), 0);
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
  EXPECT_EQ(fi_send(a_.ep, buffer.data(), buffer.size(), nullptr, b_.addr, &context), -FI_EMSGSIZE);
  // Also when only the sum of the iovs is too long.
  iovec iov[2] = {{buffer.data(), 10}, {buffer.data() + 10, buffer.size() - 10}};
  EXPECT_EQ(fi_sendv(a_.ep, iov, nullptr, 2, b_.addr, &context), -FI_EMSGSIZE);
  EXPECT_EQ(fi_senddata(a_.ep, buffer.data(), buffer.size(), nullptr, 1, b_.addr, &context),
            -FI_EMSGSIZE);
  EXPECT_TRUE(stays_empty(a_.tx_cq, 0.1)) << "a refused send must not complete";
}

// A send of bytes with no address would read them at address 0: refused at
// the call, whichever call names it, and the endpoint goes on.
TEST_F(Messaging, SendOfBytesWithNoAddressIsEINVAL) {
  int context = 0;
  EXPECT_EQ(fi_send(a_.ep, nullptr, 8, nullptr, b_.addr, &context), -FI_EINVAL);
  EXPECT_EQ(fi_inject(a_.ep, nullptr, 8, b_.addr), -FI_EINVAL);
  EXPECT_EQ(fi_senddata(a_.ep, nullptr, 8, nullptr, 1, b_.addr, &context), -FI_EINVAL);
  uint8_t byte = 0;
  iovec iov[2] = {{&byte, 1}, {nullptr, 8}};
  EXPECT_EQ(fi_sendv(a_.ep, iov, nullptr, 2, b_.addr, &context), -FI_EINVAL);
  fi_msg msg{};
  msg.msg_iov = iov;
  msg.iov_count = 2;
  msg.addr = b_.addr;
  msg.context = &context;
  EXPECT_EQ(fi_sendmsg(a_.ep, &msg, 0), -FI_EINVAL);
  EXPECT_EQ(fi_sendmsg(a_.ep, &msg, FI_INJECT), -FI_EINVAL);
  msg.msg_iov = nullptr;  // a count and no list
  EXPECT_EQ(fi_sendmsg(a_.ep, &msg, FI_INJECT), -FI_EINVAL);
  EXPECT_EQ(fi_recvmsg(b_.ep, &msg, 0), -FI_EINVAL);
  EXPECT_TRUE(stays_empty(a_.tx_cq, 0.1)) << "a refused send must not complete";
  expect_message_delivered(a_, b_.addr, b_, "after the refusals");
}

// A receive buffer with no address holds no bytes (fabtests' fi_shared_ctx
// -e msg posts NULL with 1 KiB for its empty messages): an empty message
// completes in it, one with bytes is truncated, nothing is written at
// address 0.
TEST_F(Messaging, ReceiveBufferWithNoAddressHoldsNoBytes) {
  int context = 0;
  ASSERT_EQ(fi_recv(b_.ep, nullptr, 1024, nullptr, FI_ADDR_UNSPEC, &context), 0);
  ASSERT_EQ(send_to(a_, nullptr, 0, b_.addr, nullptr), 0);
  const fi_cq_data_entry entry = expect_recv_completion(b_, &context);
  EXPECT_EQ(entry.len, 0u);
  fi_cq_data_entry sent{};
  ASSERT_EQ(wait_for_completion(a_.tx_cq, &sent, kWait), 1);

  const std::vector<uint8_t> message = pattern(8, 3);
  ASSERT_EQ(fi_recv(b_.ep, nullptr, 1024, nullptr, FI_ADDR_UNSPEC, &context), 0);
  ASSERT_EQ(send_to(a_, message.data(), message.size(), b_.addr, nullptr), 0);
  fi_cq_data_entry none{};
  ASSERT_EQ(wait_for_completion(b_.rx_cq, &none, kWait), -FI_EAVAIL);
  const fi_cq_err_entry error = read_error(b_.rx_cq);
  EXPECT_EQ(error.err, FI_ETRUNC);
  EXPECT_EQ(error.op_context, &context);
  EXPECT_EQ(error.len, 0u) << "bytes placed";
  EXPECT_EQ(error.olen, message.size()) << "bytes that did not fit";
  ASSERT_EQ(wait_for_completion(a_.tx_cq, &sent, kWait), 1);
  expect_message_delivered(a_, b_.addr, b_, "after the truncation");
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
  ASSERT_EQ(retry(a_.tx_cq, [&] { return fi_injectdata(a_.ep, payload, 10, data, b_.addr); }), 0);
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

}  // namespace
}  // namespace ofi_dpdk::test
