// fi_av(3) beyond the basics, through stock libfabric on one net_ring port:
// fi_av_open's attributes and flags, the insert flags (FI_MORE, FI_SYNC_ERR,
// FI_AV_USER_ID and its FI_SOURCE completions), fi_av_insertsym,
// rx_ctx_bits and fi_rx_addr, fi_av_remove of a peer with a send in flight,
// FI_ADDR_STR lookups, and a million entries.
#include <gtest/gtest.h>

#include <array>
#include <chrono>
#include <cstring>
#include <string>
#include <vector>

#include "lib/av/address.h"
#include "test/support/messaging.h"

namespace ofi_dpdk::test {
namespace {

using Native = std::array<uint8_t, av::kNativeAddressSize>;

av::Address make_address(uint32_t n, uint16_t queue, uint32_t session = 0) {
  av::Address address;
  const uint8_t mac[6] = {0x02,
                          0x00,
                          static_cast<uint8_t>(n >> 24),
                          static_cast<uint8_t>(n >> 16),
                          static_cast<uint8_t>(n >> 8),
                          static_cast<uint8_t>(n)};
  std::memcpy(address.mac, mac, 6);
  address.queue = queue;
  address.session = session;
  return address;
}

Native native(const av::Address& address) {
  Native bytes;
  av::to_native(address, bytes.data());
  return bytes;
}

std::vector<uint8_t> packed(std::initializer_list<Native> addresses) {
  std::vector<uint8_t> bytes;
  for (const Native& a : addresses) bytes.insert(bytes.end(), a.begin(), a.end());
  return bytes;
}

Native bad_address() {
  Native bad = native(make_address(0xbad, 1));
  bad[0] = 0;  // not the provider's format tag
  return bad;
}

class AvFlagsTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_EQ(domain_.open(nullptr, caps()), 0); }
  void TearDown() override {
    for (fid_av* av : extra_) {
      EXPECT_EQ(fi_close(&av->fid), 0);
    }
    domain_.close();
  }
  virtual uint64_t caps() const { return FI_MSG; }

  // Opens another AV on the domain (closed in TearDown); returns its error.
  int open_av(fi_av_attr attr, fid_av** out) {
    const int ret = fi_av_open(domain_.domain, &attr, out, nullptr);
    if (ret == 0) extra_.push_back(*out);
    return ret;
  }
  std::optional<av::Address> lookup(fid_av* av, fi_addr_t fi_addr) {
    uint8_t bytes[av::kNativeAddressSize];
    size_t length = sizeof(bytes);
    if (fi_av_lookup(av, fi_addr, bytes, &length) != 0) return std::nullopt;
    return av::from_native(bytes, length);
  }

  TestDomain domain_;
  std::vector<fid_av*> extra_;
};

TEST_F(AvFlagsTest, UnspecTypeComesBackAsTable) {
  fi_av_attr attr{};
  attr.type = FI_AV_UNSPEC;
  fid_av* av = nullptr;
  fi_av_attr given = attr;
  ASSERT_EQ(fi_av_open(domain_.domain, &given, &av, nullptr), 0);
  extra_.push_back(av);
  EXPECT_EQ(given.type, FI_AV_TABLE);
}

TEST_F(AvFlagsTest, MapBehavesLikeTable) {
  fi_av_attr attr{};
  attr.type = FI_AV_MAP;
  fid_av* av = nullptr;
  ASSERT_EQ(open_av(attr, &av), 0);
  const std::vector<uint8_t> two = packed({native(make_address(1, 1)), native(make_address(2, 2))});
  fi_addr_t fi_addrs[2] = {99, 99};
  ASSERT_EQ(fi_av_insert(av, two.data(), 2, fi_addrs, 0, nullptr), 2);
  EXPECT_EQ(fi_addrs[0], 0u);
  EXPECT_EQ(fi_addrs[1], 1u);
  EXPECT_EQ(lookup(av, fi_addrs[1]), make_address(2, 2));
}

