#!/bin/bash
# Usage: test_af_xdp_hosts.sh
#
# Two hosts (network namespaces joined by a veth pair, 10.196.0.1/24 and
# .2/24), each with stock fi_pingpong (libfabric-bin) on net_af_xdp over its
# end, started by the launcher (--topology af_xdp), the client naming the
# server by its IPv4 address.  fi_pingpong exchanges addresses over a TCP
# connection: it passes only if the kernel still gets its own frames on an
# interface the provider holds through AF_XDP.  Asserts:
#   1. with the provider's XDP program (the launcher's default,
#      drivers/net/xdp/ofi_dpdk_steer.bpf.c), the server's port says so,
#      the kernel answers a ping to the server's address while the server's
#      port is open, and fi_pingpong -I 200 -S 64, then -I 5 -S all -c (every size,
#      data checked), pass; the client's port learned its peer's MAC from
#      the copy of an ARP answer the kernel got (dpdk_neighbour_copies.h);
#   2. with net_af_xdp's own program (--xdp-prog default), which hands the
#      port every frame, the same pingpong does not get through (the
#      kernel never sees the TCP handshake): the test can tell the two;
#   3. at an interface MTU of 3500 on both ends, the ports take it (their
#      line says MTU 3500, where net_af_xdp itself reports 1500) and
#      fi_pingpong -I 5 -S all -c passes in frames of that size;
#   4. at 4000, above what a veth attaches an XDP program at, the server's
#      fi_domain fails with the port's reason naming the MTU, and no
#      process dies of a signal (a failed port open once crashed the
#      provider's close log);
#   5. where fabtests are built, fi_rdm_shared_av, whose client forks into
#      two processes that both open a port on the client's interface: the
#      second goes on af_packet beside the first's af_xdp port (the XDP
#      program passes its queues' UDP to the kernel) and the program
#      passes; it failed before ("XDP program already attached");
#   6. the same with the af_packet process's port opened before the af_xdp
#      one's program attached (the order step 5 meets on a busy machine):
#      stock fi_rdm_pingpong to the af_packet process passes.
# Skips (77) without root, iproute2, fi_pingpong, network namespaces,
# net_af_xdp, an AF_XDP socket on a veth, or a built ofi_dpdk_steer.o.
set -euo pipefail
if [ "$(id -u)" != 0 ] || ! command -v ip >/dev/null || ! command -v fi_pingpong >/dev/null; then
	echo "SKIP: needs root, iproute2 and fi_pingpong"
	exit 77
fi
: "${FI_PROVIDER_PATH:?set FI_PROVIDER_PATH to the drivers/ofi folder of the build}"
: "${OFI_DPDK_SOURCE_ROOT:?set OFI_DPDK_SOURCE_ROOT to the source tree}"
launcher=$OFI_DPDK_SOURCE_ROOT/usertools/dpdk-fi-run.py
provider_path=$FI_PROVIDER_PATH
steer=$(dirname "$provider_path")/net/ofi_dpdk_steer.o
if [ ! -f "$steer" ]; then
	echo "SKIP: no $steer (the build found no clang for the bpf target)"
	exit 77
fi
unset FI_PROVIDER FI_DPDK_EAL_ARGS FI_PROVIDER_PATH FI_DPDK_PORT_ADDR
export FI_LOG_LEVEL=info FI_LOG_PROV=dpdk
name=ofxh$$
server_ns=$name-s client_ns=$name-c
if ! ip netns add "$server_ns" 2>/dev/null; then
	echo "SKIP: network namespaces cannot be made here"
	exit 77
fi
work=$(mktemp -d)
cleanup() {
	ip netns pids "$server_ns" 2>/dev/null | xargs -r kill -KILL 2>/dev/null || true
	ip netns pids "$client_ns" 2>/dev/null | xargs -r kill -KILL 2>/dev/null || true
	ip netns del "$server_ns" 2>/dev/null || true
	ip netns del "$client_ns" 2>/dev/null || true
	rm -rf "$work"
}
trap cleanup EXIT
ip netns add "$client_ns"
ip link add "$name-a" type veth peer name "$name-b"
ip link set "$name-a" netns "$server_ns"
ip link set "$name-b" netns "$client_ns"
ip -n "$server_ns" link set "$name-a" name gate0
ip -n "$client_ns" link set "$name-b" name gate0
ip -n "$server_ns" addr add 10.196.0.1/24 dev gate0
ip -n "$client_ns" addr add 10.196.0.2/24 dev gate0
for ns in "$server_ns" "$client_ns"; do
	ip -n "$ns" link set lo up
	ip -n "$ns" link set gate0 up
