#!/bin/bash
# Usage: test_shared_port_hostile.sh SWITCH PEER
#
# A shared port (drivers/net/shared_port.h) among secondaries that stop,
# lie or scribble; PEER (shared_port_peer) plays each of them, through
# net::Port.  dpdk-fi-switch runs three slots.
#   1. A process holds slot 0 and never reads it, while two others send
#      each other a frame per pass, one of them also flooding slot 0 with
#      32 frames per pass: both still receive 2000 frames, since the stopped
#      slot's ring takes at most its share of the flooder's pool.
#   2. Slots 1 and 2 are free, but their owner words name live processes
#      that hold nothing (a pid reused after its holder died): a newcomer
#      gets one of them.
#   3. The live holder of slot 0 seen under a pid that does not exist here
#      (a holder in another pid namespace; its owner word rewritten to a
#      gone pid), slots 1 and 2 held: a newcomer is refused, again after the
#      switch's housekeeping had time to run, and (as root, with unshare) so
#      is a newcomer in a pid namespace of its own, where the holder's real
#      pid does not exist.
#   4. A hostile secondary writes slots 200 and queues_per_slot 0 into the
#      table while two processes are attached: a newcomer is refused and
#      told the table is damaged, the two attached still exchange 2000
#      frames each, and the switch keeps running, then stops on SIGTERM
#      with its report.
# Needs hugepages (secondaries map the primary's memory); skipped without.
set -euo pipefail
SWITCH=$1 PEER=$2
# shellcheck source=pair.sh
source "$(dirname "$0")/pair.sh"

if [ "${OFI_DPDK_HUGEPAGES:-no}" != yes ]; then
	echo "SKIP: DPDK's multi-process model needs hugepages (usertools/dpdk-fi-setup.sh)"
	exit 77
fi
prefix="fiswh$$"
name="h$$"
name=${name:0:11}
hugedir=$(awk '$3 == "hugetlbfs" {print $2; exit}' /proc/mounts)
switch_pid=""
started=()
# (Each command of the trap may fail: errexit would end the trap there.)
# shellcheck disable=SC2154
trap 'cleanup; for p in "${started[@]}" $switch_pid; do kill -9 "$p" 2>/dev/null || true; done
	rm -f "${hugedir:-/nonexistent}/${prefix}"map_* || true
	if [ "$(id -u)" = 0 ]; then rm -rf "/var/run/dpdk/$prefix"; fi' EXIT

start_limited 300 "$WORK/switch.out" "$WORK/switch.err" "$SWITCH" -l 0 --file-prefix "$prefix" \
	--no-pci --no-telemetry --log-level=lib.eal:error -- --name "$name" --processes 3 \
	--ready-file "$WORK/switch.ready"
switch_pid=$STARTED_PID
for _ in $(seq 100); do
	[ -e "$WORK/switch.ready" ] || ! kill -0 "$switch_pid" 2>/dev/null && break
	sleep 0.1
done
[ -e "$WORK/switch.ready" ] || fail "the switch did not come up: $(cat "$WORK/switch.err")"
cat "$WORK/switch.out"

eal() { echo "-l $1 --proc-type=secondary --file-prefix $prefix --no-pci --no-telemetry --log-level=lib.eal:error"; }

# start_peer TAG LCORE ARGS...: a background peer, its output in
# $WORK/TAG.{out,err}; sets STARTED_PID.  wait_ready TAG PID waits for its
# ready file (it holds a slot then).  One at a time: DPDK 22.11 secondaries
# starting together fail now and then (lib/eal/eal_bootstrap.cc).
start_peer() {
	local tag=$1 lcore=$2
	shift 2
	# shellcheck disable=SC2046
	start_limited 120 "$WORK/$tag.out" "$WORK/$tag.err" "$PEER" $(eal "$lcore") -- \
		--name "$name" "$@"
	started+=("$STARTED_PID")
}
wait_ready() {
	local tag=$1 pid=$2
	for _ in $(seq 300); do
		[ -e "$WORK/$tag.ready" ] || ! kill -0 "$pid" 2>/dev/null && break
		sleep 0.1
	done
	[ -e "$WORK/$tag.ready" ] || fail "$tag did not claim a slot: $(cat "$WORK/$tag.err")"
}
# run_peer TAG LCORE ARGS...: a peer in the foreground; sets PEER_RC.
run_peer() {
	local tag=$1 lcore=$2
	shift 2
	set +e
	# shellcheck disable=SC2046
	timeout 60 "$PEER" $(eal "$lcore") -- --name "$name" "$@" >"$WORK/$tag.out" 2>"$WORK/$tag.err"
	PEER_RC=$?
	set -e
}
# A pid that existed and is gone.
gone_pid() {
	sleep 0 &
	local pid=$!
	wait "$pid"
	echo "$pid"
}

