#!/usr/bin/env python3
"""Tests of the usertools: the EAL launcher dpdk-fi-run.py and the test-log
summary of dpdk-fi-test.sh.

Run: python3 -m unittest discover -s test/tools -v   (or run this file)
Nothing here starts DPDK; the launcher runs with --print-only or execs sh.
"""

import importlib.util
import json
import os
import shlex
import shutil
import socket
import subprocess
import sys
import tempfile
import unittest
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
LAUNCHER = REPO / "usertools" / "dpdk-fi-run.py"
TEST_SCRIPT = REPO / "usertools" / "dpdk-fi-test.sh"


def load_launcher():
    """Imports dpdk-fi-run.py (its name has dashes) as a module."""
    spec = importlib.util.spec_from_file_location("dpdk_fi_run", LAUNCHER)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def launch(*args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(LAUNCHER), *args], capture_output=True,
                          text=True, timeout=30, env=env)


def exports(stdout: str) -> dict[str, str]:
    """The NAME=VALUE pairs of the launcher's "export NAME=VALUE" lines."""
    pairs = {}
    for line in stdout.splitlines():
        if line.startswith("export "):
            name, _, value = shlex.split(line[len("export "):])[0].partition("=")
            pairs[name] = value
    return pairs


class LauncherCase(unittest.TestCase):
    def setUp(self) -> None:
        self.tmp = Path(tempfile.mkdtemp(prefix="dpdk-fi-test."))
        self.addCleanup(shutil.rmtree, self.tmp, ignore_errors=True)

    def eal(self, *args: str) -> list[str]:
        """Runs the launcher with --print-only; returns the EAL words."""
        result = launch(*args, "--print-only")
        self.assertEqual(result.returncode, 0, result.stderr)
        env = exports(result.stdout)
        self.assertEqual(env["FI_PROVIDER"], "dpdk")
        return shlex.split(env["FI_DPDK_EAL_ARGS"])

    def assert_one_line_error(self, result: subprocess.CompletedProcess, text: str) -> None:
        self.assertEqual(result.returncode, 2)
        self.assertNotIn("Traceback", result.stderr)
        lines = result.stderr.strip().splitlines()
        self.assertEqual(len(lines), 1, result.stderr)
        self.assertIn("error:", lines[0])
        self.assertIn(text, lines[0])


