#!/bin/bash
# Usage: devtools/dpdk-fi-package.sh [--suite bookworm|trixie] [--keep DIR]
#                                      [--prepare-only]
#
# Builds the Debian packages (debian/) for one release and proves them the
# way an operator meets them: installed into a clean root of that release.
#  1. Build: `dpkg-buildpackage -us -uc -b` in a copy of the repository
#     (the files git tracks or would track), on this machine for its own
#     release (Debian 12), inside the Debian 13 root of
#     devtools/dpdk-fi-debian13.sh for trixie. debhelper and lintian are
#     installed with apt-get when missing.
#  2. lintian: no error on the .changes (this machine's lintian).
#  3. Install: `mmdebstrap --variant=minbase` of the release with the built
#     ofi-dpdk and ofi-dpdk-dev and what the tests use (libfabric-bin, gcc,
#     pkgconf): apt resolves the packages' declared dependencies and nothing
#     else, so a missing one fails here. Inside that root (mount and PID
#     namespaces of its own, this machine's network):
#       - `fi_info -p dpdk` lists the provider, with no FI_PROVIDER_PATH;
#       - stock fi_pingpong passes over a memif pair, each side started by
#         the installed launcher `dpdk-fi-run`;
#       - a C program that calls fi_dpdk_eal_ready() builds with
#         `pkg-config --cflags --libs ofi-dpdk` alone and runs;
#       - each program has its man page.
# Prints "1 passed, 0 failed" or "0 passed, 1 failed" last.
#
# Steps 1-3 take minutes and little of the machine (one build, downloads);
# the checks take seconds but run a polling pingpong. --prepare-only does
# steps 1-3 alone and keeps what they made in build-package-SUITE/ with a
# fingerprint of the source; a later run for the same suite whose source has
# the same fingerprint starts at the checks (saying so), any other builds
# afresh. .ci/run prepares the trixie packages beside the tests; a run
# meanwhile waits for the preparation (a lock per suite) and then uses it.
#
# Options:
#   --suite S    bookworm (default: this machine's release) or trixie
#   --keep DIR   leave the .deb files in DIR
#   --prepare-only  steps 1-3, kept for the next run (above); no checks
#
# Environment: DPDK_FI_DEBIAN_MIRROR, the Debian mirror (default: the first
# Debian mirror in /etc/apt, else http://deb.debian.org/debian).
#
# Exit status: 0 when every step passed, 1 otherwise, 2 when not root.
set -euo pipefail

# shellcheck source-path=SCRIPTDIR source=../usertools/dpdk_fi_common.sh
source "$(dirname "${BASH_SOURCE[0]}")/../usertools/dpdk_fi_common.sh"

