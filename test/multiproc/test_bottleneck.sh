#!/bin/bash
# Usage: test_bottleneck.sh
#
# The bottleneck bench (usertools/dpdk-fi-bottleneck.py) on a short run:
# two of our connections from host a to host b through a router whose link
# toward b is a 100 Mbit/s token bucket.  Asserts:
#   1. the run passes (dpdk-fi-bench checked every message: once, in
#      order, byte-exact) and its report holds what the bench promises:
#      both senders' goodput above 0 and their sum at most the link's
#      12.5 MB/s (frames carry headers too: no goodput reaches the rate,
#      so a sum above it means the shaper or the arithmetic is wrong) and
#      at least 0.3 of it (quiet, 0.9: the headers' share is the rest; the
#      bound leaves a busy machine's scheduler room),
#      Jain's index in (0, 1], a time series per sender, and an SVG with a
#      line per sender;
#   2. with 5 % random loss at the router (nftables; the part is skipped
#      with its reason without nft): the run still passes, the router's
#      rule took packets and the transport resent frames;
#   3. with FI_DPDK_DELAY_TARGET_US=100 (queueing delay read, doc/wire-
#      protocol.md): the run passes, and the senders' endpoints cut their
#      windows for queueing delay (their close lines, FI_LOG_LEVEL=info:
#      the token bucket's queue holds milliseconds);
#   4. through the phantom queue that marks ECN (--queue phantom-ecn: a
#      tc program built with clang; skipped without clang or nft): the
#      run passes, packets arrived marked, more of them than the token
#      bucket dropped (its drops are slow start's first overshoot), the
#      receiver's endpoint took marked segments and echoed them, and the
#      senders cut their windows for congestion marks.
# Part 1 also asserts the transport's unloaded round trip is reported
# (one message in flight, before the rows); the others skip it.
# Figures are not judged: this is a busy machine.  Skips (77) without
# root, iproute2 (tc), ping, network namespaces or the kernel's token
# bucket queue.
set -euo pipefail
if [ "$(id -u)" != 0 ] || ! command -v tc >/dev/null || ! command -v ping >/dev/null; then
	echo "SKIP: needs root, iproute2 (tc) and ping"
	exit 77
fi
: "${FI_PROVIDER_PATH:?set FI_PROVIDER_PATH to the drivers/ofi folder of the build}"
: "${OFI_DPDK_SOURCE_ROOT:?set OFI_DPDK_SOURCE_ROOT to the source tree}"
builddir=$(cd "$FI_PROVIDER_PATH/../.." && pwd)
bench_tool=$OFI_DPDK_SOURCE_ROOT/usertools/dpdk-fi-bottleneck.py
unset FI_PROVIDER FI_DPDK_EAL_ARGS FI_PROVIDER_PATH FI_DPDK_PORT_ADDR
name=ofibt$$
name=${name:0:9}
if ! { ip netns add "$name-probe" && ip netns exec "$name-probe" true; } >/dev/null 2>&1; then
	ip netns del "$name-probe" >/dev/null 2>&1 || true
	echo "SKIP: network namespaces cannot be made here"
	exit 77
fi
# The kernel's pieces the bench takes: a token bucket queue (sch_tbf) and,
# for part 2, nftables.
ip -n "$name-probe" link add "$name-p0" type veth peer name "$name-p1" >/dev/null 2>&1 || true
if ! ip netns exec "$name-probe" tc qdisc replace dev "$name-p0" root tbf rate 1mbit \
	burst 32kb limit 64kb >/dev/null 2>&1; then
	ip netns del "$name-probe"
	echo "SKIP: this kernel has no token bucket queue (sch_tbf) for tc"
	exit 77
fi
nft_works=0
if command -v nft >/dev/null && ip netns exec "$name-probe" nft add table inet probe >/dev/null 2>&1; then
	nft_works=1
fi
ip netns del "$name-probe"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
failures=0

# check LABEL PYTHON-EXPRESSION: the expression over `report` (the JSON)
# and `row` (its only row) must hold.
check() {
	if python3 - "$work/$run/bottleneck.json" "$2" <<'PY'; then
import json, sys
report = json.load(open(sys.argv[1]))
row = report["rows"][0]
sys.exit(0 if eval(sys.argv[2]) else 1)
PY
		echo "ok    $run: $1"
	else
		echo "FAIL  $run: $1 ($2)"
		python3 -c 'import json,sys; r=json.load(open(sys.argv[1]))["rows"][0]; r.pop("series_MBps", None); print("      row:", r)' \
			"$work/$run/bottleneck.json" || true
		failures=$((failures + 1))
	fi
}

