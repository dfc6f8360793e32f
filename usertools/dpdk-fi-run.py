#!/usr/bin/env python3
"""Run an unmodified fi_* program over the ofi-dpdk provider.

The launcher builds the DPDK EAL command line for one test topology, sets
FI_PROVIDER=dpdk, FI_DPDK_EAL_ARGS (that command line) and FI_PROVIDER_PATH
(this repository's build/drivers/ofi unless already set), then execs the
program: the program's exit status is the launcher's.

Topologies and the port each gives the provider:
  ring          --vdev=net_ring0: one port that loops back to itself
  memif-server  --vdev=net_memif0,role=server,socket=PATH,socket-abstract=no,
                bsize=9216 (start the server first)
  memif-client  --vdev=net_memif0,role=client,socket=PATH,socket-abstract=no,
                bsize=9216
                (9 KiB ring buffers: the provider sends frames up to
                FI_DPDK_MTU, 9000 bytes, in one buffer each)
  memif         memif-server for local rank 0 of a job, memif-client for
                local rank 1: two ranks of one host, one memif pair
  af_packet     --vdev=net_af_packet0,iface=IF: a kernel interface (veth)
  af_xdp        --vdev=net_af_xdp0,iface=IF,start_queue=0,queue_count=1,
                xdp_prog=ofi_dpdk_steer.o: the same interface through an
                AF_XDP socket, to which the provider's XDP program hands
                the provider's frames alone (its EtherType, UDP to its
                ports): the kernel keeps the rest (TCP, ssh, ARP).  With
                --xdp-prog default, net_af_xdp's own program hands the
                socket every frame, and the kernel's traffic on IF stops.
                A program an earlier run left on IF is taken off first;
                beside ours that a live process holds, this process goes
                on af_packet (its queues' UDP passed to the kernel);
                beside net_af_xdp's own the launch fails
  pci           -a BDF: a PCI device bound to vfio-pci (no --no-pci); in a
                job, --pci BDF0,BDF1 gives local rank i the i-th.  With
                --bind [DRIVER] the launcher binds a device a kernel driver
                holds to DRIVER (vfio-pci, or uio_pci_generic) with DPDK's
                dpdk-devbind.py, runs the program as its child, and gives
                the device back to its kernel driver when it ends (killed
                with SIGKILL, it leaves a record in /run/ofi-dpdk/bound
                by which the next --bind of the device, once the killed
                launcher's program is gone too, gives it back); it
                says what is missing (root, the driver's module, an IOMMU
                for vfio-pci) with the command that fixes it, and refuses
                a device whose interface is up or another launcher holds
  shared        one port for all the processes of a host (DPDK's
                multi-process model): dpdk-fi-switch is the primary and owns
                the port net_ring_NAME, each process a secondary
                (--proc-type=secondary --file-prefix ofidpdk-NAME) with a
                queue pair of its own.  The first process to need the switch
                starts it (--processes slots, --switch PROGRAM); it stops
                by itself once its last process has left and no launcher
                used it for 60 s.  Needs hugepages.

In an MPI job (mpirun -np N dpdk-fi-run.py --topology T -- PROGRAM) the
launcher reads each rank's number and local number from the environment
the job starter gives (Open MPI's OMPI_COMM_WORLD_RANK and _LOCAL_RANK,
PMIx's PMIX_RANK, Hydra's PMI_RANK and MPI_LOCALRANKID, Slurm's
SLURM_PROCID and SLURM_LOCALID).  {rank} and {local_rank} in --socket,
--iface and --ip stand for them (one interface per rank:
--iface 'ofidpdk{local_rank}'), {host} for the host name (one interface
per host: --iface '{host}0'), and each rank polls on its own CPU, the
local rank's one among those allowed (round robin).

Telemetry: with --telemetry the program serves DPDK's telemetry socket
under the file prefix ofi-dpdk-PID (the program's pid, which is the
launcher's: it execs; with --bind, the launcher's, whose child it is),
where the provider's /ofi_dpdk/ commands list its ports and endpoints with
their counters: dpdk-telemetry.py -f ofi-dpdk-PID.
(With --print-only the prefix names the launcher's own pid: set your own
--file-prefix through --eal-extra instead.)

Memory: --in-memory when free hugepages and a hugetlbfs mount are found,
otherwise (or with --no-huge) --no-huge -m 512 --no-shconf.

Examples:
  dpdk-fi-run.py --topology ring -- fi_info -p dpdk
  dpdk-fi-run.py --topology memif-server -- fi_pingpong -p dpdk -e rdm
  dpdk-fi-run.py --topology memif-client -- fi_pingpong -p dpdk -e rdm SERVER
  eval "$(dpdk-fi-run.py --topology ring --print-only)"

Exit status: the program's; 2 when the launcher cannot start it.
"""

import argparse
import fcntl
import json
import os
import re
import shlex
import shutil
import signal
import socket
import stat
import subprocess
import sys
import time
from pathlib import Path
from typing import Mapping, NoReturn, Sequence

PROG = Path(__file__).name  # dpdk-fi-run.py in the source tree, dpdk-fi-run installed
TOPOLOGIES = ("ring", "memif", "memif-server", "memif-client", "af_packet", "af_xdp", "pci",
              "shared")
# (rank, local rank) variables of job starters, most specific first.
RANK_VARIABLES = (("OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_LOCAL_RANK"),
                  ("PMIX_RANK", "PMIX_LOCAL_RANK"),
                  ("PMI_RANK", "MPI_LOCALRANKID"),
                  ("SLURM_PROCID", "SLURM_LOCALID"))
REPO_ROOT = Path(__file__).resolve().parent.parent
# Installed (the ofi-dpdk package, meson install), there is no repository
# beside the launcher: libfabric's provider folder and PATH serve.
IN_SOURCE_TREE = (REPO_ROOT / "usertools" / "dpdk-fi-setup.sh").is_file()
HUGEPAGES_FIX = ("run usertools/dpdk-fi-setup.sh as root" if IN_SOURCE_TREE else
                 "as root: echo 512 > /proc/sys/vm/nr_hugepages and mount hugetlbfs"
                 " on /dev/hugepages")
