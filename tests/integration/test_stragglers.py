#!/usr/bin/env python3
"""Stragglers slow no one (suite 'integration'): a 4-ring of real daemons
with pure-gossip trainers (gossip-testtrainer, --compute-ms as their
compute).  One trainer 10x slower, or stopped with SIGSTOP, must leave
the others >= 80 % of the step rate they have without it, and the
network average must not move.  Each test prints what it measured.

usage: test_stragglers.py BUILD_DIR [unittest options]
"""
import os
import re
import signal
import subprocess
import threading
import struct
import sys
import time
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "..", "tools"))
import gossipcluster as cluster  # noqa: E402

BUILD = None
DATA = "random:64x64"
FAST_MS = 5            # a fast trainer's compute per step
STEPS = 120
STOP_S = 10            # SIGSTOP, and a pause at a barrier, as the issue asks
PAUSE_S = 10
RESUME_STEPS = 4000    # the others step through the stop and after it


def floats(path):
    with open(path, "rb") as f:
        b = f.read()
    return struct.unpack("<%df" % (len(b) // 4), b)


def timing(out, pattern):
    """The groups of the trainer's output line that matches pattern."""
    m = re.search(pattern, out, re.M)
    if not m:
        raise AssertionError("no %r in: %r" % (pattern, out[-500:]))
    return [float(g) for g in m.groups()]


def drain_seconds(out):
    return timing(out, r"^drain seconds ([0-9.]+)$")[0]


def rate(out):
    steps, seconds = timing(out, r"^steps (\d+) seconds ([0-9.]+)$")
    return steps / seconds


class Stragglers(unittest.TestCase):
    def cluster(self):
        c = cluster.owned_by(self, cluster.Cluster(BUILD, 4))
        c.start()
        return c

    def run_ring(self, c, args_of, tag, pause=None):
        """Runs 4 trainers (args_of(i)); pause(procs) acts meanwhile.
        Returns (outputs, drift): drift of the network average relative
        to the initial spread."""
        init = [os.path.join(c.dir, "%s-init%d" % (tag, i)) for i in range(4)]
        final = [os.path.join(c.dir, "%s-final%d" % (tag, i)) for i in range(4)]
        procs = [c.trainer(i, "--data", DATA, "--wait-edges", "2",
                           "--dump-initial", init[i], "--dump", final[i],
                           *args_of(i)) for i in range(4)]
        self.addCleanup(lambda: [cluster.kill(p) for p in procs])
        if pause:
            pause(procs)
        outs = []
        for i, p in enumerate(procs):
            out, err = p.communicate(timeout=120)
            self.assertEqual(p.returncode, 0, "trainer %d: %s\n%s" % (i, err, c.tail_logs()))
            outs.append(out)
        x0 = [floats(f) for f in init]
        x1 = [floats(f) for f in final]
        n = len(x0[0])
        mean0 = [sum(x[k] for x in x0) / 4 for k in range(n)]
        mean1 = [sum(x[k] for x in x1) / 4 for k in range(n)]
        spread = max(abs(x[k] - mean0[k]) for x in x0 for k in range(n))
        drift = max(abs(mean1[k] - mean0[k]) for k in range(n)) / spread
        return outs, drift

    def free_rate(self, c):
        outs, drift = self.run_ring(c, lambda i: ["--steps", str(STEPS),
                                                  "--compute-ms", str(FAST_MS)], "free")
        self.assertLess(drift, 1e-5)
        return [rate(o) for o in outs[:3]]

    def test_ten_times_slower_neighbour(self):
        """The rate kept is a ratio of two runs one after the other, so a
        burst of load from elsewhere on a shared machine (or the
        sanitizer build's slower daemon) can pull one run down: below
        80 %, both runs are measured once more, and the second
        measurement decides.  Before the stragglers fix the fast
        trainers kept 6-11 %, which no re-measurement lifts."""
        c = self.cluster()

        def args(i):
            if i == 3:
                return ["--steps", str(STEPS // 10), "--compute-ms", str(10 * FAST_MS)]
            return ["--steps", str(STEPS), "--compute-ms", str(FAST_MS)]
        for attempt in range(2):
            free = self.free_rate(c)
            outs, drift = self.run_ring(c, args, "slow")
            kept = [rate(outs[i]) / free[i] for i in range(3)]
            print("straggler 10x: fast trainers keep %s of their free rate "
                  "(%s steps/s free); drift %.2g" % (
                      ", ".join("%.0f %%" % (100 * k) for k in kept),
                      ", ".join("%.0f" % f for f in free), drift))
            self.assertLess(drift, 1e-5)
            if min(kept) >= 0.8:
                break
        for k in kept:
            self.assertGreaterEqual(k, 0.8)
        self.assertIn("straggler", c.log(0) + c.log(2))

    def test_lag_is_reported(self):
        """The slow trainer's edges show it: rounds per second (over the
        daemon's last second) well below the fast edges', and at a
        neighbour the straggler state and a staleness above 0, in
        `gossipctl edges` and `gossipctl metrics`."""
        c = self.cluster()
        seen = {}

        slow_key = c.keys[3][1]

        def gossipctl(*args):
            out = subprocess.run([c.bin("tools", "gossipctl", "gossipctl"), *args,
                                  "--socket", c.sockets[0]], capture_output=True,
                                 text=True, timeout=10)
            self.assertEqual(out.returncode, 0, out.stderr)
            return out.stdout

        def sample(procs):
            # A second into the run, with every edge gossiping.
            self.assertTrue(cluster.eventually(
                lambda: cluster.status(c.sockets[3])["model"].get("steps", 0) >= 20, 30))
            slow = [e["rounds_per_s"] for e in cluster.status(c.sockets[3])["edges"]]
            fast = [e["rounds_per_s"] for e in cluster.status(c.sockets[1])["edges"]]
            seen.update(slow=slow, fast=fast)
            # What an operator sees at node 0, a neighbour of the slow
            # node: its edge a straggler, lagging, in gossipctl's table and
            # in the metrics (the state comes and goes as the slow trainer
            # steps: looked at until seen, while the trainers run).
            line = re.compile(r"^%s.*\bstraggler\b" % re.escape(slow_key[:8]), re.M)
            seen["edges"] = cluster.eventually(lambda: line.search(gossipctl("edges")), 10)
            metric = 'gossipd_edge_straggler{peer="%s"} 1' % slow_key
            seen["metrics"] = cluster.eventually(lambda: metric in gossipctl("metrics"), 10)
            stale = re.compile(r'^gossipd_edge_staleness\{peer="%s"\} ([1-9]\d*)$'
                               % re.escape(slow_key), re.M)
            seen["stale"] = cluster.eventually(lambda: stale.search(gossipctl("metrics")), 10)

        def args(i):
            if i == 3:
                return ["--steps", "60", "--compute-ms", str(10 * FAST_MS)]
            return ["--steps", "600", "--compute-ms", str(FAST_MS)]
        _, drift = self.run_ring(c, args, "lag", pause=sample)
        print("straggler 10x: rounds/s at its edges %s, at a fast node's %s" % (
            seen["slow"], seen["fast"]))
        self.assertTrue(seen["edges"], "gossipctl edges never showed the straggler")
        self.assertTrue(seen["metrics"], "gossipd_edge_straggler never 1 for it")
        self.assertTrue(seen["stale"], "gossipd_edge_staleness never above 0 for it")
        self.assertEqual(len(seen["slow"]), 2)
        self.assertGreater(min(seen["fast"]), 0)
        self.assertLess(max(seen["slow"]), 0.5 * min(seen["fast"]))
        self.assertLess(drift, 1e-5)

    def edges_of(self, c, i):
        return {e["peer"]: e for e in cluster.status(c.sockets[i])["edges"]}

    def test_stopped_trainer_stops_no_one(self):
        """Trainer 3 stopped with SIGSTOP for about STOP_S: the others step on at
        their free rate meanwhile (counted by their daemons), its
        neighbours mark its edges stragglers, and once it resumes its
        edges continue: the same generation, rounds again."""
        c = self.cluster()
        free = self.free_rate(c)
        seen = {}

        def steps(i):
            return cluster.status(c.sockets[i])["model"].get("steps", 0)

        def stop_and_resume(procs):
            # Once trainer 3 has stepped (its edges are up and gossiping).
            self.assertTrue(cluster.eventually(lambda: steps(3) >= 3, 30))
            before = self.edges_of(c, 3)
            os.kill(procs[3].pid, signal.SIGSTOP)
            t0 = time.monotonic()
            s0 = [steps(i) for i in range(3)]
            self.assertTrue(cluster.eventually(lambda: any(
                e["straggler"] for i in (0, 2)
                for e in cluster.status(c.sockets[i])["edges"]), STOP_S))
            seen["straggler"] = [e["straggler"] for i in (0, 2)
                                 for e in cluster.status(c.sockets[i])["edges"]]
            # The stop lasts until the others have stepped what STOP_S
            # seconds at their free rate take (about STOP_S when they keep
            # it), 3 STOP_S at most: a progress condition, not a delay;
            # others held back by the stopped one end it at the bound.
            cluster.eventually(lambda: all(
                steps(i) - s0[i] >= STOP_S * free[i] for i in range(3)), 3 * STOP_S, 0.05)
            s1 = [steps(i) for i in range(3)]
            t1 = time.monotonic()
            mid = self.edges_of(c, 3)
            os.kill(procs[3].pid, signal.SIGCONT)
            seen["rates"] = [(b - a) / (t1 - t0) for a, b in zip(s0, s1)]
            seen["stopped_s"] = t1 - t0
            # Its edges continue while the others still step.
            self.assertTrue(cluster.eventually(lambda: all(
                e["rounds"] >= mid[k]["rounds"] + 10
                for k, e in self.edges_of(c, 3).items()), 20),
                "trainer 3's edges did not continue: %s" % self.edges_of(c, 3))
            after = self.edges_of(c, 3)
            seen["rounds"] = [(mid[k]["rounds"], after[k]["rounds"]) for k in after]
            seen["generations"] = [(before[k]["generation"], after[k]["generation"])
                                   for k in after]
            seen["steps_left"] = [RESUME_STEPS - steps(i) for i in range(3)]

        def args(i):
            if i == 3:
                return ["--steps", str(STEPS), "--compute-ms", str(FAST_MS)]
            # Enough steps to outlast the stop and the resumption.
            return ["--steps", str(RESUME_STEPS), "--compute-ms", str(FAST_MS)]
        outs, drift = self.run_ring(c, args, "stop", pause=stop_and_resume)
        kept = [r / f for r, f in zip(seen["rates"], free)]
        print("trainer stopped %.1f s: the others kept %s of their free rate "
              "while it was; its edges' rounds at SIGCONT and after %s, "
              "generations %s; drift %.2g" % (
                  seen["stopped_s"], ", ".join("%.0f %%" % (100 * k) for k in kept),
                  seen["rounds"], seen["generations"], drift))
        for k in kept:
            self.assertGreaterEqual(k, 0.8)
        self.assertTrue(any(seen["straggler"]), seen["straggler"])
        for g0, g1 in seen["generations"]:
            self.assertEqual(g0, g1, "a new generation after the stop")
        for left in seen["steps_left"]:
            self.assertGreater(left, 0, "the others had finished: nothing "
                               "shows its edges continue with them")
        self.assertLess(drift, 1e-5)

    def test_paused_trainer_costs_the_others_drain_nothing(self):
        """Trainer 3 finishes its steps and then waits PAUSE_S at a barrier
        (an evaluation, a checkpoint) before its DRAIN: the others' own
        DRAINs do not wait for it, and the average is conserved once it
        drains too."""
        c = self.cluster()

        def args(i):
            if i == 3:
                return ["--steps", "20", "--compute-ms", str(FAST_MS),
                        "--pause-ms", str(PAUSE_S * 1000)]
            return ["--steps", str(STEPS), "--compute-ms", str(FAST_MS)]
        t0 = time.monotonic()
        done = {}

        def watch(procs):
            def wait(i):
                procs[i].wait()
                done[i] = time.monotonic() - t0
            ts = [threading.Thread(target=wait, args=(i,)) for i in range(3)]
            for t in ts:
                t.start()
            for t in ts:
                t.join(PAUSE_S + 60)
        outs, drift = self.run_ring(c, args, "pause", pause=watch)
        drains = [drain_seconds(o) for o in outs]
        print("trainer 3 paused %d s before its DRAIN: the others' DRAINs took "
              "%s s, they exited after %s s; drift %.2g" % (
                  PAUSE_S, ", ".join("%.3f" % d for d in drains[:3]),
                  ", ".join("%.1f" % done[i] for i in range(3)), drift))
        for i in range(3):
            self.assertLess(drains[i], 2.0, "trainer %d's DRAIN waited" % i)
            self.assertLess(done[i], PAUSE_S, "trainer %d waited for the pause" % i)
        self.assertLess(drift, 1e-5)

if __name__ == "__main__":
    BUILD = sys.argv.pop(1)
    unittest.main(verbosity=2)
