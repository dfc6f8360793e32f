#!/bin/bash
# Usage: test_tables.sh TABLE_PEER UDP_ADVERSARY
#
# The tables a stranger must not flush or fill (issue 42, findings 3, 4
# and 6), live: plain fi_* programs (table_peer.cc) over net_af_packet on
# the two ends of a veth pair, in UDP/IPv6, each naming its peer by IPv6
# address alone (fi_getinfo's node, no out-of-band exchange); the target
# on fd00:66::1/64, its peers on fd00:66::2 and up; udp_adversary beside
# the peers, sending what strangers on the /64 could.
#   1. ipv6_table_flush: an RDM peer the target never inserted makes a
#      round (messages, a write, a read), goes idle; 3,000 made-up sources
#      send HELLOs; its next round passes (udp_adversary.cc).
#   2. dgram_share: a DGRAM target with a 256 KiB unexpected budget and no
#      receive posted; one forged source sends 2,000 datagrams of 1 KiB;
#      then an honest client's datagrams still wait for the receives
#      (udp_adversary.cc).
#   3. One source's pending connection requests: a client opens 20
#      FI_EP_MSG endpoints that all fi_connect to a passive endpoint that
#      answers none: 16 requests wait there, 4 are refused at once.
#   4. Accepted clients are let go: the MSG target may name 4 IPv6 peers
#      at once (FI_DPDK_IPV6_PEERS=4); 6 clients, each on its own address,
#      one after the other, connect, send, shut down, close: all 6 are
#      accepted and served.
# Skips (exit 77) where veth pairs cannot be made.
set -euo pipefail
PEER=$1
ADVERSARY=$2
source "$(dirname "$0")/../multiproc/pair.sh"

T=oft$$t
P=oft$$p
quiet_veth_pair_or_skip "$T" "$P"
export FI_DPDK_ENCAP=udp
TARGET6=fd00:66::1
TARGET_MAC=$(cat "/sys/class/net/$T/address")
failures=0

