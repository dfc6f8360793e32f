#!/bin/bash
# Usage: usertools/dpdk-fi-compare.sh [--builddir DIR] [--json FILE] [--quick]
#                                     [--providers "dpdk shm tcp;ofi_rxm"]
#                                     [--only FIGURE[,FIGURE...]] [--repeat N]
#                                     [--stock | --no-stock | --stock-only] [--help]
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
# Then the scaling with threads (figures threads_8B, threads_64KiB): one
# process, dpdk-fi-bench --role both --threads N, each thread streaming
# between its own two endpoints on one domain (FI_THREAD_COMPLETION; dpdk
# over one net_ring port), 8-byte sends (msg/s) and 64 KiB tagged sends
# (MB/s), with one thread and with two; printed with the two-thread figure
# over the one-thread figure for each provider (dpdk-shared has no part).
#
# Then, where valgrind is installed, the instructions per message
# (figure "msgcost"): dpdk-fi-msgcost (app/msgcost) under callgrind, two
# endpoints of one process, one message at a time, 8 bytes and 4 KiB,
# dpdk over one net_ring port beside shm (the count is the same on a busy
# machine: it is the figure to compare the small-message path by; run
# with FI_DPDK_ACK_DELAY_US=2000, valgrind's clock being slow).
#
# Prints a table with each dpdk figure as a ratio to both peers ("x" is how
# many times better dpdk is: lower latency or higher rate), writes every
# run's JSON to --json (default BUILDDIR/compare.json), and draws it
# (usertools/dpdk-fi-plot.py: SVG charts and an index.html in a "plots"
# folder beside the JSON).  Each run's program
# checks its data; a run that fails shows as "fail".  Measure on a quiet
# machine: the ratios of one sitting are what count, not the absolute
# figures.  Needs a build (usertools/dpdk-fi-setup.sh builds one).
#
# The stock programs (--stock; the default when fabtests can be built):
# what users quote, beside our own program.  First the floor: dpdk-fi-rawping
# (app/rawping), 64-byte frames to and fro over a memif pair with no
# provider, its one-way mean, p50 and p99.  Then fabtests' benchmarks
# (built by usertools/dpdk-fi-fabtests.sh --build-only into
# BUILDDIR/fabtests-VERSION when missing), two processes each: dpdk through
# usertools/dpdk-fi-run.py on a new memif pair, shm, tcp;ofi_rxm (not
# dpdk-shared), addresses out of band (-E):
#
#   pingpong_8B pingpong_4KiB pingpong_64KiB  fi_rdm_pingpong, one way, mean (us)
#   rma_write_64KiB rma_write_1MiB            fi_rma_bw -e rdm -o write (MB/s)
#   rma_read_64KiB rma_read_1MiB              fi_rma_bw -e rdm -o read (MB/s)
#                 (both processes of fi_rma_bw write, or read, to each other
#                 at once: its MB/s is one direction's with the other busy,
#                 where dpdk-fi-bench's write and read go one way)
#   tagged_bw_64KiB tagged_bw_1MiB            fi_rdm_tagged_bw (MB/s)
#   atomic_sum    fi_rdm_atomic -o sum -z uint64: fi_atomic, one at a time, mean (us)
#   atomic_read   fi_rdm_atomic -o read -z uint64: fi_fetch_atomic, one at a
#                 time, mean (us); fabtests has no fetching FI_SUM
#
# each at fabtests' default count and at a long one (-I), a table for each,
# and, when both parts ran, each dpdk figure against dpdk-fi-bench's mean
# for the same pattern (the aim: within 1.25x of it).
#
# Options:
#   --builddir DIR   build directory (default: build)
#   --json FILE      where the runs' JSON goes (default: BUILDDIR/compare.json)
#   --providers LIST which providers to run (default: "dpdk dpdk-shared shm
#                    tcp;ofi_rxm" with hugepages, without dpdk-shared otherwise)
#   --only LIST      only these figures (comma-separated names from above,
#                    of either part; "floor" for the floor)
#   --quick          fewer iterations (a smoke run, figures less stable; the
#                    stock programs' long counts a fifth, their default
#                    counts as they are)
#   --repeat N       run each figure N times per provider, the providers'
#                    runs interleaved, and report the median (default 3;
#                    1 with --quick): one run on a busy machine can be off
#                    by a factor of two
#   --stock          the stock programs too; an error if fabtests cannot be
#                    built (by default they are skipped, with a note)
#   --no-stock       no stock programs: dpdk-fi-bench only
#   --stock-only     the floor and the stock programs, no dpdk-fi-bench
set -euo pipefail

