// fi_av(3) FI_EVENT: asynchronous inserts reported on a bound EQ, through
// stock libfabric on one net_ring port.  Per failed address one error entry
// (context: the insert's, data: the address's index within the call), then
// one FI_AV_COMPLETE (struct fi_eq_entry, data: the number inserted).
#include <gtest/gtest.h>
#include <rdma/fi_eq.h>

#include <array>
#include <cstring>
#include <vector>

#include "lib/av/address.h"
#include "test/support/messaging.h"

// fi_av_bind is deprecated in libfabric 2.x (FI_DEPRECATED_FUNC) but still
// part of its API, and the provider still implements it.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"

namespace ofi_dpdk::test {
namespace {

using Native = std::array<uint8_t, av::kNativeAddressSize>;

Native native(uint8_t n, uint16_t queue) {
  av::Address address;
  const uint8_t mac[6] = {0x02, 0x00, 0x00, 0x00, 0x00, n};
  std::memcpy(address.mac, mac, 6);
  address.queue = queue;
  Native bytes;
  av::to_native(address, bytes.data());
  return bytes;
}

Native bad_address() {
  Native bad = native(0xee, 1);
  bad[1] = 99;  // unknown version
  return bad;
}

std::vector<uint8_t> packed(std::initializer_list<Native> addresses) {
  std::vector<uint8_t> bytes;
  for (const Native& a : addresses) bytes.insert(bytes.end(), a.begin(), a.end());
  return bytes;
}

class AvEventTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_EQ(domain_.open(), 0);
    fi_eq_attr eq_attr{};
    eq_attr.wait_obj = FI_WAIT_UNSPEC;
    ASSERT_EQ(fi_eq_open(domain_.fabric, &eq_attr, &eq_, nullptr), 0);
    fi_av_attr attr{};
    attr.type = FI_AV_TABLE;
    attr.flags = FI_EVENT;
    ASSERT_EQ(fi_av_open(domain_.domain, &attr, &av_, nullptr), 0);
  }
  void TearDown() override {
    if (av_) {
      EXPECT_EQ(fi_close(&av_->fid), 0);
    }
    if (eq_) {
      EXPECT_EQ(fi_close(&eq_->fid), 0);
    }
    domain_.close();
  }

  // Reads the next event, which must be FI_AV_COMPLETE.
  fi_eq_entry read_complete() {
    uint32_t event = 0;
    fi_eq_entry entry{};
    EXPECT_EQ(fi_eq_read(eq_, &event, &entry, sizeof(entry), 0),
              static_cast<ssize_t>(sizeof(entry)));
    EXPECT_EQ(event, static_cast<uint32_t>(FI_AV_COMPLETE));
    EXPECT_EQ(entry.fid, &av_->fid);
    return entry;
  }
  fi_eq_err_entry read_error() {
    fi_eq_err_entry error{};
    EXPECT_EQ(fi_eq_readerr(eq_, &error, 0), static_cast<ssize_t>(sizeof(error)));
    EXPECT_EQ(error.fid, &av_->fid);
    return error;
  }
  bool eq_empty() {
    uint32_t event;
    fi_eq_entry entry;
    return fi_eq_read(eq_, &event, &entry, sizeof(entry), 0) == -FI_EAGAIN;
  }

  TestDomain domain_;
  fid_eq* eq_ = nullptr;
  fid_av* av_ = nullptr;
};

TEST_F(AvEventTest, InsertsBeforeTheBindAreENOEQ) {
  const Native a = native(1, 1);
  fi_addr_t fi_addr = 99;
  EXPECT_EQ(fi_av_insert(av_, a.data(), 1, &fi_addr, 0, nullptr), -FI_ENOEQ);
  EXPECT_EQ(fi_av_insertsvc(av_, "02:00:00:00:00:01", "1", &fi_addr, 0, nullptr), -FI_ENOEQ);
  EXPECT_EQ(fi_av_insertsym(av_, "02:00:00:00:00:01", 1, "1", 1, &fi_addr, 0, nullptr), -FI_ENOEQ);
  EXPECT_EQ(fi_addr, 99u);
  ASSERT_EQ(fi_av_bind(av_, &eq_->fid, 0), 0);
  EXPECT_EQ(fi_av_insert(av_, a.data(), 1, &fi_addr, 0, nullptr), 0);
  EXPECT_EQ(fi_addr, 0u) << "the first index: nothing went in before the bind";
  EXPECT_EQ(read_complete().data, 1u);
}

TEST_F(AvEventTest, BindRules) {
  EXPECT_EQ(fi_av_bind(av_, &eq_->fid, 1), -FI_EBADFLAGS) << "flags must be 0";
  fi_cq_attr cq_attr{};
  fid_cq* cq = nullptr;
  ASSERT_EQ(fi_cq_open(domain_.domain, &cq_attr, &cq, nullptr), 0);
  EXPECT_EQ(fi_av_bind(av_, &cq->fid, 0), -FI_EINVAL) << "only an EQ";
  EXPECT_EQ(fi_close(&cq->fid), 0);
  ASSERT_EQ(fi_av_bind(av_, &eq_->fid, 0), 0);
  EXPECT_EQ(fi_av_bind(av_, &eq_->fid, 0), -FI_EALREADY);
  // The EQ stays while the AV uses it.
  EXPECT_EQ(fi_close(&eq_->fid), -FI_EBUSY);
  EXPECT_EQ(fi_close(&av_->fid), 0);
  av_ = nullptr;
  EXPECT_EQ(fi_close(&eq_->fid), 0);
  eq_ = nullptr;
}

