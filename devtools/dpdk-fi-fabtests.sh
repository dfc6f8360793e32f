#!/bin/bash
# Usage: devtools/dpdk-fi-fabtests.sh [--builddir DIR] [--tests SET] [--timeout S]
#                                     [--tarballs DIR] [--build-only] [--keep]
#                                     [--provider NAME] [--hosts TOPOLOGY]
#                                     [-- RUNFABTESTS-ARGS...]
#
# libfabric's own gate over the provider: fabtests' runfabtests.sh, as
# released with libfabric, run over dpdk.
#
#  1. Builds fabtests from the release tarball that matches the libfabric
#     the provider is built against (fabtests-1.17.0.tar.xz for libfabric
#     1.x, fabtests-2.1.0.tar.xz for 2.x; from --tarballs, else
#     $OFI_DPDK_FABTESTS_TARBALLS, else ../shared/fabtests beside the
#     repository) into BUILDDIR/fabtests-VERSION, once (autogen, configure,
#     make install; needs autoconf, automake, libtool, xz, the leg's
#     libfabric-dev).  The tarball is used as it is: nothing is patched.
#  2. Runs runfabtests.sh -t SET (default quick) over provider dpdk with
#     out-of-band address exchange (-b; fabtests' default service, 9228,
#     is the provider's queue 0).  runfabtests.sh runs each program through
#     -p DIR: a folder of
#     wrappers, one per program, that start it through the EAL launcher
#     (usertools/dpdk-fi-run.py): a server (its last argument -E) on a new
#     net_memif pair whose ports have MACs of the pair's number, a client
#     (-E ADDRESS) on the pair its server opened, anything else (the unit
#     tests) alone on a net_ring port.  Each pair exchanges addresses on an
#     out-of-band port of its own (-E=PORT), except the programs that
#     out-of-band exchange cannot serve (connected ones, fi_poll,
#     fi_dgram_waitset, fi_scalable_ep): their clients get the server's
#     address in-band, -P 0 SERVER-MAC (see run-one.sh below).
#  3. runfabtests.sh ends a failed pair, and every set, by killing the
#     processes named fi_* it sees: it runs in a PID namespace of its own
#     (unshare --pid --mount-proc), where it sees only the gate's own
#     processes; nothing here kills by name.
#
# With --hosts af_packet (or af_xdp) the gate runs as users on two hosts
# run it instead: two network namespaces, the server's and the client's,
# joined by a veth pair whose ends have 10.198.0.1/24 and 10.198.0.2/24;
# every program on the provider over its host's end of the pair (the
# launcher's --topology af_packet or af_xdp, the address the kernel gives
# the interface); runfabtests.sh given both hosts and both addresses
# (runfabtests.sh -s 10.198.0.1 -c 10.198.0.2 dpdk SERVER-HOST CLIENT-HOST),
# so that every client learns its server's address in band, from the IP
# address, as on two machines: no MAC, no out-of-band socket.  It reaches
# the hosts by ssh; here an `ssh` first in PATH runs the command in the
# host's namespace.  fi_multi_mr and fi_rdm_rma_trigger run with
# FI_DPDK_MR_MODE=minimal, as in the default gate (below).
#
# Prints runfabtests' records (-v: each test's result and time, and the
# output of failed ones), the failed tests' records again, then
# "fabtests SET: P Pass, N Notrun, F Fail" with its counts. Exit status: 0 when no test failed, 1 when one did, 2 on
# set-up errors, 77 when the tarballs, the build tools or unshare are
# missing (a test suite's "skipped").
#
# Options:
#   --builddir DIR  the provider's build directory (default: build)
#   --tests SET     runfabtests.sh's -t: quick (default), standard, unit,
#                   functional, short, ...; complex (fi_ubertest) wants a
#                   configuration: -- -u FILE (test/fabtests/ubertest_dpdk.test)
#                   and a --timeout for the whole of it
#   --timeout S     runfabtests.sh's -T: seconds each program may run
#                   (default 60)
#   --tarballs DIR  where fabtests-VERSION.tar.xz are
#   --build-only    build fabtests and stop
#   --keep          keep the run's folder (wrappers, sockets, logs)
#   --hosts TOP     the gate between two hosts (above), over af_packet or
#                   af_xdp; needs root (network namespaces)
#   --provider NAME the same gate over another provider, for comparison
#                   (shm, "tcp;ofi_rxm", udp;ofi_rxd, ...): the programs
#                   run as they are, in-band on 127.0.0.1, as
#                   runfabtests.sh runs them by default; the counts line
#                   then names the provider
#   -- ARGS...      more runfabtests.sh options, e.g. -vvv (print the
#                   output of every test) or -e REGEX,... (skip tests): for
#                   looking into one test; the gate itself uses only -v
#
# Environment: OFI_DPDK_FABTESTS_HUGETLB=0 keeps the stock programs'
# buffers in ordinary pages (see STOCK_MALLOC_TUNABLES below).
set -euo pipefail

