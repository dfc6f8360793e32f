#!/bin/bash
# Usage: usertools/dpdk-fi-test.sh [--suite S]... [--builddir DIR] [--no-hugepages]
#                                  [--sanitize address|thread] [--soak]
#                                  [--fabtests SET] [--build-only] [MESON-TEST-ARGS...]
#        usertools/dpdk-fi-test.sh --summarize TESTLOG.json
#        usertools/dpdk-fi-test.sh --debian13 [--rebuild-root] [ARGS...]
#        usertools/dpdk-fi-test.sh --both-legs [ARGS...]
#
# Runs dpdk-fi-setup.sh (packages, hugepages, build), then the tests with
# `meson test --num-processes 1` (the tests poll, and the machine has two
# cores) under an overall time limit, then prints a table of the results and,
# as its very last line, "N passed, N failed" (", N skipped" when some were).
#
# Options:
#   --suite S          run only suite S (repeatable): unit, dpdk, provider,
#                      multiproc, stock, mpi, tools, fabtests (libfabric's
#                      gate, runfabtests.sh -t quick: doc/fabtests.md),
#                      hosts (the gate again between two hosts by IP
#                      address; Debian 12 leg only, in fabtests too), vm
#                      (the tests in QEMU guests, in dpdk too), once (tests
#                      of what the libraries' releases do not change:
#                      attacks, bottleneck, routers, 8-rank jobs over
#                      af_packet, the launcher's; Debian 12 leg only)
#   --soak             run the soak instead (suite soak, OFI_DPDK_SOAK=1):
#                      10^6 messages and 10^5 fetch-adds between two
#                      processes at 20 % loss with reordering and
#                      duplication (test/multiproc/test_soak.sh; about a
#                      minute on a 2-core machine); with --sanitize, under
#                      the sanitizers
#   --fabtests SET     run only libfabric's gate with runfabtests.sh -t SET
#                      (quick, standard, ...) over dpdk, built from
#                      ../shared/fabtests (devtools/dpdk-fi-fabtests.sh,
#                      doc/fabtests.md); its exit status is this one's.  The
#                      default run has -t quick (suite fabtests)
#   --builddir DIR     build directory (default: build)
#   --no-hugepages     passed to dpdk-fi-setup.sh: DPDK runs with --no-huge,
#                      and the gate (suite fabtests, which needs them) not
#   --sanitize KIND    build and test with sanitizers, in a build directory of
#                      their own (default build-asan or build-tsan), always
#                      with --no-huge: `address` is AddressSanitizer with
#                      UBSan and LeakSanitizer, for the whole suite; `thread`
#                      is ThreadSanitizer, for the tests where threads meet
#                      (unless other meson test arguments are given)
#   --no-tsan          leave out the ThreadSanitizer part (below)
#   --package          add the package part (below) to the Debian 12 leg
#   --no-package       leave out the package part (below)
#   --build-only       set up and build what the run's tests need, then
#                      stop: no test runs (.ci/run builds the
#                      ThreadSanitizer part so beside the Debian 12 tests)
#   --summarize FILE   only print the summary of a meson testlog.json file
#   --no-suite S       leave out suite S (repeatable); unlike --suite, the
#                      run keeps its other parts (below)
#   --both-legs        (first, before any other argument) both legs in
#                      one go: the two builds one after the other, the
#                      tests in QEMU guests (suite vm) of one leg then the
#                      other, then the rest of the two legs side by side
#                      (each ~1.45x as long as alone); the other
#                      arguments go to both; its closing line adds them up.
#                      Not what .ci/run calls: its order (the Debian 13
#                      build beside the Debian 12 tests, at idle priority)
#                      is as fast and steadier (doc/architecture.md)
#   --debian13         the Debian 13 leg: the same build and tests against
#                      libfabric 2.1 and DPDK 24.11, in a cached Debian 13
#                      root, into build-trixie/; runs devtools/dpdk-fi-debian13.sh
#                      (see its --help) with the other arguments
#   Any other argument goes to `meson test` unchanged (a test name, --repeat N).
#
# With no other argument than --no-hugepages, the run then has more parts:
# the tests where threads meet, under ThreadSanitizer (what `--sanitize
# thread` runs, in build-tsan/; not on the Debian 13 leg), and, on the
# Debian 13 leg, the Debian package of its release, built and installed
# into a clean root (devtools/dpdk-fi-package.sh, about 5 minutes; the
# Debian 12 leg's only with --package: one leg proves debian/, and the two
# legs' run must stay within CI's time); the closing line adds the parts
# up.  --no-tsan and --no-package leave them out.
#
# Environment: DPDK_FI_TEST_LIMIT, the overall limit for `meson test` in
# seconds (default 3600). The tests see OFI_DPDK_HUGEPAGES (yes or no) and
# OFI_DPDK_EAL_MEM_ARGS (the matching EAL memory options).
#
# Exit status: 0 when no test failed and at least one passed, 1 otherwise,
# 2 when packages are missing (see dpdk-fi-setup.sh) or, for --debian13, when
# not root.
set -euo pipefail

