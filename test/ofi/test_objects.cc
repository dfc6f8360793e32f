// The fabric objects around messaging, through stock libfabric on one
// net_ring port: close ordering, endpoint names in both address formats,
// EQs, memory registration, endpoint flags and options, and what is not
// supported yet (counters).
#include <gtest/gtest.h>
#include <poll.h>
#include <rdma/fi_eq.h>

#include <chrono>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "lib/av/address.h"
#include "test/support/messaging.h"

namespace ofi_dpdk::test {
namespace {

using Clock = std::chrono::steady_clock;

long elapsed_ms(Clock::time_point since) {
  return static_cast<long>(
      std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - since).count());
}

// ---- close ordering ----

TEST(CloseOrder, ParentsRefuseToCloseBeforeTheirChildren) {
  fi_info* info = get_dpdk_info();
  ASSERT_NE(info, nullptr) << "no dpdk provider on the net_ring port";
  fid_fabric* fabric = nullptr;
  fid_domain* domain = nullptr;
  fid_av* av = nullptr;
  fid_cq* cq = nullptr;
  fid_ep* ep = nullptr;
  fid_eq* eq = nullptr;
  fid_mr* mr = nullptr;
  static char region[256];
  ASSERT_EQ(fi_fabric(info->fabric_attr, &fabric, nullptr), 0);
  ASSERT_EQ(fi_domain(fabric, info, &domain, nullptr), 0);
  fi_av_attr av_attr{};
  av_attr.type = FI_AV_TABLE;
  ASSERT_EQ(fi_av_open(domain, &av_attr, &av, nullptr), 0);
  fi_cq_attr cq_attr{};
  cq_attr.format = FI_CQ_FORMAT_DATA;
  ASSERT_EQ(fi_cq_open(domain, &cq_attr, &cq, nullptr), 0);
  ASSERT_EQ(fi_endpoint(domain, info, &ep, nullptr), 0);
  ASSERT_EQ(fi_ep_bind(ep, &av->fid, 0), 0);
  ASSERT_EQ(fi_ep_bind(ep, &cq->fid, FI_TRANSMIT | FI_RECV), 0);
  ASSERT_EQ(fi_enable(ep), 0);
  fi_eq_attr eq_attr{};
  eq_attr.wait_obj = FI_WAIT_UNSPEC;
  ASSERT_EQ(fi_eq_open(fabric, &eq_attr, &eq, nullptr), 0);
  ASSERT_EQ(fi_mr_reg(domain, region, sizeof(region), FI_SEND | FI_RECV, 0, 0, 0, &mr, nullptr), 0);

  EXPECT_EQ(fi_close(&fabric->fid), -FI_EBUSY) << "fabric with an open domain and EQ";
  EXPECT_EQ(fi_close(&domain->fid), -FI_EBUSY) << "domain with an endpoint, CQ, AV, MR";
  EXPECT_EQ(fi_close(&ep->fid), 0);
  EXPECT_EQ(fi_close(&domain->fid), -FI_EBUSY) << "domain with a CQ, AV, MR";
  EXPECT_EQ(fi_close(&cq->fid), 0);
  EXPECT_EQ(fi_close(&domain->fid), -FI_EBUSY) << "domain with an AV, MR";
  EXPECT_EQ(fi_close(&av->fid), 0);
  EXPECT_EQ(fi_close(&domain->fid), -FI_EBUSY) << "domain with an MR";
  EXPECT_EQ(fi_close(&mr->fid), 0);
  EXPECT_EQ(fi_close(&fabric->fid), -FI_EBUSY) << "fabric with an open domain";
  EXPECT_EQ(fi_close(&domain->fid), 0);
  EXPECT_EQ(fi_close(&fabric->fid), -FI_EBUSY) << "fabric with an open EQ";
  EXPECT_EQ(fi_close(&eq->fid), 0);
  EXPECT_EQ(fi_close(&fabric->fid), 0);
  fi_freeinfo(info);
}

// A fabric, domain and AV with two enabled endpoints a and b.
class Objects : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_EQ(domain_.open(), 0) << "no dpdk provider on the net_ring port";
    ASSERT_EQ(a_.open(domain_.domain, domain_.av, domain_.info), 0);
    ASSERT_EQ(b_.open(domain_.domain, domain_.av, domain_.info), 0);
  }
  void TearDown() override {
    a_.close();
    b_.close();
    domain_.close();
  }
  TestDomain domain_;
  TestEndpoint a_, b_;
};