# shellcheck source-path=SCRIPTDIR source=../usertools/dpdk_fi_common.sh
source "$(dirname "${BASH_SOURCE[0]}")/../usertools/dpdk_fi_common.sh"

builddir=build
tests=quick
timeout_s=60
tarballs=${OFI_DPDK_FABTESTS_TARBALLS:-$DPDK_FI_ROOT/../shared/fabtests}
build_only=0
keep=0
provider=dpdk
hosts=
extra=()
while (($#)); do
	case "$1" in
	--) shift; extra=("$@"); break ;;
	--builddir) builddir=$2; shift ;;
	--tests) tests=$2; shift ;;
	--timeout) timeout_s=$2; shift ;;
	--tarballs) tarballs=$2; shift ;;
	--build-only) build_only=1 ;;
	--keep) keep=1 ;;
	--provider) provider=$2; shift ;;
	--hosts) hosts=$2; shift ;;
	-h | --help) usage; exit 0 ;;
	*) die 2 "unknown argument '$1' (see --help)" ;;
	esac
	shift
done
builddir=$(abs_builddir "$builddir")
case "$hosts" in
'' | af_packet | af_xdp) ;;
*) die 2 "--hosts: af_packet or af_xdp, not '$hosts'" ;;
esac
[[ -z "$hosts" || "$provider" == dpdk ]] || die 2 "--hosts runs the gate over dpdk only"
provider_path=$builddir/drivers/ofi
if [[ "$provider" == dpdk && ! -f "$provider_path/libdpdk-fi.so" ]]; then
	die 2 "no provider in $provider_path: build first"
fi

libfabric_version=$(pkg-config --modversion libfabric 2>/dev/null) ||
	die 2 "pkg-config finds no libfabric (libfabric-dev)"
fabtests_version=$(fabtests_version) ||
	die 2 "no fabtests release for libfabric $libfabric_version"
tarball=$tarballs/fabtests-$fabtests_version.tar.xz
if [[ ! -f "$tarball" ]]; then
	echo "SKIP: no $tarball (give --tarballs or OFI_DPDK_FABTESTS_TARBALLS)"
	exit 77
fi
need_tools() {
	local tool
	for tool in "$@"; do
		command -v "$tool" >/dev/null || { echo "SKIP: $tool is missing"; exit 77; }
	done
}

# 1. Build, once per tarball (its checksum is kept beside the install).
fabtests_dir=$builddir/fabtests-$fabtests_version
installed=$fabtests_dir/install
sum=$(sha256sum "$tarball" | cut -d' ' -f1)
if [[ "$(cat "$installed/.tarball-sha256" 2>/dev/null)" != "$sum" ]]; then
	need_tools autoreconf automake libtoolize make xz
	echo "building fabtests $fabtests_version (libfabric $libfabric_version) in $fabtests_dir"
	rm -rf "$fabtests_dir"
	mkdir -p "$fabtests_dir"
	tar -xf "$tarball" -C "$fabtests_dir"
	source_dir=$fabtests_dir/fabtests-$fabtests_version
	log=$fabtests_dir/build.log
	if ! (cd "$source_dir" && ./autogen.sh && ./configure --prefix="$installed" &&
		make -j"$(nproc)" install) >"$log" 2>&1; then
		tail -30 "$log" >&2
		die 2 "building fabtests failed; see $log"
	fi
	echo "$sum" >"$installed/.tarball-sha256"
