#!/bin/bash
# Usage: test_tap_offloads.sh
#
# Checksum offloads on a device that has them (issue 44, item 2): two
# processes, each on a net_tap port, the two tap interfaces on one bridge,
# all in a network namespace of the test's own.  net_tap offers the IPv4
# header and UDP checksums on transmit and receive; the port takes them,
# says so in its log line, and the provider leaves those sums to the device
# (an IPv6 frame's UDP checksum, a pass over the datagram, and the IPv4
# header's).  Stock fi_pingpong by IP address, with its data check (-c):
#   - UDP/IPv4 and UDP/IPv6, offloads on: both pass, the ports' lines list
#     "checksums by the device: IPv4 header (tx, rx), UDP (tx, rx)", and
#     every UDP frame the server took was checked by the device;
#   - UDP/IPv6 with FI_DPDK_OFFLOADS=0: it passes with the provider's own
#     sums, and the device checked none.
# Skips (77) without root, fi_pingpong, /dev/net/tun or namespaces.
set -uo pipefail
if [ "$(id -u)" != 0 ] || ! command -v ip >/dev/null || ! command -v fi_pingpong >/dev/null ||
	[ ! -c /dev/net/tun ]; then
	echo "SKIP: needs root, iproute2, fi_pingpong and /dev/net/tun"
	exit 77
fi
: "${FI_PROVIDER_PATH:?set FI_PROVIDER_PATH to the drivers/ofi folder of the build}"
unset FI_DPDK_EAL_ARGS FI_DPDK_PORT_ADDR FI_DPDK_OFFLOADS
export FI_PROVIDER=dpdk FI_LOG_LEVEL=info FI_LOG_PROV=dpdk FI_LOG_SUBSYS=domain
ns=oftap$$
if ! ip netns add "$ns" 2>/dev/null; then
	echo "SKIP: network namespaces cannot be made here"
	exit 77
fi
work=$(mktemp -d)
cleanup() {
	ip netns pids "$ns" 2>/dev/null | xargs -r kill -KILL 2>/dev/null || true
	ip netns del "$ns" 2>/dev/null || true
	rm -rf "$work"
}
trap cleanup EXIT
in_ns() { ip netns exec "$ns" "$@"; }
in_ns ip link set lo up
in_ns ip link add br0 type bridge
in_ns sysctl -qw net.ipv6.conf.br0.disable_ipv6=1
for tap in tap0 tap1; do
	in_ns ip tuntap add dev "$tap" mode tap multi_queue || {
		echo "SKIP: no multi-queue tap"
		exit 77
	}
	in_ns sysctl -qw "net.ipv6.conf.$tap.disable_ipv6=1"
	in_ns ip link set "$tap" master br0
	in_ns ip link set "$tap" up
done
in_ns ip link set br0 up
# The kernel keeps the server's address on lo for fi_pingpong's control
# connection; the bridge must not answer ARP for it.
in_ns sysctl -qw net.ipv4.conf.all.arp_ignore=1
in_ns ip addr add 10.77.0.1/32 dev lo
in_ns ip addr add fd00:77::1/128 dev lo nodad
mapfile -t cpus < <(python3 -c 'import os; print(*sorted(os.sched_getaffinity(0)), sep="\n")')
server_lcore=${cpus[0]}
client_lcore=${cpus[1]:-${cpus[0]}}
eal="--no-huge -m 512 --no-shconf --no-pci --no-telemetry --log-level=lib.eal:error"
failures=0
fail() {
	echo "FAIL  $*"
	failures=$((failures + 1))
}

# net_tap gives a tap interface its port's MAC (when the port is made, and
# again when it starts); a bridge takes the MACs of its ports as its own
# and would keep frames to them.  While a pair runs, a tap that has its
# port's MAC gets another.
remac() {
	local tap=$1 mac=$2 other=$3
	while [ ! -e "$work/pair-done" ]; do
		if [ "$(in_ns cat "/sys/class/net/$tap/address")" = "$mac" ]; then
			in_ns ip link set "$tap" address "$other"
		fi
		sleep 0.02
	done
}

