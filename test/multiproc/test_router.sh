#!/bin/bash
# Usage: test_router.sh
#
# Stock fi_pingpong (libfabric-bin) across a router: two hosts on different
# subnets (network namespaces, usertools/dpdk-fi-router.sh), each process on
# net_af_packet with the address and gateway of its host
# (FI_DPDK_PORT_ADDR=10.77.x.2/24@10.77.x.1), the Linux kernel of a third
# namespace forwarding between them.  The client names the server by its
# IPv4 address alone, as with any provider (fi_pingpong 10.77.2.2; the
# control connection crosses the router in the kernel's TCP).  Asserts:
#   1. fi_pingpong -I 200 -S 64 and -I 5 -S all -c (every size to 6 MiB,
#      data checked) exit 0 on both sides;
#   2. a frame of ours caught on host b's link (a raw socket there) is
#      UDP from 10.77.1.2 to port 9228 + queue, its TTL one less than the
#      64 it left with: the router forwarded it;
#   3. with neighbour entries trusted for 1 s (FI_DPDK_NEIGHBOUR_LIFETIME_MS)
#      a pingpong of several seconds passes, the client's port having asked
#      for its gateway again at least twice while the connection was live,
#      and no frame lost to an unresolved next hop.
#   4. fabtests 1.17.0 / 2.1.0 (../shared/fabtests, built once by
#      devtools/dpdk-fi-fabtests.sh --build-only), in-band:
#      fi_rdm_pingpong, fi_rdm_tagged_bw, fi_rma_bw -o write and
#      fi_msg_pingpong (FI_EP_MSG) across the router; FI_EP_DGRAM by IP
#      address (dgram_by_ip.sh): fi_dgram, fi_dgram_pingpong with the
#      client's -s, and without it fabtests 1.17's client refused with the
#      reason logged (it inserts a NULL address).
# Then over two routers with two equal-cost paths between them (--paths 2):
#   5. fi_multi_ep with 8 endpoints a side: frames cross on both paths
#      (the pairs' source ports hash apart);
#   5b. one connection with FI_DPDK_SPRAY_PATHS=8: in some direction,
#      both links carry a twentieth of its frames or more;
#   6. a pingpong whose path stops carrying frames mid-run (both ends of
#      its link get MTU 68: every frame of ours is too big, DF set) still
#      passes: the connection moves to another path (its client counts
#      path changes) and the other link carries it on.
# Host b's process takes its address and gateway from the kernel's on its
# interface; host a's are given (--ip).  Skips (77) without root,
# iproute2, fi_pingpong or network namespaces.  Every process runs
# under `timeout`; the trap removes the namespaces.
set -euo pipefail
ROUTER_NAME_PREFIX=ofirt
ROUTER_UP_ARGS=()
SERVER_ADDRESS=10.77.2.2
CLIENT_PORT_ARGS=(--ip 10.77.1.2/24@10.77.1.1)
PINGPONG_ARGS=()
FAMILY_NOTE=""
# shellcheck source-path=SCRIPTDIR source=router_common.sh
source "$(dirname "${BASH_SOURCE[0]}")/router_common.sh"
# shellcheck source-path=SCRIPTDIR source=dgram_by_ip.sh
source "$(dirname "${BASH_SOURCE[0]}")/dgram_by_ip.sh"

# The first of our UDP frames that reaches host b: its source, destination
# port and TTL, as "SOURCE PORT TTL".
cat >"$work/catch.py" <<'PY'
import socket, struct, sys
s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(0x0800))
s.bind((sys.argv[1], 0))
s.settimeout(60)
while True:
    frame = s.recv(65535)
    ip = frame[14:]
    if len(ip) < 28 or ip[9] != 17:
        continue
    port = struct.unpack("!H", ip[(ip[0] & 15) * 4 + 2:][:2])[0]
    if 9228 <= port < 9228 + 64:
        print(socket.inet_ntoa(ip[12:16]), port, ip[8], flush=True)
        break
PY

