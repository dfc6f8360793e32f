#!/bin/bash
# Usage: test_shared_table_other_user.sh SHARED_TABLE_PROBE
#
# Another local user (uid 65534) makes the named AV's object first, with a
# well-formed header whose index 0 is its own port, and holds it open.  We
# (root, who can open any file) must refuse it, writable by others (0666)
# or not (0600), read-write or read-only, name its owner in the reason, and
# leave it where it is.  shared_table_probe.cc is both sides.  Skips (exit
# 77) without root or setpriv.
set -euo pipefail
PROBE=$1
OTHER=65534
[ "$(id -u)" = 0 ] || { echo "SKIP: needs root to run one side as uid $OTHER"; exit 77; }
command -v setpriv >/dev/null || { echo "SKIP: no setpriv (util-linux)"; exit 77; }

NAME="av-other-user-$$"
OBJECT="/dev/shm/fi_dpdk_av.$NAME"
# The other user may not reach the build tree: it runs a copy.
DIR=$(mktemp -d /tmp/ofi-dpdk-other-user.XXXXXX)
chmod 755 "$DIR"
cp "$PROBE" "$DIR/probe"
chmod 755 "$DIR/probe"
MAKER_PID=""
cleanup() {
	[ -n "$MAKER_PID" ] && kill "$MAKER_PID" 2>/dev/null || true
	rm -f "$OBJECT"
	rm -rf "$DIR"
}
trap cleanup EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

for mode in 0666 0600; do
	coproc MAKER { setpriv --reuid="$OTHER" --regid="$OTHER" --clear-groups "$DIR/probe" make "$NAME" "$mode"; }
	MAKER_PID=$MAKER_PID
	read -t 30 -r line <&"${MAKER[0]}" || fail "the maker (uid $OTHER) never got ready"
	[ "$line" = ready ] || fail "the maker said: $line"
	[ "$(stat -c '%u %a' "$OBJECT")" = "$OTHER ${mode#0}" ] || fail "unexpected object: $(stat -c '%u %a' "$OBJECT")"
	for flavour in "" read-only; do
		set +e
		out=$("$PROBE" open "$NAME" $flavour)
		rc=$?
		set -e
		echo "mode $mode ${flavour:-read-write}: $out"
		[ "$rc" = 3 ] || fail "mode $mode ${flavour:-read-write}: expected a refusal (exit 3), got exit $rc: $out"
		[[ "$out" == *"uid $OTHER"* ]] || fail "the reason does not name the owner: $out"
		[[ "$out" == *"mode $mode"* ]] || fail "the reason does not give the mode: $out"
	done
	[ "$(stat -c '%u' "$OBJECT")" = "$OTHER" ] || fail "the other user's object was replaced or removed"
	eval "exec ${MAKER[1]}>&-"
	wait "$MAKER_PID" || fail "the maker failed"
	MAKER_PID=""
done
echo "another user's named AV object is refused, whatever its mode, and left alone"
