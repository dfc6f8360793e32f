# pair.sh: sourced by the two-process tests.  Runs dpdk-fi-bench as a server
# and a client on two EAL ports joined by the caller's topology, with time
# limits, and leaves each side's JSON line and exit status for the caller.
#
# Needs: BENCH (the dpdk-fi-bench binary).  Provides:
#   pair_run SERVER_EAL CLIENT_EAL -- BENCH_ARGS...   (sets SERVER_RC CLIENT_RC,
#                                                      SERVER_OUT CLIENT_OUT)
#   json_field FILE NAME                              (prints a top-level value)
#   wait_for_server                                   (until SERVER_PID publishes)
#   fail MESSAGE                                      (prints, exits 1)

WORK=$(mktemp -d /tmp/ofi-dpdk-pair.XXXXXX)
SERVER_PID=""
CLIENT_PID=""
WATCHDOGS=()
cleanup() {
	[ -n "$SERVER_PID" ] && kill -9 "$SERVER_PID" 2>/dev/null || true
	[ -n "$CLIENT_PID" ] && kill -9 "$CLIENT_PID" 2>/dev/null || true
	for w in "${WATCHDOGS[@]}"; do kill "$w" 2>/dev/null || true; done
	rm -rf "$WORK"
}
trap cleanup EXIT

# start_limited LIMIT OUT ERR CMD...: runs CMD in the background (its own PID
# in $!, so the test can kill the program itself) and kills it after LIMIT s.
start_limited() {
	local limit=$1 out=$2 err=$3
	shift 3
	"$@" >"$out" 2>"$err" &
	local pid=$!
	# The watchdog must not hold the test's stdout open: meson waits for it.
	( exec >/dev/null 2>&1 </dev/null; sleep "$limit"; kill -9 "$pid" ) &
	WATCHDOGS+=("$!")
	STARTED_PID=$pid
}

fail() {
	echo "FAIL: $*" >&2
	for f in "$WORK"/*.err; do [ -f "$f" ] && { echo "--- $f" >&2; tail -20 "$f" >&2; }; done
	exit 1
}

json_field() {
	python3 -c 'import json,sys; print(json.loads(open(sys.argv[1]).read().splitlines()[-1])[sys.argv[2]])' "$1" "$2"
}

# Common EAL options: no hugepages needed, quiet, no PCI scan.
EAL_COMMON="--no-huge -m 512 --no-shconf --no-pci --no-telemetry --log-level=lib.eal:error"

# The client starts once the server's port is up (the server publishes its
# names after fi_enable), so a memif client never meets a socket that is not
# listening yet, however slowly the server's EAL starts.  At most 30 s.
wait_for_server() {
	local waited=0
	while [ ! -e "$WORK/rendezvous/server" ] && [ "$waited" -lt 300 ] &&
		kill -0 "$SERVER_PID" 2>/dev/null; do
		sleep 0.1
		waited=$((waited + 1))
	done
}

pair_run() {
	local server_eal=$1 client_eal=$2
	shift 3
	SERVER_OUT="$WORK/server.json"
	CLIENT_OUT="$WORK/client.json"
	# An earlier pair's names and memif socket are not this server's.
	rm -rf "$WORK/rendezvous" "$WORK/memif.sock"
	mkdir -p "$WORK/rendezvous"
	# shellcheck disable=SC2086
	start_limited "${PAIR_LIMIT:-120}" "$SERVER_OUT" "$WORK/server.err" "$BENCH" -l 0 \
		$EAL_COMMON $server_eal -- --role server --rendezvous "$WORK/rendezvous" "$@"
	SERVER_PID=$STARTED_PID
	# PAIR_CLIENT_AFTER=S: start the client S seconds after the server
	# instead of once the server's port is up (start-up order tests).
	if [ -n "${PAIR_CLIENT_AFTER:-}" ]; then
		sleep "$PAIR_CLIENT_AFTER"
	else
		wait_for_server
	fi
	# shellcheck disable=SC2086
	start_limited "${PAIR_LIMIT:-120}" "$CLIENT_OUT" "$WORK/client.err" "$BENCH" -l 1 \
		$EAL_COMMON $client_eal -- --role client --rendezvous "$WORK/rendezvous" "$@"
	CLIENT_PID=$STARTED_PID
	set +e
	wait "$CLIENT_PID"; CLIENT_RC=$?
	wait "$SERVER_PID"; SERVER_RC=$?
	set -e
	SERVER_PID=""
	CLIENT_PID=""
}

# add_veth_pair A B: a veth pair for two af_packet processes.  DPDK 22.11's
# af_packet joins each socket to fanout group (pid ^ ifindex) & 0xffff, and
# a group already joined on the other end refuses it (EINVAL: the port does
# not probe): a server and a client started one after the other have
# neighbouring pids, and neighbouring ifindexes collide with them now and
# then.  Ends 4096 apart with equal low 12 bits collide only if the pids
# differ by a multiple of 4096 (as usertools/dpdk-fi-hosts.sh does); the
# kernel's own numbers when those are taken.
add_veth_pair() {
	local base=$((0x200000 + ($$ & 0xff) * 0x2000))
	ip link add "$1" index "$base" type veth peer name "$2" index $((base + 0x1000)) 2>/dev/null ||
		ip link add "$1" type veth peer name "$2"
}

# quiet_veth_pair_or_skip A B: a veth pair up for two af_packet processes,
# with no IPv6 chatter on it, removed when the test exits; where none can be
# made (no root, no iproute2) the test is skipped (exit 77).
quiet_veth_pair_or_skip() {
	if [ "$(id -u)" != 0 ] || ! command -v ip >/dev/null || ! add_veth_pair "$1" "$2"; then
		echo "SKIP: cannot create a veth pair here"
		exit 77
	fi
	VETH_END=$1
	trap 'ip link del "$VETH_END" 2>/dev/null || true; cleanup' EXIT
	sysctl -qw "net.ipv6.conf.$1.disable_ipv6=1" "net.ipv6.conf.$2.disable_ipv6=1" 2>/dev/null || true
	ip link set "$1" up
	ip link set "$2" up
}

memif_args() {  # memif_args ROLE [BUFFER]: BUFFER is memif's bsize (default 9216)
	echo "--vdev=net_memif0,role=$1,socket=$WORK/memif.sock,socket-abstract=no,bsize=${2:-9216}"
}
