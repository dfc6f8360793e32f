// Shared contexts through stock libfabric on one net_ring port
// (fi_endpoint(3)): fi_getinfo takes FI_SHARED_CONTEXT in ep_attr; a
// receive posted to a shared receive context is taken by a message to any
// endpoint bound to it, one that came first included, and completes on
// that endpoint's CQ with its source; fi_cancel finds it; the context
// sends nothing, shares no multi-recv buffer, and cannot close while
// endpoints are bound to it; a shared transmit context binds and counts
// its endpoints, which keep sending from their own addresses.
#include <gtest/gtest.h>
#include <rdma/fi_tagged.h>

#include <cstring>
#include <string>

#include "test/support/messaging.h"

namespace ofi_dpdk::test {
namespace {

constexpr uint32_t kVersion = FI_VERSION(1, 17);

class SharedCtx : public ::testing::Test {
 protected:
  void SetUp() override {
    fi_info* hints = dpdk_hints();
    hints->caps = FI_MSG | FI_TAGGED | FI_SOURCE;
    hints->ep_attr->tx_ctx_cnt = FI_SHARED_CONTEXT;
    hints->ep_attr->rx_ctx_cnt = FI_SHARED_CONTEXT;
    ASSERT_EQ(fi_getinfo(kVersion, nullptr, nullptr, 0, hints, &info_), 0);
    fi_freeinfo(hints);
    EXPECT_GE(info_->domain_attr->max_ep_srx_ctx, 1u);
    EXPECT_GE(info_->domain_attr->max_ep_stx_ctx, 1u);
    ASSERT_EQ(fi_fabric(info_->fabric_attr, &fabric_, nullptr), 0);
    ASSERT_EQ(fi_domain(fabric_, info_, &domain_, nullptr), 0);
    fi_av_attr av_attr{};
    av_attr.type = FI_AV_TABLE;
    ASSERT_EQ(fi_av_open(domain_, &av_attr, &av_, nullptr), 0);
    fi_cq_attr cq_attr{};
    cq_attr.format = FI_CQ_FORMAT_TAGGED;
    ASSERT_EQ(fi_cq_open(domain_, &cq_attr, &cq_, nullptr), 0);
    ASSERT_EQ(fi_srx_context(domain_, info_->rx_attr, &srx_, nullptr), 0);
    ASSERT_EQ(fi_stx_context(domain_, info_->tx_attr, &stx_, nullptr), 0);
    for (fid_ep*& ep : shared_) {
      ASSERT_EQ(fi_endpoint(domain_, info_, &ep, nullptr), 0);
      ASSERT_EQ(fi_ep_bind(ep, &av_->fid, 0), 0);
      ASSERT_EQ(fi_ep_bind(ep, &srx_->fid, 0), 0);
      ASSERT_EQ(fi_ep_bind(ep, &stx_->fid, 0), 0);
      ASSERT_EQ(fi_ep_bind(ep, &cq_->fid, FI_TRANSMIT | FI_RECV), 0);
      ASSERT_EQ(fi_enable(ep), 0);
    }
    // The sender has contexts of its own.
    fi_cq_attr sender_attr{};
    sender_attr.format = FI_CQ_FORMAT_TAGGED;
    ASSERT_EQ(fi_cq_open(domain_, &sender_attr, &sender_cq_, nullptr), 0);
    fi_info* plain = fi_dupinfo(info_);
    plain->ep_attr->tx_ctx_cnt = 1;
    plain->ep_attr->rx_ctx_cnt = 1;
    ASSERT_EQ(fi_endpoint(domain_, plain, &sender_, nullptr), 0);
    fi_freeinfo(plain);
    ASSERT_EQ(fi_ep_bind(sender_, &av_->fid, 0), 0);
    ASSERT_EQ(fi_ep_bind(sender_, &sender_cq_->fid, FI_TRANSMIT | FI_RECV), 0);
    ASSERT_EQ(fi_enable(sender_), 0);
    for (int i = 0; i < 3; ++i) {
      fid_ep* ep = i < 2 ? shared_[i] : sender_;
      uint8_t name[64];
      size_t len = sizeof(name);
      ASSERT_EQ(fi_getname(&ep->fid, name, &len), 0);
      ASSERT_EQ(fi_av_insert(av_, name, 1, &addr_[i], 0, nullptr), 1);
    }
  }
  void TearDown() override {
    auto close = [](fid* object) {
      if (object != nullptr) {
        EXPECT_EQ(fi_close(object), 0);
      }
    };
    for (fid_ep* ep : {shared_[0], shared_[1], sender_}) close(ep ? &ep->fid : nullptr);
    close(srx_ ? &srx_->fid : nullptr);
    close(stx_ ? &stx_->fid : nullptr);
    for (fid_cq* cq : {cq_, sender_cq_}) close(cq ? &cq->fid : nullptr);
    close(av_ ? &av_->fid : nullptr);
    close(domain_ ? &domain_->fid : nullptr);
    close(fabric_ ? &fabric_->fid : nullptr);
    fi_freeinfo(info_);
  }
  void send_to(int i, const std::string& text) {
    ASSERT_EQ(fi_send(sender_, text.data(), text.size(), nullptr, addr_[i], nullptr), 0);
    fi_cq_tagged_entry sent{};
    ASSERT_EQ(wait_for_completion(sender_cq_, &sent), 1);
  }