class PrintOnlyTest(LauncherCase):
    def assert_common(self, eal: list[str]) -> None:
        self.assertEqual(eal[0], "-l")
        self.assertIn("--no-telemetry", eal)
        self.assertIn("--log-level=lib.eal:warning", eal)
        # Exactly one memory mode: --in-memory cannot go with --no-huge.
        self.assertNotEqual("--in-memory" in eal, "--no-huge" in eal)

    def test_ring(self) -> None:
        eal = self.eal("--topology", "ring")
        self.assert_common(eal)
        self.assertIn("--no-pci", eal)
        self.assertIn("--vdev=net_ring0", eal)

    def test_ip_becomes_the_ports_address(self) -> None:
        result = launch("--topology", "ring", "--ip", "10.0.0.1/24", "--print-only")
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertEqual(exports(result.stdout)["FI_DPDK_PORT_ADDR"], "10.0.0.1/24")
        result = launch("--topology", "ring", "--print-only")
        self.assertNotIn("FI_DPDK_PORT_ADDR", exports(result.stdout))
        result = launch("--topology", "ring", "--ip", "10.0.0/24", "--print-only")
        self.assertNotEqual(result.returncode, 0)
        self.assertIn("--ip", result.stderr)
        # IPv6, and one address of each family.
        both = "10.0.0.1/24,fd00:1::2/64@fd00:1::1"
        result = launch("--topology", "ring", "--ip", both, "--print-only")
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertEqual(exports(result.stdout)["FI_DPDK_PORT_ADDR"], both)
        result = launch("--topology", "ring", "--ip", "fd00::1/64,bogus", "--print-only")
        self.assertNotEqual(result.returncode, 0)

    def test_memif_server_creates_socket_directory(self) -> None:
        sock = self.tmp / "a" / "b" / "memif.sock"
        eal = self.eal("--topology", "memif-server", "--socket", str(sock))
        self.assert_common(eal)
        self.assertIn("--no-pci", eal)
        self.assertIn(f"--vdev=net_memif0,role=server,socket={sock},socket-abstract=no,"
                      "bsize=9216", eal)
        self.assertTrue(sock.parent.is_dir())

    def test_memif_client_default_socket(self) -> None:
        result = launch("--topology", "memif-client", "--print-only")
        self.assertEqual(result.returncode, 0, result.stderr)
        eal = shlex.split(exports(result.stdout)["FI_DPDK_EAL_ARGS"])
        self.assertIn("--vdev=net_memif0,role=client,socket=/run/ofi-dpdk/memif.sock,"
                      "socket-abstract=no,bsize=9216", eal)
        self.assertIn("--no-pci", eal)

    def test_memif_server_removes_stale_socket(self) -> None:
        sock = self.tmp / "memif.sock"
        with socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET) as s:
            s.bind(str(sock))  # bound, never listening: what a crash leaves
        result = launch("--topology", "memif-server", "--socket", str(sock), "--print-only")
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertFalse(sock.exists())
        self.assertIn("removed the stale socket", result.stderr)

    def test_memif_server_refuses_a_listening_socket(self) -> None:
        sock = self.tmp / "memif.sock"
        with socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET) as s:
            s.bind(str(sock))
            s.listen()
            result = launch("--topology", "memif-server", "--socket", str(sock), "--print-only")
            self.assert_one_line_error(result, "already listens")
            self.assertTrue(sock.exists())

    def test_memif_socket_directory_error(self) -> None:
        blocker = self.tmp / "file"
        blocker.write_text("")
        result = launch("--topology", "memif-server", "--socket", str(blocker / "memif.sock"),
                        "--print-only")
        self.assert_one_line_error(result, "socket directory")

    def test_af_packet(self) -> None:
        eal = self.eal("--topology", "af_packet", "--iface", "lo")
        self.assert_common(eal)
        self.assertIn("--no-pci", eal)
        # lo's MTU (65536 unless changed): ring frames for a jumbo frame.
        if Path("/sys/class/net/lo/mtu").read_text().strip() == "65536":
            self.assertIn("--vdev=net_af_packet0,iface=lo,framesz=10240,blocksz=40960", eal)
        else:
            self.assertTrue(any(w.startswith("--vdev=net_af_packet0,iface=lo") for w in eal), eal)

    def test_af_xdp(self) -> None:
        eal = self.eal("--topology", "af_xdp", "--iface", "lo")
        self.assert_common(eal)
        vdev = [word for word in eal if word.startswith("--vdev=net_af_xdp0,")]
        self.assertEqual(len(vdev), 1, eal)
        self.assertTrue(vdev[0].startswith("--vdev=net_af_xdp0,iface=lo,start_queue=0,"
                                           "queue_count=1"), vdev)
        result = launch("--topology", "af_xdp", "--print-only")
        self.assertEqual(result.returncode, 2)
        self.assertIn("--topology af_xdp needs --iface IF", result.stderr)

    @unittest.skipUnless(os.geteuid() == 0 and shutil.which("ip"), "needs root and ip")
    def test_af_xdp_on_an_interface_of_several_receive_queues(self) -> None:
        # The port reads queue 0: with more, the launcher says what is lost
        # and how to fix it; with one (lo), nothing.
        name = f"dfq{os.getpid() % 100000}"
        made = subprocess.run(["ip", "link", "add", name, "numtxqueues", "2", "numrxqueues", "2",
                               "type", "veth", "peer", "name", name + "p"],
                              capture_output=True, text=True)
        if made.returncode != 0:
            self.skipTest(f"cannot make a veth pair: {made.stderr.strip()}")
        self.addCleanup(subprocess.run, ["ip", "link", "del", name], capture_output=True)
        result = launch("--topology", "af_xdp", "--iface", name, "--print-only",
                        env={**os.environ, "FI_DPDK_PORT_BASE": "10000"})
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertIn(f"af_xdp: {name} has 2 receive queues and the port reads queue 0 alone",
                      result.stderr)
        self.assertIn(f"ethtool -L {name} combined 1", result.stderr)
        self.assertIn("steer UDP ports 10000-10063 to queue 0", result.stderr)
        result = launch("--topology", "af_xdp", "--iface", "lo", "--print-only")
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertNotIn("receive queues", result.stderr)

    def test_af_xdp_program(self) -> None:
        # A program named, net_af_xdp's own, and one that is not there.
        with tempfile.NamedTemporaryFile(suffix=".o") as program:
            eal = self.eal("--topology", "af_xdp", "--iface", "lo", "--xdp-prog", program.name)
            self.assertIn("--vdev=net_af_xdp0,iface=lo,start_queue=0,queue_count=1,"
                          f"xdp_prog={Path(program.name).resolve()}", eal)
        eal = self.eal("--topology", "af_xdp", "--iface", "lo", "--xdp-prog", "default")
        self.assertIn("--vdev=net_af_xdp0,iface=lo,start_queue=0,queue_count=1", eal)
        result = launch("--topology", "af_xdp", "--iface", "lo", "--xdp-prog", "/nonexistent.o",
                        "--print-only")
        self.assertEqual(result.returncode, 2)
        self.assertIn("--xdp-prog: no file /nonexistent.o", result.stderr)
        result = launch("--topology", "ring", "--xdp-prog", "default", "--print-only")
        self.assertEqual(result.returncode, 2)
        self.assertIn("--xdp-prog applies to --topology af_xdp only", result.stderr)

    def job_eal(self, environ: dict[str, str], *args: str) -> list[str]:
        """The EAL words for a rank of a job (its starter's variables set)."""
        env = {k: v for k, v in os.environ.items()
               if not any(k.startswith(p) for p in ("OMPI_", "PMIX_", "PMI_", "SLURM_"))}
        env.update(environ)
        result = launch(*args, "--print-only", env=env)
        self.assertEqual(result.returncode, 0, result.stderr)
        return shlex.split(exports(result.stdout)["FI_DPDK_EAL_ARGS"])

    def test_memif_pair_of_a_job_takes_its_role_from_the_local_rank(self) -> None:
        sock = self.tmp / "pair" / "m.sock"
        server = self.job_eal({"OMPI_COMM_WORLD_RANK": "0", "OMPI_COMM_WORLD_LOCAL_RANK": "0"},
                              "--topology", "memif", "--socket", str(sock))
        client = self.job_eal({"OMPI_COMM_WORLD_RANK": "1", "OMPI_COMM_WORLD_LOCAL_RANK": "1"},
                              "--topology", "memif", "--socket", str(sock))
        self.assertIn(f"--vdev=net_memif0,role=server,socket={sock},socket-abstract=no,"
                      "bsize=9216", server)
        self.assertIn(f"--vdev=net_memif0,role=client,socket={sock},socket-abstract=no,"
                      "bsize=9216", client)
        # Each rank polls on its own CPU where there are two.
        if len(os.sched_getaffinity(0)) > 1:
            self.assertNotEqual(server[1], client[1])

    def test_memif_has_no_third_rank_and_needs_a_job(self) -> None:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("OMPI_", "PMI"))}
        result = launch("--topology", "memif", "--print-only", env=env)
        self.assert_one_line_error(result, "rank of a job")
        result = launch("--topology", "memif", "--print-only",
                        env={**env, "OMPI_COMM_WORLD_RANK": "2",
                             "OMPI_COMM_WORLD_LOCAL_RANK": "2"})
        self.assert_one_line_error(result, "local rank 2")

    def test_rank_placeholders_and_every_starter(self) -> None:
        # Open MPI, PMIx, Hydra and Slurm name the ranks differently.
        for environ in ({"OMPI_COMM_WORLD_RANK": "5", "OMPI_COMM_WORLD_LOCAL_RANK": "0"},
                        {"PMIX_RANK": "5", "PMIX_LOCAL_RANK": "0"},
                        {"PMI_RANK": "5", "MPI_LOCALRANKID": "0"},
                        {"SLURM_PROCID": "5", "SLURM_LOCALID": "0"}):
            env = {k: v for k, v in os.environ.items() if not k.startswith(("OMPI_", "PMI"))}
            result = launch("--topology", "af_packet", "--iface", "nosuch{rank}x{local_rank}",
                            "--print-only", env={**env, **environ})
            self.assert_one_line_error(result, "'nosuch5x0'")
            sock = self.tmp / "r{rank}.sock"
            eal = self.job_eal(environ, "--topology", "memif", "--socket", str(sock))
            self.assertIn(f"socket={self.tmp}/r5.sock", " ".join(eal), environ)

    def test_placeholder_outside_a_job(self) -> None:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("OMPI_", "PMI"))}
        result = launch("--topology", "af_packet", "--iface", "veth{rank}", "--print-only",
                        env=env)
        self.assert_one_line_error(result, "no job starter")

    def test_host_placeholder_in_and_outside_a_job(self) -> None:
        # {host}: one interface per host (network namespaces as hosts, each
        # its own host name), with or without a job starter.
        host = socket.gethostname()
        env = {k: v for k, v in os.environ.items() if not k.startswith(("OMPI_", "PMI"))}
        result = launch("--topology", "af_packet", "--iface", "no{host}z", "--print-only",
                        env=env)
        self.assert_one_line_error(result, f"'no{host}z'")
        result = launch("--topology", "af_packet", "--iface", "no{host}z{local_rank}",
                        "--print-only", env={**env, "OMPI_COMM_WORLD_RANK": "3",
                                             "OMPI_COMM_WORLD_LOCAL_RANK": "1"})
        self.assert_one_line_error(result, f"'no{host}z1'")

    def test_af_packet_missing_interface(self) -> None:
        result = launch("--topology", "af_packet", "--iface", "nosuchif0", "--print-only")
        self.assert_one_line_error(result, "nosuchif0")

    def test_pci(self) -> None:
        devices = sorted(os.listdir("/sys/bus/pci/devices")) if os.path.isdir(
            "/sys/bus/pci/devices") else []
        if not devices:
            self.skipTest("no PCI devices here")
        eal = self.eal("--topology", "pci", "--pci", devices[0])
        self.assert_common(eal)
        self.assertNotIn("--no-pci", eal)
        self.assertEqual(eal[eal.index("-a") + 1], devices[0])

    def test_pci_device_per_local_rank(self) -> None:
        devices = sorted(os.listdir("/sys/bus/pci/devices")) if os.path.isdir(
            "/sys/bus/pci/devices") else []
        if len(devices) < 2:
            self.skipTest("fewer than two PCI devices here")
        listed = f"{devices[0]},{devices[1]}"
        for local_rank in (0, 1):
            eal = self.job_eal({"OMPI_COMM_WORLD_RANK": str(local_rank + 4),
                                "OMPI_COMM_WORLD_LOCAL_RANK": str(local_rank)},
                               "--topology", "pci", "--pci", listed)
            self.assertEqual(eal[eal.index("-a") + 1], devices[local_rank])
        env = {k: v for k, v in os.environ.items() if not k.startswith(("OMPI_", "PMI"))}
        result = launch("--topology", "pci", "--pci", listed, "--print-only",
                        env={**env, "OMPI_COMM_WORLD_RANK": "2",
                             "OMPI_COMM_WORLD_LOCAL_RANK": "2"})
        self.assert_one_line_error(result, "none for local rank 2")
        result = launch("--topology", "pci", "--pci", listed, "--print-only", env=env)
        self.assert_one_line_error(result, "no job starter")

    def test_ip_per_rank(self) -> None:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("OMPI_", "PMI"))}
        result = launch("--topology", "ring", "--ip", "10.0.0.1{local_rank}/24,fd00::{rank}/64",
                        "--print-only", env={**env, "OMPI_COMM_WORLD_RANK": "3",
                                             "OMPI_COMM_WORLD_LOCAL_RANK": "1"})
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertEqual(exports(result.stdout)["FI_DPDK_PORT_ADDR"], "10.0.0.11/24,fd00::3/64")
        result = launch("--topology", "ring", "--ip", "10.0.0.1{local_rank}/24", "--print-only",
                        env=env)
        self.assert_one_line_error(result, "no job starter")
        result = launch("--topology", "ring", "--ip", "10.0.0.{host}/24", "--print-only", env=env)
        self.assertNotEqual(result.returncode, 0)
        self.assertIn("--ip", result.stderr)

    def test_pci_missing_device(self) -> None:
        result = launch("--topology", "pci", "--pci", "ffff:ff:1f.7", "--print-only")
        self.assert_one_line_error(result, "ffff:ff:1f.7")

    def test_bind_applies_to_pci_and_dpdk_drivers(self) -> None:
        for args, said in ((("--topology", "ring", "--bind"), "--bind applies to --topology pci"),
                           (("--topology", "pci", "--pci", "00:01.0", "--bind", "e1000e"),
                            "one of vfio-pci, uio_pci_generic")):
            result = launch(*args, "--print-only")
            self.assertEqual(result.returncode, 2)
            self.assertIn(said, result.stderr)
        result = launch("--topology", "pci", "--pci", "ffff:ff:1f.7", "--bind", "--print-only")
        self.assert_one_line_error(result, "no PCI device ffff:ff:1f.7")

    def test_bind_says_what_is_missing(self) -> None:
        if os.geteuid() != 0 or shutil.which("dpdk-devbind.py") is None:
            self.skipTest("needs root and dpdk-devbind.py (the checks before those)")
        launcher = load_launcher()
        launcher.SYS_PCI_DRIVERS = self.tmp / "drivers"
        launcher.IOMMU_GROUPS = self.tmp / "iommu_groups"
        launcher.VFIO_NO_IOMMU = self.tmp / "enable_unsafe_noiommu_mode"
        (self.tmp / "drivers").mkdir()
        self.assertIn("modprobe uio_pci_generic", launcher.binding_problem("uio_pci_generic"))
        self.assertIn("modprobe vfio-pci", launcher.binding_problem("vfio-pci"))
        (self.tmp / "drivers" / "vfio-pci").mkdir()
        (self.tmp / "iommu_groups").mkdir()
        launcher.VFIO_NO_IOMMU.write_text("N\n")
        problem = launcher.binding_problem("vfio-pci")
        self.assertIn("intel_iommu=on", problem)
        self.assertIn("echo 1 > /sys/module/vfio/parameters/enable_unsafe_noiommu_mode", problem)
        self.assertIn("--bind uio_pci_generic", problem)
        launcher.VFIO_NO_IOMMU.write_text("Y\n")
        self.assertIsNone(launcher.binding_problem("vfio-pci"))
        launcher.VFIO_NO_IOMMU.write_text("N\n")
        (self.tmp / "iommu_groups" / "7").mkdir()
        self.assertIsNone(launcher.binding_problem("vfio-pci"))

    def fake_device(self, driver: str):
        """The launcher module with sysfs and its binding records under
        self.tmp, holding device 0000:03:00.0 on `driver`; dpdk-devbind.py
        must not run."""
        launcher = load_launcher()
        launcher.SYS_PCI = self.tmp / "devices"
        launcher.SYS_NET = self.tmp / "net"
        launcher.BOUND_DIR = self.tmp / "bound"
        device = launcher.SYS_PCI / "0000:03:00.0"
        device.mkdir(parents=True)
        (self.tmp / driver).mkdir()
        (device / "driver").symlink_to(self.tmp / driver)

        def no_devbind(*arguments):
            raise AssertionError(f"dpdk-devbind.py {arguments} ran")
        launcher.devbind = no_devbind
        return launcher

    def test_bind_leaves_a_device_dpdk_can_use(self) -> None:
        launcher = self.fake_device("uio_pci_generic")
        self.assertIsNone(launcher.bind_device("0000:03:00.0", "vfio-pci"))
        self.assertEqual(launcher.current_driver("0000:03:00.0"), "uio_pci_generic")

    def test_bind_takes_over_a_device_a_killed_launcher_left(self) -> None:
        launcher = self.fake_device("uio_pci_generic")
        launcher.BOUND_DIR.mkdir()
        record = launcher.BOUND_DIR / "0000:03:00.0"
        # A launcher that is gone (a child of ours, reaped) left it bound.
        dead = subprocess.Popen(["true"])
        dead.wait()
        record.write_text(f"e1000e {dead.pid} {dead.pid}\n")
        self.assertEqual(launcher.bind_device("0000:03:00.0", "vfio-pci"), "e1000e")
        self.assertEqual(record.read_text().split(), ["e1000e", str(os.getpid())])
        # One a running launcher or its program (here: our parent) holds is
        # refused.
        for pids in (f"{os.getppid()} {dead.pid}", f"{dead.pid} {os.getppid()}"):
            record.write_text(f"e1000e {pids}\n")
            with self.assertRaisesRegex(launcher.LaunchError, "a device serves one process"):
                launcher.bind_device("0000:03:00.0", "vfio-pci")

    def test_bind_runs_the_program_as_a_child_and_passes_signals_on(self) -> None:
        launcher = load_launcher()
        import signal  # pylint: disable=import-outside-toplevel
        saved = {n: signal.getsignal(n) for n in launcher.SignalRelay.SIGNALS}
        try:
            relay = launcher.SignalRelay()
            relay.record = self.tmp / "record"
            relay.record.write_text("e1000e 123\n")
            self.assertEqual(relay.run(["sh", "-c", "exit 3"], dict(os.environ)), 3)
            # The record names the program too (it holds the device).
            driver, bound_by, program_pid = relay.record.read_text().split()
            self.assertEqual((driver, bound_by), ("e1000e", "123"))
            self.assertEqual(int(program_pid), relay.child.pid)
            # A signal to the launcher reaches the program, whose status
            # says so as a shell would (128 + 15).
            relay = launcher.SignalRelay()
            program = ["sh", "-c", f"kill -TERM {os.getpid()}; exec sleep 20"]
            self.assertEqual(relay.run(program, dict(os.environ)), 143)
            # One that came before the program started: it never starts.
            relay = launcher.SignalRelay()
            os.kill(os.getpid(), signal.SIGHUP)
            marker = self.tmp / "ran"
            self.assertEqual(relay.run(["touch", str(marker)], dict(os.environ)), 129)
            self.assertFalse(marker.exists())
        finally:
            for number, handler in saved.items():
                signal.signal(number, handler)

    def test_bind_refuses_an_interface_that_is_up(self) -> None:
        launcher = self.fake_device("e1000e")
        (launcher.SYS_PCI / "0000:03:00.0" / "net" / "eth7").mkdir(parents=True)
        (launcher.SYS_NET / "eth7").mkdir(parents=True)
        (launcher.SYS_NET / "eth7" / "flags").write_text("0x1003\n")
        with self.assertRaisesRegex(launcher.LaunchError, "ip link set eth7 down"):
            launcher.bind_device("0000:03:00.0", "uio_pci_generic")

    def test_no_huge_forced(self) -> None:
        result = launch("--topology", "ring", "--no-huge", "--print-only")
        self.assertEqual(result.returncode, 0, result.stderr)
        eal = shlex.split(exports(result.stdout)["FI_DPDK_EAL_ARGS"])
        self.assertNotIn("--in-memory", eal)
        i = eal.index("--no-huge")
        self.assertEqual(eal[i:i + 4], ["--no-huge", "-m", "512", "--no-shconf"])
        self.assertEqual(len(result.stderr.strip().splitlines()), 1)
        self.assertIn("--no-huge", result.stderr)

    def test_lcore_and_eal_extra(self) -> None:
        eal = self.eal("--topology", "ring", "--lcore", "0", "--eal-extra", "--file-prefix x1")
        self.assertEqual(eal[:2], ["-l", "0"])
        self.assertEqual(eal[-2:], ["--file-prefix", "x1"])

    def test_lcore_not_allowed(self) -> None:
        result = launch("--topology", "ring", "--lcore", "9999", "--print-only")
        self.assert_one_line_error(result, "9999")

    def test_provider_path(self) -> None:
        result = launch("--topology", "ring", "--provider-path", str(self.tmp), "--print-only")
        self.assertEqual(exports(result.stdout)["FI_PROVIDER_PATH"], str(self.tmp))
        result = launch("--topology", "ring", "--provider-path", str(self.tmp / "no"),
                        "--print-only")
        self.assert_one_line_error(result, "provider directory")

    def test_provider_path_already_set_is_kept(self) -> None:
        env = {**os.environ, "FI_PROVIDER_PATH": "/somewhere"}
        result = launch("--topology", "ring", "--print-only", env=env)
        self.assertNotIn("FI_PROVIDER_PATH", exports(result.stdout))

    def test_option_of_another_topology(self) -> None:
        result = launch("--topology", "ring", "--iface", "lo", "--print-only")
        self.assertEqual(result.returncode, 2)
        self.assertIn("--iface applies to", result.stderr)
        self.assertNotIn("Traceback", result.stderr)

    def test_help(self) -> None:
        result = launch("--help")
        self.assertEqual(result.returncode, 0)
        for topology in ("ring", "memif-server", "memif-client", "af_packet", "af_xdp", "pci",
                         "shared"):
            self.assertIn(topology, result.stdout)

    # --topology shared starts dpdk-fi-switch; only its refusals are tested
    # here (test/multiproc and the mpi suite run it).
    def test_shared_refuses_no_huge(self) -> None:
        result = launch("--topology", "shared", "--no-huge", "--print-only")
        self.assert_one_line_error(result, "needs hugepages")

    def test_shared_name_and_processes(self) -> None:
        result = launch("--topology", "shared", "--name", "Bad-Name", "--print-only")
        self.assertEqual(result.returncode, 2)
        self.assertNotIn("Traceback", result.stderr)
        self.assertIn("--name", result.stderr)
        result = launch("--topology", "shared", "--processes", "17", "--print-only")
        self.assertEqual(result.returncode, 2)
        self.assertIn("--processes: 1 to 16", result.stderr)
        result = launch("--topology", "ring", "--name", "x", "--print-only")
        self.assertEqual(result.returncode, 2)
        self.assertIn("--name applies to", result.stderr)

    def test_telemetry_gets_a_file_prefix_of_its_own(self) -> None:
        eal = self.eal("--topology", "ring", "--telemetry")
        self.assertNotIn("--no-telemetry", eal)
        prefix = eal[eal.index("--file-prefix") + 1]
        self.assertRegex(prefix, r"^ofi-dpdk-[0-9]+$")
        self.assertIn("--no-telemetry", self.eal("--topology", "ring"))
        self.assertNotIn("--file-prefix", self.eal("--topology", "ring"))

    def test_telemetry_refused_on_a_shared_port(self) -> None:
        result = launch("--topology", "shared", "--telemetry", "--print-only")
        self.assertEqual(result.returncode, 2)
        self.assertNotIn("Traceback", result.stderr)
        self.assertIn("--telemetry", result.stderr)


