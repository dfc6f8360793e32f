#!/bin/bash
# Usage: test_av_shared.sh AV_SHARED_PEER
#
# Two processes, each with its own EAL and memif port, open the same named
# AV (fi_av(3) name): the creator inserts, the reader opens it FI_READ and
# finds the creator at the index the creator got (3), sends to that index,
# sees the creator's answer reported by FI_SOURCE as 3, and finds itself at
# the index the creator gave it after the reader had opened (4).
# av_shared_peer.cc checks each step; both must exit 0 by themselves.
# Afterwards the shared-memory object is gone.
set -euo pipefail
PEER=$1
source "$(dirname "$0")/pair.sh"

NAME="multiproc-av-$$"
# A process killed by its time limit leaves the object; remove it then too.
trap 'cleanup; rm -f "/dev/shm/fi_dpdk_av.$NAME"' EXIT
run_side() {  # run_side ROLE MEMIF_ROLE MAC LCORE
	export FI_DPDK_EAL_ARGS="-l $4 $EAL_COMMON $(memif_args "$2"),mac=$3"
	start_limited 60 "$WORK/$1.out" "$WORK/$1.err" "$PEER" --role "$1" --name "$NAME" --dir "$WORK"
}
run_side creator server 02:00:00:00:aa:01 0
SERVER_PID=$STARTED_PID
run_side reader client 02:00:00:00:aa:02 1
CLIENT_PID=$STARTED_PID
set +e
wait "$CLIENT_PID"; reader_rc=$?
wait "$SERVER_PID"; creator_rc=$?
set -e
SERVER_PID=""
CLIENT_PID=""
cat "$WORK/creator.out" "$WORK/reader.out"
[ "$creator_rc" = 0 ] || fail "creator exited $creator_rc (137: killed by the time limit)"
[ "$reader_rc" = 0 ] || fail "reader exited $reader_rc (137: killed by the time limit)"
[ ! -e "/dev/shm/fi_dpdk_av.$NAME" ] || fail "the shared object outlived both processes"
echo "named AV shared by two processes: same indices both ways"