// ---- names ----

TEST_F(Objects, GetnameIntoASmallBufferIsETOOSMALLWithTheSizeNeeded) {
  uint8_t name[64];
  size_t length = 4;
  EXPECT_EQ(fi_getname(&a_.ep->fid, name, &length), -FI_ETOOSMALL);
  EXPECT_EQ(length, av::kNativeAddressSize);
  length = 0;
  EXPECT_EQ(fi_getname(&a_.ep->fid, nullptr, &length), -FI_ETOOSMALL);
  EXPECT_EQ(length, av::kNativeAddressSize);
  length = sizeof(name);
  EXPECT_EQ(fi_getname(&a_.ep->fid, name, &length), 0);
  EXPECT_EQ(length, av::kNativeAddressSize);
}

TEST_F(Objects, GetnameAgreesWithStraddr) {
  uint8_t name[64];
  size_t length = sizeof(name);
  ASSERT_EQ(fi_getname(&a_.ep->fid, name, &length), 0);
  const auto parsed = av::from_native(name, length);
  ASSERT_TRUE(parsed) << "fi_getname gave no native dpdk address";
  char text[128];
  size_t text_length = sizeof(text);
  ASSERT_EQ(fi_av_straddr(domain_.av, name, text, &text_length), text);
  const auto from_text = av::from_string(text);
  ASSERT_TRUE(from_text) << text;
  EXPECT_EQ(*from_text, *parsed);
  EXPECT_EQ(std::string(text), av::to_string(*parsed));
  // Two endpoints on one port: same MAC, different queues.
  uint8_t other[64];
  length = sizeof(other);
  ASSERT_EQ(fi_getname(&b_.ep->fid, other, &length), 0);
  const auto b_parsed = av::from_native(other, length);
  ASSERT_TRUE(b_parsed);
  EXPECT_EQ(std::memcmp(parsed->mac, b_parsed->mac, 6), 0);
  EXPECT_NE(parsed->queue, b_parsed->queue);
}

// fi_cm(3): a name larger than the buffer "will be truncated and
// -FI_ETOOSMALL will be returned".
TEST_F(Objects, GetnameTruncatesIntoASmallBuffer) {
  uint8_t full[64];
  size_t length = sizeof(full);
  ASSERT_EQ(fi_getname(&a_.ep->fid, full, &length), 0);
  uint8_t part[8];
  std::memset(part, 0, sizeof(part));
  length = 4;
  EXPECT_EQ(fi_getname(&a_.ep->fid, part, &length), -FI_ETOOSMALL);
  EXPECT_EQ(std::memcmp(part, full, 4), 0) << "not the first 4 bytes of the name";
  EXPECT_EQ(part[4], 0) << "wrote past addrlen";
}

TEST_F(Objects, EndpointsOfTwoDomainsOnOnePortTalk) {
  TestDomain second;
  ASSERT_EQ(second.open(), 0);
  TestEndpoint c;
  ASSERT_EQ(c.open(second.domain, second.av, second.info), 0);
  fi_addr_t b_in_second = FI_ADDR_NOTAVAIL;
  ASSERT_EQ(fi_av_insert(second.av, b_.name, 1, &b_in_second, 0, nullptr), 1);
  expect_message_delivered(c, b_in_second, b_, "from the other domain");
  c.close();
  second.close();
}

// ---- FI_ADDR_STR ----

