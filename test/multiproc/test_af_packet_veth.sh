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
pair_run "--vdev=net_af_packet0,iface=$A" "--vdev=net_af_packet0,iface=$B" -- \
	--pattern mixed --count 3000 --max-size 262144 --window 16 --timeout 60
[ "$CLIENT_RC" = 0 ] || fail "client exited $CLIENT_RC"
[ "$SERVER_RC" = 0 ] || fail "server exited $SERVER_RC"
[ "$(json_field "$SERVER_OUT" messages)" = 3000 ] || fail "server did not receive 3000 messages"
echo "af_packet over veth: 3000 messages delivered once, byte-exact"
echo "client: $(cat "$CLIENT_OUT")"
