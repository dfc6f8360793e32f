#!/bin/bash
# Usage: test_udp_adversarial.sh BENCH UDP_ADVERSARY
#
# The UDP/IPv4 side of the adversarial harness: a live pair (dpdk-fi-bench
# fetch-adds, server = the target) over net_af_packet on the two ends of a
# veth pair, both ports with addresses on 10.66.0.0/16 so the pair talks in
# UDP, and udp_adversary on the peer's end sending what strangers on that
# subnet could (udp_adversary.cc: spoofed HELLOs, broadcasts, an echo and an
# ARP flood, forged ICMP "fragmentation needed" for the pair, ARP requests
# claiming the peer's address, static neighbours (FI_DPDK_NEIGHBOURS and
# the kernel's permanent entry) claimed, and 1200 made-up neighbours; the target's
# port also has fd00:66::1/64, and the same in IPv6: spoofed HELLOs, a
# solicitation claiming our address, echo, solicitation and stranger
# floods).  Passes when every case passed and both bench processes still
# run at the end, and then a newcomer (a client started during an ARP
# flood that crowds out the target's questions) is answered while the
# flood goes on.  Skips (exit
# 77) where veth pairs cannot be made.
set -euo pipefail
BENCH=$1
ADVERSARY=$2
source "$(dirname "$0")/../multiproc/pair.sh"

T=ofu$$t
P=ofu$$p
# (The kernel has no address of its own on either end.)
quiet_veth_pair_or_skip "$T" "$P"

export FI_DPDK_ENCAP=udp
# Neighbour entries outlive the test: the target asks for the peer only
# when an entry went (arp_evict watches for that).
export FI_DPDK_NEIGHBOUR_LIFETIME_MS=600000
# Static neighbours of the target: one by parameter, one the kernel holds
# permanent on its interface (static_neighbours).
STATIC_PARAM=10.66.0.8=02:66:00:00:00:08
STATIC_KERNEL=10.66.0.9=02:66:00:00:00:09
ip neigh replace 10.66.0.9 lladdr 02:66:00:00:00:09 nud permanent dev "$T"
mkdir -p "$WORK/rendezvous"
PAIR_ARGS=(--pattern atomic --window 16 --count 100000000 --timeout 200 --size 4096
	--rendezvous "$WORK/rendezvous")
# Warnings (a peer timeout and why) land in the .err files fail() shows.
# shellcheck disable=SC2086
start_limited 200 "$WORK/server.json" "$WORK/server.err" env FI_LOG_LEVEL=warn \
	FI_DPDK_PORT_ADDR=10.66.0.1/16,fd00:66::1/64 FI_DPDK_NEIGHBOURS="$STATIC_PARAM" \
	"$BENCH" -l 0 $EAL_COMMON "--vdev=net_af_packet0,iface=$T" -- --role server "${PAIR_ARGS[@]}"
SERVER_PID=$STARTED_PID
wait_for_server
# shellcheck disable=SC2086
start_limited 200 "$WORK/client.json" "$WORK/client.err" env FI_LOG_LEVEL=warn \
	FI_DPDK_PORT_ADDR=10.66.0.2/16 \
	"$BENCH" -l 1 $EAL_COMMON "--vdev=net_af_packet0,iface=$P" -- --role client "${PAIR_ARGS[@]}"
CLIENT_PID=$STARTED_PID
for _ in $(seq 100); do
	[ -s "$WORK/rendezvous/client" ] && break
	sleep 0.1
done
# (udp_adversary waits for the pair's full-sized frames before attacking.)

RSS_LIMIT_KB=8192
if [ -n "${ASAN_OPTIONS:-}${TSAN_OPTIONS:-}" ]; then
	RSS_LIMIT_KB=$((4 << 20))
	echo "note: under a sanitizer: the target's memory is not bounded by this test"
fi
set +e
attack_started=$SECONDS
"$ADVERSARY" --iface "$P" --target-mac "$(cat "/sys/class/net/$T/address")" \
	--target-ip 10.66.0.1 --own-ip 10.66.0.3 --avoid 10.66.0.2 --prefix 16 \
	--avoid-mac "$(cat "/sys/class/net/$P/address")" \
	--static "$STATIC_PARAM" --static "$STATIC_KERNEL" \
	--target-ip6 fd00:66::1 --own-ip6 fd00:66::3 \
	--target-pid "$SERVER_PID" --seed "$$" --rss-limit-kb "$RSS_LIMIT_KB"
RC=$?
set -e
kill -0 "$SERVER_PID" 2>/dev/null || fail "the target (bench server) ended during the attack"
kill -0 "$CLIENT_PID" 2>/dev/null || fail "the peer (bench client) ended during the attack"
[ "$RC" = 0 ] || fail "udp_adversary exited $RC"
echo "every case passed; the live pair ran throughout ($((SECONDS - attack_started)) s)"

# A newcomer: a client at another address (10.66.0.4, on the same end)
# starts while made-up neighbours' ARP requests keep the target's pool of
# questions full, so the target cannot ask it back and drops its HELLOs
# until it polls the target again and, refused before, takes the oldest
# question's place (udp_adversary.cc, newcomer).
# The peer is killed outright: twice in a dozen runs (2026-12-05) it
# outlived SIGTERM until its 200 s limit (a handler some library of
# Debian's libfabric installs, as doc/fabtests.md tells of
# sighandler_test, can hang the process it interrupts); its end, not how
# it ends, is what this case needs.  (Each step is timed.)
step_started=$SECONDS
kill -9 "$CLIENT_PID" 2>/dev/null || true
wait "$CLIENT_PID" 2>/dev/null || true
echo "the peer ended in $((SECONDS - step_started)) s"
step_started=$SECONDS
set +e
"$ADVERSARY" --iface "$P" --target-mac "$(cat "/sys/class/net/$T/address")" \
	--target-ip 10.66.0.1 --own-ip 10.66.0.3 --prefix 16 --target-pid "$SERVER_PID" \
	--seed "$$" --cases newcomer --newcomer 10.66.0.4 &
NEWCOMER_CASE=$!
sleep 0.5
# shellcheck disable=SC2086
start_limited 60 "$WORK/newcomer.json" "$WORK/newcomer.err" env FI_LOG_LEVEL=warn \
	FI_DPDK_PORT_ADDR=10.66.0.4/16 \
	"$BENCH" -l 1 $EAL_COMMON "--vdev=net_af_packet0,iface=$P" -- --role client "${PAIR_ARGS[@]}"
CLIENT_PID=$STARTED_PID
wait "$NEWCOMER_CASE"
RC=$?
set -e
[ "$RC" = 0 ] || fail "udp_adversary's newcomer case exited $RC"
kill -0 "$SERVER_PID" 2>/dev/null || fail "the target (bench server) ended"
echo "the newcomer was answered ($((SECONDS - step_started)) s)"
