#!/bin/bash
# Usage: test_fi_info.sh
#
# Stock fi_info (libfabric-bin) against the dpdk provider:
#   (a) with one net_ring port: `fi_info -p dpdk` (and -t FI_EP_RDM) lists it;
#   (b) without FI_DPDK_EAL_ARGS: fi_getinfo fails with -61 (FI_ENODATA), and
#       FI_LOG_LEVEL=info says FI_DPDK_EAL_ARGS is empty;
#   (c) EAL up but no port (--no-pci, no vdev): -61, and the log says so;
#   (d) EAL arguments EAL refuses: -61 and a warning naming rte_eal_init, and
#       fi_info exits normally (no abort from inside EAL); that one log line
#       names the bad option, and DPDK's usage text and log appear nowhere;
#   (e) `fi_info -p dpdk -e` lists every FI_DPDK_* parameter, each with its
#       default in its help text;
#   (f) the parameters are listed with no EAL arguments at all, without
#       starting EAL.
#
# Environment (test/stock/meson.build sets them):
#   FI_PROVIDER_PATH        the build's drivers/ofi (libdpdk-fi.so)
#   OFI_DPDK_RING_EAL_ARGS  EAL arguments for one net_ring port (ring_env's)
#
# Every fi_info runs under `timeout 15` (each needs well under a second; a
# hang is reported, and the lot stays within meson's 60 s).  Prints one line per check and the
# output of each failed one.  Exit status: 0 when all passed, 1 otherwise,
# 77 (meson: skipped) when fi_info is not installed.
set -euo pipefail

if ! command -v fi_info >/dev/null; then
	echo "fi_info not found (apt install libfabric-bin): skipped"
	exit 77
fi
: "${FI_PROVIDER_PATH:?set FI_PROVIDER_PATH to the drivers/ofi folder of the build}"
: "${OFI_DPDK_RING_EAL_ARGS:?set OFI_DPDK_RING_EAL_ARGS (see test/meson.build)}"
export FI_PROVIDER_PATH
# shellcheck source-path=SCRIPTDIR source=sanitizer_preload.sh
source "$(dirname "${BASH_SOURCE[0]}")/sanitizer_preload.sh" "$FI_PROVIDER_PATH"
# Only what each case sets below reaches the provider.
unset FI_PROVIDER FI_DPDK_EAL_ARGS FI_LOG_LEVEL FI_LOG_PROV

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

ring_args=$OFI_DPDK_RING_EAL_ARGS
# The ring set without its port: EAL starts, and there is nothing to offer.
no_port_args='-l 0 --no-huge -m 512 --no-shconf --no-pci --no-telemetry --log-level=lib.eal:error'
# Every parameter dpdk_params.cc defines.
params=(eal_args ports steering ethertype queues mbufs unexpected_bytes peer_timeout_ms
	fault_drop fault_reorder fault_duplicate fault_corrupt fault_delay fault_delay_us
	fault_seed pace_from_us)

failures=0
out=""     # output (stdout and stderr) of the last run
status=0   # exit status of the last run

# run NAME [VAR=VALUE...] -- PROGRAM ARGS...: runs PROGRAM under `timeout 15`
# with the variables set; leaves its output in $out and its status in $status.
run() {
	local name=$1
	shift
	local vars=()
	while [[ $1 != -- ]]; do
		vars+=("$1")
		shift
	done
	shift
	status=0
	env "${vars[@]}" timeout -k 2 15 "${preload[@]}" "$@" >"$work/$name.log" 2>&1 || status=$?
	out=$(tr -d '\000' <"$work/$name.log")  # fi_info -e prints a stray NUL
}

# pass CHECK / fail CHECK WHY: one line per check; a failure also shows the
# tail of the last run's output.
pass() { echo "ok    $1"; }
fail() {
	echo "FAIL  $1: $2"
	echo "----- output of $1 (exit status $status):"
	sed 's/^/    /' <<<"$out" | tail -n 40
	echo "-----"
	failures=$((failures + 1))
}
has() { grep -qa -- "$1" <<<"$out"; }

# (a) one net_ring port
run a_list FI_DPDK_EAL_ARGS="$ring_args" -- fi_info -p dpdk
if [[ $status -eq 0 ]] && has 'provider: dpdk' && has 'domain: net_ring0'; then
	pass "(a) fi_info -p dpdk lists net_ring0"
else
	fail "(a) fi_info -p dpdk lists net_ring0" "want exit 0 and 'domain: net_ring0'"
