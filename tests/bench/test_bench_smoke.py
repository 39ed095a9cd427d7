#!/usr/bin/env python3
"""Smoke test of tools/bench/bench-e2e (suite 'bench-smoke'): 2 nodes in their
own network namespaces, egress shaped to 100 Mbit/s, a few steps of
gossipd PowerGossip rank 1 and of DDP all-reduce.  Checks that the
interfaces counted bytes and that they match the payload the system must
send (plus a little framing), that accuracies are there, and that no
namespace is left, after a normal exit and after SIGTERM mid-run.  The
baselines (local SGD, DiLoCo, random pairs) run 4 steps at H = 2, and
their saved models are checked (tests/bench/baseline_models.py).
Exits 77 (skipped) where namespaces cannot be made or the workload's
packages are missing.

usage: test_bench_smoke.py BUILD_DIR
"""
import csv
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import unittest

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
TOOL = os.path.join(ROOT, "tools", "bench", "bench-e2e")
sys.path.insert(0, os.path.join(ROOT, "tools"))
from bench import netns  # noqa: E402

BUILD = sys.argv.pop(1) if len(sys.argv) > 1 else os.path.join(ROOT, "build")
PYTHON = "/usr/bin/python3"


def skip_reason():
    if os.geteuid() != 0:
        return "needs root to create network namespaces"
    if not shutil.which("ip") or not shutil.which("tc"):
        return "needs iproute2 (ip, tc)"
    ok, why = netns.can_create()
    if not ok:
        return "cannot create network namespaces here: " + why
    probe = subprocess.run([PYTHON, "-c", "import torch, numpy"], capture_output=True)
    if probe.returncode != 0:
        return "needs python3-torch and python3-numpy in %s" % PYTHON
    if not os.path.isdir("/usr/share/datasets/fashion-mnist"):
        return "needs dataset-fashion-mnist"
    if not os.access(os.path.join(BUILD, "daemon", "gossipd"), os.X_OK):
        return "no daemon/gossipd in %s" % BUILD
    return None


def ours(pid):
    return [n for n in netns.namespaces() if n.startswith("%s%d-" % (netns.PREFIX, pid))]


