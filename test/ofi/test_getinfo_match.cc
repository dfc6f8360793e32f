// test_getinfo_match.cc: the rules of fi_getinfo(3) by which the provider's
// offer for one port meets an application's hints, case by case, against
// dpdk_attr.h directly: no EAL, no port, no libfabric core in between.
//
// The offer is what getinfo builds for a port named "net_x" with a
// max_msg_size of 1444 bytes.  Each test names the man-page rule it checks;
// where the value under test is the provider's own choice (queue depth, iov
// limit, inject size), it is read from the offer, so the rules are tested
// and not the numbers.
#include <gtest/gtest.h>
#include <rdma/fabric.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <initializer_list>
#include <string>

#include "drivers/ofi/dpdk_attr.h"
#include "lib/av/address.h"
#include "ofi_dpdk_config.h"

namespace ofi_dpdk::ofi {
namespace {

constexpr uint32_t kVersion = FI_VERSION(1, 17);
constexpr size_t kMaxMsgSize = 1444;
constexpr size_t kUnexpectedBytes = size_t{1} << 20;
constexpr uint8_t kMac[6] = {0x02, 0x00, 0x00, 0x00, 0x00, 0x2a};

// fi_mr_mode values 1.4 applications use (named by value: 2.x deprecates
// the enum names).
constexpr int kMrBasic = 1;
constexpr int kMrScalable = 2;

fi_info* make_offer(uint32_t version = kVersion) {
  PortFacts port{};
  port.name = "net_x";
  std::memcpy(port.mac, kMac, sizeof(kMac));
  port.max_msg_size = kMaxMsgSize;
  port.unexpected_bytes = kUnexpectedBytes;
  return make_port_info(port, version);
}

class GetinfoMatch : public ::testing::Test {
 protected:
  void SetUp() override {
    offer_ = make_offer();
    hints_ = fi_allocinfo();
    ASSERT_NE(offer_, nullptr);
    ASSERT_NE(hints_, nullptr);
  }
  void TearDown() override {
    fi_freeinfo(offer_);
    fi_freeinfo(hints_);
  }

  // Whether the offer meets hints_; on refusal, the reason must be given.
  bool matches(uint32_t version = kVersion) {
    why_.clear();
    const bool ok = info_matches(offer_, hints_, version, &why_);
    if (!ok) {
      EXPECT_FALSE(why_.empty()) << "a refusal names its reason";
    }
    return ok;
  }

  // Matches, then narrows the offer to hints_ as getinfo would.
  void expect_match_and_narrow(uint32_t version = kVersion) {
    ASSERT_TRUE(matches(version)) << why_;
    narrow_info(offer_, hints_, version);
  }

