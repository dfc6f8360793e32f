#!/bin/bash
# Usage: usertools/dpdk-fi-setup.sh [--no-hugepages] [--builddir DIR] [--configure-only]
#                                   [--help]
#
# Prepares this machine for ofi-dpdk and builds it; safe to run again and again.
#  1. Installs what is missing among the Debian packages the project needs
#     (as root; otherwise prints the apt-get line to run and exits 2).
#  2. Reserves 1 GiB of hugepages and mounts a hugetlbfs if none is mounted.
#     When that is not possible (no root, a container), DPDK runs with
#     --no-huge instead. The choice is written to BUILDDIR/.hugepages
#     ("yes" or "no") for the other scripts.
#  3. Configures the build with meson (once) and builds it with ninja.
#  4. Prepares BUILDDIR/vm, the kernel and initramfs of the VM some tests
#     boot (usertools/dpdk-fi-vm.sh prepare).
#  5. Builds libfabric's fabtests for the installed libfabric into
#     BUILDDIR/fabtests-VERSION (devtools/dpdk-fi-fabtests.sh --build-only,
#     once; about a minute), from ../shared/fabtests: the gate and the tests
#     that run stock fabtests programs then find them built.  Without the
#     tarballs it says so, and those tests skip their fabtests parts.
#
# Options:
#   --no-hugepages  do not touch hugepages; record "no" (DPDK uses --no-huge)
#   --builddir DIR  build directory, relative to the repository root
#                   (default: build)
#   --configure-only  configure, but build nothing, prepare no VM kit and
#                   build no fabtests:
#                   `meson test` builds what the tests it runs need (the
#                   ThreadSanitizer part of dpdk-fi-test.sh, a few tests)
# Environment: DPDK_FI_VM_KIT=no prepares no VM kit (step 4: it downloads
# and unpacks a kernel package, ten seconds) for a build whose tests boot no
# VM, as the launcher test's small projects.
# Exit status: 0 ready, 1 a step failed, 2 packages missing and not root.
set -euo pipefail

# shellcheck source-path=SCRIPTDIR source=dpdk_fi_common.sh
source "$(dirname "${BASH_SOURCE[0]}")/dpdk_fi_common.sh"

PACKAGES=(g++ meson ninja-build pkg-config dpdk dpdk-dev libdpdk-dev
	libfabric-dev libfabric-bin libgtest-dev python3 iproute2 iputils-ping nftables
	openmpi-bin libopenmpi-dev autoconf automake libtool make xz-utils
	qemu-system-x86 busybox-static clang libbpf-dev)
# The layout check (test format) runs with Debian 12's clang-format 14 and
# skips elsewhere: nothing to install for it on another release.
if [[ "$(. /etc/os-release 2>/dev/null && echo "${VERSION_CODENAME:-}")" == bookworm ]]; then
	PACKAGES+=(clang-format)
fi
HUGE_TOTAL_KB=$((1024 * 1024)) # what we reserve: 512 pages of 2 MiB
HUGE_MIN_FREE_KB=$((256 * 1024)) # what DPDK must find free to use them

builddir=build
no_hugepages=0
configure_only=0
while (($#)); do
	case "$1" in
	--no-hugepages) no_hugepages=1 ;;
	--configure-only) configure_only=1 ;;
	--builddir)
		(($# >= 2)) || die 1 "--builddir needs a directory"
		builddir=$2
		shift
		;;
	-h | --help) usage; exit 0 ;;
	*) die 1 "unknown option '$1' (see --help)" ;;
	esac
	shift
done
builddir=$(abs_builddir "$builddir")
cd "$DPDK_FI_ROOT"