class ExecTest(LauncherCase):
    def test_telemetry_prefix_names_the_programs_pid(self) -> None:
        result = launch("--topology", "ring", "--telemetry", "--", "sh", "-c",
                        'printf "%s|%s" "$$" "$FI_DPDK_EAL_ARGS"')
        self.assertEqual(result.returncode, 0, result.stderr)
        pid, eal = result.stdout.split("|")
        words = shlex.split(eal)
        self.assertEqual(words[words.index("--file-prefix") + 1], f"ofi-dpdk-{pid}")
        self.assertIn(f"dpdk-telemetry.py -f ofi-dpdk-{pid}", result.stderr)

    def test_exec_sets_environment_and_passes_exit_status(self) -> None:
        result = launch("--topology", "ring", "--", "sh", "-c",
                        'printf "%s|%s" "$FI_PROVIDER" "$FI_DPDK_EAL_ARGS"; exit 7')
        self.assertEqual(result.returncode, 7, result.stderr)
        provider, eal = result.stdout.split("|")
        self.assertEqual(provider, "dpdk")
        self.assertIn("--vdev=net_ring0", shlex.split(eal))

    def test_missing_program(self) -> None:
        result = launch("--topology", "ring", "--", "no-such-program-dpdk-fi")
        self.assert_one_line_error(result, "no-such-program-dpdk-fi")

    def test_no_program(self) -> None:
        result = launch("--topology", "ring")
        self.assertEqual(result.returncode, 2)
        self.assertNotIn("Traceback", result.stderr)


