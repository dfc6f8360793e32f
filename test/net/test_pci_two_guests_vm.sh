#!/bin/bash
# test_pci_two_guests_vm.sh: an Open MPI job of two ranks, one in each of
# two VMs (usertools/dpdk-fi-vm.sh), each rank on its guest's PCI NIC
# driven by DPDK's net_virtio: two hosts with NICs.
#
# Each guest has a virtio-net NIC for DPDK, whose back end is a tap on a
# data bridge of this machine, and an e1000e NIC its kernel keeps, on a
# management bridge (10.79.0.1/24 in guest a, .2 in guest b) for Open
# MPI's own traffic.  Guest b serves a remote shell on it
# (test/net/guest_rsh.py); guest a runs mpirun (test/mpi/run_mpi.sh, its
# `guests` topology), which starts its daemon in guest b through that
# shell, and each rank binds its guest's virtio NIC for DPDK
# (uio_pci_generic) through the launcher (--topology pci --pci BDF
# --bind) and gives it back at its end.  Jobs: mpi_checks' pingpong (1 B
# to 4 MiB, every byte checked) by IP address (the ports 10.88.0.10/24 and
# .11/24, frames in UDP/IPv4); OFI_DPDK_PCI_VM_ALL=1 adds tag matching,
# and the same over L2.  Passes when every job passes and both guests end
# cleanly.  Exit status: 0 passed, 1 failed, 77 no VM kit, tap or bridge.
set -uo pipefail

build=${OFI_DPDK_BUILD_ROOT:?}
source_root=${OFI_DPDK_SOURCE_ROOT:?}
self=${BASH_SOURCE[0]}

if [[ "${1:-}" != --guest ]]; then
	tag=$(printf '%04x' $(($$ % 65536)))
	bridges=("ofi2d$tag" "ofi2m$tag")
	taps=("ofi2da$tag" "ofi2db$tag" "ofi2ma$tag" "ofi2mb$tag")
	work=$(mktemp -d /tmp/ofi-dpdk-2vm.XXXXXX)
	cleanup() {
		local link
		[[ -n ${guest_b:-} ]] && kill -- "-$guest_b" 2>/dev/null
		for link in "${taps[@]}" "${bridges[@]}"; do ip link del "$link" 2>/dev/null; done
		rm -rf "$work"
	}
	trap cleanup EXIT
	trap 'exit 1' INT TERM
	for bridge in "${bridges[@]}"; do
		ip link add "$bridge" type bridge 2>/dev/null || { echo "no bridge here"; exit 77; }
		ip link set "$bridge" up
	done
	for i in 0 1 2 3; do
		ip tuntap add dev "${taps[i]}" mode tap 2>/dev/null || { echo "no tap here"; exit 77; }
		ip link set "${taps[i]}" master "${bridges[i / 2]}"
		ip link set "${taps[i]}" up
	done
	# vm INDEX: the VM's NICs (MACs by index), the command after it.
	vm() {
		local i=$1
		vm_command=(setsid -w bash "$source_root/usertools/dpdk-fi-vm.sh" run --builddir "$build"
			--timeout 600
			--qemu-arg -netdev --qemu-arg "tap,id=d,ifname=${taps[i]},script=no,downscript=no"
			--qemu-arg -device --qemu-arg "virtio-net-pci,netdev=d,mac=02:00:00:0d:00:0$((i + 1))"
			--qemu-arg -netdev --qemu-arg "tap,id=m,ifname=${taps[i + 2]},script=no,downscript=no"
			--qemu-arg -device --qemu-arg "e1000e,netdev=m,mac=02:00:00:0e:00:0$((i + 1))"
			-- bash "$self" --guest)
	}
	# (Guest b's VM in a session of its own, which cleanup ends whole.)
	vm 1
	"${vm_command[@]}" b >"$work/guest-b.log" 2>&1 &
	guest_b=$!
	vm 0
	"${vm_command[@]}" a
	status_a=$?
	# Guest a told guest b's shell to stop (or b stops by itself within
	# its 500 s).
	wait "$guest_b"
	status_b=$?
	guest_b=""
	grep -ao "guest b: .*\|guest_rsh: .*" "$work/guest-b.log"
	if ((status_a != 0 || status_b != 0)); then
		echo "FAIL: guest a exit $status_a, guest b exit $status_b"
		((status_b != 0)) && tail -n 30 "$work/guest-b.log" | sed 's/^/    b: /'
		((status_a == 77 || status_b == 77)) && exit 77
		exit 1
	fi
	exit 0
fi

