// fi_atomic(3) through stock libfabric on one net_ring port: the three
// classes land at the target through lib/atomic's table, valid/query agree
// with what the calls accept, bad input is refused at the call or with the
// target's documented error, and concurrent atomics from two endpoints on
// two threads never lose an update.
#include <gtest/gtest.h>
#include <rdma/fi_atomic.h>

#include <complex>
#include <cstring>
#include <thread>
#include <vector>

#include "lib/atomic/atomic_config.h"  // which 2.x datatypes and ops the headers have
#include "test/support/messaging.h"

namespace ofi_dpdk::test {
namespace {

class Atomic : public ::testing::Test {
 protected:
  void SetUp() override {
    fi_info* hints = dpdk_hints();
    hints->caps = FI_MSG | FI_ATOMIC;
    hints->domain_attr->mr_mode = FI_MR_PROV_KEY | FI_MR_VIRT_ADDR;
    ASSERT_EQ(fi_getinfo(FI_VERSION(1, 17), nullptr, nullptr, 0, hints, &domain_.info), 0);
    fi_freeinfo(hints);
    ASSERT_TRUE(domain_.info->caps & FI_ATOMIC);
    ASSERT_EQ(fi_fabric(domain_.info->fabric_attr, &domain_.fabric, nullptr), 0);
    ASSERT_EQ(fi_domain(domain_.fabric, domain_.info, &domain_.domain, nullptr), 0);
    fi_av_attr av_attr{};
    av_attr.type = FI_AV_TABLE;
    ASSERT_EQ(fi_av_open(domain_.domain, &av_attr, &domain_.av, nullptr), 0);
    ASSERT_EQ(a_.open(domain_.domain, domain_.av, domain_.info), 0);
    ASSERT_EQ(b_.open(domain_.domain, domain_.av, domain_.info), 0);
    ASSERT_EQ(fi_mr_reg(domain_.domain, region_, sizeof(region_), FI_REMOTE_READ | FI_REMOTE_WRITE,
                        0, 0, 0, &mr_, nullptr),
              0);
    key_ = fi_mr_key(mr_);
  }
  void TearDown() override {
    if (mr_) {
      EXPECT_EQ(fi_close(&mr_->fid), 0);
    }
    a_.close();
    b_.close();
    domain_.close();
  }
  uint64_t at(const void* p) const { return reinterpret_cast<uint64_t>(p); }
  ssize_t done(fi_cq_err_entry* error = nullptr) {
    fi_cq_data_entry entry{};
    const ssize_t ret = wait_for_completion(a_.tx_cq, &entry);
    if (ret == -FI_EAVAIL && error != nullptr) {
      *error = {};
      EXPECT_EQ(fi_cq_readerr(a_.tx_cq, error, 0), 1);
    }
    if (ret == 1) last_flags_ = entry.flags;
    return ret;
  }

