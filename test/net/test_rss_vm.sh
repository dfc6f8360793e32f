#!/bin/bash
# test_rss_vm.sh: RSS steering on two virtio-net NICs with four queue
# pairs and QEMU's RSS (in software where its eBPF program cannot load), in
# a VM (usertools/dpdk-fi-vm.sh).  On this machine the script makes two
# multi-queue tap interfaces and a bridge joining them for the NICs' back
# ends (names unique to the run, removed at exit); in the guest it hands
# the NICs to uio_pci_generic and runs
#  - test_rss_vm (test_rss_vm.cc): net::Port reads the device's key and
#    table, and every frame lands where lib/ip/rss.h predicts;
#  - test_flow_steering (test_flow_steering.cc) through the provider with
#    FI_DPDK_STEERING=rss: endpoints on queues 1-3 name the source ports
#    that reach their queue, and their peers' frames come on it.
# Exit status: 0 passed, 1 failed, 77 no VM kit, or no tun/bridge here.
set -uo pipefail

build=${OFI_DPDK_BUILD_ROOT:?}
source_root=${OFI_DPDK_SOURCE_ROOT:?}

if [[ "${1:-}" != --guest ]]; then
	tag=$(printf '%04x' $(($$ % 65536)))
	bridge=ofirssb$tag taps=(ofirss0$tag ofirss1$tag)
	cleanup() {
		ip link del "${taps[0]}" 2>/dev/null
		ip link del "${taps[1]}" 2>/dev/null
		ip link del "$bridge" 2>/dev/null
	}
	trap cleanup EXIT
	ip link add "$bridge" type bridge 2>/dev/null || { echo "no bridge here"; exit 77; }
	args=()
	for i in 0 1; do
		ip tuntap add dev "${taps[i]}" mode tap multi_queue 2>/dev/null ||
			{ echo "no multi-queue tap here"; exit 77; }
		ip link set "${taps[i]}" master "$bridge"
		ip link set "${taps[i]}" up
		args+=(--qemu-arg -netdev --qemu-arg "tap,id=n$i,ifname=${taps[i]},script=no,downscript=no,queues=4"
			--qemu-arg -device
			--qemu-arg "virtio-net-pci,netdev=n$i,mq=on,vectors=10,rss=on,mac=02:00:00:0a:00:0$((i + 1))")
	done
	ip link set "$bridge" up
	bash "$source_root/usertools/dpdk-fi-vm.sh" run --builddir "$build" --timeout 600 "${args[@]}" \
		-- bash "${BASH_SOURCE[0]}" --guest
	exit $?
fi

# --- inside the VM ---------------------------------------------------------
devices=()
for device in /sys/bus/pci/devices/*; do
	# virtio (0x1af4) network devices: transitional 0x1000, modern 0x1041
	[[ "$(cat "$device/vendor")" == 0x1af4 ]] || continue
	case "$(cat "$device/device")" in 0x1000 | 0x1041) ;; *) continue ;; esac
	address=${device##*/}
	[[ -e "$device/driver" ]] && echo "$address" >"$device/driver/unbind"
	echo uio_pci_generic >"$device/driver_override"
	echo "$address" >/sys/bus/pci/drivers_probe
	devices+=("$address")
done
((${#devices[@]} == 2)) || { echo "FAIL: ${#devices[@]} virtio-net devices"; exit 1; }
eal="-l 0-1 --no-telemetry --log-level=lib.eal:error -a ${devices[0]} -a ${devices[1]}"
OFI_DPDK_RSS_EAL_ARGS="$eal --file-prefix rss" "$build/test/net/test_rss_vm" ||
	{ echo "FAIL: test_rss_vm"; exit 1; }

# Through the provider.  The program waits at two points for the script
# (test_flow_steering_vm.sh rearranges taps there); here nothing needs doing.
while IFS= read -r name; do unset "$name"; done < <(compgen -e | grep '^FI_DPDK_')
export OFI_DPDK_STEERING_SYNC=/tmp/steering-sync OFI_DPDK_STEERING_PORTS="${devices[0]},${devices[1]}"
mkdir -p "$OFI_DPDK_STEERING_SYNC"
(
	for pair in opened:go closed:checked; do
		until [[ -f $OFI_DPDK_STEERING_SYNC/${pair%:*} ]]; do sleep 0.2; done
		touch "$OFI_DPDK_STEERING_SYNC/${pair#*:}"
	done
) &
helper=$!
export FI_DPDK_EAL_ARGS="$eal --file-prefix rss-provider"
export FI_DPDK_PORT_ADDR="${devices[0]}=10.9.0.1/24,${devices[1]}=10.9.0.2/24,\
${devices[0]}=fd00:9::1/64,${devices[1]}=fd00:9::2/64"
# The bridge on the host carries 1500-byte frames.
export FI_DPDK_STEERING=rss FI_DPDK_QUEUES=4 FI_DPDK_MTU=1500
"$build/test/net/test_flow_steering" 2>/tmp/provider.log
status=$?
kill "$helper" 2>/dev/null
if ((status != 0)); then
	tail -n 30 /tmp/provider.log
	echo "FAIL: test_flow_steering with FI_DPDK_STEERING=rss"
	exit 1
fi
echo "PASS: RSS steering on virtio-net"
