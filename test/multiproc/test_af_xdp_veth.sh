#!/bin/bash
# Usage: test_af_xdp_veth.sh BENCH
#
# Two processes over net_af_xdp on the two ends of a veth pair, without
# hugepages (4 KiB pages: the layout that made DPDK 22.11's net_af_xdp
# register a UMEM shorter than the mbuf pool, so 42 % of mbufs sent frames
# the kernel dropped as invalid descriptors and the link stalled after the
# first few hundred messages; drivers/net/umem_pool.h).  A mixed-size
# stream must arrive once, in order, byte-exact, twice in a row (each run
# reaches every mbuf of the pool many times over), and the port must say
# its pool lies whole inside the UMEM.  Then one process lets the port go
# and takes it again (dpdk-fi-loopback --rounds 3): net_af_xdp keeps its
# XDP socket until the device closes, and the second domain's queue set-up
# failed ("Failed to reserve fill queue"); the device is now kept set up
# for the process.  Skips (exit 77) where veth pairs
# cannot be made, DPDK has no net_af_xdp, or the kernel takes no AF_XDP
# socket on them.
set -euo pipefail
BENCH=$1
source "$(dirname "$0")/pair.sh"

A=ofx$$a
B=ofx$$b
quiet_veth_pair_or_skip "$A" "$B"
trap 'ip link set dev "$A" xdp off 2>/dev/null || true; ip link set dev "$B" xdp off 2>/dev/null || true; ip link del "$A" 2>/dev/null || true; cleanup' EXIT

export FI_DPDK_PEER_TIMEOUT_MS=20000
export FI_LOG_LEVEL=info FI_LOG_PROV=dpdk
xdp() { echo "--vdev=net_af_xdp0,iface=$1,start_queue=0,queue_count=1"; }
for run in 1 2; do
	pair_run "$(xdp "$A")" "$(xdp "$B")" -- \
		--pattern mixed --count 3000 --max-size 262144 --window 16 --timeout 60
	# (DPDK's words when the kernel refuses the socket or its program.)
	refusal="Failed to (create|configure) (xsk|xdp) socket|Failed to load (custom )?XDP prog|failed to parse device \"net_af_xdp"
	if [ "$SERVER_RC" != 0 ] && grep -qE "$refusal" "$WORK/server.err"; then
		echo "SKIP: no AF_XDP socket on a veth here: $(grep -E "$refusal" "$WORK/server.err" | head -1)"
		exit 77
	fi
	[ "$CLIENT_RC" = 0 ] || fail "run $run: client exited $CLIENT_RC"
	[ "$SERVER_RC" = 0 ] || fail "run $run: server exited $SERVER_RC"
	[ "$(json_field "$SERVER_OUT" messages)" = 3000 ] || fail "run $run: server did not receive 3000 messages"
	grep -q "pool of .* mbufs packed for the UMEM" "$WORK/server.err" ||
		fail "run $run: the port did not say its pool is packed for the UMEM"
done
# One process, three domains in turn on the same device.
LOOPBACK=$(dirname "$BENCH")/../loopback/dpdk-fi-loopback
rounds_log=$WORK/rounds.log
if ! timeout 120 "$LOOPBACK" -l 0 --no-pci --no-huge -m 512 --no-shconf --no-telemetry \
	"$(xdp "$A")" -- --rounds 3 --count 300 --size 1000 >"$rounds_log" 2>&1; then
	tail -20 "$rounds_log"
	fail "dpdk-fi-loopback --rounds 3 on net_af_xdp failed"
fi
[ "$(grep -c "kept from an earlier domain of this process" "$rounds_log")" -ge 2 ] ||
	fail "rounds 2 and 3 did not take the device the first round left set up"
echo "af_xdp over veth: 2 x 3000 messages delivered once, byte-exact; $(grep -o 'pool of .* mbufs packed for the UMEM[^;]*' "$WORK/server.err" | head -1)"
echo "af_xdp: one process took the device in 3 domains in turn, each round verified"
echo "client: $(cat "$CLIENT_OUT")"
