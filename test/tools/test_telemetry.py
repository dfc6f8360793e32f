#!/usr/bin/env python3
"""The provider's commands in DPDK's telemetry, read from outside a running
process as an operator would (the socket dpdk-telemetry.py reads).

dpdk-fi-bench streams 8-byte messages between two endpoints of one net_ring port,
with telemetry on under a file prefix of its own.  Over the process's
telemetry socket:
  - /ofi_dpdk/ports lists the port; /ofi_dpdk/port,ID names it, says it
    takes frames unchecked (a memory port) and has two endpoints, and its
    frame counters grow between two reads while the stream runs;
  - /ofi_dpdk/endpoints,ID lists both endpoints' queues and
    /ofi_dpdk/endpoint,ID,QUEUE shows each one's messages (sent or
    received) growing;
  - /ofi_dpdk/connections,ID,QUEUE shows the sender's connection open, with
    a window and an RTT, in columns of one length; /ofi_dpdk/counters,ID
    sums both endpoints' messages;
  - malformed or unknown parameters get no data (null), and the process
    goes on serving;
  - /help,/ofi_dpdk/port has the help text.
The bench is stopped at the end (SIGKILL).

Usage: test_telemetry.py BENCH
"""

import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

DEADLINE_SECONDS = 60


def fail(message: str) -> None:
    print(f"FAIL: {message}", file=sys.stderr)
    sys.exit(1)


def runtime_dir(prefix: str) -> Path:
    """Where EAL puts a process's runtime files (eal_get_runtime_dir)."""
    if os.geteuid() == 0:
        return Path("/var/run/dpdk") / prefix
    return Path(os.environ.get("XDG_RUNTIME_DIR", "/tmp")) / "dpdk" / prefix


class Telemetry:
    """A client of one process's telemetry socket (SOCK_SEQPACKET, JSON)."""

    def __init__(self, path: Path):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        self.sock.settimeout(10)
        self.sock.connect(str(path))
        hello = json.loads(self.sock.recv(65536))
        self.max_output = hello["max_output_len"]

    def ask(self, command: str):
        self.sock.send(command.encode())
        reply = json.loads(self.sock.recv(self.max_output))
        name = command.split(",", 1)[0]
        if name not in reply:
            fail(f"{command}: reply without {name}: {reply}")
        return reply[name]

    def close(self) -> None:
        self.sock.close()


