#!/bin/bash
# What `meson install` gives an operator, installed into a scratch DESTDIR:
#   - the provider in libfabric's provider folder, fi_dpdk.h, fi_dpdk(7),
#     dpdk-fi-switch, dpdk-fi-run (the launcher, as a command), and
#     dpdk-fi-mpibench where MPI was found at configure time;
#   - ofi-dpdk.pc: a C program that calls fi_dpdk_eal_ready() compiles and
#     links with `pkg-config --cflags --libs ofi-dpdk` alone, and runs
#     against the installed library (it prints 0: EAL is not up);
#   - the installed launcher runs (--help) with nothing of the repository
#     beside it.
# Usage: test_install.sh BUILDDIR
set -eu
builddir=$(realpath "$1")
work=$(mktemp -d /tmp/ofi-dpdk-install.XXXXXX)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

meson install -C "$builddir" --destdir "$work/root" --no-rebuild --quiet \
	>"$work/install.log" 2>&1 || { cat "$work/install.log" >&2; fail "meson install"; }
root=$work/root

one() {  # the single installed file named $1
	local found
	found=$(find "$root" -name "$1" \( -type f -o -type l \) | head -1)
	[ -n "$found" ] || fail "$1 is not installed"
	echo "$found"
}
provider=$(one 'libdpdk-fi.so')
case "$provider" in */libfabric/libdpdk-fi.so) ;; *) fail "provider at $provider, not in a libfabric/ folder" ;; esac
one fi_dpdk.h >/dev/null
one fi_dpdk.7 >/dev/null
one dpdk-fi-switch >/dev/null
launcher=$(one dpdk-fi-run)
[ -x "$launcher" ] || fail "dpdk-fi-run is not executable"
if [ -e "$builddir/app/mpibench/dpdk-fi-mpibench" ]; then
	one dpdk-fi-mpibench >/dev/null
fi
pc=$(one ofi-dpdk.pc)

# The .pc names paths under the prefix; the sysroot puts them in DESTDIR.
export PKG_CONFIG_PATH=$(dirname "$pc") PKG_CONFIG_SYSROOT_DIR=$root
flags=$(pkg-config --cflags --libs ofi-dpdk) || fail "pkg-config ofi-dpdk"
case "$flags" in *-ldpdk-fi*) ;; *) fail "pkg-config's flags lack -ldpdk-fi: $flags" ;; esac
cat >"$work/program.c" <<'EOF'
#include <fi_dpdk.h>
#include <stdio.h>
int main(void) {
	printf("%d\n", fi_dpdk_eal_ready());
	return 0;
}
EOF
# shellcheck disable=SC2086  # the flags are words
cc -o "$work/program" "$work/program.c" $flags 2>"$work/cc.log" ||
	{ cat "$work/cc.log" >&2; fail "a program does not build with pkg-config's flags: $flags"; }
ready=$(LD_LIBRARY_PATH=$(dirname "$provider") "$work/program") ||
	fail "the program linked against the installed provider did not run"
[ "$ready" = 0 ] || fail "fi_dpdk_eal_ready() said $ready before any EAL start"

"$launcher" --help >"$work/help.txt" 2>&1 || { cat "$work/help.txt" >&2; fail "dpdk-fi-run --help"; }
grep -q -- '--topology' "$work/help.txt" || fail "dpdk-fi-run --help does not show --topology"
echo "installed: provider, header, man page, switch, launcher, ofi-dpdk.pc; a program built from the .pc runs"
