#!/bin/bash
# Usage: usertools/dpdk-fi-vm.sh prepare [--builddir DIR]
#        usertools/dpdk-fi-vm.sh run [--builddir DIR] [--timeout S] -- COMMAND [ARG]...
#
# A virtual machine with a kernel of its own, for what this machine's
# kernel cannot do: net_tap's rte_flow needs TC flower, gact, skbedit and a
# multiq qdisc, which the host kernel lacks and loads no modules for.
# QEMU emulates the CPUs (no KVM is needed); the guest sees this machine's
# root (or the Debian 13 root the command runs in) read-only over 9p, with
# tmpfs for /tmp and /run, and its own /dev, /proc and /sys.
#
#   prepare  builds the kit in BUILDDIR/vm (once; again when the kernel
#            changes): the Debian kernel installed in this root (the Debian
#            13 root has linux-image-amd64), else the one its release would
#            install, taken with `apt-get download` and unpacked (nothing
#            is installed); and an initramfs of busybox and the modules the
#            guest loads (virtio, 9p, tun, bridge, veth, the TC classifiers,
#            actions and qdiscs, uio_pci_generic, and e1000e: a NIC the
#            kernel holds, for the launcher's --bind to take and give back).  Needs qemu-system-x86 and busybox-static.
#   run      boots the kit, runs COMMAND as root in the current directory
#            inside the guest, prints its output and exits with its status;
#            124 when it runs out of time (default 900 s, the boot
#            included), 77 when there is no kit (prepare was not run), no
#            QEMU, or the directory or the kit is under /tmp or /run (the
#            guest has its own there).
#            The guest has 2 CPUs, 2 GiB and 256 hugepages of 2 MiB
#            mounted on /dev/hugepages.
#
# Options:
#   --builddir DIR  the build directory holding the kit (default: build)
#   --timeout S     run: give up after S seconds
#   --qemu-arg ARG  run: one more argument for QEMU (repeatable), such as a
#                   device the guest should have
set -euo pipefail

# shellcheck source-path=SCRIPTDIR source=dpdk_fi_common.sh
source "$(dirname "${BASH_SOURCE[0]}")/dpdk_fi_common.sh"

# What the guest loads, in this order after their dependencies.
MODULES=(virtio_pci 9pnet_virtio 9p tun bridge veth sch_multiq sch_ingress
	cls_flower cls_bpf act_gact act_skbedit act_mirred act_bpf uio_pci_generic e1000e)

