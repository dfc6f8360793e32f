// Authorization keys and AV user ids through stock libfabric on one net_ring
// port.  Both builds: domain_attr->auth_key (fi_domain(3), API 1.5+): a
// 4-byte nonzero network key is accepted by fi_getinfo and fi_domain, other
// sizes and key 0 are not.  libfabric 2.x: auth_key_size FI_AV_AUTH_KEY and
// max_ep_auth_key; fi_av_insert_auth_key, fi_av_lookup_auth_key, FI_AUTH_KEY
// on insert, insertsvc, insertsym and remove; FI_AV_USER_ID on fi_av_open,
// the domain cap it needs, fi_av_set_user_id and the FI_SOURCE completions
// it changes (fi_av(3), doc/address-vector.md).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "ofi_dpdk_config.h"
#include "test/support/messaging.h"

namespace ofi_dpdk::test {
namespace {

constexpr uint32_t kApi = FI_VERSION(FI_MAJOR_VERSION, FI_MINOR_VERSION);
constexpr double kWait = 5;

uint8_t* key_bytes(uint32_t key, size_t size = sizeof(uint32_t)) {
  auto* bytes = static_cast<uint8_t*>(std::calloc(1, size));
  std::memcpy(bytes, &key, std::min(size, sizeof(key)));
  return bytes;
}

// fi_getinfo for the dpdk provider after `tweak` edits the hints.
int getinfo_with(uint64_t caps, const std::function<void(fi_info*)>& tweak, fi_info** out,
                 uint32_t version = kApi) {
  fi_info* hints = dpdk_hints();
  hints->caps = caps;
  tweak(hints);
  const int ret = fi_getinfo(version, nullptr, nullptr, 0, hints, out);
  fi_freeinfo(hints);
  return ret;
}

// A fabric and domain opened from what getinfo_with returned.
struct Opened {
  fi_info* info = nullptr;
  fid_fabric* fabric = nullptr;
  fid_domain* domain = nullptr;
  fid_av* av = nullptr;

