// fi_rma(3) through stock libfabric on one net_ring port: writes and reads
// land byte-exact (small, multi-segment, iov), remote CQ data reaches the
// target, inject frees the buffer, counters count both sides, and the
// target's checks (key, range, access, capability) fail the operation with
// its documented error before any byte moves, and a read gets what the
// region held when it was served, though the region is closed or rewritten
// (after the read was counted) while the answer is on its way, and a write
// whose region closes while it arrives fails and lands no more.  Run for offset addressing
// (mr_mode without FI_MR_VIRT_ADDR) and for virtual addresses.
#include <gtest/gtest.h>
#include <rdma/fi_rma.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "test/support/messaging.h"

namespace ofi_dpdk::test {
namespace {

constexpr size_t kRegion = 2 << 20;

std::vector<uint8_t> pattern(size_t length, unsigned seed) {
  std::vector<uint8_t> bytes(length);
  for (size_t i = 0; i < length; ++i) bytes[i] = static_cast<uint8_t>(i * 13 + seed * 7 + 1);
  return bytes;
}

class Rma : public ::testing::TestWithParam<bool> {
 protected:
  bool virtual_addresses() const { return GetParam(); }

  void SetUp() override {
    fi_info* hints = dpdk_hints();
    // FI_RMA_EVENT: the counter test binds an FI_REMOTE_WRITE counter.
    hints->caps = FI_MSG | FI_RMA | FI_RMA_EVENT;
    hints->domain_attr->mr_mode = FI_MR_PROV_KEY | (virtual_addresses() ? FI_MR_VIRT_ADDR : 0);
    ASSERT_EQ(fi_getinfo(FI_VERSION(1, 17), nullptr, nullptr, 0, hints, &domain_.info), 0);
    fi_freeinfo(hints);
    ASSERT_EQ(domain_.info->domain_attr->mr_mode & FI_MR_VIRT_ADDR,
              virtual_addresses() ? FI_MR_VIRT_ADDR : 0);
    ASSERT_TRUE(domain_.info->caps & FI_RMA);
    ASSERT_EQ(fi_fabric(domain_.info->fabric_attr, &domain_.fabric, nullptr), 0);
    ASSERT_EQ(fi_domain(domain_.fabric, domain_.info, &domain_.domain, nullptr), 0);
    fi_av_attr av_attr{};
    av_attr.type = FI_AV_TABLE;
    ASSERT_EQ(fi_av_open(domain_.domain, &av_attr, &domain_.av, nullptr), 0);
    ASSERT_EQ(a_.open(domain_.domain, domain_.av, domain_.info), 0);
    ASSERT_EQ(b_.open(domain_.domain, domain_.av, domain_.info), 0);
    region_.assign(kRegion, 0xEE);
    ASSERT_EQ(fi_mr_reg(domain_.domain, region_.data(), region_.size(),
                        FI_REMOTE_READ | FI_REMOTE_WRITE, 0, 0, 0, &mr_, nullptr),
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

  // The remote address of byte `offset` of the region.
  uint64_t at(size_t offset) const {
    return virtual_addresses() ? reinterpret_cast<uint64_t>(region_.data()) + offset : offset;
  }

  // Waits for the next completion on A's TX CQ: 1 or -FI_EAVAIL (and then
  // the error entry in *error).
  ssize_t completion(fi_cq_data_entry* entry, fi_cq_err_entry* error = nullptr) {
    const ssize_t ret = wait_for_completion(a_.tx_cq, entry);
    if (ret == -FI_EAVAIL && error != nullptr) {
      *error = {};
      EXPECT_EQ(fi_cq_readerr(a_.tx_cq, error, 0), 1);
    }
    return ret;
  }

  TestDomain domain_;
  TestEndpoint a_, b_;
  std::vector<uint8_t> region_;
  fid_mr* mr_ = nullptr;
  uint64_t key_ = 0;
  int context_ = 0;
};

TEST_P(Rma, WriteThenReadBack) {
  for (size_t length : {size_t{1}, size_t{100}, size_t{1436}, size_t{1437}, size_t{1} << 20}) {
    SCOPED_TRACE(length);
    const auto out = pattern(length, static_cast<unsigned>(length));
    ASSERT_EQ(fi_write(a_.ep, out.data(), length, nullptr, b_.addr, at(4096), key_, &context_), 0);
    fi_cq_data_entry entry{};
    ASSERT_EQ(completion(&entry), 1);
    EXPECT_EQ(entry.op_context, &context_);
    EXPECT_EQ(entry.flags, FI_RMA | FI_WRITE);
    EXPECT_EQ(std::memcmp(region_.data() + 4096, out.data(), length), 0);
    EXPECT_EQ(region_[4095], 0xEE) << "wrote before the range";
    EXPECT_EQ(region_[4096 + length], 0xEE) << "wrote past the range";

    std::vector<uint8_t> back(length + 1, 0);
    ASSERT_EQ(fi_read(a_.ep, back.data(), length, nullptr, b_.addr, at(4096), key_, &context_), 0);
    ASSERT_EQ(completion(&entry), 1);
    EXPECT_EQ(entry.flags, FI_RMA | FI_READ);
    EXPECT_EQ(entry.len, length);
    EXPECT_EQ(std::memcmp(back.data(), out.data(), length), 0);
    EXPECT_EQ(back[length], 0) << "read past the buffer";
  }
}

TEST_P(Rma, VectoredWriteAndReadKeepOrder) {
  const auto out = pattern(3000, 3);
  iovec parts[3] = {{const_cast<uint8_t*>(out.data()), 1000},
                    {const_cast<uint8_t*>(out.data()) + 1000, 1},
                    {const_cast<uint8_t*>(out.data()) + 1001, 1999}};
  ASSERT_EQ(fi_writev(a_.ep, parts, nullptr, 3, b_.addr, at(0), key_, &context_), 0);
  fi_cq_data_entry entry{};
  ASSERT_EQ(completion(&entry), 1);
  EXPECT_EQ(std::memcmp(region_.data(), out.data(), 3000), 0);
  std::vector<uint8_t> first(10), rest(2990);
  iovec into[2] = {{first.data(), 10}, {rest.data(), 2990}};
  ASSERT_EQ(fi_readv(a_.ep, into, nullptr, 2, b_.addr, at(0), key_, &context_), 0);
  ASSERT_EQ(completion(&entry), 1);
  EXPECT_EQ(std::memcmp(first.data(), out.data(), 10), 0);
  EXPECT_EQ(std::memcmp(rest.data(), out.data() + 10, 2990), 0);
}

TEST_P(Rma, AsManyIovsAsTheIovLimitSays) {
  // fi_rma(3): a write or read takes up to tx_attr->iov_limit iovecs.
  const size_t limit = domain_.info->tx_attr->iov_limit;
  ASSERT_GE(limit, 2u);
  const auto out = pattern(100 * limit, 5);
  std::vector<iovec> parts(limit);
  for (size_t i = 0; i < limit; ++i) parts[i] = {const_cast<uint8_t*>(out.data()) + 100 * i, 100};
  ASSERT_EQ(fi_writev(a_.ep, parts.data(), nullptr, limit, b_.addr, at(0), key_, &context_), 0);
  fi_cq_data_entry entry{};
  ASSERT_EQ(completion(&entry), 1);
  EXPECT_EQ(std::memcmp(region_.data(), out.data(), out.size()), 0);
  std::vector<uint8_t> back(out.size(), 0);
  for (size_t i = 0; i < limit; ++i) parts[i] = {back.data() + 100 * i, 100};
  ASSERT_EQ(fi_readv(a_.ep, parts.data(), nullptr, limit, b_.addr, at(0), key_, &context_), 0);
  ASSERT_EQ(completion(&entry), 1);
  EXPECT_EQ(back, out);
}

TEST_P(Rma, WritedataReportsTheDataAtTheTarget) {
  const char text[] = "with data";
  ASSERT_EQ(
      fi_writedata(a_.ep, text, sizeof(text), nullptr, 0xC0FFEE, b_.addr, at(100), key_, &context_),
      0);
  fi_cq_data_entry entry{};
  ASSERT_EQ(completion(&entry), 1);
  fi_cq_data_entry remote{};
  ASSERT_EQ(wait_for_completion(b_.rx_cq, &remote), 1);
  EXPECT_EQ(remote.flags, FI_RMA | FI_REMOTE_WRITE | FI_REMOTE_CQ_DATA);
  EXPECT_EQ(remote.data, 0xC0FFEEu);
  // fi_cq(3) of libfabric 2.x: len is what the write placed (1.17 leaves
  // it to receives; fabtests 2.1.0's fi_cq_data -o writedata checks it).
  EXPECT_EQ(remote.len, sizeof(text));
  EXPECT_EQ(std::memcmp(region_.data() + 100, text, sizeof(text)), 0);
}

TEST_P(Rma, WritedataToAFullCqFailsInsteadOfGrowingIt) {
  // fi_rma(3): remote CQ data takes an entry of the target's receive CQ.
  // Expect: the target C's CQ holds 4 entries and C reads none: of twelve
  // zero-length fi_writedata, four land and eight end in FI_ENOSPC error
  // completions at A; C's CQ then holds exactly the first four's data, and
  // once read, room is there again.
  TestEndpoint c;
  ASSERT_EQ(c.open(domain_.domain, domain_.av, domain_.info, FI_CQ_FORMAT_DATA, 0, nullptr, 0,
                   /*cq_size=*/4),
            0);
  for (uint64_t i = 0; i < 12; ++i)
    ASSERT_EQ(fi_writedata(a_.ep, nullptr, 0, nullptr, 0xD000 + i, c.addr, at(0), key_, &context_),
              0);
  size_t landed = 0, refused = 0;
  for (int i = 0; i < 12; ++i) {
    fi_cq_data_entry entry{};
    fi_cq_err_entry error{};
    const ssize_t ret = completion(&entry, &error);
    if (ret == 1) {
      ++landed;
    } else {
      ASSERT_EQ(ret, -FI_EAVAIL);
      EXPECT_EQ(error.err, FI_ENOSPC);
      ++refused;
    }
  }
  EXPECT_EQ(landed, 4u);
  EXPECT_EQ(refused, 8u);
  fi_cq_data_entry entries[16] = {};
  ASSERT_EQ(fi_cq_read(c.rx_cq, entries, 16), 4);
  for (uint64_t i = 0; i < 4; ++i) EXPECT_EQ(entries[i].data, 0xD000 + i);
  EXPECT_EQ(fi_cq_read(c.rx_cq, entries, 16), -FI_EAGAIN);
  ASSERT_EQ(fi_writedata(a_.ep, nullptr, 0, nullptr, 0xE000, c.addr, at(0), key_, &context_), 0);
  fi_cq_data_entry entry{};
  ASSERT_EQ(completion(&entry), 1);
  ASSERT_EQ(wait_for_completion(c.rx_cq, &entries[0]), 1);
  EXPECT_EQ(entries[0].data, 0xE000u);
  c.close();
}

TEST_P(Rma, InjectFreesTheBufferAndMakesNoCompletion) {
  std::string text = "injected";
  ASSERT_EQ(fi_inject_write(a_.ep, text.data(), text.size(), b_.addr, at(200), key_), 0);
  text.assign(text.size(), 'X');  // the provider copied it at the call
  // A read after it, on the same stream, sees it (requests run in order).
  std::vector<char> back(8);
  ASSERT_EQ(fi_read(a_.ep, back.data(), 8, nullptr, b_.addr, at(200), key_, &context_), 0);
  fi_cq_data_entry entry{};
  ASSERT_EQ(completion(&entry), 1);
  EXPECT_EQ(entry.op_context, &context_) << "the inject made a completion";
  EXPECT_EQ(std::string(back.data(), 8), "injected");
  EXPECT_TRUE(stays_empty(a_.tx_cq));
}

TEST_P(Rma, TargetChecksFailTheOperationBeforeAnyByteMoves) {
  const auto out = pattern(64, 9);
  fi_cq_data_entry entry{};
  fi_cq_err_entry error{};
  // No such key.
  ASSERT_EQ(fi_write(a_.ep, out.data(), 64, nullptr, b_.addr, at(0), key_ + 1, &context_), 0);
  ASSERT_EQ(completion(&entry, &error), -FI_EAVAIL);
  EXPECT_EQ(error.err, FI_EKEYREJECTED);
  EXPECT_EQ(error.op_context, &context_);
  // Past the end of the region.
  ASSERT_EQ(fi_write(a_.ep, out.data(), 64, nullptr, b_.addr, at(kRegion - 32), key_, &context_),
            0);
  ASSERT_EQ(completion(&entry, &error), -FI_EAVAIL);
  EXPECT_EQ(error.err, FI_EFAULT);
  std::vector<uint8_t> back(64);
  ASSERT_EQ(fi_read(a_.ep, back.data(), 64, nullptr, b_.addr, at(kRegion), key_, &context_), 0);
  ASSERT_EQ(completion(&entry, &error), -FI_EAVAIL);
  EXPECT_EQ(error.err, FI_EFAULT);
  // A read-only region refuses writes.
  std::vector<uint8_t> read_only(256, 0x55);
  fid_mr* ro = nullptr;
  ASSERT_EQ(fi_mr_reg(domain_.domain, read_only.data(), read_only.size(), FI_REMOTE_READ, 0, 0, 0,
                      &ro, nullptr),
            0);
  const uint64_t ro_at = virtual_addresses() ? reinterpret_cast<uint64_t>(read_only.data()) : 0;
  ASSERT_EQ(fi_write(a_.ep, out.data(), 64, nullptr, b_.addr, ro_at, fi_mr_key(ro), &context_), 0);
  ASSERT_EQ(completion(&entry, &error), -FI_EAVAIL);
  EXPECT_EQ(error.err, FI_EACCES);
  ASSERT_EQ(fi_read(a_.ep, back.data(), 64, nullptr, b_.addr, ro_at, fi_mr_key(ro), &context_), 0);
  ASSERT_EQ(completion(&entry), 1) << "reading it is allowed";
  EXPECT_EQ(back[0], 0x55);
  EXPECT_EQ(fi_close(&ro->fid), 0);
  for (uint8_t byte : read_only) ASSERT_EQ(byte, 0x55);
  for (uint8_t byte : region_) ASSERT_EQ(byte, 0xEE) << "a refused write touched the region";
  // The endpoint still works after errors.
  ASSERT_EQ(fi_write(a_.ep, out.data(), 64, nullptr, b_.addr, at(0), key_, &context_), 0);
  ASSERT_EQ(completion(&entry), 1);
}

TEST_P(Rma, ARegionRegisteredWithNoAddressFailsAccessesWithBytes) {
  // fi_mr_reg(NULL, 4096) is taken (as shm and tcp take it); a peer's
  // access to it with bytes fails with FI_EFAULT instead of reaching
  // address 0 in the target, and the endpoint goes on.
  fid_mr* none = nullptr;
  ASSERT_EQ(fi_mr_reg(domain_.domain, nullptr, 4096, FI_REMOTE_READ | FI_REMOTE_WRITE, 0, 0, 0,
                      &none, nullptr),
            0);
  const auto out = pattern(64, 3);
  std::vector<uint8_t> back(64);
  fi_cq_data_entry entry{};
  fi_cq_err_entry error{};
  ASSERT_EQ(fi_write(a_.ep, out.data(), 64, nullptr, b_.addr, 0, fi_mr_key(none), &context_), 0);
  ASSERT_EQ(completion(&entry, &error), -FI_EAVAIL);
  EXPECT_EQ(error.err, FI_EFAULT);
  ASSERT_EQ(fi_read(a_.ep, back.data(), 64, nullptr, b_.addr, 0, fi_mr_key(none), &context_), 0);
  ASSERT_EQ(completion(&entry, &error), -FI_EAVAIL);
  EXPECT_EQ(error.err, FI_EFAULT);
  EXPECT_EQ(fi_close(&none->fid), 0);
  ASSERT_EQ(fi_write(a_.ep, out.data(), 64, nullptr, b_.addr, at(0), key_, &context_), 0);
  ASSERT_EQ(completion(&entry), 1);
}

TEST_P(Rma, LocalArgumentsAreCheckedAtTheCall) {
  char buffer[8] = {};
  fi_rma_iov remote{at(0), 8, key_};
  iovec local{buffer, 8};
  fi_msg_rma msg{};
  msg.msg_iov = &local;
  msg.iov_count = 1;
  msg.addr = b_.addr;
  msg.rma_iov = &remote;
  msg.rma_iov_count = 2;  // rma_iov_limit is 1
  EXPECT_EQ(fi_writemsg(a_.ep, &msg, 0), -FI_EINVAL);
  msg.rma_iov_count = 1;
  remote.len = 9;  // local and remote lengths differ
  EXPECT_EQ(fi_writemsg(a_.ep, &msg, 0), -FI_EINVAL);
  remote.len = 8;
  EXPECT_EQ(fi_writemsg(a_.ep, &msg, FI_TAGGED), -FI_EBADFLAGS);
  EXPECT_EQ(fi_read(a_.ep, buffer, 8, nullptr, 9999, at(0), key_, &context_), -FI_EINVAL);
  // Bytes with no address to take them from or put them at.
  EXPECT_EQ(fi_write(a_.ep, nullptr, 8, nullptr, b_.addr, at(0), key_, &context_), -FI_EINVAL);
  EXPECT_EQ(fi_read(a_.ep, nullptr, 8, nullptr, b_.addr, at(0), key_, &context_), -FI_EINVAL);
  EXPECT_EQ(fi_inject_write(a_.ep, nullptr, 8, b_.addr, at(0), key_), -FI_EINVAL);
  std::vector<char> big(domain_.info->tx_attr->inject_size + 1);
  EXPECT_EQ(fi_inject_write(a_.ep, big.data(), big.size(), b_.addr, at(0), key_), -FI_EMSGSIZE);
  EXPECT_EQ(domain_.info->tx_attr->rma_iov_limit, 1u);
}

TEST_P(Rma, CountersCountBothSides) {
  // Endpoints of their own, so the counters are bound before fi_enable.
  auto counter = [&] {
    fi_cntr_attr attr{};
    attr.events = FI_CNTR_EVENTS_COMP;
    attr.wait_obj = FI_WAIT_UNSPEC;
    fid_cntr* c = nullptr;
    EXPECT_EQ(fi_cntr_open(domain_.domain, &attr, &c, nullptr), 0);
    return c;
  };
  fid_cntr* writes = counter();
  fid_cntr* reads = counter();
  fid_cntr* remote_writes = counter();
  TestEndpoint initiator, target;
  ASSERT_EQ(initiator.open(domain_.domain, domain_.av, domain_.info, FI_CQ_FORMAT_DATA, 0, writes,
                           FI_WRITE),
            0);
  ASSERT_EQ(fi_ep_bind(initiator.ep, &reads->fid, FI_READ), -FI_EOPBADSTATE);
  ASSERT_EQ(target.open(domain_.domain, domain_.av, domain_.info, FI_CQ_FORMAT_DATA, 0,
                        remote_writes, FI_REMOTE_WRITE),
            0);
  const char text[] = "counted";
  ASSERT_EQ(
      fi_write(initiator.ep, text, sizeof(text), nullptr, target.addr, at(0), key_, &context_), 0);
  ASSERT_EQ(fi_inject_write(initiator.ep, text, sizeof(text), target.addr, at(64), key_), 0);
  EXPECT_EQ(fi_cntr_wait(writes, 2, 5000), 0);
  EXPECT_EQ(fi_cntr_wait(remote_writes, 2, 5000), 0);
  // A refused write counts as an error at the initiator, nothing at the target.
  ASSERT_EQ(
      fi_write(initiator.ep, text, sizeof(text), nullptr, target.addr, at(0), key_ + 1, &context_),
      0);
  fi_cq_data_entry entry{};
  ASSERT_EQ(wait_for_completion(initiator.tx_cq, &entry), 1);
  EXPECT_EQ(wait_for_completion(initiator.tx_cq, &entry), -FI_EAVAIL);
  EXPECT_EQ(fi_cntr_readerr(writes), 1u);
  EXPECT_EQ(fi_cntr_read(remote_writes), 2u);
  initiator.close();
  target.close();
  for (fid_cntr* c : {writes, reads, remote_writes}) EXPECT_EQ(fi_close(&c->fid), 0);
}

TEST_P(Rma, ARegionClosedWhileItsReadIsAnsweredStillGivesItsBytes) {
  // A read's answer is sent from the target's region itself.  The target
  // closes the region as soon as the first bytes of the 1 MiB read reached
  // the initiator, long before the answer's frames are all out, then
  // overwrites the memory as an application may once fi_close returned.
  // Expect: the read completes with the bytes the region held.
  constexpr size_t kLength = size_t{1} << 20;
  const auto held = pattern(kLength, 5);
  ASSERT_NE(held[0], 0);
  std::memcpy(region_.data(), held.data(), kLength);
  std::vector<uint8_t> back(kLength, 0);
  ASSERT_EQ(fi_read(a_.ep, back.data(), kLength, nullptr, b_.addr, at(0), key_, &context_), 0);
  fi_cq_data_entry entry{};
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (back[0] == 0 && std::chrono::steady_clock::now() < give_up)
    ASSERT_EQ(fi_cq_read(a_.tx_cq, &entry, 1), -FI_EAGAIN) << "the read finished at once";
  ASSERT_EQ(back[0], held[0]);
  ASSERT_EQ(fi_close(&mr_->fid), 0);
  mr_ = nullptr;
  std::memset(region_.data(), 0xEE, kLength);
  ASSERT_EQ(completion(&entry), 1);
  EXPECT_EQ(entry.flags, FI_RMA | FI_READ);
  EXPECT_TRUE(back == held) << "the read returned bytes written after its region was closed";
}

TEST_P(Rma, AWriteArrivingWhenItsRegionClosesFailsAndLandsNoMore) {
  // The target closes its region when the first bytes of a 1 MiB write have
  // landed in it, long before the rest, then reuses the memory.
  // Expect: the write fails at the initiator with FI_EKEYREJECTED (fi_mr(3):
  // an access to a closed region is an error at the peer), and none of its
  // bytes land after the close.
  constexpr size_t kLength = size_t{1} << 20;
  const auto out = pattern(kLength, 7);
  ASSERT_NE(out[0], 0xEE);
  ASSERT_EQ(fi_write(a_.ep, out.data(), kLength, nullptr, b_.addr, at(0), key_, &context_), 0);
  fi_cq_data_entry entry{};
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (region_[0] != out[0] && std::chrono::steady_clock::now() < give_up)
    ASSERT_EQ(fi_cq_read(a_.tx_cq, &entry, 1), -FI_EAGAIN) << "the write finished at once";
  ASSERT_EQ(region_[0], out[0]);
  ASSERT_EQ(fi_close(&mr_->fid), 0);
  mr_ = nullptr;
  std::memset(region_.data(), 0x11, kLength);
  fi_cq_err_entry error{};
  ASSERT_EQ(completion(&entry, &error), -FI_EAVAIL);
  EXPECT_EQ(error.err, FI_EKEYREJECTED);
  size_t landed_after = 0;
  for (size_t i = 0; i < kLength; ++i) landed_after += region_[i] != 0x11;
  EXPECT_EQ(landed_after, 0u) << "bytes of the write landed after its region closed";
}

TEST_P(Rma, AReadCountedAtTheTargetHasItsBytesAlready) {
  // The target's FI_REMOTE_READ counter ticks when it served a 1 MiB read;
  // the target then rewrites the region (without closing it), as an
  // application that takes the count as "read done" may.
  // Expect: the read completes with the bytes from before the rewrite.
  fi_cntr_attr attr{};
  attr.events = FI_CNTR_EVENTS_COMP;
  fid_cntr* remote_reads = nullptr;
  ASSERT_EQ(fi_cntr_open(domain_.domain, &attr, &remote_reads, nullptr), 0);
  TestEndpoint target;
  ASSERT_EQ(target.open(domain_.domain, domain_.av, domain_.info, FI_CQ_FORMAT_DATA, 0,
                        remote_reads, FI_REMOTE_READ),
            0);
  constexpr size_t kLength = size_t{1} << 20;
  const auto held = pattern(kLength, 6);
  std::memcpy(region_.data(), held.data(), kLength);
  std::vector<uint8_t> back(kLength, 0);
  ASSERT_EQ(fi_read(a_.ep, back.data(), kLength, nullptr, target.addr, at(0), key_, &context_), 0);
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (fi_cntr_read(remote_reads) == 0 && std::chrono::steady_clock::now() < give_up) {
  }
  ASSERT_EQ(fi_cntr_read(remote_reads), 1u);
  std::memset(region_.data(), 0xEE, kLength);
  fi_cq_data_entry entry{};
  ASSERT_EQ(completion(&entry), 1);
  EXPECT_TRUE(back == held) << "the read returned bytes written after it was counted";
  target.close();
  EXPECT_EQ(fi_close(&remote_reads->fid), 0);
}

TEST_P(Rma, TargetWithoutRmaCapabilityRefuses) {
  // An endpoint opened for FI_MSG only is not a target: its peer gets
  // FI_EOPNOTSUPP.
  fi_info* msg_only = get_dpdk_info(nullptr, FI_MSG);
  ASSERT_NE(msg_only, nullptr);
  TestEndpoint plain;
  ASSERT_EQ(plain.open(domain_.domain, domain_.av, msg_only), 0);
  char buffer[8] = {};
  ASSERT_EQ(fi_write(a_.ep, buffer, 8, nullptr, plain.addr, at(0), key_, &context_), 0);
  fi_cq_data_entry entry{};
  fi_cq_err_entry error{};
  ASSERT_EQ(completion(&entry, &error), -FI_EAVAIL);
  EXPECT_EQ(error.err, FI_EOPNOTSUPP);
  plain.close();
  fi_freeinfo(msg_only);
}

INSTANTIATE_TEST_SUITE_P(Addressing, Rma, ::testing::Values(false, true),
                         [](const ::testing::TestParamInfo<bool>& info) {
                           return info.param ? "VirtualAddress" : "Offset";
                         });

// FI_DPDK_MR_MODE: by default ("offered") an application that offers
// FI_MR_PROV_KEY and FI_MR_VIRT_ADDR keeps both; with "minimal" fi_getinfo
// clears them (fi_mr(3): a provider clears the bits it does not need), and
// fabtests' fi_multi_mr sequence works: regions registered with requested
// keys 1 and 2, written by a peer that was never told the keys, at address 0
// (an offset), the write awaited with fi_cntr_wait on the region's
// FI_WAIT_NONE counter.  Run by ofi_rma and by ofi_mr_mode_minimal.
TEST(RmaMrMode, OfferedBitsKeptByDefaultClearedWhenMinimal) {
  const char* setting = std::getenv("FI_DPDK_MR_MODE");
  const bool minimal = setting != nullptr && std::string(setting) == "minimal";
  fi_info* hints = dpdk_hints();
  hints->caps = FI_MSG | FI_RMA | FI_RMA_EVENT;
  hints->domain_attr->mr_mode = FI_MR_LOCAL | FI_MR_ALLOCATED | FI_MR_PROV_KEY | FI_MR_VIRT_ADDR;
  TestDomain domain;
  ASSERT_EQ(fi_getinfo(FI_VERSION(1, 17), nullptr, nullptr, 0, hints, &domain.info), 0);
  fi_freeinfo(hints);
  if (!minimal) {
    EXPECT_EQ(domain.info->domain_attr->mr_mode, FI_MR_PROV_KEY | FI_MR_VIRT_ADDR);
    domain.close();
    return;
  }
  ASSERT_EQ(domain.info->domain_attr->mr_mode, 0);
  ASSERT_EQ(fi_fabric(domain.info->fabric_attr, &domain.fabric, nullptr), 0);
  ASSERT_EQ(fi_domain(domain.fabric, domain.info, &domain.domain, nullptr), 0);
  fi_av_attr av_attr{};
  av_attr.type = FI_AV_TABLE;
  ASSERT_EQ(fi_av_open(domain.domain, &av_attr, &domain.av, nullptr), 0);
  TestEndpoint a, b;
  ASSERT_EQ(a.open(domain.domain, domain.av, domain.info), 0);
  ASSERT_EQ(b.open(domain.domain, domain.av, domain.info), 0);
  std::vector<uint8_t> regions[2] = {std::vector<uint8_t>(4096, 0), std::vector<uint8_t>(4096, 0)};
  fid_mr* mrs[2] = {};
  for (uint64_t i = 0; i < 2; ++i) {
    ASSERT_EQ(fi_mr_reg(domain.domain, regions[i].data(), regions[i].size(), FI_REMOTE_WRITE, 0,
                        i + 1, 0, &mrs[i], nullptr),
              0);
    EXPECT_EQ(fi_mr_key(mrs[i]), i + 1);
  }
  fi_cntr_attr counter_attr{};
  counter_attr.events = FI_CNTR_EVENTS_COMP;
  counter_attr.wait_obj = FI_WAIT_NONE;
  fid_cntr* written = nullptr;
  ASSERT_EQ(fi_cntr_open(domain.domain, &counter_attr, &written, nullptr), 0);
  ASSERT_EQ(fi_mr_bind(mrs[1], &written->fid, FI_REMOTE_WRITE), 0);
  const auto out = pattern(4096, 9);
  int context = 0;
  ASSERT_EQ(fi_write(a.ep, out.data(), out.size(), nullptr, b.addr, 0, 2, &context), 0);
  fi_cq_data_entry entry{};
  ASSERT_EQ(wait_for_completion(a.tx_cq, &entry), 1);
  EXPECT_EQ(fi_cntr_wait(written, 1, 5000), 0);
  EXPECT_EQ(regions[1], out) << "the write to key 2 at offset 0";
  EXPECT_EQ(regions[0], std::vector<uint8_t>(4096, 0)) << "key 1's region untouched";
  for (fid_mr* mr : mrs) EXPECT_EQ(fi_close(&mr->fid), 0);
  EXPECT_EQ(fi_close(&written->fid), 0);
  a.close();
  b.close();
  domain.close();
}

}  // namespace
}  // namespace ofi_dpdk::test