TEST_F(AvFlagsTest, CountHintEpPerNodeAndSymmetricAreAccepted) {
  fi_av_attr attr{};
  attr.type = FI_AV_TABLE;
  attr.count = 100000;
  attr.ep_per_node = 4;
  attr.flags = FI_SYMMETRIC;
  fid_av* av = nullptr;
  ASSERT_EQ(open_av(attr, &av), 0);
  const Native a = native(make_address(1, 1));
  EXPECT_EQ(fi_av_insert(av, a.data(), 1, nullptr, 0, nullptr), 1);
  // A hint far beyond memory is still only a hint.
  attr.count = ~size_t{0};
  attr.flags = 0;
  ASSERT_EQ(open_av(attr, &av), 0);
  EXPECT_EQ(fi_av_insert(av, a.data(), 1, nullptr, 0, nullptr), 1);
}

TEST_F(AvFlagsTest, BadAttributesAreRefused) {
  fid_av* av = nullptr;
  fi_av_attr attr{};
  attr.type = static_cast<fi_av_type>(42);
  EXPECT_EQ(open_av(attr, &av), -FI_EINVAL) << "unknown type";
  attr = {};
  attr.flags = FI_SEND;
  EXPECT_EQ(open_av(attr, &av), -FI_EINVAL) << "unknown flag";
  attr = {};
  attr.rx_ctx_bits = -1;
  EXPECT_EQ(open_av(attr, &av), -FI_EINVAL);
  attr.rx_ctx_bits = 33;
  EXPECT_EQ(open_av(attr, &av), -FI_EINVAL);
  attr = {};
  attr.flags = FI_READ;
  EXPECT_EQ(open_av(attr, &av), -FI_EINVAL) << "fi_av(3): a read-only AV must be named";
  EXPECT_EQ(fi_av_open(domain_.domain, nullptr, &av, nullptr), -FI_EINVAL);
}

TEST_F(AvFlagsTest, InsertFlags) {
  const Native a = native(make_address(1, 1)), b = native(make_address(2, 2));
  fi_addr_t fi_addr = 99;
  EXPECT_EQ(fi_av_insert(domain_.av, a.data(), 1, &fi_addr, FI_SEND, nullptr), -FI_EBADFLAGS);
  EXPECT_EQ(fi_addr, 99u) << "a refused call writes nothing";
  // FI_MORE: a hint; the addresses are in at once all the same.
  EXPECT_EQ(fi_av_insert(domain_.av, a.data(), 1, &fi_addr, FI_MORE, nullptr), 1);
  EXPECT_EQ(fi_addr, 0u);
  EXPECT_EQ(fi_av_insert(domain_.av, b.data(), 1, &fi_addr, 0, nullptr), 1);
  EXPECT_EQ(fi_addr, 1u);
  EXPECT_EQ(lookup(domain_.av, 0), make_address(1, 1));
}

TEST_F(AvFlagsTest, SyncErrWritesEachAddressStatus) {
  const std::vector<uint8_t> three =
      packed({native(make_address(1, 1)), bad_address(), native(make_address(3, 3))});
  int status[3] = {-1, -1, -1};
  fi_addr_t fi_addrs[3] = {99, 99, 99};
  EXPECT_EQ(fi_av_insert(domain_.av, three.data(), 3, fi_addrs, FI_SYNC_ERR, status), 2);
  EXPECT_EQ(status[0], 0);
  EXPECT_EQ(status[1], FI_EINVAL);
  EXPECT_EQ(status[2], 0);
  EXPECT_EQ(fi_addrs[0], 0u);
  EXPECT_EQ(fi_addrs[1], FI_ADDR_NOTAVAIL);
  EXPECT_EQ(fi_addrs[2], 1u);
  // Without fi_addr too: the status array is the only report.
  int one = -1;
  const Native bad = bad_address();
  EXPECT_EQ(fi_av_insert(domain_.av, bad.data(), 1, nullptr, FI_SYNC_ERR, &one), 0);
  EXPECT_EQ(one, FI_EINVAL);
  // The array is required.
  EXPECT_EQ(fi_av_insert(domain_.av, three.data(), 3, fi_addrs, FI_SYNC_ERR, nullptr), -FI_EINVAL);
  // insertsvc and insertsym take it as well.
  EXPECT_EQ(fi_av_insertsvc(domain_.av, "nonsense", "1", nullptr, FI_SYNC_ERR, &one), 0);
  EXPECT_EQ(one, FI_EINVAL);
  int sym[2] = {-1, -1};
  EXPECT_EQ(fi_av_insertsym(domain_.av, "02:00:00:00:00:10", 1, "1", 2, nullptr, FI_SYNC_ERR, sym),
            2);
  EXPECT_EQ(sym[0], 0);
  EXPECT_EQ(sym[1], 0);
}