# shellcheck source-path=SCRIPTDIR source=dpdk_fi_common.sh
source "$(dirname "${BASH_SOURCE[0]}")/dpdk_fi_common.sh"

# summarize TESTLOG [MESON-STATUS [LIMIT]]: prints the table and the closing
# line; returns 0 when nothing failed and something passed. A MESON-STATUS of
# 124 or 137 (killed by `timeout`) counts as one more failure, and so does any
# other non-zero status when the log itself shows no failure.
summarize() {
	python3 - "$@" <<-'EOF'
		import json
		import sys

		PASSED = {"OK", "EXPECTEDFAIL"}
		log = sys.argv[1]
		status = int(sys.argv[2]) if len(sys.argv) > 2 else 0
		limit = sys.argv[3] if len(sys.argv) > 3 else "?"
		rows = []  # (result, seconds, name) in the order the tests ran
		try:
		    with open(log, encoding="utf-8") as f:
		        lines = f.readlines()
		except OSError as e:
		    print(f"no test log: {log}: {e.strerror}")
		    lines = []
		for line in lines:
		    if not line.strip():
		        continue
		    try:
		        test = json.loads(line)
		        rows.append((str(test["result"]), float(test.get("duration") or 0),
		                     str(test["name"])))
		    except (ValueError, KeyError, TypeError, AttributeError):
		        rows.append(("ERROR", 0.0, "(unreadable line in the test log)"))
		failed = sum(r not in PASSED and r != "SKIP" for r, _, _ in rows)
		if status in (124, 137):
		    rows.append(("TIMEOUT", 0.0, f"(meson test stopped at the overall limit of {limit} s)"))
		elif status != 0 and failed == 0:
		    rows.append(("ERROR", 0.0, f"(meson test exited with status {status})"))
		passed = sum(r in PASSED for r, _, _ in rows)
		skipped = sum(r == "SKIP" for r, _, _ in rows)
		failed = len(rows) - passed - skipped
		shown = rows if len(rows) <= 50 else [row for row in rows if row[0] not in PASSED]
		if shown:
		    print(f"{'RESULT':<15} {'TIME':>9}  TEST")
		for result, seconds, name in shown:
		    print(f"{result:<15} {seconds:8.2f}s  {name}")
		if len(shown) < len(rows):
		    print(f"({len(rows) - len(shown)} passing tests not listed)")
		print(f"{passed} passed, {failed} failed" + (f", {skipped} skipped" if skipped else ""))
		sys.exit(0 if failed == 0 and passed > 0 else 1)
	EOF
}

# build_test_dependencies BUILDDIR [MESON-TEST-ARGS...]: builds what the
# tests named among the arguments need, as `meson test` would before running
# them (options are passed over); with no test named, the whole tree.
build_test_dependencies() {
	local dir=$1 targets
	shift
	targets=$(python3 - "$dir" "$@" <<-'EOF'
		import json, os, subprocess, sys
		builddir, names = sys.argv[1], {a for a in sys.argv[2:] if not a.startswith("-")}
		def introspect(what):
		    return json.loads(subprocess.check_output(["meson", "introspect", what, builddir]))
		files = {t["id"]: t["filename"] for t in introspect("--targets")}
		wanted = set()
		for test in introspect("--tests"):
		    if test["name"] in names:
		        for target in test["depends"]:
		            wanted.update(os.path.relpath(f, builddir) for f in files.get(target, []))
		print("\n".join(sorted(wanted)) if names else "")
	EOF
	) || die 1 "meson introspect failed in $dir"
	echo "building: ninja -C $dir ${targets:+(what the named tests need)}"
	# shellcheck disable=SC2086 # one target a line
	ninja -C "$dir" $targets || die 1 "the build failed; see the compiler messages above"
}

builddir=build
sanitize=""
setup_args=()
meson_args=()
fabtests_set=""
tsan_part=1
build_only=0
package_choice=""  # yes (--package), no (--no-package), or the leg's default
debian13=0
both_legs=0
if [[ "${1:-}" == --both-legs ]]; then
	both_legs=1
	shift
	leg_args=("$@")