// Opens an endpoint with its CQs, bound and enabled, without inserting its
// name anywhere (TestEndpoint::open inserts native bytes).
int open_endpoint(TestEndpoint& ep, fid_domain* domain, fid_av* av, fi_info* info) {
  fi_cq_attr attr{};
  attr.format = FI_CQ_FORMAT_DATA;
  attr.wait_obj = FI_WAIT_UNSPEC;
  int ret;
  if ((ret = fi_cq_open(domain, &attr, &ep.tx_cq, nullptr))) return ret;
  if ((ret = fi_cq_open(domain, &attr, &ep.rx_cq, nullptr))) return ret;
  if ((ret = fi_endpoint(domain, info, &ep.ep, nullptr))) return ret;
  if ((ret = fi_ep_bind(ep.ep, &av->fid, 0))) return ret;
  if ((ret = fi_ep_bind(ep.ep, &ep.tx_cq->fid, FI_TRANSMIT))) return ret;
  if ((ret = fi_ep_bind(ep.ep, &ep.rx_cq->fid, FI_RECV))) return ret;
  return fi_enable(ep.ep);
}

TEST(AddrStr, NamesAreStringsAndTheAvTakesStrings) {
  fi_info* hints = dpdk_hints();
  hints->addr_format = FI_ADDR_STR;
  fi_info* info = nullptr;
  ASSERT_EQ(fi_getinfo(FI_VERSION(1, 17), nullptr, nullptr, 0, hints, &info), 0);
  fi_freeinfo(hints);
  ASSERT_EQ(info->addr_format, static_cast<uint32_t>(FI_ADDR_STR));
  fid_fabric* fabric = nullptr;
  fid_domain* domain = nullptr;
  fid_av* av = nullptr;
  ASSERT_EQ(fi_fabric(info->fabric_attr, &fabric, nullptr), 0);
  ASSERT_EQ(fi_domain(fabric, info, &domain, nullptr), 0);
  fi_av_attr av_attr{};
  av_attr.type = FI_AV_TABLE;
  ASSERT_EQ(fi_av_open(domain, &av_attr, &av, nullptr), 0);
  TestEndpoint a, b;
  ASSERT_EQ(open_endpoint(a, domain, av, info), 0);
  ASSERT_EQ(open_endpoint(b, domain, av, info), 0);

  char names[2][av::kStringAddressSize + 8];
  TestEndpoint* eps[2] = {&a, &b};
  for (int i = 0; i < 2; ++i) {
    // Too small first: the size needed is the string with its NUL.
    size_t length = 4;
    EXPECT_EQ(fi_getname(&eps[i]->ep->fid, names[i], &length), -FI_ETOOSMALL);
    const size_t needed = length;
    length = sizeof(names[i]);
    ASSERT_EQ(fi_getname(&eps[i]->ep->fid, names[i], &length), 0);
    EXPECT_EQ(length, std::strlen(names[i]) + 1);
    EXPECT_EQ(needed, length);
    EXPECT_EQ(std::string(names[i]).rfind("fi_dpdk://", 0), 0u) << names[i];
    EXPECT_TRUE(av::from_string(names[i])) << names[i];
  }

  const char* strings[2] = {names[0], names[1]};
  fi_addr_t fi_addrs[2] = {99, 99};
  ASSERT_EQ(fi_av_insert(av, strings, 2, fi_addrs, 0, nullptr), 2);
  EXPECT_EQ(fi_addrs[0], 0u);
  EXPECT_EQ(fi_addrs[1], 1u);
  a.addr = fi_addrs[0];
  b.addr = fi_addrs[1];
  // Lookup and straddr speak strings too.
  char looked_up[128];
  size_t length = sizeof(looked_up);
  ASSERT_EQ(fi_av_lookup(av, b.addr, looked_up, &length), 0);
  EXPECT_STREQ(looked_up, names[1]);
  char text[128];
  length = sizeof(text);
  ASSERT_EQ(fi_av_straddr(av, names[0], text, &length), text);
  EXPECT_STREQ(text, names[0]);
  // The addresses work.
  expect_message_delivered(a, b.addr, b, "over FI_ADDR_STR");
  expect_message_delivered(b, a.addr, a, "and back");

  a.close();
  b.close();
  EXPECT_EQ(fi_close(&av->fid), 0);
  EXPECT_EQ(fi_close(&domain->fid), 0);
  EXPECT_EQ(fi_close(&fabric->fid), 0);
  fi_freeinfo(info);
}