class BenchSmoke(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="bench-smoke-")
        self.csv = os.path.join(self.dir, "e2e.csv")

    def tearDown(self):
        shutil.rmtree(self.dir, ignore_errors=True)

    def cmd(self, *extra):
        return [TOOL, "--build", BUILD, "--nodes", "2", "--rate", "100mbit",
                "--steps", "8", "--eval-every", "4", "--quiet-wait", "0",
                # Choco's AVERAGE runs to its limit (it has no estimate)
                "--average-time-ms", "3000",
                "--no-plots", "--csv", self.csv] + list(extra)

    def test_run_counts_bytes_and_cleans_up(self):
        p = subprocess.Popen(self.cmd("--systems",
                                      "gossipd-powergossip-r1,gossipd-choco-topk,ddp-allreduce",
                                      "--choco-fraction", "0.02",
                                      "--average-schedule", "finite"),
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        out, err = p.communicate(timeout=150)
        self.assertEqual(p.returncode, 0, err[-3000:])
        self.assertEqual(ours(p.pid), [], "namespaces left after exit")
        with open(self.csv) as f:
            rows = {r["system"]: r for r in csv.DictReader(f)}
        self.assertEqual(set(rows), {"gossipd-powergossip-r1", "gossipd-choco-topk",
                                     "ddp-allreduce"})
        for name, r in rows.items():
            self.assertEqual(r["error"], "", name)
            self.assertEqual(r["steps"], "8", name)
            sent, minimum = float(r["bytes_per_node_step"]), float(r["payload_min_bytes"])
            self.assertGreater(sent, 0, name)
            # framing, TCP/IP headers and keep-alives cost a little, never
            # less than the payload and not twice it
            self.assertGreaterEqual(float(r["payload_ratio"]), 0.99, name)
            self.assertLess(float(r["payload_ratio"]), 2.0, name)
            self.assertGreater(minimum, 0, name)
            for col in ("final_accuracy", "final_worst_accuracy"):
                self.assertTrue(0.1 < float(r[col]) <= 1.0, (name, col, r[col]))
            self.assertGreater(float(r["s_per_step"]), 0, name)
            self.assertGreater(float(r["cpu_s"]), 0, name)
            self.assertNotEqual(r["load1"], "", name)
        g = rows["gossipd-powergossip-r1"]
        # gossipd's payload minimum is per edge round: there were rounds
        self.assertGreater(float(g["rounds_per_step"]), 0)
        self.assertGreater(float(g["average_rounds"]), 0)
        self.assertGreater(float(g["average_bytes_per_node"]), 0)
        # the final AVERAGE's finite-time schedule (one exact round on a
        # pair): both nodes reach it, at float rounding, not at 1e-3
        self.assertEqual((g["average_schedule"], rows["gossipd-choco-topk"]["average_schedule"]),
                         ("finite", ""))
        self.assertEqual(g["average_reached"], "2")
        self.assertLess(float(g["average_estimate"]), 1e-4, g["average_estimate"])
        # the daemons' own counts over the training span: the engine's
        # payload is the minimum (an edge may have one more round in
        # flight at the end), framing costs a little on the wire, and the
        # interface adds TCP/IP headers and ACKs to what they wrote
        pay = float(g["payload_bytes_per_step"])
        self.assertTrue(0.9 <= pay / float(g["payload_min_bytes"]) <= 1.25,
                        (pay, g["payload_min_bytes"]))
        self.assertTrue(1.0 <= float(g["wire_payload_ratio"]) < 1.1, g["wire_payload_ratio"])
        self.assertTrue(0.99 <= float(g["interface_wire_ratio"]) < 1.5,
                        g["interface_wire_ratio"])
        # Choco top-k: 2 % of each tensor as (index, value) pairs, per edge
        # round (tools/bench/payload.py), as the daemons counted it
        c = rows["gossipd-choco-topk"]
        self.assertEqual((c["choco_fraction"], c["daemon_threads"]), ("0.02", "1"))
        # gossipd refuses Gamma = auto for Choco: the harness' own default
        self.assertEqual((c["gamma"], g["gamma"]), ("0.1", "auto"))
        self.assertEqual(c["average_reached"], "0")
        self.assertTrue(0.9 <= float(c["payload_bytes_per_step"]) /
                        float(c["payload_min_bytes"]) <= 1.25,
                        (c["payload_bytes_per_step"], c["payload_min_bytes"]))
        # all-reduce of a 1.86 M-parameter model against rank-1 messages
        self.assertGreater(float(rows["ddp-allreduce"]["bytes_per_node_step"]),
                           50 * float(g["bytes_per_node_step"]))
        self.assertNotEqual(g["steps_per_s_vs_allreduce"], "")

    def test_straggler_sleeps_the_nodes_median(self):
        """With a straggler, its sleep per step is the median of every
        node's calibrated compute in the run's first system, the figure
        the CSV records as that row's calibrated_compute_s (it was the
        straggler's own, noisier one), and every later system's
        straggler sleeps the same (each system's own median moved by
        60 % within one run)."""
        p = subprocess.run(self.cmd("--systems", "compute-only,ddp-allreduce",
                                    "--scenario", "straggler", "--target", "0.05"),
                           capture_output=True, text=True, timeout=200)
        self.assertEqual(p.returncode, 0, p.stderr[-3000:])
        with open(self.csv) as f:
            rows = {r["system"]: r for r in csv.DictReader(f)}
        first, later = rows["compute-only"], rows["ddp-allreduce"]
        self.assertEqual(first["scenario"], "straggler")
        self.assertGreater(float(first["straggler_sleep_s"]), 0)
        self.assertEqual(first["straggler_sleep_s"], first["calibrated_compute_s"])
        self.assertEqual(later["straggler_sleep_s"], first["straggler_sleep_s"])
        self.assertGreater(float(later["calibrated_compute_s"]), 0)
        # the wall-clock measure (the nodes' latest models): one model,
        # DDP's, is the step's; the nodes' own models reach a 5 % target
        # no later than their last step
        self.assertEqual(later["seconds_to_target_latest"], later["seconds_to_target"])
        self.assertNotEqual(later["seconds_to_target"], "")
        self.assertGreater(float(first["seconds_to_target_latest"]), 0)
        self.assertLessEqual(float(first["seconds_to_target_latest"]),
                             float(first["s_per_step"]) * 8 + 0.01)

    def test_straggler_sleep_given(self):
        """--straggler-sleep sets the sleep (the CSV still records the
        nodes' median beside it); a bad figure is refused by name."""
        p = subprocess.run(self.cmd("--systems", "compute-only", "--scenario", "straggler",
                                    "--straggler-sleep", "0.0125"),
                           capture_output=True, text=True, timeout=150)
        self.assertEqual(p.returncode, 0, p.stderr[-3000:])
        with open(self.csv) as f:
            (r,) = list(csv.DictReader(f))
        self.assertEqual(float(r["straggler_sleep_s"]), 0.0125)
        self.assertGreater(float(r["calibrated_compute_s"]), 0)
        p = subprocess.run(self.cmd("--straggler-sleep", "-1"), capture_output=True,
                           text=True, timeout=30)
        self.assertEqual(p.returncode, 2)
        self.assertIn("--straggler-sleep", p.stderr)

    def test_require_quiet_leaves_a_busy_machine_alone(self):
        """--require-quiet while another process keeps a core busy: the
        system is not run, an earlier row is not replaced, the log names
        the busy process, and the exit status says so (without it, such a
        run went ahead on a loaded machine and only recorded the load)."""
        with open(self.csv, "w") as f:
            f.write("an earlier run's rows\n")
        burner = subprocess.Popen([PYTHON, "-c", "import time\nend = time.monotonic() + 60\n"
                                   "while time.monotonic() < end: pass"])
        try:
            p = subprocess.Popen(self.cmd("--systems", "compute-only", "--require-quiet"),
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            _, err = p.communicate(timeout=120)
        finally:
            burner.kill()
            burner.wait()
        self.assertEqual(p.returncode, 1, err[-3000:])
        self.assertIn("SKIPPED: machine busy", err)
        self.assertIn("python3:", err)
        self.assertIn("not run", err.splitlines()[-1])
        self.assertNotIn("  step ", err)                   # no training ran
        with open(self.csv) as f:
            self.assertEqual(f.read(), "an earlier run's rows\n")
        self.assertEqual(ours(p.pid), [], "namespaces left after exit")

    def test_plot_only_without_matplotlib_says_what_to_install(self):
        """--plot-only where matplotlib cannot be imported: one line that
        names the package and exit status 1 (it was a traceback)."""
        fake = os.path.join(self.dir, "fake")
        os.makedirs(os.path.join(fake, "matplotlib"))
        with open(os.path.join(fake, "matplotlib", "__init__.py"), "w") as f:
            f.write("raise ImportError('no matplotlib here')\n")
        with open(os.path.splitext(self.csv)[0] + "-curves.csv", "w") as f:
            f.write("run,profile,model,scenario,system,step,seconds,accuracy\n")
        r = subprocess.run([PYTHON, TOOL, "--plot-only", "--csv", self.csv],
                           capture_output=True, text=True, timeout=60,
                           env=dict(os.environ, PYTHONPATH=fake))
        self.assertEqual(r.returncode, 1, r.stderr)
        self.assertIn("python3-matplotlib", r.stderr)
        self.assertNotIn("Traceback", r.stderr)

    def test_baselines_exchange_as_their_papers_say(self):
        """local SGD, DiLoCo and random pairs at H = 2 for 4 steps, a
        model saved at every step: after steps 2 and 4 (an exchange) the
        nodes hold the same bits, after steps 1 and 3 they differ;
        DiLoCo's first outer step is Nesterov SGD on the averaged change,
        random pairs conserve the mean of the models, the bytes match an
        all-reduce (a whole model) every 2 steps, and the final
        all-reduce is timed and counted."""
        systems = ["localsgd-h2", "diloco-h2", "randpair-h2"]
        p = subprocess.run(self.cmd("--systems", ",".join(systems), "--steps", "4",
                                    "--eval-every", "1", "--keep", "--no-worst"),
                           capture_output=True, text=True, timeout=240)
        self.assertEqual(p.returncode, 0, p.stderr[-3000:])
        kept = [line.split()[-1] for line in p.stderr.splitlines() if "files kept in" in line]
        self.assertEqual(len(kept), 3, p.stderr[-3000:])
        try:
            facts = subprocess.run(
                [PYTHON, os.path.join(ROOT, "tests", "bench", "baseline_models.py"), "4"] + kept,
                capture_output=True, text=True, timeout=60)
        finally:
            for line in p.stderr.splitlines():
                if "files kept in" in line:
                    for d in line.split()[-3::2]:
                        shutil.rmtree(d, ignore_errors=True)
        self.assertEqual(facts.returncode, 0, facts.stderr)
        f = json.loads(facts.stdout)
        exchanged = {"1": False, "2": True, "3": False, "4": True, "avg": True}
        for family in ("localsgd", "diloco", "randpair"):
            self.assertEqual(f[family]["equal"], exchanged, family)
        self.assertTrue(f["step1_same_bits"], "the families' inner steps differ")
        self.assertLess(f["diloco_outer_step_error"], 1e-4)
        self.assertLess(f["randpair_mean_error"], 1e-6)
        with open(self.csv) as fh:
            rows = {r["system"]: r for r in csv.DictReader(fh)}
        self.assertEqual(set(rows), set(systems))
        for name, r in rows.items():
            self.assertEqual((r["error"], r["steps"]), ("", "4"), name)
            self.assertGreater(float(r["bytes_per_node_step"]), 0, name)
            self.assertTrue(0.99 <= float(r["payload_ratio"]) < 1.2, (name, r["payload_ratio"]))
            # the final all-reduce: one model per node (2 nodes), timed
            self.assertTrue(1.0 <= float(r["average_bytes_per_node"]) /
                            (2 * float(r["payload_min_bytes"])) < 1.2, name)
            self.assertGreater(float(r["average_s"]), 0, name)
            self.assertEqual(r["average_counted"], "1", name)
            self.assertEqual(r["averaged_accuracy"], r["averaged_worst_accuracy"], name)
        self.assertEqual((rows["diloco-h2"]["outer_lr"], rows["diloco-h2"]["outer_momentum"]),
                         ("0.7", "0.9"))
        self.assertRegex(p.stderr, r"best H of each family, 100mbit, mlp, equal: localsgd-h2 ")

    def test_10mbit_profile_is_shaped(self):
        """The 10 Mbit/s profile: tbf at the rate, the bucket at its floor
        (64 KiB + a frame, above 10 ms of the rate), 100 ms of queue."""
        with netns.Net(2, netns.PROFILES["10mbit"], tag="t10-") as net:
            q = net.qdisc(1)
        self.assertRegex(q, r"tbf .*rate 10Mbit burst 67050b lat 100ms", q)

    def test_sigterm_removes_namespaces(self):
        p = subprocess.Popen(self.cmd("--systems", "compute-only", "--steps", "400",
                                      "--eval-every", "400"),
                             stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        seen, deadline = "", time.monotonic() + 60
        while "network 100mbit" not in seen and time.monotonic() < deadline:
            line = p.stderr.readline()
            if not line:
                break
            seen += line
        self.assertIn("network 100mbit", seen)
        self.assertNotEqual(ours(p.pid), [], "the network should be up")
        p.send_signal(signal.SIGTERM)
        _, err = p.communicate(timeout=60)
        self.assertEqual(p.returncode, 130, err)
        self.assertIn("namespaces removed", err)
        self.assertEqual(ours(p.pid), [], "namespaces left after SIGTERM")


if __name__ == "__main__":
    why = skip_reason()
    if why:
        print("SKIP: " + why)
        sys.exit(77)
    unittest.main()
