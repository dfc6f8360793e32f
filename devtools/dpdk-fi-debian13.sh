#!/bin/bash
# Usage: devtools/dpdk-fi-debian13.sh [--rebuild-root] [DPDK-FI-TEST-ARGS...]
#        devtools/dpdk-fi-debian13.sh [--rebuild-root] --command 'SHELL-COMMAND'
#        (usertools/dpdk-fi-test.sh --debian13 [ARGS...] runs this script)
#
# The Debian 13 leg: builds ofi-dpdk against libfabric 2.1 and DPDK 24.11 and
# runs the whole test suite inside a Debian 13 (trixie) root, on a Debian 12
# host. Needs root.
#  1. The root: `mmdebstrap --variant=minbase` with PACKAGES below, from the
#     Debian mirror of this machine's apt sources (mmdebstrap is installed
#     with apt-get when missing). It is cached as
#     $DPDK_FI_DEBIAN13_CACHE/trixie-KEY.tar.zst, KEY a hash of the suite and
#     the package list, and built again only when that file is missing (or
#     with --rebuild-root): about 3 minutes on two idle cores, ~190 MB.
#  2. Each run unpacks the tarball into a fresh folder under /var/tmp and
#     enters it with `unshare --mount --net --pid --fork`: proc, sys (a
#     sysfs of the run's network namespace, which shows its interfaces),
#     dev (with /dev/hugepages and /dev/pts under it; a /dev/shm of its
#     own, since PIDs inside can equal PIDs outside) and the repository, at
#     its own path, are mounted in a mount namespace of the run's own, so
#     every mount ends with the run, and the PID namespace ends every
#     process started inside it. The network namespace
#     (loopback alone until the tests make their veths, bridges and
#     namespaces) keeps the leg's interfaces, namespace names, ports and
#     sockets apart from the host's, so the two legs' suites can run side
#     by side. The folder is removed afterwards, never while anything is
#     still mounted in it.
#  3. Inside: `usertools/dpdk-fi-test.sh --builddir build-trixie ARGS...`, the
#     same set-up, build and suite runner as the Debian 12 leg, into the
#     leg's own build directory build-trixie/ (rebuilt from scratch when the
#     root changes). DPDK there runs with --in-memory (hugepages) or --no-huge
#     and --no-shconf, so it leaves no hugepage or runtime files on the host.
# The last line printed is the inner run's "N passed, N failed" (after a line
# giving the run's times), or "0 passed, 1 failed" when the leg could not run
# the suite at all.
#
# Options:
#   --rebuild-root     build the cached root again even if it exists
#   --builddir DIR     the leg's build directory, relative to the repository
#                      (default build-trixie; never share one with the host)
#   --command CMD      run `bash -c CMD` in the repository inside the root
#                      instead of the tests; its output alone goes to
#                      stdout, and its exit status is returned. E.g. the
#                      libfabric 2.1 man pages (the root has no man(1)):
#                      --command 'zcat /usr/share/man/man3/fi_av.3.gz' | man -l -
#   Any other argument goes to dpdk-fi-test.sh inside the root (--suite S,
#   --no-hugepages, a test name ...).
#
# Environment:
#   DPDK_FI_DEBIAN13_CACHE   where the root tarball is kept
#                            (default /var/cache/ofi-dpdk)
#   DPDK_FI_DEBIAN_MIRROR    the Debian mirror (default: the first Debian
#                            mirror in /etc/apt, else http://deb.debian.org/debian)
#   DPDK_FI_TEST_LIMIT       passed to dpdk-fi-test.sh inside
#
# Exit status: the inner run's (0 when no test failed and one passed, 1
# otherwise), 1 when the root could not be built or entered, 2 when not root.
set -euo pipefail

# shellcheck source-path=SCRIPTDIR source=../usertools/dpdk_fi_common.sh
source "$(dirname "${BASH_SOURCE[0]}")/../usertools/dpdk_fi_common.sh"

SUITE=trixie
# dpdk-fi-setup.sh's PACKAGES, plus procps (sysctl, for the veth test), the
# kernel the VM of dpdk-fi-vm.sh boots (the root has no apt lists to
# download it with), build-essential and debhelper
# (devtools/dpdk-fi-package.sh builds the Debian 13 packages here).
PACKAGES=(g++ meson ninja-build pkg-config dpdk dpdk-dev libdpdk-dev
	libfabric-dev libfabric-bin libgtest-dev python3 iproute2 iputils-ping procps nftables
	openmpi-bin libopenmpi-dev autoconf automake libtool make xz-utils
	qemu-system-x86 busybox-static linux-image-amd64 build-essential debhelper clang libbpf-dev)
