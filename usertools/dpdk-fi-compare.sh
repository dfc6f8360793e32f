#!/bin/bash
# Usage: usertools/dpdk-fi-compare.sh [--builddir DIR] [--json FILE] [--quick]
#                                     [--providers "dpdk shm tcp;ofi_rxm"]
#                                     [--only FIGURE[,FIGURE...]] [--repeat N] [--help]
#
# Measures the dpdk provider against libfabric's shm and tcp;ofi_rxm
# providers, in one sitting, with the same program (dpdk-fi-bench, two
# processes each time): dpdk between two processes over net_memif (9 KiB
# ring buffers, so frames of FI_DPDK_MTU=9000 bytes fit), shm
# between two processes of this host, tcp;ofi_rxm over loopback.  With
# hugepages, also dpdk-shared: dpdk between two processes sharing one port
# as DPDK secondaries of dpdk-fi-switch (frames handed over as mbufs, no
# memif copy; README, "shared port").  Figures:
#
#   lat_8B lat_4KiB lat_64KiB   pingpong, half round trip, p50 (us)
#   rate_8B                     8-byte sends, 64 in flight (messages/s)
#   write_64KiB write_1MiB      fi_write, 64 / 8 in flight (MB/s)
#   read_64KiB read_1MiB        fi_read (MB/s)
#   tagged_64KiB tagged_1MiB    fi_tsend / fi_trecv (MB/s)
#   fadd_lat                    fi_fetch_atomic FI_SUM uint64, one at a time, p50 (us)
#   fadd_rate                   the same, 64 in flight (ops/s)
#
# Prints a table with each dpdk figure as a ratio to both peers ("x" is how
# many times better dpdk is: lower latency or higher rate), and writes every
# run's JSON to --json (default BUILDDIR/compare.json).  Each run's program
# checks its data; a run that fails shows as "fail".  Measure on a quiet
# machine: the ratios of one sitting are what count, not the absolute
# figures.  Needs a build (usertools/dpdk-fi-setup.sh builds one).
#
# Options:
#   --builddir DIR   build directory (default: build)
#   --json FILE      where the runs' JSON goes (default: BUILDDIR/compare.json)
#   --providers LIST which providers to run (default: "dpdk dpdk-shared shm
#                    tcp;ofi_rxm" with hugepages, without dpdk-shared otherwise)
#   --only LIST      only these figures (comma-separated names from above)
#   --quick          fewer iterations (a smoke run, figures less stable)
#   --repeat N       run each figure N times per provider, the providers'
#                    runs interleaved, and report the median (default 3;
#                    1 with --quick): one run on a busy machine can be off
#                    by a factor of two
set -euo pipefail

# shellcheck source-path=SCRIPTDIR source=dpdk_fi_common.sh
source "$(dirname "${BASH_SOURCE[0]}")/dpdk_fi_common.sh"

builddir=build
json=""
providers=""
only=""
quick=0
repeat=""
while (($#)); do
	case "$1" in
	--builddir) builddir=$2; shift ;;
	--json) json=$2; shift ;;
	--providers) providers=$2; shift ;;
	--only) only=$2; shift ;;
	--quick) quick=1 ;;
	--repeat) repeat=$2; shift ;;
	-h | --help) usage; exit 0 ;;
	*) die 1 "unknown option '$1' (see --help)" ;;
	esac
	shift
done
builddir=$(abs_builddir "$builddir")
bench="$builddir/app/bench/dpdk-fi-bench"
[ -x "$bench" ] || die 1 "no $bench: run usertools/dpdk-fi-setup.sh first"
[ -n "$json" ] || json="$builddir/compare.json"
mem_args=$(eal_memory_args "$builddir")
if [ -z "$providers" ]; then
	providers="dpdk shm tcp;ofi_rxm"
	[[ "$mem_args" == *--in-memory* ]] && providers="dpdk dpdk-shared shm tcp;ofi_rxm"
fi
if [ -z "$repeat" ]; then
	repeat=3
	((quick)) && repeat=1
fi
[[ "$repeat" =~ ^[1-9][0-9]*$ ]] || die 1 "--repeat wants a positive number"

exec python3 - "$bench" "$builddir/drivers/ofi" "$json" "$providers" "$only" "$quick" \
	"$mem_args" "$repeat" <<'EOF'
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time

bench, provider_dir, json_path, providers, only, quick, mem_args, repeat = sys.argv[1:9]
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
if only:
    wanted = set(only.split(","))
    unknown = wanted - {f[0] for f in FIGURES}
    if unknown:
        sys.exit(f"dpdk-fi-compare.sh: unknown figure(s): {', '.join(sorted(unknown))}")
    FIGURES = [f for f in FIGURES if f[0] in wanted]

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


switch = start_switch() if "dpdk-shared" in providers else None
ours = [p for p in providers if p in ("dpdk", "dpdk-shared")]
peers = [p for p in providers if p not in ours]


def ratio_key(mine, peer):
    return "x_" + peer if mine == "dpdk" else f"x_{mine}_{peer}"


runs = {}
table = []
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


def fmt(v, unit):
    if v is None:
        return "fail"
    if unit in ("msg/s", "ops/s"):
        return f"{v / 1e6:.2f}M" if v >= 1e6 else f"{v / 1e3:.0f}k"
    return f"{v:.2f}" if v < 100 else f"{v:.0f}"


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

with open(json_path, "w") as f:
    json.dump({"when": time.strftime("%Y-%m-%d %H:%M:%S"), "uname": os.uname().release,
               "cpus": os.cpu_count(), "quick": quick, "repeat": repeat, "table": table, "runs": runs}, f, indent=1)
print(f"runs: {json_path}")
failed = sum(1 for row in table for p in providers if row[p] is None)
sys.exit(1 if failed else 0)
EOF
