#!/bin/bash
# Usage: devtools/dpdk-fi-loss-sweep.sh [--builddir DIR] [--rates "0 0.01 0.05"]
#                                       [--count N] [--help]
#
# Runs dpdk-fi-bench between two processes over net_memif at each receive
# drop rate of the fault injector (FI_DPDK_FAULT_DROP, applied on both
# sides) and prints one line per rate: pingpong latency percentiles, then
# goodput and retransmissions of a bandwidth stream. All rates run in one
# go, so their ratios are comparable on a noisy machine; the absolute
# figures are not. Needs a build (usertools/dpdk-fi-setup.sh).
#
# Options:
#   --builddir DIR  build directory (default: build)
#   --rates LIST    drop rates, space-separated (default: "0 0.01 0.05")
#   --count N       messages per bandwidth run (default: 20000)
#   --size B        bandwidth message size (default: 8192)
set -euo pipefail

# shellcheck source-path=SCRIPTDIR source=../usertools/dpdk_fi_common.sh
source "$(dirname "${BASH_SOURCE[0]}")/../usertools/dpdk_fi_common.sh"

builddir=build
rates="0 0.01 0.05"
count=20000
size=8192
while (($#)); do
	case "$1" in
	--builddir) builddir=$2; shift ;;
	--rates) rates=$2; shift ;;
	--count) count=$2; shift ;;
	--size) size=$2; shift ;;
	-h | --help) usage; exit 0 ;;
	*) die 1 "unknown option '$1' (see --help)" ;;
	esac
	shift
done
builddir=$(abs_builddir "$builddir")
bench="$builddir/app/bench/dpdk-fi-bench"
[ -x "$bench" ] || die 1 "no $bench: run usertools/dpdk-fi-setup.sh first"

work=$(mktemp -d /tmp/ofi-dpdk-sweep.XXXXXX)
trap 'kill -9 $(jobs -p) 2>/dev/null || true; rm -rf "$work"' EXIT
eal="--no-huge -m 512 --no-shconf --no-pci --no-telemetry --log-level=lib.eal:error"

# run_pair RATE BENCH_ARGS...: prints the client's JSON line.
run_pair() {
	local rate=$1
	shift
	rm -rf "$work/rv" "$work/memif.sock"
	mkdir -p "$work/rv"
	local memif="socket=$work/memif.sock,socket-abstract=no"
	FI_PROVIDER_PATH="$builddir/drivers/ofi" FI_DPDK_FAULT_DROP=$rate \
		timeout 120 "$bench" -l 0 $eal --vdev="net_memif0,role=server,$memif" -- \
		--role server --rendezvous "$work/rv" "$@" >"$work/server.json" 2>"$work/server.err" &
	local server=$!
	sleep 0.5
	FI_PROVIDER_PATH="$builddir/drivers/ofi" FI_DPDK_FAULT_DROP=$rate \
		timeout 120 "$bench" -l 1 $eal --vdev="net_memif0,role=client,$memif" -- \
		--role client --rendezvous "$work/rv" "$@" >"$work/client.json" 2>"$work/client.err" ||
		{ tail -5 "$work/client.err" >&2; }
	wait "$server" || true
	tail -1 "$work/client.json"
}

field() { # JSON KEY...: a value, following nested keys
	python3 -c 'import json,sys
v = json.loads(sys.argv[1])
for k in sys.argv[2:]: v = v.get(k, "-") if isinstance(v, dict) else "-"
print(v)' "$@"
}

printf '%-6s %9s %9s %9s %12s %12s %8s\n' drop p50_us p99_us p999_us goodput_MBps retransmit ok
for rate in $rates; do
	lat=$(run_pair "$rate" --pattern latency --size 64 --count 5000 --timeout 60)
	bw=$(run_pair "$rate" --pattern bandwidth --size "$size" --count "$count" --window 64 --timeout 60)
	[ -n "$lat" ] && [ -n "$bw" ] || die 1 "a run at drop rate $rate printed nothing"
	printf '%-6s %9s %9s %9s %12s %12s %8s\n' "$rate" \
		"$(field "$lat" latency_us p50)" "$(field "$lat" latency_us p99)" \
		"$(field "$lat" latency_us p999)" "$(field "$bw" goodput_MBps)" \
		"$(field "$bw" retransmitted)" "$(field "$bw" ok)"
done
