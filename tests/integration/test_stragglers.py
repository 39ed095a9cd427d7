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


def floats(path):
    with open(path, "rb") as f:
        b = f.read()
    return struct.unpack("<%df" % (len(b) // 4), b)


def rate(out):
    m = re.search(r"^steps (\d+) seconds ([0-9.]+)$", out, re.M)
    if not m:
        raise AssertionError("no step timing in: %r" % out[-500:])
    return int(m.group(1)) / float(m.group(2))


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
        c = self.cluster()
        free = self.free_rate(c)

        def args(i):
            if i == 3:
                return ["--steps", str(STEPS // 10), "--compute-ms", str(10 * FAST_MS)]
            return ["--steps", str(STEPS), "--compute-ms", str(FAST_MS)]
        outs, drift = self.run_ring(c, args, "slow")
        kept = [rate(outs[i]) / free[i] for i in range(3)]
        print("straggler 10x: fast trainers keep %s of their free rate "
              "(%s steps/s free); drift %.2g" % (
                  ", ".join("%.0f %%" % (100 * k) for k in kept),
                  ", ".join("%.0f" % f for f in free), drift))
        for k in kept:
            self.assertGreaterEqual(k, 0.8)
        self.assertLess(drift, 1e-5)
        self.assertIn("straggler", c.log(0) + c.log(2))

    def test_lag_is_reported(self):
        """The slow trainer's edges show it: rounds per second (over the
        daemon's last second) well below the fast edges', and the straggler
        state at its neighbours."""
        c = self.cluster()
        seen = {}

        def sample(procs):
            # A second into the run, with every edge gossiping.
            self.assertTrue(cluster.eventually(
                lambda: cluster.status(c.sockets[3])["model"].get("steps", 0) >= 20, 30))
            slow = [e["rounds_per_s"] for e in cluster.status(c.sockets[3])["edges"]]
            fast = [e["rounds_per_s"] for e in cluster.status(c.sockets[1])["edges"]]
            seen.update(slow=slow, fast=fast)

        def args(i):
            if i == 3:
                return ["--steps", "60", "--compute-ms", str(10 * FAST_MS)]
            return ["--steps", "600", "--compute-ms", str(FAST_MS)]
        _, drift = self.run_ring(c, args, "lag", pause=sample)
        print("straggler 10x: rounds/s at its edges %s, at a fast node's %s" % (
            seen["slow"], seen["fast"]))
        self.assertEqual(len(seen["slow"]), 2)
        self.assertGreater(min(seen["fast"]), 0)
        self.assertLess(max(seen["slow"]), 0.5 * min(seen["fast"]))
        self.assertLess(drift, 1e-5)

    def test_stopped_trainer_stops_no_one(self):
        c = self.cluster()
        free = self.free_rate(c)
        stopped = []

        def pause(procs):
            # Once trainer 3 has stepped (its edges are up and gossiping).
            self.assertTrue(cluster.eventually(
                lambda: cluster.status(c.sockets[3])["model"].get("steps", 0) >= 3, 30))
            os.kill(procs[3].pid, signal.SIGSTOP)
            stopped.append(time.monotonic())

        def args(i):
            return ["--steps", str(STEPS), "--compute-ms", str(FAST_MS)]
        # The others finish their steps while trainer 3 is stopped; then
        # it resumes and its edges carry on.
        def resume_later(procs):
            pause(procs)
            threading.Timer(3.0, lambda: procs[3].poll() is None and
                            os.kill(procs[3].pid, signal.SIGCONT)).start()
        outs, drift = self.run_ring(c, args, "stop", pause=resume_later)
        kept = [rate(outs[i]) / free[i] for i in range(3)]
        print("trainer stopped 3 s: the others keep %s of their free rate; "
              "drift %.2g" % (", ".join("%.0f %%" % (100 * k) for k in kept), drift))
        for k in kept:
            self.assertGreaterEqual(k, 0.8)
        self.assertLess(drift, 1e-5)


if __name__ == "__main__":
    BUILD = sys.argv.pop(1)
    unittest.main(verbosity=2)
