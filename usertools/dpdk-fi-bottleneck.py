#!/usr/bin/env python3
"""Puts senders through one narrow link and measures what each gets: the
provider's transport against the kernel's TCP, on the same link, in one
sitting.

The link: two hosts joined by a router (usertools/dpdk-fi-router.sh, links
of MTU 1500), the router's interface toward host b shaped as a switch port
is: a token bucket at --rate with a shallow buffer (--buffer), optionally
with random loss on the way to it (--loss, an nftables rule at the
router), a RED queue that marks ECN instead of dropping (--queue
red-ecn, where the kernel has sch_red), or a phantom queue that marks
(--queue phantom-ecn: a tc program, for kernels without a marking
qdisc).  Host a sends, host b receives.

The phantom queue (as HULL's, Alizadeh et al., NSDI 2012): a virtual link
at --phantom of the rate (0.95) beside the real one; an ECN-capable
packet that finds more than --mark-at bytes (16kb) queued on it is
marked CE, as a switch port that marks at a threshold marks it.  It is a
tc program ahead of the token bucket (usertools/bpf/
phantom_ecn_queue.bpf.c, compiled here with clang), so the real queue
stays short: the marks come while the phantom link, slower than the real
one, is what fills.  Host a's TCP then segments at the MTU (its
interface's gso_max_segs 1), so that the queue sees frames as a switch
does.
Marks are counted where they arrive (an nftables counter in host b).

Rows, each run alone on the link:
  dpdk N    dpdk-fi-bench --pattern fanin: one process in host a with N
            endpoints (N connections), each streaming --size messages into
            one endpoint of a process in host b; both on net_af_packet
            with the hosts' addresses (UDP/IPv4 across the router)
  tcp-CC N  iperf3 -P N -C CC (the kernel's TCP, congestion control CC)
and, with --shared, one of ours and one TCP flow at once (the row says
which share each got while both ran), and for reference one CUBIC flow
beside one of each other --tcp control.

Each row reports aggregate goodput against the link's rate, each sender's
goodput and Jain's fairness index over them, retransmissions (frames for
ours, segments for TCP, as a share of what was sent), the round trip a
ping from host a to host b sees meanwhile (p50, p99, against the unloaded
one: the queue the flows build; on a busy machine, the scheduler's delays
too), for our rows the round trips our transport measured itself (its
senders' RTT samples through the stats ops' ep_rtt, the worst sender's
p50 and p99: segment sent to ack taken, the receiver's ack delay
included; before the rows, the same for one sender with one message in
flight: the transport's unloaded round trip), the bottleneck queue's
drops and ECN marks, and the packets --loss took.  Ours carry 1368 bytes
of payload in a 1514-byte frame at the routed MTU (a 104-byte header),
TCP 1448: 0.90 and 0.96 of the link are each one's whole.  Writes
bottleneck.json and bottleneck.svg (goodput per row, and each sender's
goodput over time) into --out.

This is a benchmark, not a test: the figures depend on the machine.  On a
2-core machine two polling processes take both cores; run it quiet.

Usage: dpdk-fi-bottleneck.py [--builddir DIR] [--rate 400mbit]
         [--buffer 128kb] [--loss PCT] [--queue tbf|red-ecn|phantom-ecn]
         [--mark-at 16kb] [--phantom 0.95]
         [--senders 1,2,4,8] [--tcp cubic,bbr] [--size 65536]
         [--seconds 10] [--shared] [--no-unloaded] [--out DIR] [--name NAME]
Needs root, iproute2 (tc), ping and iperf3 (apt-get install iperf3), and a
build (usertools/dpdk-fi-setup.sh).  Exit status: 0, 1 when a run failed,
2 on bad arguments or a missing piece.
"""

import argparse
import json
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
ROUTER = ROOT / "usertools" / "dpdk-fi-router.sh"
LAUNCHER = ROOT / "usertools" / "dpdk-fi-run.py"
PHANTOM_QUEUE = ROOT / "usertools" / "bpf" / "phantom_ecn_queue.bpf.c"
HOST_A = ("10.77.1.2", "10.77.1.2/24@10.77.1.1")
HOST_B = ("10.77.2.2", "10.77.2.2/24@10.77.2.1")
INTERVAL_MS = 100