# shellcheck source-path=SCRIPTDIR source=dpdk_fi_common.sh
source "$(dirname "${BASH_SOURCE[0]}")/dpdk_fi_common.sh"

builddir=build
json=""
providers=""
only=""
quick=0
repeat=""
stock=auto
while (($#)); do
	case "$1" in
	--builddir) builddir=$2; shift ;;
	--json) json=$2; shift ;;
	--providers) providers=$2; shift ;;
	--only) only=$2; shift ;;
	--quick) quick=1 ;;
	--repeat) repeat=$2; shift ;;
	--stock) stock=on ;;
	--no-stock) stock=off ;;
	--stock-only) stock=only ;;
	-h | --help) usage; exit 0 ;;
	*) die 1 "unknown option '$1' (see --help)" ;;
	esac
	shift
done
builddir=$(abs_builddir "$builddir")
bench="$builddir/app/bench/dpdk-fi-bench"
[[ "$stock" == only || -x "$bench" ]] || die 1 "no $bench: run usertools/dpdk-fi-setup.sh first"
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
# (No version: no fabtests to build; the stock part says so if it is wanted.)
fabtests=$(fabtests_version) || fabtests=""

exec python3 - "$bench" "$builddir/drivers/ofi" "$json" "$providers" "$only" "$quick" \
	"$mem_args" "$repeat" "$stock" "$fabtests" "$builddir" "$DPDK_FI_ROOT/usertools" <<'EOF'
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
stock_mode, fabtests_version, builddir, tools = sys.argv[9:13]
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


# --- The stock programs ---------------------------------------------------

LAUNCHER = os.path.join(tools, "dpdk-fi-run.py")
RAWPING = os.path.join(builddir, "app", "rawping", "dpdk-fi-rawping")
FABTESTS_BIN = os.path.join(builddir, f"fabtests-{fabtests_version}", "install", "bin")
STOCK_LIMIT = {"default": 120, "long": 300}  # seconds a run may take before it is killed
START_LIMIT = 30  # seconds a server may take to be ready for its client
BENCH_AIM = 1.25  # issue 25: each stock figure within this of dpdk-fi-bench's mean
stock_providers = [p for p in providers if p != "dpdk-shared"]
stock_ours = [p for p in stock_providers if p == "dpdk"]
stock_peers = [p for p in stock_providers if p != "dpdk"]


def note(message):
    print(f"dpdk-fi-compare.sh: {message}", file=sys.stderr, flush=True)


def build_fabtests():
    """Builds fabtests unless built; returns why it cannot be, or None."""
    if not fabtests_version:
        return "no fabtests release for the libfabric pkg-config finds (or no libfabric-dev)"
    # Its progress is no part of our tables: to stderr.
    status = subprocess.run([os.path.join(tools, "dpdk-fi-fabtests.sh"), "--build-only",
                             "--builddir", builddir], stdout=sys.stderr,
                            stdin=subprocess.DEVNULL).returncode
    if status == 77:
        # (Without the tarball, a build made from it before still serves.)
        if os.access(os.path.join(FABTESTS_BIN, "fi_rdm_pingpong"), os.X_OK):
            note(f"using the fabtests built before in {FABTESTS_BIN}")
            return None
        return "fabtests cannot be built here (see the SKIP line above)"
    if status != 0 or not os.path.isdir(FABTESTS_BIN):
        return f"building fabtests failed (status {status})"
    return None


