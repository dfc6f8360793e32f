#!/bin/bash
# test_flow_steering_vm.sh: rte_flow steering proven on a device that
# installs rules.  net_tap's rules are TC flower filters with skbedit
# actions under a multiq qdisc, which this machine's kernel lacks, so the
# test boots a VM with a Debian kernel (usertools/dpdk-fi-vm.sh; the kit
# is made by dpdk-fi-setup.sh) and, in it:
#  - bridges two multi-queue tap interfaces, ofitap0 and ofitap1 (net_tap
#    gives each the MAC of its port, which the bridge would then keep as
#    its own: once the ports are open, they get other MACs);
#  - runs test_flow_steering (test_flow_steering.cc) on two net_tap ports
#    on them with four queue pairs, addresses in IPv4 and IPv6 and
#    FI_DPDK_STEERING=flow: each endpoint's frames must arrive on its own
#    queue;
#  - checks the provider's log: the port says which rules it installs, and
#    which it refused and why (the EtherType rule's RAW item);
#  - checks that the rules were TC filters on the taps while they were in
#    place (the kernel lists them), and that closing the endpoints removed
#    them while their ports were still open.
# Exit status: 0 passed, 1 failed, 77 no VM kit.
set -uo pipefail

build=${OFI_DPDK_BUILD_ROOT:?}
source_root=${OFI_DPDK_SOURCE_ROOT:?}

if [[ "${1:-}" != --guest ]]; then
	exec bash "$source_root/usertools/dpdk-fi-vm.sh" run --builddir "$build" --timeout 900 \
		-- bash "${BASH_SOURCE[0]}" --guest
fi

# --- inside the VM ---------------------------------------------------------
fail() {
	echo "FAIL: $*"
	exit 1
}
log=/tmp/steering.log

ip link add ofibr type bridge || fail "no bridge"
ip link set ofibr up
for tap in ofitap0 ofitap1; do
	ip tuntap add dev "$tap" mode tap multi_queue || fail "no multi-queue tap"
	ip link set "$tap" master ofibr
	ip link set "$tap" up
done
sysctl -qw net.ipv6.conf.all.disable_ipv6=1 # the kernel's own IPv6 chatter

# filters TAP: the flower filters net_tap made on TAP, one per line.
filters() {
	tc filter show dev "$1" parent 1: 2>&1 | tr '\n' ' ' | sed 's/filter /\n&/g'
}

export OFI_DPDK_STEERING_SYNC=/tmp/steering-sync
mkdir -p "$OFI_DPDK_STEERING_SYNC"
# await NAME: waits (at most 10 min) for the program's file NAME.
await() {
	for _ in $(seq 1200); do
		[[ -f $OFI_DPDK_STEERING_SYNC/$1 ]] && return 0
		sleep 0.5
	done
	return 1
}
# Once the ports are open: the kernel's side of each tap gets a MAC of its
# own, and the filters the rules became are listed; once the endpoints are
# closed (the ports still open), they are listed again.
(
	await opened || exit 1
	ip link set ofitap0 address 02:00:00:09:10:01
	ip link set ofitap1 address 02:00:00:09:10:02
	filters ofitap0 >/tmp/filters0
	filters ofitap1 >/tmp/filters1
	touch "$OFI_DPDK_STEERING_SYNC/go"
	await closed || exit 1
	{ filters ofitap0; filters ofitap1; } >/tmp/filters-after
	touch "$OFI_DPDK_STEERING_SYNC/checked"
) &
helper=$!

# This run's settings alone: the caller's FI_DPDK_* would change the ports
# and rules the checks below expect.
while IFS= read -r name; do unset "$name"; done < <(compgen -e | grep '^FI_DPDK_')
export FI_DPDK_EAL_ARGS="-l 0-1 --no-huge -m 512 --no-shconf --no-pci --no-telemetry \
--log-level=lib.eal:error --vdev=net_tap0,iface=ofitap0,mac=02:00:00:09:00:01 \
--vdev=net_tap1,iface=ofitap1,mac=02:00:00:09:00:02"
export FI_DPDK_PORT_ADDR="net_tap0=10.9.0.1/24,net_tap1=10.9.0.2/24,\
net_tap0=fd00:9::1/64,net_tap1=fd00:9::2/64"
export FI_DPDK_STEERING=flow FI_DPDK_QUEUES=4
export FI_LOG_LEVEL=info FI_LOG_PROV=dpdk
"$build/test/net/test_flow_steering" 2>"$log"
status=$?
kill "$helper" 2>/dev/null
wait "$helper" 2>/dev/null
grep -E "rte_flow|steering rule|error" "$log" | sort | uniq -c | head -n 20
((status == 0)) || { tail -n 30 "$log"; fail "test_flow_steering: status $status"; }

for port in net_tap0 net_tap1; do
	grep -q "$port: 4 queue pair(s), rte_flow steering (rules: UDP/IPv4, UDP/IPv6); refused: EtherType: rte_flow_validate: " "$log" ||
		fail "$port: no log line of its rules and the refused one"
done
# The endpoints are on queues 1 and 2 of net_tap0, 3 and 1 of net_tap1:
# their rules are flower filters matching UDP ports 9228 + queue in both
# families, each with an skbedit to its queue, and no others.
expect_filters() { # TAP FILE QUEUE...
	local tap=$1 file=$2 queue family
	shift 2
	for queue in "$@"; do
		for family in ipv4 ipv6; do
			grep -q "eth_type $family .*dst_port $((9228 + queue)) .*queue_mapping $queue " "$file" ||
				{ cat "$file"; fail "no flower filter for $family UDP $((9228 + queue)) on $tap"; }
		done
	done
	(($(grep -c "dst_port" "$file") == 2 * $#)) || { cat "$file"; fail "other filters on $tap"; }
}
expect_filters ofitap0 /tmp/filters0 1 2
expect_filters ofitap1 /tmp/filters1 3 1
# Closing an endpoint removes its rules, before its port goes.
if grep -q "dst_port" /tmp/filters-after; then
	cat /tmp/filters-after
	fail "filters left after the endpoints closed"
fi
echo "PASS: rte_flow steering on net_tap"
