// FI_SOURCE_ERR (fi_getinfo(3), fi_cq(3)) through stock libfabric on one
// net_ring port: a message from a sender the receiver's AV does not know is
// reported as an error completion, FI_EADDRNOTAVAIL, whose err_data is the
// sender's address, ready for fi_av_insert; the data is in the buffer.
#include <gtest/gtest.h>

#include <chrono>
#include <cstring>
#include <string>

#include "ofi_dpdk_config.h"
#include "test/support/messaging.h"

namespace ofi_dpdk::test {
namespace {

using Clock = std::chrono::steady_clock;
constexpr double kWait = 5;

ssize_t send_text(TestEndpoint& from, const std::string& posted, fi_addr_t to) {
  const std::string& text = kept_for_send(posted);
  const auto deadline = Clock::now() + std::chrono::duration<double>(kWait);
  ssize_t ret;
  while ((ret = fi_send(from.ep, text.data(), text.size(), nullptr, to, nullptr)) == -FI_EAGAIN &&
         Clock::now() < deadline) {
    fi_cq_data_entry unused;
    fi_cq_read(from.tx_cq, &unused, 0);
  }
  return ret;
}

int getinfo_caps(uint64_t caps, fi_info** info) {
  fi_info* hints = dpdk_hints();
  hints->caps = caps;
  const int ret = fi_getinfo(FI_VERSION(1, 17), nullptr, nullptr, 0, hints, info);
  fi_freeinfo(hints);
  return ret;
}

// b receives; a is in b's AV; stranger sits on its own AV, which knows b,
// while b's AV does not know it.
class SourceErr : public ::testing::Test {
 protected:
  virtual uint64_t caps() const { return FI_MSG | FI_SOURCE | FI_SOURCE_ERR; }
  void SetUp() override {
    ASSERT_EQ(domain_.open(nullptr, caps()), 0) << "no dpdk provider with these caps";
    ASSERT_EQ(a_.open(domain_.domain, domain_.av, domain_.info), 0);
    ASSERT_EQ(b_.open(domain_.domain, domain_.av, domain_.info), 0);
    fi_av_attr attr{};
    attr.type = FI_AV_TABLE;
    ASSERT_EQ(fi_av_open(domain_.domain, &attr, &other_av_, nullptr), 0);
    ASSERT_EQ(stranger_.open(domain_.domain, other_av_, domain_.info), 0);
    ASSERT_EQ(fi_av_insert(other_av_, b_.name, 1, &b_for_stranger_, 0, nullptr), 1);
  }
  void TearDown() override {
    stranger_.close();
    if (other_av_) {
      EXPECT_EQ(fi_close(&other_av_->fid), 0);
    }
    a_.close();
    b_.close();
    domain_.close();
  }
  TestDomain domain_;
  TestEndpoint a_, b_, stranger_;
  fid_av* other_av_ = nullptr;
  fi_addr_t b_for_stranger_ = FI_ADDR_NOTAVAIL;
};

TEST(SourceErrGetinfo, MustBePairedWithFiSource) {
  fi_info* info = nullptr;
  EXPECT_EQ(getinfo_caps(FI_MSG | FI_SOURCE_ERR, &info), -FI_ENODATA);
  EXPECT_EQ(info, nullptr);
  ASSERT_EQ(getinfo_caps(FI_MSG | FI_SOURCE | FI_SOURCE_ERR, &info), 0);
  EXPECT_TRUE(info->caps & FI_SOURCE);
  EXPECT_TRUE(info->caps & FI_SOURCE_ERR);
  fi_freeinfo(info);
  // A secondary capability: not granted unless asked for.
  ASSERT_EQ(getinfo_caps(FI_MSG | FI_SOURCE, &info), 0);
  EXPECT_FALSE(info->caps & FI_SOURCE_ERR);
  fi_freeinfo(info);
}

TEST_F(SourceErr, UnknownSenderIsEADDRNOTAVAILWithItsAddress) {
  char buffer[32] = {};
  ASSERT_EQ(fi_recv(b_.ep, buffer, sizeof(buffer), nullptr, FI_ADDR_UNSPEC, buffer), 0);
  ASSERT_EQ(send_text(stranger_, "who am I", b_for_stranger_), 0);
  fi_cq_data_entry entry{};
  fi_addr_t source = 777;
  ASSERT_EQ(wait_for_completion(b_.rx_cq, &entry, kWait, &source), -FI_EAVAIL)
      << "fi_cq(3): readfrom returns -FI_EAVAIL";
  fi_cq_err_entry error{};
  ASSERT_EQ(fi_cq_readerr(b_.rx_cq, &error, 0), 1);
  EXPECT_EQ(error.err, FI_EADDRNOTAVAIL);
  EXPECT_EQ(error.op_context, buffer);
  EXPECT_TRUE(error.flags & FI_RECV);
  EXPECT_TRUE(error.flags & FI_MSG);
  EXPECT_EQ(error.len, 8u);
  EXPECT_EQ(std::string(buffer, 8), "who am I") << "the data was received";
  ASSERT_NE(error.err_data, nullptr);
  ASSERT_EQ(error.err_data_size, stranger_.name_len);
  EXPECT_EQ(std::memcmp(error.err_data, stranger_.name, stranger_.name_len), 0)
      << "err_data is the sender's address (fi_getname form)";

  // The application may insert it and then hears from that fi_addr.
  fi_addr_t inserted = FI_ADDR_NOTAVAIL;
  ASSERT_EQ(fi_av_insert(domain_.av, error.err_data, 1, &inserted, 0, nullptr), 1);
  ASSERT_EQ(fi_recv(b_.ep, buffer, sizeof(buffer), nullptr, FI_ADDR_UNSPEC, buffer), 0);
  ASSERT_EQ(send_text(stranger_, "known now", b_for_stranger_), 0);
  ASSERT_EQ(wait_for_completion(b_.rx_cq, &entry, kWait, &source), 1);
  EXPECT_EQ(source, inserted);
  EXPECT_EQ(std::string(buffer, entry.len), "known now");
}

TEST_F(SourceErr, ErrDataGoesIntoTheCallersBufferWhenGiven) {
  char buffer[16] = {};
  ASSERT_EQ(fi_recv(b_.ep, buffer, sizeof(buffer), nullptr, FI_ADDR_UNSPEC, buffer), 0);
  ASSERT_EQ(send_text(stranger_, "hello", b_for_stranger_), 0);
  fi_cq_data_entry entry{};
  ASSERT_EQ(wait_for_completion(b_.rx_cq, &entry, kWait), -FI_EAVAIL);
  uint8_t address[64];
  std::memset(address, 0xCC, sizeof(address));
  fi_cq_err_entry error{};
  error.err_data = address;
  error.err_data_size = sizeof(address);
  ASSERT_EQ(fi_cq_readerr(b_.rx_cq, &error, 0), 1);
  EXPECT_EQ(error.err, FI_EADDRNOTAVAIL);
  EXPECT_EQ(error.err_data, address);
  ASSERT_EQ(error.err_data_size, stranger_.name_len);
  EXPECT_EQ(std::memcmp(address, stranger_.name, stranger_.name_len), 0);
  EXPECT_EQ(address[stranger_.name_len], 0xCC) << "nothing written past the address";
}

TEST_F(SourceErr, UnknownSenderBeforeTheReceiveIsReportedTheSameWay) {
  ASSERT_EQ(send_text(stranger_, "early", b_for_stranger_), 0);
  fi_cq_data_entry sent{};
  ASSERT_EQ(wait_for_completion(stranger_.tx_cq, &sent, kWait), 1);
  char buffer[16] = {};
  ASSERT_EQ(fi_recv(b_.ep, buffer, sizeof(buffer), nullptr, FI_ADDR_UNSPEC, buffer), 0);
  fi_cq_data_entry entry{};
  ASSERT_EQ(wait_for_completion(b_.rx_cq, &entry, kWait), -FI_EAVAIL);
  fi_cq_err_entry error{};
  ASSERT_EQ(fi_cq_readerr(b_.rx_cq, &error, 0), 1);
  EXPECT_EQ(error.err, FI_EADDRNOTAVAIL);
  EXPECT_EQ(error.op_context, buffer);
  EXPECT_EQ(std::string(buffer, error.len), "early");
  ASSERT_EQ(error.err_data_size, stranger_.name_len);
  EXPECT_EQ(std::memcmp(error.err_data, stranger_.name, stranger_.name_len), 0);
}

TEST_F(SourceErr, KnownSenderCompletesNormally) {
  char buffer[16] = {};
  ASSERT_EQ(fi_recv(b_.ep, buffer, sizeof(buffer), nullptr, FI_ADDR_UNSPEC, buffer), 0);
  ASSERT_EQ(send_text(a_, "friend", b_.addr), 0);
  fi_cq_data_entry entry{};
  fi_addr_t source = 777;
  ASSERT_EQ(wait_for_completion(b_.rx_cq, &entry, kWait, &source), 1);
  EXPECT_EQ(source, a_.addr);
  EXPECT_EQ(std::string(buffer, entry.len), "friend");
}

// Without FI_SOURCE_ERR the stranger's message is delivered, never dropped,
// with source FI_ADDR_NOTAVAIL (fi_cq(3)), also when it came first.
class SourceWithoutErr : public SourceErr {
 protected:
  uint64_t caps() const override { return FI_MSG | FI_SOURCE; }
};

TEST_F(SourceWithoutErr, UnknownSenderIsFI_ADDR_NOTAVAIL) {
  ASSERT_EQ(send_text(stranger_, "early", b_for_stranger_), 0);
  fi_cq_data_entry sent{};
  ASSERT_EQ(wait_for_completion(stranger_.tx_cq, &sent, kWait), 1);
  for (const char* expected : {"early", "posted"}) {
    char buffer[16] = {};
    ASSERT_EQ(fi_recv(b_.ep, buffer, sizeof(buffer), nullptr, FI_ADDR_UNSPEC, buffer), 0);
    if (std::string(expected) == "posted") {
      ASSERT_EQ(send_text(stranger_, "posted", b_for_stranger_), 0);
    }
    fi_cq_data_entry entry{};
    fi_addr_t source = 777;
    ASSERT_EQ(wait_for_completion(b_.rx_cq, &entry, kWait, &source), 1) << expected;
    EXPECT_EQ(source, FI_ADDR_NOTAVAIL);
    EXPECT_EQ(std::string(buffer, entry.len), expected);
  }
}

}  // namespace
}  // namespace ofi_dpdk::test

