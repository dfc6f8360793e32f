// FI_EP_DGRAM through stock libfabric on one net_ring port (fi_getinfo(3),
// fi_endpoint(3), fi_msg(3), fi_tagged(3)): what fi_getinfo offers for the
// type, that no utility provider is layered over it unless named, and two
// datagram endpoints exchanging messages: plain, tagged, with remote CQ
// data, injected, from a named source (FI_SOURCE), into a multi-recv
// buffer; a datagram larger than max_msg_size is refused with
// -FI_EMSGSIZE and RMA with -FI_EOPNOTSUPP.
#include <gtest/gtest.h>
#include <rdma/fi_rma.h>
#include <rdma/fi_tagged.h>

#include <cstring>
#include <string>
#include <vector>

#include "test/support/messaging.h"

namespace ofi_dpdk::test {
namespace {

constexpr uint32_t kVersion = FI_VERSION(1, 17);
constexpr double kWait = 5;

fi_info* dgram_hints(uint64_t caps) {
  fi_info* hints = dpdk_hints();
  hints->ep_attr->type = FI_EP_DGRAM;
  hints->caps = caps;
  return hints;
}

TEST(DgramGetinfo, OffersDatagramEndpointsWithTheirOwnLimits) {
  fi_info* hints = dgram_hints(FI_MSG | FI_TAGGED);
  fi_info* info = nullptr;
  ASSERT_EQ(fi_getinfo(kVersion, nullptr, nullptr, 0, hints, &info), 0);
  for (const fi_info* i = info; i != nullptr; i = i->next) {
    EXPECT_EQ(i->ep_attr->type, FI_EP_DGRAM);
    EXPECT_STREQ(i->fabric_attr->prov_name, "dpdk");
    EXPECT_EQ(i->ep_attr->max_msg_size, 1396u);
    EXPECT_LE(i->tx_attr->inject_size, i->ep_attr->max_msg_size);
    EXPECT_EQ(i->caps & (FI_RMA | FI_ATOMIC), 0u);
    EXPECT_EQ(i->tx_attr->msg_order, 0u);  // FI_ORDER_NONE
  }
  fi_freeinfo(info);
  // Expect: what datagram endpoints cannot do is refused.
  hints->caps = FI_MSG | FI_RMA;
  EXPECT_EQ(fi_getinfo(kVersion, nullptr, nullptr, 0, hints, &info), -FI_ENODATA);
  hints->caps = FI_MSG;
  hints->ep_attr->max_msg_size = 4096;
  EXPECT_EQ(fi_getinfo(kVersion, nullptr, nullptr, 0, hints, &info), -FI_ENODATA);
  fi_freeinfo(hints);
}

TEST(DgramGetinfo, ReliableFirstAndNothingLayeredUnlessNamed) {
  // An application naming the provider and no type gets ours: RDM first,
  // then DGRAM, and no "dpdk;ofi_rxd" (libfabric's RDM made of our
  // datagrams) among them.
  fi_info* hints = fi_allocinfo();
  hints->fabric_attr->prov_name = strdup("dpdk");
  fi_info* info = nullptr;
  ASSERT_EQ(fi_getinfo(kVersion, nullptr, nullptr, 0, hints, &info), 0);
  ASSERT_NE(info, nullptr);
  EXPECT_EQ(info->ep_attr->type, FI_EP_RDM);
  bool dgram = false;
  for (const fi_info* i = info; i != nullptr; i = i->next) {
    EXPECT_STREQ(i->fabric_attr->prov_name, "dpdk");
    dgram |= i->ep_attr->type == FI_EP_DGRAM;
  }
  EXPECT_TRUE(dgram);
  fi_freeinfo(info);
  fi_freeinfo(hints);
  // Without a provider name either.
  ASSERT_EQ(fi_getinfo(kVersion, nullptr, nullptr, 0, nullptr, &info), 0);
  for (const fi_info* i = info; i != nullptr; i = i->next)
    EXPECT_STRNE(i->fabric_attr->prov_name, "dpdk;ofi_rxd");
  fi_freeinfo(info);
}

class Dgram : public ::testing::Test {
 protected:
  void SetUp() override {
    fi_info* hints = dgram_hints(FI_MSG | FI_TAGGED | FI_SOURCE | FI_MULTI_RECV);
    ASSERT_EQ(fi_getinfo(kVersion, nullptr, nullptr, 0, hints, &info_), 0);
    fi_freeinfo(hints);
    ASSERT_EQ(fi_fabric(info_->fabric_attr, &fabric_, nullptr), 0);
    ASSERT_EQ(fi_domain(fabric_, info_, &domain_, nullptr), 0);
    fi_av_attr attr{};
    attr.type = FI_AV_TABLE;
    ASSERT_EQ(fi_av_open(domain_, &attr, &av_, nullptr), 0);
    ASSERT_EQ(a_.open(domain_, av_, info_, FI_CQ_FORMAT_TAGGED), 0);
    ASSERT_EQ(b_.open(domain_, av_, info_, FI_CQ_FORMAT_TAGGED), 0);
  }
  void TearDown() override {
    a_.close();
    b_.close();
    if (av_) {
      EXPECT_EQ(fi_close(&av_->fid), 0);
    }
    if (domain_) {
      EXPECT_EQ(fi_close(&domain_->fid), 0);
    }
    if (fabric_) {
      EXPECT_EQ(fi_close(&fabric_->fid), 0);
    }
    fi_freeinfo(info_);
  }
  // The next receive completion at b, and who sent it.
  ssize_t next_recv(fi_cq_tagged_entry* entry, fi_addr_t* source) {
    return wait_for_completion(b_.rx_cq, entry, kWait, source);
  }
  // The send's own completion at a.
  void expect_sent(void* context) {
    fi_cq_tagged_entry sent{};
    ASSERT_EQ(wait_for_completion(a_.tx_cq, &sent, kWait), 1);
    EXPECT_EQ(sent.op_context, context);
    EXPECT_TRUE(sent.flags & FI_SEND);
  }

