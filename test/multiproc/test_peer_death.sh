#!/bin/bash
# Usage: test_peer_death.sh BENCH
#
# A peer killed mid-stream: the survivor's outstanding sends must end in
# error completions (FI_ETIMEDOUT) within the configured peer timeout, and
# the survivor must exit by itself, without crashing (net_memif unmaps its
# rings when the peer vanishes, under a poller that may be inside it; the
# provider holds that unmap back until its bursts are out:
# drivers/net/unmap_guard.h).
set -euo pipefail
BENCH=$1
source "$(dirname "$0")/pair.sh"

# 2 s, not less: a loaded machine (CI, sanitizer builds) must not time the
# live peer out before the test kills it.
export FI_DPDK_PEER_TIMEOUT_MS=2000
mkdir -p "$WORK/rendezvous"
ARGS=(--pattern bandwidth --size 4096 --count 100000000 --timeout 30)
# shellcheck disable=SC2086
start_limited 60 "$WORK/server.json" "$WORK/server.err" "$BENCH" -l 0 $EAL_COMMON \
	"$(memif_args server)" -- --role server --rendezvous "$WORK/rendezvous" "${ARGS[@]}"
SERVER_PID=$STARTED_PID
wait_for_server
# shellcheck disable=SC2086
start_limited 60 "$WORK/client.json" "$WORK/client.err" "$BENCH" -l 1 $EAL_COMMON \
	"$(memif_args client)" -- --role client --rendezvous "$WORK/rendezvous" "${ARGS[@]}"
CLIENT_PID=$STARTED_PID
# Let the stream run, then kill the receiver without warning.
for _ in $(seq 100); do
	[ -s "$WORK/rendezvous/client" ] && break
	sleep 0.1
done
sleep 1
kill -0 "$SERVER_PID" 2>/dev/null || fail "the server was gone before the test killed it"
kill -0 "$CLIENT_PID" 2>/dev/null || fail "the client was gone before the server was killed"
kill -9 "$SERVER_PID"
wait "$SERVER_PID" 2>/dev/null || true
SERVER_PID=""
killed_at=$(date +%s.%N)
set +e
wait "$CLIENT_PID"; rc=$?
set -e
CLIENT_PID=""
took=$(python3 -c "import sys; print(round($(date +%s.%N) - $killed_at, 2))")
echo "survivor exited $rc, $took s after the peer died"
[ "$rc" = 1 ] || fail "survivor exited $rc (want 1: error completions; 137 is the watchdog: a hang; others a crash)"
grep -q "error completion: .*timed out" "$WORK/client.err" || fail "no FI_ETIMEDOUT error completion reported"
python3 -c "import sys; sys.exit(0 if $took < 10 else 1)" || fail "took $took s (timeout 2 s)"
echo "peer death: error completions after $took s, no hang, no crash"