fi
only_default_args=1
while (($#)); do
	# (--no-suite S keeps the run's other parts: the whole run, less S.)
	case "$1" in
	--no-hugepages | --no-tsan | --package | --no-package | --debian13 | --no-suite) ;;
	*) only_default_args=0 ;;
	esac
	case "$1" in
	--fabtests)
		(($# >= 2)) || die 1 "--fabtests needs a set (quick, standard, ...)"
		fabtests_set=$2
		shift
		;;
	--suite)
		(($# >= 2)) || die 1 "--suite needs a suite name"
		meson_args+=(--suite "$2")
		shift
		;;
	--no-suite)
		(($# >= 2)) || die 1 "--no-suite needs a suite name"
		meson_args+=(--no-suite "$2")
		shift
		;;
	--builddir)
		(($# >= 2)) || die 1 "--builddir needs a directory"
		builddir=$2
		setup_args+=(--builddir "$2")
		shift
		;;
	--no-hugepages)
		setup_args+=(--no-hugepages)
		# The gate's fi_rdm_shared_av runs on a shared port: hugepages.
		meson_args+=(--no-suite fabtests)
		;;
	--soak)
		export OFI_DPDK_SOAK=1
		meson_args+=(--suite soak)
		;;
	--sanitize)
		(($# >= 2)) || die 1 "--sanitize needs address or thread"
		sanitize=$2
		shift
		;;
	--summarize)
		(($# == 2)) || die 1 "usage: $dpdk_fi_prog --summarize TESTLOG.json"
		summarize "$2"
		exit
		;;
	--both-legs) die 1 "--both-legs must be the first argument" ;;
	--debian13)
		((!both_legs)) || die 1 "--both-legs runs the Debian 13 leg itself: leave out --debian13"
		shift
		debian13_args=("${setup_args[@]}" "${meson_args[@]}")
		if [[ -n "$fabtests_set" ]]; then debian13_args+=(--fabtests "$fabtests_set"); fi
		no_suite_next=0
		for arg in "$@"; do
			case "$arg" in
			--rebuild-root | --no-hugepages | --no-suite) ;;
			--package) package_choice=yes ;;
			--no-package) package_choice=no ;;
			*) ((no_suite_next)) || only_default_args=0 ;;
			esac
			no_suite_next=0
			[[ "$arg" == --no-suite ]] && no_suite_next=1
			[[ "$arg" == --no-package || "$arg" == --package ]] || debian13_args+=("$arg")
		done
		[[ "${meson_args[*]}" =~ ^(--no-suite [^ ]+ ?)*$ && -z "$fabtests_set" ]] || only_default_args=0
		# The two-host gate (suite hosts) and the tests of what the
		# libraries' releases do not change (suite once, test/meson.build)
		# run on the Debian 12 leg: on both they would take the test
		# command past its time.
		((only_default_args == 0)) || debian13_args+=(--no-suite hosts --no-suite once)
		debian13=1
		break
		;;
	--no-tsan) tsan_part=0 ;;
	--build-only) build_only=1 ;;
	--package) package_choice=yes ;;
	--no-package) package_choice=no ;;
	-h | --help) usage; exit 0 ;;
	*) meson_args+=("$1") ;;
	esac
	shift
done
package_part=0
[[ "$package_choice" == yes ]] && package_part=1
((debian13)) && [[ "$package_choice" != no ]] && package_part=1
# The default run is made of parts (the tests; the threaded tests under
# ThreadSanitizer; the Debian package), each ending with its own
# "N passed, N failed" line, and one closing line adds them up. A part
# that ends without its closing line counts as one failure.
part_passed=0 part_failed=0 part_skipped=0 part_status=0 part_lines=()
# closing_counts TEXT: "PASSED FAILED SKIPPED" of the last closing line.
closing_counts() {
	local line
	line=$(grep -E '^[0-9]+ passed, [0-9]+ failed' <<<"$1" | tail -n 1 || true)
	[[ -n "$line" ]] || { echo "0 1 0"; return; }
	sed -E 's/^([0-9]+) passed, ([0-9]+) failed(, ([0-9]+) skipped)?.*/\1 \2 \4/' <<<"$line" |
		awk '{print $1, $2, ($3 == "" ? 0 : $3)}'
}
# add_part NAME STATUS OUTPUT: counts a part that ran.
add_part() {
	local passed failed skipped
	read -r passed failed skipped < <(closing_counts "$3")
	part_lines+=("$passed passed, $failed failed ($1)")
	part_passed=$((part_passed + passed))
	part_failed=$((part_failed + failed))
	part_skipped=$((part_skipped + skipped))
	(($2 == 0)) || part_status=1
}
# run_part NAME COMMAND...: runs a part, its output streaming through.
run_part() {
	local name=$1 log status=0
	shift
	log=$(mktemp)
	echo
	echo "testing: the $name part ($*)"
	"$@" 2>&1 | tee "$log" || status=${PIPESTATUS[0]}
	add_part "$name" "$status" "$(cat "$log")"
	rm -f "$log"
}
close_parts() {
	echo
	local IFS=';'
	echo "all parts: ${part_lines[*]}" | sed 's/;/; /g'
	echo "$part_passed passed, $part_failed failed$( ((part_skipped)) && echo ", $part_skipped skipped")"
	((part_status == 0 && part_failed == 0 && part_passed > 0))
}

