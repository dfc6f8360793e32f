#!/bin/bash
# Usage: test_memif_reliable.sh BENCH
#
# Two processes over net_memif, the fault injector dropping 5 %, reordering
# 5 % and duplicating 1 % of the frames each side receives: a stream of
# messages of mixed sizes (1 B to 1 MiB) must arrive each exactly once, in
# order, byte-exact (dpdk-fi-bench's mixed pattern checks every message).
# OFI_DPDK_SOAK=1 runs the full 100 000 messages; the default is 10 000.
# The ports have 9 KiB memif buffers (9000-byte frames); then 2000 more
# messages go with memif's default 2 KiB buffers, which cap frames below
# them.  Last, the memif client's process starts 2 s before the server's
# (ranks of a job start in any order): its port waits for the server, and
# 500 messages go through.
set -euo pipefail
BENCH=$1
source "$(dirname "$0")/pair.sh"

COUNT=10000
[ "${OFI_DPDK_SOAK:-0}" = 1 ] && COUNT=100000
export FI_DPDK_FAULT_DROP=0.05 FI_DPDK_FAULT_REORDER=0.05 FI_DPDK_FAULT_DUPLICATE=0.01
export FI_DPDK_PEER_TIMEOUT_MS=20000
PAIR_LIMIT=$(( COUNT / 20 + 120 ))
# The client's endpoint counts at close the frames whose payload memif
# copied from where it lay (drivers/net/lent_payload.h).
export FI_LOG_LEVEL=info FI_LOG_PROV=dpdk FI_LOG_SUBSYS=ep_data
pair_run "$(memif_args server)" "$(memif_args client)" -- --pattern mixed --count "$COUNT" \
	--max-size 1048576 --window 32 --timeout 60
[ "$CLIENT_RC" = 0 ] || fail "client exited $CLIENT_RC"
[ "$SERVER_RC" = 0 ] || fail "server exited $SERVER_RC"
[ "$(json_field "$SERVER_OUT" messages)" = "$COUNT" ] || fail "server did not receive $COUNT messages"
[ "$(json_field "$SERVER_OUT" ok)" = True ] || fail "server found a bad message"
[ "$(json_field "$CLIENT_OUT" retransmitted)" -gt 0 ] || fail "no retransmissions: were faults injected?"
[ "$(json_field "$SERVER_OUT" fault_dropped)" -gt 0 ] || fail "the server's injector dropped nothing"
lent=$(grep -aoE "payload lent to the device [0-9]+" "$WORK/client.err" | tail -1)
# From DPDK 23.03 net_memif sends a chained frame as chained descriptors,
# which its receive does not hand back whole: nothing is lent there.
dpdk=$(pkg-config --modversion libdpdk 2>/dev/null || echo 0)
if [ "$(printf '%s\n' 23.03 "$dpdk" | sort -V | head -1)" = 23.03 ]; then
	[ "${lent##* }" = 0 ] || fail "DPDK $dpdk: payloads were lent to net_memif (${lent:-no count})"
else
	[ "${lent##* }" -gt 0 ] 2>/dev/null || fail "no payload was lent to net_memif (${lent:-no count})"
fi
echo "memif, 5% drop 5% reorder 1% duplicate: $COUNT messages delivered once, byte-exact" \
	"($lent frames)"
echo "client: $(cat "$CLIENT_OUT")"
echo "server: $(cat "$SERVER_OUT")"

pair_run "$(memif_args server 2048)" "$(memif_args client 2048)" -- --pattern mixed --count 2000 \
	--max-size 1048576 --window 32 --timeout 60
[ "$CLIENT_RC" = 0 ] || fail "client (2 KiB memif buffers) exited $CLIENT_RC"
[ "$SERVER_RC" = 0 ] || fail "server (2 KiB memif buffers) exited $SERVER_RC"
[ "$(json_field "$SERVER_OUT" messages)" = 2000 ] || fail "2 KiB buffers: not 2000 messages"
echo "memif with 2 KiB buffers: 2000 messages delivered once, byte-exact"

# The bench server takes memif's client role and starts first; the bench
# client, memif's server, follows.  The memif client tries until the server
# listens and has started its port (which turns a client away before).
unset FI_DPDK_FAULT_DROP FI_DPDK_FAULT_REORDER FI_DPDK_FAULT_DUPLICATE
PAIR_CLIENT_AFTER=2 pair_run "$(memif_args client)" "$(memif_args server)" -- --pattern mixed \
	--count 500 --max-size 65536 --window 32 --timeout 60
[ "$CLIENT_RC" = 0 ] || fail "memif client first: the client exited $CLIENT_RC"
[ "$SERVER_RC" = 0 ] || fail "memif client first: the server exited $SERVER_RC"
[ "$(json_field "$SERVER_OUT" messages)" = 500 ] || fail "memif client first: not 500 messages"
echo "memif client started 2 s before its server: 500 messages delivered once, byte-exact"