fi
((build_only)) && exit 0
# (Only the gate needs these: --build-only works without them.)
need_tools unshare timeout

# change_hugepages DELTA: adds DELTA (negative: takes it away) to the
# machine's hugepage reserve and prints how many pages it really added (the
# kernel may find fewer free).  It adds to what is there rather than setting
# a count, so that two gates at once (the two legs of --both-legs) each give
# back only their own; the read and the write happen under a lock on the
# hugetlbfs mount, which both legs see.
change_hugepages() {
	local delta=$1 lock before after
	lock=$(awk '$3 == "hugetlbfs" {print $2; exit}' /proc/mounts)
	[[ -n "$lock" ]] || lock=/proc/sys/vm
	(
		flock 9
		before=$(cat /proc/sys/vm/nr_hugepages) || exit 0
		after=$((before + delta < 0 ? 0 : before + delta))
		{ echo "$after" >/proc/sys/vm/nr_hugepages; } 2>/dev/null
		echo $(($(cat /proc/sys/vm/nr_hugepages) - before))
	) 9<"$lock" || echo 0
}

# 2. The run's folder: one wrapper per program, the memif pairs' sockets.
run_dir=$(mktemp -d /tmp/ofi-dpdk-fabtests.XXXXXX)
hugepages_added=0
host_names=()
cleanup() {
	local host
	for host in "${host_names[@]}"; do ip netns del "$host" 2>/dev/null || true; done
	((hugepages_added == 0)) || change_hugepages -"$hugepages_added" >/dev/null
	((keep)) && { echo "kept $run_dir"; return; }
	rm -rf "$run_dir"
}
trap cleanup EXIT
mkdir -p "$run_dir/bin" "$run_dir/pairs"
echo 0 >"$run_dir/pairs/last"
role_script=$run_dir/run-one.sh
cat >"$role_script" <<-'EOF'
	#!/bin/bash
	# run-one.sh PROGRAM ARGS...: PROGRAM through the EAL launcher, on a port
	# for its role in runfabtests.sh (see dpdk-fi-fabtests.sh).
	set -euo pipefail
	here=${0%/*}
	program=$1
	name=${program##*/}
	shift
	args=("$@")
	count=${#args[@]}
	# How a client learns its server's address.  Each pair's ports have
	# MACs and IPv4 addresses of its number (02:fd:HH:LL:00:01 and
	# 127.HH.LL.1/24 for the server, :02 and .2 for the client): addresses
	# in 127/8 are the kernel's own too, so one string serves both a
	# program's TCP socket and fi_getinfo, as 127.0.0.1 does for shm and tcp.
	#  - out of band (the default): fabtests' -E, each pair on a TCP port of
	#    its own (-E=PORT, 29600 + the pair's number), endpoint addresses in
	#    the native form.  runfabtests.sh ends a failed pair by killing the
	#    shell that started its server, not the server, so a server waiting
	#    in accept() for a client that gave up lives on to its timeout; on
	#    one shared port it would meet the next pairs' clients.
	#  - by IPv4 address, as runfabtests.sh does without -b (server -s ADDR,
	#    client -s ITS-ADDR SERVER-ADDR): for the programs out-of-band
	#    exchange cannot serve: connected ones (-e msg, and those whose
	#    default endpoint is FI_EP_MSG), whose clients take the server's
	#    address only from fi_getinfo's node; and fi_poll, fi_dgram_waitset,
	#    fi_scalable_ep and fi_shared_ctx, which never open the out-of-band
	#    socket.  And -e dgram ones: fabtests 2.x's clients wait on the
	#    socket for a server that found no endpoint for what they ask (RMA
	#    on FI_EP_DGRAM) and left, which ends Fail; in-band both find none
	#    and end Notrun, as runfabtests.sh has it.  Those of them that also use the socket to synchronise
	#    keep -E=PORT; fabtests 2.x then ignores the node unless the
	#    socket's address comes apart (-O SERVER-ADDR, which 1.x lacks).
	# (Each in a variable, not $(...): forks add a third of a second to
	# each of the gate's ~200 processes on a busy 2-core machine.)
	ip_of() { printf -v "$1" '127.%d.%d.%d' $(($2 / 256 % 256)) $(($2 % 256)) "$3"; }
	mac_of() { printf -v "$1" '02:fd:%02x:%02x:00:%02x' $(($2 / 256 % 256)) $(($2 % 256)) "$3"; }
	by_ip=0
	keep_oob=0
	case "$name" in
	fi_msg | fi_msg_epoll | fi_msg_sockets | fi_msg_pingpong | fi_msg_bw | fi_cm_data | \
		fi_poll | fi_dgram_waitset | fi_scalable_ep | fi_shared_ctx) by_ip=1 ;;
	esac
	for ((i = 0; i + 1 < count; i++)); do
		[[ "${args[i]}" == -e && "${args[i + 1]}" =~ ^(msg|dgram)$ ]] && by_ip=1
	done
	# -k (FI_MSG_PREFIX): we keep no prefix mode, so the server finds no
	# endpoint and leaves; fabtests 2.x's client would wait on the socket
	# for it (Fail).  In-band both find none and end Notrun.
	for ((i = 0; i < count; i++)); do
		[[ "${args[i]}" == -k ]] && by_ip=1 && keep_oob=-1
	done
	# fi_rdm_shared_av's client forks into two processes that share a named
	# AV: three processes, one more than a memif pair joins.  Its pair gets
	# one shared port (--topology shared: a switch, hugepages) with one
	# address, as three processes of one host on one NIC would have; the
	# server takes the default service (queue 0, the first slot's) and the
	# client's two processes any queues of their own slots (-s ADDR ADDR).
	one_port=0
	if [[ "$name" == fi_rdm_shared_av ]]; then
		one_port=1
		by_ip=1
	fi
	if ((keep_oob == 0)); then
		case "$name" in
		fi_av_xfer | fi_unexpected_msg | fi_multi_recv | fi_multi_ep | fi_rdm_multi_client | \
			fi_dgram_pingpong) keep_oob=1 ;;
		esac
	fi
	oob_addr=()
	# fi_ubertest's client (the complex set: -u CONFIG SERVER -E) names
	# its server before the -E, not after it: put it in the client form.
	if [[ "$name" == fi_ubertest ]] && ((count >= 2)) &&
		[[ "${args[count - 1]}" == -E && " ${args[*]} " == *" -u "* ]]; then
		args=("${args[@]:0:count-2}" -E "${args[count - 2]}")
	fi
	if ((count >= 1)) && [[ "${args[count - 1]}" == -E ]]; then
		# A server: a new memif pair.
		read -r pair <"$here/pairs/last"
		pair=$((pair + 1))
		echo "$pair" >"$here/pairs/last"
		ip_of server_ip "$pair" 1
		mac_of server_mac "$pair" 1
		[[ "$FABTESTS_VERSION" == 1.* ]] || oob_addr=(-O "$server_ip")
		oob=-E=$((OOB_PORT_BASE + pair % 1000))
		port=(--topology memif-server --socket "$here/pairs/$pair.sock" --mac "$server_mac"
			--ip "$server_ip/24")
		((one_port)) && port=(--topology shared --name "fisav$pair" --processes 3
			--ip "$server_ip/24")
		unset 'args[count - 1]'
		if ((by_ip)); then
			((keep_oob > 0)) && args+=("$oob" "${oob_addr[@]}")
			args+=(-s "$server_ip")
		else
			args+=("$oob")
		fi
	elif ((count >= 2)) && [[ "${args[count - 2]}" == -E ]]; then
		# A client: the pair its server (started just before) opened.
		read -r pair <"$here/pairs/last"
		ip_of server_ip "$pair" 1
		ip_of client_ip "$pair" 2
		mac_of client_mac "$pair" 2
		[[ "$FABTESTS_VERSION" == 1.* ]] || oob_addr=(-O "$server_ip")
		oob=-E=$((OOB_PORT_BASE + pair % 1000))
		port=(--topology memif-client --socket "$here/pairs/$pair.sock" --mac "$client_mac"
			--ip "$client_ip/24")
		own_ip=$client_ip
		if ((one_port)); then
			port=(--topology shared --name "fisav$pair" --processes 3 --ip "$server_ip/24")
			own_ip=$server_ip
		fi
		unset 'args[count - 1]' 'args[count - 2]'
		if ((by_ip)); then
			((keep_oob > 0)) && args+=("$oob" "${oob_addr[@]}")
			args+=(-s "$own_ip")
		else
			args+=("$oob")
		fi
		args+=("$server_ip")
	elif [[ "$name" == fi_multinode* ]]; then
		# fi_multinode and fi_multinode_coll: -n N ranks started with the
		# same arguments (server first, then its clients), which meet over
		# a TCP socket on -s 127.0.0.1 and then talk over the fabric: N
		# processes of one host on one shared port, as fi_rdm_shared_av's.
		# (Each on a net_ring of its own, every rank would talk only to
		# itself: the same MAC and queue on every private port.)  Ranks of
		# one run join its group; the first of the next run opens a new one.
		ranks=3
		for ((i = 0; i + 1 < count; i++)); do
			[[ "${args[i]}" == -n ]] && ranks=${args[i + 1]}
		done
		group=$({
			flock 9
			read -r group joined 2>/dev/null <"$here/pairs/multinode" || { group=0; joined=0; }
			if ((group == 0 || joined >= ranks)); then
				group=$(( $(cat "$here/pairs/last") + 1 ))
				echo "$group" >"$here/pairs/last"
				joined=0
			fi
			echo "$group $((joined + 1))" >"$here/pairs/multinode"
			echo "$group"
		} 9>"$here/pairs/multinode.lock")
		port=(--topology shared --name "fimn$group" --processes "$ranks" --ip 127.0.0.1/8)
	else
		# One process (unit tests: fi_getinfo_test -s 127.0.0.1, fi_av_test
		# -g 127.0.0.1): a port that owns runfabtests.sh's address.
		port=(--topology ring --ip 127.0.0.1/8)
	fi
	# Two programs assume a provider that clears the mr_mode bits it does
	# not need (fi_mr(3)), which ours does when told to: fi_multi_mr writes
	# to the peer's regions at keys 1, 2, ... and address 0 without
	# exchanging keys, though its hints offer FI_MR_PROV_KEY and
	# FI_MR_VIRT_ADDR; fi_rdm_rma_trigger reads its target buffer as a
	# string that its 19-byte writes leave unterminated, over the 24-byte
	# key exchange it received there, so a key's high bytes must be 0, as
	# those of its requested key (0xC0DE) are and a random key's are not.
	case "$name" in
	fi_multi_mr | fi_rdm_rma_trigger) export FI_DPDK_MR_MODE=minimal ;;
	esac
	# The program's own allocations in hugepages when the gate reserved
	# them (see STOCK_MALLOC_TUNABLES in dpdk-fi-fabtests.sh).
	exec "$OFI_DPDK_PYTHON" "$OFI_DPDK_LAUNCHER" "${port[@]}" -- \
		env ${STOCK_MALLOC_TUNABLES:+GLIBC_TUNABLES="$STOCK_MALLOC_TUNABLES"} "$program" "${args[@]}"
