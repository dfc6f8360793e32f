#!/bin/bash
# Usage: usertools/dpdk-fi-demo.sh [--builddir DIR] [--no-hugepages] [--help]
#
# Shows ofi-dpdk moving data with nothing but this machine: runs
# dpdk-fi-setup.sh, then the loopback tester (app/loopback) in one process
# over a net_ring port that loops back to itself, twice:
#   1. pingpong: 1000 round trips of 64 bytes between two endpoints, each
#      message checked (latency path);
#   2. stream: 1024-byte messages one way for 2 seconds (throughput path).
# Each run prints its per-endpoint counters. DPDK uses hugepages when
# dpdk-fi-setup.sh found them usable, else --no-huge.
#
# Options:
#   --builddir DIR  build directory (default: build)
#   --no-hugepages  passed to dpdk-fi-setup.sh: DPDK runs with --no-huge
#
# Exit status: the tester's (0 when both runs passed; the first failing run's
# status otherwise; 124 when a run hung and was stopped after 120 s).
set -euo pipefail

# shellcheck source-path=SCRIPTDIR source=dpdk_fi_common.sh
source "$(dirname "${BASH_SOURCE[0]}")/dpdk_fi_common.sh"

builddir=build
setup_args=()
while (($#)); do
	case "$1" in
	--builddir)
		(($# >= 2)) || die 1 "--builddir needs a directory"
		builddir=$2
		setup_args+=(--builddir "$2")
		shift
		;;
	--no-hugepages) setup_args+=(--no-hugepages) ;;
	-h | --help) usage; exit 0 ;;
	*) die 1 "unknown option '$1' (see --help)" ;;
	esac
	shift
done
builddir=$(abs_builddir "$builddir")

bash "$DPDK_FI_ROOT/usertools/dpdk-fi-setup.sh" "${setup_args[@]}"

tester="$builddir/app/loopback/dpdk-fi-loopback"
[[ -x "$tester" ]] || die 1 "$tester was not built"
# One lcore, no PCI scan, no telemetry socket, and one net_ring port.
read -r -a memory <<<"$(eal_memory_args "$builddir")"
eal=(-l 0 --no-pci --no-telemetry "${memory[@]}" --vdev=net_ring0)

# run WHY ARGS...: says what it runs and why, runs the tester, returns its status.
run() {
	local why=$1
	shift
	echo
	echo "== $why"
	echo "   $tester ${eal[*]} -- $*"
	timeout --kill-after=5 120 "$tester" "${eal[@]}" -- "$@"
}

status=0
run "pingpong: 1000 round trips of 64 bytes, checking every message (latency path)" \
	--pattern pingpong --count 1000 --size 64 || status=$?
stream_status=0
run "stream: 1024-byte messages one way for 2 s (throughput path)" \
	--pattern stream --seconds 2 --size 1024 || stream_status=$?
((status)) || status=$stream_status
echo
if ((status)); then
	echo "demo failed: the tester exited with status $status"
else
	echo "demo passed: both runs delivered every message intact"
fi
exit "$status"
