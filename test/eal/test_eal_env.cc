// Way (a) into EAL: FI_DPDK_EAL_ARGS, read on first use.  The test's
// environment (test/eal/meson.build) sets it to a net_ring port.
#include <fi_dpdk.h>
#include <gtest/gtest.h>

#include "test/support/messaging.h"

namespace ofi_dpdk::test {
namespace {

TEST(EalFromEnvironment, NothingHappensBeforeFirstUse) {
  EXPECT_EQ(fi_dpdk_eal_ready(), 0);
}

TEST(EalFromEnvironment, FirstGetinfoBringsEalUpAndListsThePort) {
  fi_info* info = get_dpdk_info();
  ASSERT_NE(info, nullptr);
  EXPECT_STREQ(info->domain_attr->name, "net_ring0");
  EXPECT_EQ(info->next, nullptr);
  EXPECT_EQ(fi_dpdk_eal_ready(), 1);
  fi_freeinfo(info);
}

TEST(EalFromEnvironment, WrapperSeesEalAlreadyUp) {
  char prog[] = "prog";
  char* argv[] = {prog, nullptr};
  EXPECT_EQ(fi_dpdk_eal_init(1, argv), -FI_EALREADY);
}

TEST(EalFromEnvironment, PortCarriesMessages) {
  TestDomain d;
  ASSERT_EQ(d.open(), 0);
  TestEndpoint a, b;
  ASSERT_EQ(a.open(d.domain, d.av, d.info), 0);
  ASSERT_EQ(b.open(d.domain, d.av, d.info), 0);
  expect_message_delivered(a, b.addr, b, "over FI_DPDK_EAL_ARGS");
  a.close();
  b.close();
  d.close();
}

}  // namespace
}  // namespace ofi_dpdk::test
