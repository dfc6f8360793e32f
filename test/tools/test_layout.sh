#!/bin/bash
# test_layout.sh SOURCE_ROOT: the source tree keeps the shape that lets a
# reader find things (issue 43, doc/architecture.md "drivers/ofi"):
#   - no C++ file under lib/, drivers/ or app/ is over 800 lines;
#   - no header of the provider (drivers/ofi) is included directly by more
#     than a third of the provider's files: each file includes what it
#     uses, and no hub header drags the whole provider into every file;
#   - the provider reads and writes no frame: every header between a
#     segment and an mbuf is drivers/frames' (the framer), so no provider
#     file calls the frame codec, the IP frames' parsers and builders, or
#     looks into an mbuf's bytes.
set -uo pipefail
root=$1
cd "$root" || exit 1
failed=0

mapfile -t sources < <(find lib drivers app -name '*.cc' -o -name '*.h')
[ "${#sources[@]}" -gt 100 ] || { echo "FAIL: found only ${#sources[@]} C++ files under $root"; exit 1; }
for f in "${sources[@]}"; do
	lines=$(wc -l <"$f")
	if [ "$lines" -gt 800 ]; then
		echo "FAIL: $f has $lines lines (at most 800: split it by what it holds)"
		failed=1
	fi
done

mapfile -t provider < <(find drivers/ofi -name '*.cc' -o -name '*.h')
count=${#provider[@]}
[ "$count" -gt 20 ] || { echo "FAIL: found only $count files under drivers/ofi"; exit 1; }
widest=""
widest_count=0
while read -r uses header; do
	if [ $((uses * 3)) -gt "$count" ]; then
		echo "FAIL: $header is included by $uses of the provider's $count files (at most a third)"
		failed=1
	fi
	if [ "$uses" -gt "$widest_count" ]; then
		widest=$header
		widest_count=$uses
	fi
done < <(grep -Ho '^#include "drivers/ofi/[a-z0-9_]*\.h"' "${provider[@]}" | sort -u |
	sed 's/^[^:]*:#include "//; s/"$//' | sort | uniq -c)

frame_calls='rte_pktmbuf_mtod|decode_frame|decode_udp_payload|encode_headers?\(|seal_keyed|begin_seal|finish_seal|mark_unsealed|parse_(ipv4|ipv6)_packet|parse_arp|parse_udp6?\(|encode_udp[46]|build_(arp|echo|neighbour)'
if grep -nE "$frame_calls" drivers/ofi/*.cc drivers/ofi/*.h; then
	echo "FAIL: the provider reads or writes frames above (that is drivers/frames' work)"
	failed=1
fi
grep -qE "$frame_calls" drivers/frames/*.cc || { echo "FAIL: the frame check matches nothing in drivers/frames"; exit 1; }

if [ "$widest_count" -eq 0 ]; then
	echo "FAIL: found no #include \"drivers/ofi/...\" line in the provider's files"
	exit 1
fi
((failed)) && exit 1
echo "${#sources[@]} C++ files of at most 800 lines; the provider's widest header," \
	"$widest, is included by $widest_count of its $count files"