TEST_F(AvFlagsTest, UserIdIsInputAndTheIndexStillComesOut) {
  const std::vector<uint8_t> two = packed({native(make_address(1, 1)), native(make_address(2, 2))});
  fi_addr_t ids[2] = {0x1000, 0x2000};
  EXPECT_EQ(fi_av_insert(domain_.av, two.data(), 2, ids, FI_AV_USER_ID, nullptr), 2);
  EXPECT_EQ(ids[0], 0u);
  EXPECT_EQ(ids[1], 1u);
  EXPECT_EQ(fi_av_insert(domain_.av, two.data(), 2, nullptr, FI_AV_USER_ID, nullptr), -FI_EINVAL)
      << "the user ids come from fi_addr";
  fi_addr_t id = 0x3000;
  EXPECT_EQ(fi_av_insertsvc(domain_.av, "02:00:00:00:00:03", "3", &id, FI_AV_USER_ID, nullptr), 1);
  EXPECT_EQ(id, 2u);
}

TEST_F(AvFlagsTest, InsertsvcWithAStringNodeNeedsANullService) {
  fi_addr_t fi_addr = 99;
  const std::string text = av::to_string(make_address(7, 7));
  EXPECT_EQ(fi_av_insertsvc(domain_.av, text.c_str(), "7", &fi_addr, 0, nullptr), 0);
  EXPECT_EQ(fi_addr, FI_ADDR_NOTAVAIL);
  EXPECT_EQ(fi_av_insertsvc(domain_.av, text.c_str(), nullptr, &fi_addr, 0, nullptr), 1);
  EXPECT_EQ(fi_addr, 0u);
  EXPECT_EQ(fi_av_insertsvc(domain_.av, "02:00:00:00:00:01", "65535", &fi_addr, 0, nullptr), 0)
      << "65535 is no queue";
  EXPECT_EQ(fi_av_insertsvc(domain_.av, nullptr, "1", &fi_addr, 0, nullptr), -FI_EINVAL);
}

// fi_av(3): "All service addresses for a node will be inserted before the
// next node is inserted."  The MAC counts as one 48-bit number.
TEST_F(AvFlagsTest, InsertsymGoesNodeByNodeThenQueueByQueue) {
  fi_addr_t fi_addrs[6];
  ASSERT_EQ(fi_av_insertsym(domain_.av, "02:00:00:00:00:ff", 2, "5", 3, fi_addrs, 0, nullptr), 6);
  const uint8_t macs[2][6] = {{0x02, 0, 0, 0, 0, 0xff}, {0x02, 0, 0, 0, 1, 0x00}};
  for (int i = 0; i < 6; ++i) {
    EXPECT_EQ(fi_addrs[i], static_cast<fi_addr_t>(i));
    const auto got = lookup(domain_.av, fi_addrs[i]);
    ASSERT_TRUE(got);
    EXPECT_EQ(std::memcmp(got->mac, macs[i / 3], 6), 0) << i;
    EXPECT_EQ(got->queue, 5 + i % 3) << i;
  }
  // An fi_dpdk:// node with service NULL starts at its queue.
  fi_addr_t more[2];
  const std::string text = av::to_string(make_address(0x40, 9));
  ASSERT_EQ(fi_av_insertsym(domain_.av, text.c_str(), 1, nullptr, 2, more, 0, nullptr), 2);
  EXPECT_EQ(lookup(domain_.av, more[1]), make_address(0x40, 10));
  // Nothing asked: nothing inserted.
  EXPECT_EQ(fi_av_insertsym(domain_.av, "02:00:00:00:00:01", 0, "1", 4, more, 0, nullptr), 0);
  // Ranges that run out, and nonsense, are refused as a whole.
  EXPECT_EQ(fi_av_insertsym(domain_.av, "ff:ff:ff:ff:ff:ff", 2, "1", 1, more, 0, nullptr),
            -FI_EINVAL);
  EXPECT_EQ(fi_av_insertsym(domain_.av, "02:00:00:00:00:01", 1, "65534", 2, more, 0, nullptr),
            -FI_EINVAL);
  EXPECT_EQ(fi_av_insertsym(domain_.av, "host10", 2, "1", 1, more, 0, nullptr), -FI_EINVAL);
  EXPECT_EQ(fi_av_insertsym(domain_.av, nullptr, 2, "1", 1, more, 0, nullptr), -FI_EINVAL);
  fi_addr_t next = 99;
  const Native a = native(make_address(0x50, 1));
  EXPECT_EQ(fi_av_insert(domain_.av, a.data(), 1, &next, 0, nullptr), 1);
  EXPECT_EQ(next, 8u) << "refused calls took no index";
}

