#!/bin/bash
# Usage: devtools/dpdk-fi-mpi-compare.sh [--builddir DIR] [--ranks N] [--help]
#
# Open MPI over the dpdk provider against Open MPI's own transports, in one
# sitting, with the same program, dpdk-fi-mpibench (app/mpibench), measuring
# what the MPI benchmark suites measure:
#   2 ranks: pingpong of 0 B, 8 B, 4 KiB, 64 KiB, 1 MiB and 4 MiB, one-way
#            time (median; for 8 B also mean and 99th percentile);
#            bandwidth of 64 KiB, 1 MiB and 4 MiB in windows of 64, one way
#            and both ways; MPI_Alltoall of 64 KiB; one-sided latency (mean,
#            each operation flushed under a passive-target lock) of an 8-byte
#            MPI_Put and MPI_Get, MPI_Accumulate, MPI_Fetch_and_op and
#            MPI_Compare_and_swap of one int64
#   N ranks: MPI_Bcast and MPI_Allreduce of 8 B, 64 KiB and 512 KiB and
#            MPI_Alltoall of 64 KiB per pair (the slowest rank's median time)
#
#   2 ranks on this host
#     dpdk-mtl     pml cm, mtl ofi, provider dpdk, one memif pair (osc pt2pt)
#     dpdk-btl     pml ob1, btl ofi (provider dpdk) and self, one memif pair
#                  (osc rdma: one-sided operations as the provider's RMA)
#     tcp-btl      pml ob1, btl tcp and self (loopback): Open MPI's own tcp
#     rxm-mtl      pml cm, mtl ofi, provider tcp;ofi_rxm (loopback)
#     vader        pml ob1, btl vader and self: shared memory, for scale
#     shared-mtl   pml cm, mtl ofi, provider dpdk, the ranks sharing one port
#                  (dpdk-fi-switch; with hugepages)
#   N ranks (--ranks, default 8), each with a veth on one Linux bridge
#     dpdk-mtl     as above, each rank on net_af_packet
#     shared-mtl   as above
#     tcp-btl      Open MPI's tcp (loopback)
#     rxm-mtl      tcp;ofi_rxm (loopback)
#
# Prints one line per run (the program's JSON) and a table with the best
# dpdk figure of each row (dpdk-mtl, dpdk-btl or shared-mtl) as ratios to
# vader, tcp-btl and rxm-mtl.  One-sided figures need Open MPI 4 (its osc
# pt2pt; Open MPI 5 has none over pml cm).  Needs root for the bridge,
# openmpi-bin, and a build (usertools/dpdk-fi-setup.sh).  Measure on a quiet
# machine; more ranks than CPUs share them and run slowly, for every
# transport alike.  Takes about 3 minutes.
set -euo pipefail

# shellcheck source-path=SCRIPTDIR source=../usertools/dpdk_fi_common.sh
source "$(dirname "${BASH_SOURCE[0]}")/../usertools/dpdk_fi_common.sh"

builddir=build
ranks=8
while (($#)); do
	case "$1" in
	--builddir) builddir=$2; shift ;;
	--ranks) ranks=$2; shift ;;
	-h | --help) usage; exit 0 ;;
	*) die 1 "unknown option '$1' (see --help)" ;;
	esac
	shift
done
builddir=$(abs_builddir "$builddir")
bench="$builddir/app/mpibench/dpdk-fi-mpibench"
[ -x "$bench" ] || die 1 "no $bench: install libopenmpi-dev and run usertools/dpdk-fi-setup.sh"
command -v mpirun >/dev/null || die 1 "no mpirun: apt-get install openmpi-bin"
if ! [[ "$ranks" =~ ^[0-9]+$ ]] || ((ranks < 2)); then die 1 "--ranks wants 2 or more"; fi
export FI_PROVIDER_PATH="$builddir/drivers/ofi"

work=$(mktemp -d /tmp/ofi-dpdk-mpicmp.XXXXXX)
name="mc$$"
name=${name:0:9}
bridge_up=0
cleanup() {
	((bridge_up)) && bash "$DPDK_FI_ROOT/usertools/dpdk-fi-hosts.sh" down --name "$name" >/dev/null 2>&1
	switch_pid=$(awk '{print $1; exit}' "/run/ofi-dpdk/switch-$name.ready" 2>/dev/null || true)
	[ -n "$switch_pid" ] && kill "$switch_pid" 2>/dev/null
	rm -f "/run/ofi-dpdk/switch-$name".{lock,log}
	rm -rf "$work"
}
trap cleanup EXIT