timeout 90 ip netns exec "$name-b" python3 "$work/catch.py" "$name-b0" >"$work/caught" 2>&1 &
catcher=$!
pingpong small 60 -I 200 -S 64
wait "$catcher" || true
read -r source port ttl <"$work/caught" || true
if [[ "${source:-}" == 10.77.1.2 && "${ttl:-}" == 63 ]]; then
	echo "ok    a frame on host b's link: UDP from $source to port $port, TTL $ttl (64 less the router's hop)"
else
	echo "FAIL  the frame caught on host b's link: '$(cat "$work/caught")' (want 10.77.1.2 9228+q 63)"
	failures=$((failures + 1))
fi
pingpong all_sizes 120 -I 5 -S all -c

# 3. ARP entries expire under a live connection: asked for again in time.
FI_LOG_LEVEL=info FI_LOG_PROV=dpdk FI_LOG_SUBSYS=domain FI_DPDK_NEIGHBOUR_LIFETIME_MS=1000 \
	pingpong expiry 120 -I 250000 -S 64
counts=$(grep -ao "lost unresolved [0-9]*; next hops refreshed [0-9]*" "$work/expiry-client.log" || true)
read -r lost refreshed < <(echo "$counts" | awk '{print $3, $7}' | tr -d ';')
if [[ -n "$counts" && "$lost" == 0 && "${refreshed:-0}" -ge 2 ]]; then
	echo "ok    gateway entry (lifetime 1 s) refreshed $refreshed times under a live connection, nothing lost"
else
	echo "FAIL  neighbour refresh: '$counts' (want lost 0, refreshed >= 2)"
	failures=$((failures + 1))
fi
# 4. libfabric's fabtests, in-band (the client names the server by address
#    and fabtests' default service, 9228: its queue 0).
if fabtests=$(bash "$root/devtools/dpdk-fi-fabtests.sh" --builddir "${OFI_DPDK_BUILD_ROOT:?}" \
	--build-only 2>&1); then
	bin=$(find "$OFI_DPDK_BUILD_ROOT" -maxdepth 3 -path '*/fabtests-*/install/bin' -type d | head -1)
	pair ft_pingpong 60 "$bin/fi_rdm_pingpong" -p dpdk -S 8 -I 2000
	pair ft_tagged_bw 60 "$bin/fi_rdm_tagged_bw" -p dpdk -S 65536 -I 500
	pair ft_rma_write 60 "$bin/fi_rma_bw" -p dpdk -e rdm -o write -S 65536 -I 500
	pair ft_msg_pingpong 60 "$bin/fi_msg_pingpong" -p dpdk -S 1024 -I 1000
	dgram_by_ip "10.77.1.2"
elif [ $? = 77 ]; then
	# No fabtests here (a clone without ../shared/fabtests): the part is
	# not run, and says why; the rest of the test stands.
	echo "SKIP  fabtests part: $(echo "$fabtests" | tail -n 1)"
else
	echo "FAIL  fabtests could not be built: $(echo "$fabtests" | tail -n 3)"
	failures=$((failures + 1))