// ---- EQ ----

class EqTest : public ::testing::Test {
 protected:
  void SetUp() override {
    info_ = get_dpdk_info();
    ASSERT_NE(info_, nullptr) << "no dpdk provider on the net_ring port";
    ASSERT_EQ(fi_fabric(info_->fabric_attr, &fabric_, nullptr), 0);
    fi_eq_attr attr{};
    attr.wait_obj = FI_WAIT_UNSPEC;
    attr.flags = FI_WRITE;
    attr.size = 16;
    ASSERT_EQ(fi_eq_open(fabric_, &attr, &eq_, nullptr), 0);
  }
  void TearDown() override {
    if (eq_) {
      EXPECT_EQ(fi_close(&eq_->fid), 0);
    }
    if (fabric_) {
      EXPECT_EQ(fi_close(&fabric_->fid), 0);
    }
    fi_freeinfo(info_);
  }
  fi_info* info_ = nullptr;
  fid_fabric* fabric_ = nullptr;
  fid_eq* eq_ = nullptr;
};

TEST_F(EqTest, WrittenEventIsReadBackWithItsDataAndPeekLeavesIt) {
  int context = 0;
  fi_eq_entry written{};
  written.fid = &fabric_->fid;
  written.context = &context;
  written.data = 0xabcdef;
  ASSERT_EQ(fi_eq_write(eq_, FI_NOTIFY, &written, sizeof(written), 0),
            static_cast<ssize_t>(sizeof(written)));

  for (uint64_t flags : {uint64_t{FI_PEEK}, uint64_t{0}}) {
    SCOPED_TRACE(flags ? "FI_PEEK" : "read");
    uint32_t event = 0;
    fi_eq_entry read{};
    ASSERT_EQ(fi_eq_read(eq_, &event, &read, sizeof(read), flags),
              static_cast<ssize_t>(sizeof(read)));
    EXPECT_EQ(event, static_cast<uint32_t>(FI_NOTIFY));
    EXPECT_EQ(read.fid, &fabric_->fid);
    EXPECT_EQ(read.context, &context);
    EXPECT_EQ(read.data, 0xabcdefu);
  }
  uint32_t event = 0;
  fi_eq_entry read{};
  EXPECT_EQ(fi_eq_read(eq_, &event, &read, sizeof(read), 0), -FI_EAGAIN) << "read consumed it";
  fi_eq_err_entry error{};
  EXPECT_EQ(fi_eq_readerr(eq_, &error, 0), -FI_EAGAIN);
}

TEST_F(EqTest, EventsComeOutInTheOrderWritten) {
  for (uint64_t i = 1; i <= 3; ++i) {
    fi_eq_entry entry{};
    entry.data = i;
    ASSERT_EQ(fi_eq_write(eq_, FI_NOTIFY, &entry, sizeof(entry), 0),
              static_cast<ssize_t>(sizeof(entry)));
  }
  for (uint64_t i = 1; i <= 3; ++i) {
    uint32_t event = 0;
    fi_eq_entry entry{};
    ASSERT_EQ(fi_eq_read(eq_, &event, &entry, sizeof(entry), 0),
              static_cast<ssize_t>(sizeof(entry)));
    EXPECT_EQ(entry.data, i);
  }
}