DEFAULT_PROVIDER_DIR = REPO_ROOT / "build" / "drivers" / "ofi"
DEFAULT_SOCKET = Path("/run/ofi-dpdk/memif.sock")
# memif ring buffer bytes: one 9000-byte frame and its Ethernet header fit.
MEMIF_BUFFER = 9216
SYS_NET = Path("/sys/class/net")
SYS_PCI = Path("/sys/bus/pci/devices")
SYS_PCI_DRIVERS = Path("/sys/bus/pci/drivers")
IOMMU_GROUPS = Path("/sys/kernel/iommu_groups")
VFIO_NO_IOMMU = Path("/sys/module/vfio/parameters/enable_unsafe_noiommu_mode")
# A launcher's record of each device it bound (--bind): its kernel driver,
# the launcher's pid and its program's, until given back.
BOUND_DIR = Path("/run/ofi-dpdk/bound")
# net_af_packet's ring frames: 2048 bytes by default, of which a received
# frame gets all but 66 (the TPACKET_V2 header before it): MTU 1968.  A
# larger interface MTU gets frames in whole KiB, four to a block, up to a
# jumbo frame's (drivers/net/packet_ring.h says the same).
PACKET_RING_LEAD = 66 + 14
PACKET_RING_DEFAULT_FRAME = 2048
JUMBO_MTU = 9216
MEMINFO = Path("/proc/meminfo")
MOUNTS = Path("/proc/mounts")
PROC_NET_UNIX = Path("/proc/net/unix")
HUGE_MIN_FREE_KB = 256 * 1024  # below this, DPDK may not fit its pools
NO_HUGE_ARGS = ["--no-huge", "-m", "512", "--no-shconf"]
PCI_DRIVERS = ("vfio-pci", "uio_pci_generic", "igb_uio", "mlx4_core", "mlx5_core")
DEFAULT_SWITCH = REPO_ROOT / "build" / "app" / "switch" / "dpdk-fi-switch"
# The provider's XDP program (drivers/net/xdp/ofi_dpdk_steer.bpf.c): built
# in BUILD/drivers/net, installed in LIBDIR/bpf.
STEER_OBJECT = "ofi_dpdk_steer.o"
# XDP programs an af_xdp port of an earlier run may have left on its
# interface (net_af_xdp attaches them for good and takes them off only when
# the device closes, which the provider never does).
AF_XDP_PROGRAMS = ("ofi_dpdk_steer", "xsk_def_prog")
SWITCH_DIR = Path("/run/ofi-dpdk")
SWITCH_START_SECONDS = 20


class LaunchError(Exception):
    """A problem that stops the launch; main() prints it on one line."""


def note(message: str) -> None:
    """Prints a one-line note on stderr."""
    print(f"{PROG}: note: {message}", file=sys.stderr)


def allowed_cpus() -> list[int]:
    """The CPUs this process may run on, in order."""
    return sorted(os.sched_getaffinity(0))


def job_rank(environ: Mapping[str, str]) -> tuple[int, int] | None:
    """(rank, local rank) when started as a rank of a job, else None. A
    starter that gives no local rank gets the rank as local rank."""
    for rank_name, local_name in RANK_VARIABLES:
        rank = environ.get(rank_name, "")
        if rank.isdigit():
            local = environ.get(local_name, "")
            return int(rank), int(local) if local.isdigit() else int(rank)
    return None


def default_lcore(topology: str, rank: tuple[int, int] | None = None) -> int:
    """The first allowed CPU; the second for memif-client, so that a server
    and a client started on one host do not poll on the same core; for a
    rank of a job, its local rank's CPU (round robin)."""
    cpus = allowed_cpus()
    if rank is not None:
        return cpus[rank[1] % len(cpus)]
    return cpus[1] if topology == "memif-client" and len(cpus) > 1 else cpus[0]


def for_rank(text: str, rank: tuple[int, int] | None) -> str:
    """TEXT with {host}, {rank} and {local_rank} replaced. Raises LaunchError."""
    if "{" not in text:
        return text
    host = socket.gethostname()
    if rank is None:
        if "{rank}" in text or "{local_rank}" in text:
            raise LaunchError(f"'{text}' names {{rank}} or {{local_rank}}, but no job starter"
                              " gave this process a rank")
        rank = (0, 0)
    try:
        return text.format(host=host, rank=rank[0], local_rank=rank[1])
    except (KeyError, IndexError, ValueError) as e:
        raise LaunchError(f"cannot fill in '{text}': only {{host}}, {{rank}} and"
                          " {local_rank} may be used") from e


def memif_role(topology: str, rank: tuple[int, int] | None) -> str:
    """server or client. Raises LaunchError."""
    if topology != "memif":
        return topology.split("-")[1]
    if rank is None:
        raise LaunchError("--topology memif picks the role from the rank of a job;"
                          " outside a job use memif-server or memif-client")
    if rank[1] > 1:
        raise LaunchError(f"local rank {rank[1]}: a memif pair joins two ranks of a host;"
                          " for more, give each rank a veth on a bridge (af_packet,"
                          " usertools/dpdk-fi-hosts.sh)")
    return "server" if rank[1] == 0 else "client"


def hugepages_available(meminfo: Path = MEMINFO, mounts: Path = MOUNTS) -> tuple[bool, str]:
    """Whether DPDK can use hugepages here: enough free huge pages and a
    hugetlbfs mount this process may write to. Returns (False, why) if not."""
    fields: dict[str, int] = {}
    try:
        for line in meminfo.read_text().splitlines():
            key, _, value = line.partition(":")
            words = value.split()
            if words and words[0].isdigit():
                fields[key] = int(words[0])
        mount_points = [words[1] for words in map(str.split, mounts.read_text().splitlines())
                        if len(words) > 2 and words[2] == "hugetlbfs"]
    except OSError as e:
        return False, f"cannot read {e.filename}"
    free_kb = fields.get("HugePages_Free", 0) * fields.get("Hugepagesize", 0)
    if free_kb < HUGE_MIN_FREE_KB:
        return False, f"only {free_kb // 1024} MiB of free hugepages"
    if not mount_points:
        return False, "no hugetlbfs mounted"
    if not any(os.access(m, os.W_OK | os.X_OK) for m in mount_points):
        return False, f"no permission to write to {mount_points[0]}"
    return True, ""


