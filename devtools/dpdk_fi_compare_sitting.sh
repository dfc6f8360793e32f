# dpdk_fi_compare_sitting.sh: the last part of dpdk-fi-compare.sh's Python
# program: the scaling with threads, the instructions per message, and the
# sitting itself (every part run, the tables printed, the JSON written and
# drawn).  Source it; it defines functions only.
# shellcheck shell=bash

# compare_py_sitting: prints the part (python3 reads the parts whole, in
# order, from dpdk-fi-compare.sh).
compare_py_sitting() {
	cat <<'EOF'
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


def run_msgcost(provider, size, op="msg"):
    """Instructions per message (op "msg") or per fetch-add (op
    "fetch_add") of dpdk-fi-msgcost under callgrind; None when the run
    fails."""
    program = os.path.join(builddir, "app", "msgcost", "dpdk-fi-msgcost")
    eal = (["-l", "0", "--no-huge", "-m", "512", "--no-shconf", "--no-pci", "--no-telemetry",
            "--vdev=net_ring0"] if provider == "dpdk" else [])
    # (No "--" for other providers: the program starts EAL only for dpdk.)
    command = ["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null",
               "--toggle-collect=*measured_loop*", program] + eal + (
               ["--"] if provider == "dpdk" else []) + [
               "--provider", provider, "--op", op, "--size", str(size),
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
            note(f"msgcost {provider} {op} {size} B: {line.strip()}")
    for line in out.stderr.splitlines():
        if "Collected :" in line:
            return round(int(line.split(":")[-1].strip()) / MSGCOST_COUNT)
    return None


def msgcost_part():
    """{size or "fetch_add": {provider: instructions}} for dpdk and shm
    (those of --providers)."""
    costs = {}
    for size in (8, 4096):
        costs[str(size)] = {p: run_msgcost(p, size) for p in ("dpdk", "shm") if p in providers}
    # The target's path: one fi_fetch_atomic of 8 bytes, request and answer.
    costs["fetch_add"] = {p: run_msgcost(p, 8, "fetch_add") for p in ("dpdk", "shm")
                          if p in providers}
    return costs


def print_msgcost(costs):
    print()
    print("instructions per message (dpdk-fi-msgcost under callgrind, two endpoints of one"
          " process, one at a time; dpdk over net_ring):")
    for size, row in costs.items():
        dpdk, shm = row.get("dpdk"), row.get("shm")
        ratio = f" ({dpdk / shm:.2f}x shm's)" if dpdk and shm else ""
        label = {"8": "8 B", "4096": "4 KiB", "fetch_add": "fetch-add 8 B"}[size]
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
floor = ceiling = None
if stock_wanted and want_floor:
    # First, on a machine that runs nothing of ours yet.
    floor = floor_part()
    failed += "mean" not in floor
    ceiling = ceiling_part()
    failed += "one_way_MBps" not in ceiling or "both_ways_MBps" not in ceiling
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
    if ceiling is not None:
        if "one_way_MBps" in ceiling and "both_ways_MBps" in ceiling:
            print(f"ceiling (dpdk-fi-rawping --pattern stream, 9000-byte frames over a memif"
                  f" pair, no provider): one way {ceiling['one_way_MBps']:.0f} MB/s, both ways"
                  f" at once {ceiling['both_ways_MBps']:.0f} MB/s each way")
        else:
            print("ceiling (dpdk-fi-rawping --pattern stream): fail")
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
    vs_ceiling = against_ceiling(tables, ceiling) if ceiling is not None else []
    if vs_ceiling:
        print()
        print("dpdk against the ceiling (share of the raw MB/s; fi_rma_bw against both ways"
              " at once, fi_rdm_tagged_bw against one way):")
        for entry in vs_ceiling:
            print(f"  {entry['figure']} ({entry['counts']} count): {entry['dpdk']:.0f} MB/s,"
                  f" {entry['share']:.2f} of {entry['ceiling'].replace('_', ' ')}")
    stock = {"fabtests": fabtests_version, "floor": floor, "ceiling": ceiling, "tables": tables,
             "runs": stock_runs, "against_bench": vs_bench, "against_ceiling": vs_ceiling}

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
subprocess.run([sys.executable, os.path.join(repo, "devtools", "dpdk-fi-plot.py"), json_path])
sys.exit(1 if failed else 0)
EOF
}
