#!/usr/bin/env python3
"""Integration test of 16-bit factors on the wire (REGISTER's precision,
PROTOCOL.md 5.2): 3 real gossipd on loopback (tools/gossipcluster.py, a
ring of 3: every pair an edge) and trainers that ask
gossipd.Client.register(precision=...).

- One run per precision (float32, float16, bfloat16), the same data and
  steps: each keeps the network average to float32 rounding (both ends
  diff the same 16-bit values) and reaches consensus, the daemon's
  consensus estimate (which reads the messages) says so, and a 16-bit
  run's ROUND payload bytes per round are half float32's.
- 16-bit factors for a method without them (exact) are refused with the
  reason.
- Two ends of different precisions refuse the edge, each naming both.

Needs NumPy (exit 77, a meson skip, without it).

usage: test_wire_precision.py BUILD_DIR [unittest options]
"""
import errno
import re
import sys
import threading
import unittest

from daemonharness import np, cluster, gossipd  # noqa: E402 (exit 77 without NumPy)

BUILD = None
CONF = "Method = powergossip\nRank = 2\nGamma = 1\nMaxWait = 60000\n"
TENSORS = [("w", (12, 8)), ("b", (8,))]
STEPS = 40


class WirePrecision(unittest.TestCase):
    def cluster(self, n):
        c = cluster.owned_by(self, cluster.Cluster(BUILD, n, node_conf=CONF))
        c.start()
        return c

    def client(self, c, i):
        api = gossipd.Client(c.sockets[i], "trainer%d" % i, timeout=30)
        self.addCleanup(api.close)
        return api

    def gossip(self, precision):
        """A run of 3 nodes at `precision`: the network stats (drift, error
        before, error after), node 0's payload bytes per round and its
        consensus estimate."""
        c = self.cluster(3)
        apis = [self.client(c, i) for i in range(3)]
        initial, models = [], []
        for i, api in enumerate(apis):
            api.register(TENSORS, precision=precision)
            api.flat[...] = np.random.default_rng(i).standard_normal(api.flat.shape)
            initial.append(api.flat.copy())
            models.append(api.flat)
        for api in apis:
            api.wait_edges(2, timeout=15)
        summary = cluster.status(c.sockets[0])["model"]["summary"]
        wire = " wire %s" % precision if precision != "float32" else ""
        self.assertRegex(summary, r"^powergossip r2%s, 2 tensors, 104 floats" % wire)
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
        self.assertEqual(errors, [], c.tail_logs())
        stats = cluster.network_stats([x.tolist() for x in initial],
                                      [x.tolist() for x in models])
        estimate = cluster.status(c.sockets[0])["model"]["consensus_estimate"]
        edges = cluster.status(c.sockets[0])["edges"]
        payload = sum(e["payload_tx_bytes"] for e in edges)
        rounds = sum(e["round"] for e in edges)
        self.assertGreaterEqual(rounds, 2 * (STEPS - 1))
        return stats, payload / rounds, estimate

    def test_16_bit_halves_the_bytes_and_keeps_the_average(self):
        per_round = {}
        for precision in ("float32", "float16", "bfloat16"):
            (drift, e0, e1), per_round[precision], estimate = self.gossip(precision)
            self.assertLessEqual(drift, 1e-6, "%s: network average moved by %g"
                                 % (precision, drift))
            self.assertLess(e1, e0 / 100, "%s: consensus error fell only %g -> %g"
                            % (precision, e0, e1))
            # The daemon's estimate reads the messages at their precision
            # (3.6e-5, 4.4e-4 and 2.8e-3 when written).
            self.assertLess(estimate, 0.02, "%s: consensus estimate %g"
                            % (precision, estimate))
        for precision in ("float16", "bfloat16"):
            ratio = per_round[precision] / per_round["float32"]
            self.assertAlmostEqual(ratio, 0.5, delta=0.05,
                                   msg="%s: %.1f bytes a round, float32 %.1f"
                                   % (precision, per_round[precision],
                                      per_round["float32"]))

    def test_16_bit_for_exact_gossip_is_refused(self):
        c = self.cluster(2)
        api = self.client(c, 0)
        with self.assertRaises(gossipd.OptionsRefused) as cm:
            api.register(TENSORS, method="exact", precision="bfloat16")
        self.assertEqual(cm.exception.code, -errno.EOPNOTSUPP)
        self.assertIn("wire precision bfloat16 applies to powergossip only, not exact",
                      str(cm.exception))
        self.assertFalse(cluster.status(c.sockets[0])["model"]["registered"])
        api.register(TENSORS, precision="bfloat16")

    def test_different_precisions_refuse_the_edge_naming_both(self):
        c = self.cluster(2)
        apis = [self.client(c, i) for i in range(2)]
        apis[0].register(TENSORS, precision="float16")
        apis[1].register(TENSORS, precision="bfloat16")
        ours_theirs = {0: ("float16", "bfloat16"), 1: ("bfloat16", "float16")}

        def why(i):
            return cluster.status(c.sockets[i])["edges"][0]["last_error"] or ""
        for i in range(2):
            self.assertTrue(cluster.eventually(lambda: "model mismatch" in why(i)),  # noqa: B023
                            c.tail_logs())
            ours, theirs = ours_theirs[i]
            self.assertRegex(why(i), r"^model mismatch \(settings differ\): ours "
                             r"powergossip r2 wire %s, .*; theirs powergossip r2 wire %s, "
                             % (re.escape(ours), re.escape(theirs)))
            self.assertNotEqual(cluster.status(c.sockets[i])["edges"][0]["state"], "up")


if __name__ == "__main__":
    BUILD = sys.argv.pop(1)
    unittest.main()