def free_ports(count):
    """COUNT distinct TCP ports nothing listens on now.  (All bound at once,
    so that the kernel cannot hand out one twice.)"""
    socks = [socket.socket() for _ in range(count)]
    try:
        for s in socks:
            s.bind(("127.0.0.1", 0))
        return [s.getsockname()[1] for s in socks]
    finally:
        for s in socks:
            s.close()


def tcp_listening(port):
    """Whether a socket listens on PORT (IPv4 or IPv6), as /proc tells."""
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            with open(table) as f:
                lines = f.read().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            words = line.split()
            # sl local_address rem_address st ...; st 0A is LISTEN.
            if len(words) > 3 and words[3] == "0A" and \
                    int(words[1].rsplit(":", 1)[1], 16) == port:
                return True
    return False


def unix_listening(path):
    """Whether a Unix socket listens on PATH, as /proc/net/unix tells.  (No
    probing connect(): a memif server of DPDK 22.11 aborts on a peer that
    hangs up before its hello.)"""
    try:
        with open("/proc/net/unix") as f:
            lines = f.read().splitlines()[1:]
    except OSError:
        return False
    for line in lines:
        words = line.split(maxsplit=7)
        if len(words) == 8 and words[7] == path and int(words[3], 16) & 0x10000:
            return True
    return False


def wait_until(ready, process, limit=START_LIMIT):
    """Polls READY until it holds; False if PROCESS ended or LIMIT passed."""
    deadline = time.time() + limit
    while not ready():
        if process.poll() is not None or time.time() > deadline:
            return False
        time.sleep(0.05)
    return True


def finish(process, grace):
    """PROCESS's status, once it ends; after GRACE seconds its process
    group (its own session: nothing else is in it) is ended."""
    try:
        return process.wait(timeout=grace)
    except subprocess.TimeoutExpired:
        pass
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(process.pid, sig)
        except ProcessLookupError:
            break
        try:
            return process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            continue
    return process.wait()


def last_line(path, skip=lambda line: False):
    try:
        with open(path, errors="replace") as f:
            lines = [line.strip() for line in f if line.strip() and not skip(line)]
    except OSError:
        return ""
    return lines[-1] if lines else ""


def perf_line(text):
    """The figures of fabtests' last result line ("bytes iters total time
    MB/sec usec/xfer Mxfers/sec", fi_rdm_atomic's with a name first), or
    None."""
    for line in reversed(text.splitlines()):
        words = line.split()
        if len(words) < 7 or not words[-4].endswith("s"):
            continue
        try:
            seconds, mbps, usec = float(words[-4][:-1]), float(words[-3]), float(words[-2])
            float(words[-1])
        except ValueError:
            continue
        return {"iters": words[-6], "seconds": seconds, "MBps": mbps, "usec_per_xfer": usec}
    return None


def why_failed(path):
    """The line of a fabtests log that says why it failed: its last error
    (fabtests' "[error] ..." or "fi_xxx(): ..., ret=..."), not what EAL
    says while it closes (e.g. "EAL: Error: Invalid memory"); else its last
    line."""
    def not_an_error(line):
        text = line.lower()
        return line.startswith("EAL:") or ("error" not in text and "ret=" not in text)
    return last_line(path, not_an_error) or last_line(path)


def launcher_eal(role, sock, env):
    """The EAL arguments the launcher gives a memif ROLE on SOCK, so that
    the floor runs on the very port the provider gets; None if it refuses."""
    out = subprocess.run([sys.executable, LAUNCHER, "--topology", f"memif-{role}", "--socket",
                          sock, "--print-only"], capture_output=True, text=True, env=env,
                         timeout=START_LIMIT, stdin=subprocess.DEVNULL)
    for line in out.stdout.splitlines():
        words = shlex.split(line)
        if len(words) == 2 and words[0] == "export" and words[1].startswith("FI_DPDK_EAL_ARGS="):
            return shlex.split(words[1].split("=", 1)[1])
    return None


