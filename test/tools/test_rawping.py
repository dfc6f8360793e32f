#!/usr/bin/env python3
"""dpdk-fi-rawping, the floor and the ceiling of the comparison, over a memif
pair with the launcher's EAL arguments (usertools/dpdk-fi-run.py
--print-only), as devtools/dpdk-fi-compare.sh runs it:
  - latency: 200 round trips of 64-byte frames; the client's JSON has a
    positive one-way mean, and p50 <= p99 <= max;
  - stream: 9000-byte frames one way for 0.3 s; both sides exit 0 after
    the client's end of stream, the client sent and the server received
    bytes (the server at most what the client sent in its span, plus what
    the ring held), and the client received nothing;
  - stream --both: each side sent and received.
Figures are not judged: the machine may be busy.

Usage: test_rawping.py RAWPING LAUNCHER
"""

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

LIMIT_SECONDS = 60


def fail(message: str) -> None:
    print(f"FAIL: {message}", file=sys.stderr)
    sys.exit(1)


def eal_args(launcher: str, role: str, sock: str) -> list[str]:
    out = subprocess.run([sys.executable, launcher, "--topology", f"memif-{role}", "--socket",
                          sock, "--print-only"], capture_output=True, text=True, timeout=30,
                         stdin=subprocess.DEVNULL)
    for line in out.stdout.splitlines():
        if line.startswith("export FI_DPDK_EAL_ARGS="):
            value = line.split("=", 1)[1]
            return value.strip("'").split()
    fail(f"the launcher gave no EAL arguments for memif-{role}: {out.stderr.strip()}")
    return []


def last_json(text: str) -> dict:
    lines = [line for line in text.splitlines() if line.startswith("{")]
    return json.loads(lines[-1]) if lines else {}


def run_pair(rawping: str, launcher: str, args: list[str]) -> tuple[dict, dict]:
    """Both sides of one run: (server's JSON, client's JSON)."""
    work = tempfile.mkdtemp(prefix="ofi-dpdk-rawping.")
    sock = os.path.join(work, "memif.sock")
    try:
        server = subprocess.Popen([rawping] + eal_args(launcher, "server", sock) +
                                  ["--", "--role", "server", "--timeout", "20"] + args,
                                  stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                  stdin=subprocess.DEVNULL)
        deadline = time.time() + 30
        while not os.path.exists(sock):  # the memif client does not retry
            if server.poll() is not None or time.time() > deadline:
                server.kill()
                fail(f"{args}: the server never listened: {server.communicate()[0][-500:]}")
            time.sleep(0.05)
        try:
            client = subprocess.run([rawping] + eal_args(launcher, "client", sock) +
                                    ["--", "--role", "client", "--timeout", "20"] + args,
                                    capture_output=True, text=True, timeout=LIMIT_SECONDS,
                                    stdin=subprocess.DEVNULL)
            server_out = server.communicate(timeout=LIMIT_SECONDS)[0]
        except subprocess.TimeoutExpired:
            server.kill()
            fail(f"{args}: a side did not exit within {LIMIT_SECONDS} s")
        client_out = client.stdout + client.stderr
        if client.returncode != 0 or server.returncode != 0:
            fail(f"{args}: exit {client.returncode} (client) / {server.returncode} (server):"
                 f" {client_out[-300:]} / {server_out[-300:]}")
        return last_json(server_out), last_json(client_out)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def main() -> None:
    rawping, launcher = sys.argv[1], sys.argv[2]

    _, client = run_pair(rawping, launcher, ["--count", "200", "--warmup", "20"])
    lat = client.get("one_way_us")
    if not lat or not 0 < lat["mean"] or not lat["p50"] <= lat["p99"] <= lat["max"]:
        fail(f"latency: no sensible one-way figures: {client}")
    print(f"ok    latency: one way mean {lat['mean']:.2f} us")

    server, client = run_pair(rawping, launcher, ["--pattern", "stream", "--seconds", "0.3"])
    if client.get("size") != 9000 or client.get("both") is not False:
        fail(f"stream: not 9000-byte frames one way: {client}")
    if not client.get("sent_MBps", 0) > 0 or not server.get("received_MBps", 0) > 0:
        fail(f"stream: nothing moved: client {client}, server {server}")
    if client.get("received_MBps") != 0 or server.get("sent_MBps") != 0:
        fail(f"stream: frames went back one way: client {client}, server {server}")
    sent = client["sent_MBps"] * client["seconds"]
    received = server["received_MBps"] * server["seconds"]
    # (What the rings held at the start of the server's span is counted by
    # the server only: 2048 frames of the two memif rings at most.)
    if received > sent + 2048 * 9000 / 1e6:
        fail(f"stream: the server received {received:.1f} MB of {sent:.1f} MB sent")
    print(f"ok    stream: {client['sent_MBps']:.0f} MB/s sent, {server['received_MBps']:.0f}"
          " received")

    server, client = run_pair(rawping, launcher,
                              ["--pattern", "stream", "--seconds", "0.3", "--both"])
    for side, figures in (("client", client), ("server", server)):
        if not figures.get("sent_MBps", 0) > 0 or not figures.get("received_MBps", 0) > 0:
            fail(f"stream --both: the {side} did not move both ways: {figures}")
    print(f"ok    stream --both: {client['sent_MBps']:.0f} and {client['received_MBps']:.0f}"
          " MB/s at the client")


if __name__ == "__main__":
    main()
