#!/bin/bash
# Usage: test_keyed.sh BENCH ADVERSARY
#
# RESET challenges, and keyed frames (FI_DPDK_AUTH_KEY), against a station
# on the path: a live
# fetch-add pair over net_af_packet on a veth pair, and the adversary on
# the peer's end, which reads the pair's tokens and sequences off the wire
# and forges RESETs, a request and HELLOs with them (adversary_forgeries.cc,
# on_path_forgeries).  First without a key: RESETs with the right token
# that name sequences far from the connection's are challenged, never
# taken (out_of_window_resets); then, as a control, the forgeries near the
# sequence seen must tear the pair down (tokens protect against stations that do not see
# the traffic, not against one that does).  Then with the same job key in
# both processes: the target answers none of them and the pair runs on.
# Skips (exit 77) where veth pairs cannot be made.
set -euo pipefail
BENCH=$1
ADVERSARY=$2
source "$(dirname "$0")/../multiproc/pair.sh"

T=ofk$$t
P=ofk$$p
quiet_veth_pair_or_skip "$T" "$P"

# run_pair KEY CASES: the pair with FI_DPDK_AUTH_KEY=KEY (empty: none) and
# the adversary's cases against it; sets ADVERSARY_RC, CLIENT_ALIVE (1 when the
# bench client still ran after the case) and SEEN (the adversary's output).
run_pair() {
	local key=$1 cases=$2 dir=$WORK/rendezvous-${1:-none}
	mkdir -p "$dir"
	local args=(--pattern atomic --window 16 --count 100000000 --timeout 100 --size 4096
		--rendezvous "$dir")
	# shellcheck disable=SC2086
	start_limited 120 "$WORK/server.json" "$WORK/server.err" env FI_DPDK_AUTH_KEY="$key" \
		"$BENCH" -l 0 $EAL_COMMON "--vdev=net_af_packet0,iface=$T" -- --role server "${args[@]}"
	SERVER_PID=$STARTED_PID
	local waited=0
	while [ ! -e "$dir/server" ] && [ "$waited" -lt 300 ] && kill -0 "$SERVER_PID" 2>/dev/null; do
		sleep 0.1
		waited=$((waited + 1))
	done
	# shellcheck disable=SC2086
	start_limited 120 "$WORK/client.json" "$WORK/client.err" env FI_DPDK_AUTH_KEY="$key" \
		"$BENCH" -l 1 $EAL_COMMON "--vdev=net_af_packet0,iface=$P" -- --role client "${args[@]}"
	CLIENT_PID=$STARTED_PID
	for _ in $(seq 100); do
		[ -s "$dir/client" ] && break
		sleep 0.1
	done
	sleep 1  # the pair's handshake and first fetch-adds
	set +e
	SEEN=$("$ADVERSARY" --iface "$P" --rendezvous "$dir" --target-pid "$SERVER_PID" \
		--cases "$cases" --seed "$$" --rss-limit-kb $((1 << 20)) 2>&1)
	ADVERSARY_RC=$?
	set -e
	echo "$SEEN"
	sleep 1
	CLIENT_ALIVE=0
	kill -0 "$CLIENT_PID" 2>/dev/null && CLIENT_ALIVE=1
	kill -9 "$SERVER_PID" "$CLIENT_PID" 2>/dev/null || true
	wait "$SERVER_PID" "$CLIENT_PID" 2>/dev/null || true
	SERVER_PID="" CLIENT_PID=""
}

echo "== without a job key (the control)"
run_pair "" out_of_window_resets,on_path_forgeries
grep -q '^ok   out_of_window_resets' <<<"$SEEN" ||
	fail "a RESET naming a sequence the target could not have sent was taken (no challenge)"
grep -q 'took a forged RESET\|process is gone\|stopped' <<<"$SEEN" ||
	fail "without a key the forged RESETs were not taken: the case does not reach the target"

echo "== with the same job key in both processes"
run_pair 00112233445566778899aabbccddeeff0f1e2d3c4b5a69788796a5b4c3d2e1f0 on_path_forgeries
[ "$ADVERSARY_RC" = 0 ] || fail "with a job key, the target took or answered a forgery (adversary exited $ADVERSARY_RC)"
[ "$CLIENT_ALIVE" = 1 ] || fail "with a job key, the pair did not survive the forgeries"
echo "with a job key, no forgery was taken or answered and the pair ran on"