def socket_is_listening(path: Path, table: Path = PROC_NET_UNIX) -> bool:
    """True if a socket of this network namespace listens on PATH, as
    /proc/net/unix tells. (Never probe with connect(): a memif server of
    DPDK 22.11 aborts when a peer connects and hangs up before its hello.)"""
    try:
        lines = table.read_text().splitlines()[1:]
    except OSError:
        return False
    for line in lines:
        # Num RefCount Protocol Flags Type St Inode Path; Flags has
        # __SO_ACCEPTCON (0x10000) on a listening socket.
        words = line.split(maxsplit=7)
        if len(words) == 8 and words[7] == str(path) and int(words[3], 16) & 0x10000:
            return True
    return False


def prepare_memif_socket(path: Path, role: str) -> None:
    """Server: creates the socket's directory and removes a stale socket file.
    Client: notes when no server listens yet. Raises LaunchError."""
    if role == "client":
        if not socket_is_listening(path):
            note(f"no memif server listens on {path} yet; start the server first")
        return
    directory = path.parent
    try:
        directory.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise LaunchError(f"cannot create the socket directory {directory}: {e.strerror}") from e
    if not directory.is_dir() or not os.access(directory, os.W_OK | os.X_OK):
        raise LaunchError(f"no permission to create a socket in {directory}; use --socket")
    if not os.path.lexists(path):
        return
    if not stat.S_ISSOCK(os.lstat(path).st_mode):
        raise LaunchError(f"{path} exists and is not a socket; use another --socket")
    if socket_is_listening(path):
        raise LaunchError(f"a memif server already listens on {path}; use another --socket")
    try:
        path.unlink()
    except OSError as e:
        raise LaunchError(f"cannot remove the stale socket {path}: {e.strerror}") from e
    note(f"removed the stale socket {path}")


def normalize_bdf(bdf: str) -> str:
    """0000:03:00.0 from 03:00.0 or 0000:03:00.0; raises LaunchError if malformed."""
    match = re.fullmatch(r"(?:([0-9a-fA-F]{4}):)?([0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7])", bdf)
    if not match:
        raise LaunchError(f"'{bdf}' is not a PCI address like 0000:03:00.0")
    return f"{match.group(1) or '0000'}:{match.group(2)}".lower()


def pci_of_rank(devices: str, rank: tuple[int, int] | None) -> str:
    """The device of --pci BDF[,BDF...] this process takes: the only one,
    or in a job the one at its local rank (a NIC per rank of a host).
    Raises LaunchError."""
    listed = devices.split(",")
    if len(listed) == 1:
        return listed[0]
    if rank is None:
        raise LaunchError(f"--pci '{devices}' names a device per local rank, but no job"
                          " starter gave this process a rank")
    if rank[1] >= len(listed):
        raise LaunchError(f"--pci '{devices}' names {len(listed)} devices: none for local"
                          f" rank {rank[1]}")
    return listed[rank[1]]


def device_args(args: argparse.Namespace, rank: tuple[int, int] | None = None) -> list[str]:
    """The EAL options naming the port for args.topology. Raises LaunchError."""
    if args.topology == "ring":
        return ["--vdev=net_ring0"]
    if args.topology in ("memif", "memif-server", "memif-client"):
        role = memif_role(args.topology, rank)
        path = Path(os.path.abspath(for_rank(args.socket, rank)))
        if "," in str(path):
            raise LaunchError(f"the socket path {path} must not contain a comma")
        # A job's client waits for its server (FI_DPDK_CONNECT_TIMEOUT_MS).
        if rank is None or role == "server":
            prepare_memif_socket(path, role)
        # A socket file, not DPDK's default abstract name: it shows in the
        # file system and works across network namespaces.
        mac = f",mac={args.mac}" if args.mac else ""
        return [f"--vdev=net_memif0,role={role},socket={path},socket-abstract=no,"
                f"bsize={MEMIF_BUFFER}{mac}"]
    if args.topology == "shared":
        return ensure_switch(args)
    if args.topology in ("af_packet", "af_xdp"):
        iface = for_rank(args.iface, rank)
        if "/" in iface or "," in iface or not (SYS_NET / iface).exists():
            raise LaunchError(f"no network interface '{iface}' (see: ip link)")
        if args.topology == "af_xdp":
            warn_other_receive_queues(iface)
            program = steer_program(args)
            steer = f",xdp_prog={program}" if program else ""
            return [f"--vdev=net_af_xdp0,iface={iface},start_queue=0,queue_count=1{steer}"]
        return [f"--vdev=net_af_packet0,iface={iface}{packet_ring_args(iface)}"]
    bdf = normalize_bdf(pci_of_rank(args.pci, rank))
    device = SYS_PCI / bdf
    if not device.exists():
        raise LaunchError(f"no PCI device {bdf} (see: lspci -D)")
    driver = current_driver(bdf)
    if driver not in PCI_DRIVERS and getattr(args, "bind", None) is None:
        note(f"{bdf} is bound to {driver}; DPDK needs vfio-pci"
             f" (--bind, or dpdk-devbind.py -b vfio-pci {bdf})")
    return ["-a", bdf]


def current_driver(bdf: str) -> str:
    """The kernel driver PCI device bdf is bound to, "none" if unbound."""
    link = SYS_PCI / bdf / "driver"
    return link.resolve().name if link.exists() else "none"


