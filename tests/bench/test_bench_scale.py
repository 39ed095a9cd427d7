#!/usr/bin/env python3
"""Smoke test of tools/bench/bench-scale (suite 'bench-smoke'): 4 daemons in a
ring, 30 SYNC rounds of PowerGossip between test trainers, a few
seconds.  Checks the properties the benchmark stands on, from its CSVs:
the consensus error falls at every checkpoint and ends well below the
start, the network average stays put (drift below 5e-6 of the initial
spread), the rounds, times and memory are recorded, and every daemon
stopped.  And that the drift check really fails a run (--max-drift 0:
exit 1).  Exits 77 (skipped) without NumPy in /usr/bin/python3.

usage: test_bench_scale.py BUILD_DIR
"""
import csv
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
TOOL = os.path.join(ROOT, "tools", "bench", "bench-scale")
BUILD = sys.argv.pop(1) if len(sys.argv) > 1 else os.path.join(ROOT, "build")
PYTHON = "/usr/bin/python3"
ARGS = ["--nodes", "4", "--topology", "ring", "--rounds", "30",
        "--dump-every", "10", "--max-seconds", "60"]


def has(module):
    return subprocess.run([PYTHON, "-c", "import " + module],
                          capture_output=True).returncode == 0


def read_csv(path):
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


class BenchScale(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="bench-scale-test-")
        self.addCleanup(shutil.rmtree, self.tmp, ignore_errors=True)

    def run_tool(self, *extra):
        return subprocess.run([PYTHON, TOOL, "--build", BUILD] + ARGS + list(extra),
                              capture_output=True, text=True, timeout=120)

    def test_error_falls_and_average_is_conserved(self):
        out = os.path.join(self.tmp, "scale.csv")
        png = os.path.join(self.tmp, "scale.png")
        extra = ["--plot", png] if has("matplotlib") else []
        p = self.run_tool("--csv", out, *extra)
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        (row,) = read_csv(out)
        self.assertEqual((row["nodes"], row["topology"], row["degree"], row["ok"]),
                         ("4", "ring", "2", "1"))
        self.assertEqual(int(row["rounds"]), 30)
        self.assertGreater(float(row["s_per_round"]), 0)
        self.assertGreater(float(row["edge_rounds_per_s"]), 0)
        self.assertGreater(int(row["rss_median_kb"]), 1000)
        self.assertGreaterEqual(int(row["rss_max_kb"]), int(row["rss_median_kb"]))
        self.assertLess(float(row["stop_max_s"]), 5)
        self.assertLess(float(row["drift_max"]), 5e-6)
        curve = read_csv(os.path.join(self.tmp, "scale-curves.csv"))
        self.assertEqual([c["step"] for c in curve], ["0", "10", "20", "30", "final"])
        errs = [float(c["error"]) for c in curve]
        self.assertEqual(errs[0], 1.0)
        for a, b in zip(errs, errs[1:-1]):
            self.assertLess(b, a, "the error must fall at every checkpoint: %s" % errs)
        self.assertLessEqual(errs[-1], errs[-2] * 1.001)
        # PowerGossip r4 on a 4-ring: about 0.97 per round, 0.4 after 30.
        self.assertLess(errs[-1], 0.8)
        self.assertTrue(all(float(c["drift"]) < 5e-6 for c in curve))
        self.assertIn("ms/rnd", p.stdout)
        if extra:
            self.assertGreater(os.path.getsize(png), 10000)

    def test_a_moved_average_fails_the_run(self):
        p = self.run_tool("--max-drift", "0")
        self.assertEqual(p.returncode, 1, p.stdout + p.stderr)
        self.assertIn("the network average moved", p.stdout)


if __name__ == "__main__":
    if not has("numpy"):
        print("SKIP: bench-scale needs NumPy in %s" % PYTHON)
        sys.exit(77)
    unittest.main()
