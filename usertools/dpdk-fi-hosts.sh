#!/bin/bash
# Usage: usertools/dpdk-fi-hosts.sh up --ranks N [--hosts K] [--name NAME]
#        usertools/dpdk-fi-hosts.sh down [--name NAME]
#        usertools/dpdk-fi-hosts.sh hostfile [--name NAME]
#        usertools/dpdk-fi-hosts.sh rsh HOST COMMAND...
#
# Test topologies of several ranks on one machine (root needed): a Linux
# bridge NAME-br with one veth per rank, each rank's end for net_af_packet.
#
#   up --ranks N            N veth pairs in this network namespace: the
#                           rank side is NAME<i> (i = 0..N-1, a rank's
#                           local rank), the other side is on the bridge.
#   up --ranks N --hosts K  K "hosts": network namespaces NAME-h0..NAME-h<K-1>
#                           joined by the bridge, N/K ranks each; in host h
#                           the rank interfaces are NAME<j> (j = the local
#                           rank there), and NAME-m carries the host's
#                           address 10.199.0.<h+1>/24 for the job starter
#                           (the bridge has 10.199.0.254).
#   up ... --mtu M          every link of it at MTU M (default 1500): the
#                           rank interfaces, the bridge and, with --hosts,
#                           the hosts' addresses (9000: jumbo frames, which
#                           the launcher gives af_packet ring frames for).
#   down                    removes all of it.
#   hostfile                prints an Open MPI hostfile for the hosts
#                           ("NAME-h<h> slots=<N/K>").
#   rsh HOST COMMAND...     runs COMMAND in host HOST's namespace, with
#                           HOST as its host name: mpirun's --mca
#                           plm_rsh_agent, so it starts its daemons in the
#                           hosts (see doc/getting-started.md).
#
# The ranks then run under the launcher:
#   mpirun -np N usertools/dpdk-fi-run.py --topology af_packet \
#       --iface 'NAME{local_rank}' -- PROGRAM
# Frames carry the provider's EtherType across the bridge; MTU 1500 unless
# --mtu says otherwise.
set -euo pipefail

# shellcheck source-path=SCRIPTDIR source=dpdk_fi_common.sh
source "$(dirname "${BASH_SOURCE[0]}")/dpdk_fi_common.sh"

name=ofidpdk
command=${1:-}
[ -n "$command" ] || die 1 "no command (up, down, hostfile, rsh); see --help"
shift
case "$command" in
-h | --help) usage; exit 0 ;;
rsh)
	# mpirun calls the agent as: AGENT HOST COMMAND...; the namespace is
	# the host, anything else runs here.
	host=$1
	shift
	# Its own host name too: Open MPI names shared-memory files after it,
	# and hosts sharing one would take each other's.
	if ip netns list | awk '{print $1}' | grep -qx "$host"; then
		exec ip netns exec "$host" unshare --uts sh -c "hostname '$host' && $*"
	fi
	exec sh -c "$*"
	;;
esac

ranks=0
hosts=0
mtu=1500
while (($#)); do
	case "$1" in
	--ranks) ranks=$2; shift ;;
	--hosts) hosts=$2; shift ;;
	--name) name=$2; shift ;;
	--mtu) mtu=$2; shift ;;
	*) die 1 "unknown option '$1' (see --help)" ;;
	esac
	shift
done
[[ "$name" =~ ^[a-z][a-z0-9]{0,8}$ ]] || die 1 "--name: 1 to 9 lowercase letters and digits"
bridge="$name-br"

down() {
	local ns
	for ns in $(ip netns list | awk '{print $1}' | grep -E "^$name-h[0-9]+$" || true); do
		ip netns del "$ns"
	done
	local link
	for link in $(ip -o link show | awk -F': ' '{print $2}' | sed 's/@.*//' |
		grep -E "^($name[0-9]+|$name[0-9]+[bx]|$name-m[0-9]+b)$" || true); do
		ip link del "$link" 2>/dev/null || true
	done
	ip link del "$bridge" 2>/dev/null || true
}

case "$command" in
down)
	down
	exit 0
	;;
