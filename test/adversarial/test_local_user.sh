#!/bin/bash
# Usage: test_local_user.sh BENCH LOCAL_USER
#
# A local user of the server's host against a live pair whose ports take
# the kernel's addresses (the default on net_af_packet): two network
# namespaces joined by a veth pair, the kernel holding 10.69.0.1/24 and
# fd00:69::1/64 on the server's end and 10.69.0.2/24 on the client's,
# dpdk-fi-bench running 4 KiB pingpongs in UDP/IPv4 between them.  In the
# server's namespace, local_user.cc runs as uid 65534 with no capabilities
# (setpriv), as any user of the host could:
#
#   1. it tries to bind every endpoint port 9228..9291 on the server's
#      addresses: the server endpoint's ports are refused (EADDRINUSE), on
#      the wildcard addresses too, and the sockets it did bind receive no
#      datagram in 3 s, while the veth carries the pair's frames; its
#      RESETs and HELLOs in the server's name (with guessed tokens: it saw
#      none) change nothing, and the server's kernel answers none of the
#      pair's frames with a port unreachable.  Both sides still run and
#      still exchange frames after it.
#   2. it takes port 9228 first: a new server's endpoint (any queue) passes
#      it over for queue 1, 9229, and says who holds 9228 (uid 65534).
#
# Skips (exit 77) without root, setpriv or network namespaces.
set -euo pipefail
BENCH=$1
LOCAL_USER=$2
source "$(dirname "$0")/../multiproc/pair.sh"
OTHER=65534

if [ "$(id -u)" != 0 ] || ! command -v ip >/dev/null || ! command -v setpriv >/dev/null; then
	echo "SKIP: needs root, iproute2 and setpriv"
	exit 77
fi
NS_S=ofl$$s
NS_C=ofl$$c
T=ofl$$t
P=ofl$$p
# The other user may not reach the build tree: it runs a copy.
USER_DIR=$(mktemp -d /tmp/ofi-dpdk-local-user.XXXXXX)
chmod 755 "$USER_DIR"
cp "$LOCAL_USER" "$USER_DIR/local_user"
chmod 755 "$USER_DIR/local_user"
SQUATTER=""
teardown() {
	[ -n "$SQUATTER" ] && kill "$SQUATTER" 2>/dev/null || true
	cleanup
	ip netns del "$NS_S" 2>/dev/null || true
	ip netns del "$NS_C" 2>/dev/null || true
	rm -rf "$USER_DIR"
}
trap teardown EXIT
if ! { ip netns add "$NS_S" && ip netns add "$NS_C" &&
	ip link add "$T" netns "$NS_S" type veth peer name "$P" netns "$NS_C"; } 2>/dev/null; then
	echo "SKIP: network namespaces cannot be made here"
	exit 77
fi
in_s() { ip netns exec "$NS_S" "$@"; }
in_c() { ip netns exec "$NS_C" "$@"; }
in_s ip link set lo up
in_c ip link set lo up
in_s ip addr add 10.69.0.1/24 dev "$T"
in_s ip addr add fd00:69::1/64 dev "$T" nodad
in_c ip addr add 10.69.0.2/24 dev "$P"
in_s ip link set "$T" up
in_c ip link set "$P" up

# port_of FILE: the service port of the first name in a bench rendezvous
# file (a sockaddr_in in hex: family, then the port in network order).
port_of() { python3 -c 'import sys; print(int(open(sys.argv[1]).readline()[4:8], 16))' "$1"; }
# snmp NS PROTO FIELD: a counter of the namespace's /proc/net/snmp.
snmp() {
	ip netns exec "$1" awk -v proto="$2:" -v field="$3" \
		'$1 == proto { if (!n) { for (i = 2; i <= NF; i++) col[$i] = i; n = 1 } else print $col[field] }' \
		/proc/net/snmp
}
rx_frames() { in_s cat "/sys/class/net/$T/statistics/rx_packets"; }
alive() { kill -0 "$SERVER_PID" 2>/dev/null && kill -0 "$CLIENT_PID" 2>/dev/null; }

mkdir -p "$WORK/rendezvous"
PAIR_ARGS=(--pattern latency --size 4096 --count 100000000 --timeout 60
	--rendezvous "$WORK/rendezvous")
# shellcheck disable=SC2086
start_limited 100 "$WORK/server.json" "$WORK/server.err" ip netns exec "$NS_S" \
	"$BENCH" -l 0 $EAL_COMMON "--vdev=net_af_packet0,iface=$T" -- --role server "${PAIR_ARGS[@]}"
SERVER_PID=$STARTED_PID
wait_for_server
[ -s "$WORK/rendezvous/server" ] || fail "the server did not publish its name"
SERVER_PORT=$(port_of "$WORK/rendezvous/server")
# shellcheck disable=SC2086
start_limited 100 "$WORK/client.json" "$WORK/client.err" ip netns exec "$NS_C" \
	"$BENCH" -l 1 $EAL_COMMON "--vdev=net_af_packet0,iface=$P" -- --role client "${PAIR_ARGS[@]}"
