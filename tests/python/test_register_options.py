#!/usr/bin/env python3
"""Integration test of REGISTER's options (PROTOCOL.md 5.2): 2 real
gossipd on loopback (tools/gossipcluster.py) whose config says Rank 1 and
MaxRank 3, and trainers that choose their own settings through
gossipd.Client.register(rank=...).

- Trainers that both ask rank 2 gossip at rank 2 and keep the network
  average;
- a rank above MaxRank, or a 16-bit wire precision for exact gossip, is
  refused with the reason, and the daemon stays free for the next
  REGISTER;
- two ends that ask different ranks refuse the edge, and each end's
  status names both ranks.

Needs NumPy (exit 77, a meson skip, without it).

usage: test_register_options.py BUILD_DIR [unittest options]
"""
import errno
import re
import sys
import threading
import unittest

from daemonharness import np, cluster, gossipd  # noqa: E402 (exit 77 without NumPy)

BUILD = None
CONF = "Method = powergossip\nRank = 1\nMaxRank = 3\nGamma = 1\nMaxWait = 60000\n"
TENSORS = [("w", (12, 8)), ("b", (8,))]
STEPS = 30



class RegisterOptions(unittest.TestCase):
    def setUp(self):
        self.c = cluster.owned_by(self, cluster.Cluster(BUILD, 2, node_conf=CONF))
        self.c.start()

    def client(self, i):
        api = gossipd.Client(self.c.sockets[i], "trainer%d" % i, timeout=30)
        self.addCleanup(api.close)
        return api

    def test_trainers_choose_rank_2_and_keep_the_average(self):
        apis = [self.client(i) for i in range(2)]
        models = []
        for i, api in enumerate(apis):
            arrays = api.register(TENSORS, method="powergossip", rank=2)
            rng = np.random.default_rng(i)
            for a in arrays:
                a[...] = rng.standard_normal(a.shape)
            models.append(arrays)

        def flat(arrays):
            return np.concatenate([a.ravel() for a in arrays])
        initial = [flat(m) for m in models]
        for api in apis:
            api.wait_edges(1, timeout=15)
        for i in range(2):
            model = cluster.status(self.c.sockets[i])["model"]
            self.assertEqual((model["method"], model["rank"]), ("powergossip", 2))
            self.assertRegex(model["summary"], r"^powergossip r2, 2 tensors, 104 floats")

        errors = []

        def train(api):
            try:
                for _ in range(STEPS):
                    api.step(sync=True)
            except Exception as e:   # noqa: BLE001 (reported below)
                errors.append(e)
        threads = [threading.Thread(target=train, args=(api,)) for api in apis]
        for t in threads:
            t.start()
        for t in threads:
            t.join(120)
        self.assertEqual(errors, [], self.c.tail_logs())
        final = [flat(m) for m in models]
        # Both ends applied the same rounds: the average is what it was.
        drift, e0, e1 = cluster.network_stats([x.tolist() for x in initial],
                                              [x.tolist() for x in final])
        self.assertLessEqual(drift, 1e-6, "network average moved by %g" % drift)
        self.assertLess(e1, e0 / 100, "consensus error fell only %g -> %g" % (e0, e1))
        st = cluster.status(self.c.sockets[0])
        self.assertEqual(st["edges"][0]["state"], "up")
        self.assertGreaterEqual(st["edges"][0]["round"], STEPS - 1)

    def test_options_beyond_the_limits_are_refused_with_the_reason(self):
        api = self.client(0)
        with self.assertRaises(gossipd.OptionsRefused) as cm:
            api.register(TENSORS, rank=4)
        self.assertEqual(cm.exception.code, -errno.ERANGE)
        self.assertIn("rank 4 is above this daemon's MaxRank 3", str(cm.exception))
        with self.assertRaises(gossipd.OptionsRefused) as cm:
            api.register(TENSORS, method="exact", precision="float16")
        self.assertEqual(cm.exception.code, -errno.EOPNOTSUPP)
        self.assertIn("wire precision float16 applies to powergossip only",
                      str(cm.exception))
        with self.assertRaises(gossipd.OptionsRefused) as cm:
            api.register(TENSORS, power_iterations=2)
        self.assertIn("not implemented", str(cm.exception))
        # Nothing changed: no model, and the same connection registers.
        self.assertFalse(cluster.status(self.c.sockets[0])["model"]["registered"])
        self.assertIn("REGISTER from 'trainer0' refused: rank 4", self.c.log(0))
        api.register(TENSORS, rank=3)
        self.assertEqual(cluster.status(self.c.sockets[0])["model"]["rank"], 3)

    def test_different_ranks_refuse_the_edge_naming_both(self):
        apis = [self.client(i) for i in range(2)]
        apis[0].register(TENSORS, rank=2)
        apis[1].register(TENSORS, rank=3)
        ours_theirs = {0: ("r2", "r3"), 1: ("r3", "r2")}

        def why(i):
            return cluster.status(self.c.sockets[i])["edges"][0]["last_error"] or ""
        for i in range(2):
            self.assertTrue(cluster.eventually(lambda: "model mismatch" in why(i)),  # noqa: B023
                            self.c.tail_logs())
            ours, theirs = ours_theirs[i]
            self.assertRegex(why(i), r"^model mismatch \(settings differ\): ours "
                             r"powergossip %s, .*; theirs powergossip %s, "
                             % (re.escape(ours), re.escape(theirs)))
            self.assertNotEqual(cluster.status(self.c.sockets[i])["edges"][0]["state"], "up")


if __name__ == "__main__":
    BUILD = sys.argv.pop(1)
    unittest.main()
