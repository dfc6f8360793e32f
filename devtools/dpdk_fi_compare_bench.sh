# dpdk_fi_compare_bench.sh: the first part of dpdk-fi-compare.sh's Python
# program: its arguments, the figures, and dpdk-fi-bench run in pairs of
# processes for each provider (bench_part).  Source it; it defines functions
# only.
# shellcheck shell=bash

# compare_py_bench: prints the part (python3 reads the parts whole, in
# order, from dpdk-fi-compare.sh).
compare_py_bench() {
	cat <<'EOF'
import json
import os
import shlex
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time

bench, provider_dir, json_path, providers, only, quick, mem_args, repeat = sys.argv[1:9]
stock_mode, fabtests_version, builddir, repo = sys.argv[9:13]
repeat = int(repeat)
providers = providers.split()
quick = quick == "1"
scale = 0.2 if quick else 1.0

def n(count):
    return str(max(int(count * scale), 50))

# name, unit, what to read from the client's JSON, lower is better, bench args
FIGURES = [
    ("lat_8B", "us", ("latency_us", "p50"), True,
     ["--pattern", "latency", "--size", "8", "--count", n(20000)]),
    ("lat_4KiB", "us", ("latency_us", "p50"), True,
     ["--pattern", "latency", "--size", "4096", "--count", n(20000)]),
    ("lat_64KiB", "us", ("latency_us", "p50"), True,
     ["--pattern", "latency", "--size", "65536", "--count", n(5000)]),
    ("rate_8B", "msg/s", ("msg_rate",), False,
     ["--pattern", "bandwidth", "--size", "8", "--window", "64", "--count", n(1000000)]),
    ("write_64KiB", "MB/s", ("goodput_MBps",), False,
     ["--pattern", "write", "--size", "65536", "--window", "64", "--count", n(100000)]),
    ("write_1MiB", "MB/s", ("goodput_MBps",), False,
     ["--pattern", "write", "--size", "1048576", "--window", "8", "--count", n(6000)]),
    ("read_64KiB", "MB/s", ("goodput_MBps",), False,
     ["--pattern", "read", "--size", "65536", "--window", "64", "--count", n(100000)]),
    ("read_1MiB", "MB/s", ("goodput_MBps",), False,
     ["--pattern", "read", "--size", "1048576", "--window", "8", "--count", n(6000)]),
    ("tagged_64KiB", "MB/s", ("goodput_MBps",), False,
     ["--pattern", "tagged", "--size", "65536", "--window", "64", "--count", n(100000)]),
    ("tagged_1MiB", "MB/s", ("goodput_MBps",), False,
     ["--pattern", "tagged", "--size", "1048576", "--window", "8", "--count", n(6000)]),
    ("fadd_lat", "us", ("latency_us", "p50"), True,
     ["--pattern", "atomic", "--window", "1", "--count", n(20000)]),
    ("fadd_rate", "ops/s", ("msg_rate",), False,
     ["--pattern", "atomic", "--window", "64", "--count", n(1000000)]),
]

# The stock programs: name, unit, program, its arguments, lower is better
# (usec/xfer, else MB/sec), the long count (-I), and the dpdk-fi-bench
# figure of the same pattern.  The default counts are what users quote; the
# long ones, 2 to 15 times those, let the first round trips (cold caches,
# a port just up) weigh little and a stall in the run show.
STOCK = [
    ("pingpong_8B", "us", "fi_rdm_pingpong", ["-S", "8"], True, 100000, "lat_8B"),
    ("pingpong_4KiB", "us", "fi_rdm_pingpong", ["-S", "4096"], True, 20000, "lat_4KiB"),
    ("pingpong_64KiB", "us", "fi_rdm_pingpong", ["-S", "65536"], True, 10000, "lat_64KiB"),
    ("rma_write_64KiB", "MB/s", "fi_rma_bw", ["-e", "rdm", "-o", "write", "-S", "65536"],
     False, 30000, "write_64KiB"),
    ("rma_write_1MiB", "MB/s", "fi_rma_bw", ["-e", "rdm", "-o", "write", "-S", "1048576"],
     False, 2000, "write_1MiB"),
    ("rma_read_64KiB", "MB/s", "fi_rma_bw", ["-e", "rdm", "-o", "read", "-S", "65536"],
     False, 30000, "read_64KiB"),
    ("rma_read_1MiB", "MB/s", "fi_rma_bw", ["-e", "rdm", "-o", "read", "-S", "1048576"],
     False, 2000, "read_1MiB"),
    ("tagged_bw_64KiB", "MB/s", "fi_rdm_tagged_bw", ["-S", "65536"], False, 30000,
     "tagged_64KiB"),
    ("tagged_bw_1MiB", "MB/s", "fi_rdm_tagged_bw", ["-S", "1048576"], False, 2000,
     "tagged_1MiB"),
    ("atomic_sum", "us", "fi_rdm_atomic", ["-o", "sum", "-z", "uint64"], True, 10000,
     "fadd_lat"),
    ("atomic_read", "us", "fi_rdm_atomic", ["-o", "read", "-z", "uint64"], True, 10000,
     "fadd_lat"),
]
FLOOR = "floor"
MSGCOST = "msgcost"
# name, unit, what to read from the JSON, bench args (with --threads N added)
SCALING = [
    ("threads_8B", "msg/s", ("msg_rate",),
     ["--pattern", "bandwidth", "--size", "8", "--window", "64", "--count", n(1000000)]),
    ("threads_64KiB", "MB/s", ("goodput_MBps",),
     ["--pattern", "tagged", "--size", "65536", "--window", "64", "--count", n(50000)]),
]
SCALING_THREADS = (1, 2)

want_floor = stock_mode != "off"
want_msgcost = stock_mode != "only"
if only:
    wanted = set(only.split(","))
    want_msgcost = MSGCOST in wanted and stock_mode != "only"
    unknown = (wanted - {f[0] for f in FIGURES} - {f[0] for f in STOCK} -
               {f[0] for f in SCALING} - {FLOOR, MSGCOST})
    if unknown:
        sys.exit(f"dpdk-fi-compare.sh: unknown figure(s): {', '.join(sorted(unknown))}")
    FIGURES = [f for f in FIGURES if f[0] in wanted]
    STOCK = [f for f in STOCK if f[0] in wanted]
    SCALING = [f for f in SCALING if f[0] in wanted]
    want_floor = want_floor and FLOOR in wanted
    if stock_mode == "off" and (STOCK or FLOOR in wanted):
        sys.exit("dpdk-fi-compare.sh: --only names stock figures, but --no-stock")
    if stock_mode == "only" and FIGURES:
        sys.exit("dpdk-fi-compare.sh: --only names dpdk-fi-bench figures, but --stock-only")
if stock_mode == "off":
    STOCK = []
if stock_mode == "only":
    FIGURES = []
    SCALING = []

EAL = mem_args.split() + ["--no-pci", "--no-telemetry", "--log-level=lib.eal:error"]
LIMIT = 120  # seconds a run may take before it is killed


SWITCH = os.path.join(os.path.dirname(provider_dir.rstrip("/")), "..", "app", "switch",
                      "dpdk-fi-switch")
SHARED_PREFIX = f"cmpsw{os.getpid()}"


def start_switch():
    """dpdk-shared: the primary owning the port both processes share."""
    ready = os.path.join(tempfile.gettempdir(), f"{SHARED_PREFIX}.ready")
    switch = subprocess.Popen([SWITCH, "-l", "0", "--file-prefix", SHARED_PREFIX, "--no-pci",
                               "--no-telemetry", "--log-level=lib.eal:error", "--", "--name",
                               "cmp", "--processes", "2", "--ready-file", ready, "--quiet"],
                              stdin=subprocess.DEVNULL, start_new_session=True)
    deadline = time.time() + 30
    while not os.path.exists(ready):
        if switch.poll() is not None or time.time() > deadline:
            sys.exit("dpdk-fi-compare.sh: dpdk-fi-switch did not start (dpdk-shared needs"
                     " hugepages)")
        time.sleep(0.05)
    return switch


def command(provider, role, work, args):
    common = ["--role", role, "--rendezvous", os.path.join(work, "rv"), "--timeout", "60"] + args
    lcore = "0" if role == "server" else "1"
    if provider == "dpdk-shared":
        return [bench, "-l", lcore, "--proc-type=secondary", "--file-prefix", SHARED_PREFIX,
                "--no-pci", "--no-telemetry", "--log-level=lib.eal:error", "--"] + common
    if provider != "dpdk":
        return [bench, "--", "--provider", provider] + common
    memif = f"socket={work}/memif.sock,socket-abstract=no,bsize=9216"
    memif_role = "server" if role == "server" else "client"
    prefix = ["--file-prefix", f"cmp{os.getpid()}{role}"] if "--in-memory" not in EAL else []
    return ([bench, "-l", lcore] + EAL + prefix +
            [f"--vdev=net_memif0,role={memif_role},{memif}", "--"] + common)


def run_pair(provider, args):
    work = tempfile.mkdtemp(prefix="ofi-dpdk-compare.")
    env = dict(os.environ, FI_PROVIDER_PATH=provider_dir, FI_TCP_IFACE="lo")
    env.pop("FI_PROVIDER", None)
    try:
        os.makedirs(os.path.join(work, "rv"))
        with open(os.path.join(work, "server.out"), "w") as so, \
                open(os.path.join(work, "server.err"), "w") as se:
            server = subprocess.Popen(command(provider, "server", work, args), stdout=so,
                                      stderr=se, env=env, start_new_session=True)
            # The client starts once the server published its names (its
            # port is up), so a memif client never finds no listener.
            deadline = time.time() + 30
            while (not os.path.exists(os.path.join(work, "rv", "server")) and
                   server.poll() is None and time.time() < deadline):
                time.sleep(0.05)
            try:
                client = subprocess.run(command(provider, "client", work, args),
                                        capture_output=True, text=True, env=env,
                                        timeout=LIMIT)
                out, err, status = client.stdout, client.stderr, client.returncode
            except subprocess.TimeoutExpired:
                out, err, status = "", "killed at the time limit", -1
            try:
                server.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(server.pid, signal.SIGKILL)
                server.wait()
        lines = [line for line in out.splitlines() if line.startswith("{")]
        result = json.loads(lines[-1]) if lines else {}
        if status != 0 or not result.get("ok") or server.returncode != 0:
            with open(os.path.join(work, "server.err")) as f:
                server_err = f.read()
            result["ok"] = False
            result["error"] = (err.strip().splitlines() or [""])[-1] or \
                (server_err.strip().splitlines() or ["server failed"])[-1]
        return result
    finally:
        shutil.rmtree(work, ignore_errors=True)


def value(result, path):
    v = result
    for key in path:
        v = v.get(key) if isinstance(v, dict) else None
    return v if result.get("ok") and isinstance(v, (int, float)) else None


ours = [p for p in providers if p in ("dpdk", "dpdk-shared")]
peers = [p for p in providers if p not in ours]


def ratio_key(mine, peer):
    return "x_" + peer if mine == "dpdk" else f"x_{mine}_{peer}"


def fmt(v, unit):
    if v is None:
        return "fail"
    if unit in ("msg/s", "ops/s"):
        return f"{v / 1e6:.2f}M" if v >= 1e6 else f"{v / 1e3:.0f}k"
    return f"{v:.2f}" if v < 100 else f"{v:.0f}"


def bench_part():
    """dpdk-fi-bench over every provider; prints its table, returns it and
    the runs."""
    switch = start_switch() if "dpdk-shared" in providers else None
    runs = {}
    table = []
    try:
        for name, unit, path, lower, args in FIGURES:
            row = {"figure": name, "unit": unit}
            values = {provider: [] for provider in providers}
            for attempt in range(repeat):
                for provider in providers:
                    result = run_pair(provider, args)
                    runs.setdefault(name, {}).setdefault(provider, []).append(result)
                    if not result.get("ok"):
                        print(f"  {name} over {provider}: failed: {result.get('error', '?')}",
                              file=sys.stderr)
                    elif value(result, path) is not None:
                        values[provider].append(value(result, path))
            for provider in providers:
                # The median of the runs that passed; a figure with a failed run
                # shows as failed: a run that loses data has no speed.
                ok = len(values[provider]) == repeat
                row[provider] = statistics.median(values[provider]) if ok else None
            for provider in ours:
                for peer in peers:
                    mine, theirs = row.get(provider), row.get(peer)
                    ratio = None
                    if mine and theirs:
                        ratio = theirs / mine if lower else mine / theirs
                    row[ratio_key(provider, peer)] = ratio
            table.append(row)
            cells = "  ".join(f"{provider}={row[provider] if row[provider] is not None else 'fail'}"
                              for provider in providers)
            print(f"  {name}: {cells}", file=sys.stderr, flush=True)
    finally:
        if switch is not None:
            switch.terminate()
            switch.wait()
    header = ["figure", "unit"] + providers + [f"{o} vs {p}" for o in ours for p in peers]
    print(" | ".join(header))
    print(" | ".join("---" for _ in header))
    for row in table:
        cells = [row["figure"], row["unit"]] + [fmt(row[p], row["unit"]) for p in providers]
        cells += [f"{row[ratio_key(o, p)]:.2f}x" if row[ratio_key(o, p)] else "-"
                  for o in ours for p in peers]
        print(" | ".join(cells))
    print("(x: times better than the peer: its latency / ours, or our rate / its rate)")
    return table, runs


EOF
}
