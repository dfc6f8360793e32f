#!/usr/bin/env python3
"""devtools/dpdk-fi-plot.py on comparison JSON written here (the shape
dpdk-fi-compare.sh writes; no DPDK):
  - every chart is well-formed SVG; the latency charts draw one line per
    provider through its percentiles, the bar charts one bar per figure and
    provider with the value in its tooltip, a failed run an "n/a" gap;
  - a larger value draws a taller bar;
  - index.html names every chart;
  - sections absent from the JSON (no stock part) draw nothing, without
    error; unreadable or empty JSON exits 2 with one line.
"""

import json
import subprocess
import sys
import tempfile
import unittest
import xml.etree.ElementTree as ET
from pathlib import Path

PLOTTER = Path(__file__).resolve().parents[2] / "devtools" / "dpdk-fi-plot.py"
SVG = "{http://www.w3.org/2000/svg}"


def latency_run(p50: float) -> dict:
    return {"ok": True, "latency_us": {"mean": p50 * 1.5, "p50": p50, "p90": p50 * 1.2,
                                       "p99": p50 * 3, "p999": p50 * 20, "max": p50 * 100}}


def sample() -> dict:
    return {
        "when": "2026-12-02T13:00:00", "uname": "Linux test", "cpus": 2,
        "runs": {"lat_8B": {"dpdk": [latency_run(1.0), latency_run(1.2), latency_run(0.9)],
                            "shm": [latency_run(0.3)],
                            "tcp;ofi_rxm": [{"ok": False}]}},
        "table": [
            {"figure": "lat_8B", "unit": "us", "dpdk": 1.0, "shm": 0.3, "tcp;ofi_rxm": None},
            {"figure": "write_64KiB", "unit": "MB/s", "dpdk": 3600, "shm": 5600,
             "tcp;ofi_rxm": 1800},
            {"figure": "read_64KiB", "unit": "MB/s", "dpdk": 3300, "shm": None,
             "tcp;ofi_rxm": 1200},
        ],
        "scaling": [{"figure": "threads_8B", "unit": "msg/s", "dpdk 1": 3.0e6, "dpdk 2": 1.9e6,
                     "shm 1": 6.0e6, "shm 2": 10.5e6}],
        "instructions_per_message": {"8": {"dpdk": 5677, "shm": 1587}},
        "stock": {"fabtests": "1.17.0", "tables": {"default": [
            {"figure": "pingpong_8B", "unit": "us", "dpdk": 1.7, "shm": 1.06, "tcp;ofi_rxm": 7.47},
            {"figure": "rma_write_64KiB", "unit": "MB/s", "dpdk": 2681, "shm": 7730,
             "tcp;ofi_rxm": 1063}]}},
    }


class PlotTest(unittest.TestCase):
    def setUp(self) -> None:
        self.tmp = Path(tempfile.mkdtemp(prefix="dpdk-fi-plot."))

    def tearDown(self) -> None:
        subprocess.run(["rm", "-rf", str(self.tmp)], check=False)

    def plot(self, data) -> subprocess.CompletedProcess:
        source = self.tmp / "compare.json"
        source.write_text(data if isinstance(data, str) else json.dumps(data))
        return subprocess.run([sys.executable, str(PLOTTER), str(source), "--out",
                               str(self.tmp / "plots")], capture_output=True, text=True,
                              timeout=60)

    def svg(self, name: str) -> ET.Element:
        return ET.parse(self.tmp / "plots" / name).getroot()

    def test_every_chart_is_drawn_and_named(self) -> None:
        result = self.plot(sample())
        self.assertEqual(result.returncode, 0, result.stderr)
        names = sorted(p.name for p in (self.tmp / "plots").glob("*.svg"))
        self.assertEqual(names, ["instructions.svg", "latency_lat_8B.svg", "scaling.svg",
                                 "stock_default_bandwidth.svg", "stock_default_latency.svg",
                                 "throughput.svg"])
        index = (self.tmp / "plots" / "index.html").read_text()
        for name in names:
            self.assertIn(name, index)
        self.assertIn("write_64KiB", index)  # the table too

    def test_latency_lines_follow_the_percentiles(self) -> None:
        self.assertEqual(self.plot(sample()).returncode, 0)
        root = self.svg("latency_lat_8B.svg")
        lines = root.findall(f".//{SVG}polyline")
        # dpdk and shm; tcp's one run failed and draws nothing.
        self.assertEqual(sorted(l.find(f"{SVG}title").text for l in lines), ["dpdk", "shm"])
        for line in lines:
            points = [tuple(map(float, p.split(","))) for p in line.get("points").split()]
            self.assertEqual(len(points), 4)  # p50, p90, p99, p99.9
            ys = [y for _, y in points]
            self.assertEqual(ys, sorted(ys, reverse=True), "higher percentiles sit higher")
        dpdk = next(l for l in lines if l.find(f"{SVG}title").text == "dpdk")
        shm = next(l for l in lines if l.find(f"{SVG}title").text == "shm")
        first_y = lambda l: float(l.get("points").split()[0].split(",")[1])
        self.assertLess(first_y(dpdk), first_y(shm), "dpdk's p50 (1.0) above shm's (0.3)")

    def test_bars_carry_their_values_and_gaps(self) -> None:
        self.assertEqual(self.plot(sample()).returncode, 0)
        root = self.svg("throughput.svg")
        bars = {r.find(f"{SVG}title").text: float(r.get("height"))
                for r in root.iter(f"{SVG}rect") if r.get("class") == "bar"}
        self.assertEqual(len(bars), 5)  # six places, shm's read failed
        self.assertIn("dpdk write_64KiB: 3600 MB/s", bars)
        self.assertGreater(bars["shm write_64KiB: 5600 MB/s"], bars["dpdk write_64KiB: 3600 MB/s"])
        gaps = [t for t in root.iter(f"{SVG}text") if t.get("class") == "missing"]
        self.assertEqual(len(gaps), 1)
        scaling = self.svg("scaling.svg")
        titles = [r.find(f"{SVG}title").text for r in scaling.iter(f"{SVG}rect")
                  if r.get("class") == "bar"]
        self.assertIn("dpdk threads_8B: 0.633 ratio", titles)

    def test_missing_sections_draw_nothing(self) -> None:
        data = sample()
        del data["stock"], data["scaling"], data["instructions_per_message"]
        result = self.plot(data)
        self.assertEqual(result.returncode, 0, result.stderr)
        names = sorted(p.name for p in (self.tmp / "plots").glob("*.svg"))
        self.assertEqual(names, ["latency_lat_8B.svg", "throughput.svg"])

    def test_bad_input_is_one_line(self) -> None:
        for data in ("not json", "[1, 2]", "{}"):
            result = self.plot(data)
            self.assertEqual(result.returncode, 2, data)
            self.assertNotIn("Traceback", result.stderr)
            self.assertEqual(len(result.stderr.strip().splitlines()), 1, result.stderr)
        result = subprocess.run([sys.executable, str(PLOTTER), str(self.tmp / "absent.json")],
                                capture_output=True, text=True, timeout=60)
        self.assertEqual(result.returncode, 2)
        self.assertIn("cannot read", result.stderr)


if __name__ == "__main__":
    unittest.main()
