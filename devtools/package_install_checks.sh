#!/bin/bash
# package_install_checks.sh: run by devtools/dpdk-fi-package.sh inside a
# clean root where ofi-dpdk and ofi-dpdk-dev were installed by apt, with
# nothing of the repository at hand. Each check prints "ok ..." or fails
# the script with what it saw.
set -euo pipefail

fail() { echo "FAIL: $*" >&2; exit 1; }
work=$(mktemp -d)

# The provider where libfabric looks, found without FI_PROVIDER_PATH.
[[ -z "${FI_PROVIDER_PATH:-}" ]] || fail "FI_PROVIDER_PATH is set"
provider=$(dpkg -L ofi-dpdk | grep '/libfabric/libdpdk-fi\.so$') || fail "ofi-dpdk holds no provider"
# EAL needs memory to start, which fi_getinfo does: no hugepages here.
export FI_DPDK_EAL_ARGS="-l 0 --no-huge -m 256 --no-shconf --no-pci --no-telemetry --vdev=net_ring0"
fi_info -p dpdk >"$work/fi_info.txt" 2>&1 || { cat "$work/fi_info.txt"; fail "fi_info -p dpdk"; }
grep -q 'provider: dpdk' "$work/fi_info.txt" || { cat "$work/fi_info.txt"; fail "fi_info lists no dpdk"; }
echo "ok    fi_info -p dpdk finds $provider ($(grep -c 'provider: dpdk' "$work/fi_info.txt") entries)"
unset FI_DPDK_EAL_ARGS

# Stock fi_pingpong over a memif pair, each side through the installed
# launcher. The out-of-band port lies below the ephemeral range.
control=$((20000 + RANDOM % 10000))
socket=$work/memif.sock
timeout -k 2 60 dpdk-fi-run --topology memif-server --socket "$socket" --no-huge -- \
	fi_pingpong -p dpdk -e rdm -I 200 -S 64 -B "$control" >"$work/server.log" 2>&1 &
server=$!
for _ in $(seq 100); do
	[[ -S "$socket" ]] && break
	sleep 0.1
done
client_status=0
timeout -k 2 60 dpdk-fi-run --topology memif-client --socket "$socket" --no-huge -- \
	fi_pingpong -p dpdk -e rdm -I 200 -S 64 -P "$control" 127.0.0.1 >"$work/client.log" 2>&1 ||
	client_status=$?
server_status=0
wait "$server" || server_status=$?
if ((client_status || server_status)); then
	for side in server client; do echo "--- $side"; tail -n 20 "$work/$side.log"; done
	fail "fi_pingpong over memif: server exit $server_status, client exit $client_status"
fi
echo "ok    fi_pingpong -p dpdk over memif, launched by dpdk-fi-run: $(grep -E '^ *64 ' "$work/client.log" | tr -s ' ' | head -1)"

# A program built with pkg-config alone.
cat >"$work/program.c" <<'EOF'
#include <fi_dpdk.h>
#include <stdio.h>
int main(void) {
	printf("%d\n", fi_dpdk_eal_ready());
	return 0;
}
EOF
# shellcheck disable=SC2046  # the flags are words
gcc -o "$work/program" "$work/program.c" $(pkg-config --cflags --libs ofi-dpdk) ||
	fail "a program does not build with pkg-config --cflags --libs ofi-dpdk"
[[ "$("$work/program")" == 0 ]] || fail "the program built from ofi-dpdk.pc did not run"
echo "ok    gcc prog.c \$(pkg-config --cflags --libs ofi-dpdk) builds and runs"

# The installed launcher knows it is installed: no repository paths.
dpdk-fi-run --help >"$work/help.txt" 2>&1 || { cat "$work/help.txt"; fail "dpdk-fi-run --help"; }
if grep -q '/usr/build' "$work/help.txt"; then
	grep '/usr/build' "$work/help.txt"
	fail "dpdk-fi-run --help names repository paths"
fi
echo "ok    dpdk-fi-run --help names libfabric's provider folder, no repository path"

# A man page for each program, and fi_dpdk(7).
for program in $(dpkg -L ofi-dpdk | grep '^/usr/bin/'); do
	[[ -e /usr/share/man/man1/$(basename "$program").1.gz ]] || fail "no man page for $program"
done
[[ -e /usr/share/man/man7/fi_dpdk.7.gz ]] || fail "no fi_dpdk(7)"
echo "ok    a man page for each of $(dpkg -L ofi-dpdk | grep -c '^/usr/bin/') programs, and fi_dpdk(7)"
rm -rf "$work"
