#!/bin/bash
# Usage: test_shared_port.sh SWITCH BENCH AV_SHARED_PEER LOCK_HOLDER
#
# Processes of one host sharing one port through DPDK's multi-process model
# (drivers/net/shared_port.h): dpdk-fi-switch is the primary and owns a
# net_ring port with two queue pairs; every other process is a secondary of
# its file prefix that claims a queue pair through the provider.
#   1. Two processes hold both slots; a third is refused with a log line
#      saying so.  Both are then killed: their slots stay claimed by dead
#      processes.
#   2. A new pair takes the dead processes' slots over and sends 2000
#      messages of 1 B to 1 MiB (rendezvous included) once, in order,
#      byte-exact.
#   3. The stock fork pattern: one program forks before its first fi_*
#      call, the parent creates a named AV, the child opens it FI_READ, and
#      they talk through it (av_shared_peer --role fork).
#   4. An IPv4 address on the shared port: stock fi_info gets the native
#      format, a peer on the subnet, and no peer beyond the gateway (the
#      switch passes our EtherType alone, never UDP), with the reason logged.
#   5. The switch stops on SIGTERM, reports what it forwarded, and leaves no
#      hugepage files or runtime directory behind.
#   6. A second switch whose secondary died holding EAL's memory lock (as a
#      process killed during its EAL start-up does) still stops on SIGTERM,
#      at its 10 s cleanup limit, saying why, and leaves nothing behind.
# Needs hugepages (secondaries map the primary's memory); skipped without.
set -euo pipefail
SWITCH=$1 BENCH=$2 PEER=$3 LOCK_HOLDER=$4
source "$(dirname "$0")/pair.sh"

if [ "${OFI_DPDK_HUGEPAGES:-no}" != yes ]; then
	echo "SKIP: DPDK's multi-process model needs hugepages (usertools/dpdk-fi-setup.sh)"
	exit 77
fi
prefix="fisw$$"
name="t$$"
name=${name:0:11}
hugedir=$(awk '$3 == "hugetlbfs" {print $2; exit}' /proc/mounts)
switch_pid=""
av_name="multiproc-shared-$$"
trap 'cleanup; [ -n "$switch_pid" ] && kill -9 "$switch_pid" 2>/dev/null;
	rm -f "${hugedir:-/nonexistent}/${prefix}"map_* "${hugedir:-/nonexistent}/${prefix}b"map_*
	rm -f "/dev/shm/fi_dpdk_av.$av_name"
	[ "$(id -u)" = 0 ] && rm -rf "/var/run/dpdk/$prefix" "/var/run/dpdk/${prefix}b"' EXIT

# start_switch LIMIT FILE_PREFIX NAME TAG: a switch of two slots, its output
# in $WORK/TAG.{out,err}; sets switch_pid once it is ready.
start_switch() {
	local limit=$1 file_prefix=$2 switch_name=$3 tag=$4
	start_limited "$limit" "$WORK/$tag.out" "$WORK/$tag.err" "$SWITCH" -l 0 \
		--file-prefix "$file_prefix" --no-pci --no-telemetry --log-level=lib.eal:error -- \
		--name "$switch_name" --processes 2 --ready-file "$WORK/$tag.ready"
	switch_pid=$STARTED_PID
	for _ in $(seq 100); do
		[ -e "$WORK/$tag.ready" ] || ! kill -0 "$switch_pid" 2>/dev/null && break
		sleep 0.1
	done
	[ -e "$WORK/$tag.ready" ] || fail "the switch ($tag) did not come up: $(cat "$WORK/$tag.err")"
}

start_switch 300 "$prefix" "$name" switch
cat "$WORK/switch.out"
secondary="--proc-type=secondary --file-prefix $prefix --no-pci --no-telemetry --log-level=lib.eal:error"

# 1. Both slots held by live processes: a third process is turned away.
mkdir -p "$WORK/rv1" "$WORK/rv2" "$WORK/rv3"
holders=()
for i in 1 2; do
	# shellcheck disable=SC2086
	start_limited 60 "$WORK/holder$i.json" "$WORK/holder$i.err" "$BENCH" -l $((i - 1)) \
		$secondary -- --role server --rendezvous "$WORK/rv$i" --pattern mixed --count 10 \
		--timeout 30
	holders+=("$STARTED_PID")
	for _ in $(seq 100); do [ -e "$WORK/rv$i/server" ] && break; sleep 0.1; done
	[ -e "$WORK/rv$i/server" ] || fail "holder $i did not open its endpoint"
done
set +e
# shellcheck disable=SC2086
FI_LOG_LEVEL=warn timeout 60 "$BENCH" -l 1 $secondary -- --role server --rendezvous "$WORK/rv3" --pattern mixed \
	--count 10 --timeout 5 >"$WORK/third.json" 2>"$WORK/third.err"
third_rc=$?
set -e
[ "$third_rc" != 0 ] || fail "a third process got a port whose two slots were held"
grep -q "slots of the shared port are held" "$WORK/third.err" ||
	fail "the third process's refusal does not say why: $(tail -5 "$WORK/third.err")"
echo "two slots held: a third process is refused ($(grep -o 'all 2 slots[^(]*' "$WORK/third.err" | head -1))"
kill -9 "${holders[@]}"
wait "${holders[@]}" 2>/dev/null || true

# 2. A pair takes the dead holders' slots and streams byte-exact.
EAL_COMMON=$secondary
pair_run "" "" -- --pattern mixed --count 2000 --max-size 1048576 --window 32 --timeout 60
[ "$CLIENT_RC" = 0 ] || fail "client exited $CLIENT_RC"
[ "$SERVER_RC" = 0 ] || fail "server exited $SERVER_RC"
[ "$(json_field "$SERVER_OUT" messages)" = 2000 ] || fail "server did not receive 2000 messages"
[ "$(json_field "$SERVER_OUT" ok)" = True ] || fail "server found a bad message"
echo "slots of killed processes taken over; 2000 messages of 1 B to 1 MiB once, in order, byte-exact"

