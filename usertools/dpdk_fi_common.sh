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

# python_direct BUILDDIR: when the python3 first in PATH is not the
# interpreter but a launcher script that finds one on each call (pyenv's
# shims: several shells and a dozen programs, a third of a second of CPU a
# call), put BUILDDIR/.python, holding python3 linked to the interpreter that
# script picks, first in PATH. The tests start python over a thousand times;
# through the shim an 8-rank MPI test took twice as long. The same python
# runs either way.
python_direct() {
	local interpreter
	interpreter=$(python3 -c 'import sys; print(sys.executable)' 2>/dev/null) || return 0
	[[ -n "$interpreter" && ! "$(command -v python3)" -ef "$interpreter" ]] || return 0
	mkdir -p "$1/.python" && ln -sfn "$interpreter" "$1/.python/python3" || return 0
	export PATH="$1/.python:$PATH"
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