class HugepageDetectionTest(LauncherCase):
    def setUp(self) -> None:
        super().setUp()
        self.run_py = load_launcher()
        self.mount = self.tmp / "huge"
        self.mount.mkdir()

    def detect(self, free_pages: int, mounted: bool) -> tuple[bool, str]:
        meminfo = self.tmp / "meminfo"
        meminfo.write_text(f"MemTotal: 1000 kB\nHugePages_Total: 512\n"
                           f"HugePages_Free: {free_pages}\nHugepagesize: 2048 kB\n")
        mounts = self.tmp / "mounts"
        mounts.write_text("proc /proc proc rw 0 0\n" +
                          (f"nodev {self.mount} hugetlbfs rw 0 0\n" if mounted else ""))
        return self.run_py.hugepages_available(meminfo, mounts)

    def test_free_pages_and_mount(self) -> None:
        self.assertEqual(self.detect(512, True), (True, ""))

    def test_no_free_pages(self) -> None:
        available, why = self.detect(0, True)
        self.assertFalse(available)
        self.assertIn("free hugepages", why)

    def test_no_mount(self) -> None:
        self.assertEqual(self.detect(512, False), (False, "no hugetlbfs mounted"))

    def test_listening_table(self) -> None:
        table = self.tmp / "unix"
        table.write_text(
            "Num       RefCount Protocol Flags    Type St Inode Path\n"
            "0000000000000000: 00000002 00000000 00010000 0005 01 12398 /run/x/listen.sock\n"
            "0000000000000000: 00000002 00000000 00000000 0005 01 12399 /run/x/bound.sock\n")
        self.assertTrue(self.run_py.socket_is_listening(Path("/run/x/listen.sock"), table))
        self.assertFalse(self.run_py.socket_is_listening(Path("/run/x/bound.sock"), table))
        self.assertFalse(self.run_py.socket_is_listening(Path("/run/x/none.sock"), table))


