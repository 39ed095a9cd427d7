#!/usr/bin/env python3
"""tools/gossipcluster.py keeps reading its NOTIFY_SOCKET for the whole
run.  Before, nothing read it after start-up: with 64 daemons the
datagram queue filled and every daemon's sd_notify("STOPPING=1") blocked,
so tools/gossip-cluster --nodes 64 spent minutes stopping.  Here the
queue is flooded with more datagrams than a socket holds
(net.unix.max_dgram_qlen, 512 by default), then every daemon must stop
within 2 s and its STOPPING=1 arrive.  Also: the graphs of every
topology gossipd knows.

usage: test_cluster_notify.py BUILD_DIR
"""
import os
import socket
import sys
import threading
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "..", "tools"))
import gossipcluster as gc  # noqa: E402

BUILD = sys.argv.pop(1) if len(sys.argv) > 1 else "build"


class ClusterNotify(unittest.TestCase):
    def test_flooded_notify_socket_does_not_block_stopping(self):
        c = gc.Cluster(os.path.abspath(BUILD), 3)
        try:
            c.start()
            flood = 3000
            s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
            s.settimeout(10)        # a queue nobody drains blocks here
            for _ in range(flood):
                s.sendto(b"STATUS=flood", c.notify_path)
            s.close()
            self.assertTrue(gc.eventually(
                lambda: c.notify.counts.get("STATUS=flood", 0) == flood, 10))
            for i in range(c.n):
                rc, seconds = c.stop(i)
                self.assertEqual(rc, 0)
                self.assertLess(seconds, 2.0)
            self.assertTrue(gc.eventually(
                lambda: c.notify.counts.get("STOPPING=1", 0) == c.n, 5))
        finally:
            c.close()
            c.remove()

    def test_start_survives_a_stalled_drain(self):
        """The drain thread stalled (as on a loaded machine, where it waits
        for a CPU) while 24 daemons start: every READY=1 must still
        arrive.  Started all at once, 13 or more of them found the queue
        full (net.unix.max_dgram_qlen 10) and were lost; in batches of
        gc.START_BATCH they wait in the queue."""
        c = gc.Cluster(os.path.abspath(BUILD), 24, edges=[])
        held = threading.Event()

        def answers(i):
            try:
                gc.status(c.sockets[i])
                return True
            except Exception:
                return False

        def sent_ready():
            # A daemon answers once it is in its loop, after its READY=1:
            # every daemon started so far has queued its datagram.
            started = [i for i in range(c.n) if c.procs[i] is not None]
            return len(started) >= min(gc.START_BATCH, c.n) and all(map(answers, started))

        def stall():
            with c.notify.cond:
                held.set()
                gc.eventually(sent_ready, 60)
        t = threading.Thread(target=stall)
        try:
            t.start()
            held.wait()
            c.start()
            self.assertEqual(c.notify.counts.get("READY=1", 0), c.n)
        finally:
            t.join()
            c.close()
            c.remove()

    def test_topologies(self):
        self.assertEqual(gc.edges_of("ring", 4), [(0, 1), (1, 2), (2, 3), (3, 0)])
        self.assertEqual(len(gc.edges_of("complete", 5)), 10)
        torus = gc.edges_of("torus", 16)             # 4 x 4: degree 4
        self.assertEqual(len(torus), 32)
        self.assertEqual(gc.torus_shape(12), (3, 4))
        with self.assertRaises(ValueError):
            gc.edges_of("torus", 7)
        expo = gc.edges_of("exponential", 8)         # +-1, +-2, 4: degree 5
        deg = [sum(i in e for e in expo) for i in range(8)]
        self.assertEqual(deg, [5] * 8)
        self.assertIn((0, 4), expo)


if __name__ == "__main__":
    unittest.main()