CLIENT_PID=$STARTED_PID
for _ in $(seq 300); do
	[ -s "$WORK/rendezvous/client" ] && break
	sleep 0.1
done
[ -s "$WORK/rendezvous/client" ] || fail "the client did not publish its name"
CLIENT_PORT=$(port_of "$WORK/rendezvous/client")
echo "server endpoint at 10.69.0.1:$SERVER_PORT, client at 10.69.0.2:$CLIENT_PORT"
# The pair under way: frames keep arriving at the server's end.
before=$(rx_frames)
for _ in $(seq 100); do
	[ $(($(rx_frames) - before)) -ge 1000 ] && break
	alive || break
	sleep 0.1
done
alive || fail "the pair ended before the attack"
[ $(($(rx_frames) - before)) -ge 1000 ] || fail "the pair exchanges no frames"

unreachables=$(snmp "$NS_S" Icmp OutDestUnreachs)
frames=$(rx_frames)
set +e
in_s timeout -k 2 30 setpriv --reuid="$OTHER" --regid="$OTHER" --clear-groups --inh-caps=-all \
	"$USER_DIR/local_user" --server-ip 10.69.0.1 --server-ip6 fd00:69::1 --client-ip 10.69.0.2 \
	--client-port "$CLIENT_PORT" --server-queue $((SERVER_PORT - 9228)) --held "$SERVER_PORT" \
	--listen-ms 3000 --seed "$$"
RC=$?
set -e
frames_during=$(($(rx_frames) - frames))
unreachables_during=$(($(snmp "$NS_S" Icmp OutDestUnreachs) - unreachables))
echo "the server's end received $frames_during frames meanwhile; its kernel sent" \
	"$unreachables_during port unreachables"
[ "$RC" = 0 ] || fail "the local user (uid $OTHER) got the provider's port or frames (exit $RC)"
[ "$frames_during" -ge 1000 ] || fail "the pair exchanged too few frames during the attack to tell"
[ "$unreachables_during" = 0 ] || fail "the server's kernel answered the pair's frames"
alive || fail "the pair ended during the attack (a forged RESET or HELLO took effect)"
frames=$(rx_frames)
sleep 1
alive || fail "the pair ended after the attack"
[ $(($(rx_frames) - frames)) -ge 100 ] || fail "the pair stopped exchanging frames after the attack"
grep -a "error completion\|peer restarted" "$WORK"/*.err && fail "an operation failed"
kill -9 "$SERVER_PID" "$CLIENT_PID" 2>/dev/null || true
wait "$SERVER_PID" "$CLIENT_PID" 2>/dev/null || true
SERVER_PID=""
CLIENT_PID=""
echo "1. uid $OTHER bound none of the endpoint's ports, received nothing, changed nothing"

# 2. The port taken first.
SQUATTED=9228
coproc SQUAT { in_s setpriv --reuid="$OTHER" --regid="$OTHER" --clear-groups --inh-caps=-all \
	"$USER_DIR/local_user" --squat "$SQUATTED" --server-ip 10.69.0.1 2>&1; }
SQUATTER=$SQUAT_PID
read -t 30 -r line <&"${SQUAT[0]}" || fail "the squatter (uid $OTHER) never got ready"
[ "$line" = ready ] || fail "the squatter said: $line"
rm -rf "$WORK/rendezvous"
mkdir -p "$WORK/rendezvous"
# shellcheck disable=SC2086
start_limited 100 "$WORK/server.json" "$WORK/server2.err" env FI_LOG_LEVEL=info FI_LOG_PROV=dpdk \
	ip netns exec "$NS_S" "$BENCH" -l 0 $EAL_COMMON "--vdev=net_af_packet0,iface=$T" -- \
	--role server "${PAIR_ARGS[@]}"
SERVER_PID=$STARTED_PID
wait_for_server
[ -s "$WORK/rendezvous/server" ] || fail "the second server did not publish its name"
second_port=$(port_of "$WORK/rendezvous/server")
kill -9 "$SERVER_PID" 2>/dev/null || true
wait "$SERVER_PID" 2>/dev/null || true
SERVER_PID=""
eval "exec ${SQUAT[1]}>&-"
squat_said=$(cat <&"${SQUAT[0]}" || true)
wait "$SQUATTER" || fail "the squatter failed: $squat_said"
SQUATTER=""
[ "$second_port" = $((SQUATTED + 1)) ] ||
	fail "with $SQUATTED taken by uid $OTHER the server's endpoint took port $second_port, not $((SQUATTED + 1))"
holder=$(grep -a "10.69.0.1:$SQUATTED" "$WORK/server2.err" | head -1)
[[ "$holder" == *"uid $OTHER"* ]] || fail "the server did not say who holds $SQUATTED: ${holder:-nothing}"
echo "2. with $SQUATTED taken first, the server's endpoint took $second_port: ${holder#*<info> }"