TEST_F(EqTest, ReadOnEmptyIsEAGAINAndSreadTimesOut) {
  uint32_t event = 0;
  fi_eq_entry entry{};
  EXPECT_EQ(fi_eq_read(eq_, &event, &entry, sizeof(entry), 0), -FI_EAGAIN);
  const auto start = Clock::now();
  EXPECT_EQ(fi_eq_sread(eq_, &event, &entry, sizeof(entry), 100, 0), -FI_EAGAIN);
  const long waited = elapsed_ms(start);
  EXPECT_GE(waited, 95) << "returned before the timeout";
  EXPECT_LT(waited, 1000) << "overslept a 100 ms timeout";
  // With an event there, sread returns it at once.
  entry.data = 7;
  ASSERT_EQ(fi_eq_write(eq_, FI_NOTIFY, &entry, sizeof(entry), 0),
            static_cast<ssize_t>(sizeof(entry)));
  fi_eq_entry read{};
  const auto again = Clock::now();
  EXPECT_EQ(fi_eq_sread(eq_, &event, &read, sizeof(read), 2000, 0),
            static_cast<ssize_t>(sizeof(read)));
  EXPECT_LT(elapsed_ms(again), 1000);
  EXPECT_EQ(read.data, 7u);
}

// fi_eq(3) with FI_WAIT_FD: the descriptor from FI_GETWAIT is readable exactly
// while an event or an error waits, so a program can epoll it; fi_eq_sread
// sleeps on it and wakes when another thread writes.
TEST_F(EqTest, WaitFdIsReadableWhileAnEventWaitsAndWakesSread) {
  fi_eq_attr attr{};
  attr.wait_obj = FI_WAIT_FD;
  attr.flags = FI_WRITE;
  fid_eq* eq = nullptr;
  ASSERT_EQ(fi_eq_open(fabric_, &attr, &eq, nullptr), 0);
  int fd = -1;
  ASSERT_EQ(fi_control(&eq->fid, FI_GETWAIT, &fd), 0);
  ASSERT_GE(fd, 0);
  fi_wait_obj wait_obj = FI_WAIT_NONE;
  ASSERT_EQ(fi_control(&eq->fid, FI_GETWAITOBJ, &wait_obj), 0);
  EXPECT_EQ(wait_obj, FI_WAIT_FD);
  const auto readable = [fd] {
    pollfd entry{fd, POLLIN, 0};
    return ::poll(&entry, 1, 0) == 1;
  };
  fid* fids[] = {&eq->fid};
  EXPECT_FALSE(readable()) << "readable while empty";
  EXPECT_EQ(fi_trywait(fabric_, fids, 1), 0);

  fi_eq_entry entry{};
  entry.data = 11;
  ASSERT_EQ(fi_eq_write(eq, FI_NOTIFY, &entry, sizeof(entry), 0),
            static_cast<ssize_t>(sizeof(entry)));
  EXPECT_TRUE(readable()) << "an event waits but the descriptor is not readable";
  EXPECT_EQ(fi_trywait(fabric_, fids, 1), -FI_EAGAIN);
  uint32_t event = 0;
  fi_eq_entry read{};
  ASSERT_EQ(fi_eq_read(eq, &event, &read, sizeof(read), FI_PEEK),
            static_cast<ssize_t>(sizeof(read)));
  EXPECT_TRUE(readable()) << "FI_PEEK left the event, so the descriptor stays readable";
  ASSERT_EQ(fi_eq_read(eq, &event, &read, sizeof(read), 0), static_cast<ssize_t>(sizeof(read)));
  EXPECT_FALSE(readable()) << "still readable after the last event was read";

  // A writer on another thread wakes a reader asleep in fi_eq_sread.
  std::thread writer([eq] {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    fi_eq_entry late{};
    late.data = 12;
    fi_eq_write(eq, FI_NOTIFY, &late, sizeof(late), 0);
  });
  const auto start = Clock::now();
  const ssize_t got = fi_eq_sread(eq, &event, &read, sizeof(read), 5000, 0);
  writer.join();
  EXPECT_EQ(got, static_cast<ssize_t>(sizeof(read)));
  EXPECT_EQ(read.data, 12u);
  EXPECT_LT(elapsed_ms(start), 2000) << "sread slept past the write";
  EXPECT_FALSE(readable());
  EXPECT_EQ(fi_close(&eq->fid), 0);
}

