#!/bin/bash
# test_bad_numbers.sh BENCH RAWPING MSGCOST LOOPBACK: each app given a
# value that is not a number (or out of its range) for a numeric option
# exits with status 2 and says which option, instead of an uncaught
# exception; the command line is getopt_long's (a value after "=", an
# unknown option, a missing value, a stray argument, --help).
set -u
bench=$1 rawping=$2 msgcost=$3 loopback=$4
eal=(-l 0 --no-huge -m 256 --no-shconf --no-pci --no-telemetry --vdev=net_ring0)
failures=0
# expect_exit WHAT STATUS TEXT COMMAND...: the command exits with STATUS
# and its output contains TEXT.
expect_exit() {
	local what=$1 status=$2 text=$3
	shift 3
	local out rc
	out=$(timeout 60 "$@" 2>&1 </dev/null)
	rc=$?
	if [ "$rc" != "$status" ]; then
		echo "FAIL  $what: exit $rc, not $status: $(echo "$out" | tail -n 2)"
		failures=$((failures + 1))
	elif ! echo "$out" | grep -q -- "$text"; then
		echo "FAIL  $what: the output lacks '$text': $(echo "$out" | tail -n 2)"
		failures=$((failures + 1))
	else
		echo "ok    $what"
	fi
}
expect_usage_error() {
	local what=$1 option=$2
	shift 2
	local out rc
	out=$(timeout 60 "$@" 2>&1 </dev/null)
	rc=$?
	if [ "$rc" != 2 ]; then
		echo "FAIL  $what: exit $rc, not 2: $(echo "$out" | tail -n 2)"
		failures=$((failures + 1))
	elif ! echo "$out" | grep -q -- "$option: not a number"; then
		echo "FAIL  $what: the error does not name $option: $(echo "$out" | tail -n 2)"
		failures=$((failures + 1))
	else
		echo "ok    $what"
	fi
}
expect_usage_error "bench --count abc" --count "$bench" "${eal[@]}" -- --count abc
expect_usage_error "bench --window -1" --window "$bench" "${eal[@]}" -- --window -1
expect_usage_error "bench --threads 2x" --threads "$bench" "${eal[@]}" -- --threads 2x
expect_usage_error "bench --timeout 1e999" --timeout "$bench" "${eal[@]}" -- --timeout 1e999
expect_usage_error "rawping --size 70000" --size "$rawping" "${eal[@]}" -- --role server --size 70000
expect_usage_error "rawping --count ''" --count "$rawping" "${eal[@]}" -- --role server --count ''
expect_exit "rawping --count 0" 2 "at least one round trip" "$rawping" "${eal[@]}" -- --role client --count 0
expect_usage_error "rawping --seconds 1s" --seconds "$rawping" "${eal[@]}" -- --role client --pattern stream --seconds 1s
expect_exit "rawping --seconds 0" 2 "seconds wants" "$rawping" "${eal[@]}" -- --role client --pattern stream --seconds 0
expect_exit "rawping --pattern bogus" 2 "pattern latency or stream" "$rawping" "${eal[@]}" -- --role client --pattern bogus
expect_exit "rawping --both alone" 2 "both is for --pattern stream" "$rawping" "${eal[@]}" -- --role client --both
expect_exit "rawping stream --size 9001" 2 "size wants 60..9000" "$rawping" "${eal[@]}" -- --role client --pattern stream --size 9001
expect_usage_error "msgcost --count abc" --count "$msgcost" --provider shm --count abc
expect_usage_error "bench --count=abc" --count "$bench" "${eal[@]}" -- --count=abc
expect_usage_error "loopback --count 1x" --count "$loopback" "${eal[@]}" -- --count 1x
expect_usage_error "loopback --size=-5" --size "$loopback" "${eal[@]}" -- --size=-5
expect_exit "bench --bogus" 2 "unknown or ambiguous option --bogus" "$bench" --provider shm --bogus
expect_exit "bench --role (no value)" 2 "option --role needs a value" "$bench" --provider shm --role
expect_exit "bench stray" 2 "unexpected argument stray" "$bench" --provider shm stray
expect_exit "bench --se (senders or seed)" 2 "unknown or ambiguous option --se" "$bench" --provider shm --se 8
expect_exit "bench --help" 0 "usage: dpdk-fi-bench" "$bench" --provider shm --help
expect_exit "loopback --help" 0 "usage: dpdk-fi-loopback" "$loopback" "${eal[@]}" -- --help
expect_exit "rawping --help" 0 "usage: dpdk-fi-rawping" "$rawping" "${eal[@]}" -- --help
expect_exit "msgcost --help" 0 "usage: dpdk-fi-msgcost" "$msgcost" --provider shm --help
[ "$failures" = 0 ] || exit 1
echo "every bad number and bad option was refused with exit status 2, naming it"
