// Authorization (network) keys and peer groups through stock libfabric, on
// one net_ring port (doc/man/fi_dpdk.7, AUTHORIZATION KEYS and PEER GROUPS):
//   - an endpoint enabled with a key (ep_attr->auth_key, domain_attr's, or
//     its AV's with FI_AV_AUTH_KEY) takes only frames carrying one of its
//     keys: a frame with another key never reaches a receive, and the
//     sender's operation ends in FI_ETIMEDOUT (the run sets the peer
//     timeout to 1 s), because nothing ever answers it;
//   - 2.x: a receive posted for a peer group (fi_group_addr) ignores
//     messages sent to another group;
//   - 2.x: FI_AUTH_KEY on a receive takes only senders using that key, and
//     FI_SOURCE_ERR reports the key's handle in src_addr (API 1.20).
#include <gtest/gtest.h>

#include <chrono>
#include <cstring>
#include <string>
#include <vector>

#include "ofi_dpdk_config.h"
#include "test/support/messaging.h"

namespace ofi_dpdk::test {
namespace {

using Clock = std::chrono::steady_clock;
constexpr uint32_t kKeyA = 0x0A0A0A0A;
constexpr uint32_t kKeyB = 0x0B0B0B0B;
constexpr uint32_t kKeyC = 0x0C0C0C0C;
// Longer than the peer and connect timeouts the run sets (1000 ms each).
constexpr double kTimeoutWait = 4;

// `text` must outlive the send (the provider reads it until the peer acked
// it, or the peer timeout): string literals, or strings the test keeps.
ssize_t send_to(TestEndpoint& from, const char* text, fi_addr_t to, void* context) {
  const auto deadline = Clock::now() + std::chrono::seconds(5);
  ssize_t ret;
  while ((ret = fi_send(from.ep, text, std::strlen(text), nullptr, to, context)) == -FI_EAGAIN &&
         Clock::now() < deadline) {
    fi_cq_data_entry unused;
    fi_cq_read(from.tx_cq, &unused, 0);
  }
  return ret;
}

// The send's completion: 0 on success, else the error entry's err.
int send_outcome(TestEndpoint& from, double seconds = 5) {
  fi_cq_data_entry entry{};
  const ssize_t ret = wait_for_completion(from.tx_cq, &entry, seconds);
  if (ret == 1) return 0;
  if (ret != -FI_EAVAIL) return static_cast<int>(ret);
  fi_cq_err_entry error{};
  EXPECT_EQ(fi_cq_readerr(from.tx_cq, &error, 0), 1);
  return error.err;
}

// An fi_info whose ep_attr carries `key` (0: none).  The caller frees it.
fi_info* with_endpoint_key(const fi_info* base, uint32_t key) {
  fi_info* info = fi_dupinfo(base);
  free(info->ep_attr->auth_key);
  info->ep_attr->auth_key = nullptr;
  info->ep_attr->auth_key_size = 0;
  if (key != 0) {
    info->ep_attr->auth_key = static_cast<uint8_t*>(malloc(sizeof(key)));
    std::memcpy(info->ep_attr->auth_key, &key, sizeof(key));
    info->ep_attr->auth_key_size = sizeof(key);
  }
  return info;
}

fi_info* current_info(uint64_t caps) {
  fi_info* hints = dpdk_hints();
  hints->caps = caps;
  fi_info* info = nullptr;
  const int ret =
      fi_getinfo(FI_VERSION(FI_MAJOR_VERSION, FI_MINOR_VERSION), nullptr, nullptr, 0, hints, &info);
  fi_freeinfo(hints);
  return ret == 0 ? info : nullptr;
}

// One fabric and domain; endpoints each with their own AV so that what
// one knows is up to the test.
class Keys : public ::testing::Test {
 protected:
  void open_domain(uint64_t caps) {
    info_ = current_info(caps);
    ASSERT_NE(info_, nullptr);
    ASSERT_EQ(fi_fabric(info_->fabric_attr, &fabric_, nullptr), 0);
    ASSERT_EQ(fi_domain(fabric_, info_, &domain_, nullptr), 0);
  }
  fid_av* new_av(fid_domain* domain = nullptr) {
    fi_av_attr attr{};
    attr.type = FI_AV_TABLE;
    fid_av* av = nullptr;
    EXPECT_EQ(fi_av_open(domain ? domain : domain_, &attr, &av, nullptr), 0);
    avs_.push_back(av);
    return av;
  }
  // An endpoint on its own AV with ep_attr->auth_key `key`.
  TestEndpoint& endpoint(uint32_t key, fid_domain* domain = nullptr, fid_av* av = nullptr) {
    fi_info* info = with_endpoint_key(info_, key);
    endpoints_.emplace_back(new TestEndpoint());
    TestEndpoint& ep = *endpoints_.back();
    EXPECT_EQ(ep.open(domain ? domain : domain_, av ? av : new_av(domain), info), 0);
    fi_freeinfo(info);
    return ep;
  }
  // `to`'s address in `from`'s AV.
  fi_addr_t address_of(TestEndpoint& to, TestEndpoint& from) {
    fid_av* av = av_of(from);
    fi_addr_t addr = FI_ADDR_NOTAVAIL;
    EXPECT_EQ(fi_av_insert(av, to.name, 1, &addr, 0, nullptr), 1);
    return addr;
  }
  fid_av* av_of(TestEndpoint& ep) {
    for (size_t i = 0; i < endpoints_.size(); ++i)
      if (endpoints_[i].get() == &ep) return avs_[i];
    return nullptr;
  }
  void TearDown() override {
    for (auto& ep : endpoints_) ep->close();
    for (fid_av* av : avs_) {
      if (av) {
        EXPECT_EQ(fi_close(&av->fid), 0);
      }
    }
    for (fid_domain* d : extra_domains_) EXPECT_EQ(fi_close(&d->fid), 0);
    if (domain_) {
      EXPECT_EQ(fi_close(&domain_->fid), 0);
    }
    if (fabric_) {
      EXPECT_EQ(fi_close(&fabric_->fid), 0);
    }
    fi_freeinfo(info_);
  }