def binding_problem(driver: str) -> str | None:
    """What stops binding a device to driver here, with the command that
    fixes it; None when nothing does."""
    if os.geteuid() != 0:
        return "binding a device needs root"
    if shutil.which("dpdk-devbind.py") is None:
        return "no dpdk-devbind.py (apt-get install dpdk)"
    if not (SYS_PCI_DRIVERS / driver).is_dir():
        return f"the {driver} driver is not loaded (modprobe {driver})"
    if driver == "vfio-pci":
        has_groups = IOMMU_GROUPS.is_dir() and any(IOMMU_GROUPS.iterdir())
        unsafe = VFIO_NO_IOMMU.exists() and VFIO_NO_IOMMU.read_text().strip() in ("Y", "1")
        if not has_groups and not unsafe:
            return ("vfio-pci needs an IOMMU, and this machine has none enabled: turn it on"
                    " (intel_iommu=on or amd_iommu=on on the kernel's command line), or allow"
                    " vfio without one (echo 1 > /sys/module/vfio/parameters/"
                    "enable_unsafe_noiommu_mode), or use --bind uio_pci_generic")
    return None


def devbind(*arguments: str) -> str:
    """Runs dpdk-devbind.py; returns what it printed."""
    done = subprocess.run(["dpdk-devbind.py", *arguments], stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, text=True, check=False)
    return done.stdout.strip()


def process_alive(pid: int) -> bool:
    """Whether process pid still runs."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def read_binding_record(bdf: str) -> tuple[str, list[int]] | None:
    """(kernel driver, [launcher pid, program pid]) of the record a
    launcher that bound bdf keeps (BOUND_DIR/BDF), or None."""
    try:
        driver, *pids = (BOUND_DIR / bdf).read_text().split()
        return driver, [int(pid) for pid in pids]
    except (OSError, ValueError):
        return None


def interface_up(bdf: str) -> str | None:
    """The kernel's network interface on bdf that is up, if any."""
    net = SYS_PCI / bdf / "net"
    for iface in sorted(os.listdir(net)) if net.is_dir() else []:
        try:
            if int((SYS_NET / iface / "flags").read_text(), 16) & 1:  # IFF_UP
                return iface
        except (OSError, ValueError):
            continue
    return None


def bind_device(bdf: str, driver: str, dry_run: bool = False) -> str | None:
    """Binds bdf to driver with DPDK's dpdk-devbind.py unless a driver DPDK
    can use already holds it; returns the kernel driver to give it back to
    when the program ends (None: nothing to undo). A device a launcher
    bound and did not give back (it was killed) is taken over and given
    back at this one's end; one a running launcher or its program holds is
    refused. The record (BOUND_DIR/BDF: driver, pids) and a lock around the
    check and the bind keep two launchers from binding one device. dry_run: only the
    checks. Raises LaunchError."""
    if not (SYS_PCI / bdf).exists():
        raise LaunchError(f"no PCI device {bdf} (see: lspci -D)")
    try:
        BOUND_DIR.mkdir(parents=True, exist_ok=True)
        lock = open(BOUND_DIR / f"{bdf}.lock", "w", encoding="ascii")
    except OSError as e:
        raise LaunchError(f"cannot keep a record of bindings in {BOUND_DIR}: {e.strerror}") from e
    with lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        record = read_binding_record(bdf)
        holders = [pid for pid in (record[1] if record else []) if process_alive(pid)]
        if holders:
            raise LaunchError(f"{bdf} is held by process {holders[0]} (a launcher that bound it,"
                              " or its program): a device serves one process (in a job,"
                              " --pci names one a local rank)")
        before = current_driver(bdf)
        if before in PCI_DRIVERS:
            if record is None or dry_run:
                return None
            note(f"{bdf} was left bound to {before} by a launcher now gone: given back to"
                 f" {record[0]} when the program ends")
            (BOUND_DIR / bdf).write_text(f"{record[0]} {os.getpid()}\n")
            return record[0]
        # dpdk-devbind.py only spares an interface the kernel routes IPv4
        # over; one that is up otherwise (IPv6, a bridge's port) is in use too.
        iface = interface_up(bdf)
        if iface is not None:
            raise LaunchError(f"{bdf} is the kernel's interface {iface}, which is up: if nothing"
                              f" needs it, ip link set {iface} down")
        problem = binding_problem(driver)
        if problem is not None:
            raise LaunchError(f"cannot bind {bdf} to {driver}: {problem}")
        if dry_run:
            note(f"would bind {bdf} to {driver} (it is {before}'s)")
            return None
        (BOUND_DIR / bdf).write_text(f"{before} {os.getpid()}\n")
        said = devbind("-b", driver, bdf)
        if current_driver(bdf) != driver:
            # dpdk-devbind.py leaves an interface the kernel routes over
            # alone (it says so and exits 0): the device stays the kernel's.
            (BOUND_DIR / bdf).unlink(missing_ok=True)
            last = said.splitlines()[-1] if said else "no reason given"
            raise LaunchError(f"dpdk-devbind.py did not bind {bdf} to {driver}: {last}")
    note(f"bound {bdf} to {driver} (was {before}; given back when the program ends)")
    return before


def give_back(bdf: str, driver: str) -> None:
    """Binds bdf to the driver it had before bind_device, or unbinds it,
    and drops the record (kept if that failed: the next --bind retries)."""
    said = devbind("-u", bdf) if driver == "none" else devbind("-b", driver, bdf)
    if current_driver(bdf) != driver:
        note(f"could not give {bdf} back to {driver}: {said or 'no reason given'}")
        return
    (BOUND_DIR / bdf).unlink(missing_ok=True)


class SignalRelay:
    """The signals a job starter or a timeout sends a launcher that runs
    its program as a child (--bind): held while there is no child yet (the
    bind takes seconds), passed on to the child once there is."""

    SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT)

    def __init__(self) -> None:
        self.child: subprocess.Popen | None = None
        self.pending: list[int] = []
        self.record: Path | None = None  # the binding's, when the launcher bound
        for number in self.SIGNALS:
            signal.signal(number, self._received)

    def _received(self, number: int, _frame) -> None:
        if self.child is None:
            self.pending.append(number)
        else:
            self.child.send_signal(number)

    def run(self, program: list[str], env: dict[str, str]) -> int:
        """Runs the program unless a signal came first; returns its status
        the way a shell reports it (128+N for signal N)."""
        if self.pending:
            return 128 + self.pending[0]
        try:
            child = subprocess.Popen(program, env=env)
        except OSError as e:
            raise LaunchError(f"cannot run {program[0]}: {e.strerror}") from e
        self.child = child
        if self.record is not None:
            # The program holds the device too: a launcher killed outright
            # (SIGKILL) may leave it running.
            driver, launcher = self.record.read_text().split()[:2]
            self.record.write_text(f"{driver} {launcher} {child.pid}\n")
        for number in self.pending:  # (came between the check and now)
            child.send_signal(number)
        status = child.wait()
        return 128 - status if status < 0 else status