  fi_info* info_ = nullptr;
  fid_fabric* fabric_ = nullptr;
  fid_domain* domain_ = nullptr;
  fid_av* av_ = nullptr;
  TestEndpoint a_, b_;
};

TEST_F(Dgram, AMessageArrivesWithItsSourceAndData) {
  std::vector<char> buffer(2048);
  ASSERT_EQ(fi_recv(b_.ep, buffer.data(), buffer.size(), nullptr, FI_ADDR_UNSPEC, &buffer), 0);
  static const std::string text(1396, 'd');
  int context = 0;
  ASSERT_EQ(fi_senddata(a_.ep, text.data(), text.size(), nullptr, 0xC0FFEE, b_.addr, &context), 0);
  expect_sent(&context);
  fi_cq_tagged_entry entry{};
  fi_addr_t source = FI_ADDR_NOTAVAIL;
  ASSERT_EQ(next_recv(&entry, &source), 1);
  EXPECT_EQ(entry.op_context, &buffer);
  EXPECT_EQ(entry.len, text.size());
  EXPECT_TRUE(entry.flags & FI_RECV);
  EXPECT_TRUE(entry.flags & FI_REMOTE_CQ_DATA);
  EXPECT_EQ(entry.data, 0xC0FFEEu);
  EXPECT_EQ(source, a_.addr);
  EXPECT_EQ(std::string(buffer.data(), entry.len), text);
}

TEST_F(Dgram, TaggedAndInjectedDatagramsArrive) {
  uint64_t received = 0;
  ASSERT_EQ(
      fi_trecv(b_.ep, &received, sizeof(received), nullptr, FI_ADDR_UNSPEC, 0x500, 0xFF, &received),
      0);
  uint64_t value = 0x1122334455667788;
  ASSERT_EQ(fi_tinject(a_.ep, &value, sizeof(value), b_.addr, 0x5AB), 0);
  value = 0;  // fi_inject: the buffer is free at once
  fi_cq_tagged_entry entry{};
  ASSERT_EQ(wait_for_completion(b_.rx_cq, &entry, kWait), 1);
  EXPECT_EQ(entry.op_context, &received);
  EXPECT_TRUE(entry.flags & FI_TAGGED);
  EXPECT_EQ(entry.tag, 0x5ABu);
  EXPECT_EQ(received, 0x1122334455667788u);
  EXPECT_TRUE(stays_empty(a_.tx_cq));  // an inject completes nowhere
}

TEST_F(Dgram, TooLargeAndRmaAreRefused) {
  static const std::string big(1413, 'x');
  EXPECT_EQ(fi_send(a_.ep, big.data(), big.size(), nullptr, b_.addr, nullptr), -FI_EMSGSIZE);
  char local[8] = {};
  EXPECT_EQ(fi_write(a_.ep, local, sizeof(local), nullptr, b_.addr, 0, 0, nullptr), -FI_EOPNOTSUPP);
  EXPECT_TRUE(stays_empty(a_.tx_cq));
}

TEST_F(Dgram, DatagramsFillAMultiRecvBuffer) {
  size_t min = 200;
  ASSERT_EQ(fi_setopt(&b_.ep->fid, FI_OPT_ENDPOINT, FI_OPT_MIN_MULTI_RECV, &min, sizeof(min)), 0);
  std::vector<char> buffer(1000);
  iovec iov{buffer.data(), buffer.size()};
  fi_msg msg{};
  msg.msg_iov = &iov;
  msg.iov_count = 1;
  msg.addr = FI_ADDR_UNSPEC;
  msg.context = &buffer;
  ASSERT_EQ(fi_recvmsg(b_.ep, &msg, FI_MULTI_RECV), 0);
  static const std::string first(500, '1');
  static const std::string second(400, '2');
  ASSERT_EQ(fi_send(a_.ep, first.data(), first.size(), nullptr, b_.addr, nullptr), 0);
  ASSERT_EQ(fi_send(a_.ep, second.data(), second.size(), nullptr, b_.addr, nullptr), 0);
  fi_cq_tagged_entry one{}, two{};
  ASSERT_EQ(next_recv(&one, nullptr), 1);
  ASSERT_EQ(next_recv(&two, nullptr), 1);
  EXPECT_EQ(one.buf, buffer.data());
  EXPECT_EQ(one.len, 500u);
  EXPECT_FALSE(one.flags & FI_MULTI_RECV);
  EXPECT_EQ(two.buf, buffer.data() + 500);
  EXPECT_EQ(two.len, 400u);
  // 100 bytes left, under the minimum: the buffer is released with it.
  EXPECT_TRUE(two.flags & FI_MULTI_RECV);
  EXPECT_EQ(std::string(buffer.data() + 500, 400), second);
}

}  // namespace
}  // namespace ofi_dpdk::test