TEST_F(AvFlagsTest, RemoveRules) {
  const std::vector<uint8_t> two = packed({native(make_address(1, 1)), native(make_address(2, 2))});
  ASSERT_EQ(fi_av_insert(domain_.av, two.data(), 2, nullptr, 0, nullptr), 2);
  fi_addr_t zero = 0;
  EXPECT_EQ(fi_av_remove(domain_.av, &zero, 1, FI_MORE), -FI_EBADFLAGS);
  fi_addr_t mixed[2] = {0, 77};
  EXPECT_EQ(fi_av_remove(domain_.av, mixed, 2, 0), -FI_EINVAL);
  EXPECT_TRUE(lookup(domain_.av, 0)) << "all or nothing";
  EXPECT_EQ(fi_av_remove(domain_.av, nullptr, 1, 0), -FI_EINVAL);
  EXPECT_EQ(fi_av_remove(domain_.av, nullptr, 0, 0), 0);
  fi_addr_t twice[2] = {1, 1};
  EXPECT_EQ(fi_av_remove(domain_.av, twice, 2, 0), 0);
  EXPECT_FALSE(lookup(domain_.av, 1));
  EXPECT_TRUE(lookup(domain_.av, 0));
}

TEST_F(AvFlagsTest, LookupOfAnUnusedIndexIsENOENT) {
  uint8_t bytes[16];
  size_t length = sizeof(bytes);
  EXPECT_EQ(fi_av_lookup(domain_.av, 0, bytes, &length), -FI_ENOENT);
  EXPECT_EQ(fi_av_lookup(domain_.av, FI_ADDR_NOTAVAIL, bytes, &length), -FI_ENOENT);
  EXPECT_EQ(fi_av_lookup(domain_.av, 0, bytes, nullptr), -FI_EINVAL);
}

// rx_ctx_bits: the top bits of an fi_addr name a receive context: context
// i of an address is its queue + i (a scalable endpoint's receive contexts;
// test_scalable_ep.cc), context 0 a plain endpoint.  A context beyond the
// queue ids a port gives endpoints is refused at send time.
TEST_F(AvFlagsTest, RxCtxBitsSelectAContextOfTheAddress) {
  fi_av_attr attr{};
  attr.type = FI_AV_TABLE;
  attr.rx_ctx_bits = 8;
  fid_av* av = nullptr;
  ASSERT_EQ(open_av(attr, &av), 0);
  TestEndpoint a, b;
  ASSERT_EQ(a.open(domain_.domain, av, domain_.info), 0);
  ASSERT_EQ(b.open(domain_.domain, av, domain_.info), 0);
  EXPECT_EQ(fi_rx_addr(b.addr, 0, 8), b.addr);
  expect_message_delivered(a, fi_rx_addr(b.addr, 0, 8), b, "context 0");
  const fi_addr_t context1 = fi_rx_addr(b.addr, 1, 8);
  EXPECT_NE(context1, b.addr);
  EXPECT_EQ(fi_send(a.ep, "x", 1, nullptr, fi_rx_addr(b.addr, 100, 8), nullptr), -FI_EINVAL)
      << "queue id beyond the port's 64";
  // Lookup ignores the context bits: it is the endpoint's address.
  uint8_t bytes[16];
  size_t length = sizeof(bytes);
  EXPECT_EQ(fi_av_lookup(av, context1, bytes, &length), 0);
  EXPECT_EQ(std::memcmp(bytes, b.name, sizeof(bytes)), 0);
  // Removal takes the addresses insert returned, not context addresses.
  fi_addr_t remove = context1;
  EXPECT_EQ(fi_av_remove(av, &remove, 1, 0), -FI_EINVAL);
  a.close();
  b.close();
}