  fi_info* info_ = nullptr;
  fid_fabric* fabric_ = nullptr;
  fid_domain* domain_ = nullptr;
  std::vector<fid_domain*> extra_domains_;
  std::vector<fid_av*> avs_;
  std::vector<std::unique_ptr<TestEndpoint>> endpoints_;
};

TEST_F(Keys, AFrameWithAnotherKeyNeverReachesAReceive) {
  // Expect: b has key A.  c (key B) and d (no key) send to b: b's posted
  // receive stays empty and both sends end in FI_ETIMEDOUT (nothing
  // answers another job).  Then a (key A) sends, and that same receive takes
  // a's message.
  open_domain(FI_MSG);
  TestEndpoint& b = endpoint(kKeyA);
  TestEndpoint& a = endpoint(kKeyA);
  TestEndpoint& c = endpoint(kKeyB);
  TestEndpoint& d = endpoint(0);
  char buffer[64] = {};
  ASSERT_EQ(fi_recv(b.ep, buffer, sizeof(buffer), nullptr, FI_ADDR_UNSPEC, buffer), 0);
  ASSERT_EQ(send_to(c, "from another job", address_of(b, c), nullptr), 0);
  ASSERT_EQ(send_to(d, "from no job", address_of(b, d), nullptr), 0);
  const auto started = Clock::now();
  fi_cq_data_entry entry{};
  while (Clock::now() - started < std::chrono::duration<double>(kTimeoutWait / 2)) {
    ASSERT_EQ(fi_cq_read(b.rx_cq, &entry, 1), -FI_EAGAIN) << "a foreign frame reached b";
    fi_cq_read(c.tx_cq, &entry, 0);  // progress the senders
    fi_cq_read(d.tx_cq, &entry, 0);
  }
  EXPECT_EQ(send_outcome(c, kTimeoutWait), FI_ETIMEDOUT);
  EXPECT_EQ(send_outcome(d, kTimeoutWait), FI_ETIMEDOUT);
  EXPECT_EQ(buffer[0], 0);
  const std::string text = "from the same job";
  ASSERT_EQ(send_to(a, text.c_str(), address_of(b, a), nullptr), 0);
  ASSERT_EQ(wait_for_completion(b.rx_cq, &entry), 1);
  EXPECT_EQ(entry.op_context, buffer);
  EXPECT_EQ(std::string(buffer, entry.len), text);
  EXPECT_EQ(send_outcome(a), 0);
}

TEST_F(Keys, EndpointKeysMustBeFourNonzeroBytes) {
  // Expect: fi_endpoint refuses a 3-byte key and the key 0 (-FI_EINVAL);
  // fi_getinfo finds nothing for such hints.
  open_domain(FI_MSG);
  fi_info* info = with_endpoint_key(info_, kKeyA);
  info->ep_attr->auth_key_size = 3;
  fid_ep* ep = nullptr;
  EXPECT_EQ(fi_endpoint(domain_, info, &ep, nullptr), -FI_EINVAL);
  uint32_t zero = 0;
  info->ep_attr->auth_key_size = sizeof(zero);
  std::memcpy(info->ep_attr->auth_key, &zero, sizeof(zero));
  EXPECT_EQ(fi_endpoint(domain_, info, &ep, nullptr), -FI_EINVAL);
  fi_info* found = nullptr;
  fi_info* hints = dpdk_hints();
  hints->ep_attr->auth_key = static_cast<uint8_t*>(malloc(3));
  std::memset(hints->ep_attr->auth_key, 1, 3);
  hints->ep_attr->auth_key_size = 3;
  EXPECT_EQ(fi_getinfo(FI_VERSION(1, 17), nullptr, nullptr, 0, hints, &found), -FI_ENODATA);
  fi_freeinfo(hints);
  fi_freeinfo(info);
}

TEST_F(Keys, ADomainKeyIsTheKeyOfItsEndpoints) {
  // Expect: a domain opened with domain_attr->auth_key A gives it to
  // endpoints that name none: one in a keyless domain on the same port
  // cannot reach them, one with ep_attr key A can.
  open_domain(FI_MSG);
  fi_info* keyed = fi_dupinfo(info_);
  keyed->domain_attr->auth_key = static_cast<uint8_t*>(malloc(sizeof(kKeyA)));
  std::memcpy(keyed->domain_attr->auth_key, &kKeyA, sizeof(kKeyA));
  keyed->domain_attr->auth_key_size = sizeof(kKeyA);
  fid_domain* keyed_domain = nullptr;
  ASSERT_EQ(fi_domain(fabric_, keyed, &keyed_domain, nullptr), 0);
  fi_freeinfo(keyed);
  extra_domains_.push_back(keyed_domain);
  TestEndpoint& b = endpoint(0, keyed_domain);
  TestEndpoint& stranger = endpoint(0);
  TestEndpoint& friendly = endpoint(kKeyA);
  ASSERT_EQ(send_to(stranger, "no key", address_of(b, stranger), nullptr), 0);
  EXPECT_EQ(send_outcome(stranger, kTimeoutWait), FI_ETIMEDOUT);
  EXPECT_TRUE(stays_empty(b.rx_cq, 0.1));
  expect_message_delivered(friendly, address_of(b, friendly), b, "key A");
}

#if OFI_DPDK_HAVE_MAX_GROUP_ID
TEST_F(Keys, AReceiveForOneGroupIgnoresMessagesSentToAnother) {
  // Expect: fi_getinfo offers max_group_id > 0.  a sends to b in group 5,
  // then in group 0 (a plain fi_addr).  b's receive for group 7 (any
  // sender: index all ones) takes nothing; its FI_ADDR_UNSPEC receive takes
  // the group-0 message, its group-5 receive the group-5 one.
  open_domain(FI_MSG);
  ASSERT_GT(info_->domain_attr->max_group_id, 0u);
  TestEndpoint& b = endpoint(0);
  TestEndpoint& a = endpoint(0);
  const fi_addr_t to_b = address_of(b, a);
  constexpr fi_addr_t kAnySender = 0xFFFF'FFFFull;
  char g7[32] = {}, g0[32] = {}, g5[32] = {};
  ASSERT_EQ(fi_recv(b.ep, g7, sizeof(g7), nullptr, fi_group_addr(kAnySender, 7), g7), 0);
  ASSERT_EQ(send_to(a, "group five", fi_group_addr(to_b, 5), nullptr), 0);
  ASSERT_EQ(send_to(a, "group zero", to_b, nullptr), 0);
  EXPECT_EQ(send_outcome(a), 0);
  EXPECT_EQ(send_outcome(a), 0);
  EXPECT_TRUE(stays_empty(b.rx_cq, 0.1)) << "group 7 took a message of another group";
  ASSERT_EQ(fi_recv(b.ep, g0, sizeof(g0), nullptr, FI_ADDR_UNSPEC, g0), 0);
  ASSERT_EQ(fi_recv(b.ep, g5, sizeof(g5), nullptr, fi_group_addr(kAnySender, 5), g5), 0);
  fi_cq_data_entry entry{};
  for (int i = 0; i < 2; ++i) {
    ASSERT_EQ(wait_for_completion(b.rx_cq, &entry), 1);
    EXPECT_TRUE(entry.op_context == g0 || entry.op_context == g5);
  }
  EXPECT_STREQ(g0, "group zero");
  EXPECT_STREQ(g5, "group five");
  EXPECT_EQ(g7[0], 0);
  // A group above max_group_id is refused at the call.
  fi_info* hints = dpdk_hints();
  hints->domain_attr->max_group_id = 0xFFFF'FFFFu;
  fi_info* found = nullptr;
  EXPECT_EQ(fi_getinfo(FI_VERSION(FI_MAJOR_VERSION, FI_MINOR_VERSION), nullptr, nullptr, 0, hints,
                       &found),
            -FI_ENODATA);
  fi_freeinfo(hints);
}
#endif

#if OFI_DPDK_HAVE_AV_AUTH_KEY
TEST_F(Keys, AvKeysRestrictReceivesAndNameUnknownSenders) {
  // Expect: in a domain with auth_key_size FI_AV_AUTH_KEY, r is enabled
  // with keys A and B from its AV; s1 uses A, s2 B, s3 C.  r's FI_AUTH_KEY
  // receive for B's handle takes s2's message although s1's came first;
  // s3's never arrives (its send times out).  r has FI_SOURCE_ERR and knows
  // no sender, so the messages come as FI_EADDRNOTAVAIL errors whose
  // src_addr (API 1.20) is the handle of the key the sender used.
  info_ = current_info(FI_MSG | FI_DIRECTED_RECV | FI_SOURCE | FI_SOURCE_ERR);
  ASSERT_NE(info_, nullptr);
  info_->domain_attr->auth_key_size = FI_AV_AUTH_KEY;
  ASSERT_EQ(fi_fabric(info_->fabric_attr, &fabric_, nullptr), 0);
  ASSERT_EQ(fi_domain(fabric_, info_, &domain_, nullptr), 0);
  // One AV per endpoint, keys inserted before the endpoint is enabled.
  auto keyed_av = [&](std::vector<uint32_t> keys, std::vector<fi_addr_t>* handles) {
    fid_av* av = new_av();
    for (uint32_t key : keys) {
      fi_addr_t handle = FI_ADDR_NOTAVAIL;
      EXPECT_EQ(fi_av_insert_auth_key(av, &key, sizeof(key), &handle, 0), 0);
      handles->push_back(handle);
    }
    return av;
  };
  std::vector<fi_addr_t> r_keys, s1_keys, s2_keys, s3_keys;
  TestEndpoint& r = endpoint(0, nullptr, keyed_av({kKeyA, kKeyB}, &r_keys));
  TestEndpoint& s1 = endpoint(0, nullptr, keyed_av({kKeyA}, &s1_keys));
  TestEndpoint& s2 = endpoint(0, nullptr, keyed_av({kKeyB}, &s2_keys));
  TestEndpoint& s3 = endpoint(0, nullptr, keyed_av({kKeyC}, &s3_keys));
  auto keyed_address = [&](TestEndpoint& from, fi_addr_t handle) {
    fi_addr_t addr = handle;
    EXPECT_EQ(fi_av_insert(av_of(from), r.name, 1, &addr, FI_AUTH_KEY, nullptr), 1);
    return addr;
  };
  char keyed[32] = {}, plain[32] = {};
  iovec iov{keyed, sizeof(keyed)};
  fi_msg msg{};
  msg.msg_iov = &iov;
  msg.iov_count = 1;
  msg.addr = r_keys[1];
  msg.context = keyed;
  ASSERT_EQ(fi_recvmsg(r.ep, &msg, FI_AUTH_KEY), 0);
  ASSERT_EQ(send_to(s3, "key C", keyed_address(s3, s3_keys[0]), nullptr), 0);
  ASSERT_EQ(send_to(s1, "key A", keyed_address(s1, s1_keys[0]), nullptr), 0);
  EXPECT_EQ(send_outcome(s1), 0);
  ASSERT_EQ(send_to(s2, "key B", keyed_address(s2, s2_keys[0]), nullptr), 0);
  EXPECT_EQ(send_outcome(s2), 0);
  ASSERT_EQ(fi_recv(r.ep, plain, sizeof(plain), nullptr, FI_ADDR_UNSPEC, plain), 0);
  for (int i = 0; i < 2; ++i) {
    fi_cq_data_entry entry{};
    ASSERT_EQ(wait_for_completion(r.rx_cq, &entry), -FI_EAVAIL);
    fi_cq_err_entry error{};
    ASSERT_EQ(fi_cq_readerr(r.rx_cq, &error, 0), 1);
    EXPECT_EQ(error.err, FI_EADDRNOTAVAIL);
#if OFI_DPDK_HAVE_CQ_ERR_SRC_ADDR
    EXPECT_EQ(error.src_addr, error.op_context == keyed ? r_keys[1] : r_keys[0]);
#endif
  }
  EXPECT_STREQ(keyed, "key B");
  EXPECT_STREQ(plain, "key A");
  EXPECT_EQ(send_outcome(s3, kTimeoutWait), FI_ETIMEDOUT);
  EXPECT_TRUE(stays_empty(r.rx_cq, 0.1));
  // A key r was not enabled with is refused as a receive's key.
  fi_addr_t later = FI_ADDR_NOTAVAIL;
  ASSERT_EQ(fi_av_insert_auth_key(av_of(r), &kKeyC, sizeof(kKeyC), &later, 0), 0);
  msg.addr = later;
  EXPECT_EQ(fi_recvmsg(r.ep, &msg, FI_AUTH_KEY), -FI_EINVAL);
}
#endif

}  // namespace
}  // namespace ofi_dpdk::test
