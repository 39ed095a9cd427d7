#!/usr/bin/env python3
"""The status document's traffic counters are right (suite 'integration'):
a 3-ring of real daemons with tests/harness/faultproxy.py (no resets) on every
link, pure-gossip trainers (gossip-testtrainer), every STEP on the
thread pool and slowed (GSP_OFFLOAD_FLOATS=0, GSP_TEST_STEP_DELAY_MS),
so that a STATUS often comes while the engine is busy.

- payload_tx_bytes, read again and again while the trainers step, is the
  payload minimum of docs/ALGORITHM.md for the rounds the edge sent:
  round t sends 4 * (sum r * m) bytes for odd t and 4 * (sum r * k) for
  even t over the matrices, plus every 1-D tensor whole.  With C rounds
  completed ("rounds"), the engine has sent C or C + 1.  (Before the
  fix STATUS showed the count of the last STATUS that found the engine
  idle: 0 here, or far behind.)
- Once the trainers are done, wire_tx_bytes of node i's edge to j equals
  the bytes the proxy read from i on the connections between i and j
  (all of them: duplicates of a simultaneous open, handshakes, PINGs),
  except what a connection reset (a daemon closing a replaced session
  with bytes unread) dropped before the proxy read it: then a few KB;
  wire_rx_bytes of j's edge to i is at most that (a link that closes
  leaves what came after its GOODBYE unread); and the wire carries at
  least the payload plus 36 bytes per ROUND (length header 4, AEAD tag
  16, ROUND header 16).

usage: test_bytes.py BUILD_DIR [unittest options]
"""
import os
import subprocess
import sys
import time
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "..", "tools"))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "harness"))
import faultproxy  # noqa: E402
import gossipcluster as cluster  # noqa: E402

BUILD = None
N = 3
RANK = 4
MATRICES = [(64, 48), (32, 64)]   # m x k: the two shapes differ
VECTORS = [16]
DATA = "random:" + ",".join(["%dx%d" % mk for mk in MATRICES] + [str(v) for v in VECTORS])
ROUND_OVERHEAD = 4 + 16 + 16     # frame length, AEAD tag, ROUND header
LOST_PER_RESET = 4096            # bytes in flight when a connection is reset


def round_bytes(t):
    """ALGORITHM.md section 3: what round t sends."""
    floats = sum(VECTORS)
    for m, k in MATRICES:
        floats += min(RANK, m, k) * (m if t % 2 else k)
    return 4 * floats


def payload(rounds):
    """Bytes of rounds 1 .. rounds."""
    odd, even = (rounds + 1) // 2, rounds // 2
    return odd * round_bytes(1) + even * round_bytes(2)