  TestDomain domain_;
  TestEndpoint a_, b_;
  alignas(64) uint8_t region_[4096] = {};
  fid_mr* mr_ = nullptr;
  uint64_t key_ = 0;
  uint64_t last_flags_ = 0;
  int context_ = 0;
};

TEST_F(Atomic, BaseFetchAndCompareOnUint64) {
  auto* words = reinterpret_cast<uint64_t*>(region_);
  for (int i = 0; i < 4; ++i) words[i] = 100 + i;
  const uint64_t add[4] = {1, 2, 3, 4};
  ASSERT_EQ(
      fi_atomic(a_.ep, add, 4, nullptr, b_.addr, at(words), key_, FI_UINT64, FI_SUM, &context_), 0);
  ASSERT_EQ(done(), 1);
  EXPECT_EQ(last_flags_, FI_ATOMIC | FI_WRITE);
  for (int i = 0; i < 4; ++i) EXPECT_EQ(words[i], 101u + 2 * i);

  uint64_t old[4] = {};
  const uint64_t max_with[4] = {0, 500, 0, 500};
  ASSERT_EQ(fi_fetch_atomic(a_.ep, max_with, 4, nullptr, old, nullptr, b_.addr, at(words), key_,
                            FI_UINT64, FI_MAX, &context_),
            0);
  ASSERT_EQ(done(), 1);
  EXPECT_EQ(last_flags_, FI_ATOMIC | FI_READ);
  EXPECT_EQ(old[0], 101u);
  EXPECT_EQ(old[1], 103u);
  EXPECT_EQ(words[1], 500u);
  EXPECT_EQ(words[2], 105u);

  const uint64_t compare = 101, swap_in = 7;
  uint64_t before = 0;
  ASSERT_EQ(fi_compare_atomic(a_.ep, &swap_in, 1, nullptr, &compare, nullptr, &before, nullptr,
                              b_.addr, at(words), key_, FI_UINT64, FI_CSWAP, &context_),
            0);
  ASSERT_EQ(done(), 1);
  EXPECT_EQ(before, 101u);
  EXPECT_EQ(words[0], 7u);
  // Not equal any more: no swap, the old value still comes back.
  ASSERT_EQ(fi_compare_atomic(a_.ep, &swap_in, 1, nullptr, &compare, nullptr, &before, nullptr,
                              b_.addr, at(words), key_, FI_UINT64, FI_CSWAP, &context_),
            0);
  ASSERT_EQ(done(), 1);
  EXPECT_EQ(before, 7u);
  EXPECT_EQ(words[0], 7u);
  // MSWAP: only the bits of the mask (compare) take the operand's bits.
  const uint64_t mask = 0xF0, bits = 0xAB;
  ASSERT_EQ(fi_compare_atomic(a_.ep, &bits, 1, nullptr, &mask, nullptr, &before, nullptr, b_.addr,
                              at(words + 3), key_, FI_UINT64, FI_MSWAP, &context_),
            0);
  ASSERT_EQ(done(), 1);
  EXPECT_EQ(words[3], (before & ~mask) | (bits & mask));
}

// fi_atomic(3)'s vector calls take up to tx_attr->iov_limit arrays of
// operands, compare values and results each: a compare atomic of eight of
// each (libfabric's fi_ubertest sends such) lands whole.
TEST_F(Atomic, CompareAtomicvWithTheIovLimitOfEachArray) {
  const size_t limit = domain_.info->tx_attr->iov_limit;
  ASSERT_GE(limit, 5u) << "a limit this low never needs more than the engine's parts";
  auto* bytes = region_;
  constexpr size_t kPerPart = 3;
  const size_t count = limit * kPerPart;
  std::vector<uint8_t> operands(count), compares(count), results(count, 0xEE);
  for (size_t i = 0; i < count; ++i) {
    bytes[i] = static_cast<uint8_t>(i);
    compares[i] = static_cast<uint8_t>(i % 2 == 0 ? i : i + 100);  // every other one matches
    operands[i] = static_cast<uint8_t>(200 + i);
  }
  std::vector<fi_ioc> operand_iov, compare_iov, result_iov;
  for (size_t part = 0; part < limit; ++part) {
    operand_iov.push_back({operands.data() + part * kPerPart, kPerPart});
    compare_iov.push_back({compares.data() + part * kPerPart, kPerPart});
    result_iov.push_back({results.data() + part * kPerPart, kPerPart});
  }
  ASSERT_EQ(fi_compare_atomicv(a_.ep, operand_iov.data(), nullptr, limit, compare_iov.data(),
                               nullptr, limit, result_iov.data(), nullptr, limit, b_.addr,
                               at(bytes), key_, FI_UINT8, FI_CSWAP, &context_),
            0);
  ASSERT_EQ(done(), 1);
  for (size_t i = 0; i < count; ++i) {
    EXPECT_EQ(results[i], static_cast<uint8_t>(i)) << "element " << i;
    EXPECT_EQ(bytes[i], i % 2 == 0 ? static_cast<uint8_t>(200 + i) : static_cast<uint8_t>(i))
        << "element " << i;
  }
  // One more than the limit is the caller's error, at the call.
  operand_iov.push_back({operands.data(), 1});
  compare_iov.push_back({compares.data(), 1});
  result_iov.push_back({results.data(), 1});
  EXPECT_EQ(fi_compare_atomicv(a_.ep, operand_iov.data(), nullptr, limit + 1, compare_iov.data(),
                               nullptr, limit + 1, result_iov.data(), nullptr, limit + 1, b_.addr,
                               at(bytes), key_, FI_UINT8, FI_CSWAP, &context_),
            -FI_EINVAL);
}

TEST_F(Atomic, FloatingAndComplexSums) {
  auto* d = reinterpret_cast<double*>(region_);
  d[0] = 1.5;
  const double half = 0.25;
  ASSERT_EQ(fi_atomic(a_.ep, &half, 1, nullptr, b_.addr, at(d), key_, FI_DOUBLE, FI_SUM, &context_),
            0);
  ASSERT_EQ(done(), 1);
  EXPECT_EQ(d[0], 1.75);
  auto* z = reinterpret_cast<std::complex<double>*>(region_ + 64);
  z[0] = {1, 2};
  const std::complex<double> by{0, 1};
  ASSERT_EQ(fi_atomic(a_.ep, &by, 1, nullptr, b_.addr, at(z), key_, FI_DOUBLE_COMPLEX, FI_PROD,
                      &context_),
            0);
  ASSERT_EQ(done(), 1);
  EXPECT_EQ(z[0], std::complex<double>(-2, 1));
}

TEST_F(Atomic, AtomicReadTakesANullBuffer) {
  auto* w = reinterpret_cast<uint32_t*>(region_ + 128);
  w[0] = 0xDEADBEEF;
  w[1] = 42;
  uint32_t out[2] = {};
  ASSERT_EQ(fi_fetch_atomic(a_.ep, nullptr, 2, nullptr, out, nullptr, b_.addr, at(w), key_,
                            FI_UINT32, FI_ATOMIC_READ, &context_),
            0);
  ASSERT_EQ(done(), 1);
  EXPECT_EQ(out[0], 0xDEADBEEFu);
  EXPECT_EQ(out[1], 42u);
}

TEST_F(Atomic, ResultsOrComparesWithNoAddressAreEINVAL) {
  auto* w = reinterpret_cast<uint64_t*>(region_ + 192);
  w[0] = 5;
  uint64_t operand = 1, compare = 5, result = 0;
  EXPECT_EQ(fi_fetch_atomic(a_.ep, &operand, 1, nullptr, nullptr, nullptr, b_.addr, at(w), key_,
                            FI_UINT64, FI_SUM, &context_),
            -FI_EINVAL);
  EXPECT_EQ(fi_compare_atomic(a_.ep, &operand, 1, nullptr, nullptr, nullptr, &result, nullptr,
                              b_.addr, at(w), key_, FI_UINT64, FI_CSWAP, &context_),
            -FI_EINVAL);
  fi_ioc operands[2] = {{&operand, 1}, {nullptr, 1}};
  EXPECT_EQ(
      fi_atomicv(a_.ep, operands, nullptr, 2, b_.addr, at(w), key_, FI_UINT64, FI_SUM, &context_),
      -FI_EINVAL);
  EXPECT_TRUE(stays_empty(a_.tx_cq, 0.1)) << "a refused atomic must not complete";
  EXPECT_EQ(w[0], 5u) << "a refused atomic reached the target";
  // The endpoint goes on.
  ASSERT_EQ(fi_compare_atomic(a_.ep, &operand, 1, nullptr, &compare, nullptr, &result, nullptr,
                              b_.addr, at(w), key_, FI_UINT64, FI_CSWAP, &context_),
            0);
  ASSERT_EQ(done(), 1);
  EXPECT_EQ(result, 5u);
  EXPECT_EQ(w[0], 1u);
}

TEST_F(Atomic, InjectFreesTheOperand) {
  auto* w = reinterpret_cast<int64_t*>(region_ + 256);
  w[0] = 10;
  int64_t delta = -3;
  ASSERT_EQ(fi_inject_atomic(a_.ep, &delta, 1, b_.addr, at(w), key_, FI_INT64, FI_SUM), 0);
  delta = 1000;  // copied at the call
  int64_t now = 0;
  ASSERT_EQ(fi_fetch_atomic(a_.ep, nullptr, 1, nullptr, &now, nullptr, b_.addr, at(w), key_,
                            FI_INT64, FI_ATOMIC_READ, &context_),
            0);
  ASSERT_EQ(done(), 1);
  EXPECT_EQ(now, 7);
  EXPECT_TRUE(stays_empty(a_.tx_cq));
}

TEST_F(Atomic, ValidAndQueryAgreeWithTheMatrix) {
  size_t count = 0;
  EXPECT_EQ(fi_atomicvalid(a_.ep, FI_UINT64, FI_SUM, &count), 0);
  EXPECT_GT(count, 0u);
  fi_atomic_attr attr{};
  ASSERT_EQ(fi_query_atomic(domain_.domain, FI_UINT64, FI_SUM, &attr, 0), 0);
  EXPECT_EQ(attr.size, 8u);
  EXPECT_EQ(attr.count, count);
  // Bitwise ops on floats, ordering on complex, MSWAP on floats: refused.
  EXPECT_EQ(fi_atomicvalid(a_.ep, FI_DOUBLE, FI_BOR, &count), -FI_EOPNOTSUPP);
  EXPECT_EQ(fi_fetch_atomicvalid(a_.ep, FI_FLOAT_COMPLEX, FI_MIN, &count), -FI_EOPNOTSUPP);
  EXPECT_EQ(fi_compare_atomicvalid(a_.ep, FI_FLOAT, FI_MSWAP, &count), -FI_EOPNOTSUPP);
  // Wrong class: CSWAP is not a base op, ATOMIC_READ only a fetch one.
  EXPECT_EQ(fi_atomicvalid(a_.ep, FI_UINT64, FI_CSWAP, &count), -FI_EOPNOTSUPP);
  EXPECT_EQ(fi_atomicvalid(a_.ep, FI_UINT64, FI_ATOMIC_READ, &count), -FI_EOPNOTSUPP);
  EXPECT_EQ(fi_fetch_atomicvalid(a_.ep, FI_UINT64, FI_ATOMIC_READ, &count), 0);
  EXPECT_EQ(fi_compare_atomicvalid(a_.ep, FI_INT128, FI_CSWAP_GE, &count), 0);
  EXPECT_EQ(fi_query_atomic(domain_.domain, FI_UINT64, FI_CSWAP, &attr,
                            FI_FETCH_ATOMIC | FI_COMPARE_ATOMIC),
            -FI_EINVAL);
  EXPECT_EQ(fi_query_atomic(domain_.domain, FI_UINT64, FI_SUM, &attr, FI_TAGGED), -FI_EOPNOTSUPP);
  ASSERT_EQ(
      fi_query_atomic(domain_.domain, FI_LONG_DOUBLE_COMPLEX, FI_CSWAP, &attr, FI_COMPARE_ATOMIC),
      0);
  EXPECT_EQ(attr.size, sizeof(long double) * 2);
  // The call refuses what valid refuses, and counts above the maximum.
  const double one = 1;
  EXPECT_EQ(
      fi_atomic(a_.ep, &one, 1, nullptr, b_.addr, at(region_), key_, FI_DOUBLE, FI_BOR, &context_),
      -FI_EOPNOTSUPP);
  ASSERT_EQ(fi_atomicvalid(a_.ep, FI_UINT8, FI_SUM, &count), 0);
  std::vector<uint8_t> many(count + 1, 1);
  EXPECT_EQ(fi_atomic(a_.ep, many.data(), many.size(), nullptr, b_.addr, at(region_), key_,
                      FI_UINT8, FI_SUM, &context_),
            -FI_EMSGSIZE);
}

TEST_F(Atomic, TargetChecksRefuseBeforeTouchingMemory) {
  fi_cq_err_entry error{};
  const uint64_t one = 1;
  ASSERT_EQ(fi_atomic(a_.ep, &one, 1, nullptr, b_.addr, at(region_), key_ + 1, FI_UINT64, FI_SUM,
                      &context_),
            0);
  ASSERT_EQ(done(&error), -FI_EAVAIL);
  EXPECT_EQ(error.err, FI_EKEYREJECTED);
  ASSERT_EQ(fi_atomic(a_.ep, &one, 1, nullptr, b_.addr, at(region_ + sizeof(region_)), key_,
                      FI_UINT64, FI_SUM, &context_),
            0);
  ASSERT_EQ(done(&error), -FI_EAVAIL);
  EXPECT_EQ(error.err, FI_EFAULT);
  ASSERT_EQ(fi_atomic(a_.ep, &one, 1, nullptr, b_.addr, at(region_ + 1), key_, FI_UINT64, FI_SUM,
                      &context_),
            0);
  ASSERT_EQ(done(&error), -FI_EAVAIL);
  EXPECT_EQ(error.err, FI_EINVAL) << "an unaligned element";
  alignas(8) uint64_t read_only = 5;
  fid_mr* ro = nullptr;
  ASSERT_EQ(fi_mr_reg(domain_.domain, &read_only, sizeof(read_only), FI_REMOTE_READ, 0, 0, 0, &ro,
                      nullptr),
            0);
  ASSERT_EQ(fi_atomic(a_.ep, &one, 1, nullptr, b_.addr, at(&read_only), fi_mr_key(ro), FI_UINT64,
                      FI_SUM, &context_),
            0);
  ASSERT_EQ(done(&error), -FI_EAVAIL);
  EXPECT_EQ(error.err, FI_EACCES);
  uint64_t seen = 0;
  ASSERT_EQ(fi_fetch_atomic(a_.ep, nullptr, 1, nullptr, &seen, nullptr, b_.addr, at(&read_only),
                            fi_mr_key(ro), FI_UINT64, FI_ATOMIC_READ, &context_),
            0);
  ASSERT_EQ(done(), 1) << "reading needs only FI_REMOTE_READ";
  EXPECT_EQ(seen, 5u);
  EXPECT_EQ(read_only, 5u);
  EXPECT_EQ(fi_close(&ro->fid), 0);
  for (uint8_t byte : region_) ASSERT_EQ(byte, 0);
}

TEST_F(Atomic, TwoInitiatorsOnTwoThreadsLoseNoUpdate) {
  TestEndpoint c;
  ASSERT_EQ(c.open(domain_.domain, domain_.av, domain_.info), 0);
  auto* counter = reinterpret_cast<uint64_t*>(region_ + 512);
  constexpr int kEach = 300;
  auto hammer = [&](TestEndpoint& from) {
    const uint64_t one = 1;
    for (int i = 0; i < kEach; ++i) {
      ssize_t ret;
      while ((ret = fi_atomic(from.ep, &one, 1, nullptr, b_.addr, at(counter), key_, FI_UINT64,
                              FI_SUM, nullptr)) == -FI_EAGAIN) {
        fi_cq_data_entry drain;
        fi_cq_read(from.tx_cq, &drain, 0);
      }
      ASSERT_EQ(ret, 0);
      fi_cq_data_entry entry{};
      ASSERT_EQ(wait_for_completion(from.tx_cq, &entry), 1);
    }
  };
  std::thread other([&] { hammer(c); });
  hammer(a_);
  other.join();
  EXPECT_EQ(*counter, 2u * kEach);
  c.close();
}

#if OFI_DPDK_HAVE_FI_FLOAT16 && OFI_DPDK_HAVE_FI_FLOAT8_E4M3 && OFI_DPDK_HAVE_FI_DIFF
// libfabric 2.x: the reduced-precision floats and FI_DIFF through the
// provider, valid calls included (the full matrix is multiproc_memif_atomic's).
TEST_F(Atomic, ReducedFloatsAndDiffOnTwoXHeaders) {
  size_t count = 0;
  EXPECT_EQ(fi_atomicvalid(a_.ep, FI_FLOAT16, FI_SUM, &count), 0);
  fi_atomic_attr attr{};
  ASSERT_EQ(fi_query_atomic(domain_.domain, FI_FLOAT8_E4M3, FI_CSWAP_LT, &attr, FI_COMPARE_ATOMIC),
            0);
  EXPECT_EQ(attr.size, 1u);
  EXPECT_EQ(fi_fetch_atomicvalid(a_.ep, FI_BFLOAT16, FI_DIFF, &count), 0);
  EXPECT_EQ(fi_atomicvalid(a_.ep, FI_FLOAT16, FI_BOR, &count), -FI_EOPNOTSUPP);
  EXPECT_EQ(fi_compare_atomicvalid(a_.ep, FI_FLOAT8_E5M2, FI_MSWAP, &count), -FI_EOPNOTSUPP);
  EXPECT_EQ(fi_compare_atomicvalid(a_.ep, FI_INT64, FI_DIFF, &count), -FI_EOPNOTSUPP);

  // binary16: 1.0 + 2^-11 ties to even and stays 1.0 (0x3C00);
  // 1+2^-10 + 2^-11 ties up to 1+2^-9 (0x3C02).
  auto* halves = reinterpret_cast<uint16_t*>(region_);
  halves[0] = 0x3C00;
  halves[1] = 0x3C01;
  const uint16_t add[2] = {0x1000, 0x1000};
  uint16_t old[2] = {};
  ASSERT_EQ(fi_fetch_atomic(a_.ep, add, 2, nullptr, old, nullptr, b_.addr, at(halves), key_,
                            FI_FLOAT16, FI_SUM, &context_),
            0);
  ASSERT_EQ(done(), 1);
  EXPECT_EQ(old[0], 0x3C00);
  EXPECT_EQ(old[1], 0x3C01);
  EXPECT_EQ(halves[0], 0x3C00);
  EXPECT_EQ(halves[1], 0x3C02);

  // E4M3: 448 + 18 rounds past 448 and becomes NaN (0x7F), its neighbour
  // (1.0 - 0.125 = 0.875, 0x36) is updated in the same request.
  uint8_t* bytes = region_ + 64;
  bytes[0] = 0x7E;
  bytes[1] = 0x38;
  const uint8_t sum_with = 0x59;
  ASSERT_EQ(fi_atomic(a_.ep, &sum_with, 1, nullptr, b_.addr, at(bytes), key_, FI_FLOAT8_E4M3,
                      FI_SUM, &context_),
            0);
  ASSERT_EQ(done(), 1);
  const uint8_t take = 0x20;  // 0.125
  ASSERT_EQ(fi_atomic(a_.ep, &take, 1, nullptr, b_.addr, at(bytes + 1), key_, FI_FLOAT8_E4M3,
                      FI_DIFF, &context_),
            0);
  ASSERT_EQ(done(), 1);
  EXPECT_EQ(bytes[0], 0x7F);
  EXPECT_EQ(bytes[1], 0x36);

  // FI_DIFF on an integer wraps.
  auto* words = reinterpret_cast<int64_t*>(region_ + 128);
  words[0] = INT64_MIN;
  const int64_t one = 1;
  ASSERT_EQ(
      fi_atomic(a_.ep, &one, 1, nullptr, b_.addr, at(words), key_, FI_INT64, FI_DIFF, &context_),
      0);
  ASSERT_EQ(done(), 1);
  EXPECT_EQ(words[0], INT64_MAX);
}
#endif

}  // namespace
}  // namespace ofi_dpdk::test
