// Way (a) into EAL: FI_DPDK_EAL_ARGS, read on first use.  The test's
// environment (test/eal/meson.build) sets it to a net_ring port.
#include <fi_dpdk.h>
#include <gtest/gtest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <cstring>

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

// A child forked after EAL came up cannot use it (DPDK does not survive
// fork): fi_getinfo finds nothing there instead of driving the parent's
// port from the wrong process.
TEST(EalFromEnvironment, AChildForkedAfterEalFindsNoPort) {
  fi_info* info = get_dpdk_info();
  ASSERT_NE(info, nullptr);
  fi_freeinfo(info);
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    fi_info* hints = fi_allocinfo();
    hints->fabric_attr->prov_name = strdup("dpdk");
    fi_info* found = nullptr;
    const int ret = fi_getinfo(FI_VERSION(1, 17), nullptr, nullptr, 0, hints, &found);
    _exit(ret == -FI_ENODATA && found == nullptr && fi_dpdk_eal_ready() == 0 ? 0 : 1);
  }
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0) << "the forked child saw a usable EAL or a port";
  EXPECT_EQ(fi_dpdk_eal_ready(), 1);  // the parent's is untouched
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
