#!/bin/bash
# Usage: usertools/dpdk-fi-router.sh up [--name NAME] [--mtu N] [--paths 1|2] [--ipv6]
#                                       [--narrow N]
#        usertools/dpdk-fi-router.sh down [--name NAME]
#        usertools/dpdk-fi-router.sh exec [--name NAME] a|b COMMAND...
#
# Two hosts on different subnets joined by a router, on one machine (root
# needed): three network namespaces and two veth pairs.
#
#   NAME-a   host a: interface NAME-a0, 10.77.1.2/24, default route via
#            10.77.1.1
#   NAME-r   the router: NAME-ra 10.77.1.1/24 (to a), NAME-rb 10.77.2.1/24
#            (to b), ip_forward on: the Linux kernel routes, as any router
#   NAME-b   host b: interface NAME-b0, 10.77.2.2/24, default route via
#            10.77.2.1
# Each knows the others by name (/etc/netns/NS/hosts, and no name server).
#
# With --paths 2, two routers and two equal-cost paths between them:
#   NAME-r   to a (NAME-ra 10.77.1.1/24), and to NAME-s over NAME-rp1
#            (10.77.11.1/24) and NAME-rp2 (10.77.12.1/24)
#   NAME-s   to b (NAME-sb 10.77.2.1/24), and to NAME-r over NAME-sp1
#            (10.77.11.2/24) and NAME-sp2 (10.77.12.2/24)
# Each router reaches the far subnet through both links (a multipath
# route), choosing by a hash of addresses and UDP/TCP ports
# (fib_multipath_hash_policy 1, with a fixed seed where the kernel has
# one): frames of one flow take one path, flows spread.
#
# With --ipv6 (one path), the same in IPv6 alone: host a fd00:77:1::2/64,
# the router fd00:77:1::1/64 and fd00:77:2::1/64 (forwarding on), host b
# fd00:77:2::2/64, each host's default route through its router; no
# duplicate address detection (the addresses are usable at once) and no
# IPv4 addresses.
#
# A DPDK program in a host attaches to its interface with net_af_packet
# and owns the same address (dpdk-fi-run.py --topology af_packet --iface
# NAME-a0 --ip 10.77.1.2/24@10.77.1.1); the kernel keeps it too, so that
# an out-of-band control connection (fi_pingpong's, mpirun's) crosses the
# router as well.  Both stacks see every frame: both answer ARP (alike: one
# MAC), and the kernel answers our UDP frames with ICMP port-unreachable,
# rate-limited, which the provider ignores.  Every link has MTU --mtu
# (default 9000; the provider keeps frames to peers beyond the gateway to
# FI_DPDK_ROUTED_MTU, 1500) and no IPv6.
# With --narrow N (one path), the router forwards packets of at most N
# bytes either way (its routes to both subnets say MTU N, locked), as a
# tunnel or a WAN link on the way would: a larger one with DF set is
# dropped and answered with ICMP "fragmentation needed" (IPv6: "packet
# too big") naming N, which path MTU discovery acts on.  Then
#   quiet on|off  makes the router keep those ICMP words to itself (IPv4:
#            a rule sends all ICMP it routes, its own and forwarded, to a
#            blackhole), as a firewall that filters ICMP does: large
#            frames just vanish.
#   exec     runs COMMAND in host a or b, its host name that host's
#            (NAME-a, NAME-b: an MPI job starter there knows itself by it).
#   down     removes all of it.
set -euo pipefail

# shellcheck source-path=SCRIPTDIR source=dpdk_fi_common.sh
source "$(dirname "${BASH_SOURCE[0]}")/dpdk_fi_common.sh"

