# dpdk_fi_compare_stock.sh: the second part of dpdk-fi-compare.sh's Python
# program: the stock programs (the floor, dpdk-fi-rawping; fabtests'
# benchmarks, built when missing) and how they compare with dpdk-fi-bench.
# Source it; it defines functions only.
# shellcheck shell=bash

# compare_py_stock: prints the part (python3 reads the parts whole, in
# order, from dpdk-fi-compare.sh).
compare_py_stock() {
	cat <<'EOF'
# --- The stock programs ---------------------------------------------------

LAUNCHER = os.path.join(repo, "usertools", "dpdk-fi-run.py")
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
    status = subprocess.run([os.path.join(repo, "devtools", "dpdk-fi-fabtests.sh"), "--build-only",
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


def run_rawping(args, result_key):
    """One dpdk-fi-rawping pair with ARGS on both sides; its client's JSON,
    with "ok" when both exited 0 and the client's line has RESULT_KEY."""
    work = tempfile.mkdtemp(prefix="ofi-dpdk-compare.")
    sock = os.path.join(work, "memif.sock")
    env = dict(os.environ)
    processes = []
    try:
        server_eal = launcher_eal("server", sock, env)
        if server_eal is None:
            return {"ok": False, "error": "dpdk-fi-run.py gave no EAL arguments"}
        with open(os.path.join(work, "server.log"), "w") as log:
            server = subprocess.Popen([RAWPING] + server_eal + ["--", "--role", "server"] + args,
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
            client = subprocess.Popen([RAWPING] + client_eal + ["--", "--role", "client"] + args,
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
        result["ok"] = client_status == 0 and server_status == 0 and result_key in result
        if not result["ok"]:
            failed_log = "client.log" if client_status != 0 or result_key not in result \
                else "server.log"
            result["error"] = (f"status {client_status}/{server_status}: " +
                               (last_line(os.path.join(work, failed_log)) or ""))
        return result
    finally:
        for process in processes:
            if process.poll() is None:
                finish(process, 0)
        shutil.rmtree(work, ignore_errors=True)


def run_floor(count):
    """The floor: 64-byte frames to and fro."""
    return run_rawping(["--count", str(count), "--timeout", "20"], "one_way_us")


def run_ceiling(both):
    """The ceiling: 9000-byte frames one way, or BOTH ways at once."""
    seconds = "1" if quick else "3"
    return run_rawping(["--pattern", "stream", "--seconds", seconds, "--timeout", "20"] +
                       (["--both"] if both else []), "sent_MBps")


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

def ceiling_part():
    """The ceiling, --repeat times each way: the medians of the MB/s one
    way (what the client sent) and both ways at once (the mean of what the
    client sent and received: each direction's with the other busy)."""
    summary = {"size": 9000, "runs": {"one_way": [], "both_ways": []}}
    for attempt in range(repeat):
        for key, both in (("one_way", False), ("both_ways", True)):
            if not os.access(RAWPING, os.X_OK):
                summary["runs"][key].append({"ok": False, "error": f"no {RAWPING} (build it)"})
                continue
            run = run_ceiling(both)
            summary["runs"][key].append(run)
            if not run["ok"]:
                note(f"ceiling ({key}): failed: {run.get('error', '?')}")
    for key in ("one_way", "both_ways"):
        passed = [r for r in summary["runs"][key] if r["ok"]]
        if len(passed) == repeat:
            summary[f"{key}_MBps"] = statistics.median(
                r["sent_MBps"] if key == "one_way" else (r["sent_MBps"] + r["received_MBps"]) / 2
                for r in passed)
    return summary


# Which ceiling each bandwidth figure is held to: fi_rma_bw's two processes
# write (or read) to each other at once, fi_rdm_tagged_bw goes one way.
CEILING_OF = {"rma_write_64KiB": "both_ways", "rma_write_1MiB": "both_ways",
              "rma_read_64KiB": "both_ways", "rma_read_1MiB": "both_ways",
              "tagged_bw_64KiB": "one_way", "tagged_bw_1MiB": "one_way"}


def against_ceiling(tables, ceiling):
    """dpdk's bandwidth figures as a share of the ceiling they move under."""
    lines = []
    for counts, table in tables.items():
        for row in table:
            key = CEILING_OF.get(row["figure"])
            top = ceiling.get(f"{key}_MBps") if key else None
            if top and row.get("dpdk"):
                lines.append({"figure": row["figure"], "counts": counts, "ceiling": key,
                              "dpdk": row["dpdk"], "share": row["dpdk"] / top})
    return lines


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


EOF
}
