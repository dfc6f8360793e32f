#!/bin/bash
# test_rdm_stress.sh BUILDDIR: fabtests' fi_rdm_stress, its server and 15
# clients (forked by one parent, as the program does) as processes of one
# host on one shared port (the launcher's --topology shared, 16 slots),
# running stress.json: messages, tagged messages, injects, RMA reads and
# writes, and a client leaving with a 10 MB write to it in flight.  The
# parent exits 0 whatever its children did, so the test counts them: every
# client must reach its last op ("exit").  Each wait is 30 s (--timeout)
# instead of the program's 2 s: 16 polling processes share the machine's
# cores, busier still in CI.  Then two rounds of 7 clients:
# the second round's clients start as the first round's leave, and must
# take the slots never used (15 processes, 16 slots), not the ones given
# back a moment ago, whose addresses the server is still finishing with.
# Then three rounds of 8 (24 clients, 16 slots), which must reuse slots:
# the server's fi_av_remove of a client that left must not close the
# connection of the newcomer at its address (Engine::drop_peer leaves a
# connection whose peer restarted after the address was inserted; without
# that, 19 and 23 of 24 clients reached their end).
set -uo pipefail
builddir=$(cd "$1" && pwd)
root=$(cd "$(dirname "$0")/../.." && pwd)
bash "$root/devtools/dpdk-fi-fabtests.sh" --builddir "$builddir" --build-only >/dev/null
status=$?
((status == 0)) || exit "$status"  # 77: no tarballs or tools (skipped)
bin=$(ls -d "$builddir"/fabtests-*/install/bin | head -1)
config=$(ls "$builddir"/fabtests-*/fabtests-*/test_configs/rdm_stress/stress.json | head -1)
export FI_PROVIDER_PATH=$builddir/drivers/ofi
work=$(mktemp -d /tmp/ofi-dpdk-rdm-stress.XXXXXX)
server_pid=
# Each run on a shared port of its own (a fresh switch, so that the
# server, started first, has slot 0 and the default service, queue 0),
# stopped when the run ends rather than left to linger: the next switch,
# and the tests after this one, want its hugepages.
name=
stop_switch() {
	local ready=/run/ofi-dpdk/switch-$name.ready pid
	[[ -f "$ready" ]] || return 0
	read -r pid _ <"$ready" || return 0
	kill -TERM "$pid" 2>/dev/null || return 0
	for ((i = 0; i < 100; i++)); do
		kill -0 "$pid" 2>/dev/null || return 0
		sleep 0.1
	done
}
finish() {
	[[ -n "$server_pid" ]] && kill "$server_pid" 2>/dev/null && wait "$server_pid" 2>/dev/null
	[[ -n "$name" ]] && stop_switch
	rm -rf "$work"
}
trap finish EXIT

# run TAG CLIENTS ROUNDS: one server, CLIENTS clients ROUNDS times.
run() {
	local tag=$1 clients=$2 rounds=$3 address=127.0.77.1
	name=rs${tag:0:1}$$
	python3 "$root/usertools/dpdk-fi-run.py" --topology shared --name "$name" --processes 16 \
		--ip "$address/24" -- "$bin/fi_rdm_stress" -p dpdk -s "$address" -C "$clients" --timeout 30 \
		>"$work/$tag-server.log" 2>&1 &
	server_pid=$!
	for ((i = 0; i < 200; i++)); do
		grep -q "Starting rpc stress server" "$work/$tag-server.log" && break
		kill -0 "$server_pid" 2>/dev/null || break
		sleep 0.1
	done
	timeout 240 python3 "$root/usertools/dpdk-fi-run.py" --topology shared --name "$name" \
		--processes 16 --ip "$address/24" -- stdbuf -oL -eL "$bin/fi_rdm_stress" -p dpdk \
		-u "$config" -C "$clients" -I "$rounds" --timeout 30 "$address" >"$work/$tag-clients.log" 2>&1
	local client_status=$?
	kill "$server_pid" 2>/dev/null
	wait "$server_pid" 2>/dev/null
	server_pid=
	stop_switch
	name=
	local done_count
	done_count=$(grep -c "rpc op exit" "$work/$tag-clients.log")
	echo "$tag: $clients clients x $rounds rounds: $done_count reached their last op" \
		"(client parent exit $client_status)"
	if ((client_status != 0 || done_count != clients * rounds)); then
		echo "--- clients' output (the ops of those that stopped short) ---"
		grep -v "rpc op" "$work/$tag-clients.log" | tail -40
		return 1
	fi
}

failed=0
run once 15 1 || failed=1
run rounds 7 2 || failed=1
run reuse 8 3 || failed=1
exit "$failed"
