#!/bin/bash
# test_format.sh SOURCE_ROOT: every C++ file of the repository's (but
# include/fi_dpdk.h, C in libfabric's layout) is as .clang-format lays it
# out. Formatting depends on clang-format's version: the tree follows
# Debian 12's clang-format 14, and the test skips (77) with another one or
# none, saying so. To fix a failure: clang-format -i FILE (or git
# clang-format on the lines changed).
set -u
root=$1
if ! command -v clang-format >/dev/null; then
	echo "SKIP: no clang-format (apt-get install clang-format)"
	exit 77
fi
major=$(clang-format --version | sed -nE 's/.*version ([0-9]+)\..*/\1/p')
if [ "$major" != 14 ]; then
	echo "SKIP: clang-format $major lays out differently from 14, which the tree follows"
	exit 77
fi
cd "$root" || exit 1
if git rev-parse --git-dir >/dev/null 2>&1; then
	# Tracked files and new ones not yet added (a clean clone, as CI has,
	# holds them once committed), not those .gitignore names (build trees).
	mapfile -t files < <(git ls-files --cached --others --exclude-standard --deduplicate \
		'*.cc' '*.h' | grep -v '^include/' | while IFS= read -r f; do [ -f "$f" ] && echo "$f"; done)
else
	mapfile -t files < <(find lib drivers app test -name '*.cc' -o -name '*.h')
fi
[ "${#files[@]}" -gt 100 ] || { echo "FAIL: found only ${#files[@]} C++ files under $root"; exit 1; }
# One clang-format for all of them (a start per file is most of the time);
# file by file only to name the ones that differ.
unformatted=()
if ! clang-format --dry-run -Werror "${files[@]}" >/dev/null 2>&1; then
	for f in "${files[@]}"; do
		clang-format --dry-run -Werror "$f" >/dev/null 2>&1 || unformatted+=("$f")
	done
	[ "${#unformatted[@]}" -gt 0 ] || { echo "FAIL: clang-format failed on the files together"; exit 1; }
fi
if [ "${#unformatted[@]}" -gt 0 ]; then
	echo "FAIL: ${#unformatted[@]} of ${#files[@]} files are not as .clang-format lays them out:"
	for f in "${unformatted[@]}"; do
		echo "  $f"
		clang-format "$f" | diff -u "$f" - | head -n 20 | sed 's/^/    /'
	done
	exit 1
fi
echo "${#files[@]} C++ files laid out as .clang-format says (clang-format $major)"