common=(--allow-run-as-root --oversubscribe --bind-to none)
# Ranks that wait yield the CPU (mpi_yield_when_idle) only where the job's
# busy processes outnumber the CPUs, as Open MPI itself decides for a job
# it knows to be oversubscribed: there a spinning rank holds the CPU its
# peer needs; with a CPU each, yielding only adds a system call to every
# wait (2 ranks, 8 B: 1.40 against 2.66 us over the MTL, 0.41 against 0.99
# for vader).  The shared port's switch is one more busy process.
cpus=$(nproc)
# One-sided components chosen so each window's operations take the run's
# transport (left to choose, ranks of one host would take osc sm, which
# takes no MPI_Win_create window; vader's ranks take osc rdma).
declare -A mca=(
	[dpdk-mtl]="--mca pml cm --mca mtl ofi --mca mtl_ofi_provider_include dpdk --mca osc pt2pt"
	[dpdk-btl]="--mca pml ob1 --mca btl ofi,self --mca btl_ofi_mode 2 --mca btl_ofi_provider_include dpdk --mca osc rdma"
	[tcp-btl]="--mca pml ob1 --mca btl tcp,self --mca btl_tcp_if_include lo --mca osc pt2pt"
	[rxm-mtl]="--mca pml cm --mca mtl ofi --mca mtl_ofi_provider_include tcp;ofi_rxm --mca osc pt2pt"
	[vader]="--mca pml ob1 --mca btl vader,self"
	[shared-mtl]="--mca pml cm --mca mtl ofi --mca mtl_ofi_provider_include dpdk --mca osc pt2pt"
)
ompi_major=$(mpirun --version 2>/dev/null | sed -n 's/.*Open MPI) \([0-9]*\)\..*/\1/p' | head -1)
if ((${ompi_major:-4} >= 5)); then
	for what in "${!mca[@]}"; do mca[$what]=${mca[$what]/--mca osc pt2pt/}; done
fi
# What each set measures (dpdk-fi-mpibench's options).
two_ranks=(--collectives '')
((${ompi_major:-4} >= 5)) && two_ranks+=(--rma '')
n_ranks=(--sizes 8 --bandwidth '' --rma '')

# run NAME NP LAUNCH...: one job; its JSON line in $work/NAME-NP.json, or
# NAME-NP-bridge.json for the bridge's runs (with --ranks 2 both sets have
# two ranks, and the table must not take one for the other)
set_name=""
run() {
	local what=$1 np=$2
	shift 2
	local out="$work/$what-$np${set_name:+-$set_name}.json"
	local options=("${two_ranks[@]}") busy=$np yield=()
	[ -n "$set_name" ] && options=("${n_ranks[@]}")
	[ "$what" = shared-mtl ] && busy=$((np + 1))
	((busy > cpus)) && yield=(--mca mpi_yield_when_idle 1)
	# shellcheck disable=SC2086
	if FI_TCP_IFACE=lo timeout --kill-after=10 600 mpirun "${common[@]}" "${yield[@]}" ${mca[$what]} \
		-x FI_PROVIDER_PATH -x FI_TCP_IFACE -np "$np" "$@" "$bench" "${options[@]}" \
		>"$work/log" 2>&1 &&
		grep -a '^{"ranks"' "$work/log" | tail -1 >"$out" && [ -s "$out" ]; then
		printf '%-9s %2d ranks%s: %s\n' "$what" "$np" "${yield:+ (yield when idle)}" "$(cat "$out")"
	else
		printf '%-9s %2d ranks: failed\n' "$what" "$np"
		tail -5 "$work/log" | sed 's/^/    /'
		rm -f "$out"
	fi
}

launcher="$DPDK_FI_ROOT/usertools/dpdk-fi-run.py"
run dpdk-mtl 2 "$launcher" --topology memif --socket "$work/memif.sock" --
run dpdk-btl 2 "$launcher" --topology memif --socket "$work/memif.sock" --
for what in tcp-btl rxm-mtl vader; do run "$what" 2; done
shared=("$launcher" --topology shared --name "$name" --processes "$ranks"
	--switch "$builddir/app/switch/dpdk-fi-switch" --)
huge=$(eal_memory_args "$builddir")
[[ "$huge" == *--in-memory* ]] && run shared-mtl 2 "${shared[@]}"
if [ "$(id -u)" = 0 ]; then
	bash "$DPDK_FI_ROOT/usertools/dpdk-fi-hosts.sh" up --ranks "$ranks" --name "$name" >/dev/null
	bridge_up=1
	set_name=bridge
	run dpdk-mtl "$ranks" "$launcher" --topology af_packet --iface "$name{local_rank}" --
	[[ "$huge" == *--in-memory* ]] && run shared-mtl "$ranks" "${shared[@]}"
	for what in tcp-btl rxm-mtl; do run "$what" "$ranks"; done