def run_floor(count):
    """One dpdk-fi-rawping pair; its client's JSON, with "ok"."""
    work = tempfile.mkdtemp(prefix="ofi-dpdk-compare.")
    sock = os.path.join(work, "memif.sock")
    env = dict(os.environ)
    processes = []
    try:
        server_eal = launcher_eal("server", sock, env)
        if server_eal is None:
            return {"ok": False, "error": "dpdk-fi-run.py gave no EAL arguments"}
        with open(os.path.join(work, "server.log"), "w") as log:
            server = subprocess.Popen([RAWPING] + server_eal + ["--", "--role", "server",
                                      "--count", str(count), "--timeout", "20"],
                                      stdout=log, stderr=subprocess.STDOUT,
                                      stdin=subprocess.DEVNULL, start_new_session=True)
        processes.append(server)
        # DPDK's memif client does not retry a socket nobody listens on.
        if not wait_until(lambda: unix_listening(sock), server):
            finish(server, 0)
            return {"ok": False, "error": "server: " + (last_line(os.path.join(
                work, "server.log")) or "no memif socket")}
        client_eal = launcher_eal("client", sock, env)
        if client_eal is None:
            return {"ok": False, "error": "dpdk-fi-run.py gave no EAL arguments"}
        with open(os.path.join(work, "client.log"), "w") as log:
            client = subprocess.Popen([RAWPING] + client_eal + ["--", "--role", "client",
                                      "--count", str(count), "--timeout", "20"],
                                      stdout=log, stderr=subprocess.STDOUT,
                                      stdin=subprocess.DEVNULL, start_new_session=True)
        processes.append(client)
        client_status = finish(client, STOCK_LIMIT["default"])
        server_status = finish(server, 10)
        result = {}
        with open(os.path.join(work, "client.log"), errors="replace") as f:
            lines = [line for line in f if line.startswith("{")]
        if lines:
            result = json.loads(lines[-1])
        result["ok"] = client_status == 0 and server_status == 0 and "one_way_us" in result
        if not result["ok"]:
            result["error"] = (last_line(os.path.join(work, "client.log")) or
                               last_line(os.path.join(work, "server.log")) or
                               f"status {client_status}/{server_status}")
        return result
    finally:
        for process in processes:
            if process.poll() is None:
                finish(process, 0)
        shutil.rmtree(work, ignore_errors=True)


