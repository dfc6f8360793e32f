#!/bin/bash
# Usage: devtools/dpdk-fi-compare.sh [--builddir DIR] [--json FILE] [--quick]
#                                    [--providers "dpdk shm tcp;ofi_rxm"]
#                                    [--only FIGURE[,FIGURE...]] [--repeat N]
#                                    [--stock | --no-stock | --stock-only] [--help]
#
# Measures the dpdk provider against libfabric's shm and tcp;ofi_rxm
# providers, in one sitting, with the same program (dpdk-fi-bench, two
# processes each time): dpdk between two processes over net_memif (9 KiB
# ring buffers, so frames of FI_DPDK_MTU=9000 bytes fit), shm
# between two processes of this host, tcp;ofi_rxm over loopback.  With
# hugepages, also dpdk-shared: dpdk between two processes sharing one port
# as DPDK secondaries of dpdk-fi-switch (frames handed over as mbufs, no
# memif copy; README, "shared port").  Figures:
#
#   lat_8B lat_4KiB lat_64KiB   pingpong, half round trip, p50 (us)
#   rate_8B                     8-byte sends, 64 in flight (messages/s)
#   write_64KiB write_1MiB      fi_write, 64 / 8 in flight (MB/s)
#   read_64KiB read_1MiB        fi_read (MB/s)
#   tagged_64KiB tagged_1MiB    fi_tsend / fi_trecv (MB/s)
#   fadd_lat                    fi_fetch_atomic FI_SUM uint64, one at a time, p50 (us)
#   fadd_rate                   the same, 64 in flight (ops/s)
#
# Then the scaling with threads (figures threads_8B, threads_64KiB): one
# process, dpdk-fi-bench --role both --threads N, each thread streaming
# between its own two endpoints on one domain (FI_THREAD_COMPLETION; dpdk
# over one net_ring port), 8-byte sends (msg/s) and 64 KiB tagged sends
# (MB/s), with one thread and with two; printed with the two-thread figure
# over the one-thread figure for each provider (dpdk-shared has no part).
#
# Then, where valgrind is installed, the instructions per message
# (figure "msgcost"): dpdk-fi-msgcost (app/msgcost) under callgrind, two
# endpoints of one process, one message at a time, 8 bytes and 4 KiB,
# and one 8-byte fi_fetch_atomic at a time (the target's path, `--op
# fetch_add`), dpdk over one net_ring port beside shm (the count is the same on a busy
# machine: it is the figure to compare the small-message path by; run
# with FI_DPDK_ACK_DELAY_US=2000, valgrind's clock being slow).
#
# Prints a table with each dpdk figure as a ratio to both peers ("x" is how
# many times better dpdk is: lower latency or higher rate), writes every
# run's JSON to --json (default BUILDDIR/compare.json), and draws it
# (devtools/dpdk-fi-plot.py: SVG charts and an index.html in a "plots"
# folder beside the JSON).  Each run's program
# checks its data; a run that fails shows as "fail".  Measure on a quiet
# machine: the ratios of one sitting are what count, not the absolute
# figures.  Needs a build (usertools/dpdk-fi-setup.sh builds one).
#
# The stock programs (--stock; the default when fabtests can be built):
# what users quote, beside our own program.  First the floor: dpdk-fi-rawping
# (app/rawping), 64-byte frames to and fro over a memif pair with no
# provider, its one-way mean, p50 and p99; and the ceiling: dpdk-fi-rawping
# --pattern stream, 9000-byte frames (the provider's on the launcher's
# memif pair) over a memif pair, one way and both ways at once, in MB/s.
# Then fabtests' benchmarks
# (built by devtools/dpdk-fi-fabtests.sh --build-only into
# BUILDDIR/fabtests-VERSION when missing), two processes each: dpdk through
# usertools/dpdk-fi-run.py on a new memif pair, shm, tcp;ofi_rxm (not
# dpdk-shared), addresses out of band (-E):
#
#   pingpong_8B pingpong_4KiB pingpong_64KiB  fi_rdm_pingpong, one way, mean (us)
#   rma_write_64KiB rma_write_1MiB            fi_rma_bw -e rdm -o write (MB/s)
#   rma_read_64KiB rma_read_1MiB              fi_rma_bw -e rdm -o read (MB/s)
#                 (both processes of fi_rma_bw write, or read, to each other
#                 at once: its MB/s is one direction's with the other busy,
#                 where dpdk-fi-bench's write and read go one way)
#   tagged_bw_64KiB tagged_bw_1MiB            fi_rdm_tagged_bw (MB/s)
#   atomic_sum    fi_rdm_atomic -o sum -z uint64: fi_atomic, one at a time, mean (us)
#   atomic_read   fi_rdm_atomic -o read -z uint64: fi_fetch_atomic, one at a
#                 time, mean (us); fabtests has no fetching FI_SUM
#
# each at fabtests' default count and at a long one (-I), a table for each,
# and, when both parts ran, each dpdk figure against dpdk-fi-bench's mean
# for the same pattern (the aim: within 1.25x of it).
#
# Options:
#   --builddir DIR   build directory (default: build)
#   --json FILE      where the runs' JSON goes (default: BUILDDIR/compare.json)
#   --providers LIST which providers to run (default: "dpdk dpdk-shared shm
#                    tcp;ofi_rxm" with hugepages, without dpdk-shared otherwise)
#   --only LIST      only these figures (comma-separated names from above,
#                    of either part; "floor" for the floor and the ceiling)
#   --quick          fewer iterations (a smoke run, figures less stable; the
#                    stock programs' long counts a fifth, their default
#                    counts as they are)
#   --repeat N       run each figure N times per provider, the providers'
#                    runs interleaved, and report the median (default 3;
#                    1 with --quick): one run on a busy machine can be off
#                    by a factor of two
#   --stock          the stock programs too; an error if fabtests cannot be
#                    built (by default they are skipped, with a note)
#   --no-stock       no stock programs: dpdk-fi-bench only
#   --stock-only     the floor and the stock programs, no dpdk-fi-bench
set -euo pipefail