else
	echo "(not root: no bridge, no $ranks-rank runs)"
fi

python3 - "$work" "$ranks" <<'EOF'
import json, os, sys
work, ranks = sys.argv[1], sys.argv[2]
def load(what, run_set):  # run_set: "2", or f"{ranks}-bridge" (run's set_name)
    try:
        return json.load(open(os.path.join(work, f"{what}-{run_set}.json")))
    except (OSError, ValueError):
        return None
def size_rows(label, key, sizes, lower, run_set="2"):
    return [(label.format(name), run_set, (lambda d, k=key, n=n: d[k][n]), lower)
            for name, n in sizes]
rows = (size_rows("{} one way (us)", "one_way_us",
                  [("0 B", "0"), ("8 B", "8")], True)
        + [("8 B one way, mean (us)", "2", lambda d: d["one_way_mean_us"]["8"], True),
           ("8 B one way, p99 (us)", "2", lambda d: d["one_way_p99_us"]["8"], True)]
        + size_rows("{} one way (us)", "one_way_us",
                    [("4 KiB", "4096"), ("64 KiB", "65536"), ("1 MiB", "1048576"),
                     ("4 MiB", "4194304")], True)
        + size_rows("bandwidth {}, window 64 (MB/s)", "bandwidth_MBps",
                    [("64 KiB", "65536"), ("1 MiB", "1048576"), ("4 MiB", "4194304")], False)
        + size_rows("bidirectional {} (MB/s)", "bidirectional_MBps",
                    [("64 KiB", "65536"), ("1 MiB", "1048576"), ("4 MiB", "4194304")], False)
        + [("MPI_Put 8 B, mean (us)", "2", lambda d: d["put_us"]["8"], True),
           ("MPI_Get 8 B, mean (us)", "2", lambda d: d["get_us"]["8"], True),
           ("MPI_Accumulate int64, mean (us)", "2", lambda d: d["accumulate_us"], True),
           ("MPI_Fetch_and_op int64, mean (us)", "2", lambda d: d["fetch_and_op_us"], True),
           ("MPI_Compare_and_swap int64, mean (us)", "2", lambda d: d["compare_and_swap_us"], True),
           ("alltoall 64 KiB, 2 ranks (us)", "2", lambda d: d["alltoall_us"], True)]
        + size_rows(f"bcast {{}}, {ranks} ranks (us)", "bcast_us",
                    [("8 B", "8"), ("64 KiB", "65536"), ("512 KiB", "524288")], True,
                    f"{ranks}-bridge")
        + size_rows(f"allreduce {{}}, {ranks} ranks (us)", "allreduce_us",
                    [("8 B", "8"), ("64 KiB", "65536"), ("512 KiB", "524288")], True,
                    f"{ranks}-bridge")
        + [(f"alltoall 64 KiB, {ranks} ranks (us)", f"{ranks}-bridge",
            lambda d: d["alltoall_us"], True)])
dpdk = ["dpdk-mtl", "dpdk-btl", "shared-mtl"]
peers = ["vader", "tcp-btl", "rxm-mtl"]
print("\nfigure | " + " | ".join(dpdk + peers) + " | best dpdk | vs vader | vs tcp-btl | vs rxm-mtl")
print("---|" + "---|" * (len(dpdk) + len(peers)) + "---|---|---|---")
for label, run_set, get, lower in rows:
    values = {}
    for what in dpdk + peers:
        d = load(what, run_set)
        try:
            values[what] = get(d) if d else None
        except (KeyError, TypeError):
            values[what] = None
    ours = [w for w in dpdk if values[w]]
    best = (min if lower else max)(ours, key=lambda w: values[w]) if ours else None
    def ratio(peer):
        a, b = values.get(best) if best else None, values.get(peer)
        if not a or not b:
            return "-"
        return f"{(b / a if lower else a / b):.2f}x"
    cells = ["-" if values[w] is None else f"{values[w]:.2f}" for w in dpdk + peers]
    print(f"{label} | " + " | ".join(cells) + f" | {best or '-'} | "
          + " | ".join(ratio(p) for p in peers))
print("(x: times better than the peer: its time / ours, or our MB/s / its; "
      "'best dpdk' is the row's best of the dpdk columns)")
EOF
