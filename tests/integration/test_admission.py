#!/usr/bin/env python3
"""Admission by certificate with real daemons on loopback (issue 36, 1 and
7; PROTOCOL.md 4.2, "Admission" and "Keyless dial"), certificates made
with gossipctl ca-genkey, cert-issue and revoke:

- three daemons under one Authority: A lists only B's address (no key),
  B lists nobody, C is in nobody's list and dials A by its address
  alone.  A learns B's key from B's certificate, A admits C and B admits
  A by theirs: the edges A-B and A-C form, and pure-gossip trainers on
  the three keep the network average (drift <= 1e-5) while they agree;
- while those trainers run, three more daemons try to join A: one whose
  certificate has expired, one whose key A's revocation list names, one
  certified by another authority.  Each is refused, counted under its
  reason, gets no slot at A, and A's two edges keep their generation
  while their rounds keep advancing;
- A stopped and started again while the trainers step: C is admitted
  again and B's key learned again, and the records of both edges (kept
  aside while A had no slot, or no key, for them) continue their
  generations at both ends; the average holds.

usage: test_admission.py BUILD_DIR [unittest options]
"""
import array
import os
import re
import signal
import subprocess
import sys
import time
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "..", "tools"))
import gossipcluster as cluster  # noqa: E402

BUILD = None
DATA = "random:64x64"
A, B, C, EXPIRED, REVOKED, FOREIGN = range(6)
# The expired certificate's lifetime: valid when its daemon starts (it
# checks its own), expired when it dials.
SHORT_S = 3


def floats(path):
    a = array.array("f")
    with open(path, "rb") as f:
        a.frombytes(f.read())
    return a


