#!/usr/bin/env python3
"""Draws the comparison command's JSON (devtools/dpdk-fi-compare.sh) as
charts a reader can look at: SVG files and an index.html that shows them
with the figures' table.  Needs nothing beyond Python 3.

Charts, each provider in its own colour:
  latency_<figure>.svg   dpdk-fi-bench's latency percentiles (p50, p90, p99,
                         p99.9) per provider, log scale: the distribution's
                         tail, which a median hides
  throughput.svg         dpdk-fi-bench's bandwidth figures (write, read,
                         tagged at 64 KiB and 1 MiB), MB/s
  scaling.svg            two threads' rate over one thread's, per provider
  stock_<counts>_<unit>.svg
                         fabtests' figures at their default and long counts,
                         latencies (us) and bandwidths (MB/s) apart
  instructions.svg       instructions per message (callgrind), dpdk and shm

Usage: dpdk-fi-plot.py [--out DIR] [COMPARE_JSON]
  COMPARE_JSON  default: build/compare.json
  --out DIR     default: a "plots" folder beside COMPARE_JSON
Exit status: 0, or 2 (one line on stderr) when the JSON cannot be read.
"""

import argparse
import html
import json
import math
import sys
from pathlib import Path

PROG = "dpdk-fi-plot.py"
COLOURS = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b"]
PERCENTILES = [("p50", "p50"), ("p90", "p90"), ("p99", "p99"), ("p999", "p99.9")]
WIDTH, HEIGHT = 720, 400
LEFT, RIGHT, TOP, BOTTOM = 70, 160, 40, 70


class PlotError(Exception):
    """A problem that stops the drawing; main() prints it on one line."""


def esc(text: object) -> str:
    return html.escape(str(text), quote=True)


def nice_ceiling(value: float) -> float:
    """1, 2 or 5 times a power of ten, at least `value` (> 0)."""
    power = 10 ** math.floor(math.log10(value))
    for step in (1, 2, 5, 10):
        if step * power >= value:
            return step * power
    return 10 * power


def svg_document(title: str, body: list[str]) -> str:
    return "\n".join([
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{HEIGHT}"'
        f' viewBox="0 0 {WIDTH} {HEIGHT}" font-family="sans-serif" font-size="12">',
        f"<title>{esc(title)}</title>",
        f'<rect width="{WIDTH}" height="{HEIGHT}" fill="white"/>',
        f'<text x="{WIDTH / 2}" y="22" text-anchor="middle" font-size="15">{esc(title)}</text>',
        *body,
        "</svg>",
        "",
    ])


def legend(providers: list[str]) -> list[str]:
    items = []
    x = WIDTH - RIGHT + 20
    for i, provider in enumerate(providers):
        y = TOP + 10 + 20 * i
        items.append(f'<rect x="{x}" y="{y - 10}" width="12" height="12"'
                     f' fill="{COLOURS[i % len(COLOURS)]}"/>')
        items.append(f'<text x="{x + 18}" y="{y}" class="legend">{esc(provider)}</text>')
    return items


def bar_chart(title: str, unit: str, groups: list[tuple[str, dict]], providers: list[str]) -> str:
    """Grouped bars: one group per label, one bar per provider.  A missing
    value (a failed run) leaves its place empty, marked "n/a"."""
    values = [v for _, row in groups for v in row.values() if isinstance(v, (int, float))]
    top = nice_ceiling(max(values)) if values and max(values) > 0 else 1.0
    plot_w, plot_h = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM
    body = [f'<text x="16" y="{TOP + plot_h / 2}" transform="rotate(-90 16 {TOP + plot_h / 2})"'
            f' text-anchor="middle">{esc(unit)}</text>']
    for k in range(6):
        value = top * k / 5
        y = TOP + plot_h - plot_h * k / 5
        body.append(f'<line x1="{LEFT}" y1="{y:.1f}" x2="{LEFT + plot_w}" y2="{y:.1f}"'
                    ' stroke="#ddd"/>')
        body.append(f'<text x="{LEFT - 6}" y="{y + 4:.1f}" text-anchor="end">{value:g}</text>')
    group_w = plot_w / max(len(groups), 1)
    bar_w = group_w * 0.8 / max(len(providers), 1)
    for g, (label, row) in enumerate(groups):
        x0 = LEFT + g * group_w + group_w * 0.1
        for i, provider in enumerate(providers):
            x = x0 + i * bar_w
            value = row.get(provider)
            if not isinstance(value, (int, float)):
                body.append(f'<text x="{x + bar_w / 2:.1f}" y="{TOP + plot_h - 4}"'
                            f' text-anchor="middle" font-size="9" class="missing">n/a</text>')
                continue
            h = plot_h * value / top
            body.append(f'<rect class="bar" x="{x:.1f}" y="{TOP + plot_h - h:.1f}"'
                        f' width="{bar_w * 0.9:.1f}" height="{h:.1f}"'
                        f' fill="{COLOURS[i % len(COLOURS)]}">'
                        f"<title>{esc(provider)} {esc(label)}: {value:g} {esc(unit)}</title></rect>")
        body.append(f'<text x="{x0 + group_w * 0.4:.1f}" y="{TOP + plot_h + 16}"'
                    f' text-anchor="middle" font-size="10">{esc(label)}</text>')
    body.append(f'<line x1="{LEFT}" y1="{TOP + plot_h}" x2="{LEFT + plot_w}" y2="{TOP + plot_h}"'
                ' stroke="black"/>')
    return svg_document(title, body + legend(providers))