EOF
chmod +x "$role_script"
# Another provider's programs run as they are (with the gate's malloc
# tunables).
if [[ "$provider" != dpdk ]]; then
	cat >"$role_script" <<-'EOF'
		#!/bin/bash
		exec env ${STOCK_MALLOC_TUNABLES:+GLIBC_TUNABLES="$STOCK_MALLOC_TUNABLES"} "$@"
	EOF
fi
# Two hosts: each program on its host's end of the veth pair; the host is
# the network namespace runfabtests.sh's ssh entered (below).
if [[ -n "$hosts" ]]; then
	cat >"$role_script" <<-'EOF'
		#!/bin/bash
		# run-one.sh PROGRAM ARGS...: PROGRAM through the EAL launcher on this
		# host's interface; fi_multi_mr and fi_rdm_rma_trigger as in the
		# default gate (FI_DPDK_MR_MODE=minimal, see dpdk-fi-fabtests.sh).
		program=$1
		shift
		case "${program##*/}" in
		fi_multi_mr | fi_rdm_rma_trigger) export FI_DPDK_MR_MODE=minimal ;;
		esac
		exec "$OFI_DPDK_PYTHON" "$OFI_DPDK_LAUNCHER" --topology "$GATE_TOPOLOGY" \
			--iface "$GATE_IFACE" -- \
			env ${STOCK_MALLOC_TUNABLES:+GLIBC_TUNABLES="$STOCK_MALLOC_TUNABLES"} "$program" "$@"
	EOF
	# runfabtests.sh reaches a host with
	#   timeout T ssh -n -o OPTION... HOST COMMAND
	# which here enters the host's network namespace.
	mkdir -p "$run_dir/ssh"
	cat >"$run_dir/ssh/ssh" <<-'EOF'
		#!/bin/bash
		while (($#)); do
			case "$1" in
			-n) shift ;;
			-o) shift 2 ;;
			*) break ;;
			esac
		done
		host=$1
		shift
		exec ip netns exec "$host" bash -c "$*"
	EOF
	chmod +x "$run_dir/ssh/ssh"
	need_tools ip
	# The hosts: namespaces named for this run, joined by one veth pair
	# whose ends are GATE_IFACE in each.
	export GATE_TOPOLOGY=$hosts GATE_IFACE=gate0
	server_host=ofift$$s client_host=ofift$$c
	host_names=("$server_host" "$client_host")
	server_ip=10.198.0.1 client_ip=10.198.0.2
	ip netns add "$server_host"
	ip netns add "$client_host"
	ip link add "$server_host" type veth peer name "$client_host"
	for host in "$server_host" "$client_host"; do
		ip link set "$host" netns "$host"
		ip -n "$host" link set "$host" name "$GATE_IFACE"
		ip -n "$host" link set lo up
	done
	ip -n "$server_host" addr add "$server_ip/24" dev "$GATE_IFACE"
	ip -n "$client_host" addr add "$client_ip/24" dev "$GATE_IFACE"
	for host in "$server_host" "$client_host"; do ip -n "$host" link set "$GATE_IFACE" up; done
