// test_getinfo_ring.cc: fi_getinfo(3) through stock libfabric, which loads
// libdpdk-fi.so from FI_PROVIDER_PATH, on the ports of FI_DPDK_EAL_ARGS:
// how node, service and FI_SOURCE become addresses, FI_PROV_ATTR_ONLY, that
// a miss is exactly -FI_ENODATA, and that an endpoint opened from an info
// gets the queue its src_addr names.
//
// The environment (test/ofi/meson.build) is ring_env's net_ring0 plus a
// net_null0 port with no-rx=1.  net_ring's MAC is 00:00:00:00:00:00, which
// a request reads as "any port"; net_null's is random and locally
// administered, so the MAC cases test matching, and picking one port of two.
#include <gtest/gtest.h>
#include <rdma/fabric.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>

#include <cstdint>
#include <cstring>
#include <optional>
#include <string>

#include "lib/av/address.h"
#include "test/support/fabric_helpers.h"

namespace ofi_dpdk::test {
namespace {

constexpr uint32_t kVersion = FI_VERSION(1, 17);
constexpr const char* kPortName = "net_ring0";
constexpr const char* kMacPortName = "net_null0";  // the port with a real MAC

// fi_getinfo for the dpdk provider only; `hints` may be null for plain
// dpdk_hints().  Returns fi_getinfo's result; *out is the list or null.
int getinfo(const char* node, const char* service, uint64_t flags, fi_info** out,
            fi_info* hints = nullptr) {
  fi_info* own = hints == nullptr ? dpdk_hints() : nullptr;
  *out = nullptr;
  const int ret = fi_getinfo(kVersion, node, service, flags, hints ? hints : own, out);
  fi_freeinfo(own);
  return ret;
}

std::optional<av::Address> native_address(const void* addr, size_t len) {
  if (addr == nullptr) return std::nullopt;
  return av::from_native(addr, len);
}

int count(const fi_info* list) {
  int n = 0;
  for (; list != nullptr; list = list->next) ++n;
  return n;
}

class GetinfoRing : public ::testing::Test {
 protected:
  // The first fi_getinfo of the process brings EAL up from
  // FI_DPDK_EAL_ARGS; it must offer both ports.  kMacPortName's MAC is
  // learned from its src_addr.
  static void SetUpTestSuite() {
    fi_info* info = nullptr;
    ASSERT_EQ(getinfo(nullptr, nullptr, 0, &info), 0) << "is FI_DPDK_EAL_ARGS set?";
    ASSERT_EQ(count(info), 2) << "want net_ring0 and net_null0 (test/ofi/meson.build)";
    fi_freeinfo(info);

    fi_info* hints = dpdk_hints(kMacPortName);
    ASSERT_EQ(getinfo(nullptr, nullptr, 0, &info, hints), 0);
    fi_freeinfo(hints);
    const auto address = native_address(info->src_addr, info->src_addrlen);
    fi_freeinfo(info);
    ASSERT_TRUE(address.has_value());
    std::memcpy(mac_, address->mac, 6);
    static constexpr uint8_t kZero[6] = {};
    ASSERT_NE(std::memcmp(mac_, kZero, 6), 0) << "net_null0 has no MAC";
    mac_text_ = av::format_mac(mac_);
  }

