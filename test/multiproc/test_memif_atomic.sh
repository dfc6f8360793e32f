#!/bin/bash
# Usage: test_memif_atomic.sh ATOMIC_PEER
#
# fi_atomic(3) exhaustively between two processes over net_memif: the server
# atomic_peer registers a region and serves; the client atomic_peer runs
# every supported (class, op, datatype) on arrays of edge values and compares
# the target and the fetched values with a scalar reference, and checks that
# every unsupported one is refused as the valid calls say (atomic_peer.cc).
# A second run drops 3 %, reorders 3 % and duplicates 1 % of the frames each
# side receives: a retransmitted SUM or PROD applied twice, or a fetch
# answered twice, would break the comparison.
set -euo pipefail
BENCH=$1  # pair.sh starts $BENCH as server and client
source "$(dirname "$0")/pair.sh"

PAIR_LIMIT=90
run_and_check() {  # run_and_check LABEL
	pair_run "$(memif_args server)" "$(memif_args client)" -- --timeout 30
	[ "$CLIENT_RC" = 0 ] || fail "$1: client exited $CLIENT_RC"
	[ "$SERVER_RC" = 0 ] || fail "$1: server exited $SERVER_RC"
	[ "$(json_field "$CLIENT_OUT" ok)" = True ] || fail "$1: the client found a mismatch"
	# 1.17 headers, 19 ops x 16 datatypes: 152 base + 168 fetch + 94 compare
	# cells; 2.x headers, 20 x 20 (FI_DIFF, FI_FLOAT16, FI_BFLOAT16,
	# FI_FLOAT8_*): 204 + 224 + 118 (doc/atomics.md).  Every cell of the
	# 3 classes is tried, supported or refused.
	supported=$(json_field "$CLIENT_OUT" supported_checked)
	refused=$(json_field "$CLIENT_OUT" unsupported_refused)
	cells=$((3 * $(json_field "$CLIENT_OUT" ops) * $(json_field "$CLIENT_OUT" datatypes)))
	[ "$supported" -ge 414 ] || fail "$1: only $supported supported cells checked"
	[ $((supported + refused)) -eq "$cells" ] || fail "$1: $((supported + refused)) of $cells cells tried"
	echo "$1: $supported supported cells match the reference, $refused refused"
	echo "client: $(cat "$CLIENT_OUT")"
	echo "server: $(cat "$SERVER_OUT")"
}

run_and_check "memif"
export FI_DPDK_FAULT_DROP=0.03 FI_DPDK_FAULT_REORDER=0.03 FI_DPDK_FAULT_DUPLICATE=0.01
run_and_check "memif with 3% drop, 3% reorder, 1% duplicate"
[ "$(json_field "$CLIENT_OUT" fault_dropped)" -gt 0 ] || fail "the client's injector dropped nothing"
[ "$(json_field "$CLIENT_OUT" fault_duplicated)" -gt 0 ] || fail "the client's injector duplicated nothing"
