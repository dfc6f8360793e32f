# dpdk_fi_sanitize.sh: dpdk-fi-test.sh --sanitize address|thread.  Source it;
# it defines functions only.  doc/architecture.md ("Sanitizer builds") says
# what each mode runs and why.
# shellcheck shell=bash

# What `--sanitize thread` runs unless the command line names tests or
# suites: the tests where several threads meet in the provider.  Every
# provider test has at least the manual-progress safety net's thread; these
# add application threads, the automatic progress loop, or both.
# shellcheck disable=SC2034  # dpdk-fi-test.sh reads it
DPDK_FI_TSAN_TESTS=(ofi_threads ofi_lanes ofi_lanes_auto bench_threads ofi_port_lock ofi_auto_progress_lcore ofi_auto_progress_thread
	ofi_manual_progress_no_net ofi_cq ofi_wait_cntr ofi_objects ofi_atomic
	ofi_atomic_contention_lossy atomic_concurrency)

# sanitize_builddir KIND: the default build directory of a sanitizer build.
sanitize_builddir() {
	case "$1" in
	address) echo build-asan ;;
	thread) echo build-tsan ;;
	*) die 1 "--sanitize takes address or thread, not '$1'" ;;
	esac
}

# sanitize_configure KIND BUILDDIR: configures BUILDDIR (absolute) with the
# sanitizer once; dpdk-fi-setup.sh then finds it configured and builds it.
# A directory configured otherwise is refused rather than silently changed.
sanitize_configure() {
	local kind=$1 dir=$2 want current
	case "$kind" in
	address) want=address,undefined ;;
	thread) want=thread ;;
	esac
	if [[ -f "$dir/meson-private/coredata.dat" ]]; then
		current=$(meson introspect --buildoptions "$dir" | python3 -c \
			'import json, sys; print(next(o["value"] for o in json.load(sys.stdin) if o["name"] == "b_sanitize"))')
		[[ "$current" == "$want" ]] ||
			die 1 "$dir is configured with b_sanitize=$current, not $want: use another --builddir"
		return
	fi
	# b_lundef=false: the sanitizer runtime resolves some symbols of a shared
	# object only at load time, which -Wl,--no-undefined would refuse.
	echo "configuring: meson setup $dir -Db_sanitize=$want -Db_lundef=false"
	meson setup "$dir" "$DPDK_FI_ROOT" -Db_sanitize="$want" -Db_lundef=false ||
		die 1 "meson setup failed; see above and $dir/meson-logs/meson-log.txt"
}

# sanitize_environment KIND: exports the runtime options.  Every report
# fails its test: the runtime exits non-zero (halt_on_error), and meson
# counts the exit status.
sanitize_environment() {
	local supp=$DPDK_FI_ROOT/test/sanitizers
	case "$1" in
	address)
		# detect_leaks stays on: leaks in our code fail the test.
		export ASAN_OPTIONS="halt_on_error=1:abort_on_error=0:exitcode=66:detect_leaks=1:strict_string_checks=1:detect_stack_use_after_return=1"
		export LSAN_OPTIONS="suppressions=$supp/lsan.supp:print_suppressions=0"
		export UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1:exitcode=67"
		;;
	thread)
		export TSAN_OPTIONS="halt_on_error=1:exitcode=66:second_deadlock_stack=1:suppressions=$supp/tsan.supp"
		;;
	esac
}