# run LABEL FAMILY [VAR=VALUE...]: one fi_pingpong pair; its logs in
# $work/LABEL.{server,client}.
run() {
	local label=$1 family=$2 server client prefix
	shift 2
	if [ "$family" = 6 ]; then
		server=fd00:77::1 client=fd00:77::2 prefix=64
	else
		server=10.77.0.1 client=10.77.0.2 prefix=24
	fi
	local six=()
	[ "$family" = 6 ] && six=(-6)
	rm -f "$work/pair-done"
	remac tap0 02:00:00:77:00:01 02:00:00:77:aa:01 &
	remac tap1 02:00:00:77:00:02 02:00:00:77:aa:02 &
	in_ns env "$@" FI_DPDK_PORT_ADDR="net_tap0=$server/$prefix" \
		FI_DPDK_EAL_ARGS="$eal -l $server_lcore --file-prefix ${ns}s \
--vdev=net_tap0,iface=tap0,mac=02:00:00:77:00:01" \
		timeout -k 2 60 fi_pingpong -p dpdk -e rdm -I 200 -S 1024 -c "${six[@]}" \
		>"$work/$label.server" 2>&1 &
	local server_pid=$!
	sleep 2
	in_ns env "$@" FI_DPDK_PORT_ADDR="net_tap0=$client/$prefix" \
		FI_DPDK_EAL_ARGS="$eal -l $client_lcore --file-prefix ${ns}c \
--vdev=net_tap0,iface=tap1,mac=02:00:00:77:00:02" \
		timeout -k 2 60 fi_pingpong -p dpdk -e rdm -I 200 -S 1024 -c "${six[@]}" "$server" \
		>"$work/$label.client" 2>&1
	local client_status=$?
	wait "$server_pid"
	local server_status=$?
	touch "$work/pair-done"
	wait
	if [ "$client_status" != 0 ] || [ "$server_status" != 0 ] ||
		! grep -aq "^1k *200" "$work/$label.client"; then
		fail "$label: fi_pingpong client $client_status, server $server_status:" \
			"$(grep -av "^libfabric" "$work/$label.client" | tail -3)"
		echo "      the server's last lines:"
		tail -12 "$work/$label.server" | sed 's/^/      /'
		return 1
	fi
	echo "ok    $label: $(grep -a "^1k" "$work/$label.client")"
}

# checked LABEL FAMILY: "IN CHECKED" of the server's UDP frames at close.
checked() {
	local what="header checked by the device"
	[ "$2" = 6 ] && what="checksum checked by the device"
	grep -aho "UDP frames in [0-9]* ($what [0-9]*)" "$work/$1.server" |
		sed 's/UDP frames in \([0-9]*\) (.* \([0-9]*\))/\1 \2/'
}

offered="checksums by the device: IPv4 header (tx, rx), UDP (tx, rx)"
for family in 4 6; do
	label=ipv$family
	run "$label" "$family" || continue
	for side in server client; do
		grep -aq "net_tap0: .*$offered" "$work/$label.$side" ||
			fail "$label: the $side's port line lacks '$offered':" \
				"$(grep -a "net_tap0: 1 queue" "$work/$label.$side" | head -1)"
	done
	read -r frames by_device <<<"$(checked "$label" "$family")"
	if [ -z "${frames:-}" ] || [ "$frames" -lt 200 ] || [ "$by_device" != "$frames" ]; then
		fail "$label: of the server's UDP frames (${frames:-none}), the device checked" \
			"${by_device:-none}, not all"
	else
		echo "ok    $label: the device checked all $frames UDP frames the server took"
	fi
done

if run ipv6-own-sums 6 FI_DPDK_OFFLOADS=0; then
	grep -aq "checksums by the device" "$work/ipv6-own-sums.server" &&
		fail "ipv6-own-sums: FI_DPDK_OFFLOADS=0, yet the port took offloads"
	read -r frames by_device <<<"$(checked ipv6-own-sums 6)"
	if [ -z "${frames:-}" ] || [ "$frames" -lt 200 ] || [ "$by_device" != 0 ]; then
		fail "ipv6-own-sums: of ${frames:-no} UDP frames the device checked ${by_device:-?}, not 0"
	else
		echo "ok    ipv6-own-sums: $frames UDP frames, summed by the provider"
	fi
fi
[ "$failures" = 0 ] || exit 1
echo "PASS: checksum offloads on net_tap"
