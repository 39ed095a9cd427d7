#!/usr/bin/env python3
"""Integration test of FETCH (PROTOCOL.md 4.5 and 5.7): a trainer that
joins starts from a neighbour's model.  3 real gossipd on loopback
(tools/gossipcluster.py, a ring of 3: every pair an edge) and NumPy
trainers through gossipd.Client.

- Two trainers train (their own random walks) and gossip; the third
  registers its own initialisation, far from theirs, and calls fetch():
  its buffer then holds, bit for bit, the model of the peer the result
  names (the two are paused at that moment, so their buffers are what the
  snapshot took), so its distance to the others is that neighbour's, not
  its initialisation's.  Then the three gossip: the rounds keep the
  network's average of after the copy, and the three converge.
- A float16 buffer: the copy is the neighbour's 16-bit values exactly.
- A model of 300,000 floats (1.2 MB) comes in many chunks of the link's
  frame size, and is verified the same.
- Two joiners at once both copy the one trained model, never each
  other's initialisation: a model that has not stepped is refused
  (NO_START), and a server busy with one asker makes the other ask again
  (NO_ROOM).
- A job that starts (no neighbour has stepped): FETCH copies nothing, at
  once, and the buffer keeps its own model.
- With no neighbour that has the model (the others registered none), a
  FETCH fails at its time limit with -ETIMEDOUT and the reason, and the
  buffer is unchanged; without a model of its own it is refused.

Needs NumPy (exit 77, a meson skip, without it).

usage: test_fetch.py BUILD_DIR [unittest options]
"""
import errno
import sys
import time
import unittest

from daemonharness import np, cluster, gossipd, ClusterCase  # noqa: E402 (exit 77 without NumPy)

BUILD = None
CONF = "Method = powergossip\nRank = 2\nGamma = 1\nMaxWait = 60000\n"
TENSORS = [("w", (40, 30)), ("b", (30,))]


