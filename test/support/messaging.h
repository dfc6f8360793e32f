// messaging.h: one message from one test endpoint to another, checked.
#pragma once

#include <deque>
#include <string>

#include "test/support/fabric_helpers.h"

namespace ofi_dpdk::test {

// A copy of `text` that lives as long as the test program: the provider
// reads a send's buffer until the peer acknowledged it (retransmissions
// included), long after a helper that only posts the send has returned.
inline const std::string& kept_for_send(const std::string& text) {
  static std::deque<std::string> texts;
  return texts.emplace_back(text);
}

// Sends `text` from `from` to `to` (an fi_addr in from's AV) and expects it
// in `at`'s receive CQ, byte for byte.
inline void expect_message_delivered(TestEndpoint& from, fi_addr_t to, TestEndpoint& at,
                                     const std::string& text) {
  char buffer[256] = {};
  ASSERT_EQ(fi_recv(at.ep, buffer, sizeof(buffer), nullptr, FI_ADDR_UNSPEC, buffer), 0);
  ssize_t ret;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while ((ret = fi_send(from.ep, text.data(), text.size(), nullptr, to, nullptr)) == -FI_EAGAIN &&
         std::chrono::steady_clock::now() < deadline) {
    fi_cq_data_entry drain;
    fi_cq_read(from.tx_cq, &drain, 0);
  }
  ASSERT_EQ(ret, 0) << fi_strerror(static_cast<int>(-ret));
  // The two endpoints may sit on different ports: poll both CQs in turn,
  // since a send completes only when the receiver's port acked it.
  fi_cq_data_entry entry{};
  fi_cq_data_entry sent{};
  ssize_t got_tx = -FI_EAGAIN, got_rx = -FI_EAGAIN;
  const auto limit = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while ((got_tx == -FI_EAGAIN || got_rx == -FI_EAGAIN) &&
         std::chrono::steady_clock::now() < limit) {
    if (got_tx == -FI_EAGAIN) got_tx = fi_cq_read(from.tx_cq, &sent, 1);
    if (got_rx == -FI_EAGAIN) got_rx = fi_cq_read(at.rx_cq, &entry, 1);
  }
  ASSERT_EQ(got_tx, 1);
  EXPECT_TRUE(sent.flags & FI_SEND);
  ASSERT_EQ(got_rx, 1);
  EXPECT_EQ(entry.op_context, buffer);
  EXPECT_EQ(entry.len, text.size());
  EXPECT_TRUE(entry.flags & FI_RECV);
  EXPECT_EQ(std::string(buffer, entry.len), text);
}

// A fabric, domain and AV on the first port fi_getinfo offers (or `domain`).
struct TestDomain {
  fi_info* info = nullptr;
  fid_fabric* fabric = nullptr;
  fid_domain* domain = nullptr;
  fid_av* av = nullptr;

  int open(const char* domain_name = nullptr, uint64_t caps = FI_MSG) {
    info = get_dpdk_info(domain_name, caps);
    if (info == nullptr) return -FI_ENODATA;
    int ret;
    if ((ret = fi_fabric(info->fabric_attr, &fabric, nullptr))) return ret;
    if ((ret = fi_domain(fabric, info, &domain, nullptr))) return ret;
    fi_av_attr attr{};
    attr.type = FI_AV_TABLE;
    return fi_av_open(domain, &attr, &av, nullptr);
  }

  void close() {
    if (av) {
      EXPECT_EQ(fi_close(&av->fid), 0);
    }
    if (domain) {
      EXPECT_EQ(fi_close(&domain->fid), 0);
    }
    if (fabric) {
      EXPECT_EQ(fi_close(&fabric->fid), 0);
    }
    fi_freeinfo(info);
    *this = {};
  }
};

}  // namespace ofi_dpdk::test
