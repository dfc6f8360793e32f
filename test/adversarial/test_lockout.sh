#!/bin/bash
# Usage: test_lockout.sh LOCKOUT_PEER ADVERSARY
#
# The held-segment lock-out (issue 42's finding 0, first met in issue 24):
# a target endpoint over net_af_packet on one end of a veth pair, a client
# on the other end, and the adversary beside the client.  The client
# measures how fast the target takes its 64 KiB messages; then more
# stations than the target has places for (4096 + 64) each complete a
# handshake, park one byte ahead of a gap and fall silent, while the client
# keeps talking; then the client measures again, on its own endpoint and on
# a new one.  Passes when the target sent the silent stations little
# (adversary_parking.cc held_lockout), both rates after hold (below; the
# best of three tries before, five after: a busy machine's moment takes
# from a try, never adds), and the target's memory is within 32 MB of where
# it was.
#
# The rates after are measured against a control: the same two processes
# serve a second pair of endpoints on a second veth pair the adversary
# never touches, and the client measures it in turn with the attacked pair
# (the target serving the measured one alone, so a cost the attack left in
# the attacked port's passes is not paid by the control's tries). Without
# an attack the two lanes are the same path, so the control beside a look
# is what the attacked endpoint's peers would get in that moment of the
# machine. Each rate after must be at least half the control's beside it,
# and at least a tenth of the rate before (a cost the attack left to the
# whole process would slow the control too). Against the rate before alone
# the test measured the machine: a compile beside it moved the bare ratio
# to 24-51 % with no attack held, 27 % even with the pair at nice -15 (the
# kernel's half of af_packet runs where the load is), while the lanes of
# one look after the attack stayed within 20 % of each other. The lock-out
# left 4-6 %; a 300 us stall added to each pass of the attacked port after
# the attack read 29 %. The issue asks 70 % of the rate before: on a quiet
# machine the rates after are 96-121 % of it (doc/performance.md). The
# target and the client run ahead of other work (nice -15, each on its own
# lcore); the adversary keeps normal priority: what it does is state, not
# speed. Skips (exit 77) where veth pairs cannot be made.
set -euo pipefail
PEER=$1
ADVERSARY=$2
source "$(dirname "$0")/../multiproc/pair.sh"

T=ofl$$t
P=ofl$$p
CT=ofl$$ct
CP=ofl$$cp
quiet_veth_pair_or_skip "$CT" "$CP"
quiet_veth_pair_or_skip "$T" "$P"
trap 'ip link del "$T" 2>/dev/null || true; ip link del "$CT" 2>/dev/null || true; cleanup' EXIT

STATIONS=${LOCKOUT_STATIONS:-4160}
MIN_SHARE=0.50
MIN_BARE_SHARE=0.10
RSS_GROWTH_LIMIT_KB=$((32 << 10))
if [ -n "${ASAN_OPTIONS:-}${TSAN_OPTIONS:-}" ]; then
	RSS_GROWTH_LIMIT_KB=$((4 << 20))
	echo "note: under a sanitizer: the target's memory is not bounded by this test"
fi
DIR=$WORK/rendezvous
mkdir -p "$DIR"
# shellcheck disable=SC2086
start_limited 240 "$WORK/target.json" "$WORK/target.err" nice -n -15 "$PEER" -l 0 $EAL_COMMON \
	"--vdev=net_af_packet0,iface=$T" "--vdev=net_af_packet1,iface=$CT" -- --role target --rendezvous "$DIR" --limit 230
SERVER_PID=$STARTED_PID
wait_for_server
[ -e "$DIR/server" ] || fail "the target did not start"
# shellcheck disable=SC2086
start_limited 240 "$WORK/client.json" "$WORK/client.err" nice -n -15 "$PEER" -l 1 $EAL_COMMON \
	"--vdev=net_af_packet0,iface=$P" "--vdev=net_af_packet1,iface=$CP" -- --role client --rendezvous "$DIR" --limit 230
CLIENT_PID=$STARTED_PID
for _ in $(seq 600); do
	[ -e "$DIR/before" ] && break
	kill -0 "$CLIENT_PID" 2>/dev/null || fail "the client ended before it measured"
	sleep 0.1
done
[ -e "$DIR/before" ] || fail "the client did not measure within 60 s"
rss_kb() { awk '/^VmRSS:/ {print $2}' "/proc/$1/status"; }
RSS_BEFORE=$(rss_kb "$SERVER_PID")

set +e
"$ADVERSARY" --iface "$P" --rendezvous "$DIR" --target-pid "$SERVER_PID" --cases held_lockout \
	--stations "$STATIONS" --seed "$$" --rss-limit-kb $((1 << 20))
RC=$?
set -e
touch "$DIR/attack-done"
# For diagnosis: LOCKOUT_PERF=FILE samples the target while the client
# measures after the attack.
if [ -n "${LOCKOUT_PERF:-}" ]; then
	perf record -e cpu-clock -g -p "$SERVER_PID" -o "$LOCKOUT_PERF" >/dev/null 2>&1 &
	PERF_PID=$!
fi
set +e
wait "$CLIENT_PID"
CLIENT_RC=$?
[ -n "${LOCKOUT_PERF:-}" ] && { kill -INT "$PERF_PID"; wait "$PERF_PID"; }
set -e
CLIENT_PID=""
RSS_AFTER=$(rss_kb "$SERVER_PID")
touch "$DIR/stop"
cat "$WORK/client.json"
[ "$RC" = 0 ] || fail "adversary exited $RC"
[ "$CLIENT_RC" = 0 ] || fail "the client exited $CLIENT_RC"
GROWN=$((RSS_AFTER - RSS_BEFORE))
echo "target resident: $RSS_BEFORE kB before the attack, $RSS_AFTER kB after the client's second look ($GROWN kB)"
[ "$GROWN" -le "$RSS_GROWTH_LIMIT_KB" ] || fail "the target kept $GROWN kB after the attack"
python3 - "$WORK/client.json" "$MIN_SHARE" "$MIN_BARE_SHARE" <<'PY' || fail "the target serves its peers slower after the attack"
import json, sys
rates = json.loads(open(sys.argv[1]).read().splitlines()[-1])
floor, bare_floor = float(sys.argv[2]), float(sys.argv[3])
before, before_control = rates["before_MBps"], rates["before_control_MBps"]
after_control = rates["after_control_MBps"]
print(f"control: {before_control:.1f} MB/s beside the look before, {after_control:.1f} beside the look after")
ok = before > 0 and after_control > 0
for name in ("after_old_MBps", "after_new_MBps"):
    bare = rates[name] / before if before > 0 else 0
    share = rates[name] / after_control if after_control > 0 else 0
    print(f"{name}: {rates[name]:.1f} MB/s, {100 * share:.0f} % of the control beside it, "
          f"{100 * bare:.0f} % of {before:.1f} before")
    ok &= share >= floor and bare >= bare_floor
sys.exit(0 if ok else 1)
PY
echo "the target served its old and new peers after the attack"