def packet_ring_args(iface: str) -> str:
    """net_af_packet's devargs for ring frames that hold the interface's
    MTU (",framesz=N,blocksz=4N"), or "" when its default frames do."""
    try:
        mtu = int((SYS_NET / iface / "mtu").read_text())
    except (OSError, ValueError):
        return ""
    mtu = min(mtu, JUMBO_MTU)
    if mtu + PACKET_RING_LEAD <= PACKET_RING_DEFAULT_FRAME:
        return ""
    frame = (mtu + PACKET_RING_LEAD + 1023) // 1024 * 1024
    return f",framesz={frame},blocksz={4 * frame}"


def switch_program(args: argparse.Namespace) -> str:
    """The dpdk-fi-switch to start: --switch, else the one built beside the
    provider in use (--provider-path or FI_PROVIDER_PATH: BUILD/drivers/ofi),
    else this repository's build, else the one on PATH. Raises LaunchError."""
    if args.switch is not None:
        return args.switch
    provider_dir = args.provider_path or os.environ.get("FI_PROVIDER_PATH")
    if provider_dir:
        beside = Path(provider_dir).resolve().parent.parent / "app" / "switch" / "dpdk-fi-switch"
        if beside.is_file():
            return str(beside)
    if DEFAULT_SWITCH.is_file():
        return str(DEFAULT_SWITCH)
    found = shutil.which("dpdk-fi-switch")
    if found is None:
        raise LaunchError("no dpdk-fi-switch (build it, or give --switch PROGRAM)")
    return found


def warn_other_receive_queues(iface: str) -> None:
    """An af_xdp port reads the interface's queue 0 alone: what the device
    spreads to its other queues (RSS) reaches the kernel, which has nothing
    on our ports, so peers see their frames go unanswered. Says so, with
    the fixes, where the interface has more than one receive queue (cloud
    VMs' virtio-net and ENA have one per vCPU)."""
    queues = len(list((SYS_NET / iface / "queues").glob("rx-*")))
    if queues <= 1:
        return
    try:
        base = int(os.environ.get("FI_DPDK_PORT_BASE", "9228"), 0)
    except ValueError:
        base = 9228
    note(f"af_xdp: {iface} has {queues} receive queues and the port reads queue 0 alone:"
         " frames the device puts on the others go to the kernel, not to the port, and"
         f" their senders time out. Give it one queue (ethtool -L {iface} combined 1), or"
         f" steer UDP ports {base}-{base + 63} to queue 0 where the device takes such"
         f" rules (ethtool -N {iface} flow-type udp4 dst-port PORT action 0; udp6 for IPv6)")


def steer_program(args: argparse.Namespace) -> str:
    """The XDP program for an af_xdp port: --xdp-prog PATH; with "default",
    none (net_af_xdp's own); else ofi_dpdk_steer.o beside the provider in
    use (BUILD/drivers/net for BUILD/drivers/ofi, LIBDIR/bpf for
    LIBDIR/libfabric), this repository's build, or an installed one. ""
    when there is none. Raises LaunchError for a PATH that is not a file."""
    if args.xdp_prog == "default":
        return ""
    if args.xdp_prog is not None:
        if not Path(args.xdp_prog).is_file():
            raise LaunchError(f"--xdp-prog: no file {args.xdp_prog}")
        return str(Path(args.xdp_prog).resolve())
    candidates = []
    provider_dir = args.provider_path or os.environ.get("FI_PROVIDER_PATH")
    if provider_dir:
        beside = Path(provider_dir).resolve().parent
        candidates += [beside / "net" / STEER_OBJECT, beside / "bpf" / STEER_OBJECT]
    candidates.append(REPO_ROOT / "build" / "drivers" / "net" / STEER_OBJECT)
    for root in (Path("/usr/lib"), Path("/usr/local/lib")):
        candidates += sorted(root.glob(f"*/bpf/{STEER_OBJECT}")) + [root / "bpf" / STEER_OBJECT]
    for candidate in candidates:
        if candidate.is_file():
            return str(candidate)
    note("af_xdp: no ofi_dpdk_steer.o (build the provider with clang, or give --xdp-prog):"
         " net_af_xdp's own XDP program hands every frame of the interface to the port")
    return ""


def xdp_holders(program_id: int, proc: Path = Path("/proc")) -> list[int]:
    """The processes that hold a descriptor of BPF program `program_id`."""
    holders = []
    for fdinfo in proc.glob("[0-9]*/fdinfo/*"):
        try:
            if f"prog_id:\t{program_id}\n" in fdinfo.read_text():
                holders.append(int(fdinfo.parent.parent.name))
        except (OSError, ValueError):
            continue
    return sorted(set(holders))


def clear_left_xdp(iface: str) -> bool:
    """Takes off IF's XDP program when an earlier af_xdp run left it there
    (AF_XDP_PROGRAMS, held by no process). When a live process holds ours
    (ofi_dpdk_steer), returns False: this one goes on af_packet beside it,
    and the provider has the program pass its queues' frames to the
    kernel. Raises LaunchError when a live process holds net_af_xdp's own,
    which takes every frame: a queue takes one AF_XDP socket."""
    try:
        shown = subprocess.run(["ip", "-d", "-j", "link", "show", "dev", iface],
                               capture_output=True, text=True, check=True)
        prog = json.loads(shown.stdout)[0].get("xdp", {}).get("prog", {})
    except (OSError, subprocess.CalledProcessError, ValueError, IndexError):
        return True  # no ip, or no JSON: net_af_xdp will say what it finds
    name, program_id = prog.get("name"), prog.get("id")
    if name not in AF_XDP_PROGRAMS or not isinstance(program_id, int):
        return True
    holders = xdp_holders(program_id)
    if holders and name == "ofi_dpdk_steer":
        note(f"{iface} is an af_xdp port of process {holders[0]} already (its XDP program"
             f" {name}, id {program_id}): this process goes on af_packet beside it")
        return False
    if holders:
        raise LaunchError(f"{iface} is an af_xdp port of process {holders[0]} already (its XDP"
                          f" program {name}, id {program_id}): one process per interface")
    subprocess.run(["ip", "link", "set", "dev", iface, "xdp", "off"], check=False)
    note(f"{iface}: took off the XDP program {name} (id {program_id}) an earlier run left")
    return True


