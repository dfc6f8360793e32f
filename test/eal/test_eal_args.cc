// EAL argument handling: FI_DPDK_EAL_ARGS splitting and the "--" split of a
// program's argv.
#include <gtest/gtest.h>

#include "lib/eal/eal_args.h"

namespace ofi_dpdk::eal {
namespace {

TEST(EalArgs, SplitsOnBlanks) {
  auto words = split_command_line("  -l 0\t--no-huge\n--vdev=net_ring0  ");
  ASSERT_TRUE(words);
  EXPECT_EQ(*words, (std::vector<std::string>{"-l", "0", "--no-huge", "--vdev=net_ring0"}));
}

TEST(EalArgs, QuotesAndEscapesGroupWords) {
  auto words = split_command_line(R"(--vdev="net_memif0,socket=/tmp/a b" 'x y' z\ w "")");
  ASSERT_TRUE(words);
  EXPECT_EQ(*words,
            (std::vector<std::string>{"--vdev=net_memif0,socket=/tmp/a b", "x y", "z w", ""}));
}

TEST(EalArgs, UnterminatedQuoteOrEscapeIsAnError) {
  EXPECT_FALSE(split_command_line("--vdev=\"net_ring0"));
  EXPECT_FALSE(split_command_line("-l 0 \\"));
}

TEST(EalArgs, EmptyLineGivesNoWords) {
  auto words = split_command_line("   ");
  ASSERT_TRUE(words);
  EXPECT_TRUE(words->empty());
}

TEST(EalArgs, CountStopsAfterSeparator) {
  const char* argv[] = {"prog", "-l", "0", "--", "--count", "5"};
  EXPECT_EQ(eal_argument_count(6, argv), 4);
  const char* no_separator[] = {"prog", "-l", "0"};
  EXPECT_EQ(eal_argument_count(3, no_separator), 3);
  const char* only_program[] = {"prog", "--", "x"};
  EXPECT_EQ(eal_argument_count(3, only_program), 2);
}

TEST(EalArgs, NoHugeIsRecognised) {
  EXPECT_TRUE(wants_no_huge({"-l", "0", "--no-huge"}));
  EXPECT_FALSE(wants_no_huge({"-l", "0", "--in-memory"}));
}

// How the start-up turn of a secondary finds its primary's directory.
TEST(EalArgs, OptionValueTakesEitherSpellingAndTheLastOne) {
  EXPECT_EQ(option_value({"-l", "0", "--file-prefix", "job1"}, "--file-prefix", "rte"), "job1");
  EXPECT_EQ(option_value({"--file-prefix=job2", "-l", "0"}, "--file-prefix", "rte"), "job2");
  EXPECT_EQ(option_value({"--file-prefix=a", "--file-prefix", "b"}, "--file-prefix", "rte"), "b");
  EXPECT_EQ(option_value({"-l", "0"}, "--file-prefix", "rte"), "rte");
  // A name that only starts like the option is another option.
  EXPECT_EQ(option_value({"--proc-typex=secondary"}, "--proc-type", ""), "");
  EXPECT_EQ(option_value({"--proc-type=secondary"}, "--proc-type", ""), "secondary");
  // An option with no value after it keeps the fallback.
  EXPECT_EQ(option_value({"--file-prefix"}, "--file-prefix", "rte"), "rte");
}

// How the provider finds the af_xdp ports it moves to af_packet
// (dpdk_init.cc): either spelling of --vdev, nothing else.
TEST(EalArgs, EachVdevIsRewrittenInEitherSpelling) {
  std::vector<std::string> args = {"-l",
                                   "0",
                                   "--vdev=net_af_xdp0,iface=a",
                                   "--vdev",
                                   "net_ring0",
                                   "--vdevx=net_tap0",
                                   "-a",
                                   "0000:00:03.0",
                                   "--vdev"};
  std::vector<std::string> seen;
  for_each_vdev(args, [&](std::string& device) {
    seen.push_back(device);
    device = "net_null" + std::to_string(seen.size() - 1);
  });
  EXPECT_EQ(seen, (std::vector<std::string>{"net_af_xdp0,iface=a", "net_ring0"}));
  EXPECT_EQ(args, (std::vector<std::string>{"-l", "0", "--vdev=net_null0", "--vdev", "net_null1",
                                            "--vdevx=net_tap0", "-a", "0000:00:03.0", "--vdev"}));
}

}  // namespace
}  // namespace ofi_dpdk::eal