// ---- memory registration ----

TEST_F(Objects, MrRegGivesAKeyAndADescriptor) {
  static char region[4096], other[512];
  fid_mr* mr = nullptr;
  fid_mr* mr2 = nullptr;
  ASSERT_EQ(
      fi_mr_reg(domain_.domain, region, sizeof(region), FI_SEND | FI_RECV, 0, 0, 0, &mr, nullptr),
      0);
  ASSERT_NE(mr, nullptr);
  EXPECT_NE(fi_mr_key(mr), FI_KEY_NOTAVAIL);
  EXPECT_NE(fi_mr_desc(mr), nullptr);
  ASSERT_EQ(
      fi_mr_reg(domain_.domain, other, sizeof(other), FI_SEND | FI_RECV, 0, 1, 0, &mr2, nullptr),
      0);
  EXPECT_NE(fi_mr_key(mr), fi_mr_key(mr2)) << "two regions, one key";
  // The descriptor goes with a send.
  std::memcpy(region, "registered", 10);
  char received[16] = {};
  ASSERT_EQ(fi_recv(b_.ep, received, sizeof(received), fi_mr_desc(mr2), FI_ADDR_UNSPEC, received),
            0);
  ssize_t ret;
  const auto deadline = Clock::now() + std::chrono::seconds(5);
  while ((ret = fi_send(a_.ep, region, 10, fi_mr_desc(mr), b_.addr, nullptr)) == -FI_EAGAIN &&
         Clock::now() < deadline) {
  }
  ASSERT_EQ(ret, 0);
  fi_cq_data_entry entry{};
  ASSERT_EQ(wait_for_completion(b_.rx_cq, &entry), 1);
  EXPECT_EQ(std::string(received, entry.len), "registered");
  ASSERT_EQ(wait_for_completion(a_.tx_cq, &entry), 1);
  EXPECT_EQ(fi_close(&mr->fid), 0);
  EXPECT_EQ(fi_close(&mr2->fid), 0);
}

// fi_mr(3): without FI_MR_PROV_KEY in the domain's mr_mode the
// application's requested_key is the key, and a key in use is refused with
// -FI_ENOKEY.
TEST_F(Objects, RequestedKeyIsTheKeyWithoutProvKeyMode) {
  if (domain_.info->domain_attr->mr_mode & FI_MR_PROV_KEY)
    GTEST_SKIP() << "FI_MR_PROV_KEY: the provider picks keys";
  static char region[64];
  constexpr uint64_t kRequested = 0x1234;
  fid_mr* mr = nullptr;
  ASSERT_EQ(fi_mr_reg(domain_.domain, region, sizeof(region), FI_REMOTE_READ, 0, kRequested, 0, &mr,
                      nullptr),
            0);
  EXPECT_EQ(fi_mr_key(mr), kRequested);
  fid_mr* twin = nullptr;
  EXPECT_EQ(fi_mr_reg(domain_.domain, region, 8, FI_REMOTE_READ, 0, kRequested, 0, &twin, nullptr),
            -FI_ENOKEY);
  EXPECT_EQ(fi_close(&mr->fid), 0);
  // Free again once closed.
  ASSERT_EQ(fi_mr_reg(domain_.domain, region, 8, FI_REMOTE_READ, 0, kRequested, 0, &twin, nullptr),
            0);
  EXPECT_EQ(fi_close(&twin->fid), 0);
}