def run_stock_pair(provider, program, args, limit):
    """One fabtests pair, the server first; the client's figures, with
    "ok" (both sides exited 0 and the client printed a result line)."""
    work = tempfile.mkdtemp(prefix="ofi-dpdk-compare.")
    # A port of our own for the out-of-band exchange (fabtests' 3000 may be
    # taken by a gate running beside us), and two names for the endpoints.
    oob, server_name, client_name = free_ports(3)
    exe = os.path.join(FABTESTS_BIN, program)
    env = dict(os.environ)
    for var in ("FI_PROVIDER", "FI_PROVIDER_PATH", "FI_DPDK_EAL_ARGS"):
        env.pop(var, None)
    if provider == "dpdk":
        env["FI_PROVIDER_PATH"] = provider_dir
        sock = os.path.join(work, "memif.sock")

        def cmd(role, tail):
            # -B 0 as in the gate: the provider reads the service as a
            # queue number (its addresses are Ethernet ones).
            return ([sys.executable, LAUNCHER, "--topology", f"memif-{role}", "--socket", sock,
                     "--", exe, "-p", "dpdk"] + args + ["-B", "0", f"-E={oob}"] + tail)
    else:
        env["FI_TCP_IFACE"] = "lo"

        def cmd(role, tail):
            # shm names its endpoint after the source service: with the
            # same one (9228 by default) the second side finds the name
            # taken (fi_enable: -FI_EBUSY).  Distinct ports suit tcp too.
            name = server_name if role == "server" else client_name
            return [exe, "-p", provider] + args + ["-B", str(name), f"-E={oob}"] + tail
    processes = []
    server_log, client_log = os.path.join(work, "server.log"), os.path.join(work, "client.log")
    result = {"provider": provider, "program": program, "args": args, "ok": False}
    try:
        with open(server_log, "w") as log:
            server = subprocess.Popen(cmd("server", []), stdout=log, stderr=subprocess.STDOUT,
                                      stdin=subprocess.DEVNULL, env=env,
                                      start_new_session=True)
        processes.append(server)
        # fabtests' client tries the out-of-band connect once: it must find
        # the server listening.
        if not wait_until(lambda: tcp_listening(oob), server):
            finish(server, 0)
            result["error"] = "server: " + (last_line(server_log) or "never listened")
            return result
        with open(client_log, "w") as log:
            client = subprocess.Popen(cmd("client", ["127.0.0.1"]), stdout=log,
                                      stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                      env=env, start_new_session=True)
        processes.append(client)
        started = time.time()
        client_status = finish(client, limit)
        timed_out = time.time() - started >= limit
        # A server whose client failed waits for it forever.
        server_status = finish(server, 10 if client_status == 0 else 2)
        with open(client_log, errors="replace") as f:
            figures = perf_line(f.read())
        result.update(figures or {})
        result["ok"] = client_status == 0 and server_status == 0 and figures is not None
        if timed_out:
            result["error"] = f"killed at the time limit ({limit} s)"
        elif not result["ok"]:
            result["error"] = (
                ("client: " + why_failed(client_log)) if client_status else
                ("server: " + why_failed(server_log)) if server_status else
                "no result line (" + (last_line(client_log) or "no output") + ")")
        return result
    finally:
        for process in processes:
            if process.poll() is None:
                finish(process, 0)
        if provider == "shm":
            # What a killed shm endpoint leaves behind (its region).
            for name in (server_name, client_name):
                try:
                    os.unlink(f"/dev/shm/{name}")
                except OSError:
                    pass
        shutil.rmtree(work, ignore_errors=True)


def floor_part():
    """The floor, --repeat times; the medians of its one-way figures."""
    count = 20000 if quick else 100000
    runs = []
    for attempt in range(repeat):
        if not os.access(RAWPING, os.X_OK):
            runs.append({"ok": False, "error": f"no {RAWPING} (build it)"})
            break
        runs.append(run_floor(count))
        if not runs[-1]["ok"]:
            note(f"floor: failed: {runs[-1].get('error', '?')}")
    passed = [r["one_way_us"] for r in runs if r["ok"]]
    summary = {"count": count, "runs": runs}
    if len(passed) == repeat:
        for key in ("mean", "p50", "p99"):
            summary[key] = statistics.median(p[key] for p in passed)
    return summary


def stock_part():
    """Every stock figure at both counts over every provider; returns the
    two tables (rows as in the dpdk-fi-bench table, and "iters") and the
    runs."""
    runs = {}
    tables = {"default": [], "long": []}
    for counts, table in tables.items():
        for name, unit, program, args, lower, long_count, _ in STOCK:
            run_args = list(args)
            if counts == "long":
                run_args += ["-I", n(long_count)]
            row = {"figure": name, "unit": unit, "iters": None}
            values = {provider: [] for provider in stock_providers}
            for attempt in range(repeat):
                for provider in stock_providers:
                    result = run_stock_pair(provider, program, run_args, STOCK_LIMIT[counts])
                    runs.setdefault(counts, {}).setdefault(name, {}).setdefault(
                        provider, []).append(result)
                    if not result["ok"]:
                        note(f"{name} ({counts} count) over {provider}: failed:"
                             f" {result.get('error', '?')}")
                        continue
                    row["iters"] = row["iters"] or result["iters"]
                    values[provider].append(result["usec_per_xfer" if lower else "MBps"])
            for provider in stock_providers:
                ok = len(values[provider]) == repeat
                row[provider] = statistics.median(values[provider]) if ok else None
            for peer in stock_peers:
                mine, theirs = row.get("dpdk"), row.get(peer)
                ratio = None
                if mine and theirs:
                    ratio = theirs / mine if lower else mine / theirs
                row[ratio_key("dpdk", peer)] = ratio
            table.append(row)
            cells = "  ".join(f"{p}={fmt(row[p], unit)}" for p in stock_providers)
            print(f"  {name} ({counts} count): {cells}", file=sys.stderr, flush=True)
    return tables, runs