#if OFI_DPDK_HAVE_CQ_ERR_SRC_ADDR
namespace ofi_dpdk::test {
namespace {

// fi_cq(3), libfabric 2.x: fi_cq_err_entry::src_addr came with API 1.20.
// From 1.20 on, an FI_EADDRNOTAVAIL entry carries the sender's
// authorization-key handle in FI_AV_AUTH_KEY domains and FI_ADDR_NOTAVAIL
// otherwise (as here), and other errors FI_ADDR_NOTAVAIL.  Below 1.20 the
// application's struct ends before src_addr, so nothing is written there.
// The provider's readerr is called directly: the fi_cq_readerr wrapper
// itself sets src_addr to FI_ADDR_NOTAVAIL first.
class SourceErrSrcAddr : public SourceErr, public ::testing::WithParamInterface<uint32_t> {
 protected:
  static constexpr fi_addr_t kUntouched = 0x5151;
  void SetUp() override {
    fi_info* hints = dpdk_hints();
    hints->caps = caps();
    ASSERT_EQ(fi_getinfo(GetParam(), nullptr, nullptr, 0, hints, &domain_.info), 0);
    fi_freeinfo(hints);
    ASSERT_EQ(fi_fabric(domain_.info->fabric_attr, &domain_.fabric, nullptr), 0);
    ASSERT_EQ(fi_domain(domain_.fabric, domain_.info, &domain_.domain, nullptr), 0);
    fi_av_attr attr{};
    attr.type = FI_AV_TABLE;
    ASSERT_EQ(fi_av_open(domain_.domain, &attr, &domain_.av, nullptr), 0);
    ASSERT_EQ(a_.open(domain_.domain, domain_.av, domain_.info), 0);
    ASSERT_EQ(b_.open(domain_.domain, domain_.av, domain_.info), 0);
    ASSERT_EQ(fi_av_open(domain_.domain, &attr, &other_av_, nullptr), 0);
    ASSERT_EQ(stranger_.open(domain_.domain, other_av_, domain_.info), 0);
    ASSERT_EQ(fi_av_insert(other_av_, b_.name, 1, &b_for_stranger_, 0, nullptr), 1);
  }
  bool at_least_1_20() const { return FI_VERSION_GE(GetParam(), FI_VERSION(1, 20)); }
  fi_cq_err_entry read_error_raw(fid_cq* cq) {
    fi_cq_err_entry error{};
    error.src_addr = kUntouched;
    EXPECT_EQ(cq->ops->readerr(cq, &error, 0), 1);
    return error;
  }
};

TEST_P(SourceErrSrcAddr, UnknownSenderEntry) {
  char buffer[16] = {};
  ASSERT_EQ(fi_recv(b_.ep, buffer, sizeof(buffer), nullptr, FI_ADDR_UNSPEC, buffer), 0);
  ASSERT_EQ(send_text(stranger_, "stranger", b_for_stranger_), 0);
  fi_cq_data_entry entry{};
  ASSERT_EQ(wait_for_completion(b_.rx_cq, &entry, kWait), -FI_EAVAIL);
  const fi_cq_err_entry error = read_error_raw(b_.rx_cq);
  EXPECT_EQ(error.err, FI_EADDRNOTAVAIL);
  EXPECT_EQ(error.op_context, buffer);
  ASSERT_EQ(error.err_data_size, stranger_.name_len) << "err_data as before, at every version";
  EXPECT_EQ(std::memcmp(error.err_data, stranger_.name, stranger_.name_len), 0);
  if (at_least_1_20()) {
    EXPECT_EQ(error.src_addr, FI_ADDR_NOTAVAIL) << "no FI_AV_AUTH_KEY: FI_ADDR_NOTAVAIL";
  } else {
    EXPECT_EQ(error.src_addr, kUntouched) << "below 1.20 the field is not the application's";
  }
}

TEST_P(SourceErrSrcAddr, OtherErrorsCarryNoSource) {
  char small[4] = {};
  ASSERT_EQ(fi_recv(b_.ep, small, sizeof(small), nullptr, FI_ADDR_UNSPEC, small), 0);
  ASSERT_EQ(send_text(a_, "too long for it", b_.addr), 0);
  fi_cq_data_entry entry{};
  ASSERT_EQ(wait_for_completion(b_.rx_cq, &entry, kWait), -FI_EAVAIL);
  const fi_cq_err_entry error = read_error_raw(b_.rx_cq);
  EXPECT_EQ(error.err, FI_ETRUNC);
  EXPECT_EQ(error.src_addr, at_least_1_20() ? FI_ADDR_NOTAVAIL : kUntouched);
  ASSERT_EQ(wait_for_completion(a_.tx_cq, &entry, kWait), 1);
}

INSTANTIATE_TEST_SUITE_P(ApiVersions, SourceErrSrcAddr,
                         ::testing::Values(FI_VERSION(1, 17), FI_VERSION(1, 19), FI_VERSION(1, 20),
                                           FI_VERSION(FI_MAJOR_VERSION, FI_MINOR_VERSION)));

}  // namespace
}  // namespace ofi_dpdk::test
#endif  // OFI_DPDK_HAVE_CQ_ERR_SRC_ADDR
