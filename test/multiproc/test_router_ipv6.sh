#!/bin/bash
# Usage: test_router_ipv6.sh
#
# test_router.sh in IPv6: two hosts on different prefixes joined by a
# router (usertools/dpdk-fi-router.sh up --ipv6: no IPv4 at all), each
# process on net_af_packet with its kernel interface's IPv6 address and
# default router, the Linux kernel of a third namespace forwarding.  The
# client names the server by its IPv6 address alone (fi_pingpong -6
# fd00:77:2::2; the control connection crosses the router in the
# kernel's TCP).  Asserts:
#   1. fi_pingpong -I 200 -S 64 and -I 5 -S all -c (every size to 6 MiB,
#      data checked) exit 0 on both sides;
#   2. a frame of ours caught on host b's link is UDP/IPv6 from
#      fd00:77:1::2 to port 9228 + queue, with a UDP checksum, its hop
#      limit one less than the 64 it left with: the router forwarded it;
#   3. fabtests' fi_rdm_pingpong and fi_msg_pingpong in-band across the
#      router (../shared/fabtests, built once by
#      devtools/dpdk-fi-fabtests.sh --build-only), and FI_EP_DGRAM by
#      IPv6 address (dgram_by_ip.sh).
# Skips (77) without root, iproute2, fi_pingpong or network namespaces.
# Every process runs under `timeout`; the trap removes the namespaces.
set -euo pipefail
ROUTER_NAME_PREFIX=ofi6
ROUTER_UP_ARGS=(--ipv6)
SERVER_ADDRESS=fd00:77:2::2
CLIENT_PORT_ARGS=()
PINGPONG_ARGS=(-6)  # its control connection in IPv6
FAMILY_NOTE=" in IPv6"
# shellcheck source-path=SCRIPTDIR source=router_common.sh
source "$(dirname "${BASH_SOURCE[0]}")/router_common.sh"
# shellcheck source-path=SCRIPTDIR source=dgram_by_ip.sh
source "$(dirname "${BASH_SOURCE[0]}")/dgram_by_ip.sh"

# The first of our UDP/IPv6 frames that reaches host b: its source,
# destination port, hop limit and UDP checksum, as "SOURCE PORT HOPS SUM".
cat >"$work/catch.py" <<'PY'
import socket, struct, sys
s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(0x86DD))
s.bind((sys.argv[1], 0))
s.settimeout(60)
while True:
    frame = s.recv(65535)
    ip = frame[14:]
    if len(ip) < 48 or ip[6] != 17:
        continue
    port, checksum = struct.unpack("!H2xH", ip[42:48])
    if 9228 <= port < 9228 + 64:
        print(socket.inet_ntop(socket.AF_INET6, ip[8:24]), port, ip[7], checksum, flush=True)
        break
PY

timeout 90 ip netns exec "$name-b" python3 "$work/catch.py" "$name-b0" >"$work/caught" 2>&1 &
catcher=$!
pingpong small 60 -I 200 -S 64
wait "$catcher" || true
read -r source port hops checksum <"$work/caught" || true
if [[ "${source:-}" == fd00:77:1::2 && "${hops:-}" == 63 && "${checksum:-0}" != 0 ]]; then
	echo "ok    a frame on host b's link: UDP/IPv6 from $source to port $port, hop limit $hops, checksum $checksum"
else
	echo "FAIL  the frame caught on host b's link: '$(cat "$work/caught")' (want fd00:77:1::2 9228+q 63 nonzero)"
	failures=$((failures + 1))
fi
pingpong all_sizes 120 -I 5 -S all -c

if fabtests=$(bash "$root/devtools/dpdk-fi-fabtests.sh" --builddir "${OFI_DPDK_BUILD_ROOT:?}" \
	--build-only 2>&1); then
	bin=$(find "$OFI_DPDK_BUILD_ROOT" -maxdepth 3 -path '*/fabtests-*/install/bin' -type d | head -1)
	pair ft_pingpong 60 "$bin/fi_rdm_pingpong" -p dpdk -S 8 -I 2000
	pair ft_msg_pingpong 60 "$bin/fi_msg_pingpong" -p dpdk -S 1024 -I 1000
	dgram_by_ip "fd00:77:1::2"
elif [ $? = 77 ]; then
	# No fabtests here (a clone without ../shared/fabtests): the part is
	# not run, and says why; the rest of the test stands.
	echo "SKIP  fabtests part: $(echo "$fabtests" | tail -n 1)"
else
	echo "FAIL  fabtests could not be built: $(echo "$fabtests" | tail -n 3)"
	failures=$((failures + 1))
fi
((failures == 0))
