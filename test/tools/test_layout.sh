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

# What reads or writes a frame's bytes; each name must be one the framer
# uses (so none goes unchecked after a rename), and no provider file may
# call it (comments aside).
frame_calls=(rte_pktmbuf_mtod rte_pktmbuf_append decode_frame decode_udp_payload
	decode_quoted_header encode_headers encode_header seal_keyed begin_seal finish_seal
	mark_unsealed copy_payload lend_payload parse_ipv4_packet parse_ipv6_packet parse_arp
	parse_udp parse_udp6 parse_neighbour_message encode_udp4 encode_udp6 build_arp
	build_echo_reply build_echo6_reply build_neighbour_solicitation
	build_neighbour_advertisement build_unicast_solicitation)
for call in "${frame_calls[@]}"; do
	if ! grep -qw "$call" drivers/frames/*.cc drivers/frames/*.h; then
		echo "FAIL: $call is not in drivers/frames: the frame check names a call nobody makes"
		failed=1
	fi
	hits=$(grep -nw "$call" drivers/ofi/*.cc drivers/ofi/*.h)
	status=$?
	found=$(grep -v '^[^:]*:[0-9]*: *//' <<<"$hits")
	if [ "$status" -gt 1 ]; then
		echo "FAIL: could not read the provider's files"
		failed=1
	elif [ -n "$found" ]; then
		printf '%s\n' "$found"
		echo "FAIL: the provider calls $call above: reading and writing frames is drivers/frames' work"
		failed=1
	fi
done

if [ "$widest_count" -eq 0 ]; then
	echo "FAIL: found no #include \"drivers/ofi/...\" line in the provider's files"
	exit 1
fi
((failed)) && exit 1
echo "${#sources[@]} C++ files of at most 800 lines; the provider's widest header," \
	"$widest, is included by $widest_count of its $count files"
