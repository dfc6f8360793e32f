// dpdk_init.cc: the provider's entry point (fi_prov_ini), EAL on first use,
// and the public EAL-wrapper API of fi_dpdk.h.
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "drivers/net/packet_ring.h"
#include "drivers/net/xdp_steer.h"
#include "drivers/ofi/dpdk_getinfo.h"
#include "drivers/ofi/dpdk_kernel_ports.h"
#include "drivers/ofi/dpdk_limits.h"
#include "drivers/ofi/dpdk_log.h"
#include "drivers/ofi/dpdk_objects.h"
#include "drivers/ofi/dpdk_params.h"
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

namespace {

// Whether this process is the first of its network namespace to ask for
// an af_xdp port on `iface`: a lock on a file named for both, held for the
// process's life (the descriptor stays open; the kernel lets the lock go
// when the process ends).  Two processes that start at once (a fork
// before either opened its port) cannot both see the other's XDP program
// yet; one of them gets the lock.  Where the folder cannot be written
// (not root), true: as before, net_af_xdp says what it finds.
bool first_af_xdp_of(const std::string& iface) {
  struct stat ns {};
  if (stat("/proc/self/ns/net", &ns) != 0) return true;
  const std::string folder = "/run/ofi-dpdk";
  mkdir(folder.c_str(), 0755);
  const std::string path = folder + "/af_xdp-" + std::to_string(ns.st_ino) + "-" + iface + ".lock";
  const int fd = open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  if (fd < 0) return true;
  if (flock(fd, LOCK_EX | LOCK_NB) == 0) return true;  // kept for the process's life
  close(fd);
  return false;
}

// An af_xdp port asked for on an interface whose XDP program is ours
// already: another process's (a queue takes one AF_XDP socket; a program
// that forked, as fabtests' fi_rdm_shared_av does, or a second rank) or
// one a dead run left.  net_af_xdp would fail to attach its own; the
// port goes on af_packet instead, whose queues' UDP the program passes to
// the kernel (KernelPorts::pass_through_xdp).  The launcher does the same
// for the processes it starts.
void af_packet_beside_af_xdp(std::vector<std::string>& words) {
  constexpr std::string_view kXdp = "net_af_xdp";
  eal::for_each_vdev(words, [&](std::string& device) {
    if (!device.starts_with(kXdp)) return;
    const size_t iface_at = device.find(",iface=");
    if (iface_at == std::string::npos) return;
    const size_t begin = iface_at + 7;
    const std::string iface = device.substr(begin, device.find(',', begin) - begin);
    if (first_af_xdp_of(iface) && !net::has_steer_program(iface)) return;
    note_beside_af_xdp(iface);
    const std::string index = device.substr(kXdp.size(), device.find(',') - kXdp.size());
    std::string ring;
    if (const std::optional<uint32_t> mtu = net::kernel_interface_mtu(iface))
      ring = net::packet_ring_devargs(*mtu);
    DPDK_INFO(FI_LOG_CORE,
              "%s has an af_xdp port already (its XDP program is attached, or another "
              "process of this network namespace asked first): this process's port goes on "
              "af_packet beside it\n",
              iface.c_str());
    device = "net_af_packet" + index + ",iface=" + iface + (ring.empty() ? "" : "," + ring);
  });
}

}  // namespace

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
  const Params& p = params();  // (warns of bad values the first time)
  if (p.eal_args.empty()) {
    DPDK_INFO(FI_LOG_CORE,
              "EAL is not initialised and FI_DPDK_EAL_ARGS is empty: no ports to offer "
              "(set FI_DPDK_EAL_ARGS, use usertools/dpdk-fi-run.py, or call "
              "fi_dpdk_eal_init)\n");
    return -FI_ENODATA;
  }
  auto words = eal::split_command_line(p.eal_args);
  if (!words) {
    DPDK_WARN(FI_LOG_CORE, "FI_DPDK_EAL_ARGS has an unterminated quote: %s\n", p.eal_args.c_str());
    return -FI_ENODATA;
  }
  af_packet_beside_af_xdp(*words);
  words->insert(words->begin(), "libdpdk-fi");
  const int ret = eal::eal_bring_up(*words, /*quiet=*/true);
  if (ret != 0 && ret != -EALREADY) {
    DPDK_WARN(FI_LOG_CORE, "%s\n", eal::eal_status().detail.c_str());
    return -FI_ENODATA;
  }
  DPDK_INFO(FI_LOG_CORE, "EAL initialised from FI_DPDK_EAL_ARGS: %s\n", p.eal_args.c_str());
  return 0;
}

// Utility providers layer over core providers' FI_EP_DGRAM (ofi_rxd) and
// FI_EP_MSG (ofi_rxm) endpoints, and libfabric lists what they make before
// the core's own: "dpdk;ofi_rxd" would be what `-p dpdk` and
// FI_PROVIDER=dpdk pick for FI_EP_RDM, in place of our reliable transport.
// libfabric has a switch for that, "layer over this provider only when the
// application names the pair", kept in fi_provider::context and set by name
// for shm, efa, psm3 and a few more (src/fabric.c, ofi_register_provider,
// which leaves it alone for everyone else).  Its layout is libfabric's own
// (include/ofi.h, struct ofi_prov_context, the same in 1.17 and 2.1: the
// provider's type, then two bools, disable_logging and disable_layering),
// not public; test ofi_dgram (DgramGetinfo.*) checks that it still holds.
void disable_layering(fi_provider* provider) {
  struct LibfabricProviderContext {
    int type;
    bool disable_logging;
    bool disable_layering;
  };
  static_assert(sizeof(LibfabricProviderContext) <= sizeof(provider->context));
  LibfabricProviderContext context;
  std::memcpy(&context, &provider->context, sizeof(context));
  context.disable_layering = true;
  std::memcpy(&provider->context, &context, sizeof(context));
}

}  // namespace ofi_dpdk::ofi

extern "C" {

FI_EXT_INI {
  ofi_dpdk::ofi::define_params(&ofi_dpdk::ofi::g_provider);
  ofi_dpdk::ofi::disable_layering(&ofi_dpdk::ofi::g_provider);
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
  return state == ofi_dpdk::eal::EalState::kOurs || state == ofi_dpdk::eal::EalState::kHostOwned;
}

}  // extern "C"