class Fetch(ClusterCase):
    def setUp(self):
        self.c = cluster.owned_by(self, cluster.Cluster(BUILD, 3, node_conf=CONF))
        self.c.start()

    def join(self, tensors, dtype="float32", steps=8):
        """Nodes 0 and 1 train `steps` steps and pause; node 2 registers
        its own initialisation and fetches.  Returns the three clients
        and the fetch's result."""
        apis = [self.client(i) for i in range(3)]
        for i in (0, 1):
            apis[i].register(tensors, dtype=dtype)
            rng = np.random.default_rng(i)
            apis[i].flat[...] = (1.0 + rng.random(apis[i].flat.shape)).astype(apis[i].flat.dtype)
        for i in (0, 1):
            apis[i].wait_edges(1, timeout=15)

        def train(i, api):
            rng = np.random.default_rng(10 + i)
            for _ in range(steps):
                api.flat[...] += rng.normal(0, 0.01, api.flat.shape).astype(api.flat.dtype)
                api.step(sync=True)
        self.together(apis[:2], train)
        apis[2].register(tensors, dtype=dtype)
        own = np.full(apis[2].flat.shape, -5.0, dtype=apis[2].flat.dtype)
        apis[2].flat[...] = own
        apis[2].wait_edges(2, timeout=15)
        t0 = time.monotonic()
        r = apis[2].fetch(20000)
        print("fetch: %d bytes from peer %s in %.3f s (%.3f s seen by the trainer)"
              % (r.bytes, r.peer, r.seconds, time.monotonic() - t0))
        self.assertEqual(r.bytes, apis[2].flat.nbytes)
        keys = {self.c.keys[i][1][:8]: i for i in (0, 1)}
        self.assertIn(r.peer, keys, "the result names a neighbour: %r" % r.peer)
        src = keys[r.peer]
        self.assertTrue(np.array_equal(apis[2].flat.view(np.uint8),
                                       apis[src].flat.view(np.uint8)),
                        "the buffer is peer %d's model, bit for bit" % src)
        counters = cluster.status(self.c.sockets[2])["counters"]
        self.assertEqual(counters["fetches_done"], 1)
        self.assertEqual(cluster.status(self.c.sockets[src])["counters"]["fetches_served"], 1)
        return apis, r, src

    def test_a_joiner_starts_from_a_neighbours_model_and_converges(self):
        apis, r, src = self.join(TENSORS)
        other = 1 - src
        x = [a.flat.astype(np.float64) for a in apis]
        d_joiner = np.linalg.norm(x[2] - x[other])
        d_neighbour = np.linalg.norm(x[src] - x[other])
        print("fetch: joiner's distance to the other trainer %.4g (the neighbour's %.4g; "
              "its own initialisation's was %.4g)"
              % (d_joiner, d_neighbour, np.linalg.norm(-5.0 - x[other])))
        self.assertAlmostEqual(d_joiner, d_neighbour, places=9)
        total = sum(x)
        spread0 = max(np.linalg.norm(x[i] - total / 3) for i in range(3))
        self.together(apis, lambda i, api: [api.step(sync=True) for _ in range(40)])
        y = [a.flat.astype(np.float64) for a in apis]
        drift = np.max(np.abs(sum(y) - total)) / np.max(np.abs(total))
        spread1 = max(np.linalg.norm(y[i] - sum(y) / 3) for i in range(3))
        print("fetch: after 40 rounds, drift of the network's sum %.3g, spread %.4g -> %.4g"
              % (drift, spread0, spread1))
        self.assertLess(drift, 1e-6)
        self.assertLess(spread1, spread0 / 4)

    def test_a_float16_model_is_copied_exactly(self):
        self.join(TENSORS, dtype="float16", steps=3)

    def test_a_large_model_comes_in_many_chunks(self):
        apis, r, _ = self.join([("big", (600, 500))], steps=1)
        self.assertEqual(r.bytes, 600 * 500 * 4)

    def test_two_joiners_at_once_copy_the_trained_model(self):
        tensors = [("big", (600, 500))]
        apis = [self.client(i) for i in range(3)]
        apis[0].register(tensors)
        apis[0].flat[...] = np.random.default_rng(0).random(apis[0].flat.shape)
        for _ in range(3):
            apis[0].step()
        own = []
        for i in (1, 2):
            apis[i].register(tensors)
            apis[i].flat[...] = -float(i)
            own.append(apis[i].flat.copy())
        for api in apis:
            api.wait_edges(2, timeout=15)
        results = {}
        self.together(apis[1:], lambda i, api: results.__setitem__(i, api.fetch(20000)))
        print("fetch: two joiners at once: %s" % results)
        key0 = self.c.keys[0][1][:8]
        for i in (1, 2):
            self.assertTrue(np.array_equal(apis[i].flat, apis[0].flat),
                            "joiner %d holds node 0's model" % (i,))
        self.assertEqual(sorted(r.peer for r in results.values()), [key0, key0])
        self.assertEqual(cluster.status(self.c.sockets[0])["counters"]["fetches_served"], 2)

    def test_a_job_that_starts_keeps_its_own_model(self):
        apis = [self.client(i) for i in range(3)]
        for i, api in enumerate(apis):
            api.register(TENSORS)
            api.flat[...] = float(i)
        for api in apis:
            api.wait_edges(2, timeout=15)
        t0 = time.monotonic()
        r = apis[2].fetch(20000)
        took = time.monotonic() - t0
        print("fetch: no neighbour has stepped: %s in %.3f s" % (r, took))
        self.assertEqual((r.bytes, r.peer), (0, ""))
        self.assertLess(took, 5.0)      # at once, not at the time limit
        self.assertTrue(np.all(apis[2].flat == 2.0))
        counters = cluster.status(self.c.sockets[2])["counters"]
        self.assertEqual((counters["fetches_done"], counters["fetches_failed"]), (0, 0))

    def test_no_neighbour_with_the_model_times_out_and_changes_nothing(self):
        api = self.client(2)
        with self.assertRaises(gossipd.NotRegistered):
            api.fetch(1000)
        api.register(TENSORS)
        api.flat[...] = 3.0
        t0 = time.monotonic()
        with self.assertRaises(gossipd.DaemonError) as cm:
            api.fetch(700)
        took = time.monotonic() - t0
        print("fetch: no neighbour with the model: %s (after %.2f s)" % (cm.exception, took))
        self.assertEqual(cm.exception.code, -errno.ETIMEDOUT)
        self.assertIn("0 edge(s) up with this model", str(cm.exception))
        self.assertGreaterEqual(took, 0.6)
        self.assertTrue(np.all(api.flat == 3.0))
        counters = cluster.status(self.c.sockets[2])["counters"]
        self.assertEqual(counters["fetches_failed"], 1)
        api.step()   # the client and the daemon are usable afterwards


if __name__ == "__main__":
    BUILD = sys.argv.pop(1)
    unittest.main(verbosity=2)