  fi_info* offer_ = nullptr;
  fi_info* hints_ = nullptr;
  std::string why_;
};

// --- The offer itself -----------------------------------------------------

// fi_getinfo(3): "If neither node, service or hints are provided, then
// fi_getinfo simply returns the list all available communication
// interfaces": NULL hints match, and narrowing by them changes nothing.
TEST_F(GetinfoMatch, NullHintsMatchAndLeaveTheOfferWhole) {
  std::string why;
  EXPECT_TRUE(info_matches(offer_, nullptr, kVersion, &why));
  const uint64_t caps = offer_->caps;
  narrow_info(offer_, nullptr, kVersion);
  EXPECT_EQ(offer_->caps, caps);
  EXPECT_EQ(offer_->caps & (FI_MSG | FI_DIRECTED_RECV | FI_SEND | FI_RECV),
            FI_MSG | FI_DIRECTED_RECV | FI_SEND | FI_RECV);
  EXPECT_EQ(offer_->ep_attr->type, FI_EP_RDM);
  EXPECT_EQ(offer_->ep_attr->max_msg_size, kMaxMsgSize);
  EXPECT_STREQ(offer_->domain_attr->name, "net_x");
  EXPECT_STREQ(offer_->fabric_attr->name, "dpdk");
}

// fi_getinfo(3), MODE: "If a NULL hints structure is provided, then the
// provider's supported set of modes will be returned": we need none.
TEST_F(GetinfoMatch, OfferRequiresNoMode) {
  EXPECT_EQ(offer_->mode, 0u);
  EXPECT_EQ(offer_->tx_attr->mode, 0u);
  EXPECT_EQ(offer_->rx_attr->mode, 0u);
  EXPECT_EQ(offer_->domain_attr->mode, 0u);
}

// fi_getinfo(3), src_addr: "On output a provider shall return an address
// that corresponds to the indicated fabric, domain ..." -- the port's MAC,
// in the native form of lib/av/address.h.
TEST_F(GetinfoMatch, OfferCarriesThePortsNativeSourceAddress) {
  EXPECT_EQ(offer_->addr_format, static_cast<uint32_t>(FI_FORMAT_UNSPEC));
  ASSERT_NE(offer_->src_addr, nullptr);
  EXPECT_EQ(offer_->src_addrlen, av::kNativeAddressSize);
  const auto address = av::from_native(offer_->src_addr, offer_->src_addrlen);
  ASSERT_TRUE(address.has_value());
  EXPECT_EQ(std::memcmp(address->mac, kMac, 6), 0);
  EXPECT_EQ(offer_->dest_addr, nullptr);
}

// --- caps -----------------------------------------------------------------

// fi_getinfo(3), CAPABILITIES: "If capabilities in the hint parameter are
// set to 0, the underlying provider will return the set of capabilities
// which are supported."
TEST_F(GetinfoMatch, ZeroCapsReturnEverythingSupported) {
  const uint64_t caps = offer_->caps;
  expect_match_and_narrow();
  EXPECT_EQ(offer_->caps, caps);
}

// fi_getinfo(3): each primary capability the provider has is granted.
TEST_F(GetinfoMatch, EachPrimaryCapWeHaveIsGranted) {
  for (uint64_t cap : {FI_MSG, FI_DIRECTED_RECV, FI_MSG | FI_DIRECTED_RECV}) {
    hints_->caps = cap;
    EXPECT_TRUE(matches()) << fi_tostr(&cap, FI_TYPE_CAPS) << ": " << why_;
  }
}

// fi_getinfo(3): primary modifiers FI_SEND and FI_RECV limit FI_MSG.
TEST_F(GetinfoMatch, ModifiersWeHaveAreGranted) {
  for (uint64_t cap : {FI_MSG | FI_SEND, FI_MSG | FI_RECV, FI_MSG | FI_SEND | FI_RECV}) {
    hints_->caps = cap;
    EXPECT_TRUE(matches()) << fi_tostr(&cap, FI_TYPE_CAPS) << ": " << why_;
  }
}

// fi_getinfo(3): "specifying a non-zero value for input hints indicates
// that a provider must support the requested value or fail the operation
// with -FI_ENODATA" -- primary capabilities and modifiers we lack.
TEST_F(GetinfoMatch, PrimaryCapsWeLackAreRefused) {
  for (uint64_t cap : {FI_MULTICAST, FI_VARIABLE_MSG, FI_HMEM, FI_COLLECTIVE}) {
    if (cap == 0) continue;  // libfabric 2.x removed FI_VARIABLE_MSG: a dummy 0
    hints_->caps = FI_MSG | cap;
    EXPECT_FALSE(matches()) << fi_tostr(&cap, FI_TYPE_CAPS) << " was granted";
  }
}

// fi_getinfo(3): "Secondary capabilities may optionally be requested ...
// If requested, a provider must support the capability or fail the
// fi_getinfo request (FI_ENODATA)."
TEST_F(GetinfoMatch, SecondaryCapsWeLackAreRefused) {
  for (uint64_t cap : {FI_FENCE, FI_RMA_PMEM}) {
    hints_->caps = FI_MSG | cap;
    EXPECT_FALSE(matches()) << fi_tostr(&cap, FI_TYPE_CAPS) << " was granted";
  }
}

// FI_TRIGGER (threshold-triggered operations) is served: granted when asked
// for, and not offered unasked, in info->caps nor in tx_attr or rx_attr
// (fabtests' fi_getinfo_test: those are subsets of info->caps).
TEST_F(GetinfoMatch, TriggerIsGrantedWhenAskedFor) {
  EXPECT_FALSE(offer_->caps & FI_TRIGGER);
  EXPECT_FALSE(offer_->tx_attr->caps & FI_TRIGGER);
  EXPECT_FALSE(offer_->rx_attr->caps & FI_TRIGGER);
  hints_->caps = FI_MSG | FI_TRIGGER;
  expect_match_and_narrow();
  EXPECT_TRUE(offer_->caps & FI_TRIGGER);
  EXPECT_TRUE(offer_->tx_attr->caps & FI_TRIGGER);
  fi_freeinfo(offer_);
  offer_ = make_offer();
  hints_->caps = FI_MSG;
  expect_match_and_narrow();
  EXPECT_FALSE(offer_->caps & FI_TRIGGER);
  EXPECT_FALSE(offer_->tx_attr->caps & FI_TRIGGER);
}

// fi_getinfo(3): FI_SOURCE_ERR "Must be paired with FI_SOURCE".
TEST_F(GetinfoMatch, SourceErrOnlyWithSource) {
  hints_->caps = FI_MSG | FI_SOURCE_ERR;
  EXPECT_FALSE(matches());
  hints_->caps = FI_MSG | FI_SOURCE | FI_SOURCE_ERR;
  expect_match_and_narrow();
  EXPECT_TRUE(offer_->caps & FI_SOURCE_ERR);
  EXPECT_TRUE(offer_->rx_attr->caps & FI_SOURCE_ERR);
}

// FI_MULTI_RECV costs nothing unused: offered without being asked for.
TEST_F(GetinfoMatch, MultiRecvIsOfferedAndGranted) {
  hints_->caps = FI_MSG;
  expect_match_and_narrow();
  EXPECT_TRUE(offer_->caps & FI_MULTI_RECV);
  hints_->caps = FI_MSG | FI_MULTI_RECV;
  EXPECT_TRUE(matches());
}

// fi_getinfo(3): "a provider must enable support for only those primary
// capabilities which were selected".
TEST_F(GetinfoMatch, NarrowingKeepsOnlyTheRequestedPrimaryCaps) {
  hints_->caps = FI_MSG;
  expect_match_and_narrow();
  EXPECT_TRUE(offer_->caps & FI_MSG);
  EXPECT_FALSE(offer_->caps & FI_DIRECTED_RECV);
  EXPECT_FALSE(offer_->rx_attr->caps & FI_DIRECTED_RECV);
}

// Same rule: FI_DIRECTED_RECV asked for alone does not bring FI_MSG.
TEST_F(GetinfoMatch, NarrowingDoesNotAddAPrimaryCapNotSelected) {
  hints_->caps = FI_DIRECTED_RECV;
  expect_match_and_narrow();
  EXPECT_TRUE(offer_->caps & FI_DIRECTED_RECV);
  EXPECT_FALSE(offer_->caps & FI_MSG);
}

// fi_tagged(3) is offered: FI_TAGGED in caps, tx_attr and rx_attr, with a
// tag format of 64 generic bits; a requested format is kept, and an
// endpoint without FI_TAGGED reports none (fi_endpoint(3) mem_tag_format).
TEST_F(GetinfoMatch, FiTaggedIsOfferedWithItsTagFormat) {
  EXPECT_TRUE(offer_->caps & FI_TAGGED);
  EXPECT_TRUE(offer_->tx_attr->caps & FI_TAGGED);
  EXPECT_TRUE(offer_->rx_attr->caps & FI_TAGGED);
  EXPECT_EQ(offer_->ep_attr->mem_tag_format, 0xAAAAAAAAAAAAAAAAull);
  hints_->caps = FI_TAGGED | FI_DIRECTED_RECV;
  hints_->tx_attr->caps = FI_TAGGED | FI_SEND;
  hints_->rx_attr->caps = FI_TAGGED | FI_RECV | FI_DIRECTED_RECV;
  hints_->ep_attr->mem_tag_format = 0x30FF;
  expect_match_and_narrow();
  EXPECT_EQ(offer_->caps & (FI_TAGGED | FI_MSG), FI_TAGGED);
  EXPECT_TRUE(offer_->tx_attr->caps & FI_TAGGED);
  EXPECT_TRUE(offer_->rx_attr->caps & FI_TAGGED);
  EXPECT_EQ(offer_->ep_attr->mem_tag_format, 0x30FFu);

  fi_freeinfo(offer_);
  offer_ = make_offer();
  hints_->caps = FI_MSG;
  hints_->tx_attr->caps = 0;
  hints_->rx_attr->caps = 0;
  hints_->ep_attr->mem_tag_format = 0;
  expect_match_and_narrow();
  EXPECT_FALSE(offer_->caps & FI_TAGGED);
  EXPECT_EQ(offer_->ep_attr->mem_tag_format, 0u);
}

// fi_getinfo(3): "If no modifiers are specified for an applicable
// capability, all relevant modifiers are assumed."
TEST_F(GetinfoMatch, NoModifierNamedMeansAllModifiers) {
  hints_->caps = FI_MSG;
  expect_match_and_narrow();
  EXPECT_EQ(offer_->caps & (FI_SEND | FI_RECV), FI_SEND | FI_RECV);
  EXPECT_TRUE(offer_->tx_attr->caps & FI_SEND);
  EXPECT_TRUE(offer_->rx_attr->caps & FI_RECV);
}

// fi_getinfo(3): "Primary modifiers are used to limit a primary
// capability, such as restricting an endpoint to being send-only."
TEST_F(GetinfoMatch, OnlyFiSendNamedGivesASendOnlyEndpoint) {
  hints_->caps = FI_MSG | FI_SEND;
  expect_match_and_narrow();
  EXPECT_TRUE(offer_->caps & FI_SEND);
  EXPECT_FALSE(offer_->caps & FI_RECV);
  EXPECT_FALSE(offer_->rx_attr->caps & FI_RECV);
}

// fi_getinfo(3): FI_SOURCE is a secondary capability that costs a look-up
// per message ("may adversely affect performance"); "A provider may
// optionally report non-selected secondary capabilities if doing so would
// not compromise performance" -- so it comes only when asked.
// Named AVs (doc/address-vector.md): FI_SHARED_AV is secondary and costs
// nothing unused, so it is always reported, in domain_attr->caps too
// (fi_domain(3)).  FI_AV_USER_ID, which the 1.17 man pages put in no class,
// is treated as primary: reported with caps 0, kept only when asked for.
TEST_F(GetinfoMatch, SharedAvAlwaysAndUserIdWhenAsked) {
  EXPECT_TRUE(offer_->caps & FI_SHARED_AV);
  EXPECT_TRUE(offer_->domain_attr->caps & FI_SHARED_AV);
  EXPECT_TRUE(offer_->caps & FI_AV_USER_ID);
  hints_->caps = FI_MSG;
  expect_match_and_narrow();
  EXPECT_TRUE(offer_->caps & FI_SHARED_AV);
  EXPECT_FALSE(offer_->caps & FI_AV_USER_ID);
  fi_freeinfo(offer_);
  offer_ = make_offer();
  hints_->caps = FI_MSG | FI_SHARED_AV | FI_AV_USER_ID;
  hints_->domain_attr->caps = FI_SHARED_AV;
  expect_match_and_narrow();
  EXPECT_TRUE(offer_->caps & FI_SHARED_AV);
  EXPECT_TRUE(offer_->caps & FI_AV_USER_ID);
}

TEST_F(GetinfoMatch, FiSourceOnlyWhenAsked) {
  EXPECT_FALSE(offer_->caps & FI_SOURCE);
  hints_->caps = FI_MSG;
  expect_match_and_narrow();
  EXPECT_FALSE(offer_->caps & FI_SOURCE);

  fi_freeinfo(offer_);
  offer_ = make_offer();
  hints_->caps = FI_MSG | FI_SOURCE;
  expect_match_and_narrow();
  EXPECT_TRUE(offer_->caps & FI_SOURCE);
  EXPECT_TRUE(offer_->rx_attr->caps & FI_SOURCE);
}

// FI_RMA_EVENT is granted when asked for, and fi_getinfo(3) says it
// "requires that FI_REMOTE_READ and/or FI_REMOTE_WRITE be enabled".
TEST_F(GetinfoMatch, RmaEventOnlyWhenAskedAndWithARemoteModifier) {
  EXPECT_FALSE(offer_->caps & FI_RMA_EVENT);
  EXPECT_FALSE(offer_->rx_attr->caps & FI_RMA_EVENT);
  hints_->caps = FI_RMA | FI_RMA_EVENT;
  expect_match_and_narrow();
  EXPECT_TRUE(offer_->caps & FI_RMA_EVENT);
  EXPECT_TRUE(offer_->rx_attr->caps & FI_RMA_EVENT);
  EXPECT_FALSE(offer_->tx_attr->caps & FI_RMA_EVENT);
  hints_->caps = FI_RMA | FI_READ | FI_WRITE | FI_RMA_EVENT;
  EXPECT_FALSE(matches()) << "FI_RMA_EVENT granted without a remote modifier";
  hints_->caps = FI_RMA | FI_WRITE | FI_REMOTE_WRITE | FI_RMA_EVENT;
  EXPECT_TRUE(matches()) << why_;
}

// fi_endpoint(3), tx_attr caps: "The capabilities must be a subset of those
// requested of the associated endpoint."
TEST_F(GetinfoMatch, TxAttrCapsBeyondTheOfferAreRefused) {
  hints_->caps = FI_MSG;
  hints_->tx_attr->caps = FI_MSG | FI_MULTICAST;
  EXPECT_FALSE(matches());
  hints_->tx_attr->caps = FI_MSG | FI_SEND;
  EXPECT_TRUE(matches()) << why_;
}

// --- mode -----------------------------------------------------------------

// fi_getinfo(3), MODE: "On output, providers will clear mode bits that are
// not necessary"; "Mode bits that are set to zero indicate the application
// does not support any modes" -- we require none, so any hints->mode,
// 0 included, matches and the answer carries no mode.
TEST_F(GetinfoMatch, AnyModeIsAcceptedAndNoneReturned) {
  // FI_LOCAL_MR by value: libfabric 2.x deprecates the name (a warning).
  constexpr uint64_t kLocalMrMode = 1ULL << 55;
  for (uint64_t mode : {uint64_t{0}, uint64_t{FI_CONTEXT}, uint64_t{FI_CONTEXT2},
                        uint64_t{FI_MSG_PREFIX}, kLocalMrMode, uint64_t{FI_RX_CQ_DATA},
                        uint64_t{FI_CONTEXT | FI_CONTEXT2 | FI_MSG_PREFIX}, ~uint64_t{0}}) {
    hints_->mode = mode;
    hints_->domain_attr->mode = mode;
    fi_freeinfo(offer_);
    offer_ = make_offer();
    expect_match_and_narrow();
    EXPECT_EQ(offer_->mode, 0u) << "hints->mode " << std::hex << mode;
    EXPECT_EQ(offer_->domain_attr->mode, 0u);
  }
}

// --- ep_attr ----------------------------------------------------------------

// fi_endpoint(3), type: FI_EP_UNSPEC takes what the provider has; the
// provider has FI_EP_RDM only.
TEST_F(GetinfoMatch, EndpointTypeRdmOrUnspecOnly) {
  hints_->ep_attr->type = FI_EP_UNSPEC;
  EXPECT_TRUE(matches()) << why_;
  hints_->ep_attr->type = FI_EP_RDM;
  EXPECT_TRUE(matches()) << why_;
  hints_->ep_attr->type = FI_EP_MSG;
  EXPECT_FALSE(matches());
  hints_->ep_attr->type = FI_EP_DGRAM;
  EXPECT_FALSE(matches());
}

// fi_endpoint(3), max_msg_size; fi_getinfo(3): "Output values will be
// greater than or equal to requested input values."
TEST_F(GetinfoMatch, MaxMsgSizeUpToTheOffer) {
  hints_->ep_attr->max_msg_size = kMaxMsgSize;
  EXPECT_TRUE(matches()) << why_;
  hints_->ep_attr->max_msg_size = kMaxMsgSize + 1;
  EXPECT_FALSE(matches());
}

// fi_endpoint(3), tx_ctx_cnt/rx_ctx_cnt: "If the count is set to the value
// FI_SHARED_CONTEXT, the endpoint will be configured to use a shared
// transmit context, if supported by the provider.  Providers that do not
// support shared transmit contexts will fail the request."  Scalable
// endpoints take up to domain_attr->max_ep_tx_ctx / max_ep_rx_ctx (32)
// contexts of each kind; the counts asked for come back in the info.
TEST_F(GetinfoMatch, ContextCountsUpToTheDomainMaximum) {
  hints_->ep_attr->tx_ctx_cnt = 1;
  hints_->ep_attr->rx_ctx_cnt = 1;
  EXPECT_TRUE(matches()) << why_;
  EXPECT_EQ(offer_->domain_attr->max_ep_tx_ctx, 32u);
  EXPECT_EQ(offer_->domain_attr->max_ep_rx_ctx, 32u);
  hints_->ep_attr->tx_ctx_cnt = 32;
  hints_->ep_attr->rx_ctx_cnt = 2;
  EXPECT_TRUE(matches()) << why_;
  fi_info* narrowed = fi_dupinfo(offer_);
  narrow_info(narrowed, hints_, FI_VERSION(1, 17));
  EXPECT_EQ(narrowed->ep_attr->tx_ctx_cnt, 32u);
  EXPECT_EQ(narrowed->ep_attr->rx_ctx_cnt, 2u);
  fi_freeinfo(narrowed);
  hints_->ep_attr->tx_ctx_cnt = 33;
  EXPECT_FALSE(matches());
  hints_->ep_attr->tx_ctx_cnt = 0;
  hints_->ep_attr->rx_ctx_cnt = 33;
  EXPECT_FALSE(matches());
  // Shared contexts (fi_stx_context, fi_srx_context): one of each per
  // endpoint.
  hints_->ep_attr->tx_ctx_cnt = FI_SHARED_CONTEXT;
  hints_->ep_attr->rx_ctx_cnt = FI_SHARED_CONTEXT;
  EXPECT_TRUE(matches()) << why_;
  EXPECT_EQ(offer_->domain_attr->max_ep_stx_ctx, 1u);
  EXPECT_EQ(offer_->domain_attr->max_ep_srx_ctx, 1u);
  hints_->domain_attr->max_ep_srx_ctx = 2;
  EXPECT_FALSE(matches());
}

// fi_endpoint(3), auth_key_size: "This field will be 0 if authorization
// keys are not available" -- asking for a key is refused (API >= 1.5) ...
TEST_F(GetinfoMatch, AuthKeysAreRefused) {
  uint8_t key[8] = {1, 2, 3, 4, 5, 6, 7, 8};
  hints_->ep_attr->auth_key = key;
  hints_->ep_attr->auth_key_size = sizeof(key);
  EXPECT_FALSE(matches());
  hints_->ep_attr->auth_key = nullptr;
  hints_->ep_attr->auth_key_size = 0;
  EXPECT_TRUE(matches()) << why_;
  hints_->domain_attr->auth_key = key;
  hints_->domain_attr->auth_key_size = sizeof(key);
  EXPECT_FALSE(matches());
  hints_->domain_attr->auth_key = nullptr;
  hints_->domain_attr->auth_key_size = 0;
}

// ... except the provider's own key form (doc/address-vector.md): a 4-byte
// nonzero network key in domain_attr, which the narrowed offer carries on
// to fi_domain.
TEST_F(GetinfoMatch, DomainNetworkKeyOfFourBytes) {
  uint32_t key = 0;
  hints_->domain_attr->auth_key = reinterpret_cast<uint8_t*>(&key);
  hints_->domain_attr->auth_key_size = sizeof(key);
  EXPECT_FALSE(matches()) << "key 0 means no key";
  key = 0xc0ffee;
  expect_match_and_narrow();
  ASSERT_EQ(offer_->domain_attr->auth_key_size, sizeof(key));
  ASSERT_NE(offer_->domain_attr->auth_key, nullptr);
  EXPECT_NE(offer_->domain_attr->auth_key, hints_->domain_attr->auth_key) << "a copy";
  EXPECT_EQ(std::memcmp(offer_->domain_attr->auth_key, &key, sizeof(key)), 0);
  hints_->domain_attr->auth_key = nullptr;
  EXPECT_FALSE(matches()) << "a size without the key";
  hints_->domain_attr->auth_key_size = 0;
}

#if OFI_DPDK_HAVE_AV_AUTH_KEY
// fi_domain(3) 2.x: auth_key_size FI_AV_AUTH_KEY takes the keys from the AV
// ("auth_key must be NULL"); max_ep_auth_key is the AV's limit.
TEST_F(GetinfoMatch, AvAuthKeyAndMaxEpAuthKey) {
  EXPECT_EQ(offer_->domain_attr->max_ep_auth_key, 16u);
  hints_->domain_attr->auth_key_size = FI_AV_AUTH_KEY;
  expect_match_and_narrow();
  EXPECT_EQ(offer_->domain_attr->auth_key_size, FI_AV_AUTH_KEY);
  EXPECT_EQ(offer_->domain_attr->auth_key, nullptr);
  uint32_t key = 5;
  hints_->domain_attr->auth_key = reinterpret_cast<uint8_t*>(&key);
  EXPECT_FALSE(matches());
  hints_->domain_attr->auth_key = nullptr;
  hints_->domain_attr->auth_key_size = 0;
  hints_->domain_attr->max_ep_auth_key = 17;
  EXPECT_FALSE(matches());
}

// fi_domain(3) 2.x: the domain cap FI_AV_USER_ID lets AVs be opened with
// FI_AV_USER_ID; like the primary cap it comes only when asked for.
TEST_F(GetinfoMatch, AvUserIdDomainCapOnlyWhenAsked) {
  EXPECT_TRUE(offer_->domain_attr->caps & FI_AV_USER_ID);
  hints_->caps = FI_MSG;
  expect_match_and_narrow();
  EXPECT_FALSE(offer_->domain_attr->caps & FI_AV_USER_ID);
  fi_freeinfo(offer_);
  offer_ = make_offer();
  hints_->caps = FI_MSG | FI_AV_USER_ID;
  expect_match_and_narrow();
  EXPECT_TRUE(offer_->domain_attr->caps & FI_AV_USER_ID);
  fi_freeinfo(offer_);
  offer_ = make_offer();
  hints_->caps = FI_MSG;
  hints_->domain_attr->caps = FI_AV_USER_ID;
  expect_match_and_narrow();
  EXPECT_TRUE(offer_->domain_attr->caps & FI_AV_USER_ID);
}
#endif

// ... while "This field is ignored unless the fabric is opened with API
// version 1.5 or greater" (fi_endpoint(3) and fi_domain(3) alike).
TEST_F(GetinfoMatch, AuthKeySizeIsIgnoredBeforeApi15) {
  fi_freeinfo(offer_);
  offer_ = make_offer(FI_VERSION(1, 4));
  hints_->ep_attr->auth_key_size = 8;
  hints_->domain_attr->auth_key_size = 8;
  EXPECT_TRUE(matches(FI_VERSION(1, 4))) << why_;
}

// --- tx_attr / rx_attr ------------------------------------------------------

// fi_endpoint(3), inject_size/size/iov_limit; fi_getinfo(3): output values
// are >= the requested ones, so a request above the offer is refused and
// one equal to it is granted.
TEST_F(GetinfoMatch, TxLimitsUpToTheOffer) {
  const fi_tx_attr offered = *offer_->tx_attr;
  EXPECT_GT(offered.inject_size, 0u);
  EXPECT_LE(offered.inject_size, kMaxMsgSize) << "inject_size is bounded by max_msg_size";

  hints_->tx_attr->inject_size = offered.inject_size;
  EXPECT_TRUE(matches()) << why_;
  hints_->tx_attr->inject_size = offered.inject_size + 1;
  EXPECT_FALSE(matches());
  hints_->tx_attr->inject_size = 0;

  hints_->tx_attr->size = offered.size;
  EXPECT_TRUE(matches()) << why_;
  hints_->tx_attr->size = offered.size + 1;
  EXPECT_FALSE(matches());
  hints_->tx_attr->size = 0;

  hints_->tx_attr->iov_limit = offered.iov_limit;
  EXPECT_TRUE(matches()) << why_;
  hints_->tx_attr->iov_limit = offered.iov_limit + 1;
  EXPECT_FALSE(matches());
}

TEST_F(GetinfoMatch, RxLimitsUpToTheOffer) {
  const fi_rx_attr offered = *offer_->rx_attr;
  hints_->rx_attr->size = offered.size;
  EXPECT_TRUE(matches()) << why_;
  hints_->rx_attr->size = offered.size + 1;
  EXPECT_FALSE(matches());
  hints_->rx_attr->size = 0;

  hints_->rx_attr->iov_limit = offered.iov_limit;
  EXPECT_TRUE(matches()) << why_;
  hints_->rx_attr->iov_limit = offered.iov_limit + 1;
  EXPECT_FALSE(matches());
}

// fi_endpoint(3), msg_order: "Each set bit indicates that ordering is
// maintained"; an order the provider does not keep cannot be granted.
// lib/proto delivers each peer's messages in order, so FI_ORDER_SAS is
// offered and granted; the RMA and atomic orders (no RMA, no atomics yet)
// are refused.
TEST_F(GetinfoMatch, MessageOrderOnlyWhatWeKeep) {
  EXPECT_EQ(offer_->tx_attr->msg_order, FI_ORDER_SAS);
  EXPECT_EQ(offer_->rx_attr->msg_order, FI_ORDER_SAS);
  hints_->tx_attr->msg_order = FI_ORDER_SAS;
  hints_->rx_attr->msg_order = FI_ORDER_SAS;
  EXPECT_TRUE(matches()) << why_;
  for (uint64_t order : {FI_ORDER_RAW, FI_ORDER_WAW, FI_ORDER_WAR, FI_ORDER_RAR,
                         FI_ORDER_ATOMIC_WAW, FI_ORDER_SAS | FI_ORDER_WAS}) {
    hints_->tx_attr->msg_order = order;
    hints_->rx_attr->msg_order = 0;  // FI_ORDER_NONE, a name 2.x deprecates
    EXPECT_FALSE(matches()) << "tx msg_order " << std::hex << order;
    hints_->tx_attr->msg_order = 0;
    hints_->rx_attr->msg_order = order;
    EXPECT_FALSE(matches()) << "rx msg_order " << std::hex << order;
  }
}

// fi_endpoint(3), op_flags: default flags for operations; one the provider
// cannot honour is refused, the ones it can are kept as requested.
TEST_F(GetinfoMatch, TxOpFlagsWeCannotHonourAreRefused) {
  hints_->tx_attr->op_flags = FI_COMMIT_COMPLETE;
  EXPECT_FALSE(matches());
  hints_->tx_attr->op_flags = FI_MULTICAST;
  EXPECT_FALSE(matches());
  hints_->tx_attr->op_flags = FI_COMPLETION | FI_INJECT_COMPLETE;
  expect_match_and_narrow();
  EXPECT_EQ(offer_->tx_attr->op_flags, FI_COMPLETION | FI_INJECT_COMPLETE);
}

// --- addr_format ----------------------------------------------------------

// fi_getinfo(3), ADDRESSING FORMATS: FI_FORMAT_UNSPEC selects the
// provider's own format.
TEST_F(GetinfoMatch, AddrFormatUnspecKeepsTheNativeForm) {
  hints_->addr_format = FI_FORMAT_UNSPEC;
  expect_match_and_narrow();
  EXPECT_EQ(offer_->addr_format, static_cast<uint32_t>(FI_FORMAT_UNSPEC));
  EXPECT_EQ(offer_->src_addrlen, av::kNativeAddressSize);
}

// fi_getinfo(3): FI_ADDR_STR is "a formatted character string ... follows
// a URI model" -- ours is fi_dpdk://MAC/queue, and src_addr comes in it.
TEST_F(GetinfoMatch, AddrFormatStrGivesAStringSourceAddress) {
  hints_->addr_format = FI_ADDR_STR;
  expect_match_and_narrow();
  EXPECT_EQ(offer_->addr_format, static_cast<uint32_t>(FI_ADDR_STR));
  ASSERT_NE(offer_->src_addr, nullptr);
  const char* text = static_cast<const char*>(offer_->src_addr);
  EXPECT_EQ(offer_->src_addrlen, std::strlen(text) + 1);
  EXPECT_EQ(std::string(text).rfind("fi_dpdk://02:00:00:00:00:2a/", 0), 0u) << text;
  const auto address = info_address(offer_, /*source=*/true);
  ASSERT_TRUE(address.has_value()) << text;
  EXPECT_EQ(std::memcmp(address->mac, kMac, 6), 0);
}

// fi_getinfo(3): a format the provider does not speak is refused; IP
// sockaddrs it speaks (fi_getinfo then passes over ports without an address
// of the family).
TEST_F(GetinfoMatch, OnlyIpSocketAddressesAreSpoken) {
  for (uint32_t format :
       {static_cast<uint32_t>(FI_SOCKADDR_IB), static_cast<uint32_t>(FI_ADDR_PSMX2)}) {
    hints_->addr_format = format;
    EXPECT_FALSE(matches()) << "addr_format " << format;
  }
  for (uint32_t format :
       {static_cast<uint32_t>(FI_SOCKADDR_IN), static_cast<uint32_t>(FI_SOCKADDR_IN6),
        static_cast<uint32_t>(FI_SOCKADDR)}) {
    hints_->addr_format = format;
    EXPECT_TRUE(matches()) << "addr_format " << format;
  }
}

// --- domain_attr ----------------------------------------------------------

// fi_domain(3), Name: "The name of the access domain" -- a name in the
// hints selects that port only.
TEST_F(GetinfoMatch, DomainNameMustBeThePorts) {
  hints_->domain_attr->name = strdup("net_x");
  EXPECT_TRUE(matches()) << why_;
  std::free(hints_->domain_attr->name);
  hints_->domain_attr->name = strdup("net_y");
  EXPECT_FALSE(matches());
}

// fi_domain(3), Progress Models: FI_PROGRESS_UNSPEC "may be used on input
// hints"; the provider offers manual progress by default and automatic
// progress (a progress lcore or thread) to whoever asks, and returns what was
// asked for.
TEST_F(GetinfoMatch, ManualProgressByDefaultAutoOnRequest) {
  ASSERT_TRUE(matches()) << why_;
  EXPECT_EQ(offer_->domain_attr->data_progress, FI_PROGRESS_MANUAL);
  EXPECT_EQ(offer_->domain_attr->control_progress, FI_PROGRESS_MANUAL);
  for (fi_progress control : {FI_PROGRESS_UNSPEC, FI_PROGRESS_MANUAL, FI_PROGRESS_AUTO}) {
    for (fi_progress data : {FI_PROGRESS_UNSPEC, FI_PROGRESS_MANUAL, FI_PROGRESS_AUTO}) {
      TearDown();
      SetUp();
      hints_->domain_attr->control_progress = control;
      hints_->domain_attr->data_progress = data;
      expect_match_and_narrow();
      EXPECT_EQ(offer_->domain_attr->control_progress,
                control == FI_PROGRESS_UNSPEC ? FI_PROGRESS_MANUAL : control);
      EXPECT_EQ(offer_->domain_attr->data_progress,
                data == FI_PROGRESS_UNSPEC ? FI_PROGRESS_MANUAL : data);
    }
  }
  hints_->domain_attr->data_progress = static_cast<fi_progress>(7);
  EXPECT_FALSE(matches());
}

// fi_domain(3), threading: "All providers are required to support
// FI_THREAD_SAFE", which serves every level; a requested level is
// returned as requested, FI_THREAD_UNSPEC gets "the greatest level of
// parallelism".
TEST_F(GetinfoMatch, AnyThreadingLevelIsReturnedAsRequested) {
  for (fi_threading level : {FI_THREAD_SAFE, FI_THREAD_FID, FI_THREAD_DOMAIN, FI_THREAD_COMPLETION,
                             FI_THREAD_ENDPOINT}) {
    fi_freeinfo(offer_);
    offer_ = make_offer();
    hints_->domain_attr->threading = level;
    expect_match_and_narrow();
    EXPECT_EQ(offer_->domain_attr->threading, level);
  }
  fi_freeinfo(offer_);
  offer_ = make_offer();
  hints_->domain_attr->threading = FI_THREAD_UNSPEC;
  expect_match_and_narrow();
  EXPECT_NE(offer_->domain_attr->threading, FI_THREAD_UNSPEC);
}

// fi_domain(3), av_type: FI_AV_UNSPEC "may return another AV type to
// indicate the optimal AV type"; TABLE and MAP are both supported and
// returned as requested.
TEST_F(GetinfoMatch, AvTypesTableMapAndUnspec) {
  for (fi_av_type type : {FI_AV_TABLE, FI_AV_MAP}) {
    fi_freeinfo(offer_);
    offer_ = make_offer();
    hints_->domain_attr->av_type = type;
    expect_match_and_narrow();
    EXPECT_EQ(offer_->domain_attr->av_type, type);
  }
  fi_freeinfo(offer_);
  offer_ = make_offer();
  hints_->domain_attr->av_type = FI_AV_UNSPEC;
  expect_match_and_narrow();
  EXPECT_EQ(offer_->domain_attr->av_type, FI_AV_TABLE);
}

// fi_domain(3), cq_data_size: "the number of bytes that the provider
// supports for remote CQ data" -- 8, so 8 is granted and 9 is not.
TEST_F(GetinfoMatch, CqDataSizeUpToEightBytes) {
  hints_->domain_attr->cq_data_size = 8;
  EXPECT_TRUE(matches()) << why_;
  hints_->domain_attr->cq_data_size = 9;
  EXPECT_FALSE(matches());
}

// fi_domain(3), mr_mode for API 1.5 and later: the application sets the
// bits it can support, the provider answers with those it keeps -- we need
// none, and keep FI_MR_PROV_KEY (keys are ours and random) and
// FI_MR_VIRT_ADDR (RMA addresses are virtual) when offered
// (fi_pingpong's FI_MR_LOCAL | FI_MR_VIRT_ADDR | FI_MR_ALLOCATED |
// FI_MR_PROV_KEY here); without it the application's keys are used.
TEST_F(GetinfoMatch, MrModeForApi117RequiresNothing) {
  EXPECT_EQ(offer_->domain_attr->mr_mode, 0);
  hints_->domain_attr->mr_mode = FI_MR_LOCAL | FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | FI_MR_PROV_KEY;
  expect_match_and_narrow();
  EXPECT_EQ(offer_->domain_attr->mr_mode, FI_MR_PROV_KEY | FI_MR_VIRT_ADDR);
  TearDown();
  SetUp();
  hints_->domain_attr->mr_mode = FI_MR_LOCAL | FI_MR_ALLOCATED;
  expect_match_and_narrow();
  EXPECT_EQ(offer_->domain_attr->mr_mode, 0);
}

// fi_domain(3): FI_MR_BASIC and FI_MR_SCALABLE are "Defined for
// compatibility - library versions 1.4 and earlier"; FI_MR_UNSPEC (0)
// "indicates that FI_MR_BASIC or FI_MR_SCALABLE are requested and
// supported" -- a 1.4 application is told which one it gets, never 0.
TEST_F(GetinfoMatch, MrModeForApi14IsBasicOrScalable) {
  fi_freeinfo(offer_);
  offer_ = make_offer(FI_VERSION(1, 4));
  EXPECT_EQ(offer_->domain_attr->mr_mode, kMrScalable);

  hints_->domain_attr->mr_mode = 0;  // FI_MR_UNSPEC
  expect_match_and_narrow(FI_VERSION(1, 4));
  EXPECT_EQ(offer_->domain_attr->mr_mode, kMrScalable);

  fi_freeinfo(offer_);
  offer_ = make_offer(FI_VERSION(1, 4));
  hints_->domain_attr->mr_mode = kMrBasic;
  expect_match_and_narrow(FI_VERSION(1, 4));
  EXPECT_EQ(offer_->domain_attr->mr_mode, kMrBasic);
}

// --- fabric_attr ------------------------------------------------------------

// fi_fabric(3), name: the fabric is "dpdk"; another name selects another
// fabric.
TEST_F(GetinfoMatch, FabricNameMustBeDpdk) {
  hints_->fabric_attr->name = strdup("dpdk");
  EXPECT_TRUE(matches()) << why_;
  std::free(hints_->fabric_attr->name);
  hints_->fabric_attr->name = strdup("tcp");
  EXPECT_FALSE(matches());
}

// --- what fi_pingpong asks for ------------------------------------------------

// The hints of stock fi_pingpong -e rdm: FI_MSG, modes FI_CONTEXT |
// FI_CONTEXT2 | FI_MSG_PREFIX, mr_mode FI_MR_LOCAL plus the basic map.  All
// are granted, and the answer asks for no mode and no registration (only
// provider keys, which fi_pingpong accepts).
TEST_F(GetinfoMatch, StockPingpongHintsMatch) {
  hints_->caps = FI_MSG;
  hints_->mode = FI_CONTEXT | FI_CONTEXT2 | FI_MSG_PREFIX;
  hints_->ep_attr->type = FI_EP_RDM;
  hints_->domain_attr->mr_mode = FI_MR_LOCAL | FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | FI_MR_PROV_KEY;
  hints_->fabric_attr->prov_name = strdup("dpdk");
  expect_match_and_narrow();
  EXPECT_EQ(offer_->mode, 0u);
  EXPECT_EQ(offer_->domain_attr->mr_mode, FI_MR_PROV_KEY | FI_MR_VIRT_ADDR);
  EXPECT_EQ(offer_->ep_attr->msg_prefix_size, 0u);
  EXPECT_TRUE(offer_->caps & FI_MSG);
}

}  // namespace
}  // namespace ofi_dpdk::ofi