def print_stock_table(title, table):
    print()
    print(title)
    header = (["figure", "unit", "iters"] + stock_providers +
              [f"{o} vs {p}" for o in stock_ours for p in stock_peers])
    print(" | ".join(header))
    print(" | ".join("---" for _ in header))
    for row in table:
        cells = ([row["figure"], row["unit"], row["iters"] or "-"] +
                 [fmt(row[p], row["unit"]) for p in stock_providers])
        cells += [f"{row[ratio_key(o, p)]:.2f}x" if row[ratio_key(o, p)] else "-"
                  for o in stock_ours for p in stock_peers]
        print(" | ".join(cells))


def bench_means(bench_table, bench_runs):
    """dpdk's dpdk-fi-bench figure for each pattern as the stock programs
    report it: the mean latency (median over the runs), else the rate."""
    means = {}
    for row in bench_table:
        name = row["figure"]
        if row.get("dpdk") is None:
            continue
        if row["unit"] == "us":
            per_run = [value(r, ("latency_us", "mean")) for r in bench_runs[name]["dpdk"]]
            if all(v is not None for v in per_run):
                means[name] = statistics.median(per_run)
        else:
            means[name] = row["dpdk"]
    return means


def against_bench(tables, means):
    """Each dpdk stock figure against dpdk-fi-bench's: how many times
    slower the stock program is (1.00: as fast)."""
    lines = []
    for name, unit, _, _, lower, _, bench_name in STOCK:
        if bench_name not in means:
            continue
        entry = {"figure": name, "bench_figure": bench_name, "unit": unit,
                 "bench": means[bench_name]}
        for counts, table in tables.items():
            mine = next((row["dpdk"] for row in table if row["figure"] == name), None)
            entry[counts] = mine
            entry[f"x_{counts}"] = None
            if mine:
                entry[f"x_{counts}"] = (mine / means[bench_name] if lower
                                        else means[bench_name] / mine)
        lines.append(entry)
    return lines