suite=$(. /etc/os-release && echo "${VERSION_CODENAME:-}")
host_suite=$suite
keep=""
prepare_only=0
while (($#)); do
	case "$1" in
	--suite)
		(($# >= 2)) || die 1 "--suite needs a release name"
		suite=$2
		shift
		;;
	--keep)
		(($# >= 2)) || die 1 "--keep needs a directory"
		keep=$2
		shift
		;;
	--prepare-only) prepare_only=1 ;;
	-h | --help) usage; exit 0 ;;
	*) die 1 "unknown option '$1' (see --help)" ;;
	esac
	shift
done
((EUID == 0)) || { note "needs root (apt-get, mmdebstrap, chroot, mounts)"; echo "0 passed, 1 failed"; exit 2; }
[[ "$suite" == "$host_suite" || "$suite" == trixie ]] ||
	die 1 "builds for this machine's release ($host_suite) or trixie, not '$suite'"
# One run per suite at a time on a machine: a run that finds a
# --prepare-only still at work (.ci/run starts the Debian 13 leg while the
# trixie packages are still being prepared beside its tests) waits for it,
# then starts at the checks.
exec 9>"/tmp/ofi-dpdk-package-$suite.lock"
if ! flock -n 9; then
	note "waiting for the other package run for $suite (a --prepare-only) to end"
	flock 9
fi

failed() {
	note "FAIL: $*"
	echo "0 passed, 1 failed"
	exit 1
}

# Inside the repository: the Debian 13 root mounts the repository alone.
work=$(mktemp -d "$DPDK_FI_ROOT/build-package.XXXXXX")
install_root=""
keep_install_root=0
# What --prepare-only leaves: the .deb and .changes files, the path of the
# install root (under /var/tmp, out of the repository the Debian 13 root
# mounts), and last the source's fingerprint, which marks it complete.
prepared="$DPDK_FI_ROOT/build-package-$suite"
# remove_root DIR: deletes an install root unless something is mounted in it.
remove_root() {
	[[ -n "$1" && -d "$1" ]] || return 0
	grep -q " $1[/ ]" /proc/self/mountinfo || rm -rf --one-file-system "$1"
}
# shellcheck disable=SC2317  # called by the EXIT trap
cleanup() {
	((keep_install_root)) || remove_root "$install_root"
	rm -rf "$work"
}
trap cleanup EXIT
t0=$SECONDS

tools=()
command -v dh >/dev/null || tools+=(debhelper)
command -v lintian >/dev/null || tools+=(lintian)
command -v mmdebstrap >/dev/null || tools+=(mmdebstrap)
if ((${#tools[@]})); then
	echo "installing: ${tools[*]}"
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${tools[@]}" >/dev/null ||
		failed "apt-get install ${tools[*]}"
fi

# 1. The source: what git tracks, and new files it would track.
mkdir "$work/ofi-dpdk"
git -C "$DPDK_FI_ROOT" ls-files -z --cached --others --exclude-standard |
	(cd "$DPDK_FI_ROOT" && xargs -0 cp --parents -t "$work/ofi-dpdk" 2>/dev/null) ||
	failed "could not copy the repository's files"
fingerprint=$(cd "$work/ofi-dpdk" && find . -type f -print0 | sort -z | xargs -0 sha256sum |
	sha256sum | cut -d' ' -f1)

# A preparation for this very source: straight to the checks (4).
use_prepared=0
if ((!prepare_only)) && [[ -f "$prepared/fingerprint" ]]; then
	if [[ "$(cat "$prepared/fingerprint")" == "$fingerprint" && -d "$(cat "$prepared/root")" ]]; then
		use_prepared=1
	else
		echo "build-package-$suite/ was prepared for another source: building afresh"
	fi
fi
if ((prepare_only || !use_prepared)) && [[ -d "$prepared" ]]; then
	[[ ! -f "$prepared/root" ]] || remove_root "$(cat "$prepared/root")"
	rm -rf "$prepared"
fi
# Steps 1 (the build), 2 and 3: sets debs and install_root.
build_and_install() {
	# Without -g (dpkg-buildflags' DEB_*_STRIP): the packages are stripped
	# and ship no debug symbols (noddebs), so the files installed are the same,
	# and the build takes a quarter less.
	build_command='cd "$1" && DEB_BUILD_OPTIONS="parallel=$(nproc) noddebs"'
	build_command+=' DEB_CFLAGS_STRIP=-g DEB_CXXFLAGS_STRIP=-g dpkg-buildpackage -us -uc -b'
	echo "building the packages for $suite"
	if [[ "$suite" == "$host_suite" ]]; then
		bash -c "$build_command" bash "$work/ofi-dpdk" >"$work/build.log" 2>&1 ||
			{ tail -n 40 "$work/build.log"; failed "dpkg-buildpackage"; }
	else
		bash "$DPDK_FI_ROOT/devtools/dpdk-fi-debian13.sh" --command \
			"bash -c '$build_command' bash '$work/ofi-dpdk'" >"$work/build.log" 2>&1 ||
			{ tail -n 40 "$work/build.log"; failed "dpkg-buildpackage in the $suite root"; }
	fi
	shopt -s nullglob
	debs=("$work"/*.deb)
	changes=("$work"/*.changes)
	((${#debs[@]} == 3 && ${#changes[@]} == 1)) || failed "expected three .deb and a .changes, got: $(ls "$work")"
	for deb in "${debs[@]}"; do echo "  $(basename "$deb") $(du -k "$deb" | cut -f1) KiB"; done
	[[ -z "$keep" ]] || { mkdir -p "$keep" && cp "${debs[@]}" "$keep"/; }

	# 2. lintian: errors fail, warnings are shown.
	lintian --fail-on error "${changes[0]}" >"$work/lintian.log" 2>&1 ||
		{ cat "$work/lintian.log"; failed "lintian found errors"; }
	echo "lintian: no errors ($(grep -c '^W:' "$work/lintian.log" || true) warnings)"
	grep '^W:' "$work/lintian.log" | sed 's/^/  /' || true

	# 3. A clean root of the release with the packages installed.
	install_root=$(mktemp -d "/var/tmp/ofi-dpdk-install-$suite.XXXXXX")
	rmdir "$install_root"  # mmdebstrap makes it
	mirror=${DPDK_FI_DEBIAN_MIRROR:-$(debian_mirror)}
	echo "installing them into a clean $suite root from $mirror"
	deb_of() { local d; for d in "${debs[@]}"; do [[ "$(basename "$d")" == "$1"_* ]] && echo "$d"; done; }
	if ! mmdebstrap --variant=minbase --quiet \
		--include="$(deb_of ofi-dpdk)" --include="$(deb_of ofi-dpdk-dev)" \
		--include=libfabric-bin,gcc,libc6-dev,pkgconf \
		--hook-dir=/usr/share/mmdebstrap/hooks/file-mirror-automount \
		--dpkgopt=force-unsafe-io --dpkgopt='path-exclude=/usr/share/doc/*' \
		--dpkgopt='path-exclude=/usr/share/locale/*' --aptopt='Acquire::Retries "3"' \
		"$suite" "$install_root" "$mirror" >"$work/mmdebstrap.log" 2>&1; then
		tail -n 30 "$work/mmdebstrap.log"
		failed "mmdebstrap could not install the packages into a $suite root"
	fi
}

if ((use_prepared)); then
	shopt -s nullglob
	debs=("$prepared"/*.deb)
	install_root=$(cat "$prepared/root")
	echo "the packages for $suite: built, passed lintian and installed into $install_root" \
		"beforehand (--prepare-only, $(date -r "$prepared/fingerprint" +%T)), from this same source"
	for deb in "${debs[@]}"; do echo "  $(basename "$deb") $(du -k "$deb" | cut -f1) KiB"; done
	[[ -z "$keep" ]] || { mkdir -p "$keep" && cp "${debs[@]}" "$keep"/; }
	rm -rf "$prepared"  # a root is checked once; removed at exit
else
	build_and_install
fi
if ((prepare_only)); then
	mkdir -p "$prepared"
	cp "${debs[@]}" "${changes[@]}" "$prepared"/
	echo "$install_root" >"$prepared/root"
	echo "$fingerprint" >"$prepared/fingerprint"
	keep_install_root=1
	echo "prepared in $((SECONDS - t0)) s: build-package-$suite/ and $install_root; the next run for" \
		"$suite from this source starts at the checks"
	exit 0
fi

cp "$DPDK_FI_ROOT/devtools/package_install_checks.sh" "$install_root/root/checks.sh"
# The root in namespaces of its own: its mounts end with it, and so does
# every process it starts.
status=0
# shellcheck disable=SC2016  # the inner shell expands its own arguments
timeout -k 5 300 unshare --mount --propagation private --pid --fork --kill-child \
	bash -euc '
		root=$1
		mount --bind "$root" "$root"
		mount -t proc proc "$root/proc"
		mount --rbind /sys "$root/sys"
		mount --rbind /dev "$root/dev"
		mount -t tmpfs tmpfs "$root/run"
		mount -t tmpfs tmpfs "$root/tmp"
		status=0
		chroot "$root" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root \
			LANG=C.UTF-8 bash /root/checks.sh || status=$?
		exit "$status"
	' bash "$install_root" || status=$?
((status == 0)) || failed "the installed packages failed their checks (status $status)"
echo "package test for $suite passed in $((SECONDS - t0)) s"
echo "1 passed, 0 failed"