# --both-legs: the builds first, one after the other (each keeps both cores
# busy, and a test beside a build runs up to twice as long); then the tests
# in QEMU guests (suite vm), one leg after the other: on software CPUs they
# want the machine to themselves (pci_nics_vm failed beside the other leg);
# then the rest of the two legs side by side: each keeps about one core
# busy alone, and side by side each took ~1.45x as long (2026-12-05). The Debian 13 leg's
# network, PIDs, mounts and /dev/shm are its own (dpdk-fi-debian13.sh); the
# hugepages and the fabtests gate's reserve are shared, so the pool is made
# twice the set-up's and each gate adds and takes back only its own pages.
if ((both_legs)); then
	[[ -z "$sanitize$fabtests_set" && "$builddir" == build ]] ||
		die 1 "--both-legs does not go with --sanitize, --fabtests or --builddir"
	both_started=$SECONDS
	echo "both legs: set-up and build of the Debian 12 leg"
	bash "$DPDK_FI_ROOT/usertools/dpdk-fi-setup.sh" "${setup_args[@]}" ||
		note "the Debian 12 leg's set-up failed; its run below says how"
	echo "both legs: set-up and build of the Debian 13 leg (in its root)"
	bash "$DPDK_FI_ROOT/devtools/dpdk-fi-debian13.sh" --command \
		"bash usertools/dpdk-fi-setup.sh --builddir build-trixie ${setup_args[*]}" ||
		note "the Debian 13 leg's set-up failed; its run below says how"
	size_kb=$(awk '$1 == "Hugepagesize:" {print $2}' /proc/meminfo)
	if [[ "$(cat "$DPDK_FI_ROOT/build/.hugepages" 2>/dev/null)" == yes && -n "$size_kb" ]]; then
		two_pools=$((2 * 1024 * 1024 / size_kb))  # the set-up's 1 GiB, once per leg
		(($(cat /proc/sys/vm/nr_hugepages) >= two_pools)) ||
			{ echo "$two_pools" >/proc/sys/vm/nr_hugepages; } 2>/dev/null || true
	fi
	echo "both legs: built in $((SECONDS - both_started)) s"
	legs_dir=$(mktemp -d)
	# run_leg NAME TAG ARGS...: one run of dpdk-fi-test.sh ARGS, its lines
	# marked "TAG| "; its output in $legs_dir/NAME.log, its exit status in
	# $legs_dir/NAME.status.
	run_leg() {
		local name=$1 tag=$2 status=0
		shift 2
		{
			bash "$DPDK_FI_ROOT/usertools/dpdk-fi-test.sh" "$@" 2>&1 || status=$?
			echo "$status" >"$legs_dir/$name.status"
		} | tee "$legs_dir/$name.log" | sed -u "s/^/$tag| /"
	}
	runs=()
	if ((only_default_args)); then
		echo "both legs: the tests in QEMU guests (suite vm), one leg after the other"
		run_leg "vm12" 12 --suite vm
		run_leg "vm13" 13 --debian13 --suite vm --no-suite hosts
		runs+=("vm12:Debian 12 leg, suite vm" "vm13:Debian 13 leg, suite vm")
		leg_args+=(--no-suite vm)
	fi
	echo "both legs: the two legs side by side, their lines marked 12| and 13|"
	run_leg "12" 12 "${leg_args[@]}" &
	run_leg "13" 13 --debian13 "${leg_args[@]}" &
	wait
	runs+=("12:Debian 12 leg" "13:Debian 13 leg")
	both_status=0
	for run in "${runs[@]}"; do
		name=${run%%:*}
		read -r passed failed skipped < <(closing_counts "$(cat "$legs_dir/$name.log")")
		part_lines+=("$passed passed, $failed failed (${run#*:})")
		part_passed=$((part_passed + passed))
		part_failed=$((part_failed + failed))
		part_skipped=$((part_skipped + skipped))
		[[ "$(cat "$legs_dir/$name.status" 2>/dev/null)" == 0 ]] || both_status=1
	done
	rm -rf "$legs_dir"
	echo
	echo "both legs: $((SECONDS - both_started)) s in all"
	part_status=$both_status
	close_parts
	exit