// fi_mr(3): an application that sets FI_MR_PROV_KEY in its hints accepts
// provider-chosen keys; ours are random and distinct, whatever was requested.
TEST(ObjectsProvKey, ProviderPicksDistinctKeysWithProvKeyMode) {
  fi_info* hints = dpdk_hints();
  hints->domain_attr->mr_mode = FI_MR_PROV_KEY;
  fi_info* info = nullptr;
  ASSERT_EQ(fi_getinfo(FI_VERSION(1, 17), nullptr, nullptr, 0, hints, &info), 0);
  fi_freeinfo(hints);
  EXPECT_EQ(info->domain_attr->mr_mode & FI_MR_PROV_KEY, FI_MR_PROV_KEY);
  fid_fabric* fabric = nullptr;
  fid_domain* domain = nullptr;
  ASSERT_EQ(fi_fabric(info->fabric_attr, &fabric, nullptr), 0);
  ASSERT_EQ(fi_domain(fabric, info, &domain, nullptr), 0);
  static char region[64];
  fid_mr* first = nullptr;
  fid_mr* second = nullptr;
  ASSERT_EQ(fi_mr_reg(domain, region, 8, FI_REMOTE_READ, 0, 7, 0, &first, nullptr), 0);
  ASSERT_EQ(fi_mr_reg(domain, region, 8, FI_REMOTE_READ, 0, 7, 0, &second, nullptr), 0);
  EXPECT_NE(fi_mr_key(first), fi_mr_key(second));
  EXPECT_EQ(fi_close(&first->fid), 0);
  EXPECT_EQ(fi_close(&second->fid), 0);
  EXPECT_EQ(fi_close(&domain->fid), 0);
  EXPECT_EQ(fi_close(&fabric->fid), 0);
  fi_freeinfo(info);
}

// ---- endpoint flags and options ----

TEST_F(Objects, OpsFlagsRoundTripThroughControl) {
  for (uint64_t side : {uint64_t{FI_TRANSMIT}, uint64_t{FI_RECV}}) {
    SCOPED_TRACE(side == FI_TRANSMIT ? "FI_TRANSMIT" : "FI_RECV");
    uint64_t other_side = side == FI_TRANSMIT ? FI_RECV : FI_TRANSMIT;
    uint64_t other_before = other_side;
    ASSERT_EQ(fi_control(&a_.ep->fid, FI_GETOPSFLAG, &other_before), 0);

    uint64_t flags = side | FI_COMPLETION;
    ASSERT_EQ(fi_control(&a_.ep->fid, FI_SETOPSFLAG, &flags), 0);
    uint64_t got = side;
    ASSERT_EQ(fi_control(&a_.ep->fid, FI_GETOPSFLAG, &got), 0);
    EXPECT_TRUE(got & FI_COMPLETION);

    flags = side;  // clear them again
    ASSERT_EQ(fi_control(&a_.ep->fid, FI_SETOPSFLAG, &flags), 0);
    got = side;
    ASSERT_EQ(fi_control(&a_.ep->fid, FI_GETOPSFLAG, &got), 0);
    EXPECT_FALSE(got & FI_COMPLETION);

    uint64_t other_after = other_side;
    ASSERT_EQ(fi_control(&a_.ep->fid, FI_GETOPSFLAG, &other_after), 0);
    EXPECT_EQ(other_after, other_before) << "the other side's flags changed";
  }
  // Both sides at once, or neither, is not a valid request (fi_endpoint(3)).
  uint64_t both = FI_TRANSMIT | FI_RECV;
  EXPECT_LT(fi_control(&a_.ep->fid, FI_GETOPSFLAG, &both), 0);
  uint64_t neither = FI_COMPLETION;
  EXPECT_LT(fi_control(&a_.ep->fid, FI_SETOPSFLAG, &neither), 0);
}

TEST_F(Objects, UnknownEndpointOptionIsENOPROTOOPT) {
  constexpr int kUnknownOption = 0x7777;
  uint64_t value = 1;
  size_t length = sizeof(value);
  EXPECT_EQ(fi_getopt(&a_.ep->fid, FI_OPT_ENDPOINT, kUnknownOption, &value, &length),
            -FI_ENOPROTOOPT);
  EXPECT_EQ(fi_setopt(&a_.ep->fid, FI_OPT_ENDPOINT, kUnknownOption, &value, sizeof(value)),
            -FI_ENOPROTOOPT);
}

}  // namespace
}  // namespace ofi_dpdk::test
