// Target-side events and completion flags of fi_rma(3) / fi_atomic(3)
// through stock libfabric on one net_ring port:
//   - FI_RMA_EVENT (fi_getinfo(3)) is granted when asked for; counters
//     bound with FI_REMOTE_READ / FI_REMOTE_WRITE (fi_endpoint(3)) bind and
//     count without it too, as fi_ubertest expects;
//   - those counters count what peers do to the endpoint's memory, by the
//     man page's split (writes and base atomics; reads, fetch and compare
//     atomics), before the initiator sees its completion;
//   - fi_mr_bind(FI_REMOTE_WRITE) counts the writes and atomics that modify
//     that one region (fi_mr(3));
//   - remote CQ data: the target's completion, which consumes no posted
//     receive, so the provider clears the FI_RX_CQ_DATA mode;
//   - FI_FENCE and FI_DELIVERY_COMPLETE on RMA and atomics, and FI_TAGGED
//     atomics refused with -FI_EOPNOTSUPP.
// ofi_rma_event_lossy runs the FI_FENCE and FI_DELIVERY_COMPLETE tests again
// with frames dropped and reordered.
#include <fi_dpdk.h>
#include <gtest/gtest.h>
#include <rdma/fi_atomic.h>
#include <rdma/fi_rma.h>

#include <cstdlib>
#include <cstring>
#include <string>
#include <utility>

#include "test/support/messaging.h"

namespace ofi_dpdk::test {
namespace {

constexpr uint64_t kCaps = FI_MSG | FI_RMA | FI_ATOMIC | FI_RMA_EVENT;

fi_info* rma_info(uint64_t caps, uint64_t mode = 0) {
  fi_info* hints = dpdk_hints();
  hints->caps = caps;
  hints->mode = mode;
  hints->domain_attr->mr_mode = FI_MR_PROV_KEY | FI_MR_VIRT_ADDR;
  fi_info* info = nullptr;
  const int ret = fi_getinfo(FI_VERSION(1, 17), nullptr, nullptr, 0, hints, &info);
  fi_freeinfo(hints);
  return ret == 0 ? info : nullptr;
}

class RmaEvent : public ::testing::Test {
 protected:
  void SetUp() override {
    domain_.info = rma_info(kCaps);
    ASSERT_NE(domain_.info, nullptr);
    ASSERT_EQ(fi_fabric(domain_.info->fabric_attr, &domain_.fabric, nullptr), 0);
    ASSERT_EQ(fi_domain(domain_.fabric, domain_.info, &domain_.domain, nullptr), 0);
    fi_av_attr av_attr{};
    av_attr.type = FI_AV_TABLE;
    ASSERT_EQ(fi_av_open(domain_.domain, &av_attr, &domain_.av, nullptr), 0);
    ASSERT_EQ(a_.open(domain_.domain, domain_.av, domain_.info), 0);
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
    domain_.close();
  }

  fid_cntr* counter() {
    fi_cntr_attr attr{};
    attr.events = FI_CNTR_EVENTS_COMP;
    attr.wait_obj = FI_WAIT_UNSPEC;
    fid_cntr* c = nullptr;
    EXPECT_EQ(fi_cntr_open(domain_.domain, &attr, &c, nullptr), 0);
    return c;
  }

  uint64_t at(const void* p) const { return reinterpret_cast<uint64_t>(p); }

  // Posts until the call stops saying -FI_EAGAIN, then waits for A's
  // completion: 1, or -FI_EAVAIL with the error in *error.
  template <typename Post>
  ssize_t run(Post post, fi_cq_err_entry* error = nullptr) {
    ssize_t ret;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    while ((ret = post()) == -FI_EAGAIN && std::chrono::steady_clock::now() < deadline) {
      fi_cq_data_entry none;
      fi_cq_read(a_.tx_cq, &none, 0);
    }
    EXPECT_EQ(ret, 0) << fi_strerror(static_cast<int>(-ret));
    if (ret != 0) return ret;
    fi_cq_data_entry entry{};
    ret = wait_for_completion(a_.tx_cq, &entry);
    if (ret == -FI_EAVAIL && error != nullptr) {
      *error = {};
      EXPECT_EQ(fi_cq_readerr(a_.tx_cq, error, 0), 1);
    }
    return ret;
  }