  int open(uint64_t caps, const std::function<void(fi_info*)>& tweak, uint64_t av_flags = 0) {
    int ret = getinfo_with(caps, tweak, &info);
    if (ret != 0) return ret;
    if ((ret = fi_fabric(info->fabric_attr, &fabric, nullptr))) return ret;
    if ((ret = fi_domain(fabric, info, &domain, nullptr))) return ret;
    fi_av_attr attr{};
    attr.type = FI_AV_TABLE;
    attr.flags = av_flags;
    return fi_av_open(domain, &attr, &av, nullptr);
  }
  ~Opened() {
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
  }
};

void set_domain_key(fi_info* info, uint8_t* key, size_t size) {
  std::free(info->domain_attr->auth_key);
  info->domain_attr->auth_key = key;
  info->domain_attr->auth_key_size = size;
}

// --- Both builds: the domain's default key ----------------------------------

TEST(DomainAuthKey, FourByteKeyIsAcceptedAndGoesToTheDomain) {
  Opened d;
  ASSERT_EQ(d.open(FI_MSG, [](fi_info* h) { set_domain_key(h, key_bytes(0x1234abcd), 4); }), 0);
  ASSERT_EQ(d.info->domain_attr->auth_key_size, 4u);
  ASSERT_NE(d.info->domain_attr->auth_key, nullptr);
  uint32_t key = 0;
  std::memcpy(&key, d.info->domain_attr->auth_key, 4);
  EXPECT_EQ(key, 0x1234abcdu) << "fi_getinfo returns the key it was asked for";
}

TEST(DomainAuthKey, GetinfoRefusesOtherSizesKeyZeroAndNoBytes) {
  fi_info* info = nullptr;
  EXPECT_EQ(getinfo_with(
                FI_MSG, [](fi_info* h) { set_domain_key(h, key_bytes(7, 8), 8); }, &info),
            -FI_ENODATA);
  EXPECT_EQ(getinfo_with(
                FI_MSG, [](fi_info* h) { set_domain_key(h, key_bytes(7, 2), 2); }, &info),
            -FI_ENODATA);
  EXPECT_EQ(getinfo_with(
                FI_MSG, [](fi_info* h) { set_domain_key(h, key_bytes(0), 4); }, &info),
            -FI_ENODATA)
      << "key 0 means no key";
  EXPECT_EQ(getinfo_with(
                FI_MSG, [](fi_info* h) { set_domain_key(h, nullptr, 4); }, &info),
            -FI_ENODATA);
  EXPECT_EQ(info, nullptr);
  ASSERT_EQ(getinfo_with(
                FI_MSG, [](fi_info* h) { set_domain_key(h, nullptr, 0); }, &info),
            0);
  EXPECT_EQ(info->domain_attr->auth_key_size, 0u);
  fi_freeinfo(info);
}

TEST(DomainAuthKey, FiDomainRefusesABadKeyInTheInfo) {
  Opened d;
  ASSERT_EQ(getinfo_with(
                FI_MSG, [](fi_info*) {}, &d.info),
            0);
  ASSERT_EQ(fi_fabric(d.info->fabric_attr, &d.fabric, nullptr), 0);
  fid_domain* domain = nullptr;
  set_domain_key(d.info, key_bytes(5, 8), 8);
  EXPECT_EQ(fi_domain(d.fabric, d.info, &domain, nullptr), -FI_EINVAL);
  set_domain_key(d.info, key_bytes(0), 4);
  EXPECT_EQ(fi_domain(d.fabric, d.info, &domain, nullptr), -FI_EINVAL);
  set_domain_key(d.info, nullptr, 4);
  EXPECT_EQ(fi_domain(d.fabric, d.info, &domain, nullptr), -FI_EINVAL);
  set_domain_key(d.info, nullptr, static_cast<size_t>(-1));
#if OFI_DPDK_HAVE_AV_AUTH_KEY
  set_domain_key(d.info, key_bytes(5), static_cast<size_t>(-1));
  EXPECT_EQ(fi_domain(d.fabric, d.info, &domain, nullptr), -FI_EINVAL)
      << "fi_domain(3): with FI_AV_AUTH_KEY, auth_key must be NULL";
#else
  EXPECT_EQ(fi_domain(d.fabric, d.info, &domain, nullptr), -FI_EINVAL) << "1.x: no FI_AV_AUTH_KEY";
#endif
  set_domain_key(d.info, key_bytes(5), 4);
  ASSERT_EQ(fi_domain(d.fabric, d.info, &d.domain, nullptr), 0);
}

TEST(DomainAuthKey, IgnoredBeforeApi15) {
  fi_info* info = nullptr;
  ASSERT_EQ(getinfo_with(
                FI_MSG, [](fi_info* h) { set_domain_key(h, key_bytes(7, 8), 8); }, &info,
                FI_VERSION(1, 4)),
            0);
  fi_freeinfo(info);
}

#if OFI_DPDK_HAVE_AV_AUTH_KEY
// --- libfabric 2.x: FI_AV_AUTH_KEY --------------------------------------------

void av_auth_key(fi_info* h) {
  set_domain_key(h, nullptr, FI_AV_AUTH_KEY);
}

int insert_key(fid_av* av, uint32_t key, fi_addr_t* handle) {
  return fi_av_insert_auth_key(av, &key, sizeof(key), handle, 0);
}

class AvAuthKey : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_EQ(d_.open(FI_MSG | FI_SOURCE, av_auth_key), 0); }
  // Inserts MAC 02:00:00:00:00:<n>, queue q; returns its fi_addr.
  fi_addr_t insert_svc(int n, int q, uint64_t flags = 0, fi_addr_t handle = FI_ADDR_NOTAVAIL) {
    char mac[32], queue[8];
    std::snprintf(mac, sizeof(mac), "02:00:00:00:00:%02x", n);
    std::snprintf(queue, sizeof(queue), "%d", q);
    fi_addr_t addr = handle;
    return fi_av_insertsvc(d_.av, mac, queue, &addr, flags, nullptr) == 1 ? addr : FI_ADDR_NOTAVAIL;
  }
  uint32_t lookup_key(fi_addr_t addr, int* ret) {
    uint32_t key = 0;
    size_t size = sizeof(key);
    *ret = fi_av_lookup_auth_key(d_.av, addr, &key, &size);
    EXPECT_EQ(size, 4u);
    return key;
  }
  Opened d_;
};

