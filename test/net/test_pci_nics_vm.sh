#!/bin/bash
# test_pci_nics_vm.sh: stock libfabric programs on DPDK's own PCI NIC
# drivers, in a VM (usertools/dpdk-fi-vm.sh).  QEMU gives the guest two
# virtio-net NICs (two queue pairs each; DPDK's net_virtio) and two e1000e
# NICs (DPDK's net_e1000_em); each pair's back ends are tap interfaces on one
# bridge on this machine (names unique to the run, removed at exit).  In the
# guest the virtio NICs are handed to uio_pci_generic; the e1000e NICs start
# as the kernel's: the first e1000e run's server launcher binds its NIC
# (--bind uio_pci_generic) and gives it back (checked after it, beside
# --bind vfio-pci's error in a guest without vfio).  For each pair a server
# process on one NIC and a client on the other, both started by the
# launcher (--topology pci --pci BDF), run
#  - stock fi_pingpong (libfabric-bin) over L2, the client naming the server
#    by the provider's address (its control connection on the guest's lo;
#    OFI_DPDK_PCI_VM_ALL=1 only);
#  - the same by IP address (virtio): the ports get 10.88.0.1/24 and .2/24
#    (--ip), frames go in UDP/IPv4, the client names 10.88.0.1 (which the
#    guest's lo also holds, for the control connection alone);
#  - fabtests' fi_rdm_tagged_bw (virtio) and fi_rma_bw -o write (e1000e)
#    over L2 (addresses exchanged out of band, -E), where fabtests are
#    built (devtools/dpdk-fi-fabtests.sh), and fi_pingpong by IP address on
#    e1000e, whose port must list the IPv4 header checksum among the
#    offloads it took (a by-IP run prints what its port took);
#    OFI_DPDK_PCI_VM_ALL=1 runs every program on both NICs, and
#    fi_rdm_atomic -o sum too (not in the test command: see below).
# Each run must exit 0 on both sides, and the server's port must be the
# NIC's (its PCI address in the provider's port line).  Then an Open MPI
# job of two ranks, one on each NIC of a pair (mpi_job, below): e1000e by
# IP address (OFI_DPDK_PCI_VM_ALL=1: both ways on both; virtio's job runs
# between two guests, test_pci_two_guests_vm.sh).
# Exit status: 0 passed, 1 failed, 77 no VM kit, or no tap/bridge here.
set -uo pipefail

build=${OFI_DPDK_BUILD_ROOT:?}
source_root=${OFI_DPDK_SOURCE_ROOT:?}

if [[ "${1:-}" != --guest ]]; then
	tag=$(printf '%04x' $(($$ % 65536)))
	bridges=(ofipcv$tag ofipce$tag)
	taps=(ofipv0$tag ofipv1$tag ofipe0$tag ofipe1$tag)
	cleanup() {
		local link
		for link in "${taps[@]}" "${bridges[@]}"; do ip link del "$link" 2>/dev/null; done
	}
	trap cleanup EXIT
	for bridge in "${bridges[@]}"; do
		ip link add "$bridge" type bridge 2>/dev/null || { echo "no bridge here"; exit 77; }
		ip link set "$bridge" up
	done
	args=()
	for i in 0 1 2 3; do
		if ((i < 2)); then
			ip tuntap add dev "${taps[i]}" mode tap multi_queue 2>/dev/null ||
				{ echo "no multi-queue tap here"; exit 77; }
			ip link set "${taps[i]}" master "${bridges[0]}"
			args+=(--qemu-arg -netdev --qemu-arg "tap,id=n$i,ifname=${taps[i]},script=no,downscript=no,queues=2"
				--qemu-arg -device
				--qemu-arg "virtio-net-pci,netdev=n$i,mq=on,vectors=6,mac=02:00:00:0b:00:0$((i + 1))")
		else
			ip tuntap add dev "${taps[i]}" mode tap 2>/dev/null || { echo "no tap here"; exit 77; }
			ip link set "${taps[i]}" master "${bridges[1]}"
			args+=(--qemu-arg -netdev --qemu-arg "tap,id=n$i,ifname=${taps[i]},script=no,downscript=no"
				--qemu-arg -device --qemu-arg "e1000e,netdev=n$i,mac=02:00:00:0c:00:0$((i - 1))")
		fi
		ip link set "${taps[i]}" up
	done
	# 4 GiB: fabtests' fi_rdm_atomic takes some 800 MB a process (2 GiB
	# ran the guest out of memory).
	bash "$source_root/usertools/dpdk-fi-vm.sh" run --builddir "$build" --timeout 900 \
		--qemu-arg -m --qemu-arg 4096 "${args[@]}" \
		-- bash "${BASH_SOURCE[0]}" --guest
	exit $?
