#!/usr/bin/env python3
"""Integration test of the local group (PROTOCOL.md 5.3, "Local group"):
2 real gossipd on loopback (tools/gossipcluster.py), 4 NumPy trainers on
each that register the same model with group=True, and take pure gossip
steps (STEP SYNC, exact gossip, no training).

- After each group step the 4 models of a machine are bitwise equal (the
  node's model copied into each buffer), and the network average (the
  mean over the machines of their members' mean) is what it was, to
  1e-5 relative (float32 rounding of the means);
- a member that pauses: its machine's group steps without it after
  LocalWait, its buffer untouched meanwhile; at its next step it takes
  the node's changes it missed (its pending Delta), so the 4 are equal
  again and the network average is conserved;
- a model that differs from the group's is refused with both summaries,
  nothing of the group changed.

Needs NumPy (exit 77, a meson skip, without it).

usage: test_local_group.py BUILD_DIR [unittest options]
"""
import errno
import sys
import threading
import time
import unittest

from daemonharness import np, cluster, gossipd  # noqa: E402 (exit 77 without NumPy)

BUILD = None
LOCAL_WAIT_MS = 1000
CONF = ("Method = exact\nGamma = 0.5\nMaxWait = 60000\nLocalWait = %d\n"
        % LOCAL_WAIT_MS)
TENSORS = [("w", (6, 5)), ("b", (5,))]
MEMBERS = 4
REL = 1e-5


class LocalGroup(unittest.TestCase):
    def setUp(self):
        self.c = cluster.owned_by(self, cluster.Cluster(BUILD, 2, node_conf=CONF))
        self.c.start()
        self.apis = [[self.client(d, k) for k in range(MEMBERS)] for d in range(2)]
        self.flats = []
        rng = np.random.default_rng(7)
        for d in range(2):
            row = []
            for api in self.apis[d]:
                arrays = api.register(TENSORS, group=True)
                for a in arrays:
                    a[...] = rng.standard_normal(a.shape) + 3 * d
                row.append(api.flat)
            self.flats.append(row)
        for d in range(2):
            self.assertEqual(cluster.status(self.c.sockets[d])["model"]["local_trainers"],
                             MEMBERS)
            self.apis[d][0].wait_edges(1, timeout=15)
        self.avg0 = self.network_average()

    def client(self, d, k):
        api = gossipd.Client(self.c.sockets[d], "trainer%d.%d" % (d, k), timeout=30)
        self.addCleanup(api.close)
        return api

    def network_average(self):
        """The mean over machines of the mean of their members."""
        return np.mean([np.mean([f.astype(np.float64) for f in row], axis=0)
                        for row in self.flats], axis=0)

    def group_step(self, skip=()):
        """One STEP SYNC from every trainer but (d, k) in skip, at once;
        returns the seconds each daemon's trainers waited (the longest)."""
        errors, took = [], [0.0, 0.0]
        barrier = threading.Barrier(2 * MEMBERS - len(skip))

        def run(d, k):
            try:
                barrier.wait(30)
                t0 = time.monotonic()
                self.apis[d][k].step(sync=True)
                took[d] = max(took[d], time.monotonic() - t0)
            except Exception as e:   # noqa: BLE001 (reported below)
                errors.append(e)
        threads = [threading.Thread(target=run, args=(d, k))
                   for d in range(2) for k in range(MEMBERS) if (d, k) not in skip]
        for t in threads:
            t.start()
        for t in threads:
            t.join(60)
        self.assertEqual(errors, [], self.c.tail_logs())
        return took

    def assert_equal_members(self, d, members=range(MEMBERS)):
        first = self.flats[d][members[0]]
        for k in members[1:]:
            self.assertEqual(self.flats[d][k].tobytes(), first.tobytes(),
                             "machine %d: trainer %d differs from trainer %d"
                             % (d, k, members[0]))

    def assert_conserved(self, when):
        now = self.network_average()
        drift = float(np.abs(now - self.avg0).max() / np.abs(self.avg0).max())
        self.assertLessEqual(drift, REL, "%s: the network average moved by %g (relative)"
                             % (when, drift))

    def machine_gap(self):
        return float(np.abs(self.flats[0][0].astype(np.float64) - self.flats[1][0]).max())

    def test_four_trainers_on_each_of_two_daemons_step_together(self):
        gap0 = self.machine_gap()
        for s in range(8):
            self.group_step()
            for d in range(2):
                self.assert_equal_members(d)
            self.assert_conserved("step %d" % s)
        # Gossip moved the machines' models towards each other.
        self.assertLess(self.machine_gap(), gap0 / 10, self.c.tail_logs())

    def test_a_paused_member_is_waited_for_localwait_then_catches_up(self):
        for s in range(2):
            self.group_step()
        self.assert_conserved("before the pause")
        paused = self.flats[0][3].copy()
        moved = False
        for s in range(3):
            took = self.group_step(skip={(0, 3)})
            # Machine 0 waited LocalWait for its paused trainer, no more
            # than a few times that (never for ever).
            self.assertGreaterEqual(took[0], 0.9 * LOCAL_WAIT_MS / 1000)
            self.assertLess(took[0], 10 * LOCAL_WAIT_MS / 1000)
            self.assert_equal_members(0, [0, 1, 2])
            self.assertEqual(self.flats[0][3].tobytes(), paused.tobytes(),
                             "the daemon wrote a paused trainer's buffer")
            moved = moved or not np.array_equal(self.flats[0][0], paused)
        self.assertTrue(moved)
        # Back: it takes what it missed, and the four are one again.
        self.group_step()
        self.assert_equal_members(0)
        self.assert_equal_members(1)
        self.assert_conserved("after the paused trainer's return")
        self.group_step()
        self.assert_conserved("a step later")

    def test_a_different_model_is_refused_and_the_group_unchanged(self):
        api = self.client(0, 9)
        with self.assertRaises(gossipd.DaemonError) as cm:
            api.register([("w", (6, 5)), ("b", (4,))], group=True)
        self.assertEqual(cm.exception.code, -errno.EINVAL)
        self.assertIn("not the local group's model: ours exact", str(cm.exception))
        with self.assertRaises(gossipd.DaemonError) as cm:
            api.register(TENSORS)
        self.assertEqual(cm.exception.code, -errno.EBUSY)
        self.assertIn("REGISTER with the group option to join it", str(cm.exception))
        self.assertEqual(cluster.status(self.c.sockets[0])["model"]["local_trainers"],
                         MEMBERS)
        # A member leaves (DETACH): the others step on without it.
        self.apis[0][3].detach()
        self.assertEqual(cluster.status(self.c.sockets[0])["model"]["local_trainers"],
                         MEMBERS - 1)
        self.flats[0].pop()
        self.avg0 = self.network_average()
        # Its three peers step without waiting for it.
        took = self.group_step(skip={(0, 3)})
        self.assertLess(took[0], 0.9 * LOCAL_WAIT_MS / 1000)
        self.assert_equal_members(0, [0, 1, 2])
        self.assert_conserved("after a member left")


if __name__ == "__main__":
    BUILD = sys.argv.pop(1)
    unittest.main()
