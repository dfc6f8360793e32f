#!/bin/bash
# Usage: test_ipv6_neighbour.sh BENCH
#
# A port with an IPv6 address answers the kernel's neighbour discovery and
# ping: a live pair (dpdk-fi-bench fetch-adds in UDP/IPv4) over
# net_af_packet on the two ends of a veth pair, the server's port also
# given fd00:66::1/64 (FI_DPDK_PORT_ADDR, beside its IPv4 address).  The
# kernel holds the client's end with IPv6 on and fd00:66::3/64, and the
# server's end with IPv6 off (so only the provider can answer for
# fd00:66::1).  Asserts:
#   1. `ping -6 fd00:66::1` from the kernel gets its replies: the port
#      answered the kernel's solicitation (to fd00:66::1's solicited-node
#      group) and the echo requests;
#   2. the kernel's neighbour entry for fd00:66::1 holds the server
#      port's MAC;
#   3. a neighbour of the subnet that no one owns (fd00:66::9) stays
#      unanswered: the port speaks for its own address only;
#   4. the pair ran on throughout.
# Skips (exit 77) where veth pairs cannot be made or ping is missing.
set -euo pipefail
BENCH=$1
# shellcheck source-path=SCRIPTDIR source=pair.sh
source "$(dirname "$0")/pair.sh"
command -v ping >/dev/null || { echo "SKIP: no ping (iputils-ping)"; exit 77; }

T=ofv$$t
P=ofv$$p
quiet_veth_pair_or_skip "$T" "$P"
# The client's end speaks IPv6 (quiet_veth_pair turned it off); no
# duplicate address detection, so the address is usable at once.
sysctl -qw "net.ipv6.conf.$P.disable_ipv6=0"
ip -6 addr add fd00:66::3/64 dev "$P" nodad

export FI_DPDK_ENCAP=udp
mkdir -p "$WORK/rendezvous"
PAIR_ARGS=(--pattern atomic --window 16 --count 100000000 --timeout 100 --size 4096
	--rendezvous "$WORK/rendezvous")
# shellcheck disable=SC2086
start_limited 100 "$WORK/server.json" "$WORK/server.err" env FI_LOG_LEVEL=info FI_LOG_PROV=dpdk \
	FI_DPDK_PORT_ADDR=10.66.0.1/16,fd00:66::1/64 \
	"$BENCH" -l 0 $EAL_COMMON "--vdev=net_af_packet0,iface=$T" -- --role server "${PAIR_ARGS[@]}"
SERVER_PID=$STARTED_PID
wait_for_server
# shellcheck disable=SC2086
start_limited 100 "$WORK/client.json" "$WORK/client.err" env FI_DPDK_PORT_ADDR=10.66.0.2/16 \
	"$BENCH" -l 1 $EAL_COMMON "--vdev=net_af_packet0,iface=$P" -- --role client "${PAIR_ARGS[@]}"
CLIENT_PID=$STARTED_PID
for _ in $(seq 100); do
	[ -s "$WORK/rendezvous/client" ] && break
	sleep 0.1
done
grep -q "IPv6 address fd00:66::1/64" "$WORK/server.err" ||
	fail "the server's port did not take its IPv6 address"

failures=0
# (-W: a busy machine's pass may be slow; the first ping waits for the
# kernel's solicitation to be answered.)
if ping -6 -c 3 -i 0.2 -W 5 -I "$P" fd00:66::1 >"$WORK/ping.out" 2>&1; then
	echo "ok    ping -6 fd00:66::1: $(grep -o '[0-9]* received' "$WORK/ping.out")"
else
	echo "FAIL  ping -6 fd00:66::1:"
	cat "$WORK/ping.out"
	failures=$((failures + 1))
fi
mac=$(cat "/sys/class/net/$T/address")
entry=$(ip -6 neigh show fd00:66::1 dev "$P")
if [[ "$entry" == *"lladdr $mac"* ]]; then
	echo "ok    the kernel's neighbour entry: $entry"
else
	echo "FAIL  the kernel's neighbour entry for fd00:66::1 is '$entry', want lladdr $mac"
	failures=$((failures + 1))
fi
if ping -6 -c 1 -W 1 -I "$P" fd00:66::9 >/dev/null 2>&1; then
	echo "FAIL  fd00:66::9 (no one's) answered"
	failures=$((failures + 1))
else
	echo "ok    fd00:66::9 (no one's) stays unanswered"
fi
kill -0 "$SERVER_PID" 2>/dev/null || fail "the server ended"
kill -0 "$CLIENT_PID" 2>/dev/null || fail "the client ended"
echo "ok    the pair ran on throughout"
((failures == 0)) || fail "$failures check(s) failed"