  static inline uint8_t mac_[6] = {};
  static inline std::string mac_text_;
};

// fi_getinfo(3), FI_SOURCE: "Indicates that the node and service
// parameters specify the local source address"; src_addr: "On output a
// provider shall return an address that corresponds to the indicated ...
// node, and/or service fields" -- the port's MAC and queue 5.
TEST_F(GetinfoRing, SourceMacAndServiceGiveThatLocalQueue) {
  fi_info* info = nullptr;
  ASSERT_EQ(getinfo(mac_text_.c_str(), "5", FI_SOURCE, &info), 0) << mac_text_;
  EXPECT_EQ(count(info), 1) << "the MAC picks one port of two";
  EXPECT_STREQ(info->domain_attr->name, kMacPortName);
  const auto source = native_address(info->src_addr, info->src_addrlen);
  ASSERT_TRUE(source.has_value());
  EXPECT_EQ(std::memcmp(source->mac, mac_, 6), 0);
  EXPECT_EQ(source->queue, 5);
  EXPECT_EQ(info->dest_addr, nullptr) << "FI_SOURCE names no destination";
  fi_freeinfo(info);
}

// fi_getinfo(3): "Applications may also pass in an FI_ADDR_STR formatted
// address ... as the node parameter"; dest_addr: "If FI_SOURCE is not
// specified, on output a provider shall return an address the corresponds
// to the indicated node".
TEST_F(GetinfoRing, UriNodeGivesThatDestination) {
  const std::string node = "fi_dpdk://" + mac_text_ + "/3";
  fi_info* info = nullptr;
  ASSERT_EQ(getinfo(node.c_str(), nullptr, 0, &info), 0) << node;
  const auto dest = native_address(info->dest_addr, info->dest_addrlen);
  ASSERT_TRUE(dest.has_value());
  EXPECT_EQ(std::memcmp(dest->mac, mac_, 6), 0);
  EXPECT_EQ(dest->queue, 3);
  fi_freeinfo(info);
}

// A service no endpoint queue has (a number that is neither a queue nor a
// service port, FI_DPDK_PORT_BASE 9228 + queue): nothing to offer at
// fi_getinfo, rather than an endpoint that fails later with -FI_EADDRINUSE.
TEST_F(GetinfoRing, ServiceBeyondTheQueuesIsEnodata) {
  fi_info* info = nullptr;
  EXPECT_EQ(getinfo(nullptr, "9292", FI_SOURCE, &info), -FI_ENODATA);
  EXPECT_EQ(info, nullptr);
  EXPECT_EQ(getinfo(nullptr, "64", 0, &info), -FI_ENODATA);
  EXPECT_EQ(info, nullptr);
  EXPECT_EQ(getinfo(mac_text_.c_str(), "47592", 0, &info), -FI_ENODATA);
  EXPECT_EQ(info, nullptr);
  EXPECT_EQ(getinfo(mac_text_.c_str(), "9227", 0, &info), -FI_ENODATA);
  EXPECT_EQ(info, nullptr);
  ASSERT_EQ(getinfo(nullptr, "63", FI_SOURCE, &info), 0);
  fi_freeinfo(info);
}

// A service port names the queue it stands for (fabtests' default 9228 is
// queue 0's).
TEST_F(GetinfoRing, ServicePortNamesItsQueue) {
  fi_info* info = nullptr;
  ASSERT_EQ(getinfo(mac_text_.c_str(), "9231", 0, &info), 0);
  const auto dest = native_address(info->dest_addr, info->dest_addrlen);
  ASSERT_TRUE(dest.has_value());
  EXPECT_EQ(dest->queue, 3);
  fi_freeinfo(info);
}

// fi_getinfo(3): with an FI_ADDR_STR node, "the service parameter must be
// NULL" -- one given anyway makes the request unanswerable.
TEST_F(GetinfoRing, UriNodeWithServiceIsEnodata) {
  const std::string node = "fi_dpdk://" + mac_text_ + "/3";
  fi_info* info = nullptr;
  EXPECT_EQ(getinfo(node.c_str(), "3", 0, &info), -FI_ENODATA);
  EXPECT_EQ(info, nullptr);
}

// A node that is no address of ours (and, with FI_SOURCE, no port name).
TEST_F(GetinfoRing, GarbageNodeIsEnodata) {
  fi_info* info = nullptr;
  for (const char* node : {"not-an-address", "02:00:00:00:00", "fi_dpdk://zz/1",
                           "fi_dpdk://02:00:00:00:00:01/70000"}) {
    EXPECT_EQ(getinfo(node, nullptr, 0, &info), -FI_ENODATA) << node;
    EXPECT_EQ(info, nullptr);
    fi_freeinfo(info);
  }
  EXPECT_EQ(getinfo("not-an-address", nullptr, FI_SOURCE, &info), -FI_ENODATA);
  EXPECT_EQ(info, nullptr);
  fi_freeinfo(info);
}

// A local node may be the port's device name, as fi_info -s net_ring0.
TEST_F(GetinfoRing, PortNameAsSourceNode) {
  fi_info* info = nullptr;
  ASSERT_EQ(getinfo(kMacPortName, nullptr, FI_SOURCE, &info), 0);
  EXPECT_EQ(count(info), 1) << "the name picks one port of two";
  EXPECT_STREQ(info->domain_attr->name, kMacPortName);
  auto source = native_address(info->src_addr, info->src_addrlen);
  ASSERT_TRUE(source.has_value());
  EXPECT_EQ(std::memcmp(source->mac, mac_, 6), 0);
  fi_freeinfo(info);

  ASSERT_EQ(getinfo(kPortName, "7", FI_SOURCE, &info), 0);
  EXPECT_EQ(count(info), 1);
  EXPECT_STREQ(info->domain_attr->name, kPortName);
  source = native_address(info->src_addr, info->src_addrlen);
  ASSERT_TRUE(source.has_value());
  EXPECT_EQ(source->queue, 7);
  fi_freeinfo(info);
}

// FI_SOURCE with a MAC that is no port of ours: nothing can serve it.
TEST_F(GetinfoRing, OtherMacAsSourceIsEnodata) {
  uint8_t other_mac[6];
  std::memcpy(other_mac, mac_, 6);
  other_mac[5] ^= 0x01;
  const std::string other = av::format_mac(other_mac);
  fi_info* info = nullptr;
  EXPECT_EQ(getinfo(other.c_str(), nullptr, FI_SOURCE, &info), -FI_ENODATA) << other;
  EXPECT_EQ(info, nullptr);
}

// fi_getinfo(3), FI_PROV_ATTR_ONLY: "All providers will return exactly one
// fi_info struct ... The fabric_attr member will have the prov_name and
// prov_version values filled in."
TEST_F(GetinfoRing, ProvAttrOnlyGivesExactlyOneDpdkInfo) {
  fi_info* info = nullptr;
  ASSERT_EQ(getinfo(nullptr, nullptr, FI_PROV_ATTR_ONLY, &info), 0);
  int dpdk = 0;
  for (const fi_info* cur = info; cur != nullptr; cur = cur->next) {
    ASSERT_NE(cur->fabric_attr, nullptr);
    if (cur->fabric_attr->prov_name != nullptr &&
        std::strcmp(cur->fabric_attr->prov_name, "dpdk") == 0) {
      ++dpdk;
      EXPECT_NE(cur->fabric_attr->prov_version, 0u);
    }
  }
  EXPECT_EQ(dpdk, 1);
  fi_freeinfo(info);
}

// fi_getinfo(3): "If no matching fabric information is available, info
// will be set to NULL and the call will return -FI_ENODATA" -- exactly that
// code, whatever the reason, never another error.
TEST_F(GetinfoRing, HintsThatMatchNothingAreExactlyEnodata) {
  struct Case {
    const char* what;
    void (*set)(fi_info*);
  };
  const Case cases[] = {
      {"caps FI_COLLECTIVE", [](fi_info* h) { h->caps = FI_MSG | FI_COLLECTIVE; }},
      {"caps FI_SOURCE_ERR without FI_SOURCE",
       [](fi_info* h) { h->caps = FI_MSG | FI_SOURCE_ERR; }},
      {"ep_type FI_EP_MSG with FI_SOURCE",
       [](fi_info* h) {
         h->ep_attr->type = FI_EP_MSG;
         h->caps = FI_MSG | FI_SOURCE;
       }},
      {"ep_type FI_EP_DGRAM with FI_RMA",
       [](fi_info* h) {
         h->ep_attr->type = FI_EP_DGRAM;
         h->caps = FI_MSG | FI_RMA;
       }},
      {"addr_format FI_SOCKADDR_IN", [](fi_info* h) { h->addr_format = FI_SOCKADDR_IN; }},
      {"domain no_such_port", [](fi_info* h) { h->domain_attr->name = strdup("no_such_port"); }},
      {"fabric tcp", [](fi_info* h) { h->fabric_attr->name = strdup("tcp"); }},
      {"max_msg_size SIZE_MAX", [](fi_info* h) { h->ep_attr->max_msg_size = SIZE_MAX; }},
      {"data_progress 7 (no such model)",
       [](fi_info* h) { h->domain_attr->data_progress = static_cast<fi_progress>(7); }},
      {"tx_ctx_cnt 33", [](fi_info* h) { h->ep_attr->tx_ctx_cnt = 33; }},
      {"cq_data_size 9", [](fi_info* h) { h->domain_attr->cq_data_size = 9; }},
      {"msg_order FI_ORDER_WAW", [](fi_info* h) { h->tx_attr->msg_order = FI_ORDER_WAW; }},
  };
  for (const Case& c : cases) {
    fi_info* hints = dpdk_hints();
    c.set(hints);
    fi_info* info = nullptr;
    EXPECT_EQ(getinfo(nullptr, nullptr, 0, &info, hints), -FI_ENODATA) << c.what;
    EXPECT_EQ(info, nullptr) << c.what;
    fi_freeinfo(info);
    fi_freeinfo(hints);
  }
  // Services that are no queue number.
  for (const char* service : {"x", "70000", "-1", ""}) {
    fi_info* info = nullptr;
    EXPECT_EQ(getinfo(nullptr, service, FI_SOURCE, &info), -FI_ENODATA)
        << "service \"" << service << "\"";
    EXPECT_EQ(info, nullptr);
    fi_freeinfo(info);
  }
}

// fi_getinfo(3): "any returned address is only used when opening a local
// endpoint" -- the endpoint opened from an info whose src_addr names queue
// 5 is found at queue 5 (fi_getname), and a second endpoint cannot take
// the same address while the first holds it.
TEST_F(GetinfoRing, EndpointTakesTheQueueOfItsSourceAddress) {
  fi_info* info = nullptr;
  fi_info* hints = dpdk_hints(kPortName);
  ASSERT_EQ(getinfo(nullptr, "5", FI_SOURCE, &info, hints), 0);
  fi_freeinfo(hints);
  ASSERT_EQ(count(info), 1);
  fid_fabric* fabric = nullptr;
  fid_domain* domain = nullptr;
  fid_av* av = nullptr;
  ASSERT_EQ(fi_fabric(info->fabric_attr, &fabric, nullptr), 0);
  ASSERT_EQ(fi_domain(fabric, info, &domain, nullptr), 0);
  fi_av_attr av_attr{};
  av_attr.type = FI_AV_TABLE;
  ASSERT_EQ(fi_av_open(domain, &av_attr, &av, nullptr), 0);

  TestEndpoint first;
  ASSERT_EQ(first.open(domain, av, info), 0);
  const auto name = native_address(first.name, first.name_len);
  ASSERT_TRUE(name.has_value());
  EXPECT_EQ(name->queue, 5);

  TestEndpoint second;
  EXPECT_EQ(second.open(domain, av, info), -FI_EADDRINUSE);
  // Whatever was opened of the second one closes cleanly.
  second.close();

  // Once the first is closed, queue 5 is free again.
  first.close();
  TestEndpoint third;
  EXPECT_EQ(third.open(domain, av, info), 0);
  const auto third_name = native_address(third.name, third.name_len);
  ASSERT_TRUE(third_name.has_value());
  EXPECT_EQ(third_name->queue, 5);
  third.close();

  EXPECT_EQ(fi_close(&av->fid), 0);
  EXPECT_EQ(fi_close(&domain->fid), 0);
  EXPECT_EQ(fi_close(&fabric->fid), 0);
  fi_freeinfo(info);
}

}  // namespace
}  // namespace ofi_dpdk::test
