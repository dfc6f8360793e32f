# sanitizer_preload.sh: sourced by the stock tests, after FI_PROVIDER_PATH is
# known.  A provider built with a sanitizer (dpdk-fi-test.sh --sanitize)
# needs the sanitizer's runtime loaded first in the process, before libc;
# fi_info and fi_pingpong are not built with it and only dlopen the provider,
# so the runtime must be preloaded into them (and only into them: not into
# bash, timeout or the launcher).  Sets `preload` to what goes in front of
# such a program: `env LD_PRELOAD=<runtime>`, or nothing for a normal build.
# LeakSanitizer stays on in them too: they leak nothing at exit.
# shellcheck shell=bash

# shellcheck disable=SC2034  # the sourcing script reads it
preload=()
sanitizer_runtime=$(ldd "${1:?give the folder of libdpdk-fi.so}/libdpdk-fi.so" 2>/dev/null |
	awk '$1 ~ /^lib(asan|tsan)\.so/ { print $3; exit }')
if [[ -n "$sanitizer_runtime" ]]; then
	preload=(env "LD_PRELOAD=$sanitizer_runtime")
fi