// fi_av_remove tells the bound endpoints' transports to forget the peer:
// a send in flight to it ends with an error completion at once, not after
// FI_DPDK_PEER_TIMEOUT_MS (5 s by default), and later sends are refused.
TEST_F(AvFlagsTest, RemovingAPeerFailsItsSendInFlight) {
  TestEndpoint a;
  ASSERT_EQ(a.open(domain_.domain, domain_.av, domain_.info), 0);
  // An endpoint that does not exist: a's own port and MAC, queue 50.
  auto nobody = av::from_native(a.name, a.name_len);
  ASSERT_TRUE(nobody);
  nobody->queue = 50;
  nobody->session = 0;
  const Native bytes = native(*nobody);
  fi_addr_t ghost = FI_ADDR_NOTAVAIL;
  ASSERT_EQ(fi_av_insert(domain_.av, bytes.data(), 1, &ghost, 0, nullptr), 1);
  int context = 0;
  ASSERT_EQ(fi_send(a.ep, "hello", 5, nullptr, ghost, &context), 0);
  fi_cq_data_entry entry;
  EXPECT_TRUE(stays_empty(a.tx_cq, 0.05)) << "nobody acks: still in flight";
  const auto start = std::chrono::steady_clock::now();
  ASSERT_EQ(fi_av_remove(domain_.av, &ghost, 1, 0), 0);
  EXPECT_EQ(wait_for_completion(a.tx_cq, &entry, 2.0), -FI_EAVAIL);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_LT(seconds, 1.0) << "the error came from the peer timeout, not the removal";
  fi_cq_err_entry error{};
  ASSERT_EQ(fi_cq_readerr(a.tx_cq, &error, 0), 1);
  EXPECT_EQ(error.op_context, &context);
  EXPECT_EQ(error.err, FI_EIO);
  EXPECT_EQ(fi_send(a.ep, "again", 5, nullptr, ghost, nullptr), -FI_EINVAL);
  // The endpoint itself still works.
  expect_message_delivered(a, a.addr, a, "to myself");
  a.close();
}

// Two entries for one endpoint: removing one keeps the peer's connection.
TEST_F(AvFlagsTest, RemovingADuplicateKeepsThePeer) {
  TestEndpoint a, b;
  ASSERT_EQ(a.open(domain_.domain, domain_.av, domain_.info), 0);
  ASSERT_EQ(b.open(domain_.domain, domain_.av, domain_.info), 0);
  fi_addr_t second = FI_ADDR_NOTAVAIL;
  ASSERT_EQ(fi_av_insert(domain_.av, b.name, 1, &second, 0, nullptr), 1);
  EXPECT_NE(second, b.addr) << "a duplicate gets its own index";
  expect_message_delivered(a, b.addr, b, "first");
  ASSERT_EQ(fi_av_remove(domain_.av, &b.addr, 1, 0), 0);
  expect_message_delivered(a, second, b, "through the duplicate");
  a.close();
  b.close();
}