class Admission(unittest.TestCase):
    def gossipctl(self, *args, stdin=None):
        exe = os.path.join(BUILD, "tools", "gossipctl", "gossipctl")
        inp = open(stdin) if stdin else None
        try:
            out = subprocess.run([exe] + list(args), stdin=inp, capture_output=True,
                                 text=True, timeout=30)
        finally:
            if inp:
                inp.close()
        self.assertEqual(out.returncode, 0, out.stderr)
        return out.stdout

    def write(self, name, text):
        path = os.path.join(self.c.dir, name)
        with open(path, "w") as f:
            f.write(text)
        return path

    def issue(self, ca_key, i, name, *validity):
        """Node i's certificate from ca_key, in a file; its path."""
        key = self.c.keys[i][0]
        signing = self.gossipctl("pubkey", "--signing", stdin=key).strip()
        text = self.gossipctl("cert-issue", "--ca", ca_key, "--name", name,
                              "--pubkey", self.c.keys[i][1], "--signing-key",
                              signing, *validity)
        return self.write("n%d.cert" % i, text)

    def config(self, i, peers=(), **kw):
        """Node i's config: [Node], [Cluster] (Authority of the node's
        ca, its Certificate, RevocationList if given) and peers ((key or
        None, endpoint) pairs)."""
        c = self.c
        lines = ["[Node]", "ListenAddress = 127.0.0.1:%d" % c.ports[i],
                 "PrivateKeyFile = %s" % c.keys[i][0], "Socket = %s" % c.sockets[i],
                 "LogLevel = debug", "Gamma = 1.0", "Method = exact",
                 "[Cluster]", "Authority = %s" % self.ca_pub[i],
                 "Certificate = %s" % self.certs[i]]
        if i in self.revoked_list:
            lines.append("RevocationList = %s" % self.revoked_list[i])
        for key, endpoint in peers:
            lines.append("[Peer]")
            if key:
                lines.append("PublicKey = %s" % key)
            lines.append("Endpoint = %s" % endpoint)
        return self.write("n%d.conf" % i, "\n".join(lines) + "\n")

    def setUp(self):
        self.c = c = cluster.owned_by(self, cluster.Cluster(BUILD, 6, edges=[]))
        ca = self.write("ca.key", self.gossipctl("ca-genkey"))
        other = self.write("other.key", self.gossipctl("ca-genkey"))
        pub = self.gossipctl("pubkey", "--ca", stdin=ca).strip()
        self.ca_pub = [pub] * 5 + [self.gossipctl("pubkey", "--ca", stdin=other).strip()]
        self.certs = [self.issue(ca, i, "node-%s" % "abc"[i]) for i in (A, B, C)]
        self.short_issued = time.time()
        self.certs.append(self.issue(ca, EXPIRED, "short-lived", "--seconds", str(SHORT_S)))
        self.certs.append(self.issue(ca, REVOKED, "revoked"))
        self.certs.append(self.issue(other, FOREIGN, "foreign"))
        self.revoked_list = {A: self.write("revoked", self.gossipctl(
            "revoke", "--ca", ca, "--serial", "1", c.keys[REVOKED][1]))}
        a_addr = "127.0.0.1:%d" % c.ports[A]
        peers = {A: [(None, "127.0.0.1:%d" % c.ports[B])], C: [(None, a_addr)]}
        # gossipcluster starts the daemons; the configs are the test's.
        c.write_config = lambda i, **kw: self.config(i, peers.get(i, ()))

    def edges(self, i):
        return cluster.status(self.c.sockets[i])["edges"]

    def linked(self):
        e = [self.edges(i) for i in (A, B, C)]
        return (len(e[0]) == 2 and len(e[1]) == 1 and len(e[2]) == 1 and
                all(x["state"] in ("idle", "up") for s in e for x in s))

    def test_admission_and_refusals(self):
        c = self.c
        c.start(nodes=[A, B, C, EXPIRED, REVOKED, FOREIGN])
        self.assertTrue(cluster.eventually(self.linked, timeout=20), c.tail_logs())
        by_key = {e["peer"]: e for e in self.edges(A)}
        self.assertEqual(by_key[c.keys[B][1]]["admitted_by"], "keyless")
        self.assertEqual(by_key[c.keys[B][1]]["certificate"], "node-b")
        self.assertEqual(by_key[c.keys[C][1]]["admitted_by"], "certificate")
        self.assertEqual(by_key[c.keys[C][1]]["certificate"], "node-c")
        self.assertEqual(self.edges(B)[0]["admitted_by"], "certificate")
        self.assertEqual(self.edges(C)[0]["peer"], c.keys[A][1])

        procs = self.trainers(400)
        self.assertTrue(cluster.eventually(
            lambda: all(e["round"] >= 5 for e in self.edges(A)), timeout=20),
            c.tail_logs())

        # The joiners, once the short-lived certificate has expired.
        time.sleep(max(0.0, self.short_issued + SHORT_S + 1 - time.time()))
        before = {e["peer"]: e for e in self.edges(A)}
        counters0 = cluster.status(c.sockets[A])["counters"]
        a_addr = "127.0.0.1:%d" % c.ports[A]
        for i in (EXPIRED, REVOKED, FOREIGN):
            self.config(i, [(c.keys[A][1], a_addr)])
            c.procs[i].send_signal(signal.SIGHUP)
        reasons = {"hs_cert_expired": EXPIRED, "hs_cert_revoked": REVOKED,
                   "hs_cert_foreign": FOREIGN}
        self.assertTrue(cluster.eventually(
            lambda: all(cluster.status(c.sockets[A])["counters"][k] > counters0[k]
                        for k in reasons), timeout=20), c.tail_logs())
        # A few more redials (each refused again, counted), then look.
        counters1 = cluster.status(c.sockets[A])["counters"]
        self.assertTrue(cluster.eventually(
            lambda: all(cluster.status(c.sockets[A])["counters"][k] > counters1[k]
                        for k in reasons), timeout=20), c.tail_logs())
        after_status = cluster.status(c.sockets[A])
        after = {e["peer"]: e for e in after_status["edges"]}
        self.assertEqual(set(after), set(before), "no slot for a refused joiner")
        for k, e in after.items():
            self.assertEqual(e["generation"], before[k]["generation"], k)
            self.assertGreater(e["round"], before[k]["round"], k)
            self.assertEqual(e["resyncs"], before[k]["resyncs"], k)
        ctr = after_status["counters"]
        for k in ("hs_refused", "hs_cert_missing", "hs_cert_other_key", "hs_cert_self",
                  "hs_cert_malformed", "hs_cert_not_yet"):
            self.assertEqual(ctr[k], counters0[k], k)
        # gossipctl metrics shows each reason's counter.
        metrics = self.gossipctl("--socket", c.sockets[A], "metrics")
        for k in reasons:
            self.assertRegex(metrics, r"(?m)^gossipd_%s_total [1-9]" % k)
        log = c.log(A)
        for what in ("its certificate has expired", "its key is on the revocation list",
                     "its certificate is not signed by our Authority"):
            self.assertIn(what, log)
        self.assertEqual(log.count("admitted by its certificate"), 1, "C only")
        for i in (EXPIRED, REVOKED, FOREIGN):
            self.assertNotIn("session up", c.log(i))

        self.conserved(procs)

    def test_restart_continues_the_admitted_edges(self):
        """A stopped (SIGTERM keeps its edges' records) and started again
        while the trainers step: A has no slot for C until C, which dials
        A's address, is admitted again by its certificate, and no key for
        B until its keyless dial learns it again; the records of both
        edges, kept aside meanwhile, go into those slots, so both
        generations continue at both ends and the average holds."""
        c = self.c
        c.start(nodes=[A, B, C])
        self.assertTrue(cluster.eventually(self.linked, timeout=20), c.tail_logs())
        procs = self.trainers(300)
        gen = [self.edges(i)[0]["generation"] for i in (B, C)]
        rc, _ = c.stop(A, sig=signal.SIGTERM)
        self.assertEqual(rc, 0, c.tail_logs())
        self.assertIn("their generations continue when gossipd starts again", c.log(A))
        self.assertTrue(cluster.eventually(
            lambda: all(self.edges(i)[0]["state"] != "up" for i in (B, C)), 20))
        c.start(nodes=[A])
        self.assertTrue(cluster.eventually(
            lambda: self.linked() and all(e["state"] == "up" for e in self.edges(A)),
            timeout=30), c.tail_logs())
        self.assertEqual(len(re.findall(r"generation \d+ of before the restart continues",
                                        c.log(A))), 2, c.tail_logs())
        self.assertEqual([self.edges(i)[0]["generation"] for i in (B, C)], gen)
        self.conserved(procs)

    def trainers(self, steps):
        """Pure-gossip trainers on A, B and C, each waiting for its edges;
        A's edges have rounded a few times when this returns."""
        c = self.c
        self.dumps = [(os.path.join(c.dir, "init%d" % i), os.path.join(c.dir, "final%d" % i))
                      for i in (A, B, C)]
        procs = [c.trainer(i, "--data", DATA, "--wait-edges", str(2 if i == A else 1),
                           "--steps", str(steps), "--compute-ms", "15",
                           "--dump-initial", self.dumps[i][0], "--dump", self.dumps[i][1])
                 for i in (A, B, C)]
        self.addCleanup(lambda: [cluster.kill(p) for p in procs])
        self.assertTrue(cluster.eventually(
            lambda: all(e["round"] >= 5 for e in self.edges(A)), timeout=20),
            c.tail_logs())
        return procs

    def conserved(self, procs):
        """The trainers end; the network average is the start's and the
        nodes agree."""
        for i, p in enumerate(procs):
            out, err = p.communicate(timeout=180)
            self.assertEqual(p.returncode, 0, "trainer %d: %s\n%s" % (i, err,
                                                                      self.c.tail_logs()))
        x0 = [floats(d[0]) for d in self.dumps]
        x1 = [floats(d[1]) for d in self.dumps]
        drift, rms0, rms1 = cluster.measure(x0, x1)
        print("admission: drift %.2e, consensus error %.3g -> %.3g" % (drift, rms0, rms1))
        self.assertLess(drift, 1e-5)
        self.assertLess(rms1, rms0 / 2)


if __name__ == "__main__":
    BUILD = os.path.abspath(sys.argv.pop(1))
    unittest.main(verbosity=2)