TEST(AvAuthKeyGetinfo, AvAuthKeySizeIsOfferedWithMaxEpAuthKey) {
  fi_info* info = nullptr;
  ASSERT_EQ(getinfo_with(
                FI_MSG, [](fi_info*) {}, &info),
            0);
  EXPECT_EQ(info->domain_attr->max_ep_auth_key, 16u) << "doc/address-vector.md: 16 keys per AV";
  EXPECT_EQ(info->domain_attr->auth_key_size, 0u);
  fi_freeinfo(info);
  ASSERT_EQ(getinfo_with(FI_MSG, av_auth_key, &info), 0);
  EXPECT_EQ(info->domain_attr->auth_key_size, FI_AV_AUTH_KEY);
  EXPECT_EQ(info->domain_attr->auth_key, nullptr);
  fi_freeinfo(info);
  info = nullptr;
  EXPECT_EQ(getinfo_with(
                FI_MSG, [](fi_info* h) { set_domain_key(h, key_bytes(3), FI_AV_AUTH_KEY); }, &info),
            -FI_ENODATA)
      << "FI_AV_AUTH_KEY with a key";
  EXPECT_EQ(getinfo_with(
                FI_MSG, [](fi_info* h) { h->domain_attr->max_ep_auth_key = 17; }, &info),
            -FI_ENODATA);
  ASSERT_EQ(getinfo_with(
                FI_MSG, [](fi_info* h) { h->domain_attr->max_ep_auth_key = 16; }, &info),
            0);
  fi_freeinfo(info);
}

TEST(AvAuthKeyDomain, KeyCallsNeedAnAvAuthKeyDomain) {
  Opened plain;
  ASSERT_EQ(plain.open(FI_MSG, [](fi_info*) {}), 0);
  fi_addr_t handle = 0;
  EXPECT_EQ(insert_key(plain.av, 9, &handle), -FI_EINVAL);
  uint32_t key = 0;
  size_t size = sizeof(key);
  EXPECT_EQ(fi_av_lookup_auth_key(plain.av, 0, &key, &size), -FI_EINVAL);
  fi_addr_t addr = 0;
  EXPECT_EQ(fi_av_insertsvc(plain.av, "02:00:00:00:00:01", "1", &addr, FI_AUTH_KEY, nullptr),
            -FI_EINVAL);
  EXPECT_EQ(fi_av_remove(plain.av, &addr, 1, FI_AUTH_KEY), -FI_EINVAL);
}

TEST_F(AvAuthKey, InsertReturnsOneHandlePerKey) {
  fi_addr_t a = 0, b = 0, again = 0;
  ASSERT_EQ(insert_key(d_.av, 0x1001, &a), 0);
  ASSERT_EQ(insert_key(d_.av, 0x2002, &b), 0);
  EXPECT_NE(a, b);
  ASSERT_EQ(insert_key(d_.av, 0x1001, &again), 0);
  EXPECT_EQ(again, a) << "a key already in keeps its handle";
  int ret;
  EXPECT_EQ(lookup_key(a, &ret), 0x1001u);
  EXPECT_EQ(ret, 0);
  EXPECT_EQ(lookup_key(b, &ret), 0x2002u);
  EXPECT_EQ(ret, 0);
}

TEST_F(AvAuthKey, InsertRefusesBadKeysArgumentsAndFlags) {
  fi_addr_t handle = 77;
  const uint64_t eight = 5;
  EXPECT_EQ(fi_av_insert_auth_key(d_.av, &eight, sizeof(eight), &handle, 0), -FI_EINVAL);
  const uint16_t two = 5;
  EXPECT_EQ(fi_av_insert_auth_key(d_.av, &two, sizeof(two), &handle, 0), -FI_EINVAL);
  EXPECT_EQ(insert_key(d_.av, 0, &handle), -FI_EINVAL) << "key 0 means no key";
  const uint32_t key = 5;
  EXPECT_EQ(fi_av_insert_auth_key(d_.av, nullptr, 4, &handle, 0), -FI_EINVAL);
  EXPECT_EQ(fi_av_insert_auth_key(d_.av, &key, 4, nullptr, 0), -FI_EINVAL);
  EXPECT_EQ(fi_av_insert_auth_key(d_.av, &key, 4, &handle, FI_MORE), -FI_EBADFLAGS);
  EXPECT_EQ(handle, 77u) << "untouched on error";
}