def switch_running(ready: Path) -> int:
    """The slots of the switch that wrote READY ("pid slots") if it still
    runs, else 0."""
    try:
        words = ready.read_text().split()
        os.kill(int(words[0]), 0)
        return int(words[1])
    except (OSError, ValueError, IndexError):
        return 0


def dpdk_runtime_dir(prefix: str) -> Path:
    """Where EAL keeps the sockets of a file prefix's processes."""
    if os.geteuid() == 0:
        return Path("/var/run/dpdk") / prefix
    return Path(os.environ.get("XDG_RUNTIME_DIR", "/tmp")) / "dpdk" / prefix


def started_since_boot(pid: int) -> float | None:
    """When PID started, in seconds of CLOCK_BOOTTIME; None if unknown."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
        # Fields after the command name, which is in parentheses: 22 is the
        # 20th of them, in clock ticks since boot.
        return int(stat[stat.rindex(")") + 1:].split()[19]) / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        return None


def file_owner_alive(pid: int, path: Path) -> bool:
    """Whether the process that made runtime file PATH (named for PID) runs:
    PID runs and started no later than PATH was written.  A process killed
    without EAL's cleanup leaves its files, and its pid may since belong to
    another (a pid namespace started again, as fabtests' gate does)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass
    started = started_since_boot(pid)
    try:
        written = path.stat().st_mtime - (time.clock_gettime(time.CLOCK_REALTIME)
                                          - time.clock_gettime(time.CLOCK_BOOTTIME))
    except OSError:
        return True
    # A second of slack for clock ticks and a stepped wall clock.
    return started is None or started <= written + 1.0


def live_secondaries(prefix: str) -> list[int]:
    """Pids of DPDK secondaries of PREFIX still running (mp_socket_PID_...)."""
    pids = []
    try:
        files = list(dpdk_runtime_dir(prefix).iterdir())
    except OSError:
        return pids
    for path in files:
        match = re.fullmatch(r"mp_socket_(\d+)_.*", path.name)
        if match and file_owner_alive(int(match.group(1)), path):
            pids.append(int(match.group(1)))
    return pids


def ensure_switch(args: argparse.Namespace) -> list[str]:
    """Starts the shared port's switch unless it runs; returns the
    secondary's EAL options. Raises LaunchError."""
    if args.no_huge:
        raise LaunchError("--topology shared needs hugepages (DPDK's secondaries map the"
                          " primary's memory); drop --no-huge")
    available, why = hugepages_available()
    if not available:
        raise LaunchError(f"--topology shared needs hugepages: {why} ({HUGEPAGES_FIX})")
    prefix = f"ofidpdk-{args.name}"
    try:
        SWITCH_DIR.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise LaunchError(f"cannot create {SWITCH_DIR}: {e.strerror}") from e
    ready = SWITCH_DIR / f"switch-{args.name}.ready"
    lock_path = SWITCH_DIR / f"switch-{args.name}.lock"
    # One rank starts the switch; the others wait on the lock, then find it.
    # A switch about to stop takes the same lock, and does not stop while
    # the ready file was touched lately (by us, for a process not attached
    # yet): under the lock, a running switch stays long enough.
    with open(lock_path, "a", encoding="utf-8") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        slots = switch_running(ready)
        if slots:
            if slots < args.processes:
                raise LaunchError(f"the switch of '{args.name}' runs with {slots} slots, fewer"
                                  f" than --processes {args.processes}: use another --name")
            os.utime(ready)
        else:
            # A new primary under processes of the old one would split them
            # into two worlds that cannot see each other.
            stale = live_secondaries(prefix)
            if stale:
                raise LaunchError(f"the switch of '{args.name}' is gone but its processes"
                                  f" {stale[:5]} still run: stop them, or use another --name")
            ready.unlink(missing_ok=True)
            log = SWITCH_DIR / f"switch-{args.name}.log"
            command = [switch_program(args), "-l", str(allowed_cpus()[0]), "--file-prefix", prefix,
                       "--no-pci", "--no-telemetry", "--log-level=lib.eal:error", "--",
                       "--name", args.name, "--processes", str(args.processes),
                       "--linger-ms", "2000", "--ready-file", str(ready),
                       "--lock-file", str(lock_path)]
            # setsid -f: the switch outlives this process and the program it
            # becomes, in a session of its own, a child of init.
            with open(log, "w", encoding="utf-8") as out:
                starter = subprocess.Popen(["setsid", "-f", *command], stdin=subprocess.DEVNULL,
                                           stdout=out, stderr=subprocess.STDOUT)
            deadline = time.monotonic() + SWITCH_START_SECONDS
            while not ready.exists():
                failed = starter.poll() not in (None, 0)
                said = "dpdk-fi-switch:" in log.read_text(errors="replace")
                # (Its banner follows the ready file: look again before failing.)
                if (failed or said or time.monotonic() > deadline) and not ready.exists():
                    text = log.read_text(errors="replace").strip().splitlines()
                    raise LaunchError("dpdk-fi-switch did not start: "
                                      + (text[-1] if text else f"see {log}"))
                time.sleep(0.05)
    return ["--proc-type=secondary", "--file-prefix", prefix]


def memory_args(no_huge: bool) -> list[str]:
    """--in-memory with usable hugepages, else the --no-huge set (with a note)."""
    if no_huge:
        note("--no-huge given; DPDK runs without hugepages (slower)")
        return list(NO_HUGE_ARGS)
    available, why = hugepages_available()
    if available:
        return ["--in-memory"]
    note(f"{why}; DPDK runs with --no-huge (to fix, {HUGEPAGES_FIX})")
    return list(NO_HUGE_ARGS)


def telemetry_prefix() -> str:
    """The file prefix of a process run with --telemetry: the launcher's pid,
    which the program keeps (it is exec'd)."""
    return f"ofi-dpdk-{os.getpid()}"


def eal_args(args: argparse.Namespace, rank: tuple[int, int] | None = None) -> list[str]:
    """The whole EAL command line for FI_DPDK_EAL_ARGS. Raises LaunchError."""
    lcore = default_lcore(args.topology, rank) if args.lcore is None else args.lcore
    if lcore not in allowed_cpus():
        raise LaunchError(f"lcore {lcore} is not among this process's CPUs {allowed_cpus()}")
    eal = ["-l", str(lcore), "--log-level=lib.eal:warning"]
    # DPDK's telemetry socket sits in the process's runtime directory, named
    # by its file prefix: without one of its own, the second process of a
    # host would find the socket taken and EAL would refuse to start.
    eal += ["--file-prefix", telemetry_prefix()] if args.telemetry else ["--no-telemetry"]
    if args.topology != "pci":
        eal.append("--no-pci")
    eal += device_args(args, rank)
    # (A secondary maps the primary's memory: no memory options of its own.)
    if args.topology != "shared":
        eal += memory_args(args.no_huge)
    try:
        eal += shlex.split(args.eal_extra)
    except ValueError as e:
        raise LaunchError(f"cannot split --eal-extra: {e}") from e
    return eal


def provider_env(args: argparse.Namespace, environ: Mapping[str, str]) -> dict[str, str]:
    """The variables the launcher sets, in the order it prints them."""
    env = {"FI_PROVIDER": "dpdk",
           "FI_DPDK_EAL_ARGS": shlex.join(eal_args(args, job_rank(environ)))}
    if args.ip is not None:
        env["FI_DPDK_PORT_ADDR"] = for_rank(args.ip, job_rank(environ))
    if args.provider_path is not None:
        directory = Path(args.provider_path)
        if not directory.is_dir():
            raise LaunchError(f"no provider directory {directory}")
        env["FI_PROVIDER_PATH"] = str(directory.resolve())
    elif "FI_PROVIDER_PATH" not in environ and DEFAULT_PROVIDER_DIR.is_dir():
        env["FI_PROVIDER_PATH"] = str(DEFAULT_PROVIDER_DIR)
    return env


def parse_args(argv: Sequence[str]) -> tuple[argparse.Namespace, list[str]]:
    """Splits ARGV at the first "--"; returns the options and the program."""
    argv = list(argv)
    split = argv.index("--") if "--" in argv else len(argv)
    options, program = argv[:split], argv[split + 1:]
    parser = argparse.ArgumentParser(
        prog=PROG,
        usage="%(prog)s --topology TOPOLOGY [options] -- PROGRAM [ARGS...]",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--topology", required=True, choices=TOPOLOGIES,
                        help="the port to give the provider (see above)")
    parser.add_argument("--socket", default=None, metavar="PATH",
                        help=f"memif socket path (default: {DEFAULT_SOCKET}); may name"
                             " {rank} and {local_rank}")
    parser.add_argument("--mac", metavar="MAC",
                        help="memif: the port's MAC address (default: the driver's), so a"
                             " peer can name it in-band (fi_pingpong -p dpdk -P 0 MAC)")
    parser.add_argument("--ip", metavar="A.B.C.D/N[@GW]",
                        help="the port's IPv4 address and prefix length, and the router"
                             " beyond its subnet (FI_DPDK_PORT_ADDR): peers may then name its"
                             " endpoints by it (fi_pingpong -p dpdk A.B.C.D), on its subnet"
                             " and, through GW, beyond it (frames in UDP); or an IPv6 one"
                             " (fd00::1/64[@GW]), or both, comma-separated; may name {rank}"
                             " and {local_rank} (10.0.0.1{local_rank}/24)")
    parser.add_argument("--iface", metavar="IF",
                        help="af_packet, af_xdp: the kernel interface; may name {host}, {rank}"
                             " and {local_rank}")
    parser.add_argument("--xdp-prog", metavar="PATH|default",
                        help="af_xdp: the XDP program (default: the provider's"
                             " ofi_dpdk_steer.o, which leaves the kernel its traffic;"
                             " 'default': net_af_xdp's own, which takes every frame)")
    parser.add_argument("--pci", metavar="BDF[,BDF...]",
                        help="pci: the device, e.g. 0000:03:00.0; in a job, one per local"
                             " rank (a NIC each), comma-separated")
    parser.add_argument("--bind", nargs="?", const="vfio-pci", metavar="DRIVER",
                        help="pci: bind the device to DRIVER (default vfio-pci; or"
                             " uio_pci_generic) with dpdk-devbind.py if a kernel driver holds"
                             " it, and give it back to that driver when the program ends")
    parser.add_argument("--name", metavar="NAME",
                        help="shared: the port's name (net_ring_NAME; default shared0)")
    parser.add_argument("--processes", type=int, metavar="N",
                        help="shared: queue pairs of a switch this launcher starts, 1 to 16"
                             " (default 8; each gets 64/N endpoint queue ids)")
    parser.add_argument("--switch", metavar="PROGRAM",
                        help="shared: the dpdk-fi-switch to start (default: the one built"
                             " beside the provider in use, else"
                             + (f" {DEFAULT_SWITCH}, else" if IN_SOURCE_TREE else "")
                             + " from PATH)")
    parser.add_argument("--lcore", type=int, metavar="N",
                        help="the EAL main lcore (default: the first CPU this process may"
                             " use; the second for memif-client)")
    parser.add_argument("--no-huge", action="store_true",
                        help="run DPDK without hugepages even if some are available")
    parser.add_argument("--provider-path", metavar="DIR",
                        help="where libdpdk-fi.so is (default: FI_PROVIDER_PATH if set,"
                             + (f" else {DEFAULT_PROVIDER_DIR} if it exists)" if IN_SOURCE_TREE
                                else " else libfabric's own provider folder)"))
    parser.add_argument("--eal-extra", default="", metavar='"ARGS"',
                        help="more EAL arguments, appended as they are")
    parser.add_argument("--telemetry", action="store_true",
                        help="serve DPDK's telemetry socket (the provider's /ofi_dpdk/"
                             " commands among DPDK's), under the file prefix ofi-dpdk-PID:"
                             " read it with dpdk-telemetry.py -f ofi-dpdk-PID")
    parser.add_argument("--print-only", action="store_true",
                        help="do the checks, print the environment as shell exports,"
                             " run nothing")
    args = parser.parse_args(options)
    for option, topologies in (("socket", ("memif", "memif-server", "memif-client")),
                               ("mac", ("memif", "memif-server", "memif-client")),
                               ("iface", ("af_packet", "af_xdp")), ("pci", ("pci",)),
                               ("bind", ("pci",)),
                               ("xdp_prog", ("af_xdp",)),
                               ("name", ("shared",)), ("processes", ("shared",)),
                               ("switch", ("shared",))):
        if getattr(args, option) is not None and args.topology not in topologies:
            parser.error(f"--{option.replace('_', '-')} applies to --topology {' or '.join(topologies)} only")
    if args.telemetry and args.topology == "shared":
        parser.error("--telemetry: a shared port's processes are secondaries of the switch"
                     " and share its file prefix, so they cannot each serve a socket")
    if args.topology in ("af_packet", "af_xdp") and args.iface is None:
        parser.error(f"--topology {args.topology} needs --iface IF")
    if args.topology == "pci" and args.pci is None:
        parser.error("--topology pci needs --pci BDF")
    if args.socket is None:
        args.socket = str(DEFAULT_SOCKET)
    if args.mac is not None and not re.fullmatch(r"[0-9a-fA-F]{2}(:[0-9a-fA-F]{2}){5}", args.mac):
        parser.error(f"--mac '{args.mac}': six hex bytes, e.g. 02:00:00:00:00:01")
    quad = r"\d{1,3}(\.\d{1,3}){3}"
    ipv4 = quad + r"(/\d{1,2})?(@" + quad + ")?"
    ipv6 = r"[0-9a-fA-F:.]*:[0-9a-fA-F:.]*(/\d{1,3})?(@[0-9a-fA-F:.]*:[0-9a-fA-F:.]*)?"
    # ({rank} and {local_rank} stand for numbers: 10.0.0.1{local_rank}/24.)
    ip_form = re.sub(r"\{(local_)?rank\}", "0", args.ip) if args.ip is not None else None
    if ip_form is not None and not all(re.fullmatch(ipv4, item) or re.fullmatch(ipv6, item)
                                       for item in ip_form.split(",")):
        parser.error(f"--ip '{args.ip}': an IPv4 address and prefix length, and optionally"
                     " a gateway, e.g. 10.0.0.1/24 or 10.0.1.2/24@10.0.1.1; or an IPv6 one,"
                     " e.g. fd00:1::2/64@fd00:1::1; or one of each, comma-separated")
    if args.bind is not None and args.bind not in PCI_DRIVERS[:3]:
        parser.error(f"--bind {args.bind}: one of {', '.join(PCI_DRIVERS[:3])}")
    if args.name is None:
        args.name = "shared0"
    elif not re.fullmatch(r"[a-z0-9_]{1,11}", args.name):
        parser.error(f"--name '{args.name}': 1 to 11 of a-z, 0-9 and _")
    if args.processes is None:
        args.processes = 8
    elif not 1 <= args.processes <= 16:
        parser.error("--processes: 1 to 16")
    if not program and not args.print_only:
        parser.error("no program to run: put it after --")
    return args, program


def run(argv: Sequence[str]) -> int:
    """Prints or execs; returns with --print-only, and with the program's
    status when it ran it as a child (--bind). Raises LaunchError."""
    args, program = parse_args(argv)
    if (args.topology == "af_xdp" and os.geteuid() == 0 and not args.print_only and
            not clear_left_xdp(for_rank(args.iface, job_rank(os.environ)))):
        args.topology = "af_packet"
    # With --bind the program runs as a child, the device is given back
    # after it, and the signals that come meanwhile are passed on.
    relay = SignalRelay() if args.bind is not None and not args.print_only else None
    loan: tuple[str, str] | None = None
    try:
        if args.bind is not None:
            bdf = normalize_bdf(pci_of_rank(args.pci, job_rank(os.environ)))
            before = bind_device(bdf, args.bind, dry_run=args.print_only)
            if before is not None:
                loan = (bdf, before)
                if relay is not None:
                    relay.record = BOUND_DIR / bdf
        updates = provider_env(args, os.environ)
        if args.print_only:
            for name, value in updates.items():
                print(f"export {name}={shlex.quote(value)}")
            if program:
                print(f"# would run: {shlex.join(program)}")
            return 0
        env = {**os.environ, **updates}
        if shutil.which(program[0], path=env.get("PATH", os.defpath)) is None:
            raise LaunchError(f"program not found: {program[0]}")
        if args.telemetry:
            note(f"telemetry: dpdk-telemetry.py -f {telemetry_prefix()}")
        sys.stdout.flush()
        if relay is not None:
            return relay.run(program, env)
    finally:
        if loan is not None:
            give_back(*loan)
    try:
        os.execvpe(program[0], program, env)
    except OSError as e:
        raise LaunchError(f"cannot run {program[0]}: {e.strerror}") from e


def main() -> NoReturn:
    try:
        sys.exit(run(sys.argv[1:]))
    except LaunchError as e:
        print(f"{PROG}: error: {e}", file=sys.stderr)
        sys.exit(2)
    except KeyboardInterrupt:
        sys.exit(130)


if __name__ == "__main__":
    main()