fi
for program in "$installed"/bin/fi_* "$installed"/bin/sighandler_test; do
	[[ -x "$program" ]] || continue
	printf '#!/bin/bash\nexec %q %q "$@"\n' "$role_script" "$program" \
		>"$run_dir/bin/$(basename "$program")"
	chmod +x "$run_dir/bin/$(basename "$program")"
done

# 3. The gate, in a PID namespace of its own.
if [[ -n "$hosts" ]]; then
	export FI_PROVIDER_PATH=$provider_path PATH=$run_dir/ssh:$PATH
	# In band, by the hosts' addresses; servers on one host, clients on
	# the other.
	where=(-s "$server_ip" -c "$client_ip" dpdk "$server_host" "$client_host")
elif [[ "$provider" == dpdk ]]; then
	export FI_PROVIDER_PATH=$provider_path
	# Out-of-band address exchange; the wrappers give each pair its ports.
	where=(-b dpdk)
else
	unset FI_PROVIDER_PATH
	where=("$provider")
fi
export OFI_DPDK_LAUNCHER=$DPDK_FI_ROOT/usertools/dpdk-fi-run.py
# The interpreter itself, not a version manager's shim in front of it
# (pyenv's costs 0.4 s a start, two starts a test).
OFI_DPDK_PYTHON=$(python3 -c 'import sys; print(sys.executable)')
export OFI_DPDK_PYTHON
# Most stock programs allocate (largest size + prefix) x window x 2, 1 GiB,
# and write all of it before their first transfer.  On these virtual
# machines a process's first write to a 4 KiB page costs ~20 us (5 s a
# GiB, half the run time of such a test, for every provider alike); to a
# 2 MiB hugepage 6x less.  So, as root with hugepages in use, the gate
# reserves 4 GiB more (up to three processes at once, each 1 GiB beside
# its DPDK memory) and runs the programs with glibc's malloc taking its
# large blocks from them (glibc.malloc.hugetlb=2: falls back to ordinary
# pages when none are left); the reserve goes back at the end.  It changes
# where the bytes live, not what the programs do.  OFI_DPDK_FABTESTS_HUGETLB=0
# turns it off.
export STOCK_MALLOC_TUNABLES=
if [[ "${OFI_DPDK_FABTESTS_HUGETLB:-1}" == 1 && "$(eal_memory_args "$builddir")" == --in-memory ]]; then
	hugepages_added=$(change_hugepages 2048)
	((hugepages_added == 0)) || STOCK_MALLOC_TUNABLES=glibc.malloc.hugetlb=2