# bottleneck RUN ARGS...: the bench into $work/RUN; a failure unless it
# exits 0.
bottleneck() {
	run=$1
	shift
	if timeout -k 5 240 python3 "$bench_tool" --builddir "$builddir" --name "$name" \
		--senders 2 --tcp '' --seconds 2 --rate 100mbit --out "$work/$run" "$@" \
		>"$work/$run.log" 2>&1; then
		echo "ok    $run: the bench passed"
		sed 's/^/      /' "$work/$run.log"
		return 0
	fi
	echo "FAIL  $run: the bench exited $?"
	sed 's/^/      /' "$work/$run.log"
	find "$work/$run" -type f 2>/dev/null | sed "s/^/      left: /"
	failures=$((failures + 1))
	return 1
}

if bottleneck shaped; then
	check "both senders moved data" 'len(row["senders_MBps"]) == 2 and min(row["senders_MBps"]) > 0'
	check "goodput at most the link's 12.5 MB/s" \
		'report["rate_MBps"] == 12.5 and 0 < row["goodput_MBps"] <= 12.5'
	check "goodput near the link's rate (at least 0.3 of it)" 'row["link_share"] >= 0.3'
	check "Jain's index in (0, 1]" '0 < row["jain"] <= 1.0000001'
	check "the transport's unloaded round trip reported" \
		'0 < report["unloaded_rtt_ms"]["ours"]["p50"] <= report["unloaded_rtt_ms"]["ours"]["p99"]'
	check "a time series per sender" \
		'len(row["series_MBps"]) == 2 and all(len(s) >= 1 for s in row["series_MBps"])'
	if [ "$(grep -c '<polyline' "$work/shaped/bottleneck.svg")" -eq 2 ]; then
		echo "ok    shaped: the SVG draws a line per sender"
	else
		echo "FAIL  shaped: the SVG has not 2 lines"
		failures=$((failures + 1))
	fi
fi

if ! command -v nft >/dev/null; then
	echo "SKIP part 2: no nft (apt-get install nftables) for the random loss"
elif ((nft_works == 0)); then
	echo "SKIP part 2: nft cannot make a table here (a kernel without nf_tables)"
elif bottleneck lossy --loss 5 --no-unloaded; then
	check "the router's rule dropped packets" 'row["link_losses"] > 0'
	check "the transport resent frames" 'row["retransmitted_share"] > 0'
fi

if FI_DPDK_DELAY_TARGET_US=100 FI_LOG_LEVEL=info bottleneck delayed --no-unloaded; then
	check "both senders moved data" 'len(row["senders_MBps"]) == 2 and min(row["senders_MBps"]) > 0'
	if grep -Eq 'for queueing delay [1-9]' "$work/delayed/client-2.log"; then
		echo "ok    delayed: the senders cut their windows for queueing delay"
		grep -Eo 'for queueing delay [0-9]+ \(slowdowns [0-9]+; delay ignored [0-9]+ times' \
			"$work/delayed/client-2.log" | sed 's/^/      /'
	else
		echo "FAIL  delayed: no window cut for queueing delay in the client's close lines"
		grep -E 'window cuts' "$work/delayed/client-2.log" | sed 's/^/      /' || true
		failures=$((failures + 1))
	fi
fi

if ! command -v nft >/dev/null || ((nft_works == 0)) || ! command -v clang >/dev/null; then
	echo "SKIP part 4: the phantom queue needs nft (as part 2) and clang"
elif FI_LOG_LEVEL=info bottleneck marked --queue phantom-ecn --no-unloaded; then
	check "the phantom queue marked packets" 'row["queue_marks"] > 0'
	check "the queue marked more than the token bucket dropped" \
		'row["queue_drops"] < row["queue_marks"]'
	if grep -Eq 'segments received marked [1-9][0-9]*, acks that echoed them [1-9]' \
		"$work/marked/server-2.log"; then
		echo "ok    marked: the receiver took marked segments and echoed them"
	else
		echo "FAIL  marked: no marked segment echoed in the server's close lines"
		grep -E 'congestion marks' "$work/marked/server-2.log" | sed 's/^/      /' || true
		failures=$((failures + 1))
	fi
	if grep -Eq 'for congestion marks [1-9]' "$work/marked/client-2.log"; then
		echo "ok    marked: the senders cut their windows for congestion marks"
	else
		echo "FAIL  marked: no window cut for congestion marks in the client's close lines"
		grep -E 'window cuts' "$work/marked/client-2.log" | sed 's/^/      /' || true
		failures=$((failures + 1))
	fi
fi

if ((failures != 0)); then
	echo "$failures check(s) failed"
	exit 1
fi
echo "all checks passed"
