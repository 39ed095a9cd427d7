#!/usr/bin/env python3
"""Membership in network namespaces, found through a real DNS server
(issue 36, 6 and 7; docs/MEMBERSHIP.md).

What it starts, and how: tools/bench/netns.py's network (unshaped), one
namespace per node with its own address (10.77.0.N) on a veth into a
bridge in a hub namespace, and in the hub namespace dnsmasq (Debian's
dnsmasq-base, no system service) serving only the SRV name
_gossip._tcp.gossip.test with one target per node, each with its own A
record, port 7000: what a Kubernetes headless Service publishes.  Each
node namespace's /etc/netns/NS/resolv.conf names that server.  In each
namespace one gossipd runs with the config the Kubernetes ConfigMap has:

    [Node]
    ListenAddress = 0.0.0.0:7000
    [Cluster]
    Authority = ...   (gossipctl ca-genkey, for the run)
    Certificate = ... (gossipctl cert-issue, one per node)
    SeedSRV = _gossip._tcp.gossip.test

no [Peer], no Advertise: each advertises its namespace's address.  The
test, over the daemons' Unix sockets (gossipctl's STATUS), checks that:
  - the 8 nodes form the ring over the BLAKE2b order of their keys
    (gossipcerts.spec_neighbours), each member known at its namespace's
    address (a quarter killed at once and restarted: test_chaos.py, the
    same network with trainers, through tools/chaos);
  - (test_partition_and_heal) a partition into two halves of 4 (in each
    node's namespace, blackhole routes to the other half's addresses):
    each half's probes find the other half dead and each forms its own
    ring of 4; the routes removed, the halves meet again through the
    seeds (each node dials them for 5 s every 30 s), each finds the other
    half alive again (a member found dead that has a session again is
    probed again and refutes its death) and the ring over the 8 is
    whole.
  - (test_partition_with_trainers_keeps_the_averages, suite 'slow')
    the same with pure-gossip trainers
    (gossip-testtrainer, SYNC steps, exact gossip) on the 8 throughout,
    cut after their 10th step: while the
    halves are apart each half keeps its own sum (its parameters' sum at
    two steps dumped inside the apart window, the first once the half has
    settled, is the same to 1e-5 of its initial spread), and after the
    heal the network's average is the start's (drift <= 1e-5) and the
    consensus error falls.
The namespaces, their /etc/netns files and dnsmasq go at exit (and those
of a killed earlier run are swept first).  Exits 77 (skipped) when it
cannot run as root, create namespaces, or find dnsmasq.

usage: test_cluster_netns.py BUILD_DIR [unittest options]
"""
import os
import sys
import time
import unittest

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
sys.path.insert(0, os.path.join(ROOT, "tools"))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench import netns  # noqa: E402
import gossipcerts  # noqa: E402
import gossipcluster as cluster  # noqa: E402
from test_cluster import DATA  # noqa: E402

BUILD = sys.argv.pop(1) if len(sys.argv) > 1 else os.path.join(ROOT, "build")
N = 8
SRV = "_gossip._tcp.gossip.test"
DUMP_EVERY = 10      # the trainers dump their parameters every DUMP_EVERY steps
MAX_STEPS = 1000000  # the trainers' cap: the stop file ends them
# A half's values this close to their mean (relative to its initial
# spread) have settled: its dumps at one step are then one state of it.
SETTLED = 1e-6


def half_drift(x0, a, b):
    """How far the mean of the arrays b is from that of the arrays a (the
    same nodes at two steps: their sum, over their count), relative to
    the initial spread of x0 (those nodes' initial arrays):
    gossipcluster.measure's drift."""
    return max(abs(sum(x[k] for x in a) - sum(x[k] for x in b)) / len(a)
               for k in range(len(a[0]))) / cluster.spread(x0)