TEST_F(AvAuthKey, SixteenKeysThenENOSPC) {
  std::vector<fi_addr_t> handles(16);
  for (uint32_t i = 0; i < 16; ++i) ASSERT_EQ(insert_key(d_.av, 100 + i, &handles[i]), 0) << i;
  fi_addr_t extra = 0;
  EXPECT_EQ(insert_key(d_.av, 999, &extra), -FI_ENOSPC);
  EXPECT_EQ(insert_key(d_.av, 107, &extra), 0) << "a key already in needs no room";
  EXPECT_EQ(extra, handles[7]);
  ASSERT_EQ(fi_av_remove(d_.av, &handles[3], 1, FI_AUTH_KEY), 0);
  EXPECT_EQ(insert_key(d_.av, 999, &extra), 0);
}

TEST_F(AvAuthKey, HandlesAreNotAddresses) {
  fi_addr_t handle = 0;
  ASSERT_EQ(insert_key(d_.av, 0x55, &handle), 0);
  const fi_addr_t addr = insert_svc(1, 1);
  ASSERT_NE(addr, FI_ADDR_NOTAVAIL);
  EXPECT_NE(addr, handle);
  uint8_t buffer[64];
  size_t length = sizeof(buffer);
  EXPECT_EQ(fi_av_lookup(d_.av, handle, buffer, &length), -FI_ENOENT);
  EXPECT_EQ(fi_av_remove(d_.av, &handle, 1, 0), -FI_EINVAL) << "without FI_AUTH_KEY: an address";
  fi_addr_t as_handle = addr;
  EXPECT_EQ(fi_av_remove(d_.av, &as_handle, 1, FI_AUTH_KEY), -FI_EINVAL) << "no key handle";
}

TEST_F(AvAuthKey, InsertWithFiAuthKeyTakesOneHandlePerAddress) {
  fi_addr_t h1 = 0, h2 = 0;
  ASSERT_EQ(insert_key(d_.av, 0xa1, &h1), 0);
  ASSERT_EQ(insert_key(d_.av, 0xb2, &h2), 0);
  int ret;
  // insertsvc
  const fi_addr_t one = insert_svc(1, 1, FI_AUTH_KEY, h2);
  ASSERT_NE(one, FI_ADDR_NOTAVAIL);
  EXPECT_EQ(lookup_key(one, &ret), 0xb2u);
  EXPECT_EQ(ret, 0);
  // insertsym: 1 node x 3 queues, each with its own handle
  fi_addr_t sym[3] = {h1, h2, h1};
  ASSERT_EQ(fi_av_insertsym(d_.av, "02:00:00:00:00:09", 1, "4", 3, sym, FI_AUTH_KEY, nullptr), 3);
  EXPECT_EQ(lookup_key(sym[0], &ret), 0xa1u);
  EXPECT_EQ(lookup_key(sym[1], &ret), 0xb2u);
  EXPECT_EQ(lookup_key(sym[2], &ret), 0xa1u);
  // fi_av_insert of native addresses (what fi_av_lookup gives back)
  uint8_t native[2][64];
  size_t length = sizeof(native[0]);
  ASSERT_EQ(fi_av_lookup(d_.av, sym[0], native[0], &length), 0);
  ASSERT_EQ(fi_av_lookup(d_.av, sym[1], native[1], &length), 0);
  std::vector<uint8_t> packed(native[0], native[0] + length);
  packed.insert(packed.end(), native[1], native[1] + length);
  fi_addr_t two[2] = {h2, h1};
  ASSERT_EQ(fi_av_insert(d_.av, packed.data(), 2, two, FI_AUTH_KEY, nullptr), 2);
  EXPECT_EQ(lookup_key(two[0], &ret), 0xb2u);
  EXPECT_EQ(lookup_key(two[1], &ret), 0xa1u);
  // Without FI_AUTH_KEY: no key.
  const fi_addr_t plain = insert_svc(2, 1);
  ASSERT_NE(plain, FI_ADDR_NOTAVAIL);
  uint32_t key = 0;
  size_t size = sizeof(key);
  EXPECT_EQ(fi_av_lookup_auth_key(d_.av, plain, &key, &size), -FI_ENOKEY);
}