# shellcheck source-path=SCRIPTDIR source=../usertools/dpdk_fi_common.sh
source "$(dirname "${BASH_SOURCE[0]}")/../usertools/dpdk_fi_common.sh"
# The comparison itself is a Python program, in three parts that each
# define one function printing its part (no file over 800 lines); python3
# reads them whole from stdin, as one program.
# shellcheck source-path=SCRIPTDIR source=dpdk_fi_compare_bench.sh
source "$(dirname "${BASH_SOURCE[0]}")/dpdk_fi_compare_bench.sh"
# shellcheck source-path=SCRIPTDIR source=dpdk_fi_compare_stock.sh
source "$(dirname "${BASH_SOURCE[0]}")/dpdk_fi_compare_stock.sh"
# shellcheck source-path=SCRIPTDIR source=dpdk_fi_compare_sitting.sh
source "$(dirname "${BASH_SOURCE[0]}")/dpdk_fi_compare_sitting.sh"

builddir=build
json=""
providers=""
only=""
quick=0
repeat=""
stock=auto
while (($#)); do
	case "$1" in
	--builddir) builddir=$2; shift ;;
	--json) json=$2; shift ;;
	--providers) providers=$2; shift ;;
	--only) only=$2; shift ;;
	--quick) quick=1 ;;
	--repeat) repeat=$2; shift ;;
	--stock) stock=on ;;
	--no-stock) stock=off ;;
	--stock-only) stock=only ;;
	-h | --help) usage; exit 0 ;;
	*) die 1 "unknown option '$1' (see --help)" ;;
	esac
	shift
done
builddir=$(abs_builddir "$builddir")
bench="$builddir/app/bench/dpdk-fi-bench"
[[ "$stock" == only || -x "$bench" ]] || die 1 "no $bench: run usertools/dpdk-fi-setup.sh first"
[ -n "$json" ] || json="$builddir/compare.json"
mem_args=$(eal_memory_args "$builddir")
if [ -z "$providers" ]; then
	providers="dpdk shm tcp;ofi_rxm"
	[[ "$mem_args" == *--in-memory* ]] && providers="dpdk dpdk-shared shm tcp;ofi_rxm"
fi
if [ -z "$repeat" ]; then
	repeat=3
	((quick)) && repeat=1
fi
[[ "$repeat" =~ ^[1-9][0-9]*$ ]] || die 1 "--repeat wants a positive number"
# (No version: no fabtests to build; the stock part says so if it is wanted.)
fabtests=$(fabtests_version) || fabtests=""

exec python3 - "$bench" "$builddir/drivers/ofi" "$json" "$providers" "$only" "$quick" \
	"$mem_args" "$repeat" "$stock" "$fabtests" "$builddir" "$DPDK_FI_ROOT" \
	< <(compare_py_bench; compare_py_stock; compare_py_sitting)
