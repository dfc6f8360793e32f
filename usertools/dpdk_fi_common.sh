# dpdk_fi_common.sh: helpers shared by the usertools/dpdk-fi-*.sh scripts.
# Source it; it defines functions and DPDK_FI_ROOT (the repository root) only.
# shellcheck shell=bash

DPDK_FI_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"

# The script name for messages, e.g. "dpdk-fi-setup.sh".
dpdk_fi_prog="$(basename "$0")"

# usage: prints the calling script's header comment (from line 2 up to the
# "set -euo pipefail" line) without the comment marks.
usage() {
	sed -n '2,/^set -euo/{/^set -euo/d;s/^# \{0,1\}//;p}' "$0"
}

# note MESSAGE...: one line on stderr, prefixed with the script name.
note() {
	echo "${dpdk_fi_prog}: $*" >&2
}

# die STATUS MESSAGE...: one line on stderr, then exit with STATUS.
die() {
	local status=$1
	shift
	echo "${dpdk_fi_prog}: error: $*" >&2
	exit "$status"
}

# abs_builddir DIR: DIR made absolute (relative paths are taken from the
# repository root, where the scripts always run).
abs_builddir() {
	case "$1" in
	/*) echo "$1" ;;
	*) echo "$DPDK_FI_ROOT/$1" ;;
	esac
}

# eal_memory_args BUILDDIR: the EAL memory options chosen by dpdk-fi-setup.sh
# (it writes BUILDDIR/.hugepages): "--in-memory" with hugepages, otherwise
# "--no-huge -m 512 --no-shconf" (--no-huge cannot go with --in-memory).
eal_memory_args() {
	if [[ "$(cat "$1/.hugepages" 2>/dev/null)" == yes ]]; then
		echo "--in-memory"
	else
		echo "--no-huge -m 512 --no-shconf"
	fi
}

# fabtests_version: the fabtests release that goes with the libfabric
# pkg-config finds (a program of one generation does not run against the
# other's library); nothing and status 1 without libfabric-dev or for a
# libfabric we have no release for.
fabtests_version() {
	local libfabric
	libfabric=$(pkg-config --modversion libfabric 2>/dev/null) || return 1
	case "$libfabric" in
	1.*) echo 1.17.0 ;;
	2.*) echo 2.1.0 ;;
	*) return 1 ;;
	esac
}

# debian_mirror: the first http(s) URI of a Debian (not security) archive in
# the apt sources, in either format.
debian_mirror() {
	local uri
	uri=$(cat /etc/apt/sources.list /etc/apt/sources.list.d/*.list \
		/etc/apt/sources.list.d/*.sources 2>/dev/null |
		grep -oE 'https?://[^ ]+/debian/?( |$)' | grep -v security | head -n 1 || true)
	uri=${uri%% }
	echo "${uri:-http://deb.debian.org/debian}"
}

# run_in_background COMMAND...: runs COMMAND at idle priority (SCHED_IDLE,
# nice 19, ionice idle) in a process group of its own, and returns its exit
# status; meant to be started with `&`. Tests keep the cores whenever they
# want them, but a guest on QEMU's software CPUs runs several times slower
# beside a build even so (the caches and memory it shares), and the tests
# that boot one time out: so while any QEMU system emulator runs, the whole
# group is stopped (SIGSTOP), and continued when none does. A signal to
# this function ends the group.
run_in_background() {
	local priority=(nice -n 19) group status=0 stopped=0
	if command -v chrt >/dev/null && command -v ionice >/dev/null; then
		priority=(chrt --idle 0 nice -n 19 ionice -c 3)
	fi
	setsid "${priority[@]}" "$@" </dev/null &
	group=$!
	# shellcheck disable=SC2064  # the group is known now
	trap "kill -CONT -- -$group 2>/dev/null; kill -TERM -- -$group 2>/dev/null; exit 143" TERM INT
	while kill -0 "$group" 2>/dev/null; do
		# (pgrep matches the first 15 characters of a program's name.)
		if pgrep '^qemu-system-' >/dev/null; then
			((stopped)) || kill -STOP -- "-$group" 2>/dev/null || true
			stopped=1
		elif ((stopped)); then
			kill -CONT -- "-$group" 2>/dev/null || true
			stopped=0
		fi
		sleep 1
	done
	wait "$group" || status=$?
	return "$status"
}