# --- inside a VM -----------------------------------------------------------
role=$2
index=$([[ $role == a ]] && echo 1 || echo 2)
say() { echo "guest $role: $*"; }
nic_of() {  # VENDOR DEVICE...: the PCI address of the first such function
	local vendor=$1 device
	shift
	for device in /sys/bus/pci/devices/*; do
		[[ "$(cat "$device/vendor")" == "$vendor" ]] || continue
		[[ " $* " == *" $(cat "$device/device") "* ]] && { echo "${device##*/}"; return; }
	done
}
virtio=$(nic_of 0x1af4 0x1000 0x1041)
management=$(nic_of 0x8086 0x10d3)
iface=$(ls "/sys/bus/pci/devices/$management/net" 2>/dev/null | head -n 1)
[[ -n $virtio && -n $iface ]] ||
	{ say "FAIL: NICs: virtio '$virtio', e1000e '$management' with interface '$iface'"; exit 1; }
# Open MPI names its files after the host: the two must differ.
echo "guest-$role" >/proc/sys/kernel/hostname
ip link set lo up
ip addr add "10.79.0.$index/24" dev "$iface"
ip link set "$iface" up
rsh=(python3 "$source_root/test/net/guest_rsh.py")

if [[ $role == b ]]; then
	say "virtio NIC $virtio, management $iface 10.79.0.2"
	"${rsh[@]}" serve 10.79.0.2 7077 500
	exit $?
fi

for name in $(compgen -e); do [[ $name =~ ^FI_(DPDK_|PROVIDER) ]] && unset "$name"; done
export FI_DPDK_MTU=1500 MALLOC_PERTURB_=0
failures=0
# job HOW [IP]: mpi_checks' pingpong (and matching with ALL) between the
# guests, each rank on its virtio NIC.
job() {
	local how=$1 address=${2:-} status=0 log=/tmp/mpi-$1.log
	local parts=(pingpong)
	[[ ${OFI_DPDK_PCI_VM_ALL:-0} == 1 ]] && parts+=(matching)
	OFI_DPDK_MPI_GUESTS=10.79.0.1,10.79.0.2 OFI_DPDK_MPI_GUESTS_NET=10.79.0.0/24 \
		OFI_DPDK_MPI_GUESTS_RSH="${rsh[*]}" OFI_DPDK_MPI_PCI=$virtio \
		OFI_DPDK_MPI_PCI_BIND=uio_pci_generic OFI_DPDK_MPI_PCI_IP=$address \
		FI_PROVIDER_PATH=$build/drivers/ofi OFI_DPDK_MPI_LIMIT=300 \
		bash "$source_root/test/mpi/run_mpi.sh" mtl guests 2 "$build/test/mpi/mpi_checks" \
		"${parts[@]}" >"$log" 2>&1 || status=$?
	if ((status == 0)); then
		say "ok    an Open MPI job of two ranks, one in each guest, $how: $(tail -n $((${#parts[@]} + 1)) \
			"$log" | tr '\n' ' ')"
	else
		say "FAIL  the Open MPI job $how (exit $status)"
		tail -n 30 "$log" | sed 's/^/    /'
		failures=$((failures + 1))
	fi
}
if [[ ! -x $build/test/mpi/mpi_checks ]] || ! command -v mpirun >/dev/null; then
	say "no mpirun or mpi_checks here: skipped"
	"${rsh[@]}" 10.79.0.2 --quit
	exit 77
fi
driver_of() {
	local link=/sys/bus/pci/devices/$1/driver
	if [[ -e $link ]]; then basename "$(readlink "$link")"; else echo none; fi
}
before=$(driver_of "$virtio")
# By IP address in the test command, as hosts name each other; over L2
# too with OFI_DPDK_PCI_VM_ALL=1 (a job is some 50 s on emulated CPUs).
job "by IP address" '10.88.0.1{rank}/24'
[[ ${OFI_DPDK_PCI_VM_ALL:-0} == 1 ]] && job "over L2"
# Each rank gave its NIC back (its launcher's --bind) to the driver the
# kernel had bound it to (virtio-pci): here guest a's, in guest b its
# launcher's note in the job's log.
if [[ $(driver_of "$virtio") != "$before" ]]; then
	say "FAIL  $virtio is $(driver_of "$virtio")'s after the jobs, not $before's"
	failures=$((failures + 1))
else
	say "ok    $virtio bound by the ranks' launchers, given back to $before after each job"
fi
"${rsh[@]}" 10.79.0.2 --quit || { say "FAIL  guest b's shell did not take the stop"; failures=$((failures + 1)); }
exit $((failures > 0))