done
mapfile -t cpus < <(python3 -c 'import os; print(*sorted(os.sched_getaffinity(0)), sep="\n")')
server_lcore=${cpus[0]}
client_lcore=${cpus[1]:-${cpus[0]}}
failures=0
fail() {
	echo "FAIL  $*"
	failures=$((failures + 1))
}

# pingpong LABEL LIMIT XDP-PROG ARGS...: fi_pingpong on both hosts; leaves
# the exit statuses in server_status and client_status, and the ping's in
# ping_status.
pingpong() {
	local label=$1 limit=$2 program=$3 control=$((20000 + RANDOM % 20000))
	shift 3
	server_status=0 client_status=0 ping_status=0
	timeout -k 2 "$limit" ip netns exec "$server_ns" python3 "$launcher" --topology af_xdp \
		--iface gate0 --xdp-prog "$program" --no-huge --lcore "$server_lcore" \
		--provider-path "$provider_path" -- fi_pingpong -p dpdk -e rdm -B "$control" "$@" \
		>"$work/$label-server.log" 2>&1 &
	local server=$!
	for _ in $(seq 100); do
		ip netns exec "$server_ns" ss -Hltn "sport = :$control" 2>/dev/null | grep -q . && break
		sleep 0.1
	done
	timeout -k 2 "$limit" ip netns exec "$client_ns" python3 "$launcher" --topology af_xdp \
		--iface gate0 --xdp-prog "$program" --no-huge --lcore "$client_lcore" \
		--provider-path "$provider_path" -- fi_pingpong -p dpdk -e rdm -P "$control" "$@" \
		10.196.0.1 >"$work/$label-client.log" 2>&1 &
	local client=$!
	# The server opens its port once the client has connected: the ping
	# goes once the port has said which program it has.
	for _ in $(seq 100); do
		grep -q "XDP program" "$work/$label-server.log" 2>/dev/null && break
		sleep 0.1
	done
	ip netns exec "$client_ns" ping -c 1 -W 2 10.196.0.1 >"$work/$label-ping.log" 2>&1 ||
		ping_status=$?
	wait "$client" || client_status=$?
	wait "$server" || server_status=$?
}
show() {
	local side
	for side in "$@"; do
		echo "----- $side:"
		grep -av "libbpf: elf" "$work/$side.log" | tail -n 25 | sed 's/^/    /'
	done
}

# 1. The provider's XDP program.
pingpong steered 60 "$steer" -I 200 -S 64
refusal="Failed to (create|configure) (xsk|xdp) socket|Failed to load (custom )?XDP prog"
if [ "$server_status" != 0 ] && grep -qE "$refusal" "$work/steered-server.log"; then
	echo "SKIP: no AF_XDP socket on a veth here: $(grep -E "$refusal" "$work/steered-server.log" | head -1)"
	exit 77
fi
if [[ $server_status -eq 0 && $client_status -eq 0 ]]; then
	echo "ok    fi_pingpong -I 200 -S 64 over af_xdp with ofi_dpdk_steer, by IP address"
else
	fail "fi_pingpong -I 200 -S 64 with ofi_dpdk_steer: server exit $server_status, client exit $client_status"
	show steered-server steered-client
fi
grep -q "XDP program ofi_dpdk_steer hands the socket" "$work/steered-server.log" ||
	fail "the server's port did not say the provider's XDP program steers its frames"
if [ "$ping_status" = 0 ]; then
	echo "ok    the kernel answered a ping to the server's address while its port was open"
else
	fail "no answer to a ping while the server's port was open (exit $ping_status)"
