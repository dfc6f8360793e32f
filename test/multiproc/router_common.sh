# shellcheck shell=bash
# router_common.sh: sourced by the router tests (test_router.sh, IPv4, and
# test_router_ipv6.sh): their set-up and one stock program run across the
# router.  The caller sets, before sourcing:
#   ROUTER_NAME_PREFIX  the start of the topology's name (made unique here)
#   ROUTER_UP_ARGS      more arguments for dpdk-fi-router.sh up (an array)
#   SERVER_ADDRESS      how the client names host b
#   CLIENT_PORT_ARGS    launcher arguments for the client's port (an array)
#   PINGPONG_ARGS       more arguments for fi_pingpong on both sides (array)
#   FAMILY_NOTE         said after "across the router" in each ok line
# and gets: root, launcher, provider_path, preload (sanitizer_preload.sh),
# name, work, pids, server_lcore, client_lcore, failures, and
#   pair LABEL LIMIT PROGRAM ARGS...   PROGRAM ARGS PAIR_SERVER_ARGS... in
#                                      host b (the server), PROGRAM ARGS
#                                      PAIR_CLIENT_ARGS... SERVER_ADDRESS in
#                                      host a (the client); a failure unless
#                                      both exit 0; logs in $work/LABEL-*.log
#   pair_client_refused LABEL LIMIT REGEX PROGRAM ARGS...
#                                      the same, but the client must fail
#                                      and its log match REGEX (why); the
#                                      server, left waiting, is not judged
#   pingpong LABEL LIMIT ARGS...       pair with fi_pingpong -p dpdk -e rdm
# Skips (77) without root, iproute2, fi_pingpong or network namespaces.
# The trap removes the namespaces and stops what still runs.
if [ "$(id -u)" != 0 ] || ! command -v ip >/dev/null || ! command -v fi_pingpong >/dev/null; then
	echo "SKIP: needs root, iproute2 and fi_pingpong"
	exit 77
fi
: "${FI_PROVIDER_PATH:?set FI_PROVIDER_PATH to the drivers/ofi folder of the build}"
: "${OFI_DPDK_SOURCE_ROOT:?set OFI_DPDK_SOURCE_ROOT to the source tree}"
root=$OFI_DPDK_SOURCE_ROOT
launcher=$root/usertools/dpdk-fi-run.py
provider_path=$FI_PROVIDER_PATH
# shellcheck source-path=SCRIPTDIR source=../stock/sanitizer_preload.sh
source "$(dirname "${BASH_SOURCE[0]}")/../stock/sanitizer_preload.sh" "$provider_path"
unset FI_PROVIDER FI_DPDK_EAL_ARGS FI_PROVIDER_PATH FI_DPDK_PORT_ADDR
name=$ROUTER_NAME_PREFIX$$
name=${name:0:9}
# (A root or container without network namespaces.)
if ! { ip netns add "$name-probe" && ip netns exec "$name-probe" true; } >/dev/null 2>&1; then
	ip netns del "$name-probe" >/dev/null 2>&1 || true
	echo "SKIP: network namespaces cannot be made here"
	exit 77
fi
ip netns del "$name-probe"
work=$(mktemp -d)
pids=()
cleanup() {
	local pid
	for pid in "${pids[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
	for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null || true; done
	"$root/usertools/dpdk-fi-router.sh" down --name "$name" || true
	rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 1' INT TERM
"$root/usertools/dpdk-fi-router.sh" up --name "$name" "${ROUTER_UP_ARGS[@]}"

mapfile -t cpus < <(python3 -c 'import os; print(*sorted(os.sched_getaffinity(0)), sep="\n")')
server_lcore=${cpus[0]}
client_lcore=${cpus[1]:-${cpus[0]}}
failures=0

# run_pair LABEL LIMIT PROGRAM ARGS...: runs the pair; leaves the exit
# statuses in server_status and client_status.
run_pair() {
	local label=$1 limit=$2 program=$3
	shift 3
	local server client control=$((20000 + RANDOM % 20000))
	local server_args=("$@" "${PAIR_SERVER_ARGS[@]}") client_args=("$@" "${PAIR_CLIENT_ARGS[@]}")
	server_status=0 client_status=0
	if [[ "$(basename "$program")" == fi_pingpong ]]; then
		server_args+=("${PINGPONG_ARGS[@]}" -B "$control")
		client_args+=("${PINGPONG_ARGS[@]}" -P "$control")
	fi
	timeout -k 2 "$limit" ip netns exec "$name-b" python3 "$launcher" --topology af_packet \
		--iface "$name-b0" --no-huge --lcore "$server_lcore" \
		--provider-path "$provider_path" -- "${preload[@]}" "$program" "${server_args[@]}" \
		>"$work/$label-server.log" 2>&1 &
	server=$!
	pids+=("$server")
	if [[ "$(basename "$program")" == fi_pingpong ]]; then
		for _ in $(seq 100); do
			ip netns exec "$name-b" ss -Hltn "sport = :$control" 2>/dev/null | grep -q . && break
			sleep 0.1
		done
	else
		# In-band: the client's first frames find the server's endpoint
		# open, or are resent until they do.
		sleep 1
	fi
	timeout -k 2 "$limit" ip netns exec "$name-a" python3 "$launcher" --topology af_packet \
		--iface "$name-a0" "${CLIENT_PORT_ARGS[@]}" --no-huge --lcore "$client_lcore" \
		--provider-path "$provider_path" -- "${preload[@]}" "$program" "${client_args[@]}" \
		"$SERVER_ADDRESS" >"$work/$label-client.log" 2>&1 &
	client=$!
	pids+=("$client")
	wait "$client" || client_status=$?
	wait "$server" || server_status=$?
	pids=()
}
PAIR_SERVER_ARGS=()
PAIR_CLIENT_ARGS=()
pair() {
	local label=$1 program=$3
	run_pair "$@"
	shift 3
	if [[ $server_status -eq 0 && $client_status -eq 0 ]]; then
		echo "ok    $(basename "$program") $* across the router$FAMILY_NOTE"
		tail -n 1 "$work/$label-client.log" | sed 's/^/      last: /'
	else
		echo "FAIL  $(basename "$program") $*: server exit $server_status, client exit $client_status"
		for side in server client; do
			echo "----- $side:"
			tail -n 30 "$work/$label-$side.log" | sed 's/^/    /'
		done
		failures=$((failures + 1))
	fi
}
pair_client_refused() {
	local label=$1 limit=$2 regex=$3 program=$4
	shift 4
	run_pair "$label" "$limit" "$program" "$@"
	local why
	why=$(grep -aE -m 1 "$regex" "$work/$label-client.log" || true)
	if [[ $client_status -ne 0 && -n "$why" ]]; then
		echo "ok    $(basename "$program") $* refused at the client, and said why$FAMILY_NOTE"
		echo "      why: ${why#*<info> }"
	else
		echo "FAIL  $(basename "$program") $*: client exit $client_status, reason '$regex' in its log: ${why:-none}"
		tail -n 30 "$work/$label-client.log" | sed 's/^/    /'
		failures=$((failures + 1))
	fi
}
pingpong() {
	local label=$1 limit=$2
	shift 2
	pair "$label" "$limit" "$(command -v fi_pingpong)" -p dpdk -e rdm "$@"
}