class RuntimeFileOwnerTest(LauncherCase):
    """A secondary killed without EAL's cleanup leaves mp_socket_PID_...;
    once PID is another process's, the file is still a dead owner's."""

    def setUp(self) -> None:
        super().setUp()
        self.run_py = load_launcher()

    def test_owner_started_before_the_file(self) -> None:
        path = self.tmp / "mp_socket_x"
        path.write_text("")
        self.assertTrue(self.run_py.file_owner_alive(os.getpid(), path))
        an_hour_ago = path.stat().st_mtime - 3600
        os.utime(path, (an_hour_ago, an_hour_ago))
        self.assertFalse(self.run_py.file_owner_alive(os.getpid(), path))

    def test_gone_owner(self) -> None:
        child = subprocess.Popen(["true"])
        child.wait()
        path = self.tmp / f"mp_socket_{child.pid}_1"
        path.write_text("")
        self.assertFalse(self.run_py.file_owner_alive(child.pid, path))

    def test_live_secondaries_skips_files_older_than_their_pid(self) -> None:
        runtime = self.tmp / "dpdk" / "pfx"
        runtime.mkdir(parents=True)
        (runtime / f"mp_socket_{os.getpid()}_1").write_text("")
        newcomer = subprocess.Popen(["sleep", "60"])
        self.addCleanup(newcomer.wait)
        self.addCleanup(newcomer.kill)
        stale = runtime / f"mp_socket_{newcomer.pid}_2"
        stale.write_text("")
        an_hour_ago = stale.stat().st_mtime - 3600
        os.utime(stale, (an_hour_ago, an_hour_ago))
        self.run_py.dpdk_runtime_dir = lambda prefix: self.tmp / "dpdk" / prefix
        self.assertEqual(self.run_py.live_secondaries("pfx"), [os.getpid()])


