#!/usr/bin/env python3
"""Peers that come after REGISTER (a member's neighbours, a SIGHUP's new
[Peer]): two gossipd on loopback start with no peer at all, a
pure-gossip trainer registers a 64x64 model (exact gossip: every ROUND
carries 16 KiB, four times the frame cap of a link that carries no
edge) on each, and only then does a reload give each the other as its
peer.  The link must let the ROUNDs through: rounds flow, no link is
closed as malformed, the trainers' average holds and they agree.  With
the frame cap sized from the edges present at REGISTER (none), every
ROUND closed its link ("Message too long").

usage: test_late_peers.py BUILD_DIR [unittest options]
"""
import os
import signal
import sys
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "..", "tools"))
import gossipcluster as cluster  # noqa: E402

BUILD = None


class LatePeers(unittest.TestCase):
    def test_rounds_flow_on_peers_added_after_register(self):
        c = cluster.owned_by(self, cluster.Cluster(
            BUILD, 2, edges=[], node_conf="Method = exact\nGamma = 1.0\n"))
        c.start()
        dumps = [(os.path.join(c.dir, "init%d" % i), os.path.join(c.dir, "final%d" % i))
                 for i in range(2)]
        procs = [c.trainer(i, "--data", "random:64x64", "--wait-edges", "1", "--steps",
                           "100", "--compute-ms", "5", "--dump-initial", dumps[i][0],
                           "--dump", dumps[i][1]) for i in range(2)]
        self.addCleanup(lambda: [cluster.kill(p) for p in procs])
        self.assertTrue(cluster.eventually(
            lambda: all(cluster.status(c.sockets[i])["model"]["registered"]
                        for i in range(2)), timeout=20), c.tail_logs())
        c.edges = [(0, 1)]
        for i in range(2):
            c.write_config(i)
            c.procs[i].send_signal(signal.SIGHUP)
        for i, p in enumerate(procs):
            out, err = p.communicate(timeout=120)
            self.assertEqual(p.returncode, 0, "trainer %d: %s\n%s" % (i, err, c.tail_logs()))
        for i in range(2):
            st = cluster.status(c.sockets[i])
            self.assertEqual(st["counters"]["rx_malformed"], 0, c.tail_logs())
            self.assertNotIn("Message too long", c.log(i))
        drift, rms0, rms1 = cluster.measure([cluster.read_floats(d[0]) for d in dumps],
                                            [cluster.read_floats(d[1]) for d in dumps])
        print("late peers: drift %.2e, consensus error %.3g -> %.3g" % (drift, rms0, rms1))
        self.assertLess(drift, 1e-5)
        self.assertLess(rms1, rms0 / 2)


if __name__ == "__main__":
    BUILD = os.path.abspath(sys.argv.pop(1))
    unittest.main(verbosity=2)