BUILDDIR=build-trixie

rebuild_root=0
command=""
test_args=()
while (($#)); do
	case "$1" in
	--rebuild-root) rebuild_root=1 ;;
	--builddir)
		(($# >= 2)) || die 1 "--builddir needs a directory"
		BUILDDIR=$2
		shift
		;;
	--command)
		(($# >= 2)) || die 1 "--command needs a shell command"
		command=$2
		shift
		;;
	-h | --help) usage; exit 0 ;;
	*) test_args+=("$1") ;;
	esac
	shift
done

started=$SECONDS
root_note=""

# say MESSAGE...: a progress line; on stderr with --command, whose output
# is the caller's to use.
say() {
	if [[ -n "$command" ]]; then echo "$*" >&2; else echo "$*"; fi
}

# give_up MESSAGE: the leg could not run the suite; keeps the promise of a
# closing "N passed, N failed" line.
give_up() {
	note "error: $*"
	echo "0 passed, 1 failed"
	exit 1
}

((EUID == 0)) || {
	note "the Debian 13 leg needs root (debootstrapping, chroot, mounts)"
	echo "0 passed, 1 failed"
	exit 2
}

cache=${DPDK_FI_DEBIAN13_CACHE:-/var/cache/ofi-dpdk}
key=$(printf '%s\n' "$SUITE" minbase "${PACKAGES[@]}" | sha256sum | cut -c1-16)
tarball=$cache/$SUITE-$key.tar.zst

# build_root: makes $tarball with mmdebstrap (under a lock, so two runs do
# not build it twice), writing a temporary file renamed only when complete.
build_root() {
	local partial mirror t0=$SECONDS
	mkdir -p "$cache"
	exec {lock}>"$cache/$SUITE.lock"
	flock "$lock"
	if [[ -f "$tarball" ]] && ((!rebuild_root)); then
		exec {lock}>&-
		root_note="root cached (built by a concurrent run)"
		return
	fi
	local tools=()
	command -v mmdebstrap >/dev/null || tools+=(mmdebstrap)
	command -v zstd >/dev/null || tools+=(zstd)
	if ((${#tools[@]})); then
		say "installing on the host: ${tools[*]}"
		DEBIAN_FRONTEND=noninteractive apt-get install -y -qq -o DPkg::Lock::Timeout=600 "${tools[@]}" ||
			give_up "apt-get install ${tools[*]} failed"
	fi
	mirror=${DPDK_FI_DEBIAN_MIRROR:-$(debian_mirror)}
	rm -f "$cache/.$SUITE-"*.tar.zst  # what an interrupted build left (we hold the lock)
	partial=$(mktemp "$cache/.$SUITE-$key.XXXXXX.tar.zst")
	say "building the Debian 13 root from $mirror into $tarball (takes minutes)"
	# force-unsafe-io: no fsync per file, the root is thrown away on failure.
	# Documentation is left out, man pages kept (man 3 fi_av of 2.1).
	if ! mmdebstrap --variant=minbase --include="$(IFS=,; echo "${PACKAGES[*]}")" \
		--dpkgopt=force-unsafe-io \
		--dpkgopt='path-exclude=/usr/share/doc/*' \
		--dpkgopt='path-exclude=/usr/share/locale/*' \
		--aptopt='Acquire::Retries "3"' \
		"$SUITE" "$partial" "$mirror"; then
		rm -f "$partial"
		give_up "mmdebstrap could not build the $SUITE root (see above)"
	fi
	chmod 644 "$partial"  # mktemp made it private
	mv -f "$partial" "$tarball"
	exec {lock}>&-
	root_note="root built in $((SECONDS - t0)) s"
}

if [[ ! -f "$tarball" ]] || ((rebuild_root)); then
	build_root
else
	root_note="root cached"
fi

root=$(mktemp -d "/var/tmp/ofi-dpdk-$SUITE.XXXXXX")
last_line_file=$(mktemp)

# remove_root: deletes the unpacked root unless something is still mounted
# under it (nothing should be: the mounts live in the run's namespace).
# shellcheck disable=SC2317  # called by the EXIT trap
remove_root() {
	if awk -v r="$root" '$5 == r || index($5, r "/") == 1 { found = 1 } END { exit !found }' \
		/proc/self/mountinfo; then
		note "warning: something is still mounted under $root; leaving it in place"
	else
		rm -rf --one-file-system "$root"
	fi
	rm -f "$last_line_file"
}
trap remove_root EXIT
trap 'exit 130' INT  # a signal ends the script through its EXIT trap
trap 'exit 143' TERM

t0=$SECONDS
tar --zstd --numeric-owner -xpf "$tarball" -C "$root" ||
	give_up "could not unpack $tarball (remove it to build it again)"
root_note+=", unpacked in $((SECONDS - t0)) s"

# A build directory configured in another root may point at headers that
# are gone: start it afresh when the root changed.
[[ "$BUILDDIR" != /* && "$BUILDDIR" != build && "$BUILDDIR" != build/ ]] ||
	give_up "--builddir must be relative to the repository and not the host's build/"
builddir=$DPDK_FI_ROOT/$BUILDDIR
if [[ -d "$builddir" && "$(cat "$builddir/.debian13-root" 2>/dev/null)" != "$key" ]]; then
	say "the $SUITE root changed: removing $builddir"
	rm -rf "$builddir"
fi
mkdir -p "$builddir"
echo "$key" >"$builddir/.debian13-root"

if [[ -n "$command" ]]; then
	inner=(bash -c "$command")
else
	inner=(bash usertools/dpdk-fi-test.sh --builddir "$BUILDDIR" "${test_args[@]}")
fi
inner_env=(PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
	HOME=/root LANG=C.UTF-8 TERM="${TERM:-dumb}")
[[ -n "${DPDK_FI_TEST_LIMIT:-}" ]] && inner_env+=(DPDK_FI_TEST_LIMIT="$DPDK_FI_TEST_LIMIT")
# The tests' switches a user sets reach the root as they reach the Debian
# 12 leg (not the ones dpdk-fi-test.sh sets for itself inside).
for variable in OFI_DPDK_MPI_KNOWN_HANGS OFI_DPDK_MPI_LIMIT OFI_DPDK_SOAK; do
	if [[ -n "${!variable:-}" ]]; then inner_env+=("$variable=${!variable}"); fi
done

# The namespace's first process (its init: it reaps orphans, and when it
# ends the kernel ends every process left inside) mounts, then runs the
# command in the chroot. --kill-child: if this script is stopped, the
# namespace goes with it.
# The output streams through, except its last line, which is held back to
# be printed after the note on times.
say "entering the $SUITE root at $root ($root_note)"
t0=$SECONDS
status=0
# shellcheck disable=SC2016  # the inner shells expand their own arguments
unshare --mount --net --propagation private --pid --fork --kill-child \
	bash -euc '
		root=$1 repo=$2
		shift 2
		ip link set lo up
		# The root a mount point of its own: `ip netns exec` makes "/" a
		# slave mount, which a mere directory cannot be.
		mount --bind "$root" "$root"
		mount -t proc proc "$root/proc"
		mount -t sysfs sysfs "$root/sys"
		mount --rbind /dev "$root/dev"
		# A /dev/shm of its own: PIDs inside can equal PIDs outside, and
		# libfabric shm and Open MPI name their segments by PID.
		mount -t tmpfs -o mode=1777,nosuid,nodev tmpfs "$root/dev/shm"
		mkdir -p "$root$repo"
		mount --bind "$repo" "$root$repo"
		# fabtests release tarballs beside the repository (--fabtests)
		tarballs=$(dirname "$repo")/shared/fabtests
		if [ -d "$tarballs" ]; then
			mkdir -p "$root$tarballs"
			mount --bind "$tarballs" "$root$tarballs"
		fi
		status=0  # not the last command: bash would exec it and stop being init
		chroot "$root" /usr/bin/env -i "$@" || status=$?
		exit "$status"
	' bash "$root" "$DPDK_FI_ROOT" "${inner_env[@]}" \
	bash -c 'cd "$1" && shift && exec "$@"' bash "$DPDK_FI_ROOT" "${inner[@]}" |
	awk -v keep="$last_line_file" \
		'NR > 1 { print prev; fflush() } { prev = $0 } END { if (NR) print prev > keep }' ||
	status=${PIPESTATUS[0]}
run_seconds=$((SECONDS - t0))

last=$(cat "$last_line_file")
say "debian13: $root_note; run ${run_seconds} s; total $((SECONDS - started)) s"
if [[ -n "$command" ]]; then
	[[ -z "$last" ]] || echo "$last"
	exit "$status"
fi
if [[ "$last" =~ ^[0-9]+\ passed,\ [0-9]+\ failed ]]; then
	echo "$last"
else
	[[ -z "$last" ]] || echo "$last"
	note "the run in the $SUITE root ended (status $status) without a test summary"
	echo "0 passed, 1 failed"
	((status != 0)) || status=1
fi
exit "$status"
