#!/bin/bash
# Usage: test_ecn.sh [--ipv6]
#
# ECN across a router (usertools/dpdk-fi-router.sh: hosts a and b on two
# subnets, the Linux kernel forwarding between them in namespace NAME-r;
# --ipv6: the same in IPv6 alone, the mark in the traffic class).
# This kernel has no queue discipline that marks (no sch_red, fq_codel), so
# the router marks with an nftables rule instead: one in five of the
# ECN-capable (ECT(0)) UDP frames toward host b's ports leaves it marked CE,
# as a switch whose queue is over its threshold would.  Asserts:
#   1. stock fi_pingpong -S 65536 -I 300 passes; the server's endpoint (host
#      b) took marked segments and sent acks that echoed them; the client's
#      endpoint got the echoes and cut its window for them; the rule marked
#      packets;
#   2. with FI_DPDK_ECN=0 on both sides the same run passes and the rule
#      marks nothing, and neither side logs a mark: the ECT bits on our
#      frames are what makes them markable.
# Skips (77) without root, iproute2, fi_pingpong, network namespaces or nft.
set -euo pipefail
if ! command -v nft >/dev/null; then
	echo "SKIP: no nft (apt-get install nftables)"
	exit 77
fi
ROUTER_NAME_PREFIX=ofiecn
ROUTER_UP_ARGS=()
SERVER_ADDRESS=10.77.2.2
CLIENT_PORT_ARGS=(--ip 10.77.1.2/24@10.77.1.1)
PINGPONG_ARGS=()
FAMILY=ip
if [ "${1:-}" = --ipv6 ]; then
	ROUTER_UP_ARGS=(--ipv6)
	SERVER_ADDRESS=fd00:77:2::2
	CLIENT_PORT_ARGS=()
	PINGPONG_ARGS=(-6)
	FAMILY=ip6
fi
FAMILY_NOTE=", one in five frames to b marked CE"
# shellcheck source-path=SCRIPTDIR source=router_common.sh
source "$(dirname "${BASH_SOURCE[0]}")/router_common.sh"

ip netns exec "$name-r" nft -f - <<NFT
table inet ofi_ecn {
	chain forward {
		type filter hook forward priority 0;
		$FAMILY daddr $SERVER_ADDRESS udp dport 9228-9291 $FAMILY ecn ect0 numgen random mod 5 == 0 counter $FAMILY ecn set ce
	}
}
NFT
marked_by_router() {
	ip netns exec "$name-r" nft list table inet ofi_ecn | sed -n 's/.*counter packets \([0-9]*\).*/\1/p'
}

# The endpoints' counters at close.
export FI_LOG_LEVEL=info FI_LOG_PROV=dpdk FI_LOG_SUBSYS=ep_data
# count_in LOG REGEX: the numbers that end REGEX's matches in a side's log, summed.
count_in() { { grep -aoE "$2" "$work/$1.log" || true; } | awk '{s += $NF} END {print s + 0}'; }

pingpong marks 120 -S 65536 -I 300
router=$(marked_by_router)
received=$(count_in marks-server "segments received marked [0-9]+")
echoed=$(count_in marks-server "acks that echoed them [0-9]+")
echoes=$(count_in marks-client "echoes received [0-9]+")
cuts=$(count_in marks-client "for congestion marks [0-9]+")
if ((router > 0 && received > 0 && echoed > 0 && echoes > 0 && cuts > 0)); then
	echo "ok    the router marked $router frames; host b took $received marked segments and" \
		"echoed them in $echoed acks; host a got $echoes echoes and cut its window $cuts times"
else
	echo "FAIL  marks: router $router, b took $received and echoed $echoed, a got $echoes and cut $cuts"
	grep -aE "congestion|window cuts" "$work"/marks-*.log | head -8
	failures=$((failures + 1))
fi

before=$(marked_by_router)
FAMILY_NOTE=", FI_DPDK_ECN=0"
FI_DPDK_ECN=0 pingpong unmarked 120 -S 65536 -I 300
router=$(($(marked_by_router) - before))
received=$(count_in unmarked-server "segments received marked [0-9]+")
cuts=$(count_in unmarked-client "for congestion marks [0-9]+")
if ((router == 0 && received == 0 && cuts == 0)); then
	echo "ok    with FI_DPDK_ECN=0 the frames are not ECN-capable: the router marked none"
else
	echo "FAIL  with FI_DPDK_ECN=0: the router marked $router, b took $received marked, a cut $cuts"
	failures=$((failures + 1))
fi
exit $((failures > 0))
