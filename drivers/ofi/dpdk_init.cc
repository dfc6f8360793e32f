// dpdk_init.cc: the provider's entry point (fi_prov_ini), EAL on first use,
// and the public EAL-wrapper API of fi_dpdk.h.
#include <cerrno>
#include <cstring>

#include "drivers/ofi/dpdk_prov.h"
#include "include/fi_dpdk.h"
#include "lib/eal/eal_args.h"
#include "lib/eal/eal_bootstrap.h"

namespace ofi_dpdk::ofi {

namespace {
void provider_cleanup() {
  // EAL stays up: rte_eal_init cannot run twice in one process, and a host
  // DPDK program may still be using it.
}
}  // namespace

fi_provider g_provider = {
    .version = kProviderVersion,
    .fi_version = FI_VERSION(FI_MAJOR_VERSION, FI_MINOR_VERSION),
    .context = {},
    .name = kProviderName,
    .getinfo = getinfo,
    .fabric = fabric_open,
    .cleanup = provider_cleanup,
};

int ensure_eal() {
  using eal::EalState;
  eal::EalStatus status = eal::eal_status();
  if (status.state == EalState::kOurs || status.state == EalState::kHostOwned) return 0;
  if (status.state == EalState::kFailed) {
    DPDK_INFO(FI_LOG_CORE, "EAL is unusable in this process: %s\n", status.detail.c_str());
    return -FI_ENODATA;
  }
  if (status.state == EalState::kForked) {
    DPDK_WARN(FI_LOG_CORE, "%s\n", status.detail.c_str());
    return -FI_ENODATA;
  }
  const Params& p = params();
  if (!p.errors.empty())
    DPDK_WARN(FI_LOG_CORE, "ignoring bad parameter values:%s\n", p.errors.c_str());
  if (p.eal_args.empty()) {
    DPDK_INFO(FI_LOG_CORE,
              "EAL is not initialised and FI_DPDK_EAL_ARGS is empty: no ports to offer "
              "(set FI_DPDK_EAL_ARGS, use usertools/dpdk-fi-run.py, or call "
              "fi_dpdk_eal_init)\n");
    return -FI_ENODATA;
  }
  auto words = eal::split_command_line(p.eal_args);
  if (!words) {
    DPDK_WARN(FI_LOG_CORE, "FI_DPDK_EAL_ARGS has an unterminated quote: %s\n",
              p.eal_args.c_str());
    return -FI_ENODATA;
  }
  words->insert(words->begin(), "libdpdk-fi");
  const int ret = eal::eal_bring_up(*words, /*quiet=*/true);
  if (ret != 0 && ret != -EALREADY) {
    DPDK_WARN(FI_LOG_CORE, "%s\n", eal::eal_status().detail.c_str());
    return -FI_ENODATA;
  }
  DPDK_INFO(FI_LOG_CORE, "EAL initialised from FI_DPDK_EAL_ARGS: %s\n", p.eal_args.c_str());
  return 0;
}

}  // namespace ofi_dpdk::ofi

extern "C" {

FI_EXT_INI {
  ofi_dpdk::ofi::define_params(&ofi_dpdk::ofi::g_provider);
  return &ofi_dpdk::ofi::g_provider;
}

int fi_dpdk_eal_init(int argc, char** argv) {
  if (argc < 1 || argv == nullptr) return -FI_EINVAL;
  const int consumed = ofi_dpdk::eal::eal_argument_count(argc, argv);
  // EAL's own arguments end before "--"; it never sees the program's.
  const bool has_separator = consumed > 1 && std::strcmp(argv[consumed - 1], "--") == 0;
  const int eal_count = has_separator ? consumed - 1 : consumed;
  std::vector<std::string> args(argv, argv + eal_count);
  const int ret = ofi_dpdk::eal::eal_bring_up(args);
  if (ret == -EALREADY) return -FI_EALREADY;
  if (ret != 0) {
    DPDK_WARN(FI_LOG_CORE, "%s\n", ofi_dpdk::eal::eal_status().detail.c_str());
    return -FI_EINVAL;
  }
  return consumed;
}

int fi_dpdk_eal_ready(void) {
  const auto state = ofi_dpdk::eal::eal_status().state;
  return state == ofi_dpdk::eal::EalState::kOurs ||
         state == ofi_dpdk::eal::EalState::kHostOwned;
}

}  // extern "C"
