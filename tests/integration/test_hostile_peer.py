#!/usr/bin/env python3
"""Hostile input on peer links, with real daemons on loopback: a captured
HS_INIT replayed to its responder after that responder restarted, and
HS_INITs from senders that do not know the responder's key (mac1).

The attack of issue 13: node 0 dials node 1 (through tests/harness/faultproxy.py,
which forwards unchanged and keeps each connection's first frame, the
HS_INIT).  Then node 0 stops dialing (a reload without the Endpoint) and
node 1 restarts and dials node 0 itself, so the live session is one whose
HS_INIT node 1 sent, and node 1 has received no handshake from node 0
since it started.  The captured HS_INIT, sent to node 1 again, must not
replace that session: node 1 knows its timestamp from its state file
(hs_replayed, closed without an answer), and would not take the session
as established before key confirmation anyway.

usage: test_hostile_peer.py BUILD_DIR [unittest options]
"""
import os
import signal
import socket
import sys
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "..", "tools"))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "harness"))
import faultproxy  # noqa: E402
import gossipcluster as cluster  # noqa: E402

BUILD = None
P = cluster.gossipd.protocol
HS_INIT_FRAME = 4 + 129                         # without a certificate
HS_INIT_TYPE_VERSION = bytes([0x10, P.VERSION_MINOR, P.VERSION_MAJOR])


def edge(c, i):
    return cluster.status(c.sockets[i])["edges"][0]


def linked(c, i):
    """Node i's edge has a session (no model is registered: idle)."""
    return edge(c, i)["state"] in ("idle", "up")


class HostilePeer(unittest.TestCase):
    def linked_pair(self):
        """Two nodes, node 0 dialing node 1 through a proxy that forwards
        unchanged and keeps each connection's first frame; linked."""
        proxy = faultproxy.FaultProxy(mean_frames=0, max_resets=0)
        c = cluster.owned_by(self, cluster.Cluster(BUILD, 2, proxy=proxy))
        c.listen_only = {1}
        c.start()
        self.assertTrue(cluster.eventually(lambda: linked(c, 0) and linked(c, 1)),
                        c.tail_logs())
        return c, proxy

    def test_replayed_hs_init_after_restart(self):
        c, proxy = self.linked_pair()
        captured = proxy.first_frames[(0, 1)][-1]
        self.assertEqual(len(captured), HS_INIT_FRAME)
        self.assertEqual(captured[4], 0x10)

        # Node 0 stops dialing; node 1 restarts and dials node 0.
        c.listen_only = {0}
        c.write_config(0)
        c.procs[0].send_signal(signal.SIGHUP)
        self.assertTrue(cluster.eventually(lambda: "reload:" in c.log(0)))
        c.stop(1)
        c.start(nodes=[1])
        self.assertTrue(cluster.eventually(
            lambda: "session up (we connected)" in c.log(1) and linked(c, 0)
            and linked(c, 1)), c.tail_logs())
        before = [cluster.status(s) for s in c.sockets]
        ups = [c.log(i).count("session up") for i in range(2)]

        # The replay, straight to node 1: read until it closes the
        # connection, or until an HS_RESP (51 bytes) has come.
        with socket.create_connection(("127.0.0.1", c.ports[1]), timeout=10) as s:
            s.sendall(captured)
            answer = b""
            while len(answer) < 4 + 51:
                data = s.recv(4096)
                if not data:
                    break
                answer += data
            after = [cluster.status(st) for st in c.sockets]
        # The live session is the one it was, at both ends.
        self.assertEqual([c.log(i).count("session up") for i in range(2)], ups,
                         c.tail_logs())
        for b, a in zip(before, after):
            self.assertEqual(a["edges"][0]["state"], b["edges"][0]["state"])
            self.assertEqual(a["edges"][0]["resyncs"], b["edges"][0]["resyncs"])
            self.assertIsNone(a["edges"][0]["last_error"])
        self.assertEqual(after[0]["counters"]["links_closed"],
                         before[0]["counters"]["links_closed"])
        for i in range(2):
            self.assertNotIn("GOODBYE replaced", c.log(i))
            self.assertNotIn("replaced by a newer session", c.log(i))
        # Refused before any answer (its timestamp is in node 1's state
        # file), and counted as a replay.
        self.assertEqual(answer, b"")
        self.assertEqual(after[1]["counters"]["hs_replayed"],
                         before[1]["counters"]["hs_replayed"] + 1)

    def test_hs_init_without_our_key(self):
        """HS_INITs whose mac1 does not match the responder's key (random
        bytes of the right size, type and version; a genuine HS_INIT sent
        to the other node; a genuine one with one mac1 bit flipped) are
        refused before any Diffie-Hellman: no answer, hs_mac1_bad counts
        each, and neither hs_refused nor the live session moves."""
        c, proxy = self.linked_pair()
        captured = proxy.first_frames[(0, 1)][-1]      # node 0's, to node 1
        self.assertEqual(len(captured), HS_INIT_FRAME)
        self.assertEqual(captured[4:7], HS_INIT_TYPE_VERSION)
        flipped = bytearray(captured)
        flipped[-1] ^= 1
        attacks = [(1, captured[:7] + os.urandom(HS_INIT_FRAME - 7)),
                   (0, captured), (1, bytes(flipped))]
        before = [cluster.status(s)["counters"] for s in c.sockets]
        for node, frame in attacks:
            with socket.create_connection(("127.0.0.1", c.ports[node]), timeout=10) as s:
                s.sendall(frame)
                self.assertEqual(s.recv(4096), b"", "node %d answered" % node)
        after = [cluster.status(s)["counters"] for s in c.sockets]
        self.assertEqual(after[1]["hs_mac1_bad"], before[1]["hs_mac1_bad"] + 2)
        self.assertEqual(after[0]["hs_mac1_bad"], before[0]["hs_mac1_bad"] + 1)
        for b, a in zip(before, after):
            for k in ("hs_refused", "hs_replayed", "version_mismatch", "rx_malformed"):
                self.assertEqual(a[k], b[k], k)
        self.assertTrue(linked(c, 0) and linked(c, 1))
        self.assertIn("mac1 does not match our public key", c.log(1))


if __name__ == "__main__":
    BUILD = os.path.abspath(sys.argv.pop(1))
    unittest.main(verbosity=2)