class Bytes(unittest.TestCase):
    def setUp(self):
        for k, v in (("GSP_OFFLOAD_FLOATS", "0"), ("GSP_TEST_STEP_DELAY_MS", "15")):
            old = os.environ.get(k)
            os.environ[k] = v
            self.addCleanup(lambda k=k, old=old: os.environ.pop(k) if old is None
                            else os.environ.__setitem__(k, old))

    def edges(self, c):
        """{(i, j): node i's edge to j} from every node's status."""
        out = {}
        for i in range(N):
            for e, j in zip(cluster.status(c.sockets[i])["edges"], c.neighbours(i)):
                out[(i, j)] = e
        return out

    def test_payload_and_wire(self):
        proxy = faultproxy.FaultProxy(seed=3, mean_frames=0, max_resets=0,
                                      connect_wait=3.0)
        c = cluster.owned_by(self, cluster.Cluster(
            BUILD, N, proxy=proxy,
            node_conf="Method = powergossip\nRank = %d\nGamma = auto\nTopology = ring\n"
                      "Nodes = %d\n" % (RANK, N)))
        c.start()
        procs = [c.trainer(i, "--data", DATA, "--steps", "150", "--compute-ms", "1",
                           "--wait-edges", "2") for i in range(N)]
        self.addCleanup(lambda: [cluster.kill(p) for p in procs if p.poll() is None])
        # While they step: payload against the rounds counted on the loop.
        looks = 0
        deadline = time.monotonic() + 60
        while any(p.poll() is None for p in procs) and time.monotonic() < deadline:
            try:
                edges = self.edges(c)
            except (OSError, cluster.gossipd.GossipdError):
                break                        # a trainer detached meanwhile
            for (i, j), e in edges.items():
                if e["state"] != "up" or e["rounds"] == 0:
                    continue
                looks += 1
                c_ = e["rounds"]
                self.assertIn(e["payload_tx_bytes"], (payload(c_), payload(c_ + 1)),
                              "node %d's edge to %d: %d rounds completed, payload "
                              "%d; expected %d or %d" % (
                                  i, j, c_, e["payload_tx_bytes"], payload(c_),
                                  payload(c_ + 1)))
            # The next look once a trainer ends, or within 10 ms.
            running = [p for p in procs if p.poll() is None]
            if running:
                try:
                    running[0].wait(timeout=0.01)
                except subprocess.TimeoutExpired:
                    pass
        for p in procs:
            out, err = p.communicate(timeout=60)
            self.assertEqual(p.returncode, 0, err + c.tail_logs())
        self.assertGreater(looks, 10, "too few looks at running edges")
        # Done (DRAIN, DETACH): the counts stay.  An edge may end with
        # our last round sent and taken back (the peer ended before it).
        edges = self.edges(c)
        for (i, j), e in edges.items():
            self.assertEqual(e["generation"], 1, (i, j, e))
            self.assertIn(e["payload_tx_bytes"], (payload(e["rounds"]),
                                                  payload(e["rounds"] + 1)), (i, j, e))
            self.assertEqual(e["message_bytes"], e["payload_tx_bytes"])
            self.assertGreaterEqual(e["wire_tx_bytes"], e["payload_tx_bytes"] +
                                    ROUND_OVERHEAD * e["rounds"], (i, j, e))

        def written_matches(i, j, e):
            """Exact, unless a connection between them ended on a reset
            (a daemon that closes a replaced session with bytes unread):
            then what i wrote last may have been dropped unread, up to a
            few frames."""
            lost = e["wire_tx_bytes"] - proxy.sent(i, j)
            return lost == 0 or 0 < lost <= LOST_PER_RESET * proxy.errors(i, j)

        def wire_matches():
            nonlocal edges
            edges = self.edges(c)
            return all(written_matches(i, j, e) and
                       edges[(j, i)]["wire_rx_bytes"] <= proxy.sent(i, j)
                       for (i, j), e in edges.items())
        # A PING may be on its way between the two reads: look again.
        ok = cluster.eventually(wire_matches, 10, 0.05)
        self.assertTrue(ok, "\n".join(
            "%d->%d: wire_tx %d, proxy read %d, wire_rx at %d %d, resets %d" % (
                i, j, e["wire_tx_bytes"], proxy.sent(i, j), j,
                edges[(j, i)]["wire_rx_bytes"], proxy.errors(i, j))
            for (i, j), e in sorted(edges.items())))
        print("bytes: %d looks while stepping; per edge end: rounds %s, "
              "wire/payload %s; %d connections, %d ended on a reset, %d bytes "
              "written never read" % (
                  looks, sorted({e["rounds"] for e in edges.values()}),
                  " ".join("%.4f" % (e["wire_tx_bytes"] / e["payload_tx_bytes"])
                           for _, e in sorted(edges.items())),
                  proxy.connections, sum(proxy.link_errors.values()),
                  sum(e["wire_tx_bytes"] - proxy.sent(i, j) for (i, j), e in edges.items())))


if __name__ == "__main__":
    BUILD = os.path.abspath(sys.argv.pop(1))
    unittest.main(verbosity=2)
