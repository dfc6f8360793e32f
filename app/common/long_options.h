// long_options.h: an app's own command line (what follows EAL's arguments
// and their "--") read with getopt_long(3), as testpmd reads its own: the
// value after the option or after "=" (--count=5), a unique prefix for the
// whole name, and one usage error for an unknown or ambiguous option, a
// missing value and a stray argument, so no app spells those rules itself.
#pragma once

#include <getopt.h>

#include <cstddef>
#include <initializer_list>
#include <string>
#include <vector>

namespace ofi_dpdk::app {

struct LongOption {
  const char* name;  // without the leading "--"
  bool takes_value;
};

// Calls on_option(name, value) for each of `args` (`count` of them, the
// program's own: no program name in front) in order, value nullptr for an
// option that takes none.  Calls fail(text), which must not return, on an
// option that is not in `options`, a missing value, or an argument that
// is not an option.
template <typename OnOption, typename Fail>
void read_long_options(const char* program, int count, char** args,
                       std::initializer_list<LongOption> options, OnOption&& on_option,
                       Fail&& fail) {
  // getopt_long wants the program's name first and a terminating null.
  std::vector<char*> argv{const_cast<char*>(program)};
  argv.insert(argv.end(), args, args + (count > 0 ? count : 0));
  const int argc = static_cast<int>(argv.size());
  argv.push_back(nullptr);
  // Each option answers with its index past any character getopt returns.
  constexpr int kFirstIndex = 256;
  std::vector<option> table;
  for (const LongOption& o : options)
    table.push_back({o.name, o.takes_value ? required_argument : no_argument, nullptr,
                     kFirstIndex + static_cast<int>(table.size())});
  table.push_back({nullptr, 0, nullptr, 0});
  // optind 0 makes glibc start over: rte_eal_init ran getopt on the same
  // process before us.  "+" stops at the first argument that is not an
  // option instead of reordering; ":" tells a missing value apart.
  optind = 0;
  opterr = 0;
  for (;;) {
    const int found = getopt_long(argc, argv.data(), "+:", table.data(), nullptr);
    if (found == -1) break;
    if (found == ':') fail("option " + std::string(argv[optind - 1]) + " needs a value");
    if (found < kFirstIndex) fail("unknown or ambiguous option " + std::string(argv[optind - 1]));
    const LongOption& o = options.begin()[found - kFirstIndex];
    on_option(std::string(o.name), o.takes_value ? optarg : nullptr);
  }
  if (optind < argc) fail("unexpected argument " + std::string(argv[optind]));
}

}  // namespace ofi_dpdk::app
