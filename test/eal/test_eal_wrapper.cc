// Way (b) into EAL: the program hands its argv to fi_dpdk_eal_init(), DPDK
// style.  FI_DPDK_EAL_ARGS is set to something broken to prove it is not
// used once EAL is up.
#include <fi_dpdk.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "test/support/messaging.h"

namespace ofi_dpdk::test {
namespace {

int g_consumed = -1;
std::vector<std::string> g_argv_before, g_argv_after;

TEST(EalWrapper, ReturnsTheIndexAfterTheSeparator) {
  // argv: prog + 10 EAL arguments + "--" => the program's own start at 12.
  EXPECT_EQ(g_consumed, 12);
}

TEST(EalWrapper, LeavesArgvAlone) {
  EXPECT_EQ(g_argv_before, g_argv_after);
}

TEST(EalWrapper, SecondCallSaysAlready) {
  char prog[] = "prog";
  char* argv[] = {prog, nullptr};
  EXPECT_EQ(fi_dpdk_eal_init(1, argv), -FI_EALREADY);
  EXPECT_EQ(fi_dpdk_eal_init(0, nullptr), -FI_EINVAL);
}

TEST(EalWrapper, ProviderUsesThatEal) {
  EXPECT_EQ(fi_dpdk_eal_ready(), 1);
  TestDomain d;
  ASSERT_EQ(d.open(), 0);
  EXPECT_STREQ(d.info->domain_attr->name, "net_ring7");
  TestEndpoint a, b;
  ASSERT_EQ(a.open(d.domain, d.av, d.info), 0);
  ASSERT_EQ(b.open(d.domain, d.av, d.info), 0);
  expect_message_delivered(b, a.addr, a, "through fi_dpdk_eal_init");
  a.close();
  b.close();
  d.close();
}

}  // namespace
}  // namespace ofi_dpdk::test

int main(int argc, char** argv) {
  using namespace ofi_dpdk::test;
  setenv("FI_DPDK_EAL_ARGS", "--this-is-not-an-eal-option", 1);
  std::vector<std::string> words = {argv[0],
                                    "-l",
                                    "0",
                                    "--no-huge",
                                    "-m",
                                    "512",
                                    "--no-shconf",
                                    "--no-pci",
                                    "--no-telemetry",
                                    "--log-level=lib.eal:error",
                                    "--vdev=net_ring7",
                                    "--"};
  for (int i = 1; i < argc; ++i) words.push_back(argv[i]);
  std::vector<char*> wrapper_argv;
  for (auto& w : words) wrapper_argv.push_back(w.data());
  g_argv_before = words;
  g_consumed = fi_dpdk_eal_init(static_cast<int>(wrapper_argv.size()), wrapper_argv.data());
  for (auto* w : wrapper_argv) g_argv_after.emplace_back(w);
  if (g_consumed < 0) {
    std::fprintf(stderr, "fi_dpdk_eal_init failed: %d\n", g_consumed);
    return 1;
  }
  int gtest_argc = static_cast<int>(wrapper_argv.size()) - g_consumed + 1;
  std::vector<char*> gtest_argv = {argv[0]};
  for (size_t i = static_cast<size_t>(g_consumed); i < wrapper_argv.size(); ++i)
    gtest_argv.push_back(wrapper_argv[i]);
  testing::InitGoogleTest(&gtest_argc, gtest_argv.data());
  return RUN_ALL_TESTS();
}