class ClusterNetns(unittest.TestCase):
    def setUp(self):
        netns.sweep()
        self.net = netns.Net(N, None, tag="cl").create()
        self.addCleanup(self.net.remove)
        targets = [("n%d.gossip.test" % i, self.net.addr[i]) for i in range(N)]
        self.net.start_dns([(t, [a]) for t, a in targets],
                           srv=[(SRV, t, 7000) for t, _ in targets])
        self.c = c = cluster.owned_by(self, cluster.Cluster(
            BUILD, N, edges=[], hosts=["0.0.0.0"] * N, wrap=self.net.wrap,
            node_conf="Method = exact\nGamma = 1.0\n"))
        c.membership = gossipcerts.Membership(
            os.path.join(BUILD, "tools", "gossipctl", "gossipctl"), c.dir, c.keys, SRV)

    def formed(self, nodes):
        """Every node in nodes knows exactly them (alive, not found dead),
        each at its namespace's address, and its neighbours and edges are
        its ring neighbours over them."""
        return gossipcerts.formed(self.c, nodes,
                                  lambda j: "%s:7000" % self.net.addr[j])

    def cut(self, halves, on):
        """Blackhole routes, in each node's namespace, to the other half's
        addresses (on), or none (off)."""
        for half in halves:
            for i in half:
                for j in (j for h in halves if h is not half for j in h):
                    netns.ip("-n", self.net.ns[i], "route", "add" if on else "del",
                             "blackhole", self.net.addr[j] + "/32")

    def trainers(self, nodes, stop):
        """Pure-gossip trainers on nodes, SYNC steps until the file stop
        exists; each dumps its initial and final parameters (self.dumps)
        and, every DUMP_EVERY steps, those after the step (FINAL.S)."""
        c = self.c
        self.dumps = {i: (os.path.join(c.dir, "init%d" % i),
                          os.path.join(c.dir, "final%d" % i)) for i in nodes}
        procs = [c.trainer(i, "--data", DATA, "--wait-edges", "2", "--sync",
                           "--steps", str(MAX_STEPS), "--compute-ms", "10",
                           "--stop-file", stop, "--dump-every", str(DUMP_EVERY),
                           "--dump-initial", self.dumps[i][0],
                           "--dump", self.dumps[i][1]) for i in nodes]
        self.addCleanup(lambda: [cluster.kill(p) for p in procs if p.poll() is None])
        return procs

    def steps_within(self, i, t0, t1):
        """The steps S whose dump FINAL.S node i's trainer wrote between
        the times t0 and t1 (time.time()): the file's mtime after t0 and
        before t1 less the kernel's coarse clock (a few ms behind)."""
        final = self.dumps[i][1]
        d = os.path.dirname(final)
        prefix = os.path.basename(final) + "."
        steps = set()
        for name in os.listdir(d):
            if name.startswith(prefix) and name[len(prefix):].isdigit():
                mtime = os.stat(os.path.join(d, name)).st_mtime
                if t0 < mtime < t1 - 0.05:
                    steps.add(int(name[len(prefix):]))
        return steps

    def started(self):
        """The 8 started and formed; (everyone, the two halves)."""
        everyone = list(range(N))
        self.c.start()
        self.assertTrue(cluster.eventually(lambda: self.formed(everyone), timeout=30,
                                           interval=0.05), self.c.tail_logs(8))
        return everyone, (everyone[:N // 2], everyone[N // 2:])

    def partition(self, halves):
        """Cuts the halves apart and waits until each formed its own ring."""
        self.cut(halves, True)
        t0 = time.monotonic()
        apart = cluster.eventually(lambda: all(self.formed(h) for h in halves),
                                   timeout=30, interval=0.1)
        print("cluster-netns: partitioned; each half formed its own ring in %.2f s"
              % (time.monotonic() - t0))
        self.assertTrue(apart, self.c.tail_logs(8))

    def heal(self, everyone, halves):
        """Removes the cut and waits until the ring over the 8 is whole."""
        self.cut(halves, False)
        t0 = time.monotonic()
        whole = cluster.eventually(lambda: self.formed(everyone), timeout=75, interval=0.1)
        print("cluster-netns: healed; the ring over the %d whole again in %.2f s "
              "(the seeds are dialed again every 30 s)" % (N, time.monotonic() - t0))
        self.assertTrue(whole, self.c.tail_logs(8))

    def test_partition_and_heal(self):
        everyone, halves = self.started()
        self.partition(halves)
        self.heal(everyone, halves)

    @unittest.skipUnless(os.environ.get("GSP_NETNS_TRAINERS"),
                         "run on its own: meson test cluster-netns-trainers")
    def test_partition_with_trainers_keeps_the_averages(self):
        """Its own meson test (cluster-netns-trainers, suite 'faults': not
        again under the sanitizers).  The 8 run pure-gossip trainers; a
        partition into halves is cut after their 10th step and healed:
        each half keeps its own sum while apart, and after the heal the
        network's average is the start's.  It found two peer-table bugs
        (RELIABILITY journal, 2026-12-07): a member back through admission
        got a fresh slot that lost where its edge's generation ended (a
        round one-sided, drift ~3e-3), and two slots for one key replaced
        each other's sessions for ever."""
        c = self.c
        everyone, halves = self.started()
        stop = os.path.join(c.dir, "stop")
        procs = self.trainers(everyone, stop)
        # The cut while they step, before they agree (the 8 agree to float
        # precision in about 80 steps): after their 10th step.
        self.assertTrue(cluster.eventually(
            lambda: all(os.path.exists("%s.%d" % (self.dumps[i][1], DUMP_EVERY))
                        for i in everyone), timeout=30), c.tail_logs(8))
        self.partition(halves)

        # The apart window: from the halves' rings (w0) to the routes'
        # return (w1).  Each half's trainers step in it, in lockstep (SYNC),
        # but the edges its ring gained start their generations at steps
        # that differ by up to a few between their two ends, so a half's
        # dumps at one step S are one state of it only once it has settled
        # (SETTLED).  Per half: S1 the first step dumped inside the window
        # by all its nodes at which it has settled, S2 the last one.
        w0 = time.time()
        x0 = {k: [cluster.read_floats(self.dumps[i][0]) for i in h]
              for k, h in enumerate(halves)}
        spread0 = {k: cluster.spread(x) for k, x in x0.items()}
        read = {}

        def at(h, s):
            for i in h:
                if (i, s) not in read:
                    read[i, s] = cluster.read_floats("%s.%d" % (self.dumps[i][1], s))
            return [read[i, s] for i in h]
        settled = {}
        steps = {}

        def picked(t1):
            for k, h in enumerate(halves):
                common = sorted(set.intersection(*(self.steps_within(i, w0, t1)
                                                   for i in h)))
                for s in common:
                    if (k, s) not in settled:
                        settled[k, s] = cluster.spread(at(h, s)) <= SETTLED * spread0[k]
                s1 = next((s for s in common if settled[k, s]), None)
                if s1 is None or common[-1] <= s1:
                    return False
                steps[k] = (s1, common[-1])
            return True
        self.assertTrue(cluster.eventually(
            lambda: time.time() - w0 >= 3.0 and picked(time.time()),
            timeout=30, interval=0.1), c.tail_logs(8))
        w1 = time.time()
        self.heal(everyone, halves)
        self.assertTrue(picked(w1))
        for k, h in enumerate(halves):
            s1, s2 = steps[k]
            xs1, xs2 = at(h, s1), at(h, s2)
            drift = half_drift(x0[k], xs1, xs2)
            when = [os.stat("%s.%d" % (self.dumps[h[0]][1], s)).st_mtime - w0
                    for s in (s1, s2)]
            print("cluster-netns: half %d (nodes %s), apart %.1f s: its sum at step %d "
                  "(+%.2f s, settled) and at step %d (+%.2f s) differs by %.2e of its "
                  "initial spread" % (k, ",".join(map(str, h)), w1 - w0, s1, when[0],
                                      s2, when[1], drift))
            self.assertLessEqual(drift, 1e-5, c.tail_logs(8))
        # The 8's average while apart (each half at its S2), for the record:
        # a round in flight at the cut may have landed on one side only
        # until the routes return.
        apart_drift, _, _ = cluster.measure(
            [cluster.read_floats(self.dumps[i][0]) for i in everyone],
            at(halves[0], steps[0][1]) + at(halves[1], steps[1][1]))
        print("cluster-netns: the %d's average while apart: drift %.2e" % (N, apart_drift))
        # More steps over the whole ring, then the trainers stop (DRAIN
        # with SYNC, DETACH) and dump their final parameters.
        cluster.eventually(lambda: False, timeout=3.0, interval=0.1)
        open(stop, "w").close()
        for i, p in zip(everyone, procs):
            out, err = p.communicate(timeout=60)
            self.assertEqual(p.returncode, 0, "trainer %d: %s\n%s" % (i, err,
                                                                      c.tail_logs(8)))
        drift, rms0, rms1 = cluster.measure(
            [cluster.read_floats(self.dumps[i][0]) for i in everyone],
            [cluster.read_floats(self.dumps[i][1]) for i in everyone])
        print("cluster-netns: after the heal: drift %.2e, consensus error %.3g -> %.3g"
              % (drift, rms0, rms1))
        self.assertLessEqual(drift, 1e-5, c.tail_logs(8))
        self.assertLess(rms1, rms0 / 2)


if __name__ == "__main__":
    netns.exit_unless_possible(BUILD)
    unittest.main(verbosity=2)