fi
grep -qE "neighbours learned [1-9]" "$work/steered-client.log" ||
	fail "the client's port learned no neighbour (the copies of the kernel's ARP frames)"
pingpong steered_all 120 "$steer" -I 5 -S all -c
if [[ $server_status -eq 0 && $client_status -eq 0 ]]; then
	echo "ok    fi_pingpong -I 5 -S all -c (every size, data checked) with ofi_dpdk_steer"
else
	fail "fi_pingpong -I 5 -S all -c with ofi_dpdk_steer: server exit $server_status, client exit $client_status"
	show steered_all-server steered_all-client
fi

# 2. net_af_xdp's own program: the kernel loses its traffic on the link.
pingpong default 10 default -I 20 -S 64
if [[ $client_status -ne 0 ]]; then
	echo "ok    with net_af_xdp's own program fi_pingpong does not get through (client exit $client_status, ping exit $ping_status)"
else
	fail "with net_af_xdp's own program fi_pingpong passed: the test cannot tell the programs apart"
fi
# 3. Larger frames: the interface's MTU, as far as an XDP socket goes.
# (net_af_xdp leaves its XDP program on the interface, and a veth with one
# refuses its peer a larger MTU: off first.)
set_mtu() {
	local ns
	for ns in "$server_ns" "$client_ns"; do ip -n "$ns" link set gate0 xdp off; done
	for ns in "$server_ns" "$client_ns"; do ip -n "$ns" link set gate0 mtu "$1"; done
}
set_mtu 3500
pingpong mtu3500 120 "$steer" -I 5 -S all -c
if [[ $server_status -eq 0 && $client_status -eq 0 ]] &&
	grep -q "net_af_xdp0: .*MTU 3500" "$work/mtu3500-server.log"; then
	echo "ok    at MTU 3500 the ports take it, and fi_pingpong -I 5 -S all -c passes"
else
	fail "at MTU 3500: server exit $server_status, client exit $client_status, port line: $(grep -ao "net_af_xdp0: .*MTU [0-9]*" "$work/mtu3500-server.log" | head -1)"
	show mtu3500-server mtu3500-client
fi

# 4. An MTU a veth takes no XDP program at: a clear refusal, no crash.
set_mtu 4000
pingpong mtu4000 20 "$steer" -I 5 -S 64
if [[ $server_status -ne 0 && $server_status -lt 124 ]] &&
	grep -q "the interface's MTU is 4000: a veth refuses an XDP program" "$work/mtu4000-server.log"; then
	echo "ok    at MTU 4000 the server's fi_domain fails with the port's reason (exit $server_status)"
else
	fail "at MTU 4000: server exit $server_status (want an error, not 0, a timeout or a signal), or no reason naming the MTU"
	show mtu4000-server
fi
set_mtu 1500

# 5. Two processes of one program on one interface.
build_root=$(dirname "$(dirname "$provider_path")")
shared_av=$(ls "$build_root"/fabtests-*/install/bin/fi_rdm_shared_av 2>/dev/null | head -n 1)
if [[ -z $shared_av ]]; then
	echo "note  no fabtests built here (devtools/dpdk-fi-fabtests.sh --build-only): step 5 skipped"
else
	server_status=0 client_status=0
	timeout -k 2 60 ip netns exec "$server_ns" python3 "$launcher" --topology af_xdp \
		--iface gate0 --no-huge --lcore "$server_lcore" --provider-path "$provider_path" -- \
		"$shared_av" -p dpdk -s 10.196.0.1 >"$work/shared_av-server.log" 2>&1 &
	server=$!
	sleep 1
	timeout -k 2 60 ip netns exec "$client_ns" python3 "$launcher" --topology af_xdp \
		--iface gate0 --no-huge --lcore "$client_lcore" --provider-path "$provider_path" -- \
		"$shared_av" -p dpdk -s 10.196.0.2 10.196.0.1 >"$work/shared_av-client.log" 2>&1 ||
		client_status=$?
	wait "$server" || server_status=$?
	if [[ $server_status -eq 0 && $client_status -eq 0 ]] &&
		grep -q "goes on af_packet beside it" "$work/shared_av-client.log"; then
		echo "ok    fi_rdm_shared_av: its second client process went on af_packet beside the first's af_xdp port, and it passed"
	else
		fail "fi_rdm_shared_av over af_xdp: server exit $server_status, client exit $client_status (or no process went on af_packet)"
		show shared_av-server shared_av-client
	fi
