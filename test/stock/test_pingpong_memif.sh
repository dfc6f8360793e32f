#!/bin/bash
# Usage: test_pingpong_memif.sh
#
# Unmodified fi_pingpong (libfabric-bin) between two processes joined by
# net_memif, each started through the EAL launcher usertools/dpdk-fi-run.py
# (memif-server / memif-client, --no-huge so no hugepages are needed, one
# lcore each, a socket of its own in a fresh temporary folder):
#   1. fi_pingpong -p dpdk -e rdm -I 1000 -S 64
#   2. fi_pingpong -p dpdk -e rdm -I 10 -S all -c    (every size fi_pingpong
#      knows up to max_msg_size -- its cap is 6 MiB -- with data checks)
#   3. run 2 with -I 2 and FI_DPDK_FAULT_DROP=0.05: 5 % loss each way
#   4. fi_pingpong -p dpdk -e rdm -m tagged -c -S all  (run 2 over fi_tagged:
#      fi_tsend / fi_trecv, with fi_pingpong's default -I 10)
#   5. run 2 with both sides on one shared port (--topology shared, which
#      starts dpdk-fi-switch; hugepages needed, else not run)
# Run 2 takes -I 10: at the ~70 MB/s memif gives without hugepages on a
# two-core box, -I 100 moves some 5 GB and needs over a minute.
# Both sides must exit 0.  The control connection uses a random free TCP
# port in 20000-39999 on 127.0.0.1.
#
# Environment (test/stock/meson.build sets them):
#   FI_PROVIDER_PATH       the build's drivers/ofi, given to the launcher as
#                          --provider-path (its default is <repo>/build)
#   OFI_DPDK_SOURCE_ROOT   the source tree (for usertools/dpdk-fi-run.py)
#
# Every process runs under `timeout`: 15 s for run 1, 40 s for runs 2 and 4,
# 50 s for run 3, so all fit meson's 180 s (an idle two-core box needs ~2 s for
# run 1 and ~9 s for each of the others; a loaded one several times that: both
# sides busy-poll).  On any exit the trap
# stops whatever is still running, by PID, and removes the folder.  Prints both sides' output
# when a run fails.  Exit status: 0 when every run passed, 1 otherwise, 77
# (meson: skipped) when fi_pingpong is not installed.
set -euo pipefail

if ! command -v fi_pingpong >/dev/null; then
	echo "fi_pingpong not found (apt install libfabric-bin): skipped"
	exit 77
fi
: "${FI_PROVIDER_PATH:?set FI_PROVIDER_PATH to the drivers/ofi folder of the build}"
: "${OFI_DPDK_SOURCE_ROOT:?set OFI_DPDK_SOURCE_ROOT to the source tree}"
launcher=$OFI_DPDK_SOURCE_ROOT/usertools/dpdk-fi-run.py
provider_path=$FI_PROVIDER_PATH
# shellcheck source-path=SCRIPTDIR source=sanitizer_preload.sh
source "$(dirname "${BASH_SOURCE[0]}")/sanitizer_preload.sh" "$provider_path"
# The launcher sets what the provider needs; nothing else leaks in.
unset FI_PROVIDER FI_DPDK_EAL_ARGS FI_PROVIDER_PATH

work=$(mktemp -d)
pids=()