# 3. Fork before the first fi_* call; a named AV shared by parent and child.
set +e
FI_DPDK_EAL_ARGS="-l 1 $secondary" timeout 90 "$PEER" --role fork --name "$av_name" \
	--dir "$WORK" >"$WORK/fork.out" 2>"$WORK/fork.err"
fork_rc=$?
set -e
cat "$WORK/fork.out"
[ "$fork_rc" = 0 ] || fail "forked named-AV program exited $fork_rc: $(tail -5 "$WORK/fork.err")"
echo "a program forked before fi_getinfo: parent and child share a named AV over one port"

# 4. An IPv4 address on the shared port (FI_DPDK_PORT_ADDR).  Its switch
# passes our EtherType alone, so stock fi_info hears no UDP: the native
# address format, a peer on the subnet offered (ARP, our EtherType), a peer
# beyond the gateway (which only UDP reaches) turned down, saying why.
if ! command -v fi_info >/dev/null; then
	echo "note: no fi_info (libfabric-bin): the address on a shared port is not checked"
else
	shared_info() {  # shared_info OUT fi_info-arguments...
		local out=$1
		shift
		FI_DPDK_PORT_ADDR=10.213.0.1/24@10.213.0.254 FI_DPDK_ENCAP=udp FI_LOG_LEVEL=info \
			FI_LOG_PROV=dpdk FI_DPDK_EAL_ARGS="-l 1 $secondary" timeout 60 fi_info -p dpdk \
			-t FI_EP_RDM "$@" >"$out" 2>&1
	}
	shared_info "$WORK/info-any.out" -v || fail "fi_info on the shared port: $(tail -3 "$WORK/info-any.out")"
	grep -q "addr_format: FI_FORMAT_UNSPEC" "$WORK/info-any.out" ||
		fail "a shared port with an address answered in another format: $(grep addr_format "$WORK/info-any.out")"
	shared_info "$WORK/info-near.out" -n 10.213.0.7 -v ||
		fail "a peer on the shared port's subnet was not offered: $(tail -3 "$WORK/info-near.out")"
	grep -q "addr_format: FI_SOCKADDR_IN" "$WORK/info-near.out" ||
		fail "a peer named by address got no FI_SOCKADDR_IN answer"
	if shared_info "$WORK/info-far.out" -n 10.214.0.9; then
		fail "a peer beyond the gateway was offered on a shared port"
	fi
	grep -q "a shared port carries our EtherType only" "$WORK/info-far.out" ||
		fail "the refusal does not say why: $(grep -a 'passed over' "$WORK/info-far.out" | tail -2)"
	echo "an address on a shared port: native format, a peer on the subnet offered, none beyond the gateway"
fi

# 5. The switch stops when told, and cleans up after itself.
kill -TERM "$switch_pid"
set +e
wait "$switch_pid"
switch_rc=$?
set -e
switch_pid=""
[ "$switch_rc" = 0 ] || fail "the switch exited $switch_rc: $(cat "$WORK/switch.err")"
grep -q "forwarded [0-9]* frames" "$WORK/switch.out" || fail "the switch did not report"
tail -1 "$WORK/switch.out"
if [ -n "$hugedir" ] && compgen -G "$hugedir/${prefix}map_*" >/dev/null; then
	fail "the switch left hugepage files in $hugedir"
fi
# (EAL's runtime directory is memory: each run would keep megabytes.)
[ "$(id -u)" != 0 ] || [ ! -e "/var/run/dpdk/$prefix" ] ||
	fail "the switch left its runtime directory /var/run/dpdk/$prefix"

# 6. A secondary dies holding EAL's memory lock; the switch stops anyway.
start_switch 120 "${prefix}b" "${name:0:10}b" switch2
set +e
timeout 60 "$LOCK_HOLDER" -l 1 --proc-type=secondary --file-prefix "${prefix}b" --no-pci --no-telemetry \
	--log-level=lib.eal:error >"$WORK/holder.out" 2>&1
holder_rc=$?
set -e
[ "$holder_rc" = 137 ] || fail "the lock holder did not die by SIGKILL ($holder_rc): $(cat "$WORK/holder.out")"
kill -TERM "$switch_pid"
for _ in $(seq 300); do kill -0 "$switch_pid" 2>/dev/null || break; sleep 0.1; done
kill -0 "$switch_pid" 2>/dev/null && fail "the switch did not stop within 30 s of SIGTERM"
set +e
wait "$switch_pid"
switch_rc=$?
set -e
switch_pid=""
# (DPDK 22.11's cleanup waits for the memory lock: the limit is what ends it.)
grep -q "cleanup did not finish" "$WORK/switch2.err" ||
	fail "the switch stopped (exit $switch_rc) without its cleanup limit: $(cat "$WORK/switch2.err")"
if [ -n "$hugedir" ] && compgen -G "$hugedir/${prefix}bmap_*" >/dev/null; then
	fail "the second switch left hugepage files in $hugedir"
fi
[ "$(id -u)" != 0 ] || [ ! -e "/var/run/dpdk/${prefix}b" ] ||
	fail "the second switch left its runtime directory /var/run/dpdk/${prefix}b"
echo "a switch whose secondary died holding EAL's memory lock stopped (exit $switch_rc)"
echo "shared port: slots, takeover, streaming, the fork pattern and a held memory lock passed"
