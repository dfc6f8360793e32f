#!/bin/bash
# Usage: test_router_ipv6.sh
#
# test_router.sh in IPv6: two hosts on different prefixes joined by a
# router (usertools/dpdk-fi-router.sh up --ipv6: no IPv4 at all), each
# process on net_af_packet with its kernel interface's IPv6 address and
# default router, the Linux kernel of a third namespace forwarding.  The
# client names the server by its IPv6 address alone (fi_pingpong -6
# fd00:77:2::2; the control connection crosses the router in the
# kernel's TCP).  Asserts:
#   1. fi_pingpong -I 200 -S 64 and -I 5 -S all -c (every size to 6 MiB,
#      data checked) exit 0 on both sides;
#   2. a frame of ours caught on host b's link is UDP/IPv6 from
#      fd00:77:1::2 to port 9228 + queue, with a UDP checksum, its hop
#      limit one less than the 64 it left with: the router forwarded it;
#   3. fabtests' fi_rdm_pingpong and fi_msg_pingpong in-band across the
#      router (../shared/fabtests, built once by
#      usertools/dpdk-fi-fabtests.sh --build-only).
# Skips (77) without root, iproute2, fi_pingpong or network namespaces.
# Every process runs under `timeout`; the trap removes the namespaces.
set -euo pipefail
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
name=ofi6$$
name=${name:0:9}
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
"$root/usertools/dpdk-fi-router.sh" up --name "$name" --ipv6

mapfile -t cpus < <(python3 -c 'import os; print(*sorted(os.sched_getaffinity(0)), sep="\n")')
server_lcore=${cpus[0]}
client_lcore=${cpus[1]:-${cpus[0]}}
failures=0

# The first of our UDP/IPv6 frames that reaches host b: its source,
# destination port, hop limit and UDP checksum, as "SOURCE PORT HOPS SUM".
cat >"$work/catch.py" <<'PY'
import socket, struct, sys
s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(0x86DD))
s.bind((sys.argv[1], 0))
s.settimeout(60)
while True:
    frame = s.recv(65535)
    ip = frame[14:]
    if len(ip) < 48 or ip[6] != 17:
        continue
    port, checksum = struct.unpack("!H2xH", ip[42:48])
    if 9228 <= port < 9228 + 64:
        print(socket.inet_ntop(socket.AF_INET6, ip[8:24]), port, ip[7], checksum, flush=True)
        break
PY

# pair LABEL LIMIT PROGRAM ARGS...: PROGRAM ARGS in host b (the server),
# PROGRAM ARGS fd00:77:2::2 in host a (the client); fi_pingpong gets -6
# and a control port of its own.  Counts a failure unless both exit 0.
pair() {
	local label=$1 limit=$2 program=$3
	shift 3
	local server client server_status=0 client_status=0 control=$((20000 + RANDOM % 20000))
	local server_args=("$@") client_args=("$@")
	if [[ "$(basename "$program")" == fi_pingpong ]]; then
		server_args+=(-6 -B "$control")
		client_args+=(-6 -P "$control")
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
		sleep 1  # in-band: the client's first frames are resent until the server is up
	fi
	timeout -k 2 "$limit" ip netns exec "$name-a" python3 "$launcher" --topology af_packet \
		--iface "$name-a0" --no-huge --lcore "$client_lcore" \
		--provider-path "$provider_path" -- "${preload[@]}" "$program" "${client_args[@]}" \
		fd00:77:2::2 >"$work/$label-client.log" 2>&1 &
	client=$!
	pids+=("$client")
	wait "$client" || client_status=$?
	wait "$server" || server_status=$?
	pids=()
	if [[ $server_status -eq 0 && $client_status -eq 0 ]]; then
		echo "ok    $(basename "$program") $* across the router in IPv6"
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
pingpong() {
	local label=$1 limit=$2
	shift 2
	pair "$label" "$limit" "$(command -v fi_pingpong)" -p dpdk -e rdm "$@"
}

timeout 90 ip netns exec "$name-b" python3 "$work/catch.py" "$name-b0" >"$work/caught" 2>&1 &
catcher=$!
pingpong small 60 -I 200 -S 64
wait "$catcher" || true
read -r source port hops checksum <"$work/caught" || true
if [[ "${source:-}" == fd00:77:1::2 && "${hops:-}" == 63 && "${checksum:-0}" != 0 ]]; then
	echo "ok    a frame on host b's link: UDP/IPv6 from $source to port $port, hop limit $hops, checksum $checksum"
else
	echo "FAIL  the frame caught on host b's link: '$(cat "$work/caught")' (want fd00:77:1::2 9228+q 63 nonzero)"
	failures=$((failures + 1))
fi
pingpong all_sizes 120 -I 5 -S all -c

if fabtests=$(bash "$root/usertools/dpdk-fi-fabtests.sh" --builddir "${OFI_DPDK_BUILD_ROOT:?}" \
	--build-only 2>&1); then
	bin=$(find "$OFI_DPDK_BUILD_ROOT" -maxdepth 3 -path '*/fabtests-*/install/bin' -type d | head -1)
	pair ft_pingpong 60 "$bin/fi_rdm_pingpong" -p dpdk -S 8 -I 2000
	pair ft_msg_pingpong 60 "$bin/fi_msg_pingpong" -p dpdk -S 1024 -I 1000
else
	echo "FAIL  fabtests could not be built: $(echo "$fabtests" | tail -n 3)"
	failures=$((failures + 1))
fi
((failures == 0))