fi

if ((debian13)); then
	if ! ((only_default_args && package_part)); then
		exec bash "$DPDK_FI_ROOT/devtools/dpdk-fi-debian13.sh" "${debian13_args[@]}"
	fi
	run_part tests bash "$DPDK_FI_ROOT/devtools/dpdk-fi-debian13.sh" "${debian13_args[@]}"
	run_part package bash "$DPDK_FI_ROOT/devtools/dpdk-fi-package.sh" --suite trixie
	close_parts
	exit
fi

if [[ -n "$sanitize" ]]; then
	# shellcheck source-path=SCRIPTDIR source=../devtools/dpdk_fi_sanitize.sh
	source "$DPDK_FI_ROOT/devtools/dpdk_fi_sanitize.sh"
	[[ "$builddir" != build ]] || builddir=$(sanitize_builddir "$sanitize")
	# One build at a time in a sanitizer's build directory: .ci/run builds
	# the ThreadSanitizer part's beside the tests that come before it.
	# Held until the build is done (below), so no test inherits it.
	mkdir -p "$(abs_builddir "$builddir")"
	exec {build_lock}<"$(abs_builddir "$builddir")"
	flock "$build_lock"
	sanitize_configure "$sanitize" "$(abs_builddir "$builddir")"
	sanitize_environment "$sanitize"
	setup_args+=(--builddir "$builddir" --no-hugepages)
	if [[ "$sanitize" == thread ]] && ! (( ${#meson_args[@]} )); then
		meson_args+=("${DPDK_FI_TSAN_TESTS[@]}")
		# Thirteen tests need a fifth of the tree: meson test builds their
		# dependencies (each names the provider it loads) and nothing else.
		setup_args+=(--configure-only)
	fi
	# Stock fabtests programs do not load a sanitized provider (its runtime
	# would have to come first), and the gate wants hugepages.
	meson_args+=(--no-suite fabtests)
fi
builddir=$(abs_builddir "$builddir")
limit=${DPDK_FI_TEST_LIMIT:-3600}
[[ "$limit" =~ ^[0-9]+$ ]] || die 1 "DPDK_FI_TEST_LIMIT must be a number of seconds"

bash "$DPDK_FI_ROOT/usertools/dpdk-fi-setup.sh" "${setup_args[@]}"
python_direct "$builddir"

if [[ -n "$sanitize" ]] || ((build_only)); then
	build_test_dependencies "$builddir" "${meson_args[@]}"
	[[ -z "${build_lock:-}" ]] || exec {build_lock}<&-
	((build_only)) && exit 0
fi

OFI_DPDK_HUGEPAGES=$(cat "$builddir/.hugepages")
OFI_DPDK_EAL_MEM_ARGS=$(eal_memory_args "$builddir")
export OFI_DPDK_HUGEPAGES OFI_DPDK_EAL_MEM_ARGS

if [[ -n "$fabtests_set" ]]; then
	echo "testing: devtools/dpdk-fi-fabtests.sh --tests $fabtests_set (overall limit ${limit} s)"
	exec timeout --kill-after=60 "$limit" bash "$DPDK_FI_ROOT/devtools/dpdk-fi-fabtests.sh" \
		--builddir "$builddir" --tests "$fabtests_set"
fi

testlog="$builddir/meson-logs/testlog.json"
rm -f "$testlog" # never summarize a previous run
echo "testing: meson test -C $builddir --print-errorlogs --num-processes 1" \
	"${meson_args[@]}" "(overall limit ${limit} s)"
status=0
timeout --kill-after=60 "$limit" meson test -C "$builddir" --print-errorlogs \
	--num-processes 1 "${meson_args[@]}" || status=$?
echo
if ! ((only_default_args && (tsan_part || package_part))); then
	summarize "$testlog" "$status" "$limit"
	exit
fi
main_status=0
main_summary=$(summarize "$testlog" "$status" "$limit") || main_status=$?
echo "$main_summary"
add_part tests "$main_status" "$main_summary"
# The second part: the tests where threads meet, under ThreadSanitizer.
if ((tsan_part)); then
	run_part ThreadSanitizer bash "$DPDK_FI_ROOT/usertools/dpdk-fi-test.sh" --sanitize thread
fi
# The third: the Debian package, built and installed into a clean root.
if ((package_part)); then
	run_part package bash "$DPDK_FI_ROOT/devtools/dpdk-fi-package.sh"
fi
close_parts
