#!/bin/bash
# Usage: test_path_mtu.sh [--ipv6]
#
# Path MTU discovery across a router whose links forward less than our
# frames (usertools/dpdk-fi-router.sh up --narrow 1400: its routes to both
# subnets say MTU 1400, locked), as a tunnel on the way would, while both
# hosts' ports send up to FI_DPDK_ROUTED_MTU (1500) to peers beyond their
# gateway.  Stock fi_pingpong (libfabric-bin) both ways, every size to
# 6 MiB with the data checked.  Asserts:
#   1. with the router's ICMP "fragmentation needed" (IPv6: "packet too
#      big") reaching the hosts, both sides exit 0, and each side's port
#      logs that a router said the path to the other carries 1400-byte
#      packets (the word named a connection of ours);
#   2. (IPv4) with the router keeping its ICMP to itself (dpdk-fi-router.sh
#      quiet on), both sides still exit 0: each side's endpoint reports a
#      connection narrowed because its large segments went unanswered
#      while small frames were, and none narrowed by ICMP.
# Without path MTU discovery every frame of 1500 bytes is dropped and the
# pingpong of any size above 1400 never completes.  Skips (77) without
# root, iproute2, fi_pingpong or network namespaces.  Every process runs
# under `timeout`; the trap removes the namespaces.
set -euo pipefail
if [ "${1:-}" = --ipv6 ]; then
	ROUTER_NAME_PREFIX=ofm6
	ROUTER_UP_ARGS=(--ipv6 --narrow 1400)
	SERVER_ADDRESS=fd00:77:2::2
	CLIENT_ADDRESS=fd00:77:1::2
	CLIENT_PORT_ARGS=()
	PINGPONG_ARGS=(-6)
	FAMILY_NOTE=" in IPv6, through a 1400-byte link"
else
	ROUTER_NAME_PREFIX=ofm
	ROUTER_UP_ARGS=(--narrow 1400)
	SERVER_ADDRESS=10.77.2.2
	CLIENT_ADDRESS=10.77.1.2
	CLIENT_PORT_ARGS=(--ip 10.77.1.2/24@10.77.1.1)
	PINGPONG_ARGS=()
	FAMILY_NOTE=", through a 1400-byte link"
fi
# shellcheck source-path=SCRIPTDIR source=router_common.sh
source "$(dirname "${BASH_SOURCE[0]}")/router_common.sh"
export FI_LOG_LEVEL=info FI_LOG_PROV=dpdk

# expect LOG PATTERN WHAT: a failure unless LOG has a line matching PATTERN.
expect() {
	if grep -qE "$2" "$1"; then
		echo "ok    $3"
	else
		echo "FAIL  $3: no line like '$2' in $(basename "$1")"
		grep -E "path MTU|router says|packet-too-big" "$1" | tail -n 5 | sed 's/^/    /' || true
		failures=$((failures + 1))
	fi
}

pingpong icmp 180 -I 5 -S all -c
expect "$work/icmp-client.log" "a router says the path to $SERVER_ADDRESS carries 1400-byte packets" \
	"the client's port heard the router's word about the path to $SERVER_ADDRESS"
expect "$work/icmp-server.log" "a router says the path to $CLIENT_ADDRESS carries 1400-byte packets" \
	"the server's port heard the router's word about the path to $CLIENT_ADDRESS"

if [ "${1:-}" != --ipv6 ]; then
	"$root/usertools/dpdk-fi-router.sh" quiet --name "$name" on
	pingpong quiet 180 -I 5 -S all -c
	for side in client server; do
		expect "$work/quiet-$side.log" \
			"path MTU: connections narrowed by a router's ICMP 0, by unanswered large segments [1-9]" \
			"the $side's endpoint narrowed its connection with no word from the router"
	done
fi
((failures == 0))