def fail(status: int, text: str) -> None:
    print(f"dpdk-fi-bottleneck: {text}", file=sys.stderr)
    sys.exit(status)


def rate_bytes(text: str) -> float:
    """tc's rate words (400mbit, 1gbit, 50mbps) in bytes per second."""
    match = re.fullmatch(r"(\d+(?:\.\d+)?)(k|m|g)?(bit|bps)", text.lower())
    if not match:
        raise argparse.ArgumentTypeError(f"not a rate tc reads: {text} (say 400mbit)")
    scale = {None: 1, "k": 1e3, "m": 1e6, "g": 1e9}[match.group(2)]
    value = float(match.group(1)) * scale
    return value / 8 if match.group(3) == "bit" else value


def percentile(values: list[float], p: float) -> float:
    if not values:
        return 0.0
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(p / 100 * len(ordered)))]


def jain(rates: list[float]) -> float:
    squares = sum(r * r for r in rates)
    return sum(rates) ** 2 / (len(rates) * squares) if squares > 0 else 0.0


class Link:
    """The router topology, its bottleneck queue and commands in its hosts."""

    def __init__(self, args: argparse.Namespace):
        self.args = args
        self.name = args.name
        self.bottleneck = f"{self.name}-rb"

    def up(self) -> None:
        subprocess.run([str(ROUTER), "up", "--name", self.name, "--mtu", "1500"], check=True,
                       stdout=subprocess.DEVNULL)
        self.shape()

    def down(self) -> None:
        subprocess.run([str(ROUTER), "down", "--name", self.name], check=False,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    def in_host(self, host: str, command: list[str]) -> list[str]:
        return ["ip", "netns", "exec", f"{self.name}-{host}", *command]

    def tc(self, *words: str) -> None:
        done = subprocess.run(self.in_host("r", ["tc", *words]), capture_output=True, text=True)
        if done.returncode != 0:
            kind = words[words.index("handle") + 2]
            fail(2, f"tc cannot make the {kind} queue here ({done.stderr.strip()}): the "
                    f"kernel lacks sch_{kind}")

    def shape(self) -> None:
        a = self.args
        dev = ("dev", self.bottleneck)
        self.tc("qdisc", "replace", *dev, "root", "handle", "1:", "tbf", "rate", a.rate,
                "burst", "32kb", "limit", a.buffer)
        if a.queue == "red-ecn":
            # A FIFO that marks ECN-capable packets as it fills (and drops
            # the others), within the same buffer.
            limit = tc_size(a.buffer)
            self.tc("qdisc", "add", *dev, "parent", "1:1", "handle", "10:", "red", "limit",
                    str(limit), "min", str(limit // 8), "max", str(limit // 3), "avpkt",
                    "1500", "bandwidth", a.rate, "probability", "0.1", "ecn")
        if a.loss > 0:
            # Random loss on the way out to host b, before the queue: a
            # lossy link, not a full one.  (nftables: kernels without
            # sch_netem have it.)
            rule = (f"table inet ofi_bottleneck {{\n chain forward {{\n"
                    f"  type filter hook forward priority 0;\n"
                    f"  oifname \"{self.bottleneck}\" numgen random mod 10000 < "
                    f"{round(a.loss * 100)} counter drop\n }}\n}}\n")
            subprocess.run(self.in_host("r", ["nft", "-f", "-"]), input=rule, text=True,
                           check=True)
        if a.queue == "phantom-ecn":
            self.attach_phantom_queue()

    def attach_phantom_queue(self) -> None:
        a = self.args
        # Host a's TCP hands the router frames as a switch sees them, not
        # 64 KiB segments its veth carries whole: one segment per packet.
        subprocess.run(self.in_host("a", ["ip", "link", "set", "dev", f"{self.name}-a0",
                                          "gso_max_segs", "1"]), check=True)
        arch = sorted(Path("/usr/include").glob("*/asm/types.h"))
        with tempfile.TemporaryDirectory() as scratch:
            program = Path(scratch) / "phantom_ecn_queue.o"
            built = subprocess.run(
                ["clang", "-O2", "-g", "-Wall", "-Werror", "-target", "bpf",
                 *([f"-I{arch[0].parent.parent}"] if arch else []),
                 f"-DPHANTOM_BYTES_PER_SECOND={int(rate_bytes(a.rate) * a.phantom)}",
                 f"-DMARK_AT_BYTES={tc_size(a.mark_at)}", "-c", str(PHANTOM_QUEUE), "-o",
                 str(program)], capture_output=True, text=True)
            if built.returncode != 0:
                fail(2, f"clang could not build {PHANTOM_QUEUE.name} (apt-get install clang "
                        f"libbpf-dev): {built.stderr.strip()[-400:]}")
            for words in (["qdisc", "add", "dev", self.bottleneck, "clsact"],
                          ["filter", "add", "dev", self.bottleneck, "egress", "bpf", "da", "obj",
                           str(program), "sec", "tc"]):
                done = subprocess.run(self.in_host("r", ["tc", *words]), capture_output=True,
                                      text=True)
                if done.returncode != 0:
                    fail(2, f"tc could not attach the phantom queue ({done.stderr.strip()}): "
                            f"the kernel needs clsact and cls_bpf")
        # What arrives marked, counted at host b (ours and TCP alike).
        table = ("table inet ofi_bottleneck_marks {\n chain prerouting {\n"
                 "  type filter hook prerouting priority 0;\n"
                 "  ip ecn ce counter\n  ip6 ecn ce counter\n }\n}\n")
        subprocess.run(self.in_host("b", ["nft", "-f", "-"]), input=table, text=True,
                       check=True)

    def nft_counted(self, host: str, table: str) -> int:
        """The packets the counters of nftables table `table` in `host` took."""
        rules = subprocess.run(self.in_host(host, ["nft", "-j", "list", "table", "inet", table]),
                               check=True, capture_output=True, text=True).stdout
        return sum(int(expression["counter"]["packets"])
                   for item in json.loads(rules)["nftables"]
                   for expression in item.get("rule", {}).get("expr", [])
                   if "counter" in expression)

    def queue_counts(self) -> dict[str, int]:
        out = subprocess.run(self.in_host("r", ["tc", "-s", "-j", "qdisc", "show", "dev",
                                                self.bottleneck]),
                             check=True, capture_output=True, text=True).stdout
        counts = {"drops": 0, "marks": 0, "lost": 0}
        for qdisc in json.loads(out):
            counts["drops"] += int(qdisc.get("drops", 0))
            counts["marks"] += int(qdisc.get("marked", 0)) + int(qdisc.get("ecn_mark", 0))
        if self.args.loss > 0:
            counts["lost"] = self.nft_counted("r", "ofi_bottleneck")
        if self.args.queue == "phantom-ecn":
            counts["marks"] = self.nft_counted("b", "ofi_bottleneck_marks")
        return counts


def tc_size(text: str) -> int:
    match = re.fullmatch(r"(\d+)(kb|mb|b)?", text.lower())
    if not match:
        fail(2, f"--buffer: not a size tc reads: {text} (say 128kb)")
    return int(match.group(1)) * {None: 1, "b": 1, "kb": 1024, "mb": 1 << 20}[match.group(2)]


def interruptible() -> None:
    """In a child before exec: SIGINT back to its default.  A shell runs
    what it starts in the background with SIGINT ignored, which its
    children inherit; ping and iperf3 stop on SIGINT here, and report."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def interrupt(process: subprocess.Popen, limit: float) -> str:
    """Stops a process with SIGINT (it reports what it has), or kills it
    after `limit` seconds; returns its output."""
    process.send_signal(signal.SIGINT)
    try:
        out, _ = process.communicate(timeout=limit)
    except subprocess.TimeoutExpired:
        process.kill()
        out, _ = process.communicate()
    return out or ""


def finish(process: subprocess.Popen, limit: float) -> None:
    """Waits for a process `limit` seconds, then kills it."""
    try:
        process.wait(timeout=limit)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


class Pinger:
    """Round trips from host a to host b every 20 ms while a row runs."""

    def __init__(self, link: Link):
        self.process = subprocess.Popen(
            link.in_host("a", ["ping", "-n", "-i", "0.02", HOST_B[0]]),
            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
            preexec_fn=interruptible)

    def stop(self) -> list[float]:
        out = interrupt(self.process, 10)
        return [float(m) for m in re.findall(r"time=([\d.]+) ms", out)]


def provider_env(link: Link, host: str, iface: str, address: str, lcore: int) -> tuple:
    """The launcher's environment and EAL arguments for a port on `iface`."""
    out = subprocess.run(
        link.in_host(host, [sys.executable, str(LAUNCHER), "--topology", "af_packet", "--iface",
                            iface, "--ip", address, "--no-huge", "--lcore", str(lcore),
                            "--provider-path", str(link.args.builddir / "drivers" / "ofi"),
                            "--print-only"]),
        check=True, capture_output=True, text=True).stdout
    env = dict(os.environ)
    for line in out.splitlines():
        if line.startswith("export "):
            key, _, value = line[len("export "):].partition("=")
            env[key] = shlex.split(value)[0] if value else ""
    eal = shlex.split(env.pop("FI_DPDK_EAL_ARGS"))
    # dpdk-fi-bench picks its provider with --provider; the launcher's
    # FI_PROVIDER would only repeat it, so the environment stays as the
    # caller's.
    env.pop("FI_PROVIDER", None)
    return env, eal


def run_ours(link: Link, senders: int, seconds: float, work: Path, window: int = 64,
             size: int = 0, count: int = 0) -> dict:
    a = link.args
    bench = str(a.builddir / "app" / "bench" / "dpdk-fi-bench")
    size = size or a.size
    count = count or max(16, int(rate_bytes(a.rate) * seconds / size / senders))
    rendezvous = Path(tempfile.mkdtemp(dir=work))
    common = ["--pattern", "fanin", "--senders", str(senders), "--size", str(size),
              "--count", str(count), "--window", str(window), "--rendezvous", str(rendezvous),
              "--timeout", str(max(60, seconds * 12)), "--interval", str(INTERVAL_MS)]
    cpus = sorted(os.sched_getaffinity(0))
    server_env, server_eal = provider_env(link, "b", f"{link.name}-b0", HOST_B[1], cpus[0])
    client_env, client_eal = provider_env(link, "a", f"{link.name}-a0", HOST_A[1], cpus[-1])
    limit = seconds * 15 + 60
    with open(work / f"server-{senders}.log", "w") as server_log:
        server = subprocess.Popen(
            link.in_host("b", ["timeout", "-k", "2", str(limit), bench, *server_eal, "--",
                               "--role", "server", *common]),
            env=server_env, stdout=subprocess.PIPE, stderr=server_log, text=True)
        time.sleep(1)
        client = subprocess.run(
            link.in_host("a", ["timeout", "-k", "2", str(limit), bench, *client_eal, "--",
                               "--role", "client", *common]),
            env=client_env, capture_output=True, text=True)
        server_out, _ = server.communicate(timeout=limit + 10)
    (work / f"client-{senders}.log").write_text(client.stderr)
    if client.returncode != 0 or server.returncode != 0:
        return {"ok": False, "why": f"bench exit {client.returncode} (client), "
                                    f"{server.returncode} (server); logs in {work}"}
    received = json.loads(server_out.strip().splitlines()[-1])
    sent = json.loads(client.stdout.strip().splitlines()[-1])
    rates = received.get("sender_goodput_MBps", [received["goodput_MBps"]])
    row = {"ok": True, "goodput_MBps": received["goodput_MBps"], "senders_MBps": rates,
           "seconds": received["seconds"], "first_arrival_unix": received["first_arrival_unix"],
           "retransmitted_share": sent["retransmitted"] / max(1, sent["tx_frames"]),
           "series_MBps": received.get("sender_series_MBps", [])}
    # The transport's own round trips (its senders' RTT samples, ack delay
    # included): the worst sender's median and tail.
    trips = sent.get("round_trips_us", [])
    if trips:
        row["transport_rtt_ms"] = {"p50": max(t["p50"] for t in trips) / 1e3,
                                   "p99": max(t["p99"] for t in trips) / 1e3,
                                   "samples": sum(t["samples"] for t in trips)}
    return row


def iperf_server(link: Link, port: int) -> subprocess.Popen:
    process = subprocess.Popen(link.in_host("b", ["iperf3", "-s", "-1", "-p", str(port)]),
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    for _ in range(50):
        probe = subprocess.run(link.in_host("b", ["ss", "-Hltn", f"sport = :{port}"]),
                               capture_output=True, text=True)
        if probe.stdout.strip():
            break
        time.sleep(0.1)
    return process


def iperf_client(link: Link, port: int, streams: int, algorithm: str,
                 seconds: float) -> list[str]:
    return link.in_host("a", ["iperf3", "-c", HOST_B[0], "-p", str(port), "-P", str(streams),
                              "-C", algorithm, "-t", str(seconds), "-i",
                              str(INTERVAL_MS / 1000), "-J"])


def stream_series(report: dict) -> list[list[float]]:
    series: list[list[float]] = []
    for interval in report.get("intervals", []):
        for i, stream in enumerate(interval["streams"]):
            while len(series) <= i:
                series.append([])
            series[i].append(stream["bits_per_second"] / 8e6)
    return series


def run_tcp(link: Link, streams: int, algorithm: str, seconds: float) -> dict:
    server = iperf_server(link, 5201)
    client = subprocess.run(iperf_client(link, 5201, streams, algorithm, seconds),
                            capture_output=True, text=True, timeout=seconds + 60)
    finish(server, 30)
    try:
        report = json.loads(client.stdout)
    except json.JSONDecodeError:
        return {"ok": False, "why": f"iperf3: {client.stdout[-300:]}{client.stderr[-300:]}"}
    if "error" in report:
        return {"ok": False, "why": f"iperf3: {report['error']}"}
    end = report["end"]
    rates = [s["receiver"]["bits_per_second"] / 8e6 for s in end["streams"]]
    sent_segments = end["sum_sent"]["bytes"] / 1448
    return {"ok": True, "goodput_MBps": end["sum_received"]["bits_per_second"] / 8e6,
            "senders_MBps": rates, "seconds": end["sum_received"]["seconds"],
            "retransmitted_share": end["sum_sent"].get("retransmits", 0) / max(1, sent_segments),
            "series_MBps": stream_series(report)}


def run_shared(link: Link, algorithm: str, seconds: float, work: Path) -> dict:
    """One TCP flow running throughout, one of ours started a second in;
    each one's goodput over the time ours ran (from its first message's
    arrival to its last: TCP's intervals wholly inside it)."""
    server = iperf_server(link, 5202)
    launched = time.time()
    tcp = subprocess.Popen(iperf_client(link, 5202, 1, algorithm, 600), stdout=subprocess.PIPE,
                           stderr=subprocess.DEVNULL, text=True, preexec_fn=interruptible)
    time.sleep(1.5)
    ours = run_ours(link, 1, seconds / 2, work)  # sized for half the link
    out = interrupt(tcp, 30)
    finish(server, 30)
    if not ours["ok"]:
        return ours
    try:
        report = json.loads(out)
    except json.JSONDecodeError:
        return {"ok": False, "why": f"iperf3 gave no report: {out[-300:]}"}
    # Its intervals count from its test's start, a few milliseconds after
    # the launch (the control connection); its own start stamp is in whole
    # seconds, too coarse for short rows.
    origin = launched
    started = ours["first_arrival_unix"]
    ended = started + ours["seconds"]
    inside = [i["sum"] for i in report["intervals"]
              if origin + i["sum"]["start"] >= started and origin + i["sum"]["end"] <= ended]
    tcp_rate = (sum(s["bytes"] for s in inside) / sum(s["seconds"] for s in inside) / 1e6
                if inside else 0.0)
    row = {"ok": True, "goodput_MBps": ours["goodput_MBps"] + tcp_rate,
           "senders_MBps": [ours["goodput_MBps"], tcp_rate], "seconds": ours["seconds"],
           "retransmitted_share": ours["retransmitted_share"],
           "series_MBps": ours["series_MBps"], "names": ["dpdk", f"tcp-{algorithm}"]}
    if "transport_rtt_ms" in ours:
        row["transport_rtt_ms"] = ours["transport_rtt_ms"]
    return row


def run_tcp_pair(link: Link, first: str, second: str, seconds: float) -> dict:
    """The reference for a shared row: two TCP flows, `first` and `second`,
    started together, each one's goodput over the run."""
    servers = [iperf_server(link, port) for port in (5203, 5204)]
    clients = [subprocess.Popen(iperf_client(link, port, 1, algorithm, seconds),
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
               for port, algorithm in ((5203, first), (5204, second))]
    reports = []
    for client in clients:
        out, err = client.communicate(timeout=seconds + 60)
        try:
            reports.append(json.loads(out))
        except json.JSONDecodeError:
            return {"ok": False, "why": f"iperf3: {out[-300:]}{err[-300:]}"}
    for server in servers:
        finish(server, 30)
    if any("error" in r for r in reports):
        return {"ok": False, "why": "iperf3: " + "; ".join(r.get("error", "") for r in reports)}
    rates = [r["end"]["sum_received"]["bits_per_second"] / 8e6 for r in reports]
    resent = sum(r["end"]["sum_sent"].get("retransmits", 0) for r in reports)
    sent = sum(r["end"]["sum_sent"]["bytes"] for r in reports) / 1448
    return {"ok": True, "goodput_MBps": sum(rates), "senders_MBps": rates, "seconds": seconds,
            "retransmitted_share": resent / max(1, sent),
            "series_MBps": [stream_series(r)[0] for r in reports if stream_series(r)],
            "names": [f"tcp-{first}", f"tcp-{second}"]}


def measure(link: Link, label: str, run) -> dict:
    before = link.queue_counts()
    pinger = Pinger(link)
    row = run()
    rtts = pinger.stop()
    after = link.queue_counts()
    row.update({"row": label, "rtt_ms": {"p50": percentile(rtts, 50), "p99": percentile(rtts, 99)},
                "queue_drops": after["drops"] - before["drops"],
                "queue_marks": after["marks"] - before["marks"],
                "link_losses": after["lost"] - before["lost"]})
    if row["ok"]:
        row["link_share"] = row["goodput_MBps"] * 1e6 / rate_bytes(link.args.rate)
        row["jain"] = jain(row["senders_MBps"])
    return row


def print_table(rows: list[dict], unloaded: dict, args: argparse.Namespace) -> None:
    print(f"bottleneck: {args.rate} token bucket, {args.buffer} of buffer, queue {args.queue}"
          f", random loss {args.loss} %; messages of {args.size} B for ours; "
          f"unloaded round trip p50 {unloaded['p50']:.3f} ms, p99 {unloaded['p99']:.3f} ms")
    if "ours" in unloaded:
        print(f"the transport's unloaded round trip (one sender, one 1 KiB message in flight): "
              f"p50 {unloaded['ours']['p50']:.3f} ms, p99 {unloaded['ours']['p99']:.3f} ms")
    if args.queue == "phantom-ecn":
        print(f"phantom queue: marks CE beyond {args.mark_at} on a link at {args.phantom} of "
              f"the rate")
    print(f"{'row':<16}{'MB/s':>9}{'of link':>9}{'Jain':>7}{'retx':>8}{'rtt p50':>9}"
          f"{'rtt p99':>9}{'ours p50':>9}{'ours p99':>9}{'drops':>8}{'marks':>7}{'lost':>7}"
          f"  each sender, MB/s")
    for row in rows:
        if not row["ok"]:
            print(f"{row['row']:<16} FAILED: {row['why']}")
            continue
        each = " ".join(f"{r:.1f}" for r in row["senders_MBps"])
        if "names" in row:
            each = ", ".join(f"{n} {r:.1f}" for n, r in zip(row["names"], row["senders_MBps"]))
        trips = row.get("transport_rtt_ms")
        transport = (f"{trips['p50']:9.3f}{trips['p99']:9.3f}" if trips else f"{'-':>9}{'-':>9}")
        print(f"{row['row']:<16}{row['goodput_MBps']:9.1f}{row['link_share']:9.2f}"
              f"{row['jain']:7.3f}{100 * row['retransmitted_share']:7.2f}%"
              f"{row['rtt_ms']['p50']:9.3f}{row['rtt_ms']['p99']:9.3f}{transport}"
              f"{row['queue_drops']:8d}"
              f"{row['queue_marks']:7d}{row['link_losses']:7d}  {each}")


def svg(rows: list[dict], link_mbps: float) -> str:
    """Bars of each row's goodput (each sender stacked) with the link's rate
    marked, and below them each row's senders over time."""
    good = [r for r in rows if r["ok"]]
    colours = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2",
               "#7f7f7f"]
    width, bar_h, chart_h = 760, 22, 120
    top = max([link_mbps] + [r["goodput_MBps"] for r in good]) * 1.1
    height = 40 + bar_h * len(good) + 30 + (chart_h + 30) * len(good)
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
             f'font-family="sans-serif" font-size="11">',
             f'<text x="10" y="16" font-size="13">goodput per row (MB/s), each sender stacked;'
             f' the line: the link, {link_mbps:.1f} MB/s</text>']
    x0, span = 140, width - 160
    for i, row in enumerate(good):
        y = 30 + i * bar_h
        parts.append(f'<text x="10" y="{y + 14}">{row["row"]}</text>')
        x = x0
        for s, rate in enumerate(row["senders_MBps"]):
            w = span * rate / top
            parts.append(f'<rect x="{x:.1f}" y="{y + 3}" width="{w:.1f}" height="{bar_h - 6}" '
                         f'fill="{colours[s % len(colours)]}"/>')
            x += w
    line_x = x0 + span * link_mbps / top
    parts.append(f'<line x1="{line_x:.1f}" y1="26" x2="{line_x:.1f}" y2="{30 + bar_h * len(good)}"'
                 f' stroke="black" stroke-dasharray="4,3"/>')
    y = 40 + bar_h * len(good) + 20
    for row in good:
        series = row["series_MBps"]
        parts.append(f'<text x="10" y="{y}">{row["row"]}: each sender over time '
                     f'({INTERVAL_MS} ms intervals, 0 to {top:.0f} MB/s)</text>')
        longest = max([len(s) for s in series] + [1])
        for s, points in enumerate(series):
            coords = " ".join(
                f"{x0 + span * k / max(1, longest - 1):.1f},"
                f"{y + 8 + chart_h * (1 - min(v, top) / top):.1f}"
                for k, v in enumerate(points))
            parts.append(f'<polyline points="{coords}" fill="none" stroke-width="1.2" '
                         f'stroke="{colours[s % len(colours)]}"/>')
        link_y = y + 8 + chart_h * (1 - link_mbps / top)
        parts.append(f'<line x1="{x0}" y1="{link_y:.1f}" x2="{x0 + span}" y2="{link_y:.1f}" '
                     f'stroke="black" stroke-dasharray="4,3"/>')
        y += chart_h + 30
    parts.append("</svg>")
    return "\n".join(parts) + "\n"


def parse() -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--builddir", type=Path, default=ROOT / "build")
    p.add_argument("--rate", default="400mbit", help="the link's rate, as tc says it")
    p.add_argument("--buffer", default="128kb", help="the bottleneck's queue, in bytes")
    p.add_argument("--loss", type=float, default=0.0, help="random loss, percent")
    p.add_argument("--queue", choices=("tbf", "red-ecn", "phantom-ecn"), default="tbf")
    p.add_argument("--mark-at", default="16kb",
                   help="phantom-ecn: the phantom queue's marking threshold, in bytes")
    p.add_argument("--phantom", type=float, default=0.95,
                   help="phantom-ecn: the phantom link's rate, as a share of --rate")
    p.add_argument("--senders", default="1,2,4,8", help="comma-separated")
    p.add_argument("--tcp", default="cubic,bbr", help="congestion controls for TCP rows; "
                   "'' for none")
    p.add_argument("--size", type=int, default=65536)
    p.add_argument("--seconds", type=float, default=10.0, help="per row")
    p.add_argument("--no-unloaded", dest="unloaded", action="store_false",
                   help="skip the transport's unloaded round trip before the rows")
    p.add_argument("--shared", action="store_true",
                   help="also one of ours and one TCP flow at once, per --tcp")
    p.add_argument("--out", type=Path, default=None, help="default: BUILDDIR/bottleneck")
    p.add_argument("--name", default="ofibn", help="the topology's name (namespaces)")
    args = p.parse_args()
    try:
        rate_bytes(args.rate)
        args.senders = [int(n) for n in args.senders.split(",") if n]
    except (argparse.ArgumentTypeError, ValueError) as e:
        fail(2, str(e))
    if any(n < 1 or n > 8 for n in args.senders):
        fail(2, "--senders: each between 1 and 8 (dpdk-fi-bench --senders)")
    args.tcp = [cc for cc in args.tcp.split(",") if cc]
    args.builddir = args.builddir.resolve()
    args.out = (args.out or args.builddir / "bottleneck").resolve()
    tc_size(args.buffer)
    tc_size(args.mark_at)
    if not 0.5 <= args.phantom <= 1.0:
        fail(2, "--phantom: a share of the rate between 0.5 and 1")
    return args


def main() -> int:
    args = parse()
    if os.geteuid() != 0:
        fail(2, "needs root (network namespaces, tc)")
    for tool in ("ip", "tc", "ping") + (("iperf3",) if args.tcp else ()) + (
            ("nft",) if args.loss > 0 or args.queue == "phantom-ecn" else ()) + (
            ("clang",) if args.queue == "phantom-ecn" else ()):
        if shutil.which(tool) is None:
            fail(2, f"no {tool}: apt-get install iproute2 iputils-ping iperf3 nftables clang")
    if not (args.builddir / "app" / "bench" / "dpdk-fi-bench").exists():
        fail(2, f"no build in {args.builddir}: run usertools/dpdk-fi-setup.sh")
    available = Path("/proc/sys/net/ipv4/tcp_available_congestion_control").read_text().split()
    for cc in args.tcp:
        if cc not in available:
            print(f"dpdk-fi-bottleneck: the kernel has no {cc} (it offers "
                  f"{' '.join(available)}): its rows are left out", file=sys.stderr)
    args.tcp = [cc for cc in args.tcp if cc in available]
    link = Link(args)
    args.out.mkdir(parents=True, exist_ok=True)
    rows: list[dict] = []
    with tempfile.TemporaryDirectory() as scratch:
        work = Path(scratch)
        try:
            link.up()
            if args.queue != "tbf":
                subprocess.run(link.in_host("a", ["sysctl", "-qw", "net.ipv4.tcp_ecn=1"]),
                               check=True)
            pinger = Pinger(link)
            time.sleep(1)
            rtts = pinger.stop()
            unloaded = {"p50": percentile(rtts, 50), "p99": percentile(rtts, 99)}
            if args.senders and args.unloaded:
                # One message of one frame in flight: no queue anywhere.
                alone = run_ours(link, 1, args.seconds, work, window=1, size=1024, count=2000)
                if alone.get("transport_rtt_ms"):
                    unloaded["ours"] = alone["transport_rtt_ms"]
            for n in args.senders:
                rows.append(measure(link, f"dpdk {n}",
                                    lambda n=n: run_ours(link, n, args.seconds, work)))
                for cc in args.tcp:
                    rows.append(measure(link, f"tcp-{cc} {n}",
                                        lambda n=n, cc=cc: run_tcp(link, n, cc, args.seconds)))
            if args.shared:
                for cc in args.tcp:
                    rows.append(measure(link, f"dpdk+tcp-{cc}",
                                        lambda cc=cc: run_shared(link, cc, args.seconds, work)))
                # What TCP's own CUBIC gets beside each other control: the
                # share to hold ours against.
                for cc in args.tcp:
                    if cc != "cubic" and "cubic" in args.tcp:
                        rows.append(measure(link, f"tcp-cubic+{cc}",
                                            lambda cc=cc: run_tcp_pair(link, "cubic", cc,
                                                                       args.seconds)))
            # The processes' logs go with the report, whatever became of
            # the rows: a failure's, and the provider's close lines (its
            # counters, with FI_LOG_LEVEL=info).
            for log in sorted(work.glob("*.log")):
                (args.out / log.name).write_text(log.read_text())
        finally:
            link.down()
    print_table(rows, unloaded, args)
    report = {"rate": args.rate, "rate_MBps": rate_bytes(args.rate) / 1e6, "buffer": args.buffer,
              "queue": args.queue, "mark_at": args.mark_at, "phantom": args.phantom,
              "loss_percent": args.loss, "size": args.size,
              "unloaded_rtt_ms": unloaded, "rows": rows}
    (args.out / "bottleneck.json").write_text(json.dumps(report, indent=1) + "\n")
    (args.out / "bottleneck.svg").write_text(svg(rows, rate_bytes(args.rate) / 1e6))
    print(f"wrote {args.out / 'bottleneck.json'} and {args.out / 'bottleneck.svg'}")
    return 0 if all(row["ok"] for row in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
