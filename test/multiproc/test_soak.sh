#!/bin/bash
# Usage: test_soak.sh BENCH
#
# The soak (usertools/dpdk-fi-test.sh --soak; skipped, exit 77, unless
# OFI_DPDK_SOAK=1): two processes over net_memif with the fault injector
# dropping 20 %, reordering 10 % and duplicating 5 % of the frames each
# side receives.
#   1. 1 000 000 messages of mixed sizes (1 B to 64 KiB, mostly small):
#      each arrives once, in order, byte-exact (the mixed pattern checks
#      every one), and the server counts exactly 1 000 000.
#   2. 100 000 fetch-adds of 1, 32 in flight, on one counter: the fetched
#      values are exactly 0 .. 99 999, each once (a fetch-add run twice
#      skips a value; an answer taken twice repeats one).
# OFI_DPDK_SOAK_SCALE=F scales both counts (0.01 for a quick look).
set -euo pipefail
BENCH=$1
if [ "${OFI_DPDK_SOAK:-0}" != 1 ]; then
	echo "SKIP: the soak runs with OFI_DPDK_SOAK=1 (usertools/dpdk-fi-test.sh --soak)"
	exit 77
fi
source "$(dirname "$0")/pair.sh"

scaled() { python3 -c "import sys; print(max(1, int(int(sys.argv[1]) * float(sys.argv[2]))))" "$1" "${OFI_DPDK_SOAK_SCALE:-1}"; }
MESSAGES=$(scaled 1000000)
FETCH_ADDS=$(scaled 100000)
export FI_DPDK_FAULT_DROP=0.2 FI_DPDK_FAULT_REORDER=0.1 FI_DPDK_FAULT_DUPLICATE=0.05
export FI_DPDK_PEER_TIMEOUT_MS=30000

PAIR_LIMIT=$(( MESSAGES / 100 + 300 ))
started=$SECONDS
pair_run "$(memif_args server)" "$(memif_args client)" -- --pattern mixed --count "$MESSAGES" \
	--max-size 65536 --window 32 --timeout 120
[ "$CLIENT_RC" = 0 ] || fail "messages: client exited $CLIENT_RC"
[ "$SERVER_RC" = 0 ] || fail "messages: server exited $SERVER_RC"
[ "$(json_field "$SERVER_OUT" messages)" = "$MESSAGES" ] || fail "server did not receive $MESSAGES messages"
[ "$(json_field "$SERVER_OUT" ok)" = True ] || fail "server found a lost, duplicated or bad message"
[ "$(json_field "$SERVER_OUT" fault_dropped)" -gt 0 ] || fail "the server's injector dropped nothing"
[ "$(json_field "$SERVER_OUT" fault_duplicated)" -gt 0 ] || fail "the server's injector duplicated nothing"
echo "20% drop, 10% reorder, 5% duplicate: $MESSAGES messages once, in order, byte-exact in $((SECONDS - started)) s"
echo "client: $(cat "$CLIENT_OUT")"
echo "server: $(cat "$SERVER_OUT")"

PAIR_LIMIT=$(( FETCH_ADDS / 50 + 300 ))
started=$SECONDS
pair_run "$(memif_args server)" "$(memif_args client)" -- --pattern atomic --count "$FETCH_ADDS" \
	--window 32 --timeout 120
[ "$CLIENT_RC" = 0 ] || fail "fetch-adds: client exited $CLIENT_RC (a value missing or repeated?)"
[ "$SERVER_RC" = 0 ] || fail "fetch-adds: server exited $SERVER_RC"
[ "$(json_field "$CLIENT_OUT" ok)" = True ] || fail "fetch-adds: the fetched values are not 0 .. $((FETCH_ADDS - 1)) once each"
[ "$(json_field "$CLIENT_OUT" messages)" = "$FETCH_ADDS" ] || fail "fetch-adds: not $FETCH_ADDS completed"
echo "20% drop, 10% reorder, 5% duplicate: $FETCH_ADDS fetch-adds, each value fetched once, in $((SECONDS - started)) s"
echo "client: $(cat "$CLIENT_OUT")"