TEST_F(AvAuthKey, AnAddressWithABadHandleFailsAlone) {
  fi_addr_t h = 0;
  ASSERT_EQ(insert_key(d_.av, 0xc3, &h), 0);
  fi_addr_t sym[3] = {h, h + 5, h};
  int status[3] = {-1, -1, -1};
  EXPECT_EQ(fi_av_insertsym(d_.av, "02:00:00:00:00:0a", 1, "1", 3, sym, FI_AUTH_KEY | FI_SYNC_ERR,
                            status),
            2);
  EXPECT_EQ(status[0], 0);
  EXPECT_EQ(status[1], FI_EINVAL);
  EXPECT_EQ(status[2], 0);
  EXPECT_EQ(sym[1], FI_ADDR_NOTAVAIL);
  EXPECT_EQ(fi_av_insertsvc(d_.av, "02:00:00:00:00:0b", "1", nullptr, FI_AUTH_KEY, nullptr),
            -FI_EINVAL)
      << "FI_AUTH_KEY reads the handles from fi_addr";
}

TEST_F(AvAuthKey, LookupTruncatesAndReportsTheSize) {
  fi_addr_t h = 0;
  ASSERT_EQ(insert_key(d_.av, 0x04030201, &h), 0);
  uint8_t two[2] = {};
  size_t size = sizeof(two);
  EXPECT_EQ(fi_av_lookup_auth_key(d_.av, h, two, &size), -FI_ETOOSMALL);
  EXPECT_EQ(size, 4u);
  uint32_t whole = 0x04030201;
  EXPECT_EQ(std::memcmp(two, &whole, 2), 0) << "what fits is written";
  size = 0;
  EXPECT_EQ(fi_av_lookup_auth_key(d_.av, h, nullptr, &size), -FI_ETOOSMALL);
  EXPECT_EQ(size, 4u) << "a size query";
  uint32_t key = 0;
  size = sizeof(key);
  EXPECT_EQ(fi_av_lookup_auth_key(d_.av, h, &key, nullptr), -FI_EINVAL);
  EXPECT_EQ(fi_av_lookup_auth_key(d_.av, h + 1, &key, &size), -FI_EINVAL) << "unused handle";
  EXPECT_EQ(fi_av_lookup_auth_key(d_.av, 12345, &key, &size), -FI_EINVAL) << "unused address";
}

TEST_F(AvAuthKey, RemoveTakesHandlesAllOrNothing) {
  fi_addr_t h[2] = {};
  ASSERT_EQ(insert_key(d_.av, 0x11, &h[0]), 0);
  ASSERT_EQ(insert_key(d_.av, 0x22, &h[1]), 0);
  const fi_addr_t addr = insert_svc(3, 1, FI_AUTH_KEY, h[0]);
  ASSERT_NE(addr, FI_ADDR_NOTAVAIL);
  fi_addr_t mixed[2] = {h[0], h[1] + 7};
  EXPECT_EQ(fi_av_remove(d_.av, mixed, 2, FI_AUTH_KEY), -FI_EINVAL);
  int ret;
  EXPECT_EQ(lookup_key(h[0], &ret), 0x11u);
  EXPECT_EQ(ret, 0) << "nothing removed";
  EXPECT_EQ(fi_av_remove(d_.av, h, 2, FI_AUTH_KEY), 0);
  uint32_t key = 0;
  size_t size = sizeof(key);
  EXPECT_EQ(fi_av_lookup_auth_key(d_.av, h[0], &key, &size), -FI_EINVAL);
  EXPECT_EQ(lookup_key(addr, &ret), 0x11u) << "an address keeps the key it was inserted with";
  EXPECT_EQ(ret, 0);
  EXPECT_EQ(fi_av_remove(d_.av, h, 1, FI_AUTH_KEY | FI_MORE), -FI_EBADFLAGS);
}