fi
run a_rdm FI_DPDK_EAL_ARGS="$ring_args" -- fi_info -p dpdk -t FI_EP_RDM
if [[ $status -eq 0 ]] && has 'domain: net_ring0' && has 'type: FI_EP_RDM'; then
	pass "(a) fi_info -p dpdk -t FI_EP_RDM lists net_ring0"
else
	fail "(a) fi_info -p dpdk -t FI_EP_RDM lists net_ring0" "want exit 0, net_ring0, FI_EP_RDM"
fi

# (b) no FI_DPDK_EAL_ARGS: nothing to offer.  fi_info exits with -ret.
run b_plain -- fi_info -p dpdk
if [[ $status -eq 61 ]] && has 'fi_getinfo: -61'; then
	pass "(b) without FI_DPDK_EAL_ARGS: fi_getinfo -61"
else
	fail "(b) without FI_DPDK_EAL_ARGS: fi_getinfo -61" "want exit 61 and 'fi_getinfo: -61'"
fi
run b_log FI_LOG_LEVEL=info -- fi_info -p dpdk
if [[ $status -eq 61 ]] && has 'FI_DPDK_EAL_ARGS is empty'; then
	pass "(b) FI_LOG_LEVEL=info says FI_DPDK_EAL_ARGS is empty"
else
	fail "(b) FI_LOG_LEVEL=info says FI_DPDK_EAL_ARGS is empty" "no such log line"
fi

# (c) EAL starts, no port
run c_no_port FI_DPDK_EAL_ARGS="$no_port_args" FI_LOG_LEVEL=info -- fi_info -p dpdk
if [[ $status -eq 61 ]] && has 'fi_getinfo: -61' && has 'no DPDK ports'; then
	pass "(c) no port: -61 and 'no DPDK ports' in the log"
else
	fail "(c) no port: -61 and 'no DPDK ports' in the log" "want exit 61 and the log line"
fi

# (d) EAL refuses its arguments: a warning, -61, and a normal exit (an
# abort would be 134, a crash 139).
run d_bogus FI_DPDK_EAL_ARGS="--bogus-option" FI_LOG_LEVEL=warn -- fi_info -p dpdk
if [[ $status -eq 61 ]] && has 'fi_getinfo: -61' &&
	grep -qaE 'dpdk:.*<warn>.*rte_eal_init.*failed' <<<"$out"; then
	pass "(d) bad EAL arguments: -61, a warning naming rte_eal_init, normal exit"
else
	fail "(d) bad EAL arguments: -61, a warning naming rte_eal_init, normal exit" \
		"want exit 61 and a <warn> line 'rte_eal_init ... failed'"
fi
# ... and that one line says what was wrong, while DPDK's usage text and
# log reach neither the program's stdout nor its stderr.
env FI_DPDK_EAL_ARGS="-l 0 --bogus-option" FI_LOG_LEVEL=warn timeout -k 2 15 "${preload[@]}" \
	fi_info -p dpdk >"$work/d_stdout.log" 2>"$work/d_stderr.log" || true
out=$(cat "$work/d_stdout.log" "$work/d_stderr.log")
if [[ ! -s "$work/d_stdout.log" ]] && ! grep -qa 'Usage' <<<"$out" &&
	[[ $(grep -ca 'dpdk:' "$work/d_stderr.log") -eq 1 ]] &&
	grep -qa "unrecognized option '--bogus-option'" "$work/d_stderr.log" &&
	! grep -qa '^EAL:' "$work/d_stderr.log"; then
	pass "(d) bad EAL arguments: one log line naming the option, nothing from DPDK itself"
else
	fail "(d) bad EAL arguments: one log line naming the option, nothing from DPDK itself" \
		"want an empty stdout and one dpdk line naming --bogus-option on stderr"
fi

