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
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "tools"))
try:
    import numpy as np
    import torch
except ImportError as e:
    print("SKIP: %s (python3-numpy and python3-torch)" % e)
    sys.exit(77)
import gossipcluster as cluster  # noqa: E402
import gossipd  # noqa: E402

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
            self.assertTrue(r["kept_values"],
                            "trainer %d: the model lost what DETACH left" % i)
            self.assertTrue(r["drain_totals"], "trainer %d: DRAIN's reply lost the totals" % i)
            self.assertLess(r["loss1"], r["loss0"] / 2, "trainer %d did not learn" % i)
            self.assertTrue(any(e == e for e in r["estimates"]),
                            "trainer %d: no edge ever completed a round" % i)
        d0 = distance([r["initial"] for r in res])
        d1 = distance([r["before_average"] for r in res])
        d2 = distance([r["final"] for r in res])
        self.assertLess(d1, d0 / 10, "consensus distance %g -> %g in training" % (d0, d1))
        self.assertLess(d2, d0 / 1e4, "consensus distance %g -> %g after AVERAGE" % (d0, d2))
        # What DETACH wrote is at most a round per edge of an average
        # already reached: the consensus holds in the detached models.
        d3 = distance([r["detached"] for r in res])
        self.assertLess(d3, d0 / 1e4, "consensus distance %g -> %g after DETACH" % (d0, d3))
        final = np.asarray([r["detached"] for r in res])
        spread = np.abs(final - final.mean(axis=0)).max()
        self.assertLess(spread, 1e-3 * np.abs(final).max(),
                        "final parameters differ by %g" % spread)
        self.assertEqual(c.sanitizer_reports(), [])
        print("consensus distance %.3g -> %.3g (training) -> %.3g (average); "
              "spread %.2g; average %s" % (d0, d1, d2, spread,
                                           [r["average"] for r in res]))


class Timeout(unittest.TestCase):
    def test_timeout_returns_once_the_daemon_let_go(self):
        """A step that times out in the client (0.5 s) while the daemon's
        step still runs (held 2 s off the loop by test hooks): the client
        closes the connection, so the daemon DETACHes; the Timeout comes
        only once the daemon has let go of the buffer (its EOF), so that
        from then on the trainer alone writes its parameters.  Before,
        the Timeout came at 0.5 s with the daemon's step still to write
        into them."""
        c = cluster.Cluster(BUILD, 2, node_conf="Method = powergossip\nRank = 2\n")
        if not os.environ.get("GSP_KEEP_TMP"):
            self.addCleanup(c.remove)
        self.addCleanup(c.close)
        c.start(extra_env={"GSP_OFFLOAD_FLOATS": "0", "GSP_TEST_STEP_DELAY_MS": "2000"})
        torch.manual_seed(0)
        models = [torch.nn.Linear(10, 4) for _ in range(2)]
        gs = [gossipd.attach(m, socket=c.sockets[i], name="timeout-%d" % i, timeout=30)
              for i, m in enumerate(models)]
        self.addCleanup(gs[1].detach)
        gs[0].wait_edges(1, timeout=20)
        gs[0].client.timeout = 0.5
        t0 = time.monotonic()
        with self.assertRaises(gossipd.Timeout):
            gs[0].step()
        took = time.monotonic() - t0
        with gossipd.Client(c.sockets[0], name="observer") as obs:
            doc = obs.status()
        self.assertFalse(doc["model"]["registered"],
                         "the daemon still holds the buffer after the Timeout "
                         "(%.2f s):\n%s" % (took, c.tail_logs()))
        self.assertGreater(took, 1.5, took)      # it waited for the held step
        self.assertLess(took, 12.0, took)        # and no longer than RELEASE_WAIT
        before = [p.detach().clone() for p in models[0].parameters()]
        # A STATUS answered after the release: whatever the daemon had
        # queued ran before it (one loop), so a late write would show.
        with gossipd.Client(c.sockets[0], name="observer") as obs:
            self.assertFalse(obs.status()["model"]["registered"])
        for a, p in zip(before, models[0].parameters()):
            self.assertTrue(torch.equal(a, p.detach()))


class Restart(unittest.TestCase):
    def test_kill_9_and_restart_keeps_the_torch_trainer(self):
        """gossipd is killed under an attached trainer: its steps go on,
        offline and fast; gossipd starts again on the same socket: the
        trainer registers the same buffer again and gossips."""
        c = cluster.Cluster(BUILD, 2, node_conf="Method = powergossip\nRank = 2\n")
        if not os.environ.get("GSP_KEEP_TMP"):
            self.addCleanup(c.remove)
        self.addCleanup(c.close)
        c.start()
        torch.manual_seed(0)
        models = [torch.nn.Linear(10, 4) for _ in range(2)]
        gs = [gossipd.attach(m, socket=c.sockets[i], name="restart-%d" % i, timeout=10)
              for i, m in enumerate(models)]
        for g in reversed(gs):
            self.addCleanup(g.detach)
        gs[0].wait_edges(1, timeout=20)
        ptrs = [p.data_ptr() for p in models[0].parameters()]
        rng = gs[0].client.buffer_range
        self.assertFalse(gs[0].step().offline)

        c.procs[0].kill()                     # kill -9
        c.procs[0].wait()
        c.procs[0] = None
        t0 = time.monotonic()
        st = gs[0].step()
        self.assertTrue(st.offline)
        for _ in range(99):
            st = gs[0].step()
        took = time.monotonic() - t0
        self.assertTrue(st.offline)
        self.assertEqual(st.offline_steps, 100)
        self.assertLess(took, 0.5, "100 offline steps took %.3f s" % took)

        c.start(nodes=[0])                    # the same socket path
        deadline = time.monotonic() + 10
        while st.offline and time.monotonic() < deadline:
            st = gs[0].step()
            gs[1].step()
        self.assertFalse(st.offline, "not back after 10 s:\n" + c.tail_logs())
        self.assertEqual(st.reconnects, 1)
        doc = gs[0].status()
        self.assertTrue(doc["model"]["registered"])
        self.assertEqual(doc["model"]["trainer"], "restart-0")
        self.assertEqual([p.data_ptr() for p in models[0].parameters()], ptrs)
        self.assertEqual(gs[0].client.buffer_range, rng)
        gs[0].wait_edges(1, timeout=20)
        deadline = time.monotonic() + 20
        while st.bytes_received == 0 and time.monotonic() < deadline:
            st = gs[0].step()
            gs[1].step()
        self.assertGreater(st.bytes_received, 0, "no gossip after the restart")
        self.assertEqual(c.sanitizer_reports(), [])


if __name__ == "__main__":
    BUILD = os.path.abspath(sys.argv.pop(1))
    unittest.main()