def percentile_chart(title: str, series: dict[str, dict]) -> str:
    """One line per provider through its latency percentiles, log scale."""
    providers = list(series)
    values = [s[key] for s in series.values() for key, _ in PERCENTILES
              if isinstance(s.get(key), (int, float)) and s[key] > 0]
    if not values:
        raise PlotError(f"{title}: no latency percentiles")
    low = 10 ** math.floor(math.log10(min(values)))
    high = 10 ** math.ceil(math.log10(max(values)))
    if high <= low:
        high = low * 10
    plot_w, plot_h = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM

    def y_of(value: float) -> float:
        return TOP + plot_h - plot_h * (math.log10(value) - math.log10(low)) / (
            math.log10(high) - math.log10(low))

    body = [f'<text x="16" y="{TOP + plot_h / 2}" transform="rotate(-90 16 {TOP + plot_h / 2})"'
            ' text-anchor="middle">us (log scale)</text>']
    decade = low
    while decade <= high * 1.0001:
        y = y_of(decade)
        body.append(f'<line x1="{LEFT}" y1="{y:.1f}" x2="{LEFT + plot_w}" y2="{y:.1f}"'
                    ' stroke="#ddd"/>')
        body.append(f'<text x="{LEFT - 6}" y="{y + 4:.1f}" text-anchor="end">{decade:g}</text>')
        decade *= 10
    step = plot_w / (len(PERCENTILES) - 1)
    for j, (_, label) in enumerate(PERCENTILES):
        body.append(f'<text x="{LEFT + j * step:.1f}" y="{TOP + plot_h + 16}"'
                    f' text-anchor="middle">{label}</text>')
    for i, provider in enumerate(providers):
        points = [(LEFT + j * step, y_of(series[provider][key]))
                  for j, (key, _) in enumerate(PERCENTILES)
                  if isinstance(series[provider].get(key), (int, float))
                  and series[provider][key] > 0]
        if not points:
            continue
        colour = COLOURS[i % len(COLOURS)]
        body.append(f'<polyline class="series" fill="none" stroke="{colour}" stroke-width="2"'
                    f' points="{" ".join(f"{x:.1f},{y:.1f}" for x, y in points)}">'
                    f"<title>{esc(provider)}</title></polyline>")
        for x, y in points:
            body.append(f'<circle cx="{x:.1f}" cy="{y:.1f}" r="3" fill="{colour}"/>')
    return svg_document(title, body + legend(providers))