fi
# tx_packets LINK: frames the routers sent over LINK (p1 or p2), both ways.
tx_packets() {
	echo $(($(ip netns exec "$name-r" cat "/sys/class/net/$name-r$1/statistics/tx_packets") +
		$(ip netns exec "$name-s" cat "/sys/class/net/$name-s$1/statistics/tx_packets")))
}
"$root/usertools/dpdk-fi-router.sh" down --name "$name"
"$root/usertools/dpdk-fi-router.sh" up --name "$name" --paths 2
if [[ -n "${bin:-}" ]]; then
	# (fabtests 1.17's multi_ep.c drops the src_addr its fi_dupinfo copied,
	# 16 bytes an endpoint: under --sanitize address its leak check is off.)
	saved_preload=("${preload[@]}")
	((${#preload[@]})) && preload+=("ASAN_OPTIONS=${ASAN_OPTIONS:-}:detect_leaks=0")
	pair ft_multi_ep 60 "$bin/fi_multi_ep" -p dpdk -e rdm -c 8
	preload=("${saved_preload[@]}")
	p1=$(tx_packets p1) p2=$(tx_packets p2)
	if ((p1 > 0 && p2 > 0)); then
		echo "ok    8 endpoint pairs over two paths: $p1 and $p2 frames"
	else
		echo "FAIL  8 endpoint pairs over two paths: $p1 and $p2 frames (want both > 0)"
		failures=$((failures + 1))
	fi
fi
# 5b. One connection sprayed over 8 paths (FI_DPDK_SPRAY_PATHS): its
#     frames' source ports hash onto both links.  Counted per direction at
#     the router that sends it over the links (r: host a to host b; s: b
#     to a), since each direction has source ports of its own.  The
#     routers' hash is fixed (dpdk-fi-router.sh), but which 8 ports a
#     connection gets depends on its queues, so a direction may put 7
#     lanes on one link and 1 on the other (a CI run: 108913 and 10201
#     frames, 8.6 %, the lone lane also carrying fewer acks), or all 8 on
#     one link (1 run in 128).  The check: in some direction, each link
#     carries a twentieth of the frames or more; both directions' 8 lanes
#     on one link each is 1 run in 16,384.
r_tx() { ip netns exec "$name-r" cat "/sys/class/net/$name-r$1/statistics/tx_packets"; }
s_tx() { ip netns exec "$name-s" cat "/sys/class/net/$name-s$1/statistics/tx_packets"; }
before1=$(r_tx p1) before2=$(r_tx p2) back1=$(s_tx p1) back2=$(s_tx p2)
FI_DPDK_SPRAY_PATHS=8 pingpong spray 90 -I 2000 -S 65536
d1=$(($(r_tx p1) - before1)) d2=$(($(r_tx p2) - before2))
e1=$(($(s_tx p1) - back1)) e2=$(($(s_tx p2) - back2))
spread() { (($1 * 20 >= $1 + $2 && $2 * 20 >= $1 + $2)); }
if spread "$d1" "$d2" || spread "$e1" "$e2"; then
	echo "ok    one connection sprayed over 8 paths: a to b $d1 and $d2 frames, b to a $e1 and $e2 on the two links"
else
	echo "FAIL  one connection sprayed over 8 paths: a to b $d1 and $d2 frames, b to a $e1 and $e2 (want each link >= a twentieth one way)"
	failures=$((failures + 1))
fi
# 6. The path a pingpong takes breaks under it.
FI_LOG_LEVEL=info FI_LOG_PROV=dpdk FI_LOG_SUBSYS=ep_data \
	pingpong failover 180 -I 150000 -S 64 &
runner=$!
broken=""
for _ in $(seq 300); do
	before1=$(tx_packets p1) before2=$(tx_packets p2)
	sleep 0.2
	d1=$(($(tx_packets p1) - before1)) d2=$(($(tx_packets p2) - before2))
	if ((d1 + d2 >= 500)); then
		broken=p1 spare=p2
		((d2 > d1)) && broken=p2 spare=p1
		break
	fi
done
if [[ -n "$broken" ]]; then
	ip netns exec "$name-r" ip link set "$name-r$broken" mtu 68
	ip netns exec "$name-s" ip link set "$name-s$broken" mtu 68
	spare_before=$(tx_packets "$spare")
fi
wait "$runner" || failures=$((failures + 1))
changes=$( (grep -ao "path changes [0-9]*" "$work/failover-client.log" || true) | awk '{s += $3} END {print s + 0}')
if [[ -z "$broken" ]]; then
	echo "FAIL  the pingpong never got going on either path"
	failures=$((failures + 1))
elif ((changes >= 1 && $(tx_packets "$spare") - spare_before > 10000)); then
	echo "ok    path $broken broke mid-run: $changes path change(s), $spare carried $(($(tx_packets "$spare") - spare_before)) frames after"
else
	echo "FAIL  path $broken broke mid-run: $changes path changes, $spare carried $(($(tx_packets "$spare") - spare_before)) frames after"
	failures=$((failures + 1))
fi
((failures == 0))