fi

# --- inside the VM ---------------------------------------------------------
# bind VENDOR DEVICE...: hands each such PCI function to uio_pci_generic and
# prints its address.
bind() {
	local vendor=$1 device
	shift
	for device in /sys/bus/pci/devices/*; do
		[[ "$(cat "$device/vendor")" == "$vendor" ]] || continue
		[[ " $* " == *" $(cat "$device/device") "* ]] || continue
		bind_address "${device##*/}"
	done
}
# bind_address BDF: hands that PCI function to uio_pci_generic (through
# sysfs: dpdk-devbind.py takes many seconds a call on emulated CPUs) and
# prints its address.
bind_address() {
	local address=$1 device=/sys/bus/pci/devices/$1
	[[ -e "$device/driver" ]] && echo "$address" >"$device/driver/unbind"
	echo uio_pci_generic >"$device/driver_override"
	echo "$address" >/sys/bus/pci/drivers_probe
	echo "$address"
}
# (The guest has no /dev/fd: no process substitution here.)
# shellcheck disable=SC2207
virtio=($(bind 0x1af4 0x1000 0x1041))
# The e1000e NICs start as the guest kernel's (its e1000e driver): the
# first e1000e run binds them (run and given_back, below).
e1000e=()
for device in /sys/bus/pci/devices/*; do
	[[ "$(cat "$device/vendor") $(cat "$device/device")" == "0x8086 0x10d3" ]] &&
		e1000e+=("${device##*/}")