def run_threads(provider, args, threads):
    """One process of dpdk-fi-bench --role both --threads THREADS; its JSON."""
    common = ["--role", "both", "--timeout", "60", "--threads", str(threads)] + args
    if provider == "dpdk":
        prefix = ["--file-prefix", f"cmp{os.getpid()}threads"] if "--in-memory" not in EAL else []
        command_line = [bench, "-l", "0"] + EAL + prefix + ["--vdev=net_ring0", "--"] + common
    else:
        command_line = [bench, "--", "--provider", provider] + common
    env = dict(os.environ, FI_PROVIDER_PATH=provider_dir, FI_TCP_IFACE="lo")
    env.pop("FI_PROVIDER", None)
    try:
        out = subprocess.run(command_line, capture_output=True, text=True, env=env,
                             timeout=LIMIT, stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        return {"ok": False, "error": "killed at the time limit"}
    lines = [line for line in out.stdout.splitlines() if line.startswith("{")]
    try:
        result = json.loads(lines[-1]) if lines else {}
    except ValueError:
        result = {}
    if out.returncode != 0 or not result.get("ok"):
        result["ok"] = False
        result["error"] = (out.stderr.strip().splitlines() or ["failed"])[-1]
    return result


def scaling_part():
    """Each SCALING figure with 1 and 2 threads, per provider (the median
    of --repeat runs); prints the table and returns its rows."""
    rows = []
    scaling_providers = [p for p in providers if p != "dpdk-shared"]
    for name, unit, path, args in SCALING:
        row = {"figure": name, "unit": unit}
        for provider in scaling_providers:
            for threads in SCALING_THREADS:
                values = []
                for _ in range(repeat):
                    result = run_threads(provider, args, threads)
                    if not result.get("ok"):
                        print(f"  {name} over {provider}, {threads} threads: failed:"
                              f" {result.get('error', '?')}", file=sys.stderr)
                    elif value(result, path) is not None:
                        values.append(value(result, path))
                row[f"{provider} {threads}"] = (statistics.median(values)
                                                if len(values) == repeat else None)
        rows.append(row)
    print()
    print("scaling (dpdk-fi-bench --role both --threads N: each thread its own two endpoints,"
          " one domain, FI_THREAD_COMPLETION):")
    for row in rows:
        cells = []
        for provider in scaling_providers:
            one, two = row[f"{provider} 1"], row[f"{provider} 2"]
            ratio = f" ({two / one:.2f}x)" if one and two else ""
            cells.append(f"{provider} {fmt(one, row['unit'])} -> {fmt(two, row['unit'])}{ratio}")
        print(f"  {row['figure']} ({row['unit']}, 1 -> 2 threads): " + "; ".join(cells))
    return rows


MSGCOST_COUNT = 5000


def run_msgcost(provider, size):
    """Instructions per message of dpdk-fi-msgcost under callgrind; None
    when the run fails."""
    program = os.path.join(builddir, "app", "msgcost", "dpdk-fi-msgcost")
    eal = (["-l", "0", "--no-huge", "-m", "512", "--no-shconf", "--no-pci", "--no-telemetry",
            "--vdev=net_ring0"] if provider == "dpdk" else [])
    # (No "--" for other providers: the program starts EAL only for dpdk.)
    command = ["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null",
               "--toggle-collect=*measured_loop*", program] + eal + (
               ["--"] if provider == "dpdk" else []) + [
               "--provider", provider, "--size", str(size),
               "--count", str(MSGCOST_COUNT), "--warmup", "500"]
    # Valgrind's clock runs some 50-100 times slower than the work: the
    # ack delay scaled alike keeps a native run's acks (one per 8 messages
    # sent with fi_inject); the program prints its frames per message.
    env = dict(os.environ, FI_PROVIDER_PATH=provider_dir, FI_DPDK_ACK_DELAY_US="2000")
    try:
        out = subprocess.run(command, capture_output=True, text=True, env=env, timeout=300,
                             stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        return None
    if out.returncode != 0:
        return None
    for line in out.stdout.splitlines():
        if "frames_per_message" in line:
            note(f"msgcost {provider} {size} B: {line.strip()}")
    for line in out.stderr.splitlines():
        if "Collected :" in line:
            return round(int(line.split(":")[-1].strip()) / MSGCOST_COUNT)
    return None


def msgcost_part():
    """{size: {provider: instructions}} for dpdk and shm (those of
    --providers)."""
    costs = {}
    for size in (8, 4096):
        costs[str(size)] = {p: run_msgcost(p, size) for p in ("dpdk", "shm") if p in providers}
    return costs


def print_msgcost(costs):
    print()
    print("instructions per message (dpdk-fi-msgcost under callgrind, two endpoints of one"
          " process, one at a time; dpdk over net_ring):")
    for size, row in costs.items():
        dpdk, shm = row.get("dpdk"), row.get("shm")
        ratio = f" ({dpdk / shm:.2f}x shm's)" if dpdk and shm else ""
        label = "8 B" if size == "8" else "4 KiB"
        cells = ", ".join(f"{p} {v if v else 'fail'}" for p, v in row.items())
        print(f"  {label}: {cells}{ratio}")


bench_table, bench_runs = [], {}
stock = None
msgcost = None
scaling = None
failed = 0
want_floor = want_floor and "dpdk" in stock_providers
stock_wanted = bool(STOCK) or want_floor
if stock_wanted:
    why = build_fabtests() if STOCK else None
    if why is not None:
        if stock_mode in ("on", "only") or (only and STOCK):
            sys.exit(f"dpdk-fi-compare.sh: {why}")
        note(f"{why}: no stock programs (--no-stock to not try)")
        stock_wanted = False
if "dpdk-shared" in providers and STOCK and stock_wanted:
    note("dpdk-shared: no stock programs (the launcher's switch outlives them)")
floor = None
if stock_wanted and want_floor:
    # First, on a machine that runs nothing of ours yet.
    floor = floor_part()
    failed += "mean" not in floor
if FIGURES:
    bench_table, bench_runs = bench_part()
    failed += sum(1 for row in bench_table for p in providers if row[p] is None)
if SCALING:
    scaling = scaling_part()
    failed += sum(1 for row in scaling for k, v in row.items() if k not in ("figure", "unit")
                  and v is None)
if want_msgcost:
    if shutil.which("valgrind") is None:
        note("no valgrind: no instruction counts (apt-get install valgrind)")
    else:
        msgcost = msgcost_part()
        print_msgcost(msgcost)
        failed += sum(1 for row in msgcost.values() for v in row.values() if v is None)
if stock_wanted:
    tables, stock_runs = stock_part() if STOCK else ({"default": [], "long": []}, {})
    failed += sum(1 for rows in tables.values() for row in rows for p in stock_providers
                  if row[p] is None)
    if floor is not None:
        print()
        if "mean" in floor:
            print(f"floor (dpdk-fi-rawping, 64-byte frames over a memif pair, no provider):"
                  f" one way mean {floor['mean']:.2f} us, p50 {floor['p50']:.2f},"
                  f" p99 {floor['p99']:.2f}")
        else:
            print("floor (dpdk-fi-rawping): fail")
    if STOCK:
        print_stock_table(f"fabtests {fabtests_version}, fabtests' default counts:",
                          tables["default"])
        print_stock_table(f"fabtests {fabtests_version}, long counts (-I):", tables["long"])
        print("(x: times better than the peer: its latency / ours, or our rate / its rate;"
              " pingpong: one way, mean; atomic: one operation, mean)")
    vs_bench = against_bench(tables, bench_means(bench_table, bench_runs)) \
        if "dpdk" in stock_providers else []
    if vs_bench:
        print()
        print(f"dpdk, fabtests against dpdk-fi-bench's mean (x: times slower; the aim is"
              f" {BENCH_AIM:.2f}x at most):")
        for entry in vs_bench:
            cells = []
            for counts in ("default", "long"):
                x = entry[f"x_{counts}"]
                cells.append(f"{counts} {fmt(entry[counts], entry['unit'])}"
                             + (f" ({x:.2f}x)" if x else ""))
            over = any(entry[f"x_{c}"] and entry[f"x_{c}"] > BENCH_AIM
                       for c in ("default", "long"))
            print(f"  {entry['figure']}: {', '.join(cells)} against {entry['bench_figure']}"
                  f" {fmt(entry['bench'], entry['unit'])} {entry['unit']}"
                  + (f": over {BENCH_AIM:.2f}x" if over else ""))
    stock = {"fabtests": fabtests_version, "floor": floor, "tables": tables,
             "runs": stock_runs, "against_bench": vs_bench}

record = {"when": time.strftime("%Y-%m-%d %H:%M:%S"), "uname": os.uname().release,
          "cpus": os.cpu_count(), "quick": quick, "repeat": repeat, "table": bench_table,
          "runs": bench_runs}
if stock is not None:
    record["stock"] = stock
if msgcost is not None:
    record["instructions_per_message"] = msgcost
if scaling is not None:
    record["scaling"] = scaling
with open(json_path, "w") as f:
    json.dump(record, f, indent=1)
print(f"runs: {json_path}")
# The same figures drawn (a plotting failure does not fail the sitting).
subprocess.run([sys.executable, os.path.join(tools, "dpdk-fi-plot.py"), json_path])
sys.exit(1 if failed else 0)
EOF