fi
# The pairs' out-of-band ports (run-one.sh): 1000 from 29600, below the
# kernel's ephemeral range (32768-60999 by default), where an outgoing
# connection could hold one (fabtests' own default, 47592, lies inside it).
export OOB_PORT_BASE=29600
export FABTESTS_VERSION=$fabtests_version
unset FI_PROVIDER FI_DPDK_EAL_ARGS
log=$run_dir/runfabtests.log
set +e
# In a chroot (the Debian 13 leg) / is no mount point, and unshare's
# default (make / private) fails there: --propagation unchanged, since the
# leg's own private mount namespace keeps the new /proc from the host's.
# Elsewhere the default, so that the new /proc cannot reach the host's.
propagation=()
mountpoint -q / || propagation=(--propagation unchanged)
# The namespace's processes are killed when runfabtests.sh ends; a shared
# port's switch (fi_rdm_shared_av, fi_multinode) lingers 2 s after its last
# process, and killed it would leave its hugepages and runtime files (with
# its secondaries' sockets) for the next gate's ports of the same name.  So
# the switches are told to stop first, and given the time to clean up.
in_namespace='
	"$@"
	status=$?
	switches=
	for comm in /proc/[0-9]*/comm; do
		[[ "$(cat "$comm" 2>/dev/null)" == dpdk-fi-switch ]] || continue
		pid=${comm#/proc/}
		switches+=" ${pid%/comm}"
	done
	[[ -n "$switches" ]] || exit "$status"
	kill -TERM $switches 2>/dev/null
	for ((tenths = 0; tenths < 150; tenths++)); do
		running=0
		for pid in $switches; do
			state=$(cut -d " " -f 3 "/proc/$pid/stat" 2>/dev/null) || continue
			[[ "$state" == Z ]] || running=1
		done
		((running)) || exit "$status"
		sleep 0.1
	done
	echo "dpdk-fi-fabtests: switches $switches did not stop in 15 s" >&2
	exit "$status"'
(cd "$run_dir" && unshare --pid --fork --mount-proc "${propagation[@]}" \
	bash -c "$in_namespace" in-namespace \
	"$installed/bin/runfabtests.sh" -v -p "$run_dir/bin" -T "$timeout_s" -t "$tests" \
	"${extra[@]}" "${where[@]}") 2>&1 | tee "$log"
set -e
count_of() { sed -n "s/^# Total $1 *\([0-9]*\)$/\1/p" "$log" | tail -1; }
pass=$(count_of Pass)
notrun=$(count_of 'Notrun\/Excluded')
fail=$(count_of Fail)
[[ -n "$pass" && -n "$fail" ]] || die 1 "runfabtests.sh printed no totals; see above"
# The failed tests again, last, where a CI log's tail shows them: each
# one's record from runfabtests.sh -v (its commands and both sides' output),
# cut to 60 lines.
if ((fail)); then
	echo "failed tests:"
	awk '/^- name:/ { if (failed) printf "%s", record; record = ""; failed = 0; lines = 0 }
		/^- name:/, 0 { if (++lines <= 60) record = record $0 "\n" }
		/^  result: Fail/ { failed = 1 }
		/^# -+$/ { if (failed) printf "%s", record; failed = 0; record = "" }
		END { if (failed) printf "%s", record }' "$log"
fi
over=
[[ "$provider" == dpdk ]] || over=" over $provider"
[[ -z "$hosts" ]] || over=" on two hosts over $hosts"
echo "fabtests $fabtests_version $tests$over: $pass Pass, ${notrun:-0} Notrun, $fail Fail"
((fail == 0))
