#!/bin/bash
# test_bad_numbers.sh BENCH RAWPING MSGCOST: each app given a value that
# is not a number (or out of its range) for a numeric option exits with
# status 2 and says which option, instead of an uncaught exception.
set -u
bench=$1 rawping=$2 msgcost=$3
eal=(-l 0 --no-huge -m 256 --no-shconf --no-pci --no-telemetry --vdev=net_ring0)
failures=0
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
expect_usage_error "msgcost --count abc" --count "$msgcost" --provider shm --count abc
[ "$failures" = 0 ] || exit 1
echo "every bad number was refused with exit status 2, naming its option"