def median_run(runs: list[dict]) -> dict | None:
    """The run whose mean latency is the median of the good runs."""
    good = [r for r in runs if r.get("ok") and isinstance(r.get("latency_us"), dict)]
    if not good:
        return None
    good.sort(key=lambda r: r["latency_us"].get("mean", 0))
    return good[len(good) // 2]


def draw(data: dict, out: Path) -> list[tuple[str, str]]:
    """Writes the charts into `out`; returns (file name, caption) pairs."""
    out.mkdir(parents=True, exist_ok=True)
    charts: list[tuple[str, str]] = []

    def write(name: str, caption: str, svg: str) -> None:
        (out / name).write_text(svg)
        charts.append((name, caption))

    runs = data.get("runs") or {}
    for figure in ("lat_8B", "lat_4KiB", "lat_64KiB", "fadd_lat"):
        per_provider = runs.get(figure) or {}
        series = {}
        for provider, provider_runs in per_provider.items():
            run = median_run(provider_runs or [])
            if run is not None:
                series[provider] = run["latency_us"]
        if series:
            write(f"latency_{figure}.svg", f"{figure}: latency percentiles (dpdk-fi-bench)",
                  percentile_chart(f"{figure}: latency percentiles, us", series))

    table = data.get("table") or []
    providers = [p for p in ("dpdk", "dpdk-shared", "shm", "tcp;ofi_rxm")
                 if any(p in row for row in table)]
    bandwidth = [(row["figure"], row) for row in table if row.get("unit") == "MB/s"]
    if bandwidth:
        write("throughput.svg", "bandwidth figures (dpdk-fi-bench)",
              bar_chart("dpdk-fi-bench bandwidth, MB/s", "MB/s", bandwidth, providers))

    scaling = data.get("scaling") or []
    if scaling:
        names = sorted({key.rsplit(" ", 1)[0] for row in scaling for key in row
                        if key.endswith(" 1")})
        groups = []
        for row in scaling:
            ratios = {}
            for name in names:
                one, two = row.get(f"{name} 1"), row.get(f"{name} 2")
                if isinstance(one, (int, float)) and isinstance(two, (int, float)) and one > 0:
                    ratios[name] = round(two / one, 3)
            groups.append((row["figure"], ratios))
        write("scaling.svg", "two threads over one (1.0: no gain)",
              bar_chart("two threads' rate over one thread's", "ratio", groups, names))

    stock = data.get("stock") or {}
    for counts, rows in (stock.get("tables") or {}).items():
        stock_providers = [p for p in ("dpdk", "shm", "tcp;ofi_rxm")
                           if any(p in row for row in rows)]
        for unit, tag in (("us", "latency"), ("MB/s", "bandwidth")):
            picked = [(row["figure"], row) for row in rows if row.get("unit") == unit]
            if picked:
                write(f"stock_{counts}_{tag}.svg",
                      f"fabtests {stock.get('fabtests', '')}, {counts} counts: {tag} ({unit})",
                      bar_chart(f"fabtests, {counts} counts, {unit}", unit, picked,
                                stock_providers))

    costs = data.get("instructions_per_message") or {}
    if costs:
        groups = [(f"{size} B", row) for size, row in costs.items()]
        names = [p for p in ("dpdk", "shm") if any(p in row for _, row in groups)]
        write("instructions.svg", "instructions per message (callgrind)",
              bar_chart("instructions per message", "instructions", groups, names))
    return charts


def write_index(data: dict, charts: list[tuple[str, str]], out: Path) -> None:
    rows = data.get("table") or []
    columns = ["figure", "unit", "dpdk", "dpdk-shared", "shm", "tcp;ofi_rxm"]
    columns = [c for c in columns if any(c in row for row in rows)]
    lines = ["<!doctype html>", "<meta charset=\"utf-8\">",
             f"<title>ofi-dpdk comparison {esc(data.get('when', ''))}</title>",
             f"<h1>ofi-dpdk comparison, {esc(data.get('when', ''))}</h1>",
             f"<p>{esc(data.get('uname', ''))}; {esc(data.get('cpus', ''))} CPUs</p>"]
    if rows:
        lines.append("<table border=\"1\" cellpadding=\"3\"><tr>"
                     + "".join(f"<th>{esc(c)}</th>" for c in columns) + "</tr>")
        for row in rows:
            lines.append("<tr>" + "".join(f"<td>{esc(row.get(c, ''))}</td>" for c in columns)
                         + "</tr>")
        lines.append("</table>")
    for name, caption in charts:
        lines.append(f"<h2>{esc(caption)}</h2><img src=\"{esc(name)}\" alt=\"{esc(caption)}\">")
    (out / "index.html").write_text("\n".join(lines) + "\n")


def main() -> None:
    parser = argparse.ArgumentParser(prog=PROG, description=__doc__.split("\n\n")[0])
    parser.add_argument("json", nargs="?", default="build/compare.json", metavar="COMPARE_JSON")
    parser.add_argument("--out", metavar="DIR")
    args = parser.parse_args()
    source = Path(args.json)
    out = Path(args.out) if args.out else source.parent / "plots"
    try:
        try:
            data = json.loads(source.read_text())
        except OSError as e:
            raise PlotError(f"cannot read {source}: {e.strerror}") from e
        except json.JSONDecodeError as e:
            raise PlotError(f"{source} is not JSON: {e}") from e
        if not isinstance(data, dict):
            raise PlotError(f"{source} is not a comparison's JSON (no object at the top)")
        charts = draw(data, out)
        if not charts:
            raise PlotError(f"{source} holds no figure to draw")
        write_index(data, charts, out)
    except (PlotError, KeyError, TypeError, AttributeError) as e:
        print(f"{PROG}: error: {e}", file=sys.stderr)
        sys.exit(2)
    print(f"plots: {out / 'index.html'} ({len(charts)} charts)")


if __name__ == "__main__":
    main()
