// provider_path.h: lets the apps run from a build tree without
// FI_PROVIDER_PATH: libfabric is pointed at the folder of the libdpdk-fi.so
// the program itself linked.
#pragma once

#include <dlfcn.h>
#include <fi_dpdk.h>

#include <cstdlib>
#include <string>
#include <string_view>

namespace ofi_dpdk::app {

inline void point_libfabric_at_provider() {
  if (std::getenv("FI_PROVIDER_PATH") != nullptr) return;
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(&fi_dpdk_eal_init), &info) == 0 || !info.dli_fname) return;
  std::string dir = info.dli_fname;
  const size_t slash = dir.rfind('/');
  if (slash == std::string::npos) return;
  dir.resize(slash);
  setenv("FI_PROVIDER_PATH", dir.c_str(), 0);
}

// The provider the arguments name (`--provider NAME`), before anything
// else is parsed: only dpdk starts EAL.  dpdk when none is named.
inline std::string provider_named(int argc, char** argv) {
  for (int i = 1; i + 1 < argc; ++i)
    if (std::string_view(argv[i]) == "--provider") return argv[i + 1];
  return "dpdk";
}

}  // namespace ofi_dpdk::app