# target STAGE ROLE [ENV...] -- [ARGS...]: a target on T, once it is ready.
target() {
	local stage=$1 role=$2
	shift 2
	local env=()
	while [ "$1" != -- ]; do env+=("$1"); shift; done
	shift
	mkdir -p "$WORK/$stage"
	# shellcheck disable=SC2086
	start_limited 120 "$WORK/$stage-target.json" "$WORK/$stage-target.err" env \
		FI_DPDK_PORT_ADDR="$TARGET6/64" "${env[@]}" "$PEER" -l 0 $EAL_COMMON \
		"--vdev=net_af_packet0,iface=$T" -- --role "$role" --rendezvous "$WORK/$stage" "$@"
	SERVER_PID=$STARTED_PID
	for _ in $(seq 300); do
		[ -e "$WORK/$stage/ready" ] && return 0
		kill -0 "$SERVER_PID" 2>/dev/null || break
		sleep 0.1
	done
	fail "stage $stage: the $role did not start"
}
# peer STAGE ROLE ADDRESS [ARGS...]: a peer on P with that IPv6 address
# (in the background: its pid in STARTED_PID).
peer() {
	local stage=$1 role=$2 address=$3
	shift 3
	# shellcheck disable=SC2086
	start_limited 120 "$WORK/$stage-$role.json" "$WORK/$stage-$role.err" env \
		FI_DPDK_PORT_ADDR="$address/64" "$PEER" -l 1 $EAL_COMMON \
		"--vdev=net_af_packet0,iface=$P" -- --role "$role" --rendezvous "$WORK/$stage" \
		--peer "$TARGET6" "$@"
}
adversary() {
	local stage=$1 cases=$2
	shift 2
	"$ADVERSARY" --iface "$P" --target-mac "$TARGET_MAC" --target-ip 10.66.0.1 \
		--own-ip 10.66.0.3 --prefix 16 --target-ip6 "$TARGET6" --own-ip6 fd00:66::3 \
		--target-pid "$SERVER_PID" --seed "$$" --rendezvous "$WORK/$stage" --cases "$cases" "$@"
}
# end_target STAGE: stops the stage's target and waits for it.
end_target() {
	touch "$WORK/$1/stop"
	wait "$SERVER_PID" || true
	SERVER_PID=""
}
check() {
	if eval "$2"; then
		echo "ok    $1"
	else
		echo "FAIL  $1"
		for f in "$WORK"/*.err; do [ -s "$f" ] && { echo "--- $f"; tail -n 15 "$f"; }; done
		failures=$((failures + 1))
	fi
}

# 1. A live IPv6 peer through a flood of strangers.  (The target logs its
#    peer table's counts as its port goes.)
target flush rdm-target FI_LOG_LEVEL=info FI_LOG_PROV=dpdk FI_LOG_SUBSYS=domain --
peer flush rdm-client fd00:66::2
CLIENT_PID=$STARTED_PID
set +e
adversary flush answers6,ipv6_table_flush
RC=$?
wait "$CLIENT_PID"
CLIENT_RC=$?
set -e
CLIENT_PID=""
end_target flush
evicted=$(grep -ao "strangers evicted [0-9]*" "$WORK/flush-target.err" | awk '{print $3}' | tail -n 1)
udp_in=$(grep -ao "UDP frames in [0-9]*" "$WORK/flush-target.err" | awk '{print $4}' | tail -n 1)
# The flood must have overflowed the stranger table (1,024 places) while
# the peer was idle: evictions prove it.  How many of the 3,000 HELLOs
# arrive depends on the machine (af_packet's ring overflows while a busy
# machine keeps the target off its CPU: 1,834 frames in, 784 evicted, in
# one CI run), so the count is reported, not required.
check "ipv6_table_flush: the idle peer's round after 3,000 strangers ($(cat "$WORK/flush/round2" 2>/dev/null || echo none)), ${udp_in:-no} UDP frames in, ${evicted:-no} strangers evicted meanwhile" \
	'[ "$RC" = 0 ] && [ "$CLIENT_RC" = 0 ] && [ "${evicted:-0}" -ge 1 ]'

# 2. The unexpected budget of a DGRAM endpoint under one forged source.
target dgram dgram-target FI_DPDK_UNEXPECTED_BYTES=262144 FI_LOG_LEVEL=info FI_LOG_PROV=dpdk \
	FI_LOG_SUBSYS=ep_data -- --peer fd00:66::2
peer dgram dgram-client fd00:66::2 --count 20
CLIENT_PID=$STARTED_PID
set +e
adversary dgram dgram_share --client-datagrams 20
RC=$?
wait "$CLIENT_PID"
CLIENT_RC=$?
set -e
CLIENT_PID=""
end_target dgram
over=$(grep -ao "over their sender's share of it: [0-9]*" "$WORK/dgram-target.err" | awk '{print $NF}')
check "dgram_share: $(cat "$WORK/dgram/dgram-result" 2>/dev/null || echo 'no result') datagrams waited; ${over:-no} forged ones dropped as over their share" \
	'[ "$RC" = 0 ] && [ "$CLIENT_RC" = 0 ] && [ "${over:-0}" -ge 1000 ]'

# 3 and 4. Connection requests held per source; accepted clients let go.
target msg msg-target FI_DPDK_IPV6_PEERS=4 --
peer msg msg-asker fd00:66::2 --count 20
CLIENT_PID=$STARTED_PID
for _ in $(seq 600); do
	[ -e "$WORK/msg/refused-early" ] && break
	kill -0 "$CLIENT_PID" 2>/dev/null || break
	sleep 0.1
done
set +e
wait "$CLIENT_PID"
set -e
CLIENT_PID=""
held=$(cat "$WORK/msg/requests-held" 2>/dev/null || echo none)
refused=$(cat "$WORK/msg/refused-early" 2>/dev/null || echo none)
check "20 requests from one source: $held held, $refused refused at once (want 16 and 4)" \
	'[ "$held" = 16 ] && [ "$refused" = 4 ]'
touch "$WORK/msg/accept"
served=0
for i in 1 2 3 4 5 6; do
	peer msg msg-client "fd00:66::1$i"
	CLIENT_PID=$STARTED_PID
	if wait "$CLIENT_PID"; then served=$((served + 1)); fi
	CLIENT_PID=""
done
end_target msg
check "6 clients one after another, 4 IPv6 peers at most: $served served, target: $(cat "$WORK/msg/msg-result" 2>/dev/null || echo 'no result')" \
	'[ "$served" = 6 ] && grep -qx "accepted 6 failed 0" "$WORK/msg/msg-result"'
((failures == 0)) || exit 1
echo "every table held"