hostfile)
	count=$(ip netns list | awk '{print $1}' | grep -cE "^$name-h[0-9]+$" || true)
	((count > 0)) || die 1 "no hosts named $name-h*: run 'up --hosts K' first"
	links=$(ip -o link show master "$bridge" | grep -c "$name[0-9]*b" || true)
	per_host=$((links / count))
	for ((h = 0; h < count; h++)); do echo "$name-h$h slots=$per_host"; done
	exit 0
	;;
up) ;;
*) die 1 "unknown command '$command' (see --help)" ;;
esac

[ "$(id -u)" = 0 ] || die 2 "bridges, veths and namespaces need root"
((ranks >= 1 && ranks <= 64)) || die 1 "--ranks wants 1..64"
[[ "$mtu" =~ ^[0-9]+$ ]] && ((mtu >= 1280 && mtu <= 65535)) || die 1 "--mtu wants 1280..65535"
if ((hosts > 0)); then
	((ranks % hosts == 0)) || die 1 "--ranks must be a multiple of --hosts"
fi
# DPDK 22.11's af_packet joins each socket to fanout group (pid ^ ifindex)
# & 0xffff of the interface's namespace, and a group already joined on
# another interface refuses it (EINVAL: the port does not probe).  Ranks
# started one after the other have neighbouring pids; with neighbouring
# ifindexes they would collide.  Rank interfaces get ifindexes 4096 apart
# with equal low 12 bits, so two ranks collide only if their pids differ by
# a multiple of 4096.
rank_ifindex() { echo $((0x100000 + $1 * 0x1000)); }
# add_rank_veth IF PEER RANK: the pair, IF with its rank's ifindex if free.
add_rank_veth() {
	ip link add "$1" index "$(rank_ifindex "$3")" type veth peer name "$2" 2>/dev/null ||
		ip link add "$1" type veth peer name "$2"
}

down
ip link add "$bridge" type bridge
# A bridge forwards our EtherType like any other; no STP delay.
ip link set "$bridge" type bridge stp_state 0 forward_delay 0
ip link set "$bridge" mtu "$mtu" up

if ((hosts == 0)); then
	for ((i = 0; i < ranks; i++)); do
		add_rank_veth "$name$i" "$name${i}b" "$i"
		ip link set "$name${i}b" mtu "$mtu" master "$bridge" up
		ip link set "$name$i" mtu "$mtu" up
	done
	echo "bridge $bridge: ranks' interfaces ${name}0..$name$((ranks - 1))"
	exit 0
fi

# One set of hosts at a time: another bridge with the management subnet
# would take the host's route to it.
other=$(ip -o addr show to 10.199.0.0/24 | awk -v me="$bridge" '$2 != me {print $2; exit}')
if [ -n "$other" ]; then
	down
	die 1 "10.199.0.0/24 is in use on $other (hosts of another name?): remove them first" \
		"('down --name NAME')"
fi
ip addr add 10.199.0.254/24 dev "$bridge"
per_host=$((ranks / hosts))
rank=0
for ((h = 0; h < hosts; h++)); do
	ns="$name-h$h"
	ip netns add "$ns"
	ip netns exec "$ns" ip link set lo up
	# The host's address, for the job starter's own connections.
	ip link add "$name-m${h}b" type veth peer name "$name-m" netns "$ns"
	ip link set "$name-m${h}b" mtu "$mtu" master "$bridge" up
	ip netns exec "$ns" ip addr add "10.199.0.$((h + 1))/24" dev "$name-m"
	ip netns exec "$ns" ip link set "$name-m" mtu "$mtu" up
	for ((j = 0; j < per_host; j++)); do
		# Made here, then moved (keeping its ifindex) and renamed.
		add_rank_veth "$name${rank}x" "$name${rank}b" "$rank"
		ip link set "$name${rank}x" netns "$ns"
		ip netns exec "$ns" ip link set "$name${rank}x" name "$name$j"
		ip link set "$name${rank}b" mtu "$mtu" master "$bridge" up
		ip netns exec "$ns" ip link set "$name$j" mtu "$mtu" up
		rank=$((rank + 1))
	done
done
echo "bridge $bridge: hosts $name-h0..$name-h$((hosts - 1)), $per_host ranks each" \
	"(interfaces ${name}0..$name$((per_host - 1)) in each)"