# 1. Packages. Sets installed_now=1 when something was installed.
installed_now=0
install_packages() {
	local missing=() p
	if ! command -v dpkg-query >/dev/null; then
		note "no dpkg-query: not a Debian system, skipping the package check"
		return
	fi
	for p in "${PACKAGES[@]}"; do
		[[ "$(dpkg-query -W -f='${db:Status-Status}' "$p" 2>/dev/null)" == installed ]] ||
			missing+=("$p")
	done
	((${#missing[@]})) || return 0
	if ((EUID != 0)); then
		note "missing packages: ${missing[*]}"
		note "install them with:"
		echo "sudo apt-get install -y ${missing[*]}"
		exit 2
	fi
	echo "installing: ${missing[*]}"
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -qq || die 1 "apt-get update failed"
	apt-get install -y -qq -o DPkg::Lock::Timeout=600 "${missing[@]}" || die 1 "apt-get install failed"
	installed_now=1
}

# 2. Hugepages. try_hugepages returns 0 when DPDK can use them; otherwise it
# sets why_not.
why_not=""
meminfo_kb() { # FIELD: the value of FIELD in /proc/meminfo (0 if absent)
	awk -v f="$1:" '$1 == f {print $2; found=1} END {if (!found) print 0}' /proc/meminfo
}
try_hugepages() {
	local size_kb want nr mnt
	size_kb=$(meminfo_kb Hugepagesize)
	if ((size_kb == 0)); then
		why_not="this kernel has no hugepage support"
		return 1
	fi
	want=$((HUGE_TOTAL_KB / size_kb))
	nr=$(cat /proc/sys/vm/nr_hugepages 2>/dev/null || echo 0)
	if ((nr < want)); then
		{ echo "$want" >/proc/sys/vm/nr_hugepages; } 2>/dev/null || true
	fi
	if (($(meminfo_kb HugePages_Free) * size_kb < HUGE_MIN_FREE_KB)); then
		why_not="could not reserve hugepages (vm.nr_hugepages is $(cat /proc/sys/vm/nr_hugepages))"
		return 1
	fi
	mnt=$(awk '$3 == "hugetlbfs" {print $2; exit}' /proc/mounts)
	if [[ -z "$mnt" ]]; then
		mnt=/dev/hugepages
		if ! { mkdir -p "$mnt" && mount -t hugetlbfs nodev "$mnt"; } 2>/dev/null; then
			why_not="no hugetlbfs is mounted and mounting one at $mnt failed"
			return 1
		fi
	fi
	# Touch one page: in a container whose cgroup allows no hugepages the
	# reservation succeeds but the first write dies with SIGBUS.
	if ! python3 - "$mnt" "$size_kb" 2>/dev/null <<-'EOF'; then
		import mmap, os, sys, tempfile
		size = int(sys.argv[2]) * 1024
		fd, path = tempfile.mkstemp(dir=sys.argv[1], prefix="dpdk-fi-probe.")
		try:
		    os.ftruncate(fd, size)
		    with mmap.mmap(fd, size) as page:
		        page[0] = 1
		finally:
		    os.close(fd)
		    os.unlink(path)
	EOF
		why_not="hugepages are reserved but this process cannot use them at $mnt"
		return 1
	fi
}
setup_hugepages() {
	local decision=no
	if ((no_hugepages)); then
		echo "hugepages: not used (--no-hugepages); DPDK will run with --no-huge"
	elif try_hugepages; then
		decision=yes
		echo "hugepages: available; DPDK will run with --in-memory"
	else
		echo "hugepages: $why_not; DPDK will run with --no-huge"
		echo "  to use hugepages, as root: echo 512 > /proc/sys/vm/nr_hugepages;" \
			"mount -t hugetlbfs nodev /dev/hugepages (a container must be privileged)"
	fi
	mkdir -p "$builddir"
	echo "$decision" >"$builddir/.hugepages"
}

# 3. Build. Configure once; reconfigure only when the build directory is
# unusable (no build.ninja, another meson version) or packages just changed.
build() {
	python_direct "$builddir" # meson's find_program('python3') takes it
	if [[ ! -f "$builddir/meson-private/coredata.dat" ]]; then
		echo "configuring: meson setup $builddir"
		meson setup "$builddir" "$DPDK_FI_ROOT" ||
			die 1 "meson setup failed; see above and $builddir/meson-logs/meson-log.txt"
	elif ((installed_now)) || [[ ! -f "$builddir/build.ninja" ]] ||
		! meson introspect --projectinfo "$builddir" >/dev/null 2>&1; then
		echo "reconfiguring: meson setup --reconfigure $builddir"
		meson setup --reconfigure "$builddir" "$DPDK_FI_ROOT" ||
			die 1 "meson setup --reconfigure failed; see above and $builddir/meson-logs/meson-log.txt"
	fi
	if ((configure_only)); then
		echo "configured: $builddir (meson test builds what its tests need)"
		return
	fi
	echo "building: ninja -C $builddir"
	ninja -C "$builddir" || die 1 "the build failed; see the compiler messages above"
}

# 4. The VM kit (dpdk-fi-vm.sh): a kernel whose modules net_tap's rte_flow
# needs.  Without it (no package registry) the VM's tests skip.
vm_kit() {
	bash "$DPDK_FI_ROOT/usertools/dpdk-fi-vm.sh" prepare --builddir "$builddir" ||
		note "warning: no VM kit; the tests that boot a VM (flow_steering_vm) will skip"
}

# 5. fabtests, built here rather than by the first test that runs one:
# inside a test they are built under its time limit, beside whatever else
# the machine is doing.
fabtests() {
	local script=$DPDK_FI_ROOT/devtools/dpdk-fi-fabtests.sh output status=0
	# (A tree without the provider, as the launcher test's small projects,
	# has nothing to run them over.)
	[[ -f "$script" && -f "$builddir/drivers/ofi/libdpdk-fi.so" ]] || return 0
	output=$(bash "$script" --builddir "$builddir" --build-only 2>&1) || status=$?
	case "$status" in
	0) [[ -z "$output" ]] || echo "$output" ;;
	77) note "fabtests not built (${output##*SKIP: }): the gate and the fabtests parts of tests will skip" ;;
	*) die 1 "building fabtests failed: $(tail -n 5 <<<"$output")" ;;
	esac
}

install_packages
setup_hugepages
build
((configure_only)) || [[ "${DPDK_FI_VM_KIT:-yes}" == no ]] || vm_kit
((configure_only)) || fabtests
echo "ready: $builddir"