TEST_F(AvAuthKey, PerInsertUserIdIsRefusedInAnAvAuthKeyDomain) {
  fi_addr_t id = 42;
  EXPECT_EQ(fi_av_insertsvc(d_.av, "02:00:00:00:00:01", "1", &id, FI_AV_USER_ID, nullptr),
            -FI_EINVAL);
  id = insert_svc(1, 1);
  ASSERT_NE(id, FI_ADDR_NOTAVAIL);
  EXPECT_EQ(fi_av_remove(d_.av, &id, 1, FI_AV_USER_ID), -FI_EINVAL);
}

// fi_av(3): removing a key "enabled endpoints" use is -FI_EBUSY; an
// endpoint takes its AV's keys at fi_enable and lets go at fi_close.
TEST_F(AvAuthKey, RemoveIsBusyWhileAnEnabledEndpointUsesTheKey) {
  fi_addr_t h = 0;
  ASSERT_EQ(insert_key(d_.av, 0x77, &h), 0);
  TestEndpoint ep;
  ASSERT_EQ(ep.open(d_.domain, d_.av, d_.info), 0);
  EXPECT_EQ(fi_av_remove(d_.av, &h, 1, FI_AUTH_KEY), -FI_EBUSY);
  ep.close();
  EXPECT_EQ(fi_av_remove(d_.av, &h, 1, FI_AUTH_KEY), 0);
}

#if OFI_DPDK_HAVE_CQ_ERR_SRC_ADDR
// fi_cq(3) 2.x, API 1.20 and later: an FI_EADDRNOTAVAIL entry's src_addr is
// the handle of the key the data came with; in an AV opened with
// FI_AV_USER_ID, the id fi_av_set_user_id(FI_AUTH_KEY) gave that handle,
// FI_ADDR_NOTAVAIL until then (fi_av(3)).  The stranger's AV holds the
// receiver's address with the same key; the receiver's AV does not hold
// the stranger.  Parameter: the receiver's AV is opened FI_AV_USER_ID.
class KeyedSourceErr : public ::testing::TestWithParam<bool> {
 protected:
  static constexpr uint32_t kKey = 0x600d;
  void SetUp() override {
    const uint64_t user_id = GetParam() ? FI_AV_USER_ID : 0;
    ASSERT_EQ(d_.open(FI_MSG | FI_SOURCE | FI_SOURCE_ERR | user_id, av_auth_key, user_id), 0);
    fi_av_attr attr{};
    attr.type = FI_AV_TABLE;
    ASSERT_EQ(fi_av_open(d_.domain, &attr, &stranger_av_, nullptr), 0);
    // Keys first: an endpoint takes its AV's keys at fi_enable.
    ASSERT_EQ(insert_key(d_.av, kKey, &handle_), 0);
    fi_addr_t stranger_handle = 0;
    ASSERT_EQ(insert_key(stranger_av_, kKey, &stranger_handle), 0);
    ASSERT_EQ(b_.open(d_.domain, d_.av, d_.info), 0);
    ASSERT_EQ(stranger_.open(d_.domain, stranger_av_, d_.info), 0);
    b_for_stranger_ = stranger_handle;
    ASSERT_EQ(fi_av_insert(stranger_av_, b_.name, 1, &b_for_stranger_, FI_AUTH_KEY, nullptr), 1);
  }
  void TearDown() override {
    stranger_.close();
    b_.close();
    if (stranger_av_) {
      EXPECT_EQ(fi_close(&stranger_av_->fid), 0);
    }
  }
  // One message from the stranger; returns the receiver's error entry.
  fi_cq_err_entry message_from_stranger() {
    char buffer[16] = {};
    fi_cq_err_entry error{};
    EXPECT_EQ(fi_recv(b_.ep, buffer, sizeof(buffer), nullptr, FI_ADDR_UNSPEC, buffer), 0);
    EXPECT_EQ(fi_send(stranger_.ep, "knock", 5, nullptr, b_for_stranger_, nullptr), 0);
    fi_cq_data_entry entry{};
    EXPECT_EQ(wait_for_completion(b_.rx_cq, &entry, kWait), -FI_EAVAIL);
    EXPECT_EQ(fi_cq_readerr(b_.rx_cq, &error, 0), 1);
    EXPECT_EQ(error.err, FI_EADDRNOTAVAIL);
    EXPECT_EQ(std::string(buffer, error.len), "knock");
    EXPECT_EQ(wait_for_completion(stranger_.tx_cq, &entry, kWait), 1);
    return error;
  }
  Opened d_;
  fid_av* stranger_av_ = nullptr;
  TestEndpoint b_, stranger_;
  fi_addr_t handle_ = FI_ADDR_NOTAVAIL;
  fi_addr_t b_for_stranger_ = FI_ADDR_NOTAVAIL;
};