# every_param_documented NAME: the last output lists each of ${params[@]} as
# "# FI_DPDK_<NAME>: ..." followed by a help line containing "default", and
# every FI_DPDK_* variable it lists has "default" in its help.
every_param_documented() {
	local check=$1 name var missing=() undocumented=()
	for name in "${params[@]}"; do
		var=FI_DPDK_${name^^}
		has "^# $var:" || missing+=("$var")
	done
	# The help line follows the "# NAME: Type" line.
	while read -r var; do
		undocumented+=("$var")
	done < <(awk '/^# FI_DPDK_[A-Z0-9_]*:/ { name = $2; sub(":", "", name); getline;
		if ($0 !~ /default/) print name }' <<<"$out")
	if [[ $status -eq 0 && ${#missing[@]} -eq 0 && ${#undocumented[@]} -eq 0 ]]; then
		pass "$check"
	else
		fail "$check" "missing: ${missing[*]:-none}; help without 'default': ${undocumented[*]:-none}"
	fi
}

# (e) with the ring port
run e_params FI_DPDK_EAL_ARGS="$ring_args" -- fi_info -p dpdk -e
every_param_documented "(e) fi_info -p dpdk -e documents every FI_DPDK_* parameter"

# (f) with no EAL arguments at all.  Stock fi_info 1.17 prints the
# variables only after its fi_getinfo succeeded, and `-p dpdk` makes that
# the provider's fi_getinfo, which (b) says fails without EAL: so
# `fi_info -p dpdk -e` cannot list them here, by fi_info's design.  Listing
# does work without -p (every provider's parameters), filtered with -g, and
# with -l (FI_PROV_ATTR_ONLY needs no EAL) -- and none of them starts EAL.
run f_all -- fi_info -e
every_param_documented "(f) no EAL args: fi_info -e documents every FI_DPDK_* parameter"
if has '^EAL:'; then
	fail "(f) no EAL args: fi_info -e does not start EAL" "EAL printed lines"
else
	pass "(f) no EAL args: fi_info -e does not start EAL"
fi
run f_filtered -- fi_info -g FI_DPDK_
every_param_documented "(f) no EAL args: fi_info -g FI_DPDK_ documents every parameter"
run f_prov_attr -- fi_info -l -p dpdk -e
every_param_documented "(f) no EAL args: fi_info -l -p dpdk -e documents every parameter"
run f_with_p -- fi_info -p dpdk -e
if [[ $status -eq 0 || $status -eq 61 ]] && ! has '^EAL:'; then
	pass "(f) no EAL args: fi_info -p dpdk -e exits normally (status $status) without EAL"
else
	fail "(f) no EAL args: fi_info -p dpdk -e exits normally without EAL" \
		"want exit 0 or 61 and no EAL output"
fi

# (g) typed parameters, and bad values said wherever they are read
run g_types -- fi_info -g FI_DPDK_
if has '^# FI_DPDK_QUEUES: Integer' && has '^# FI_DPDK_CHECKSUM: Boolean' &&
	has '^# FI_DPDK_UNEXPECTED_BYTES: size_t' && has '^# FI_DPDK_STEERING: String'; then
	pass "(g) fi_info shows numbers as Integer or size_t, FI_DPDK_CHECKSUM as Boolean"
else
	fail "(g) fi_info shows the parameters' types" "want Integer, size_t, Boolean, String"
fi
run g_bad FI_LOG_LEVEL=warn FI_DPDK_EAL_ARGS="$ring_args" FI_DPDK_QUEUES=abc \
	FI_DPDK_CHECKSUM=maybe FI_DPDK_UNEXPECTED_BYTES=-1 -- fi_info -p dpdk
if [[ $status -eq 0 ]] && has 'ignoring bad parameter values:.*FI_DPDK_QUEUES=abc' &&
	has 'FI_DPDK_CHECKSUM=maybe' && has 'FI_DPDK_UNEXPECTED_BYTES=-1'; then
	pass "(g) bad values are warned about and ignored (fi_info still lists the port)"
else
	fail "(g) bad values are warned about and ignored" "want exit 0 and the warning naming each"
fi
# A program that starts EAL itself (fi_dpdk_eal_init) before fi_getinfo:
# the warning used to be said only where the provider starts EAL.
if [[ -x "${OFI_DPDK_MSGCOST:-}" ]]; then
	# shellcheck disable=SC2086
	run g_host FI_LOG_LEVEL=warn FI_DPDK_QUEUES=abc -- "$OFI_DPDK_MSGCOST" $ring_args -- \
		--count 10 --warmup 1
	if [[ $status -eq 0 ]] && has 'ignoring bad parameter values:.*FI_DPDK_QUEUES=abc'; then
		pass "(g) a program that starts EAL itself hears of a bad value too"
	else
		fail "(g) a program that starts EAL itself hears of a bad value" "no warning"
	fi
fi

if ((failures > 0)); then
	echo "test_fi_info.sh: $failures check(s) failed"
	exit 1
fi
echo "test_fi_info.sh: all checks passed"