name=ofirt
mtu=9000
paths=1
ipv6=0
narrow=0
command=${1:-}
[ -n "$command" ] || die 1 "no command (up, down); see --help"
shift
case "$command" in
-h | --help) usage; exit 0 ;;
up | down | exec | quiet) ;;
*) die 1 "unknown command '$command' (see --help)" ;;
esac
while (($#)); do
	case "$1" in
	--name) name=$2; shift ;;
	--mtu) mtu=$2; shift ;;
	--paths) paths=$2; shift ;;
	--ipv6) ipv6=1 ;;
	--narrow) narrow=$2; shift ;;
	*) [[ "$command" = exec || "$command" = quiet ]] && break
		die 1 "unknown option '$1' (see --help)" ;;
	esac
	shift
done
if [ "$command" = exec ]; then
	if (($# < 2)) || [[ ! "$1" =~ ^[ab]$ ]]; then
		die 1 "exec wants a host (a or b) and a command"
	fi
	host="$name-$1"
	shift
	# shellcheck disable=SC2016 # $0 and $@ are the inner shell's
	exec ip netns exec "$host" unshare --uts sh -c 'hostname "$0" && exec "$@"' "$host" "$@"
fi
if [ "$command" = quiet ]; then
	[[ "${1:-}" =~ ^(on|off)$ ]] || die 1 "quiet wants on or off"
	# The rule takes the router's own ICMP (its errors) and any it
	# forwards (a ping across it): neither passes while quiet.
	ip netns exec "$name-r" ip rule del ipproto icmp table 77 2>/dev/null || true
	if [ "$1" = on ]; then
		ip netns exec "$name-r" ip route replace blackhole default table 77
		ip netns exec "$name-r" ip rule add ipproto icmp table 77
	fi
	exit 0
fi
[[ "$name" =~ ^[a-z][a-z0-9]{0,8}$ ]] || die 1 "--name: 1 to 9 lowercase letters and digits"
if [[ ! "$mtu" =~ ^[0-9]+$ ]] || ((mtu < 1280 || mtu > 9000)); then
	die 1 "--mtu wants 1280..9000"
fi
[[ "$paths" =~ ^[12]$ ]] || die 1 "--paths wants 1 or 2"
((ipv6 == 0 || paths == 1)) || die 1 "--ipv6 takes one path"
if [[ ! "$narrow" =~ ^[0-9]+$ ]] || ((narrow != 0 && (narrow < 576 || narrow > mtu))); then
	die 1 "--narrow wants 576..MTU"
fi
((narrow == 0 || paths == 1)) || die 1 "--narrow takes one path"
[ "$(id -u)" = 0 ] || die 2 "namespaces and veths need root"

down() {
	local ns
	for ns in "$name-a" "$name-r" "$name-s" "$name-b"; do
		ip netns del "$ns" 2>/dev/null || true
		rm -rf "/etc/netns/$ns"
	done
}
down
[ "$command" = down ] && exit 0

# run_in NS COMMAND...: runs COMMAND in namespace NS.
run_in() {
	local ns=$1
	shift
	ip netns exec "$ns" "$@"
}
routers=(r)
((paths == 2)) && routers=(r s)
for ns in a "${routers[@]}" b; do
	# `ip netns exec` puts /etc/netns/NS/* over /etc: the hosts know each
	# other by name, and look nothing up elsewhere (a name server out of
	# reach would hold every lookup of a job starter for seconds).
	mkdir -p "/etc/netns/$name-$ns"
	if ((ipv6)); then
		printf '127.0.0.1 localhost\nfd00:77:1::2 %s\nfd00:77:2::2 %s\nfd00:77:1::1 %s\n' \
			"$name-a" "$name-b" "$name-r" >"/etc/netns/$name-$ns/hosts"
	else
		printf '127.0.0.1 localhost\n10.77.1.2 %s\n10.77.2.2 %s\n10.77.1.1 %s\n' \
			"$name-a" "$name-b" "$name-r" >"/etc/netns/$name-$ns/hosts"
	fi
	echo "nameserver 127.0.0.1" >"/etc/netns/$name-$ns/resolv.conf"
	ip netns add "$name-$ns"
	run_in "$name-$ns" sysctl -qw net.ipv6.conf.all.disable_ipv6=$((1 - ipv6)) \
		net.ipv6.conf.default.disable_ipv6=$((1 - ipv6))
	run_in "$name-$ns" ip link set lo up
done
# link NS1 IF1 ADDR1 NS2 IF2 ADDR2: a veth pair between two namespaces.
link() {
	local flags=()
	((ipv6)) && flags=(nodad)
	ip link add "$2" netns "$1" type veth peer name "$5" netns "$4"
	run_in "$1" ip link set "$2" mtu "$mtu" up
	run_in "$1" ip addr add "$3" dev "$2" "${flags[@]}"
	run_in "$4" ip link set "$5" mtu "$mtu" up
	run_in "$4" ip addr add "$6" dev "$5" "${flags[@]}"
}
# host SIDE SUBNET ROUTER: host SIDE's link to its router, on 10.77.SUBNET.0/24.
host() {
	local side=$1 subnet=$2 router=$3
	link "$name-$side" "$name-${side}0" "10.77.$subnet.2/24" \
		"$name-$router" "$name-$router$side" "10.77.$subnet.1/24"
	run_in "$name-$side" ip route add default via "10.77.$subnet.1"
}
if ((ipv6)); then
	for side in a:1 b:2; do
		link "$name-${side%:*}" "$name-${side%:*}0" "fd00:77:${side#*:}::2/64" \
			"$name-r" "$name-r${side%:*}" "fd00:77:${side#*:}::1/64"
		run_in "$name-${side%:*}" ip -6 route add default via "fd00:77:${side#*:}::1"
	done
	run_in "$name-r" sysctl -qw net.ipv6.conf.all.forwarding=1
	if ((narrow)); then
		for side in a:1 b:2; do
			run_in "$name-r" ip -6 route replace "fd00:77:${side#*:}::/64" dev "$name-r${side%:*}" metric 256 \
				mtu lock "$narrow"
		done
		echo "router $name-r forwards packets of $narrow bytes at most"
	fi
	echo "router $name-r: $name-a (fd00:77:1::2/64 on $name-a0) <-> $name-b (fd00:77:2::2/64 on $name-b0), MTU $mtu"
	exit 0
fi
host a 1 r
if ((paths == 1)); then
	host b 2 r
	run_in "$name-r" sysctl -qw net.ipv4.ip_forward=1
	if ((narrow)); then
		for side in a:1 b:2; do
			run_in "$name-r" ip route replace "10.77.${side#*:}.0/24" dev "$name-r${side%:*}" \
				scope link src "10.77.${side#*:}.1" mtu lock "$narrow"
		done
		echo "router $name-r forwards packets of $narrow bytes at most"
	fi
	echo "router $name-r: $name-a (10.77.1.2/24 on $name-a0) <-> $name-b (10.77.2.2/24 on $name-b0), MTU $mtu"
	exit 0
fi
host b 2 s
link "$name-r" "$name-rp1" 10.77.11.1/24 "$name-s" "$name-sp1" 10.77.11.2/24
link "$name-r" "$name-rp2" 10.77.12.1/24 "$name-s" "$name-sp2" 10.77.12.2/24
run_in "$name-r" ip route add 10.77.2.0/24 nexthop via 10.77.11.2 nexthop via 10.77.12.2
run_in "$name-s" ip route add 10.77.1.0/24 nexthop via 10.77.11.1 nexthop via 10.77.12.1
for router in r s; do
	run_in "$name-$router" sysctl -qw net.ipv4.ip_forward=1 net.ipv4.fib_multipath_hash_policy=1
	run_in "$name-$router" sysctl -qw net.ipv4.fib_multipath_hash_seed=1 2>/dev/null || true
done
echo "routers $name-r, $name-s (two paths: $name-rp1/$name-sp1, $name-rp2/$name-sp2):" \
	"$name-a (10.77.1.2/24 on $name-a0) <-> $name-b (10.77.2.2/24 on $name-b0), MTU $mtu"