TEST_F(AvEventTest, ErrorsComeFirstThenOneCompletion) {
  ASSERT_EQ(fi_av_bind(av_, &eq_->fid, 0), 0);
  const std::vector<uint8_t> four =
      packed({native(1, 1), bad_address(), native(3, 3), bad_address()});
  fi_addr_t fi_addrs[4] = {99, 99, 99, 99};
  int context = 0;
  EXPECT_EQ(fi_av_insert(av_, four.data(), 4, fi_addrs, 0, &context), 0)
      << "an asynchronous insert returns 0 once started";
  EXPECT_EQ(fi_addrs[0], 0u);
  EXPECT_EQ(fi_addrs[1], FI_ADDR_NOTAVAIL);
  EXPECT_EQ(fi_addrs[2], 1u);
  EXPECT_EQ(fi_addrs[3], FI_ADDR_NOTAVAIL);
  uint32_t event;
  fi_eq_entry entry;
  EXPECT_EQ(fi_eq_read(eq_, &event, &entry, sizeof(entry), 0), -FI_EAVAIL);
  const fi_eq_err_entry first = read_error();
  EXPECT_EQ(first.context, &context);
  EXPECT_EQ(first.data, 1u) << "the failed address's index within the call";
  EXPECT_EQ(first.err, FI_EINVAL);
  const fi_eq_err_entry second = read_error();
  EXPECT_EQ(second.data, 3u);
  const fi_eq_entry done = read_complete();
  EXPECT_EQ(done.context, &context);
  EXPECT_EQ(done.data, 2u) << "the number inserted";
  EXPECT_TRUE(eq_empty());
}

TEST_F(AvEventTest, EveryInsertCompletesEvenWhenAllFailOrNoneIsAsked) {
  ASSERT_EQ(fi_av_bind(av_, &eq_->fid, 0), 0);
  const Native bad = bad_address();
  int c1 = 0, c2 = 0, c3 = 0;
  EXPECT_EQ(fi_av_insert(av_, bad.data(), 1, nullptr, 0, &c1), 0);
  EXPECT_EQ(fi_av_insert(av_, bad.data(), 0, nullptr, 0, &c2), 0);
  EXPECT_EQ(fi_av_insertsvc(av_, "not-a-mac", "1", nullptr, 0, &c3), 0);
  EXPECT_EQ(read_error().context, &c1);
  EXPECT_EQ(read_error().context, &c3);
  fi_eq_entry done = read_complete();
  EXPECT_EQ(done.context, &c1);
  EXPECT_EQ(done.data, 0u);
  done = read_complete();
  EXPECT_EQ(done.context, &c2);
  EXPECT_EQ(done.data, 0u);
  done = read_complete();
  EXPECT_EQ(done.context, &c3);
  EXPECT_TRUE(eq_empty());
}

TEST_F(AvEventTest, InsertsvcAndInsertsymReportToo) {
  ASSERT_EQ(fi_av_bind(av_, &eq_->fid, 0), 0);
  fi_addr_t fi_addrs[4];
  int context = 0;
  EXPECT_EQ(fi_av_insertsym(av_, "02:00:00:00:00:01", 2, "7", 2, fi_addrs, 0, &context), 0);
  EXPECT_EQ(fi_addrs[3], 3u);
  EXPECT_EQ(read_complete().data, 4u);
  EXPECT_EQ(fi_av_insertsvc(av_, "02:00:00:00:00:09", "1", fi_addrs, FI_MORE, &context), 0);
  EXPECT_EQ(fi_addrs[0], 4u);
  EXPECT_EQ(read_complete().data, 1u);
}

TEST_F(AvEventTest, SyncErrIsForSynchronousAvsOnly) {
  ASSERT_EQ(fi_av_bind(av_, &eq_->fid, 0), 0);
  const Native a = native(1, 1);
  int status = -1;
  EXPECT_EQ(fi_av_insert(av_, a.data(), 1, nullptr, FI_SYNC_ERR, &status), -FI_EINVAL);
  EXPECT_TRUE(eq_empty()) << "a refused call reports nothing";
}

TEST_F(AvEventTest, AnEventAvServesEndpoints) {
  ASSERT_EQ(fi_av_bind(av_, &eq_->fid, 0), 0);
  TestEndpoint a;
  // TestEndpoint::open inserts its own name: on this AV that returns 0, not 1.
  EXPECT_EQ(a.open(domain_.domain, av_, domain_.info), -FI_EINVAL);
  EXPECT_EQ(a.addr, 0u);
  EXPECT_EQ(read_complete().data, 1u);
  expect_message_delivered(a, a.addr, a, "over an FI_EVENT AV");
  a.close();
}

}  // namespace
}  // namespace ofi_dpdk::test

#pragma GCC diagnostic pop