def until(what: str, check, seconds: float = DEADLINE_SECONDS):
    """Polls check() until it returns something true; that value."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        value = check()
        if value:
            return value
        time.sleep(0.1)
    fail(f"{what} within {seconds} s")
    return None


def main() -> None:
    bench = sys.argv[1]
    prefix = f"ofi-dpdk-telemetry-test-{os.getpid()}"
    socket_path = runtime_dir(prefix) / "dpdk_telemetry.v2"
    with tempfile.TemporaryDirectory() as work:
        log = open(Path(work) / "bench.log", "w+")
        process = subprocess.Popen(
            [bench, "-l", "0", "--no-huge", "-m", "512", "--no-shconf", "--no-pci",
             "--file-prefix", prefix, "--log-level=lib.eal:error", "--vdev=net_ring0", "--",
             "--role", "both", "--pattern", "bandwidth", "--size", "8",
             "--count", "1000000000", "--timeout", "240"],
            stdout=log, stderr=subprocess.STDOUT)
        try:
            check(process, socket_path)
        finally:
            # SIGKILL: libfabric's psm provider (libinfinipath), loaded
            # by fi_getinfo, catches SIGTERM, exits 1 and leaves a .btr
            # backtrace file in the working directory.
            killed = process.poll() is None
            if killed:
                process.kill()
            process.wait()
            shutil.rmtree(runtime_dir(prefix), ignore_errors=True)
            log.seek(0)
            tail = log.read()[-4000:]
            log.close()
            if not killed:
                print(tail, file=sys.stderr)
                fail(f"the bench ended by itself, status {process.returncode}")
    print("telemetry: ports, port counters growing, endpoints, bad parameters refused")


def check(process: subprocess.Popen, socket_path: Path) -> None:
    def socket_up():
        if process.poll() is not None:
            fail(f"the bench exited ({process.returncode}) before serving telemetry")
        return socket_path.exists()
    until(f"{socket_path} to appear", socket_up)
    client = Telemetry(socket_path)
    try:
        # The port opens when the bench opens its domain.
        ports = until("/ofi_dpdk/ports to list a port", lambda: client.ask("/ofi_dpdk/ports"))
        if len(ports) != 1:
            fail(f"/ofi_dpdk/ports: {ports}, want one port")
        port = ports[0]

        def port_busy():
            info = client.ask(f"/ofi_dpdk/port,{port}")
            return info if info and info.get("endpoints") == 2 and info["tx_frames"] > 0 else None
        first = until("the port to show two endpoints and frames sent", port_busy)
        if first["name"] != "net_ring0":
            fail(f"port name {first['name']}, want net_ring0")
        if first["checks"] != "none":
            fail(f"net_ring0 checks {first['checks']}: a memory port takes frames unchecked")
        until("the port's frame counters to grow",
              lambda: client.ask(f"/ofi_dpdk/port,{port}")["rx_frames"] > first["rx_frames"])

        queues = client.ask(f"/ofi_dpdk/endpoints,{port}")
        if len(queues) != 2:
            fail(f"/ofi_dpdk/endpoints,{port}: {queues}, want two queues")
        for queue in queues:
            before = client.ask(f"/ofi_dpdk/endpoint,{port},{queue}")
            if not before or before["queue"] != queue or before["enabled"] != 1:
                fail(f"/ofi_dpdk/endpoint,{port},{queue}: {before}")
            def messages(info) -> int:
                return info["messages_sent"] + info["messages_received"]
            until(f"endpoint {queue}'s messages to grow",
                  lambda: messages(client.ask(f"/ofi_dpdk/endpoint,{port},{queue}"))
                  > messages(before))

        # The sender's connection to the receiver: open, a window, an RTT.
        def open_connection():
            for queue in queues:
                table = client.ask(f"/ofi_dpdk/connections,{port},{queue}")
                if not table or table["connections"] < 1:
                    continue
                if len(table["peer"]) != table["shown"] or len(table["cwnd"]) != table["shown"]:
                    fail(f"/ofi_dpdk/connections,{port},{queue}: columns of unequal length: {table}")
                for i in range(table["shown"]):
                    if table["transmit"][i] == "open" and table["cwnd"][i] >= 1 \
                            and table["srtt_us"][i] > 0:
                        return table
            return None
        until("an open connection with a window and an RTT", open_connection)
        counters = client.ask(f"/ofi_dpdk/counters,{port}")
        if counters["endpoints"] != 2 or counters["messages_sent"] <= 0 or \
                counters["messages_received"] <= 0:
            fail(f"/ofi_dpdk/counters,{port}: {counters}")

        for bad in (f"/ofi_dpdk/port,{port + 1}", f"/ofi_dpdk/connections,{port}",
                    f"/ofi_dpdk/counters,{port + 1}", "/ofi_dpdk/counters,x", "/ofi_dpdk/port,abc", "/ofi_dpdk/port",
                    "/ofi_dpdk/port,99999", f"/ofi_dpdk/endpoint,{port}",
                    f"/ofi_dpdk/endpoint,{port},63", f"/ofi_dpdk/endpoints,{port},1"):
            if client.ask(bad) is not None:
                fail(f"{bad} gave data")
        if not client.ask(f"/ofi_dpdk/port,{port}"):
            fail("the process stopped serving after bad parameters")
        help_text = client.ask("/help,/ofi_dpdk/port")
        if "/ofi_dpdk/port" not in help_text:
            fail(f"/help,/ofi_dpdk/port: {help_text}")
    finally:
        client.close()


if __name__ == "__main__":
    main()
