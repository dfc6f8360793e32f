#!/bin/bash
# Usage: test_adversarial.sh BENCH ADVERSARY
#
# A live pair (dpdk-fi-bench fetch-adds, server = the target, client =
# its peer) over net_af_packet on the two ends of a veth pair, and the
# adversary on the peer's end forging frames at the target, case by case
# (adversary.cc).  Passes when every case passed and both bench processes
# are still running at the end (an error completion would have ended
# them).  Skips (exit 77) where veth pairs cannot be made.
#
# For diagnosis: ADVERSARY_CASES=a,b runs only those cases;
# ADVERSARY_PMAP=FILE keeps the target's pmap before and after
# (FILE.before, FILE.after); ADVERSARY_PERF=FILE records the target's
# malloc calls with perf (needs `perf probe -x libc.so.6 malloc size=%di:u64`).
set -euo pipefail
BENCH=$1
ADVERSARY=$2
source "$(dirname "$0")/../multiproc/pair.sh"

T=ofv$$t
P=ofv$$p
quiet_veth_pair_or_skip "$T" "$P"

# Small limits, so the cases reach them quickly: the target holds 128
# connections, 8 MiB of unexpected messages, 4 MiB of answers (1 MiB a
# peer), and gives a silent sender 3 s.
export FI_DPDK_MAX_PEERS=128
export FI_DPDK_UNEXPECTED_BYTES=$((8 << 20))
export FI_DPDK_RESPONSE_BYTES=$((4 << 20))
export FI_DPDK_PEER_TIMEOUT_MS=3000
REGION_BYTES=$((1 << 20))
mkdir -p "$WORK/rendezvous"
# The pair: fetch-adds at the target (its request path) on the counter at
# the start of its 1 MiB region, which the adversary reads; the target
# posts one untagged receive (the pair's closing message); the adversary's
# messages are tagged and wait unmatched.  More than the run can finish:
# the pair is stopped at the end.
PAIR_ARGS=(--pattern atomic --window 16 --count 100000000 --timeout 200 --size "$REGION_BYTES"
	--rendezvous "$WORK/rendezvous")
# shellcheck disable=SC2086
start_limited 240 "$WORK/server.json" "$WORK/server.err" "$BENCH" -l 0 $EAL_COMMON \
	"--vdev=net_af_packet0,iface=$T" -- --role server "${PAIR_ARGS[@]}"
SERVER_PID=$STARTED_PID
wait_for_server
# shellcheck disable=SC2086
start_limited 240 "$WORK/client.json" "$WORK/client.err" "$BENCH" -l 1 $EAL_COMMON \
	"--vdev=net_af_packet0,iface=$P" -- --role client "${PAIR_ARGS[@]}"
CLIENT_PID=$STARTED_PID
for _ in $(seq 100); do
	[ -s "$WORK/rendezvous/client" ] && break
	sleep 0.1
done
sleep 1  # the pair's handshake and first messages

# Under a sanitizer the process's memory says nothing about ours
# (AddressSanitizer keeps freed blocks in quarantine, TSan shadows every
# byte): the cases still run and check the target's behaviour and the
# pair's progress, with the memory bound lifted.
RSS_LIMIT_KB=8192
if [ -n "${ASAN_OPTIONS:-}${TSAN_OPTIONS:-}" ]; then
	RSS_LIMIT_KB=$((4 << 20))
	echo "note: under a sanitizer: the target's memory is not bounded by this test"
fi

set +e
[ -n "${ADVERSARY_PMAP:-}" ] && pmap -x "$SERVER_PID" >"$ADVERSARY_PMAP.before"
if [ -n "${ADVERSARY_PERF:-}" ]; then
	perf record -e probe_libc:malloc -g -p "$SERVER_PID" -o "$ADVERSARY_PERF" >/dev/null 2>&1 &
	PERF_PID=$!
	sleep 1
fi
"$ADVERSARY" --iface "$P" --rendezvous "$WORK/rendezvous" --target-pid "$SERVER_PID" \
	--max-peers "$FI_DPDK_MAX_PEERS" --unexpected-bytes "$FI_DPDK_UNEXPECTED_BYTES" \
	--peer-timeout-ms "$FI_DPDK_PEER_TIMEOUT_MS" --response-bytes "$FI_DPDK_RESPONSE_BYTES" \
	--region-bytes "$REGION_BYTES" --seed "$$" --rss-limit-kb "$RSS_LIMIT_KB" \
	${ADVERSARY_CASES:+--cases "$ADVERSARY_CASES"}
RC=$?
[ -n "${ADVERSARY_PMAP:-}" ] && pmap -x "$SERVER_PID" >"$ADVERSARY_PMAP.after"
[ -n "${ADVERSARY_PERF:-}" ] && { kill -INT "$PERF_PID"; wait "$PERF_PID"; }
set -e
kill -0 "$SERVER_PID" 2>/dev/null || fail "the target (bench server) ended during the attack"
kill -0 "$CLIENT_PID" 2>/dev/null || fail "the peer (bench client) ended during the attack"
[ "$RC" = 0 ] || fail "adversary exited $RC"
echo "every case passed; the live pair ran throughout"
