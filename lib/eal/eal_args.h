// eal_args.h: EAL command lines as the provider receives them, from the
// FI_DPDK_EAL_ARGS string or from a program's argv.  Pure text handling.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace ofi_dpdk::eal {

// Splits a command line on blanks; single and double quotes group words, a
// backslash escapes the next character.  Returns nullopt on an unterminated
// quote or a trailing backslash.
std::optional<std::vector<std::string>> split_command_line(std::string_view line);

// In argv DPDK style ("prog EAL-args -- program-args"), returns how many
// entries belong to EAL, counting argv[0] and the "--" itself when present:
// the program's own arguments start at that index.  Without "--", all of
// argv is EAL's.
int eal_argument_count(int argc, const char* const* argv);

// True when the EAL arguments ask for no hugepages.
bool wants_no_huge(const std::vector<std::string>& args);

// The value of an EAL option given as "--name value" or "--name=value"
// (the last one given), or `fallback`.
std::string option_value(const std::vector<std::string>& args, std::string_view name,
                         std::string_view fallback);

// Calls `rewrite` on the device arguments of each virtual device EAL is
// given ("--vdev=ARGS" or "--vdev ARGS": "net_af_xdp0,iface=eth0" of
// either), which it may change in place.
void for_each_vdev(std::vector<std::string>& args,
                   const std::function<void(std::string& device)>& rewrite);

}  // namespace ofi_dpdk::eal