TEST_P(KeyedSourceErr, SrcAddrIsTheKeyHandleOrItsUserId) {
  if (!GetParam()) {
    EXPECT_EQ(message_from_stranger().src_addr, handle_);
    return;
  }
  EXPECT_EQ(message_from_stranger().src_addr, FI_ADDR_NOTAVAIL) << "no user id set yet";
  ASSERT_EQ(fi_av_set_user_id(d_.av, handle_, 4242, FI_AUTH_KEY), 0);
  EXPECT_EQ(message_from_stranger().src_addr, 4242u);
}

INSTANTIATE_TEST_SUITE_P(AvUserId, KeyedSourceErr, ::testing::Bool());
#endif  // OFI_DPDK_HAVE_CQ_ERR_SRC_ADDR
#endif  // OFI_DPDK_HAVE_AV_AUTH_KEY

#if OFI_DPDK_HAVE_AV_USER_ID
// --- libfabric 2.x: FI_AV_USER_ID on fi_av_open --------------------------------

TEST(AvUserIdOpen, NeedsTheDomainCap) {
  {
    Opened d;
    ASSERT_EQ(d.open(FI_MSG, [](fi_info*) {}), 0);
    EXPECT_FALSE(d.info->domain_attr->caps & FI_AV_USER_ID) << "primary: only when asked for";
    fi_av_attr attr{};
    attr.type = FI_AV_TABLE;
    attr.flags = FI_AV_USER_ID;
    fid_av* av = nullptr;
    EXPECT_EQ(fi_av_open(d.domain, &attr, &av, nullptr), -FI_EINVAL);
  }
  {
    Opened d;
    ASSERT_EQ(d.open(
                  FI_MSG | FI_AV_USER_ID, [](fi_info*) {}, FI_AV_USER_ID),
              0);
    EXPECT_TRUE(d.info->domain_attr->caps & FI_AV_USER_ID);
  }
  {
    Opened d;
    ASSERT_EQ(d.open(
                  FI_MSG, [](fi_info* h) { h->domain_attr->caps = FI_AV_USER_ID; }, FI_AV_USER_ID),
              0)
        << "asked for as a domain cap";
    EXPECT_TRUE(d.info->domain_attr->caps & FI_AV_USER_ID);
  }
}

class AvUserId : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_EQ(d_.open(
                  FI_MSG | FI_SOURCE | FI_AV_USER_ID, [](fi_info*) {}, FI_AV_USER_ID),
              0);
  }
  Opened d_;
};

