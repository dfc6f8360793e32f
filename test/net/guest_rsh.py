#!/usr/bin/env python3
"""guest_rsh.py: a remote shell between two test guests, for mpirun.

Two guests of test_pci_two_guests_vm.sh have no ssh; Open MPI starts its
daemon on the other guest through an rsh agent (--mca plm_rsh_agent).

  guest_rsh.py serve ADDRESS PORT SECONDS
      runs each command a client sends (sh -c, in a session of its own)
      until a client sends "--quit" or SECONDS pass; its output goes back
      to the client as it comes, then its exit status; a client that goes
      away ends its command.
  guest_rsh.py HOST COMMAND...
      the agent, as mpirun calls it: runs COMMAND on HOST (the server's
      address, port 7077 or OFI_DPDK_GUEST_RSH_PORT) and exits with its
      status; waits up to 120 s for the server to listen.

On the wire (TCP, one command a connection): the client sends the command
as one line of JSON ({"command": "..."} or {"quit": true}); the server
sends chunks of output, each a 4-byte
big-endian length and the bytes, then a zero length and the status as 4
bytes. Test harness only: it runs whatever it is sent, so serve it on a
link of the test's own, never a shared network.
"""

import json
import os
import select
import signal
import socket
import struct
import subprocess
import sys
import threading
import time

DEFAULT_PORT = 7077


def send_chunk(conn: socket.socket, data: bytes) -> None:
    conn.sendall(struct.pack(">I", len(data)) + data)


def serve_one(conn: socket.socket, stop: threading.Event) -> None:
    """One connection: its command line (read within 10 s), run in a
    session of its own, whose output goes back as it comes; a client that
    goes away ends the command (its whole session, SIGTERM then SIGKILL)."""
    with conn:
        conn.settimeout(10)
        try:
            request = json.loads(conn.makefile("rb").readline())
        except (OSError, ValueError):
            return
        if request.get("quit"):
            stop.set()
            return
        conn.settimeout(None)
        child = subprocess.Popen(["sh", "-c", request["command"]], stdin=subprocess.DEVNULL,
                                 stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                 start_new_session=True)
        out = child.stdout.fileno()
        client_gone = False
        while True:
            ready, _, _ = select.select([out, conn], [], [])
            if conn in ready and not conn.recv(4096):  # (the agent sends nothing more)
                client_gone = True  # it closed, or died
                break
            if out in ready:
                data = os.read(out, 65536)
                if not data:
                    break
                try:
                    send_chunk(conn, data)
                except OSError:
                    client_gone = True
                    break
        if client_gone:
            os.killpg(child.pid, signal.SIGTERM)
            try:
                child.wait(timeout=5)
            except subprocess.TimeoutExpired:
                os.killpg(child.pid, signal.SIGKILL)
        status = child.wait()
        try:
            conn.sendall(struct.pack(">II", 0, status if status >= 0 else 128 - status))
        except OSError:
            pass


def serve(address: str, port: int, seconds: float) -> int:
    listener = socket.create_server((address, port))
    listener.settimeout(1.0)
    deadline = time.monotonic() + seconds
    stop = threading.Event()
    print(f"guest_rsh: serving on {address}:{port}", flush=True)
    while time.monotonic() < deadline and not stop.is_set():
        try:
            conn, peer = listener.accept()
        except socket.timeout:
            continue
        print(f"guest_rsh: a connection from {peer[0]}", flush=True)
        threading.Thread(target=serve_one, args=(conn, stop), daemon=True).start()
    if stop.is_set():
        print("guest_rsh: told to stop", flush=True)
        return 0
    print(f"guest_rsh: no stop within {seconds:.0f} s", flush=True)
    return 1


def connect(host: str, port: int) -> socket.socket:
    deadline = time.monotonic() + 120
    while True:
        try:
            return socket.create_connection((host, port), timeout=5)
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.5)


def run(host: str, command: list[str]) -> int:
    port = int(os.environ.get("OFI_DPDK_GUEST_RSH_PORT", DEFAULT_PORT))
    conn = connect(host, port)
    conn.settimeout(None)
    if command == ["--quit"]:
        conn.sendall(b'{"quit": true}\n')
        return 0
    conn.sendall(json.dumps({"command": " ".join(command)}).encode() + b"\n")
    stream = conn.makefile("rb")
    while True:
        head = stream.read(4)
        if len(head) < 4:
            print("guest_rsh: the server closed early", file=sys.stderr)
            return 255
        (length,) = struct.unpack(">I", head)
        if length == 0:
            tail = stream.read(4)
            if len(tail) < 4:
                print("guest_rsh: the server closed early", file=sys.stderr)
                return 255
            return struct.unpack(">I", tail)[0]
        sys.stdout.buffer.write(stream.read(length))
        sys.stdout.buffer.flush()


def main() -> int:
    if len(sys.argv) == 5 and sys.argv[1] == "serve":
        return serve(sys.argv[2], int(sys.argv[3]), float(sys.argv[4]))
    if len(sys.argv) >= 3:
        return run(sys.argv[1], sys.argv[2:])
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())
