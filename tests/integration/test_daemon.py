#!/usr/bin/env python3
"""gossipd integration tests: real daemons on loopback with generated keys
and configs, real trainers (gossip-testtrainer) on their Unix sockets.

usage: test_daemon.py BUILD_DIR [unittest options]
"""
import json
import os
import signal
import socket
import struct
import subprocess
import sys
import time
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "..", "tools"))
import gossipcluster as cluster  # noqa: E402

BUILD = None
RING8 = "Method = powergossip\nRank = 4\nGamma = auto\nTopology = ring\nNodes = 8\n"


def poke(s, data):
    """Sends data, then reads until the daemon closes (or 5 s pass)."""
    with s:
        s.settimeout(5)
        try:
            s.sendall(data)
            s.shutdown(socket.SHUT_WR)
            while s.recv(4096):
                pass
        except OSError:
            pass


def dumps(c, tag):
    return [os.path.join(c.dir, "%s%d" % (tag, i)) for i in range(c.n)]


class Daemon(unittest.TestCase):
    def cluster(self, n, **kw):
        c = cluster.Cluster(BUILD, n, **kw)
        if not os.environ.get("GSP_KEEP_TMP"):
            self.addCleanup(c.remove)
        self.addCleanup(lambda: self.assertEqual(c.sanitizer_reports(), []))
        self.addCleanup(c.close)
        return c

    def test_ring_async_conserves_and_converges(self):
        """8 daemons, 8 trainers, 1000 asynchronous STEPs."""
        c = self.cluster(8, node_conf=RING8)
        c.start()
        init, final = dumps(c, "init"), dumps(c, "final")
        outs = c.run_trainers(lambda i: [
            "--data", "random:100x100,64x300,64", "--seed", "42",
            "--steps", "1000", "--wait-edges", "2",
            "--dump-initial", init[i], "--dump", final[i]])
        drift, e0, e1 = cluster.network_stats(
            [cluster.read_floats(p) for p in init],
            [cluster.read_floats(p) for p in final])
        self.assertLessEqual(drift, 1e-5, "network average moved")
        self.assertLessEqual(e1, e0 / 100, "consensus error fell only %g -> %g" % (e0, e1))
        for e in cluster.status(c.sockets[0])["edges"]:
            self.assertGreaterEqual(e["resyncs"], 1, e)   # one per session
        for rc, _, _ in outs:
            self.assertEqual(rc, 0)

    def sync_against_simulator(self, method, extra_conf, sim_args, steps=40):
        """SYNC STEPs replay gossip-sim: same data, same edge seeds
        (SimSeed/Index), same roles; the result agrees to float rounding."""
        conf = "Method = %s\nGamma = auto\nTopology = ring\nNodes = 8\n%s" % (
            method, extra_conf)
        c = self.cluster(8, node_conf=conf, sim_seed=7)
        c.start()
        final = dumps(c, "final")
        c.run_trainers(lambda i: ["--data", "random:20x10,30x5,5", "--seed", "7",
                                  "--steps", str(steps), "--sync", "--wait-edges", "2",
                                  "--dump", final[i]])
        prefix = os.path.join(c.dir, "sim")
        subprocess.run([c.bin("tools", "gossip-sim"), "--nodes", "8", "--method",
                        method, "--gamma", "auto", "--data", "random:20x10,30x5,5",
                        "--seed", "7", "--steps", str(steps), "--quiet", "--dump", prefix]
                       + sim_args, check=True, capture_output=True)
        for i in range(8):
            got = cluster.read_floats(final[i])
            want = cluster.read_floats("%s.%d" % (prefix, i))
            scale = max(abs(x) for x in want)
            diff = max(abs(a - b) for a, b in zip(got, want))
            self.assertLessEqual(diff, 1e-6 * scale, "node %d differs by %g" % (i, diff))

    def test_sync_matches_simulator_exact(self):
        self.sync_against_simulator("exact", "", [])

    def test_sync_matches_simulator_powergossip(self):
        self.sync_against_simulator("powergossip", "Rank = 2\n", ["--rank", "2"])

    def test_unlisted_key_refused(self):
        c = self.cluster(3, edges=[(0, 1)])
        c.start(nodes=[0, 1])
        # Node 2 knows node 0, but node 0 does not list node 2's key.
        c.edges = [(0, 1), (2, 0)]
        c.start(nodes=[2])
        cluster.eventually(
            lambda: cluster.status(c.sockets[0])["counters"]["hs_refused"] >= 1)
        st = cluster.status(c.sockets[0])
        self.assertGreaterEqual(st["counters"]["hs_refused"], 1)
        self.assertIn("is not a configured peer", c.log(0))
        self.assertEqual([e["state"] for e in st["edges"]], ["idle"])

    def test_fingerprint_mismatch_refused(self):
        c = self.cluster(2)
        c.start(nodes=[0], node_conf="Rank = 1\n")
        c.start(nodes=[1], node_conf="Rank = 3\n")
        procs = [c.trainer(i, "--data", "random:30x30", "--steps", "1",
                           "--wait-edges", "1") for i in range(2)]
        cluster.eventually(lambda: all("model mismatch" in c.log(i) for i in range(2)))
        for i in range(2):
            self.assertIn("model mismatch", c.log(i))
        self.assertIn("powergossip r1", c.log(0))
        self.assertIn("powergossip r3", c.log(0))
        for p in procs:
            cluster.kill(p)

    def test_garbage_closes_only_that_connection(self):
        c = self.cluster(3, node_conf="Gamma = 1\n")
        c.start()
        procs = [c.trainer(i, "--data", "random:200x100", "--steps", "3000",
                           "--sync", "--wait-edges", "2") for i in range(3)]
        self.wait_rounds(c, 0, 20)
        before = cluster.status(c.sockets[0])
        attacks = [
            b"\x00\x00\x00\x00",                       # zero length
            b"\xff\xff\xff\x7f" + b"x" * 64,           # huge length prefix
            b"\x10\x00\x00\x00\x10\x00",               # truncated, then EOF
            os.urandom(300),                            # garbage
            struct.pack("<I", 111) + b"\x10" + os.urandom(110),  # forged HS_INIT
        ]
        for data in attacks:
            poke(socket.create_connection(("127.0.0.1", c.ports[0]), timeout=5), data)
        for data in [b"\x00\x00\x00\x00", b"\xff\xff\xff\xff", os.urandom(64),
                     struct.pack("<I", 3) + b"\x44\x00\x00"]:
            s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            s.connect(c.sockets[0])
            poke(s, data)
        self.wait_rounds(c, 0, before["edges"][0]["round"] + 20)
        after = cluster.status(c.sockets[0])
        self.assertGreater(after["counters"]["rx_malformed"] + after["counters"]["hs_refused"],
                           before["counters"]["rx_malformed"] + before["counters"]["hs_refused"])
        self.assertGreater(after["counters"]["api_malformed"], before["counters"]["api_malformed"])
        for e in after["edges"]:
            self.assertEqual(e["state"], "up")
            self.assertEqual(e["generation"], before["edges"][0]["generation"])
        for p in procs:
            cluster.kill(p)

    def test_other_major_version_refused(self):
        """An HS_INIT of protocol 2.0 is a policy reject (PROTOCOL.md 3):
        counted as version_mismatch, not as malformed input."""
        c = self.cluster(2)
        c.start()
        self.assertTrue(cluster.eventually(lambda: "session up" in c.log(0)))
        before = cluster.status(c.sockets[0])["counters"]
        hs_init = struct.pack("<IBH", 111, 0x10, 0x0200) + os.urandom(108)
        poke(socket.create_connection(("127.0.0.1", c.ports[0]), timeout=5), hs_init)
        self.assertTrue(cluster.eventually(
            lambda: cluster.status(c.sockets[0])["counters"]["version_mismatch"] == 1))
        after = cluster.status(c.sockets[0])
        self.assertEqual(after["counters"]["rx_malformed"], before["rx_malformed"])
        self.assertIn("it speaks protocol 2.0", c.log(0))
        self.assertEqual([e["state"] for e in after["edges"]], ["idle"])

    def wait_rounds(self, c, i, rounds, timeout=30):
        def reached():
            st = cluster.status(c.sockets[i])
            return st["edges"] and all(e["round"] >= rounds for e in st["edges"])
        if not cluster.eventually(reached, timeout):
            self.fail("edges of node %d did not reach round %d:\n%s"
                      % (i, rounds, c.tail_logs()))

    def test_trainer_death_then_new_trainer(self):
        c = self.cluster(2)
        c.start()
        p0 = c.trainer(0, "--data", "random:50x50", "--steps", "100000", "--sync",
                       "--wait-edges", "1")
        p1 = c.trainer(1, "--data", "random:50x50", "--steps", "100000", "--sync",
                       "--wait-edges", "1")
        self.wait_rounds(c, 0, 10)
        before = cluster.status(c.sockets[0])["edges"][0]
        cluster.kill(p0)
        cluster.eventually(lambda: "detaching its model" in c.log(0))
        self.assertIn("detaching its model", c.log(0))
        st = cluster.status(c.sockets[0])
        self.assertFalse(st["model"]["registered"])
        # Counters (metrics) only grow: the detached model's counts stay.
        for key in ("rounds", "exact_bytes", "message_bytes", "tx_bytes"):
            self.assertGreaterEqual(st["edges"][0][key], before[key], key)
            self.assertGreater(st["edges"][0][key], 0, key)
        cluster.kill(p1)
        # A new pair of trainers registers and gossips again.
        outs = c.run_trainers(lambda i: ["--data", "random:50x50", "--steps", "20",
                                         "--sync", "--wait-edges", "1"])
        self.assertTrue(all(rc == 0 for rc, _, _ in outs))

    def test_average_and_one_model_per_daemon(self):
        c = self.cluster(2, node_conf="Rank = 2\n")
        c.start()
        init, final = dumps(c, "init"), dumps(c, "final")
        first = [c.trainer(i, "--data", "random:40x30", "--steps", "5", "--sync",
                           "--wait-edges", "1", "--average", "1e-4",
                           "--average-time", "20000", "--dump-initial", init[i],
                           "--dump", final[i]) for i in range(2)]
        # A second trainer on a daemon that already has a model is refused.
        cluster.eventually(
            lambda: cluster.status(c.sockets[0])["model"]["registered"])
        second = c.trainer(0, "--data", "random:40x30", "--steps", "1")
        out, err = second.communicate(timeout=30)
        self.assertEqual(second.returncode, 1)
        self.assertIn("already registered", err)
        for p in first:
            out, err = p.communicate(timeout=60)
            self.assertEqual(p.returncode, 0, err)
            self.assertRegex(out, r"average rounds [1-9][0-9]* estimate \S+ reached yes")
        drift, e0, e1 = cluster.network_stats(
            [cluster.read_floats(p) for p in init],
            [cluster.read_floats(p) for p in final])
        self.assertLessEqual(drift, 1e-5)
        self.assertLessEqual(e1, 1e-4 * e0)

    def test_sighup_adds_and_removes_peers(self):
        c = self.cluster(3, edges=[(0, 1)])
        c.start(nodes=[0, 1])
        c.edges = [(0, 1), (0, 2)]
        c.start(nodes=[2])            # node 2 lists node 0; node 0 not yet
        self.assertTrue(cluster.eventually(
            lambda: cluster.status(c.sockets[0])["counters"]["hs_refused"] >= 1))
        c.write_config(0)             # now node 0 lists 1 and 2
        c.procs[0].send_signal(signal.SIGHUP)

        def states(i):
            return sorted(e["state"] for e in cluster.status(c.sockets[i])["edges"])
        self.assertTrue(cluster.eventually(lambda: states(0) == ["idle", "idle"]),
                        states(0))
        self.assertIn("reload: peer", c.log(0))
        c.edges = [(0, 2)]            # and now node 1 is dropped
        c.write_config(0)
        c.procs[0].send_signal(signal.SIGHUP)
        self.assertTrue(cluster.eventually(lambda: states(0) == ["idle"]), states(0))
        self.assertTrue(cluster.eventually(lambda: "GOODBYE (reason 6)" in c.log(1)))

    def test_endpoint_by_name(self):
        """Endpoints may be DNS names: "localhost" resolves through
        /etc/hosts (no DNS traffic), and gossipd tries each address."""
        c = self.cluster(2)
        c.endpoint_host = "localhost"
        c.start()
        self.assertTrue(cluster.eventually(
            lambda: all("session up" in c.log(i) for i in range(2))),
            c.tail_logs())
        self.assertIn("Endpoint = localhost:", open(c.write_config(0)).read())

    def test_status_is_utf8_with_a_latin1_socket_path(self):
        """A socket path that is not UTF-8 still gives a status document
        that gossipctl (jansson, strict UTF-8) parses, with U+FFFD."""
        c = self.cluster(1, edges=[])
        conf = c.write_config(0)
        path = os.fsencode(c.sockets[0]) + b"\xe9"
        with open(conf, "rb") as f:
            text = f.read().replace(os.fsencode(c.sockets[0]), path)
        with open(conf, "wb") as f:
            f.write(text)
        with open(c.logs[0], "ab") as log:
            c.procs[0] = subprocess.Popen(
                [c.bin("daemon", "gossipd"), "--config", conf], stdout=log,
                stderr=log, env=dict(os.environ, NOTIFY_SOCKET=c.notify_path))
        c.wait_ready(1)
        out = subprocess.run([os.fsencode(c.bin("tools", "gossipctl", "gossipctl")),
                              b"status", b"--json", b"--socket", path],
                             capture_output=True, timeout=10)
        self.assertEqual(out.returncode, 0, out.stderr)
        doc = json.loads(out.stdout)
        self.assertEqual(doc["socket"], c.sockets[0] + "\ufffd")

    def test_sigterm(self):
        c = self.cluster(2)
        c.start()
        cluster.eventually(lambda: "session up" in c.log(1))
        rc, seconds = c.stop(0)
        self.assertEqual(rc, 0)
        self.assertLess(seconds, 2.0)
        cluster.eventually(lambda: "GOODBYE (reason 1)" in c.log(1), 5)
        self.assertIn("GOODBYE (reason 1)", c.log(1))


if __name__ == "__main__":
    BUILD = os.path.abspath(sys.argv.pop(1))
    unittest.main(verbosity=2)
