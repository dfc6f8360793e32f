#!/bin/bash
# Usage: devtools/dpdk-fi-scalapack.sh [--builddir DIR] [--only PROG,...]
#                                      [--timeout SECONDS] [--transport T]
#                                      [--out DIR] [--help]
#
# ScaLAPACK's own MPI test programs (Debian's scalapack-mpi-test: BLACS,
# PBLAS and the drivers, four ranks each, as its CTest file runs them) over
# Open MPI on the dpdk provider, an application suite the provider was not
# written against: every collective and point-to-point pattern BLACS makes,
# with its results checked by the programs themselves (residuals).  Each
# program runs with the transport named, then again with Open MPI's shared
# memory when it did not pass, so that a failure of the program or of Open
# MPI is told from ours.
#
#   --transport shared   pml cm, mtl ofi, provider dpdk, the four ranks on
#                        one shared port (dpdk-fi-switch; hugepages)
#               btl      pml ob1, btl ofi (provider dpdk), the ranks on the
#                        shared port
#
# A program passes when mpirun exits 0 and its output reports no failed
# check (the BLACS testers end in BLACS_ABORT by design: they pass when
# their tables show no failure).  Prints one line per program and a
# summary; the outputs go to --out (default build/scalapack).  Needs root
# for hugepages, openmpi-bin, scalapack-mpi-test and a build
# (usertools/dpdk-fi-setup.sh).  Takes about 20 minutes; more ranks than
# CPUs share them.
set -uo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=$ROOT/build
ONLY=""
TIMEOUT=300
TRANSPORT=shared
OUT=""
while [ $# -gt 0 ]; do
  case "$1" in
    --builddir) BUILD=$(cd "$2" && pwd); shift 2 ;;
    --only) ONLY=$2; shift 2 ;;
    --timeout) TIMEOUT=$2; shift 2 ;;
    --transport) TRANSPORT=$2; shift 2 ;;
    --out) OUT=$2; shift 2 ;;
    --help|-h) sed -n '2,/^set -uo/p' "$0" | sed -e '$d' -e 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "dpdk-fi-scalapack: unknown argument $1 (--help)" >&2; exit 2 ;;
  esac
done
OUT=${OUT:-$BUILD/scalapack}
TESTS=/usr/lib/x86_64-linux-gnu/scalapack/openmpi-tests
DATA=/usr/share/scalapack
if [ ! -d "$TESTS" ]; then
  echo "dpdk-fi-scalapack: $TESTS is missing: apt-get install scalapack-mpi-test" >&2
  exit 2
fi
# shellcheck disable=SC2054  # (ofi,self is one value: the BTLs' list)
case "$TRANSPORT" in
  shared) DPDK=(--mca pml cm --mca mtl ofi --mca mtl_ofi_provider_include dpdk) ;;
  btl) DPDK=(--mca pml ob1 --mca btl ofi,self --mca btl_ofi_mode 2
             --mca btl_ofi_provider_include dpdk) ;;
  *) echo "dpdk-fi-scalapack: --transport shared or btl" >&2; exit 2 ;;
esac
[ "$(cat /proc/sys/vm/nr_hugepages)" -ge 1024 ] || echo 1024 > /proc/sys/vm/nr_hugepages

# The programs read their inputs (*.dat) from the working directory.
mkdir -p "$OUT"
cp "$DATA"/*.dat "$DATA"/BLACS/*.dat "$DATA"/PBLAS/*.dat "$OUT"/
cd "$OUT" || exit 2
programs=(xCbtest xFbtest)
while read -r name; do programs+=("$name"); done < <(
  grep -ho 'add_test([A-Za-z0-9_]* "/usr/bin/mpiexec' "$TESTS"/CTestTestfile.cmake \
      "$TESTS"/PBLAS/CTestTestfile.cmake | sed -E 's/add_test\(([^ ]*) .*/\1/')
export PATH=$BUILD/.python:$PATH FI_PROVIDER_PATH=$BUILD/drivers/ofi

# run LABEL PROGRAM MPIRUN-ARGS...: 0 when it passed; its output in
# LABEL-PROGRAM.log.
run() {
  local label=$1 program=$2 binary=$TESTS/$2
  shift 2
  [ -x "$binary" ] || binary=$TESTS/PBLAS/$program
  # (mpirun reads its standard input: not the list being read here.)
  timeout "$TIMEOUT" mpirun --allow-run-as-root --oversubscribe -np 4 \
      --mca mpi_yield_when_idle 1 "$@" "$binary" > "$label-$program.log" 2>&1 < /dev/null
  local status=$?
  # Ranks a timeout (or an abort) left: gone before the next job starts, or
  # its launcher finds them attached to the shared port.
  pkill -9 -f "$binary" 2> /dev/null
  for _ in $(seq 100); do pgrep -f "$binary" > /dev/null || break; sleep 0.1; done
  # Failures as each kind of program reports them: the drivers' "N tests
  # completed and failed", BLACS's "N FAILED", PBLAS's table (| NAME
  # TOTAL PASSED FAILED SKIPPED).
  if grep -qE "[1-9][0-9]* (tests completed and )?failed|[1-9][0-9]* FAILED" \
      "$label-$program.log" ||
      awk '$1 == "|" && $2 ~ /^P/ && $5 != 0 { bad = 1 } END { exit !bad }' \
      "$label-$program.log"; then
    return 1
  fi
  case "$program" in
    x?btest) grep -q "TESTS:.* 0 FAILED" "$label-$program.log" ;;
    *) [ "$status" -eq 0 ] ;;
  esac
}

passed=0 failed=0 both=0
for program in "${programs[@]}"; do
  if [ -n "$ONLY" ] && [[ ",$ONLY," != *",$program,"* ]]; then continue; fi
  start=$SECONDS
  if run dpdk "$program" "${DPDK[@]}" "$ROOT/usertools/dpdk-fi-run.py" --topology shared --; then
    printf '%-10s pass  %4d s\n' "$program" $((SECONDS - start))
    passed=$((passed + 1))
  elif run shm "$program" --mca pml ob1 --mca btl vader,self; then
    printf '%-10s FAIL  %4d s  (passes over shared memory: dpdk-%s.log)\n' "$program" \
        $((SECONDS - start)) "$program"
    failed=$((failed + 1))
  else
    printf '%-10s fails over shared memory too (shm-%s.log)\n' "$program" "$program"
    both=$((both + 1))
  fi
done
echo "dpdk-fi-scalapack: $passed passed, $failed failed over dpdk alone, $both fail over" \
     "shared memory too; outputs in $OUT"
[ "$failed" -eq 0 ]