# 1. A stopped slot does not absorb the senders' buffers.
start_peer stopped 1 --role hold --ready "$WORK/stopped.ready" --seconds 110
stopped_pid=$STARTED_PID
wait_ready stopped "$stopped_pid"
[ "$(cat "$WORK/stopped.ready")" = 0 ] || fail "the holder got slot $(cat "$WORK/stopped.ready"), not 0"
start_peer a 0 --role exchange --ready "$WORK/a.ready" --start "$WORK/go1" --done "$WORK/a.done" \
	--peer-done "$WORK/b.done" --peer-slot 2 --flood-slot 0 --seconds 60
a_pid=$STARTED_PID
wait_ready a "$a_pid"
start_peer b 1 --role exchange --ready "$WORK/b.ready" --start "$WORK/go1" --done "$WORK/b.done" \
	--peer-done "$WORK/a.done" --peer-slot 1 --seconds 60
b_pid=$STARTED_PID
wait_ready b "$b_pid"
[ "$(cat "$WORK/a.ready") $(cat "$WORK/b.ready")" = "1 2" ] ||
	fail "the exchangers got slots $(cat "$WORK/a.ready") and $(cat "$WORK/b.ready"), not 1 and 2"
touch "$WORK/go1"
set +e
wait "$a_pid"; a_rc=$?
wait "$b_pid"; b_rc=$?
set -e
cat "$WORK/a.out" "$WORK/b.out"
[ "$a_rc" = 0 ] || fail "the flooding process did not receive its 2000 frames (exit $a_rc)"
[ "$b_rc" = 0 ] || fail "the flooder's peer did not receive 2000 frames: the stopped slot took the flooder's pool (exit $b_rc)"
grep -q "over a share [1-9]" "$WORK/a.out" || fail "no frame was dropped over the stopped slot's share"
echo "a slot that never reads holds its share of a sender's pool, no more: the senders kept going"

# 2. Owner words naming live processes that hold nothing.
sleep 120 &
bystander=$!
started+=("$bystander")
run_peer poke1 1 --role poke --slot 1 --pid $$
[ "$PEER_RC" = 0 ] || fail "poke: $(cat "$WORK/poke1.err")"
run_peer poke2 1 --role poke --slot 2 --pid "$bystander"
[ "$PEER_RC" = 0 ] || fail "poke: $(cat "$WORK/poke2.err")"
run_peer claim1 1 --role claim
[ "$PEER_RC" = 0 ] || fail "slots named after live non-holders were not taken over: $(tail -3 "$WORK/claim1.err")"
grep -q "claimed slot [12]" "$WORK/claim1.out" || fail "claimed: $(cat "$WORK/claim1.out")"
echo "owner words naming live processes that hold nothing: $(cat "$WORK/claim1.out")"

# 3. A live holder whose pid the others cannot see keeps its slot.
holders=()
for i in 1 2; do
	start_peer h$i 1 --role hold --ready "$WORK/h$i.ready" --seconds 110
	holders+=("$STARTED_PID")
	wait_ready h$i "$STARTED_PID"
done
run_peer poke0 1 --role poke --slot 0 --pid "$(gone_pid)"
[ "$PEER_RC" = 0 ] || fail "poke: $(cat "$WORK/poke0.err")"
run_peer claim2 1 --role claim
[ "$PEER_RC" != 0 ] || fail "a live holder's slot was taken over for its pid: $(cat "$WORK/claim2.out")"
grep -q "slots of the shared port are held" "$WORK/claim2.err" ||
	fail "the refusal does not say why: $(tail -3 "$WORK/claim2.err")"
