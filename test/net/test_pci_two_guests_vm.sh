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
# the same over L2, and stock programs between the guests by IP address
# (fabtests' fi_rdm_tagged_bw, fi_rma_bw -o write and fi_rdm_atomic, and
# fi_pingpong; the server in guest b through its shell).  Passes when every job passes and both guests end
# cleanly.  Exit status: 0 passed, 1 failed, 77 no VM kit, tap or bridge.
set -uo pipefail

build=${OFI_DPDK_BUILD_ROOT:?}
source_root=${OFI_DPDK_SOURCE_ROOT:?}
self=${BASH_SOURCE[0]}

if [[ "${1:-}" != --guest ]]; then
	# Two guests on emulated CPUs cost the test command 3 minutes beside
	# its package build: OFI_DPDK_PCI_VM_TWO_GUESTS=0 leaves them out.
	if [[ ${OFI_DPDK_PCI_VM_TWO_GUESTS:-1} == 0 && ${OFI_DPDK_PCI_VM_ALL:-0} != 1 ]]; then
		echo "SKIP: OFI_DPDK_PCI_VM_TWO_GUESTS=0"
		exit 77
	fi
	tag=$(printf '%04x' $(($$ % 65536)))
	bridges=("ofi2d$tag" "ofi2m$tag")
	taps=("ofi2da$tag" "ofi2db$tag" "ofi2ma$tag" "ofi2mb$tag")
	work=$(mktemp -d /tmp/ofi-dpdk-2vm.XXXXXX)
	cleanup() {
		local link
		# (Each VM is a session of its own: QEMU, its timeout and shell.)
		local vm
		for vm in ${guest_a:-} ${guest_b:-}; do pkill -s "$vm" 2>/dev/null; done
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
	# Some 120-140 s here in the test command, 10 min with everything
	# (by hand, or meson test --timeout-multiplier 3).
	vm_seconds=600
	[[ ${OFI_DPDK_PCI_VM_ALL:-0} == 1 ]] && vm_seconds=1500
	# vm INDEX: the VM's NICs (MACs by index), the command after it.
	vm() {
		local i=$1
		vm_command=(setsid -w bash "$source_root/usertools/dpdk-fi-vm.sh" run --builddir "$build"
			--timeout "$vm_seconds"
			--qemu-arg -netdev --qemu-arg "tap,id=d,ifname=${taps[i]},script=no,downscript=no"
			--qemu-arg -device --qemu-arg "virtio-net-pci,netdev=d,mac=02:00:00:0d:00:0$((i + 1))"
			--qemu-arg -netdev --qemu-arg "tap,id=m,ifname=${taps[i + 2]},script=no,downscript=no"
			--qemu-arg -device --qemu-arg "e1000e,netdev=m,mac=02:00:00:0e:00:0$((i + 1))"
			-- bash "$self" --guest)
	}
	# Both in the background: a signal to this script then runs cleanup
	# at once, which ends both sessions.
	vm 1
	"${vm_command[@]}" b >"$work/guest-b.log" 2>&1 &
	guest_b=$!
	vm 0
	"${vm_command[@]}" a &
	guest_a=$!
	wait "$guest_a"
	status_a=$?
	guest_a=""
	# Guest a told guest b's shell to stop; if guest a failed before, b
	# is ended here rather than at the end of its shell's time.
	((status_a != 0)) && sleep 5 && pkill -s "$guest_b" 2>/dev/null
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
# fi_pingpong's control connection goes to the address it is given, the
# server's DPDK port's: the kernels carry it over the management link.
if [[ $role == b ]]; then
	ip addr add 10.88.0.2/32 dev lo
else
	ip route add 10.88.0.2/32 via 10.79.0.2
fi
rsh=(python3 "$source_root/test/net/guest_rsh.py")
# (What guest b's shell runs inherits this too.)  No malloc perturbation:
# see test_pci_nics_vm.sh (fabtests' buffers).
for name in $(compgen -e); do [[ $name =~ ^FI_(DPDK_|PROVIDER) ]] && unset "$name"; done
export FI_DPDK_MTU=1500 MALLOC_PERTURB_=0

if [[ $role == b ]]; then
	say "virtio NIC $virtio, management $iface 10.79.0.2"
	seconds=540
	[[ ${OFI_DPDK_PCI_VM_ALL:-0} == 1 ]] && seconds=1440
	"${rsh[@]}" serve 10.79.0.2 7077 "$seconds"
	exit $?
fi

failures=0
launcher=(python3 "$source_root/usertools/dpdk-fi-run.py" --topology pci --pci "$virtio"
	--bind uio_pci_generic --provider-path "$build/drivers/ofi")
# stock PROGRAM ARGS...: a stock program's server in guest b (through its
# shell), its client here naming the server by IP address (10.88.0.2; the
# ports 10.88.0.2/24 and .1/24, frames in UDP/IPv4, in-band addressing as
# between two hosts).  The client's connection waits for the server's
# start on emulated CPUs (up to 60 s).
stock() {
	local server_status=0 client_status=0 settings
	# fabtests name each side's own address (-s), as runfabtests.sh does
	# between two hosts; fi_pingpong takes the server's alone.
	local server_args="-s 10.88.0.2" client_args="-s 10.88.0.1 10.88.0.2"
	[[ $(basename "$1") == fi_pingpong ]] && server_args="" client_args=10.88.0.2
	settings="FI_LOG_LEVEL=info FI_LOG_PROV=dpdk FI_LOG_SUBSYS=domain"
	: >/tmp/stock-server.log  # (the readiness check reads it)
	"${rsh[@]}" 10.79.0.2 "$settings timeout -k 5 150 ${launcher[*]} --ip 10.88.0.2/24 -- $* \
		$server_args" >/tmp/stock-server.log 2>&1 &
	local server=$!
	# The client starts once the server's port is open (its line, which
	# comes back through the shell; at most 90 s on emulated CPUs), and
	# waits for its ARP answer and handshake up to 20 and 60 s.
	# fi_pingpong's server opens its port after its control connection,
	# which the client makes once: its listening socket (47592, B9E8) is
	# looked for in guest b instead.
	local ready=(grep -aq "$virtio: .*MTU" /tmp/stock-server.log)
	[[ $(basename "$1") == fi_pingpong ]] &&
		ready=("${rsh[@]}" 10.79.0.2 "grep -q ':B9E8 0*:0000 0A' /proc/net/tcp /proc/net/tcp6")
	for _ in $(seq 180); do
		"${ready[@]}" && break
		kill -0 "$server" 2>/dev/null || break
		sleep 0.5
	done
	FI_DPDK_RESOLVE_TIMEOUT_MS=20000 FI_DPDK_CONNECT_TIMEOUT_MS=60000 \
		timeout -k 5 150 "${launcher[@]}" --ip 10.88.0.1/24 \
		-- "$@" $client_args >/tmp/stock-client.log 2>&1 || client_status=$?
	wait "$server" || server_status=$?
	if ((client_status == 0 && server_status == 0)) &&
		grep -aq "$virtio .*UDP frames in [1-9]" /tmp/stock-server.log; then
		say "ok    $(basename "$1") ${*:2} between the guests by IP address"
		tail -n 1 /tmp/stock-client.log | sed 's/^/      last: /'
	else
		say "FAIL  $* between the guests (server $server_status, client $client_status)"
		for side in server client; do
			echo "----- $side:"
			tail -n 25 "/tmp/stock-$side.log" | sed 's/^/    /'
		done
		failures=$((failures + 1))
	fi
}
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
fabtests=$build/fabtests-1.17.0/install/bin
[[ -x $fabtests/fi_rdm_tagged_bw ]] ||
	fabtests=$(ls -d "$build"/fabtests-*/install/bin 2>/dev/null | head -n 1)
if [[ -n $fabtests && -x $fabtests/fi_rdm_tagged_bw ]]; then
	# (Only with OFI_DPDK_PCI_VM_ALL=1: a run is some 50 s on emulated
	# CPUs, and test_pci_nics_vm.sh runs these between two NICs.)
	if [[ ${OFI_DPDK_PCI_VM_ALL:-0} == 1 ]]; then
		stock "$fabtests/fi_rdm_tagged_bw" -p dpdk -S 65536 -I 50
		stock "$fabtests/fi_rma_bw" -p dpdk -e rdm -o write -S 65536 -I 50
		stock "$fabtests/fi_rdm_atomic" -p dpdk -o sum -z uint64 -I 20
		stock fi_pingpong -p dpdk -e rdm -I 100 -S 1024
	fi
else
	say "note  fabtests not built here (devtools/dpdk-fi-fabtests.sh --build-only): skipped"
fi
job "by IP address" '10.88.0.1{rank}/24'
[[ ${OFI_DPDK_PCI_VM_ALL:-0} == 1 ]] && job "over L2"
# Each rank gave its NIC back (its launcher's --bind) to the driver the
# kernel had bound it to (virtio-pci): here guest a's, in guest b its
# launcher's note in the job's log.
remote_driver=$("${rsh[@]}" 10.79.0.2 "basename \$(readlink /sys/bus/pci/devices/$virtio/driver)")
if [[ $(driver_of "$virtio") != "$before" || $remote_driver != "$before" ]]; then
	say "FAIL  $virtio is $(driver_of "$virtio")'s here and ${remote_driver}'s in guest b" \
		"after the jobs, not $before's"
	failures=$((failures + 1))
else
	say "ok    $virtio bound by the ranks' launchers, given back to $before in both guests"
fi
"${rsh[@]}" 10.79.0.2 --quit || { say "FAIL  guest b's shell did not take the stop"; failures=$((failures + 1)); }
exit $((failures > 0))