action=${1:-}
(($#)) && shift
builddir=build
timeout_s=900
qemu_extra=()
while (($#)); do
	case "$1" in
	--builddir)
		(($# >= 2)) || die 1 "--builddir needs a directory"
		builddir=$2
		shift
		;;
	--timeout)
		(($# >= 2)) || die 1 "--timeout needs seconds"
		timeout_s=$2
		shift
		;;
	--qemu-arg)
		(($# >= 2)) || die 1 "--qemu-arg needs an argument"
		qemu_extra+=("$2")
		shift
		;;
	--) shift; break ;;
	-h | --help) usage; exit 0 ;;
	*) die 1 "unknown option '$1' (see --help)" ;;
	esac
	shift
done
kit="$(abs_builddir "$builddir")/vm"

# The kernel package this root's release would install.
kernel_package() {
	apt-cache depends linux-image-amd64 2>/dev/null |
		awk '$1 == "Depends:" && $2 ~ /^linux-image-/ {print $2; exit}'
}

# The init of the initramfs (printed): loads the modules, mounts the host's root
# read-only and the job directory, runs the job in a chroot, powers off.
write_init() {
	cat <<'EOF'
#!/bin/sh
mount -t proc proc /proc
mount -t sysfs sys /sys
mount -t devtmpfs dev /dev
for m in $(cat /modules/order); do
	insmod "/modules/$m.ko" || echo "vm: insmod $m failed"
done
root=/newroot
# cache=loose: the guest keeps what it read of the host's files (nothing
# changes them under a job), so every program start does not ask the host
# again for each library and directory (a launcher start took twice as
# long without it).
mount -t 9p -o trans=virtio,version=9p2000.L,ro,msize=262144,cache=loose hostroot $root ||
	{ echo "vm: no root"; poweroff -f; }
mount -t devtmpfs dev $root/dev
mount -t proc proc $root/proc
mount -t sysfs sys $root/sys
mount -t tmpfs tmp $root/tmp
mount -t tmpfs run $root/run
mkdir -p $root/dev/hugepages $root/dev/shm $root/dev/pts $root/tmp/job
mount -t hugetlbfs none $root/dev/hugepages
mount -t tmpfs shm $root/dev/shm
mount -t devpts devpts $root/dev/pts
mount -t 9p -o trans=virtio,version=9p2000.L job $root/tmp/job ||
	{ echo "vm: no job"; poweroff -f; }
echo 256 >/proc/sys/vm/nr_hugepages
ip link set lo up
chroot $root /bin/bash /tmp/job/run.sh
echo $? >$root/tmp/job/status
sync
poweroff -f
EOF
}

prepare() {
	command -v qemu-system-x86_64 >/dev/null || die 1 "no qemu-system-x86_64 (qemu-system-x86)"
	[[ -x /bin/busybox ]] && /bin/busybox --list | grep -x cpio >/dev/null ||
		die 1 "no static busybox with cpio (busybox-static)"
	# The kernel: an installed one, or the package's files.
	local package installed unpacked release
	installed=$(ls -1 /boot/vmlinuz-* 2>/dev/null | sort -V | tail -n 1 || true)
	if [[ -n "$installed" ]]; then
		release=${installed#/boot/vmlinuz-}
		package="installed $release"
		unpacked=""
	else
		package=$(kernel_package)
		[[ -n "$package" ]] || die 1 "apt knows no linux-image-amd64 (apt-get update?)"
	fi
	# A new module list or init makes a new kit too.
	local init_sum
	init_sum=$(write_init | sha256sum | cut -c1-12)
	package+=" (modules: ${MODULES[*]}; init $init_sum)"
	if [[ -f "$kit/package" && "$(cat "$kit/package")" == "$package" && -f "$kit/initrd.gz" &&
		-f "$kit/vmlinuz" ]]; then
		echo "vm kit: $package (ready)"
		return 0
	fi
	rm -rf "$kit"
	mkdir -p "$kit/download"
	if [[ -z "$installed" ]]; then
		local deb
		deb=$(kernel_package)
		(cd "$kit/download" && apt-get download -q "$deb" >/dev/null 2>&1) ||
			die 1 "apt-get download $deb failed"
		unpacked="$kit/download/root"
		dpkg-deb -x "$kit/download/$deb"_*.deb "$unpacked"
		release=$(ls "$unpacked/lib/modules")
	fi
	[[ -d "$unpacked/lib/modules/$release/kernel" ]] || die 1 "no modules for $release"
	local tree="$unpacked/lib/modules/$release/kernel" image="$kit/initramfs"
	mkdir -p "$image"/{bin,modules,proc,sys,dev,newroot}
	cp /bin/busybox "$image/bin/busybox"
	local applet
	for applet in sh mount insmod mkdir chroot poweroff cat echo ip sync; do
		ln -s busybox "$image/bin/$applet"
	done
	# Each module after what it depends on (its .modinfo's depends=).
	declare -A added=()
	local order=()
	add_module() {
		local name=$1 file deps dep
		[[ -n "${added[$name]:-}" ]] && return 0
		added[$name]=1
		# depends= names modules with '_' where some files have '-'.
		file=$(find "$tree" -name "$name.ko*" -o -name "${name//_/-}.ko*" | sort | head -n 1 || true)
		if [[ -z "$file" ]]; then
			# Built into the kernel (Debian 13 builds virtio in).
			grep -q "/$name.ko\$" "$tree/../modules.builtin" 2>/dev/null && return 0
			die 1 "$package has no module $name"
		fi
		case "$file" in
		*.xz) xz -dc "$file" >"$image/modules/$name.ko" ;;
		*.zst) zstd -qdc "$file" >"$image/modules/$name.ko" ;;
		*) cp "$file" "$image/modules/$name.ko" ;;
		esac
		deps=$(/bin/busybox strings "$image/modules/$name.ko" | sed -n 's/^depends=//p' | head -n 1)
		for dep in ${deps//,/ }; do add_module "$dep"; done
		order+=("$name")
	}
	local module
	for module in "${MODULES[@]}"; do add_module "$module"; done
	printf '%s\n' "${order[@]}" >"$image/modules/order"
	write_init >"$image/init"
	chmod +x "$image/init"
	(cd "$image" && find . | /bin/busybox cpio -o -H newc 2>/dev/null | gzip -1) >"$kit/initrd.gz"
	cp "$unpacked/boot/vmlinuz-$release" "$kit/vmlinuz" || die 1 "cannot read the kernel image"
	rm -rf "$kit/download" "$image"
	echo "$package" >"$kit/package"
	echo "vm kit: $package, ${#order[@]} modules, in $kit"
}

run() {
	(($#)) || die 1 "run needs a command"
	if [[ ! -f "$kit/vmlinuz" || ! -f "$kit/initrd.gz" ]]; then
		note "no VM kit in $kit: run '$0 prepare --builddir $builddir' (dpdk-fi-setup.sh does)"
		exit 77
	fi
	if ! command -v qemu-system-x86_64 >/dev/null; then
		note "no qemu-system-x86_64 (package qemu-system-x86)"
		exit 77
	fi
	local path
	for path in "$PWD" "$kit"; do
		case "$path/" in
		/tmp/* | /run/* | /var/run/*)
			note "$path is under /tmp or /run, which the guest has of its own"
			exit 77
			;;
		esac
	done
	local job
	job=$(mktemp -d /tmp/ofi-dpdk-vm.XXXXXX)
	# shellcheck disable=SC2064
	trap "rm -rf '$job'" EXIT
	{
		echo "cd $(printf '%q' "$PWD") || exit 1"
		# The caller's environment, but what belongs to this machine's session.
		local name
		while IFS= read -r name; do
			case "$name" in
			PWD | OLDPWD | SHLVL | _ | HOSTNAME | TERM | SSH_* | DISPLAY | TMPDIR) ;;
			*) echo "export $name=$(printf '%q' "${!name}")" ;;
			esac
		done < <(compgen -e)
		printf '%q ' "$@"
		echo
	} >"$job/run.sh"
	local status=0
	timeout --kill-after=10 "$timeout_s" qemu-system-x86_64 -accel tcg -cpu max -smp 2 -m 2048 \
		-nographic -no-reboot -monitor none -serial stdio -nodefaults \
		-kernel "$kit/vmlinuz" -initrd "$kit/initrd.gz" \
		-append "console=ttyS0 quiet panic=-1" \
		-virtfs local,path=/,mount_tag=hostroot,security_model=none,readonly=on,multidevs=remap \
		-virtfs "local,path=$job,mount_tag=job,security_model=none" \
		"${qemu_extra[@]}" </dev/null || status=$?
	# The command's status, even when the guest then failed to power off.
	[[ -s "$job/status" ]] && exit "$(cat "$job/status")"
	if ((status == 124 || status == 137)); then
		note "the VM ran out of its ${timeout_s} s"
		exit 124
	fi
	die 1 "the VM stopped without running the command (QEMU's status $status)"
}

case "$action" in
prepare) prepare ;;
run) run "$@" ;;
-h | --help | "") usage; [[ -n "$action" ]] ;;
*) die 1 "unknown action '$action' (see --help)" ;;
esac
