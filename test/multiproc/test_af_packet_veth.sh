#!/bin/bash
# Usage: test_af_packet_veth.sh BENCH
#
# Two processes over net_af_packet on the two ends of a veth pair: the
# kernel is on the path (and may drop for real).  A mixed-size stream must
# arrive once, in order, byte-exact.  Skips (exit 77) where veth pairs
# cannot be made (no root, no iproute2).
set -euo pipefail
BENCH=$1
source "$(dirname "$0")/pair.sh"

A=ofd$$a
B=ofd$$b
quiet_veth_pair_or_skip "$A" "$B"

export FI_DPDK_PEER_TIMEOUT_MS=20000
# Each endpoint's counters at close (the server's are checked below).
export FI_LOG_LEVEL=info FI_LOG_PROV=dpdk FI_LOG_SUBSYS=ep_data
pair_run "--vdev=net_af_packet0,iface=$A" "--vdev=net_af_packet0,iface=$B" -- \
	--pattern mixed --count 3000 --max-size 262144 --window 16 --timeout 60
[ "$CLIENT_RC" = 0 ] || fail "client exited $CLIENT_RC"
[ "$SERVER_RC" = 0 ] || fail "server exited $SERVER_RC"
[ "$(json_field "$SERVER_OUT" messages)" = 3000 ] || fail "server did not receive 3000 messages"
# The server's endpoint says at close what its one peer cost: a handshake
# answered, one connection opened, no stranger's answer held back.
peers=$(grep -a "peers: hellos sent" "$WORK/server.err" | tail -1)
[ -n "$peers" ] || fail "the server's endpoint did not report its peers at close"
echo "$peers" | grep -qE "answered [1-9][0-9]*, answers withheld 0, connections opened 1 " ||
	fail "the server's peer counters are not one handshake and one connection: $peers"
echo "af_packet over veth: 3000 messages delivered once, byte-exact; server ${peers#*<info> }"
echo "client: $(cat "$CLIENT_OUT")"