fi

# 6. The same two processes, the af_packet one first: a process that left
# the interface's af_xdp port to another (which asked first, and has not
# attached its program yet) opens its port and holds its queue; the af_xdp
# port's program attaches after, with an empty map.  The af_packet port
# must still tell it (it rechecks the program), or the peer's frames to
# its queue go to the af_xdp port's socket.  The first asker is played by
# a lock on the file the provider takes for it (dpdk_init.cc,
# first_af_xdp_of), held while the af_packet process starts.
pingpong_bin=$(dirname "${shared_av:-/nonexistent}")/fi_rdm_pingpong
if [[ -z $shared_av || ! -x $pingpong_bin ]]; then
	echo "note  no fabtests built here: step 6 skipped"
else
	mkdir -p /run/ofi-dpdk
	client_net=$(ip netns exec "$client_ns" stat -L -c %i /proc/self/ns/net)
	python3 -c 'import fcntl, sys, time
f = open(sys.argv[1], "w"); fcntl.flock(f, fcntl.LOCK_EX); print("held", flush=True); time.sleep(120)' \
		"/run/ofi-dpdk/af_xdp-$client_net-gate0.lock" >"$work/asker.log" 2>&1 &
	asker=$!
	for _ in $(seq 50); do grep -q held "$work/asker.log" && break; sleep 0.1; done
	server_status=0 client_status=0
	# The af_packet process: fi_rdm_pingpong's server, queue 0 (UDP 9228).
	timeout -k 2 90 ip netns exec "$client_ns" python3 "$launcher" --topology af_xdp \
		--iface gate0 --no-huge --lcore "$client_lcore" --provider-path "$provider_path" -- \
		"$pingpong_bin" -p dpdk -s 10.196.0.2 -I 100 -S 64 >"$work/first-server.log" 2>&1 &
	server=$!
	for _ in $(seq 200); do
		grep -q "UDP ports" "$work/first-server.log" 2>/dev/null && break
		sleep 0.1
	done
	kill "$asker" 2>/dev/null || true
	wait "$asker" 2>/dev/null || true
	# The late af_xdp port: another server on queue 1 (UDP 9229), never
	# reached; it ends by the timeout.
	timeout -k 2 30 ip netns exec "$client_ns" python3 "$launcher" --topology af_xdp \
		--iface gate0 --no-huge --lcore "$client_lcore" --provider-path "$provider_path" -- \
		"$pingpong_bin" -p dpdk -s 10.196.0.2 -B 9229 >"$work/late-xdp.log" 2>&1 &
	late=$!
	for _ in $(seq 200); do
		grep -q "XDP program" "$work/late-xdp.log" 2>/dev/null && break
		sleep 0.1
	done
	timeout -k 2 60 ip netns exec "$server_ns" python3 "$launcher" --topology af_xdp \
		--iface gate0 --no-huge --lcore "$server_lcore" --provider-path "$provider_path" -- \
		"$pingpong_bin" -p dpdk -s 10.196.0.1 -I 100 -S 64 10.196.0.2 >"$work/first-client.log" 2>&1 ||
		client_status=$?
	wait "$server" || server_status=$?
	kill "$late" 2>/dev/null || true
	wait "$late" 2>/dev/null || true
	if [[ $server_status -eq 0 && $client_status -eq 0 ]] &&
		grep -q "goes on af_packet beside it" "$work/first-server.log" &&
		grep -q "XDP program" "$work/late-xdp.log"; then
		echo "ok    an af_packet port opened before the af_xdp port's program attached still gets its frames: fi_rdm_pingpong -I 100 -S 64 passed"
	else
		fail "af_packet port before the af_xdp program: server exit $server_status, client exit $client_status (or the ports were not af_packet then af_xdp)"
		show first-server late-xdp first-client
	fi
fi
[ "$failures" = 0 ] || exit 1