done
# driver_of BDF: the driver holding the device, "none" if none does.
driver_of() {
	local link=/sys/bus/pci/devices/$1/driver
	if [[ -e $link ]]; then basename "$(readlink "$link")"; else echo none; fi
}
((${#virtio[@]} == 2 && ${#e1000e[@]} == 2)) ||
	{ echo "FAIL: NICs found: virtio ${virtio[*]}, e1000e ${e1000e[*]}"; exit 1; }
for nic in "${e1000e[@]}"; do
	[[ $(driver_of "$nic") == e1000e ]] ||
		{ echo "FAIL: $nic is $(driver_of "$nic")'s, not the kernel's e1000e"; exit 1; }
done
ip addr add 10.88.0.1/32 dev lo
# The guest's kernel has no host name ("(none)"), which mpirun refuses.
echo pci-guest >/proc/sys/kernel/hostname
echo "note  the guest's kernel up $(cut -d' ' -f1 /proc/uptime) s when the runs start"

for name in $(compgen -e); do [[ $name =~ ^FI_(DPDK_|PROVIDER) ]] && unset "$name"; done
# The bridges carry 1500-byte frames; the provider's logs name each port.
export FI_DPDK_MTU=1500 FI_LOG_LEVEL=info FI_LOG_PROV=dpdk FI_LOG_SUBSYS=domain
# Emulated CPUs: a process faulting in fabtests' buffers (fi_rdm_atomic's
# 800 MB) answers nothing for many seconds; its peer waits that long.
export FI_DPDK_PEER_TIMEOUT_MS=60000
fabtests=$build/fabtests-1.17.0/install/bin
[[ -x $fabtests/fi_rdm_tagged_bw ]] || fabtests=$(ls -d "$build"/fabtests-*/install/bin 2>/dev/null | head -1)
failures=0
work=/tmp/pci
mkdir -p "$work"
# No malloc perturbation for the stock programs (meson test sets
# MALLOC_PERTURB_, and the guest inherits it): fabtests size their buffers
# for 8 MiB messages, and fi_rdm_atomic's three (2 x 64 x 8 MiB each) would
# then all be written, some 3 GiB a process, and the guest's OOM killer
# ends one side, whose peer then times out (as the fabtests gate, see
# test/meson.build).  Without it each process writes one (1 GiB).
export MALLOC_PERTURB_=0

# port_listening PORT: true if a TCP socket listens on PORT (IPv4 or IPv6).
port_listening() {
	local hex
	hex=$(printf '%04X' "$1")
	awk -v hex="$hex" '$4 == "0A" { split($2, a, ":"); if (a[2] == hex) found = 1 }
		END { exit !found }' /proc/net/tcp /proc/net/tcp6 2>/dev/null
}

# run KIND SERVER CLIENT LABEL [--ip] -- PROGRAM ARGS...: the pair; the
# client gets the server's address last (10.88.0.1 with --ip, else lo's).
run() {
	local kind=$1 server=$2 client=$3 label=$4 by_ip=0 started=$SECONDS
	shift 4
	[[ "$1" == --ip ]] && { by_ip=1; shift; }
	shift  # --
	local server_ip=() client_ip=() target=127.0.0.1
	if ((by_ip)); then
		server_ip=(--ip 10.88.0.1/24) client_ip=(--ip 10.88.0.2/24) target=10.88.0.1
	fi
	local launcher=(python3 "$source_root/usertools/dpdk-fi-run.py" --topology pci
		--provider-path "$build/drivers/ofi")
	# The first e1000e run's server binds its NIC itself (see given_back);
	# the client's is bound here (a second binding through dpdk-devbind.py
	# and back would cost minutes of emulated CPU in the test command).
	local binds=0 server_bind=()
	if [[ $kind == e1000e && $e1000e_bound == 0 ]]; then
		binds=1 server_bind=(--bind uio_pci_generic)
		bind_address "$client" >/dev/null
	fi
	timeout -k 5 120 "${launcher[@]}" "${server_bind[@]}" --pci "$server" "${server_ip[@]}" \
		--lcore 0 -- "$@" \
		>"$work/$label-server.log" 2>&1 &
	local server_pid=$!
	# The client connects once, without retrying, to the server's control
	# port (fi_pingpong's 47592, fabtests' out-of-band 3000 or -E=PORT),
	# which the server opens before its fabric; on emulated CPUs the
	# launcher alone takes seconds to start, so wait for it (at most 60 s),
	# not a fixed time.
	local control_port=3000 arg
	[[ $(basename "$1") == fi_pingpong ]] && control_port=47592
	for arg; do [[ $arg == -E=* ]] && control_port=${arg#-E=}; done
	for _ in $(seq 600); do
		port_listening "$control_port" && break
		kill -0 "$server_pid" 2>/dev/null || break
		sleep 0.1
	done
	timeout -k 5 120 "${launcher[@]}" --pci "$client" "${client_ip[@]}" --lcore 1 -- "$@" \
		"$target" >"$work/$label-client.log" 2>&1
	local client_status=$? server_status=0
	wait "$server_pid" || server_status=$?
	# The offloads the port took (frames in UDP use them): listed in its line.
	local offloads
	offloads=$(grep -ao "$server: .*MTU 1500.*" "$work/$label-server.log" | head -n 1 |
		grep -o "checksums by the device: .*")
	if ((client_status == 0 && server_status == 0)) &&
		grep -aq "$server: .*MTU 1500" "$work/$label-server.log" &&
		[[ -z ${want_offloads:-} || $offloads == *"$want_offloads"* ]]; then
		echo "ok    $kind: $(basename "$1") ${*:2}$( ((by_ip)) && echo " by IP address")" \
			"($((SECONDS - started)) s)"
		tail -n 1 "$work/$label-client.log" | sed 's/^/      last: /'
		((by_ip)) && echo "      port: ${offloads:-no checksum offloads}"
	else
		[[ -n ${want_offloads:-} && $offloads != *"$want_offloads"* ]] &&
			echo "FAIL  $kind: the port took '${offloads:-none}', not '$want_offloads'"
		echo "FAIL  $kind: $* (server $server_status, client $client_status)"
		dmesg 2>/dev/null | grep -a "Out of memory: Killed" | tail -n 2 | sed 's/^/    /'
		for side in server client; do
			echo "----- $side:"
			tail -n 25 "$work/$label-$side.log" | sed 's/^/    /'
		done
		failures=$((failures + 1))
	fi
	((binds)) && given_back
}

# given_back: after the first e1000e run, whose server's launcher bound its
# NIC (--bind uio_pci_generic), that NIC is the kernel's e1000e's again,
# with its network interface; and --bind vfio-pci, which this guest cannot
# serve (no vfio module, no IOMMU), fails with what is missing.  Then the
# NICs are bound here for the rest (dpdk-devbind.py takes seconds a call
# on emulated CPUs).
given_back() {
	local nic=${e1000e[0]} said status
	if [[ $(driver_of "$nic") == e1000e && -n "$(ls "/sys/bus/pci/devices/$nic/net" 2>/dev/null)" ]]; then
		echo "ok    e1000e: $nic bound by its launcher, given back to the kernel's e1000e at its end"
	else
		echo "FAIL  e1000e: $nic is $(driver_of "$nic")'s after its launcher ended, not e1000e's"
		failures=$((failures + 1))
	fi
	said=$(python3 "$source_root/usertools/dpdk-fi-run.py" --topology pci --pci "${e1000e[0]}" \
		--bind vfio-pci --print-only 2>&1)
	status=$?
	if ((status == 2)) && [[ $said == *"cannot bind ${e1000e[0]} to vfio-pci: "*"modprobe vfio-pci"* ||
		$said == *"cannot bind ${e1000e[0]} to vfio-pci: "*"enable_unsafe_noiommu_mode"* ]]; then
		echo "ok    e1000e: --bind vfio-pci says what is missing: ${said#*: error: }"
	else
		echo "FAIL  e1000e: --bind vfio-pci here: exit $status: $said"
		failures=$((failures + 1))
	fi
	bind 0x8086 0x10d3 >/dev/null
	e1000e_bound=1
}
e1000e_bound=0

# Each run costs the guest two EAL starts on emulated CPUs (some 10 s), an
# MPI job some 25 s: the test command runs four and one job;
# OFI_DPDK_PCI_VM_ALL=1 runs all ten and four jobs.
all=${OFI_DPDK_PCI_VM_ALL:-0}
for kind in virtio e1000e; do
	declare -n nics=$kind
	# (Over L2 in the test command: fi_rdm_tagged_bw and the MPI job below.)
	[[ $all == 1 ]] &&
		run "$kind" "${nics[0]}" "${nics[1]}" "$kind-l2" -- fi_pingpong -p dpdk -e rdm -I 100 -S 1024
	[[ $kind == virtio || $all == 1 ]] &&
		run "$kind" "${nics[0]}" "${nics[1]}" "$kind-ip" --ip -- fi_pingpong -p dpdk -e rdm -I 100 -S 1024
	if [[ -n "$fabtests" && -x $fabtests/fi_rdm_tagged_bw ]]; then
		# Out of band (-E): fabtests exchange the endpoints' L2 addresses
		# over their TCP connection, and name no node to fi_getinfo.
		if [[ $kind == virtio || $all == 1 ]]; then
			run "$kind" "${nics[0]}" "${nics[1]}" "$kind-tagged" -- "$fabtests/fi_rdm_tagged_bw" -p dpdk -E -S 65536 -I 50
		fi
		if [[ $kind == e1000e || $all == 1 ]]; then
			run "$kind" "${nics[0]}" "${nics[1]}" "$kind-write" -- "$fabtests/fi_rma_bw" -p dpdk -e rdm -E -o write -S 65536 -I 50
		fi
		# fi_rdm_atomic: its server's peer timed out (60 s) with the client
		# silent when MALLOC_PERTURB_ had the guest's OOM killer end the
		# client (see above); only OFI_DPDK_PCI_VM_ALL=1 runs it (time).
		if [[ $all == 1 ]]; then
			run "$kind" "${nics[0]}" "${nics[1]}" "$kind-atomic" -- "$fabtests/fi_rdm_atomic" -p dpdk -E -o sum -z uint64 -I 20
		fi
	else
		echo "note  $kind: fabtests not built here (devtools/dpdk-fi-fabtests.sh --build-only): their programs skipped"
	fi
	# By IP address, in UDP/IPv4: e1000e offers the IPv4 header checksum on
	# both sides (net_e1000_em), which the port takes and its line lists.
	[[ $kind == e1000e && $all != 1 ]] &&
		want_offloads="IPv4 header (tx, rx)" \
			run "$kind" "${nics[0]}" "${nics[1]}" "$kind-ip" --ip -- fi_pingpong -p dpdk -e rdm -I 100 -S 1024
	unset -n nics
done

# An Open MPI job of two ranks, each on one NIC of a pair (mpirun in the
# guest, the ranks started by the launcher with --pci NIC0,NIC1: local rank
# i on the i-th), over the OFI MTL: test/mpi/run_mpi.sh's pingpong part
# (every size from 1 B to 4 MiB, each message's bytes checked), over L2 and
# by IP address (the ports 10.88.0.10/24 and .11/24, frames in UDP/IPv4).
# The test command runs one (e1000e by IP; virtio's run between two
# guests, test_pci_two_guests_vm.sh); OFI_DPDK_PCI_VM_ALL=1 all four.
mpi_job() {
	local kind=$1 nic0=$2 nic1=$3 by_ip=$4 address="" how="over L2" status=0 started=$SECONDS
	((by_ip)) && address='10.88.0.1{local_rank}/24' how="by IP address"
	if [[ ! -x $build/test/mpi/mpi_checks ]] || ! command -v mpirun >/dev/null; then
		echo "note  $kind: no mpirun or mpi_checks here: the Open MPI job skipped"
		return
	fi
	OFI_DPDK_MPI_PCI="$nic0,$nic1" OFI_DPDK_MPI_PCI_IP=$address \
		FI_PROVIDER_PATH=$build/drivers/ofi OFI_DPDK_MPI_LIMIT=400 \
		bash "$source_root/test/mpi/run_mpi.sh" mtl pci 2 "$build/test/mpi/mpi_checks" pingpong \
		>"$work/mpi-$kind-$by_ip.log" 2>&1 || status=$?
	if ((status == 0)); then
		echo "ok    $kind: an Open MPI job of two ranks, one on each NIC, $how" \
			"($((SECONDS - started)) s): $(tail -n 2 "$work/mpi-$kind-$by_ip.log" | tr '\n' ' ')"
	else
		echo "FAIL  $kind: the Open MPI job $how (exit $status)"
		tail -n 30 "$work/mpi-$kind-$by_ip.log" | sed 's/^/    /'
		failures=$((failures + 1))
	fi
}
# (virtio: the jobs between two guests, test_pci_two_guests_vm.sh.)
mpi_job e1000e "${e1000e[0]}" "${e1000e[1]}" 1
if [[ $all == 1 ]]; then
	mpi_job virtio "${virtio[0]}" "${virtio[1]}" 0
	mpi_job virtio "${virtio[0]}" "${virtio[1]}" 1
	mpi_job e1000e "${e1000e[0]}" "${e1000e[1]}" 0
fi
exit $((failures > 0))
