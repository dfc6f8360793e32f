#!/bin/bash
# Usage: test_af_packet_veth.sh BENCH
#
# Two processes over net_af_packet on the two ends of a veth pair: the
# kernel is on the path (and may drop for real).  A mixed-size stream must
# arrive once, in order, byte-exact; then again while the link goes down
# and comes back; then at MTU 9000.  Skips (exit 77) where veth pairs
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
# Sealed frames (the default off memory ports) are never lent: the seal
# reads the payload as it copies it.
grep -aqE "payload lent to the device 0\)" "$WORK/client.err" ||
	fail "the client lent payloads of sealed frames to the device"
peers=$(grep -a "peers: hellos sent" "$WORK/server.err" | tail -1)
[ -n "$peers" ] || fail "the server's endpoint did not report its peers at close"
echo "$peers" | grep -qE "answered [1-9][0-9]*, answers withheld 0, connections opened 1 " ||
	fail "the server's peer counters are not one handshake and one connection: $peers"
echo "af_packet over veth: 3000 messages delivered once, byte-exact; server ${peers#*<info> }"
echo "client: $(cat "$CLIENT_OUT")"

# The link set down and up under a running stream (issue 44's offloads:
# link-state changes seen and survived).  net_af_packet calls its link up
# whatever the interface does; the port asks the kernel too, so each side
# logs the link going down and coming back, sends nothing meanwhile, and
# resends at once when it is back: the stream still arrives once, in
# order, byte-exact.  The link goes down once the client has sent 3000
# frames (of some 200000), for a second.
flap_link() {
	local sent=/sys/class/net/$B/statistics/tx_packets start
	start=$(cat "$sent")
	for _ in $(seq 1 3000); do
		[ $(($(cat "$sent") - start)) -ge 3000 ] && break
		sleep 0.01
	done
	ip link set "$A" down
	sleep 1
	ip link set "$A" up
}
export FI_LOG_SUBSYS=domain,ep_data
flap_link &
FLAPPER=$!
pair_run "--vdev=net_af_packet0,iface=$A" "--vdev=net_af_packet0,iface=$B" -- \
	--pattern mixed --count 60000 --max-size 65536 --window 16 --timeout 60
wait "$FLAPPER" || true
ip link set "$A" up
[ "$CLIENT_RC" = 0 ] && [ "$SERVER_RC" = 0 ] || fail "link flap: client $CLIENT_RC, server $SERVER_RC"
[ "$(json_field "$SERVER_OUT" messages)" = 60000 ] ||
	fail "link flap: the server did not receive 60000 messages"
for side in client server; do
	grep -aq "net_af_packet0: link down:" "$WORK/$side.err" ||
		fail "link flap: the $side did not see the link go down (did the stream end first?)"
	grep -aq "net_af_packet0: link up again after [0-9]* ms" "$WORK/$side.err" ||
		fail "link flap: the $side did not see the link come back"
done
echo "link set down and up under the stream: 60000 messages delivered once, byte-exact;" \
	"client $(grep -ao "link up again after [0-9]* ms" "$WORK/client.err")"

# Jumbo frames: with both ends at MTU 9000, the launcher gives each port
# ring frames that hold 9000 bytes, the ports carry 9000-byte frames (a
# 64 KiB message in 8 of them, not 34), and a mixed stream still arrives
# once, in order, byte-exact.
ip link set "$A" mtu 9000
ip link set "$B" mtu 9000
launcher_vdev() {
	python3 "$(dirname "$0")/../../usertools/dpdk-fi-run.py" --topology af_packet --iface "$1" \
		--print-only | sed -n "s/.*\(--vdev=[^ ']*\).*/\1/p"
}
vdev_a=$(launcher_vdev "$A")
vdev_b=$(launcher_vdev "$B")
echo "$vdev_a" | grep -q ",framesz=9216,blocksz=36864" ||
	fail "the launcher gave no ring frames for MTU 9000: $vdev_a"
export FI_LOG_SUBSYS=domain
pair_run "$vdev_a" "$vdev_b" -- --pattern bandwidth --size 65536 --count 500 --window 16 --timeout 60
[ "$CLIENT_RC" = 0 ] && [ "$SERVER_RC" = 0 ] || fail "jumbo bandwidth: client $CLIENT_RC, server $SERVER_RC"
grep -aq "net_af_packet0: .*MTU 9000," "$WORK/server.err" ||
	fail "the server's port is not at MTU 9000: $(grep -a net_af_packet0 "$WORK/server.err" | head -1)"
# 500 messages of 8 frames, the handshake and a few probes (repairs apart:
# a busy machine may drop from a full ring); 34 frames each at MTU 1968.
frames=$(($(json_field "$CLIENT_OUT" tx_frames) - $(json_field "$CLIENT_OUT" retransmitted)))
[ "$frames" -ge 4000 ] && [ "$frames" -le 6000 ] ||
	fail "500 messages of 64 KiB took $frames frames at MTU 9000 (expected 4000-6000)"
jumbo_rate=$(json_field "$CLIENT_OUT" goodput_MBps)
pair_run "$vdev_a" "$vdev_b" -- --pattern mixed --count 1000 --max-size 262144 --window 16 --timeout 60
[ "$CLIENT_RC" = 0 ] && [ "$SERVER_RC" = 0 ] || fail "jumbo mixed: client $CLIENT_RC, server $SERVER_RC"
[ "$(json_field "$SERVER_OUT" messages)" = 1000 ] || fail "jumbo: server did not receive 1000 messages"
echo "af_packet over veth at MTU 9000: 500 x 64 KiB in $frames frames ($jumbo_rate MB/s)," \
	"1000 mixed messages delivered once, byte-exact"

# Unsealed (FI_DPDK_CHECKSUM=0), frames of 2 KiB and more go out with their
# payload lent to net_af_packet, which copies it into its ring at the burst
# (drivers/net/lent_payload.h): the stream must still arrive byte-exact.
export FI_LOG_SUBSYS=ep_data
FI_DPDK_CHECKSUM=0 pair_run "$vdev_a" "$vdev_b" -- --pattern mixed --count 1000 --max-size 262144 \
	--window 16 --timeout 60
[ "$CLIENT_RC" = 0 ] && [ "$SERVER_RC" = 0 ] || fail "lent payloads: client $CLIENT_RC, server $SERVER_RC"
[ "$(json_field "$SERVER_OUT" messages)" = 1000 ] || fail "lent payloads: not 1000 messages"
lent=$(grep -aoE "payload lent to the device [0-9]+" "$WORK/client.err" | tail -1)
[ "${lent##* }" -gt 0 ] 2>/dev/null || fail "no payload was lent to net_af_packet (${lent:-no count})"
echo "af_packet, unsealed: 1000 mixed messages delivered once, byte-exact; $lent frames"