  fi_info* info_ = nullptr;
  fid_fabric* fabric_ = nullptr;
  fid_domain* domain_ = nullptr;
  fid_av* av_ = nullptr;
  fid_cq* cq_ = nullptr;
  fid_cq* sender_cq_ = nullptr;
  fid_ep* srx_ = nullptr;
  fid_stx* stx_ = nullptr;
  fid_ep* shared_[2] = {};
  fid_ep* sender_ = nullptr;
  fi_addr_t addr_[3] = {FI_ADDR_NOTAVAIL, FI_ADDR_NOTAVAIL, FI_ADDR_NOTAVAIL};
};

TEST_F(SharedCtx, AReceiveOfTheContextTakesAMessageToAnyEndpoint) {
  static const std::string kFirst = "to the first", kSecond = "to the second";
  char buffers[2][64] = {};
  ASSERT_EQ(fi_recv(srx_, buffers[0], sizeof(buffers[0]), nullptr, FI_ADDR_UNSPEC, buffers[0]), 0);
  ASSERT_EQ(fi_recv(srx_, buffers[1], sizeof(buffers[1]), nullptr, FI_ADDR_UNSPEC, buffers[1]), 0);
  send_to(1, kSecond);
  send_to(0, kFirst);
  fi_cq_tagged_entry entry{};
  fi_addr_t source = FI_ADDR_NOTAVAIL;
  // Posting order: the first receive took the message to the second endpoint.
  ASSERT_EQ(wait_for_completion(cq_, &entry, 5, &source), 1);
  EXPECT_EQ(entry.op_context, buffers[0]);
  EXPECT_EQ(std::string(buffers[0], entry.len), kSecond);
  EXPECT_EQ(source, addr_[2]);
  ASSERT_EQ(wait_for_completion(cq_, &entry, 5, &source), 1);
  EXPECT_EQ(entry.op_context, buffers[1]);
  EXPECT_EQ(std::string(buffers[1], entry.len), kFirst);
  EXPECT_TRUE(stays_empty(cq_));
}

TEST_F(SharedCtx, AMessageThatCameFirstTakesTheNextReceive) {
  static const std::string kEarly = "early";
  send_to(1, kEarly);  // no receive yet: it waits at the second endpoint
  char buffer[64] = {};
  ASSERT_EQ(fi_trecv(srx_, buffer, sizeof(buffer), nullptr, FI_ADDR_UNSPEC, 7, 0, buffer), 0);
  ASSERT_EQ(fi_recv(srx_, buffer, sizeof(buffer), nullptr, FI_ADDR_UNSPEC, buffer), 0);
  fi_cq_tagged_entry entry{};
  ASSERT_EQ(wait_for_completion(cq_, &entry), 1);
  EXPECT_EQ(entry.op_context, buffer);
  EXPECT_TRUE(entry.flags & FI_MSG);
  EXPECT_EQ(std::string(buffer, entry.len), kEarly);
  // The tagged receive is still posted: a tagged message to the first takes it.
  static const std::string kTagged = "tagged";
  ASSERT_EQ(fi_tsend(sender_, kTagged.data(), kTagged.size(), nullptr, addr_[0], 7, nullptr), 0);
  fi_cq_tagged_entry sent{};
  ASSERT_EQ(wait_for_completion(sender_cq_, &sent), 1);
  ASSERT_EQ(wait_for_completion(cq_, &entry), 1);
  EXPECT_TRUE(entry.flags & FI_TAGGED);
  EXPECT_EQ(entry.tag, 7u);
}

TEST_F(SharedCtx, CancelFindsAReceiveOfTheContext) {
  char buffer[16];
  ASSERT_EQ(fi_recv(srx_, buffer, sizeof(buffer), nullptr, FI_ADDR_UNSPEC, buffer), 0);
  ASSERT_EQ(fi_cancel(&srx_->fid, buffer), 0);
  fi_cq_tagged_entry entry{};
  ASSERT_EQ(wait_for_completion(cq_, &entry), -FI_EAVAIL);
  fi_cq_err_entry error{};
  ASSERT_EQ(fi_cq_readerr(cq_, &error, 0), 1);
  EXPECT_EQ(error.err, FI_ECANCELED);
  EXPECT_EQ(error.op_context, buffer);
  EXPECT_EQ(fi_cancel(&srx_->fid, buffer), -FI_ENOENT);
}

TEST_F(SharedCtx, TheContextOnlyReceivesAndOutlivesNoEndpoint) {
  static const std::string kText = "x";
  EXPECT_EQ(fi_send(srx_, kText.data(), kText.size(), nullptr, addr_[2], nullptr), -FI_EOPNOTSUPP);
  char buffer[256];
  iovec iov{buffer, sizeof(buffer)};
  fi_msg msg{};
  msg.msg_iov = &iov;
  msg.iov_count = 1;
  msg.addr = FI_ADDR_UNSPEC;
  EXPECT_EQ(fi_recvmsg(srx_, &msg, FI_MULTI_RECV), -FI_EBADFLAGS);
  EXPECT_EQ(fi_close(&srx_->fid), -FI_EBUSY);
  EXPECT_EQ(fi_close(&stx_->fid), -FI_EBUSY);
  // Its endpoints keep their own addresses: a message from one names it.
  char got[16] = {};
  ASSERT_EQ(fi_recv(sender_, got, sizeof(got), nullptr, FI_ADDR_UNSPEC, got), 0);
  ASSERT_EQ(fi_send(shared_[1], kText.data(), kText.size(), nullptr, addr_[2], nullptr), 0);
  fi_cq_tagged_entry entry{};
  fi_addr_t source = FI_ADDR_NOTAVAIL;
  bool sent = false, received = false;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while ((!sent || !received) && std::chrono::steady_clock::now() < deadline) {
    if (!sent && fi_cq_read(cq_, &entry, 1) == 1) sent = true;
    if (!received && fi_cq_readfrom(sender_cq_, &entry, 1, &source) == 1) received = true;
  }
  ASSERT_TRUE(sent && received);
  EXPECT_EQ(source, addr_[1]);
}

}  // namespace
}  // namespace ofi_dpdk::test