class TestlogSummaryTest(unittest.TestCase):
    """dpdk-fi-test.sh --summarize FILE: the table and the closing line."""

    def summarize(self, *results: str, raw: str = "") -> subprocess.CompletedProcess:
        with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
            for i, result in enumerate(results):
                f.write(f'{{"name": "ofi-dpdk:unit / t{i}", "result": "{result}",'
                        f' "duration": 0.{i}, "returncode": 0, "stdout": ""}}\n')
            f.write(raw)
        self.addCleanup(os.unlink, f.name)
        return self.run_script("--summarize", f.name)

    @staticmethod
    def run_script(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run(["bash", str(TEST_SCRIPT), *args], capture_output=True,
                              text=True, timeout=30)

    def last_line(self, result: subprocess.CompletedProcess) -> str:
        return result.stdout.rstrip("\n").splitlines()[-1]

    def test_every_result_kind(self) -> None:
        result = self.summarize("OK", "FAIL", "SKIP", "TIMEOUT", "EXPECTEDFAIL",
                                "UNEXPECTEDPASS", "ERROR")
        self.assertEqual(self.last_line(result), "2 passed, 4 failed, 1 skipped")
        self.assertEqual(result.returncode, 1)
        self.assertIn("ofi-dpdk:unit / t1", result.stdout)

    def test_all_passed(self) -> None:
        result = self.summarize("OK", "OK", "EXPECTEDFAIL")
        self.assertEqual(self.last_line(result), "3 passed, 0 failed")
        self.assertEqual(result.returncode, 0)

    def test_passed_and_skipped(self) -> None:
        result = self.summarize("OK", "SKIP")
        self.assertEqual(self.last_line(result), "1 passed, 0 failed, 1 skipped")
        self.assertEqual(result.returncode, 0)

    def test_only_skipped_is_a_failure(self) -> None:
        result = self.summarize("SKIP")
        self.assertEqual(self.last_line(result), "0 passed, 0 failed, 1 skipped")
        self.assertEqual(result.returncode, 1)

    def test_empty_log(self) -> None:
        result = self.summarize()
        self.assertEqual(self.last_line(result), "0 passed, 0 failed")
        self.assertEqual(result.returncode, 1)

    def test_missing_log(self) -> None:
        result = self.run_script("--summarize", "/nonexistent/testlog.json")
        self.assertEqual(self.last_line(result), "0 passed, 0 failed")
        self.assertEqual(result.returncode, 1)

    def test_unreadable_line_counts_as_failure(self) -> None:
        result = self.summarize("OK", raw="{not json\n\n")
        self.assertEqual(self.last_line(result), "1 passed, 1 failed")
        self.assertEqual(result.returncode, 1)

    def test_many_tests_list_only_the_failures(self) -> None:
        result = self.summarize(*(["OK"] * 60 + ["FAIL"]))
        self.assertEqual(self.last_line(result), "60 passed, 1 failed")
        self.assertIn("t60", result.stdout)
        self.assertNotIn("t59\n", result.stdout)

    def test_debian13_hands_over_to_its_script(self) -> None:
        # --help is answered before anything is built or mounted.
        result = self.run_script("--debian13", "--help")
        self.assertEqual(result.returncode, 0)
        self.assertIn("devtools/dpdk-fi-debian13.sh", result.stdout)
        self.assertIn("--rebuild-root", result.stdout)
        self.assertIn("trixie", result.stdout)

    def test_both_legs_refuses_what_it_cannot_do(self) -> None:
        # Refused before anything is built: it runs the Debian 13 leg
        # itself, and takes the other arguments only after it.
        result = self.run_script("--both-legs", "--debian13")
        self.assertEqual(result.returncode, 1)
        self.assertIn("leave out --debian13", result.stderr)
        result = self.run_script("--suite", "unit", "--both-legs")
        self.assertEqual(result.returncode, 1)
        self.assertIn("--both-legs must be the first argument", result.stderr)

    def test_help_documents_debian13(self) -> None:
        result = self.run_script("--help")
        self.assertEqual(result.returncode, 0)
        self.assertIn("--both-legs", result.stdout)
        self.assertIn("--debian13", result.stdout)
        self.assertIn("--summarize", result.stdout)


@unittest.skipUnless(shutil.which("meson") and shutil.which("ninja"), "needs meson and ninja")
class FakeProjectRunTest(unittest.TestCase):
    """dpdk-fi-test.sh end to end on a tiny meson project beside a copy of the
    usertools and devtools: set-up (no hugepages touched), build, meson test, summary."""

    def project(self, tests: str, source: str = "int main() { return 0; }\n") -> Path:
        root = Path(tempfile.mkdtemp(prefix="dpdk-fi-fake."))
        self.addCleanup(shutil.rmtree, root, ignore_errors=True)
        for tools in ("usertools", "devtools"):
            shutil.copytree(REPO / tools, root / tools,
                            ignore=shutil.ignore_patterns("*.py", "__pycache__"))
        (root / "main.cc").write_text(source)
        (root / "meson.build").write_text(
            "project('fake', 'cpp')\nsh = find_program('sh')\n"
            "executable('main', 'main.cc')\n" + tests)
        return root

    def run_tests(self, root: Path, *args: str, tsan: bool = False,
                  package: bool = False, path: str = "") -> subprocess.CompletedProcess:
        """dpdk-fi-test.sh --no-hugepages ARGS; without its ThreadSanitizer
        part unless `tsan`, as these projects lack the tests it names,
        with its package part (--package) when `package`, and with PATH
        `path` when given."""
        extra = ([] if tsan else ["--no-tsan"]) + (["--package"] if package else [])
        # They boot no VM: no VM kit (a kernel package fetched and unpacked).
        return subprocess.run(["bash", str(root / "usertools" / "dpdk-fi-test.sh"),
                               "--no-hugepages", *extra, *args], capture_output=True,
                              text=True, timeout=300, cwd="/",
                              env={**os.environ, "DPDK_FI_VM_KIT": "no",
                                   "PATH": path or os.environ["PATH"]})

    def test_pass_and_skip(self) -> None:
        root = self.project(
            "test('ok', sh, args: ['-c', 'test \"$OFI_DPDK_HUGEPAGES\" = no'])\n"
            "test('skip', sh, args: ['-c', 'exit 77'])\n")
        result = self.run_tests(root)
        self.assertEqual(result.stdout.splitlines()[-1], "1 passed, 0 failed, 1 skipped",
                         result.stdout + result.stderr)
        self.assertEqual(result.returncode, 0)
        self.assertEqual((root / "build" / ".hugepages").read_text().strip(), "no")

    def test_tests_call_python_itself_not_a_shim(self) -> None:
        # A pyenv-style shim first in PATH: a script that finds python anew
        # on each call. The tests get the interpreter it picks instead.
        shims = Path(tempfile.mkdtemp(prefix="dpdk-fi-shims."))
        self.addCleanup(shutil.rmtree, shims, ignore_errors=True)
        (shims / "python3").write_text(f'#!/bin/sh\nexec {sys.executable} "$@"\n')
        (shims / "python3").chmod(0o755)
        root = self.project("test('direct', sh, args: [meson.current_source_dir() / 'check.sh'])\n")
        (root / "check.sh").write_text(
            'test "$(command -v python3)" -ef "$(python3 -c "import sys; print(sys.executable)")"\n')
        result = self.run_tests(root, path=f"{shims}:{os.environ['PATH']}")
        self.assertEqual(result.stdout.splitlines()[-1], "1 passed, 0 failed",
                         result.stdout + result.stderr)

    def test_failure_and_suite_selection(self) -> None:
        root = self.project("test('ok', sh, args: ['-c', 'true'], suite: 'a')\n"
                            "test('bad', sh, args: ['-c', 'false'], suite: 'b')\n")
        result = self.run_tests(root)
        self.assertEqual(result.stdout.splitlines()[-1], "1 passed, 1 failed")
        self.assertEqual(result.returncode, 1)
        result = self.run_tests(root, "--suite", "a")
        self.assertEqual(result.stdout.splitlines()[-1], "1 passed, 0 failed")
        self.assertEqual(result.returncode, 0)
        # --no-suite leaves a suite out and keeps the run's other parts
        # (--both-legs runs suite vm apart that way).
        (root / "devtools" / "dpdk-fi-package.sh").write_text("echo '1 passed, 0 failed'\n")
        result = self.run_tests(root, "--no-suite", "b", package=True)
        lines = result.stdout.splitlines()
        self.assertEqual(lines[-2], "all parts: 1 passed, 0 failed (tests); "
                         "1 passed, 0 failed (package)", result.stdout + result.stderr)
        self.assertEqual(lines[-1], "2 passed, 0 failed")
        self.assertEqual(result.returncode, 0)

    def test_second_part_runs_the_threaded_tests_under_tsan(self) -> None:
        listed = subprocess.run(
            ["bash", "-c", 'source "$1"; echo "${DPDK_FI_TSAN_TESTS[@]}"', "-",
             str(REPO / "devtools" / "dpdk_fi_sanitize.sh")],
            capture_output=True, text=True, check=True).stdout.split()
        self.assertIn("ofi_threads", listed)
        root = self.project("".join(f"test('{name}', sh, args: ['-c', 'true'])\n"
                                    for name in listed) +
                            "test('plain', sh, args: ['-c', 'true'])\n")
        result = self.run_tests(root, tsan=True)
        output = result.stdout + result.stderr
        self.assertIn("--sanitize thread", output)
        tsan_log = (root / "build-tsan" / "meson-logs" / "testlog.json").read_text()
        self.assertEqual(sorted(json.loads(line)["name"] for line in tsan_log.splitlines()),
                         sorted(listed), output)
        lines = result.stdout.splitlines()
        self.assertEqual(lines[-2], f"all parts: {len(listed) + 1} passed, 0 failed (tests); "
                         f"{len(listed)} passed, 0 failed (ThreadSanitizer)", output)
        self.assertEqual(lines[-1], f"{2 * len(listed) + 1} passed, 0 failed", output)
        self.assertEqual(result.returncode, 0)

    def test_package_part_counts_in_the_closing_line(self) -> None:
        # The package part is devtools/dpdk-fi-package.sh; here a stand-in
        # that fails the way it does (its own closing line, status 1), and
        # then one that ends without a closing line (one failure).
        root = self.project("test('ok', sh, args: ['-c', 'true'])\n")
        package = root / "devtools" / "dpdk-fi-package.sh"
        package.write_text("echo 'lintian found errors'\necho '0 passed, 1 failed'\nexit 1\n")
        # The Debian 12 leg has it only when asked (--package).
        result = self.run_tests(root)
        self.assertEqual(result.stdout.splitlines()[-1], "1 passed, 0 failed",
                         result.stdout + result.stderr)
        self.assertNotIn("lintian", result.stdout)
        result = self.run_tests(root, package=True)
        output = result.stdout + result.stderr
        lines = result.stdout.splitlines()
        self.assertEqual(lines[-2], "all parts: 1 passed, 0 failed (tests); "
                         "0 passed, 1 failed (package)", output)
        self.assertEqual(lines[-1], "1 passed, 1 failed", output)
        self.assertEqual(result.returncode, 1)
        package.write_text("exit 0\n")
        result = self.run_tests(root, package=True)
        self.assertEqual(result.stdout.splitlines()[-1], "1 passed, 1 failed",
                         result.stdout + result.stderr)
        self.assertEqual(result.returncode, 1)
        package.write_text("echo '1 passed, 0 failed'\n")
        result = self.run_tests(root, package=True)
        self.assertEqual(result.stdout.splitlines()[-1], "2 passed, 0 failed",
                         result.stdout + result.stderr)
        self.assertEqual(result.returncode, 0)

    def test_build_failure(self) -> None:
        root = self.project("test('ok', sh, args: ['-c', 'true'])\n", source="int main() {\n")
        result = self.run_tests(root)
        self.assertEqual(result.returncode, 1)
        self.assertIn("the build failed", result.stderr.splitlines()[-1])


if __name__ == "__main__":
    unittest.main()