TEST_F(AvUserId, SetUserIdArgumentsAndFlags) {
  fi_addr_t addr = FI_ADDR_NOTAVAIL;
  ASSERT_EQ(fi_av_insertsvc(d_.av, "02:00:00:00:00:01", "1", &addr, 0, nullptr), 1);
  EXPECT_EQ(fi_av_set_user_id(d_.av, addr, 99, 0), 0);
  EXPECT_EQ(fi_av_set_user_id(d_.av, addr + 1, 99, 0), -FI_EINVAL) << "unused fi_addr";
  EXPECT_EQ(fi_av_set_user_id(d_.av, addr, 99, FI_MORE), -FI_EBADFLAGS);
  EXPECT_EQ(fi_av_set_user_id(d_.av, addr, 99, FI_AUTH_KEY), -FI_EINVAL)
      << "with FI_AUTH_KEY fi_addr is a key handle";
  fi_addr_t id = 5;
  EXPECT_EQ(fi_av_insertsvc(d_.av, "02:00:00:00:00:02", "1", &id, FI_AV_USER_ID, nullptr),
            -FI_EINVAL)
      << "fi_av(3): the insert flag is invalid with an AV opened FI_AV_USER_ID";
  EXPECT_EQ(fi_av_remove(d_.av, &addr, 1, FI_AV_USER_ID), -FI_EINVAL);
  EXPECT_EQ(fi_av_remove(d_.av, &addr, 1, 0), 0);
  EXPECT_EQ(fi_av_set_user_id(d_.av, addr, 99, 0), -FI_EINVAL) << "removed";
}

TEST(AvUserIdPlain, SetUserIdNeedsAnAvOpenedWithFiAvUserId) {
  Opened d;
  ASSERT_EQ(d.open(FI_MSG | FI_AV_USER_ID, [](fi_info*) {}), 0);
  fi_addr_t addr = FI_ADDR_NOTAVAIL;
  ASSERT_EQ(fi_av_insertsvc(d.av, "02:00:00:00:00:01", "1", &addr, 0, nullptr), 1);
  EXPECT_EQ(fi_av_set_user_id(d.av, addr, 99, 0), -FI_EINVAL);
}

// fi_av(3): "all subsequent target events corresponding to the address
// being inserted will return FI_ADDR_NOTAVAIL until the user defines a
// user ID"; then FI_SOURCE reports that id.
TEST_F(AvUserId, SourceIsNotAvailUntilTheUserIdIsSet) {
  TestEndpoint a, b;
  ASSERT_EQ(a.open(d_.domain, d_.av, d_.info), 0);
  ASSERT_EQ(b.open(d_.domain, d_.av, d_.info), 0);
  char buffer[32] = {};
  fi_cq_data_entry entry{};
  fi_addr_t source = 777;
  for (fi_addr_t expected : {FI_ADDR_NOTAVAIL, fi_addr_t{0xfeed}}) {
    if (expected != FI_ADDR_NOTAVAIL) {
      ASSERT_EQ(fi_av_set_user_id(d_.av, a.addr, expected, 0), 0);
    }
    ASSERT_EQ(fi_recv(b.ep, buffer, sizeof(buffer), nullptr, FI_ADDR_UNSPEC, buffer), 0);
    ASSERT_EQ(fi_send(a.ep, "hi", 2, nullptr, b.addr, nullptr), 0);
    ASSERT_EQ(wait_for_completion(b.rx_cq, &entry, kWait, &source), 1);
    EXPECT_EQ(source, expected);
    ASSERT_EQ(wait_for_completion(a.tx_cq, &entry, kWait), 1);
  }
  a.close();
  b.close();
}

#if OFI_DPDK_HAVE_AV_AUTH_KEY
TEST(AvUserIdAuthKey, SetUserIdOfAKeyHandle) {
  Opened d;
  ASSERT_EQ(d.open(FI_MSG | FI_AV_USER_ID, av_auth_key, FI_AV_USER_ID), 0);
  fi_addr_t h = 0;
  ASSERT_EQ(insert_key(d.av, 0x33, &h), 0);
  EXPECT_EQ(fi_av_set_user_id(d.av, h, 1234, FI_AUTH_KEY), 0);
  EXPECT_EQ(fi_av_set_user_id(d.av, h + 1, 1234, FI_AUTH_KEY), -FI_EINVAL);
  EXPECT_EQ(fi_av_set_user_id(d.av, h, 1234, 0), -FI_EINVAL) << "without FI_AUTH_KEY: an address";
}
#endif
#endif  // OFI_DPDK_HAVE_AV_USER_ID

}  // namespace
}  // namespace ofi_dpdk::test