  TestDomain domain_;
  TestEndpoint a_;
  alignas(64) uint8_t region_[4096] = {};
  fid_mr* mr_ = nullptr;
  uint64_t key_ = 0;
  int context_ = 0;
};

TEST_F(RmaEvent, GrantedOnlyWhenAskedFor) {
  EXPECT_TRUE(domain_.info->caps & FI_RMA_EVENT);
  EXPECT_TRUE(domain_.info->rx_attr->caps & FI_RMA_EVENT);
  fi_info* plain = rma_info(FI_MSG | FI_RMA | FI_ATOMIC);
  ASSERT_NE(plain, nullptr);
  EXPECT_FALSE(plain->caps & FI_RMA_EVENT);
  fi_freeinfo(plain);
  // fi_getinfo(3): FI_RMA_EVENT needs FI_REMOTE_READ and/or FI_REMOTE_WRITE.
  EXPECT_EQ(rma_info(FI_RMA | FI_READ | FI_WRITE | FI_RMA_EVENT), nullptr);
}

// fi_endpoint(3): FI_REMOTE_READ / FI_REMOTE_WRITE counters "require that
// the endpoint be created using FI_RMA_EVENT" -- the application's side of
// it.  libfabric's fi_ubertest binds them on every endpoint, and the
// utility providers take that: so does ours, and the counter counts what
// peers do all the same.
TEST_F(RmaEvent, RemoteCountersBindAndCountWithoutTheCapability) {
  fi_info* plain = rma_info(FI_MSG | FI_RMA | FI_ATOMIC);
  ASSERT_NE(plain, nullptr);
  ASSERT_FALSE(plain->caps & FI_RMA_EVENT);
  fid_cntr* remote_writes = counter();
  fid_cntr* reads = counter();
  TestEndpoint b;
  fid_cq* b_cq = nullptr;
  fi_cq_attr cq_attr{};
  cq_attr.format = FI_CQ_FORMAT_DATA;
  ASSERT_EQ(fi_cq_open(domain_.domain, &cq_attr, &b_cq, nullptr), 0);
  ASSERT_EQ(fi_endpoint(domain_.domain, plain, &b.ep, nullptr), 0);
  ASSERT_EQ(fi_ep_bind(b.ep, &domain_.av->fid, 0), 0);
  ASSERT_EQ(fi_ep_bind(b.ep, &b_cq->fid, FI_TRANSMIT | FI_RECV), 0);
  EXPECT_EQ(fi_ep_bind(b.ep, &remote_writes->fid, FI_RECV | FI_REMOTE_WRITE), 0);
  EXPECT_EQ(fi_ep_bind(b.ep, &reads->fid, FI_READ | FI_REMOTE_READ), 0);
  EXPECT_EQ(fi_ep_bind(b.ep, &reads->fid, FI_REMOTE_READ), -FI_EALREADY)
      << "each kind of event has one counter";
  ASSERT_EQ(fi_enable(b.ep), 0);
  b.name_len = sizeof(b.name);
  ASSERT_EQ(fi_getname(&b.ep->fid, b.name, &b.name_len), 0);
  ASSERT_EQ(fi_av_insert(domain_.av, b.name, 1, &b.addr, 0, nullptr), 1);

  auto* words = reinterpret_cast<uint64_t*>(region_);
  const uint64_t two = 2;
  uint64_t back = 0;
  ASSERT_EQ(
      run([&] { return fi_write(a_.ep, &two, 8, nullptr, b.addr, at(words), key_, &context_); }),
      1);
  EXPECT_EQ(words[0], 2u);
  EXPECT_EQ(fi_cntr_read(remote_writes), 1u);
  ASSERT_EQ(
      run([&] { return fi_read(a_.ep, &back, 8, nullptr, b.addr, at(words), key_, &context_); }),
      1);
  EXPECT_EQ(back, 2u);
  EXPECT_EQ(fi_cntr_read(reads), 1u);
  EXPECT_EQ(fi_cntr_read(remote_writes), 1u);
  EXPECT_EQ(fi_close(&remote_writes->fid), -FI_EBUSY) << "bound counters stay open";
  EXPECT_EQ(fi_close(&b.ep->fid), 0);
  EXPECT_EQ(fi_close(&b_cq->fid), 0);
  EXPECT_EQ(fi_close(&remote_writes->fid), 0);
  EXPECT_EQ(fi_close(&reads->fid), 0);
  fi_freeinfo(plain);
}

// fi_endpoint(3): FI_REMOTE_WRITE counts "an RMA write or base atomic",
// FI_REMOTE_READ "an RMA read, atomic fetch, or atomic compare", initiated
// by a peer against this endpoint.  fi_atomic(3): the result is visible
// before the target's counter moves, and the counter moves before the
// initiator's completion (the response follows the update).
TEST_F(RmaEvent, EndpointCountersCountWhatPeersDo) {
  fid_cntr* remote_writes = counter();
  fid_cntr* remote_reads = counter();
  TestEndpoint b;
  fid_cq* b_cq = nullptr;
  fi_cq_attr cq_attr{};
  cq_attr.format = FI_CQ_FORMAT_DATA;
  ASSERT_EQ(fi_cq_open(domain_.domain, &cq_attr, &b_cq, nullptr), 0);
  ASSERT_EQ(fi_endpoint(domain_.domain, domain_.info, &b.ep, nullptr), 0);
  ASSERT_EQ(fi_ep_bind(b.ep, &domain_.av->fid, 0), 0);
  ASSERT_EQ(fi_ep_bind(b.ep, &b_cq->fid, FI_TRANSMIT | FI_RECV), 0);
  ASSERT_EQ(fi_ep_bind(b.ep, &remote_writes->fid, FI_REMOTE_WRITE), 0);
  ASSERT_EQ(fi_ep_bind(b.ep, &remote_reads->fid, FI_REMOTE_READ), 0);
  ASSERT_EQ(fi_enable(b.ep), 0);
  b.name_len = sizeof(b.name);
  ASSERT_EQ(fi_getname(&b.ep->fid, b.name, &b.name_len), 0);
  ASSERT_EQ(fi_av_insert(domain_.av, b.name, 1, &b.addr, 0, nullptr), 1);

  auto* words = reinterpret_cast<uint64_t*>(region_);
  const uint64_t one = 1, two = 2;
  uint64_t old = 0, back = 0;
  ASSERT_EQ(
      run([&] { return fi_write(a_.ep, &two, 8, nullptr, b.addr, at(words), key_, &context_); }),
      1);
  EXPECT_EQ(fi_cntr_read(remote_writes), 1u);
  EXPECT_EQ(fi_cntr_read(remote_reads), 0u);
  ASSERT_EQ(run([&] {
              return fi_writedata(a_.ep, &two, 8, nullptr, 77, b.addr, at(words + 1), key_,
                                  &context_);
            }),
            1);
  ASSERT_EQ(run([&] {
              return fi_atomic(a_.ep, &one, 1, nullptr, b.addr, at(words), key_, FI_UINT64, FI_SUM,
                               &context_);
            }),
            1);
  EXPECT_EQ(words[0], 3u);
  EXPECT_EQ(fi_cntr_read(remote_writes), 3u) << "write, writedata, base atomic";
  ASSERT_EQ(
      run([&] { return fi_read(a_.ep, &back, 8, nullptr, b.addr, at(words), key_, &context_); }),
      1);
  ASSERT_EQ(run([&] {
              return fi_fetch_atomic(a_.ep, &one, 1, nullptr, &old, nullptr, b.addr, at(words),
                                     key_, FI_UINT64, FI_SUM, &context_);
            }),
            1);
  ASSERT_EQ(run([&] {
              return fi_fetch_atomic(a_.ep, nullptr, 1, nullptr, &old, nullptr, b.addr, at(words),
                                     key_, FI_UINT64, FI_ATOMIC_READ, &context_);
            }),
            1);
  ASSERT_EQ(run([&] {
              return fi_compare_atomic(a_.ep, &one, 1, nullptr, &two, nullptr, &old, nullptr,
                                       b.addr, at(words), key_, FI_UINT64, FI_CSWAP, &context_);
            }),
            1);
  EXPECT_EQ(fi_cntr_read(remote_reads), 4u) << "read, fetch, atomic read, compare";
  EXPECT_EQ(fi_cntr_read(remote_writes), 3u);
  // A refused request (unknown key) counts nothing at the target.
  fi_cq_err_entry error{};
  ASSERT_EQ(
      run([&] { return fi_write(a_.ep, &two, 8, nullptr, b.addr, at(words), key_ + 1, &context_); },
          &error),
      -FI_EAVAIL);
  EXPECT_EQ(error.err, FI_EKEYREJECTED);
  EXPECT_EQ(fi_cntr_read(remote_writes), 3u);
  EXPECT_EQ(fi_cntr_readerr(remote_writes), 0u);
  // The writedata's CQ data is the target's one completion.
  fi_cq_data_entry entry{};
  ASSERT_EQ(wait_for_completion(b_cq, &entry), 1);
  EXPECT_EQ(entry.flags, FI_RMA | FI_REMOTE_WRITE | FI_REMOTE_CQ_DATA);
  EXPECT_TRUE(stays_empty(b_cq));

  EXPECT_EQ(fi_close(&b.ep->fid), 0);
  EXPECT_EQ(fi_close(&b_cq->fid), 0);
  EXPECT_EQ(fi_close(&remote_writes->fid), 0);
  EXPECT_EQ(fi_close(&remote_reads->fid), 0);
}

// fi_mr(3), fi_mr_bind: FI_REMOTE_WRITE "generates an event whenever a
// remote RMA write or atomic operation modifies the memory region", through
// an endpoint with FI_RMA_EVENT.
TEST_F(RmaEvent, RegionCounterCountsChangesToThatRegion) {
  fid_cntr* changes = counter();
  alignas(64) static uint64_t counted[8];
  alignas(64) static uint64_t other[8];
  std::memset(counted, 0, sizeof(counted));
  fid_mr* counted_mr = nullptr;
  fid_mr* other_mr = nullptr;
  ASSERT_EQ(fi_mr_reg(domain_.domain, counted, sizeof(counted), FI_REMOTE_READ | FI_REMOTE_WRITE, 0,
                      0, FI_RMA_EVENT, &counted_mr, nullptr),
            0);
  ASSERT_EQ(fi_mr_reg(domain_.domain, other, sizeof(other), FI_REMOTE_READ | FI_REMOTE_WRITE, 0, 0,
                      0, &other_mr, nullptr),
            0);
  EXPECT_EQ(fi_mr_bind(counted_mr, &changes->fid, FI_REMOTE_READ), -FI_EBADFLAGS)
      << "fi_mr(3) names only FI_REMOTE_WRITE";
  EXPECT_EQ(fi_mr_bind(counted_mr, &a_.ep->fid, 0), -FI_EINVAL) << "no FI_MR_ENDPOINT";
  ASSERT_EQ(fi_mr_bind(counted_mr, &changes->fid, FI_REMOTE_WRITE), 0);
  EXPECT_EQ(fi_mr_bind(counted_mr, &changes->fid, FI_REMOTE_WRITE), -FI_EALREADY);
  EXPECT_EQ(fi_mr_enable(counted_mr), 0);
  const uint64_t counted_key = fi_mr_key(counted_mr);
  const uint64_t other_key = fi_mr_key(other_mr);

  TestEndpoint b;
  ASSERT_EQ(b.open(domain_.domain, domain_.av, domain_.info), 0);
  const uint64_t five = 5, nine = 9;
  uint64_t old = 0;
  ASSERT_EQ(run([&] {
              return fi_write(a_.ep, &five, 8, nullptr, b.addr, at(counted), counted_key,
                              &context_);
            }),
            1);
  ASSERT_EQ(run([&] {
              return fi_write(a_.ep, &five, 8, nullptr, b.addr, at(other), other_key, &context_);
            }),
            1);
  EXPECT_EQ(fi_cntr_read(changes), 1u) << "only the bound region counts";
  ASSERT_EQ(run([&] {
              return fi_atomic(a_.ep, &five, 1, nullptr, b.addr, at(counted + 1), counted_key,
                               FI_UINT64, FI_SUM, &context_);
            }),
            1);
  ASSERT_EQ(run([&] {
              return fi_read(a_.ep, &old, 8, nullptr, b.addr, at(counted), counted_key, &context_);
            }),
            1);
  ASSERT_EQ(run([&] {
              return fi_fetch_atomic(a_.ep, nullptr, 1, nullptr, &old, nullptr, b.addr, at(counted),
                                     counted_key, FI_UINT64, FI_ATOMIC_READ, &context_);
            }),
            1);
  EXPECT_EQ(fi_cntr_read(changes), 2u) << "reads do not modify the region";
  // A compare atomic may modify the region: counted whether it swapped or not.
  ASSERT_EQ(run([&] {
              return fi_compare_atomic(a_.ep, &nine, 1, nullptr, &nine, nullptr, &old, nullptr,
                                       b.addr, at(counted), counted_key, FI_UINT64, FI_CSWAP,
                                       &context_);
            }),
            1);
  EXPECT_EQ(counted[0], 5u);
  EXPECT_EQ(fi_cntr_read(changes), 3u);

  // Through an endpoint without FI_RMA_EVENT, the region's counter stays.
  fi_info* plain = rma_info(FI_MSG | FI_RMA | FI_ATOMIC);
  ASSERT_NE(plain, nullptr);
  TestEndpoint quiet;
  ASSERT_EQ(quiet.open(domain_.domain, domain_.av, plain), 0);
  ASSERT_EQ(run([&] {
              return fi_write(a_.ep, &nine, 8, nullptr, quiet.addr, at(counted), counted_key,
                              &context_);
            }),
            1);
  EXPECT_EQ(counted[0], 9u);
  EXPECT_EQ(fi_cntr_read(changes), 3u);
  quiet.close();
  fi_freeinfo(plain);

  b.close();
  EXPECT_EQ(fi_close(&changes->fid), -FI_EBUSY) << "the region holds its counter";
  EXPECT_EQ(fi_close(&counted_mr->fid), 0);
  EXPECT_EQ(fi_close(&other_mr->fid), 0);
  EXPECT_EQ(fi_close(&changes->fid), 0);
}

// fi_getinfo(3), FI_RX_CQ_DATA: with it, remote CQ data "will consume a
// receive buffer at the target".  The provider does not need that (the
// completion is made without a buffer), so it clears the mode, and a
// writedata leaves the posted receive for the next message.  fi_cq(3): such
// a completion has op_context NULL.
TEST_F(RmaEvent, RemoteCqDataConsumesNoReceiveAndTheModeIsCleared) {
  fi_info* info = rma_info(FI_MSG | FI_RMA, FI_RX_CQ_DATA | FI_CONTEXT);
  ASSERT_NE(info, nullptr);
  EXPECT_EQ(info->mode & FI_RX_CQ_DATA, 0u);
  EXPECT_EQ(info->rx_attr->mode & FI_RX_CQ_DATA, 0u);
  TestEndpoint b;
  ASSERT_EQ(b.open(domain_.domain, domain_.av, info), 0);
  char received[32] = {};
  ASSERT_EQ(fi_recv(b.ep, received, sizeof(received), nullptr, FI_ADDR_UNSPEC, received), 0);

  const char text[] = "remote data";
  ASSERT_EQ(run([&] {
              return fi_writedata(a_.ep, text, sizeof(text), nullptr, 0x1234, b.addr,
                                  at(region_ + 64), key_, &context_);
            }),
            1);
  ASSERT_EQ(fi_inject_writedata(a_.ep, text, 4, 0x5678, b.addr, at(region_ + 128), key_), 0);
  iovec iov{const_cast<char*>(text), sizeof(text)};
  fi_rma_iov remote{at(region_ + 256), sizeof(text), key_};
  fi_msg_rma msg{};
  msg.msg_iov = &iov;
  msg.iov_count = 1;
  msg.addr = b.addr;
  msg.rma_iov = &remote;
  msg.rma_iov_count = 1;
  msg.context = &context_;
  msg.data = 0x9ABC;
  ASSERT_EQ(run([&] { return fi_writemsg(a_.ep, &msg, FI_REMOTE_CQ_DATA | FI_COMPLETION); }), 1);
  const std::pair<uint64_t, size_t> expected[] = {
      {0x1234, sizeof(text)}, {0x5678, 4}, {0x9ABC, sizeof(text)}};
  for (const auto& [data, length] : expected) {
    fi_cq_data_entry entry{};
    ASSERT_EQ(wait_for_completion(b.rx_cq, &entry), 1);
    EXPECT_EQ(entry.flags, FI_RMA | FI_REMOTE_WRITE | FI_REMOTE_CQ_DATA);
    EXPECT_EQ(entry.data, data);
    EXPECT_EQ(entry.op_context, nullptr);
    EXPECT_EQ(entry.len, length) << "the bytes the write placed (fi_cq(3), libfabric 2.x)";
  }
  EXPECT_EQ(std::memcmp(region_ + 64, text, sizeof(text)), 0);
  EXPECT_EQ(std::memcmp(region_ + 256, text, sizeof(text)), 0);
  // The receive is still posted: the next message lands in it.
  ASSERT_EQ(run([&] { return fi_send(a_.ep, "msg", 4, nullptr, b.addr, &context_); }), 1);
  fi_cq_data_entry entry{};
  ASSERT_EQ(wait_for_completion(b.rx_cq, &entry), 1);
  EXPECT_EQ(entry.op_context, received);
  EXPECT_EQ(entry.flags, FI_MSG | FI_RECV);
  EXPECT_STREQ(received, "msg");
  // Without FI_REMOTE_CQ_DATA a write makes no completion at the target.
  ASSERT_EQ(
      run([&] { return fi_write(a_.ep, text, 4, nullptr, b.addr, at(region_), key_, &context_); }),
      1);
  EXPECT_TRUE(stays_empty(b.rx_cq));
  b.close();
  fi_freeinfo(info);
}

// fi_atomic(3) / fi_rma(3), FI_FENCE: the fenced operation "will see and/or
// replace the results of any operations initiated prior".  Many unwaited
// sums and writes, then a fenced fetch or read: it must see all of them.
// (ofi_rma_event_lossy runs this with frames dropped and reordered.)
TEST_F(RmaEvent, FencedOperationsSeeEverythingBefore) {
  TestEndpoint b;
  ASSERT_EQ(b.open(domain_.domain, domain_.av, domain_.info), 0);
  auto* sum = reinterpret_cast<uint64_t*>(region_);
  auto* bytes = region_ + 1024;
  const uint64_t one = 1;
  uint64_t expected = 0;
  for (int round = 0; round < 40; ++round) {
    for (int i = 0; i < 8; ++i, ++expected) {
      ssize_t ret;
      while ((ret = fi_inject_atomic(a_.ep, &one, 1, b.addr, at(sum), key_, FI_UINT64, FI_SUM)) ==
             -FI_EAGAIN) {
        fi_cq_data_entry none;
        fi_cq_read(a_.tx_cq, &none, 0);
      }
      ASSERT_EQ(ret, 0);
    }
    const uint8_t fill = static_cast<uint8_t>(round + 1);
    uint8_t block[512];
    std::memset(block, fill, sizeof(block));
    ASSERT_EQ(fi_inject_write(a_.ep, block, 64, b.addr, at(bytes), key_), 0);
    ASSERT_EQ(fi_write(a_.ep, block, sizeof(block), nullptr, b.addr, at(bytes), key_, nullptr), 0);

    uint64_t seen = 0;
    fi_ioc result{&seen, 1};
    fi_rma_ioc target{at(sum), 1, key_};
    fi_msg_atomic fetch{};
    fetch.addr = b.addr;
    fetch.rma_iov = &target;
    fetch.rma_iov_count = 1;
    fetch.datatype = FI_UINT64;
    fetch.op = FI_ATOMIC_READ;
    fetch.context = &context_;
    uint8_t back[512] = {};
    iovec into{back, sizeof(back)};
    fi_rma_iov from{at(bytes), sizeof(back), key_};
    fi_msg_rma read{};
    read.msg_iov = &into;
    read.iov_count = 1;
    read.addr = b.addr;
    read.rma_iov = &from;
    read.rma_iov_count = 1;
    read.context = &context_;
    ASSERT_EQ(fi_fetch_atomicmsg(a_.ep, &fetch, &result, nullptr, 1, FI_FENCE), 0);
    ASSERT_EQ(fi_readmsg(a_.ep, &read, FI_FENCE), 0);
    // The unwaited write's completion comes first (no context), then the
    // fenced fetch and read.
    int fenced = 0;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (fenced < 3 && std::chrono::steady_clock::now() < deadline) {
      fi_cq_data_entry entry{};
      const ssize_t ret = fi_cq_read(a_.tx_cq, &entry, 1);
      ASSERT_NE(ret, -FI_EAVAIL);
      if (ret == 1) ++fenced;
    }
    ASSERT_EQ(fenced, 3);
    EXPECT_EQ(seen, expected) << "round " << round;
    for (uint8_t byte : back) ASSERT_EQ(byte, fill) << "round " << round;
  }
  // The lossy run must have been lossy.
  if (std::getenv("FI_DPDK_FAULT_DROP") != nullptr) {
    fi_dpdk_ops_stats* stats = nullptr;
    ASSERT_EQ(fi_open_ops(&domain_.domain->fid, FI_DPDK_STATS_OPS_NAME, 0,
                          reinterpret_cast<void**>(&stats), nullptr),
              0);
    fi_dpdk_port_stats port{};
    ASSERT_EQ(stats->port_stats(domain_.domain, &port), 0);
    EXPECT_GT(port.fault_dropped, 0u);
    EXPECT_GT(port.fault_reordered, 0u);
  }
  b.close();
}

// FI_DELIVERY_COMPLETE: "a completion should be generated when the
// operation has been processed by the destination" -- once the initiator
// sees it, the target's memory holds the result.  Checked right at the
// completion, in this process, with no progress in between.
TEST_F(RmaEvent, DeliveryCompleteMeansTheTargetHoldsTheResult) {
  TestEndpoint b;
  ASSERT_EQ(b.open(domain_.domain, domain_.av, domain_.info), 0);
  auto* words = reinterpret_cast<uint64_t*>(region_ + 2048);
  words[0] = 10;
  words[1] = 20;
  const uint64_t add = 5;
  fi_ioc operand{const_cast<uint64_t*>(&add), 1};
  fi_rma_ioc target{at(words), 1, key_};
  fi_msg_atomic msg{};
  msg.msg_iov = &operand;
  msg.iov_count = 1;
  msg.addr = b.addr;
  msg.rma_iov = &target;
  msg.rma_iov_count = 1;
  msg.datatype = FI_UINT64;
  msg.op = FI_SUM;
  msg.context = &context_;
  for (int i = 1; i <= 50; ++i) {
    ASSERT_EQ(run([&] { return fi_atomicmsg(a_.ep, &msg, FI_DELIVERY_COMPLETE); }), 1);
    ASSERT_EQ(words[0], 10u + 5u * i);
  }
  const uint64_t compare = 20, swap_in = 99;
  uint64_t old = 0;
  fi_ioc compare_ioc{const_cast<uint64_t*>(&compare), 1};
  fi_ioc swap_ioc{const_cast<uint64_t*>(&swap_in), 1};
  fi_ioc result{&old, 1};
  target.addr = at(words + 1);
  msg.msg_iov = &swap_ioc;
  msg.op = FI_CSWAP;
  ASSERT_EQ(run([&] {
              return fi_compare_atomicmsg(a_.ep, &msg, &compare_ioc, nullptr, 1, &result, nullptr,
                                          1, FI_DELIVERY_COMPLETE);
            }),
            1);
  EXPECT_EQ(old, 20u);
  EXPECT_EQ(words[1], 99u);
  const char text[] = "delivered";
  iovec iov{const_cast<char*>(text), sizeof(text)};
  fi_rma_iov remote{at(region_ + 3000), sizeof(text), key_};
  fi_msg_rma write{};
  write.msg_iov = &iov;
  write.iov_count = 1;
  write.addr = b.addr;
  write.rma_iov = &remote;
  write.rma_iov_count = 1;
  write.context = &context_;
  ASSERT_EQ(run([&] { return fi_writemsg(a_.ep, &write, FI_DELIVERY_COMPLETE); }), 1);
  EXPECT_EQ(std::memcmp(region_ + 3000, text, sizeof(text)), 0);
  b.close();
}

// fi_atomic(3), FI_TAGGED: atomics on tagged receive buffers are not
// built; fi_query_atomic says so and the calls refuse the flag the same way.
TEST_F(RmaEvent, TaggedAtomicsAreRefusedAsUnsupported) {
  fi_atomic_attr attr{};
  EXPECT_EQ(fi_query_atomic(domain_.domain, FI_UINT64, FI_SUM, &attr, FI_TAGGED), -FI_EOPNOTSUPP);
  uint64_t value = 1, old = 0;
  fi_ioc operand{&value, 1};
  fi_ioc result{&old, 1};
  fi_rma_ioc target{0, 1, 7};
  fi_msg_atomic msg{};
  msg.msg_iov = &operand;
  msg.iov_count = 1;
  msg.addr = a_.addr;
  msg.rma_iov = &target;
  msg.rma_iov_count = 1;
  msg.datatype = FI_UINT64;
  msg.op = FI_SUM;
  EXPECT_EQ(fi_atomicmsg(a_.ep, &msg, FI_TAGGED), -FI_EOPNOTSUPP);
  EXPECT_EQ(fi_fetch_atomicmsg(a_.ep, &msg, &result, nullptr, 1, FI_TAGGED), -FI_EOPNOTSUPP);
  msg.op = FI_CSWAP;
  EXPECT_EQ(fi_compare_atomicmsg(a_.ep, &msg, &operand, nullptr, 1, &result, nullptr, 1, FI_TAGGED),
            -FI_EOPNOTSUPP);
  EXPECT_TRUE(stays_empty(a_.tx_cq));
}

}  // namespace
}  // namespace ofi_dpdk::test
