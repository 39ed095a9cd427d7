#!/usr/bin/env python3
"""Integration test of the Python client: 4 real gossipd in a ring on
loopback (tools/gossipcluster.py) and 4 PyTorch trainer processes
(torch_trainer.py, run with this interpreter) that train an MLP through
gossipd.attach, drain, average and detach.  Needs NumPy and PyTorch
(exit 77, a meson skip, without them).

usage: test_integration.py BUILD_DIR [unittest options]
"""
import json
import os
import subprocess
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "tools"))
try:
    import numpy as np
    import torch  # noqa: F401
except ImportError as e:
    print("SKIP: %s (python3-numpy and python3-torch)" % e)
    sys.exit(77)
import gossipcluster as cluster  # noqa: E402

BUILD = None
NODES, STEPS = 4, 60
# MaxWait: the trainers start at different times (PyTorch's import) and
# run only 60 fast steps; this test checks the client in lock-step
# training, so a STEP waits for a neighbour that has not started yet
# instead of leaving it behind as a straggler (the default, 50 ms).
CONF = ("Method = powergossip\nRank = 2\nGamma = auto\nTopology = ring\n"
        "Nodes = %d\nMaxWait = 60000\n" % NODES)


def distance(xs):
    """Consensus distance: mean over nodes of ||x_i - mean||^2."""
    xs = np.asarray(xs, dtype=np.float64)
    return float(((xs - xs.mean(axis=0)) ** 2).sum(axis=1).mean())


class TorchRing(unittest.TestCase):
    def test_four_torch_trainers_reach_consensus(self):
        c = cluster.Cluster(BUILD, NODES, node_conf=CONF)
        if not os.environ.get("GSP_KEEP_TMP"):
            self.addCleanup(c.remove)
        self.addCleanup(c.close)
        c.start()
        outs = [os.path.join(c.dir, "torch%d.json" % i) for i in range(NODES)]
        procs = [subprocess.Popen([sys.executable, os.path.join(HERE, "torch_trainer.py"),
                                   c.sockets[i], str(i), str(STEPS), outs[i]],
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
                 for i in range(NODES)]
        for i, p in enumerate(procs):
            try:
                _, err = p.communicate(timeout=300)
            except subprocess.TimeoutExpired:
                for q in procs:
                    q.kill()
                raise
            self.assertEqual(p.returncode, 0, "trainer %d: %s\n%s" % (i, err, c.tail_logs()))
        res = []
        for path in outs:
            with open(path) as f:
                res.append(json.load(f))

        for i, r in enumerate(res):
            self.assertTrue(r["in_mapping"], "trainer %d: a param outside the mapping" % i)
            self.assertTrue(r["ptr_stable"], "trainer %d: optimizer moved a param" % i)
            self.assertTrue(r["outside_after_detach"], i)
            self.assertTrue(r["kept_values"], "trainer %d: detach changed values" % i)
            self.assertTrue(r["drain_totals"], "trainer %d: DRAIN's reply lost the totals" % i)
            self.assertLess(r["loss1"], r["loss0"] / 2, "trainer %d did not learn" % i)
            self.assertTrue(any(e == e for e in r["estimates"]),
                            "trainer %d: no edge ever completed a round" % i)
        d0 = distance([r["initial"] for r in res])
        d1 = distance([r["before_average"] for r in res])
        d2 = distance([r["final"] for r in res])
        self.assertLess(d1, d0 / 10, "consensus distance %g -> %g in training" % (d0, d1))
        self.assertLess(d2, d0 / 1e4, "consensus distance %g -> %g after AVERAGE" % (d0, d2))
        final = np.asarray([r["final"] for r in res])
        spread = np.abs(final - final.mean(axis=0)).max()
        self.assertLess(spread, 1e-3 * np.abs(final).max(),
                        "final parameters differ by %g" % spread)
        self.assertEqual(c.sanitizer_reports(), [])
        print("consensus distance %.3g -> %.3g (training) -> %.3g (average); "
              "spread %.2g; average %s" % (d0, d1, d2, spread,
                                           [r["average"] for r in res]))


if __name__ == "__main__":
    BUILD = os.path.abspath(sys.argv.pop(1))
    unittest.main()