TEST_F(AvFlagsTest, AMillionEntries) {
  fi_av_attr attr{};
  attr.type = FI_AV_TABLE;
  attr.count = 1'000'000;
  fid_av* av = nullptr;
  ASSERT_EQ(open_av(attr, &av), 0);
  // 16 MACs x 62500 queues.
  std::vector<fi_addr_t> fi_addrs(1'000'000);
  ASSERT_EQ(fi_av_insertsym(av, "02:00:00:00:10:00", 16, "0", 62500, fi_addrs.data(), 0, nullptr),
            1'000'000);
  EXPECT_EQ(fi_addrs.back(), 999'999u);
  EXPECT_EQ(lookup(av, 999'999), make_address(0x100f, 62499));
  EXPECT_EQ(lookup(av, 62500), make_address(0x1001, 0));
  std::vector<fi_addr_t> evens;
  for (fi_addr_t i = 0; i < 1'000'000; i += 2) evens.push_back(i);
  ASSERT_EQ(fi_av_remove(av, evens.data(), evens.size(), 0), 0);
  EXPECT_FALSE(lookup(av, 0));
  EXPECT_TRUE(lookup(av, 1));
  const Native a = native(make_address(1, 1));
  fi_addr_t next = 99;
  ASSERT_EQ(fi_av_insert(av, a.data(), 1, &next, 0, nullptr), 1);
  EXPECT_EQ(next, 0u);
}

// FI_SOURCE: a receive reports the sender's fi_addr, or its user id when it
// was inserted with FI_AV_USER_ID, or FI_ADDR_NOTAVAIL for a sender the AV
// does not hold.
class AvSourceTest : public AvFlagsTest {
 protected:
  uint64_t caps() const override { return FI_MSG | FI_SOURCE; }

  // Sends from `from` to `to` and returns the source b's completion reports.
  fi_addr_t source_of_message(TestEndpoint& from, TestEndpoint& to) {
    char buffer[16];
    EXPECT_EQ(fi_recv(to.ep, buffer, sizeof(buffer), nullptr, FI_ADDR_UNSPEC, nullptr), 0);
    // Removing `from` from the AV also dropped `to`'s receive state for it,
    // so the first send after a removal may fail once with FI_EIO (`to`
    // answers with a RESET) before `from` reconnects.
    for (int attempt = 0; attempt < 2; ++attempt) {
      EXPECT_EQ(fi_send(from.ep, "hi", 2, nullptr, to.addr, nullptr), 0);
      fi_cq_data_entry sent;
      const ssize_t ret = wait_for_completion(from.tx_cq, &sent);
      if (ret == 1) break;
      EXPECT_EQ(ret, -FI_EAVAIL);
      fi_cq_err_entry error{};
      EXPECT_EQ(fi_cq_readerr(from.tx_cq, &error, 0), 1);
      EXPECT_EQ(error.err, FI_EIO);
      EXPECT_EQ(attempt, 0) << "failed twice";
    }
    fi_cq_data_entry entry;
    fi_addr_t source = 12345;
    EXPECT_EQ(wait_for_completion(to.rx_cq, &entry, 5, &source), 1);
    return source;
  }
};

TEST_F(AvSourceTest, CompletionsReportTheIndexTheUserIdOrNotavail) {
  TestEndpoint a, b;
  ASSERT_EQ(a.open(domain_.domain, domain_.av, domain_.info), 0);
  ASSERT_EQ(b.open(domain_.domain, domain_.av, domain_.info), 0);
  EXPECT_EQ(source_of_message(a, b), a.addr);
  // a again, with a user id.
  ASSERT_EQ(fi_av_remove(domain_.av, &a.addr, 1, 0), 0);
  fi_addr_t id = 0xfeed0000beefull;
  ASSERT_EQ(fi_av_insert(domain_.av, a.name, 1, &id, FI_AV_USER_ID, nullptr), 1);
  EXPECT_EQ(id, a.addr) << "the index comes back as usual";
  EXPECT_EQ(source_of_message(a, b), 0xfeed0000beefull);
  // Unknown to the AV.
  ASSERT_EQ(fi_av_remove(domain_.av, &a.addr, 1, 0), 0);
  EXPECT_EQ(source_of_message(a, b), FI_ADDR_NOTAVAIL);
  a.close();
  b.close();
}

// FI_AV_USER_ID as a capability (fi_getinfo(3)): asked for, it is granted,
// and the user ids given at insert come back in completions in place of the
// index, while transfers still use the index.
class AvUserIdCapTest : public AvSourceTest {
 protected:
  uint64_t caps() const override { return FI_MSG | FI_SOURCE | FI_AV_USER_ID; }
};

TEST_F(AvUserIdCapTest, GrantedAndCompletionsCarryTheUserId) {
  EXPECT_TRUE(domain_.info->caps & FI_AV_USER_ID);
  TestEndpoint a, b;
  ASSERT_EQ(a.open(domain_.domain, domain_.av, domain_.info), 0);
  ASSERT_EQ(b.open(domain_.domain, domain_.av, domain_.info), 0);
  // a again, under a second index that carries a user id: FI_SOURCE reports
  // the lowest index naming the sender, so drop the plain one first.
  ASSERT_EQ(fi_av_remove(domain_.av, &a.addr, 1, 0), 0);
  fi_addr_t id = 0x00c0ffee;
  ASSERT_EQ(fi_av_insert(domain_.av, a.name, 1, &id, FI_AV_USER_ID, nullptr), 1);
  EXPECT_EQ(id, a.addr);
  EXPECT_EQ(source_of_message(a, b), 0x00c0ffeeu);
  // b sends to a through the index, not the user id.
  EXPECT_EQ(source_of_message(b, a), b.addr) << "b was inserted without a user id";
  a.close();
  b.close();
}

// FI_ADDR_STR: lookups give the string form, truncated and NUL-terminated.
TEST(AvStringFormat, LookupGivesTheStringAndTruncates) {
  fi_info* hints = dpdk_hints();
  hints->addr_format = FI_ADDR_STR;
  fi_info* info = nullptr;
  ASSERT_EQ(fi_getinfo(FI_VERSION(1, 17), nullptr, nullptr, 0, hints, &info), 0);
  fi_freeinfo(hints);
  fid_fabric* fabric = nullptr;
  fid_domain* domain = nullptr;
  fid_av* av = nullptr;
  ASSERT_EQ(fi_fabric(info->fabric_attr, &fabric, nullptr), 0);
  ASSERT_EQ(fi_domain(fabric, info, &domain, nullptr), 0);
  fi_av_attr attr{};
  ASSERT_EQ(fi_av_open(domain, &attr, &av, nullptr), 0);
  const std::string text = av::to_string(make_address(3, 17, 0xabcdef01));
  const char* strings[2] = {text.c_str(), "fi_dpdk://nonsense"};
  fi_addr_t fi_addrs[2];
  EXPECT_EQ(fi_av_insert(av, strings, 2, fi_addrs, 0, nullptr), 1);
  EXPECT_EQ(fi_addrs[1], FI_ADDR_NOTAVAIL);
  char full[64];
  size_t length = sizeof(full);
  ASSERT_EQ(fi_av_lookup(av, fi_addrs[0], full, &length), 0);
  EXPECT_EQ(std::string(full), text);
  EXPECT_EQ(length, text.size() + 1);
  char small[10];
  std::memset(small, '#', sizeof(small));
  length = 8;
  EXPECT_EQ(fi_av_lookup(av, fi_addrs[0], small, &length), -FI_ETOOSMALL);
  EXPECT_EQ(length, text.size() + 1);
  EXPECT_EQ(std::string(small), text.substr(0, 7));
  EXPECT_EQ(small[8], '#');
  char printable[64];
  length = sizeof(printable);
  EXPECT_EQ(fi_av_straddr(av, text.c_str(), printable, &length), printable);
  EXPECT_EQ(std::string(printable), text);
  EXPECT_EQ(fi_close(&av->fid), 0);
  EXPECT_EQ(fi_close(&domain->fid), 0);
  EXPECT_EQ(fi_close(&fabric->fid), 0);
  fi_freeinfo(info);
}

}  // namespace
}  // namespace ofi_dpdk::test