# Stops the fi_pingpong pairs still running (their `timeout` PIDs), then
# removes the folder.
cleanup() {
	local pid
	for pid in "${pids[@]}"; do
		# `timeout` forwards the signal to its program.
		kill -TERM "$pid" 2>/dev/null || true
	done
	for pid in "${pids[@]}"; do
		wait "$pid" 2>/dev/null || true
	done
	rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 1' INT TERM

# One lcore per side when the process may use two CPUs.
mapfile -t cpus < <(python3 -c 'import os; print(*sorted(os.sched_getaffinity(0)), sep="\n")')
server_lcore=${cpus[0]}
client_lcore=${cpus[1]:-${cpus[0]}}

# port_listening PORT: true if a TCP socket listens on PORT (IPv4 or IPv6).
port_listening() {
	local hex
	hex=$(printf '%04X' "$1")
	awk -v hex="$hex" '$4 == "0A" { split($2, a, ":"); if (a[2] == hex) found = 1 }
		END { exit !found }' /proc/net/tcp /proc/net/tcp6 2>/dev/null
}

free_port() {
	local port tries
	for tries in $(seq 50); do
		port=$((20000 + RANDOM % 20000))
		port_listening "$port" || { echo "$port"; return 0; }
	done
	echo "no free TCP port found in 20000-39999" >&2
	return 1
}

# show_logs NAME SERVER-STATUS CLIENT-STATUS
show_logs() {
	echo "----- server (exit status $2):"
	sed 's/^/    /' "$work/$1-server.log" | tail -n 40
	echo "----- client (exit status $3):"
	sed 's/^/    /' "$work/$1-client.log" | tail -n 40
	echo "-----"
}

failures=0

# pingpong NAME LIMIT FI_PINGPONG-ARGS...: one server and one client, each
# under `timeout LIMIT`; counts a failure unless both exit 0.
pingpong() {
	local name=$1 limit=$2
	shift 2
	local port socket server client server_status=0 client_status=0 tries
	port=$(free_port)
	socket=$work/$name.sock
	local server_port=(--topology memif-server --socket "$socket" --no-huge)
	local client_port=(--topology memif-client --socket "$socket" --no-huge)
	if [[ -n "${SHARED_PORT:-}" ]]; then
		server_port=(--topology shared --name "$SHARED_PORT" --processes 2)
		client_port=("${server_port[@]}")
	fi
	timeout -k 2 "$limit" python3 "$launcher" "${server_port[@]}" \
		--lcore "$server_lcore" --provider-path "$provider_path" -- \
		"${preload[@]}" fi_pingpong -p dpdk -e rdm "$@" -B "$port" >"$work/$name-server.log" 2>&1 &
	server=$!
	pids+=("$server")
	# The server listens on its control port before it opens the fabric.
	for tries in $(seq 50); do
		port_listening "$port" && break
		kill -0 "$server" 2>/dev/null || break
		sleep 0.1
	done
	timeout -k 2 "$limit" python3 "$launcher" "${client_port[@]}" \
		--lcore "$client_lcore" --provider-path "$provider_path" -- \
		"${preload[@]}" fi_pingpong -p dpdk -e rdm "$@" -P "$port" 127.0.0.1 >"$work/$name-client.log" 2>&1 &
	client=$!
	pids+=("$client")
	wait "$client" || client_status=$?
	wait "$server" || server_status=$?
	pids=()  # both reaped: their PIDs may be reused, never signal them again
	if [[ $server_status -eq 0 && $client_status -eq 0 ]]; then
		echo "ok    fi_pingpong $* (control port $port)"
		tail -n 1 "$work/$name-client.log" | sed 's/^/      last: /'
	else
		echo "FAIL  fi_pingpong $*: server exit $server_status, client exit $client_status" \
			"(124: killed by timeout)"
		show_logs "$name" "$server_status" "$client_status"
		failures=$((failures + 1))
	fi
}

pingpong small 15 -I 1000 -S 64
pingpong all_sizes 40 -I 10 -S all -c
# 3. The same with 5 % of the frames each side receives dropped by the
#    fault injector: the transport repairs every loss, data checks pass.
FI_DPDK_FAULT_DROP=0.05 pingpong lossy 50 -I 2 -S all -c
# 4. Tagged messages, as the issue names the command.
pingpong tagged 40 -m tagged -c -S all
# 5. Both sides on one shared port (hugepages): the launcher starts the
#    switch for the first, each side takes a slot of it.
if [[ "${OFI_DPDK_HUGEPAGES:-no}" == yes ]]; then
	SHARED_PORT="pp$$"
	SHARED_PORT=${SHARED_PORT:0:11}
	pingpong shared 40 -I 10 -S all -c
	switch_pid=$(awk '{print $1; exit}' "/run/ofi-dpdk/switch-$SHARED_PORT.ready" 2>/dev/null || true)
	[[ -n "$switch_pid" ]] && kill "$switch_pid" 2>/dev/null
	rm -f "/run/ofi-dpdk/switch-$SHARED_PORT".{lock,log}
else
	echo "skip  the shared port run (no hugepages)"
fi

if ((failures > 0)); then
	echo "test_pingpong_memif.sh: $failures run(s) failed"
	exit 1
fi
echo "test_pingpong_memif.sh: all runs passed"
