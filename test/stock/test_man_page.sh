#!/bin/bash
# Usage: test_man_page.sh   (env: FI_PROVIDER_PATH, OFI_DPDK_SOURCE_ROOT)
#
# fi_dpdk(7) documents every runtime parameter: each FI_DPDK_* variable that
# stock `fi_info -g FI_DPDK_` lists from the provider appears in
# doc/man/fi_dpdk.7, and the page renders with man(1) without warnings.
set -euo pipefail
command -v fi_info >/dev/null || { echo "fi_info missing (libfabric-bin)"; exit 77; }
page="$OFI_DPDK_SOURCE_ROOT/doc/man/fi_dpdk.7"
[ -f "$page" ] || { echo "FAIL: no $page"; exit 1; }
# shellcheck source-path=SCRIPTDIR source=sanitizer_preload.sh
source "$(dirname "${BASH_SOURCE[0]}")/sanitizer_preload.sh" "$FI_PROVIDER_PATH"
names=$(timeout 30 "${preload[@]}" fi_info -g FI_DPDK_ | sed -n 's/^# \(FI_DPDK_[A-Z_]*\):.*/\1/p' | sort -u)
[ -n "$names" ] || { echo "FAIL: fi_info listed no FI_DPDK_ parameter"; exit 1; }
missing=0
for name in $names; do
	if ! grep -qw "$name" "$page"; then
		echo "FAIL: $name is not in fi_dpdk(7)"
		missing=1
	fi
done
((missing == 0)) || exit 1
if command -v man >/dev/null; then
	warnings=$(MANWIDTH=80 man --warnings -l "$page" 2>&1 >/dev/null || true)
	[ -z "$warnings" ] || { echo "FAIL: man warns: $warnings"; exit 1; }
fi
echo "fi_dpdk(7) documents all $(echo "$names" | wc -w) FI_DPDK_* parameters"