# The switch frees the slots of gone holders every 50 ms: give it 20 times
# that to (wrongly) free this one.
sleep 1
run_peer claim3 1 --role claim
[ "$PEER_RC" != 0 ] || fail "the switch freed a live holder's slot: $(cat "$WORK/claim3.out")"
run_peer poke0 1 --role poke --slot 0 --pid "$stopped_pid"
if [ "$(id -u)" = 0 ] && unshare --pid --fork true 2>/dev/null; then
	set +e
	# shellcheck disable=SC2046
	timeout 60 unshare --pid --fork "$PEER" $(eal 1) -- --name "$name" --role claim \
		>"$WORK/claim4.out" 2>"$WORK/claim4.err"
	claim_rc=$?
	set -e
	[ "$claim_rc" != 0 ] ||
		fail "a process in another pid namespace took a live holder's slot: $(cat "$WORK/claim4.out")"
	grep -q "slots of the shared port are held" "$WORK/claim4.err" ||
		fail "the refusal in another pid namespace does not say why: $(tail -3 "$WORK/claim4.err")"
	namespaces=", nor one in a pid namespace of its own"
else
	namespaces=" (no pid namespace case: needs root and unshare)"
fi
echo "a live holder seen under a gone pid keeps its slot: no newcomer or switch took it$namespaces"

# 4. A damaged table: refused by newcomers, harmless to those attached.
# A claimer takes the slot free the longest (SharedPortTable::released)
# and skips one the switch is reaping at that instant: c and d get 1 and 2
# in turn once both are reaped, 1 first.  So the holders die one at a
# time, slot 1's first: killed together, the one whose exit the switch
# saw first was reaped first (on a busy machine, now and then slot 2's).
for slot in 1 2; do
	for i in 1 2; do
		[ "$(cat "$WORK/h$i.ready")" = "$slot" ] || continue
		kill -9 "${holders[i - 1]}"
		wait "${holders[i - 1]}" 2>/dev/null || true
	done
	run_peer freed$slot 1 --role freed --slot "$slot" --seconds 30
	[ "$PEER_RC" = 0 ] || fail "the switch did not free dead holder's slot $slot: $(cat "$WORK/freed$slot.err")"
done
start_peer c 0 --role exchange --ready "$WORK/c.ready" --start "$WORK/go2" --done "$WORK/c.done" \
	--peer-done "$WORK/d.done" --peer-slot 2 --seconds 60
c_pid=$STARTED_PID
wait_ready c "$c_pid"
start_peer d 1 --role exchange --ready "$WORK/d.ready" --start "$WORK/go2" --done "$WORK/d.done" \
	--peer-done "$WORK/c.done" --peer-slot 1 --seconds 60
d_pid=$STARTED_PID
wait_ready d "$d_pid"
[ "$(cat "$WORK/c.ready") $(cat "$WORK/d.ready")" = "1 2" ] ||
	fail "the exchangers got slots $(cat "$WORK/c.ready") and $(cat "$WORK/d.ready"), not 1 and 2"
run_peer corrupt 1 --role corrupt
[ "$PEER_RC" = 0 ] || fail "corrupt: $(cat "$WORK/corrupt.err")"
run_peer claim5 1 --role claim
[ "$PEER_RC" = 1 ] || fail "a newcomer to a damaged table exited $PEER_RC: $(cat "$WORK/claim5.out")"
grep -q "table is damaged" "$WORK/claim5.err" ||
	fail "the newcomer's refusal does not say the table is damaged: $(tail -3 "$WORK/claim5.err")"
touch "$WORK/go2"
set +e
wait "$c_pid"; c_rc=$?
wait "$d_pid"; d_rc=$?
set -e
cat "$WORK/c.out" "$WORK/d.out"
if [ "$c_rc" != 0 ] || [ "$d_rc" != 0 ]; then
	fail "processes attached before the table was damaged stopped (exit $c_rc, $d_rc)"
fi
kill -0 "$switch_pid" 2>/dev/null || fail "the switch died: $(cat "$WORK/switch.err")"
kill -TERM "$switch_pid"
set +e
wait "$switch_pid"
switch_rc=$?
set -e
switch_pid=""
[ "$switch_rc" = 0 ] || fail "the switch exited $switch_rc: $(cat "$WORK/switch.err")"
tail -1 "$WORK/switch.out"
grep -q "over a slot's share" "$WORK/switch.out" || fail "the switch's report has no share drops"
kill -9 "$stopped_pid" "$bystander"
wait "$stopped_pid" "$bystander" 2>/dev/null || true
echo "a damaged table: a newcomer refused ($(grep -o 'table is damaged ([^)]*)' "$WORK/claim5.err" | head -1)), the attached kept exchanging, the switch stopped cleanly"
