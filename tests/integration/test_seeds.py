#!/usr/bin/env python3
"""Discovery's seeds against a real DNS server (issue 36, sections 1 and 7).

What it starts, and how: tools/bench/netns.py's network (unshaped), two
node namespaces joined by veths to a bridge in a hub namespace; in the hub
namespace, dnsmasq (Debian's dnsmasq-base, no system service) listening
only on the hub's bridge address and serving only the records given on
its command line (no upstream, no /etc/hosts): a name with three A
records and an AAAA record, as a Kubernetes headless Service or
round-robin DNS has, and an SRV name whose two targets have A records of
their own.  Each node
namespace's /etc/netns/NS/resolv.conf names that server, and `ip netns
exec` bind-mounts it as /etc/resolv.conf.  One gossipd runs in node 0's
namespace with

    [Cluster]
    Seed = seeds.gossip.test:7000
    SeedSRV = _gossip._tcp.gossip.test
    ResolveIntervalSeconds = 1

and `gossipctl status --json` (from the host, over the daemon's Unix
socket) shows what it resolved.  The test checks that:
  - the daemon sees every address of the name (IPv4 and IPv6) with the
    Seed's port, and
    every SRV target's address with the record's port;
  - after dnsmasq restarts with other records (an address gone, one new,
    an SRV target moved to another port), the daemon's view follows within
    ResolveIntervalSeconds and a few seconds of slack;
  - with the DNS server gone, each seed keeps its last addresses ("stale")
    and the failures are counted; when it is back, "resolved" again;
  - `gossipctl status` prints the seeds and `gossipctl metrics` counts the
    lookups; the log notes a seed's change once, not every lookup;
  - SIGHUP with the same [Cluster] says nothing, with another warns that
    it takes effect at the next start;
  - SIGTERM stops the daemon, with exit status 0;
  - (test_bounds) five names of 66 addresses each: 64 kept per seed, 256
    in the merged list, the rest counted.
The namespaces, their /etc/netns files and dnsmasq go at exit (and those
of a killed earlier run are swept first).  Exits 77 (skipped) when it
cannot run as root, create namespaces, or find dnsmasq.

usage: test_seeds.py BUILD_DIR [unittest options]
"""
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import unittest

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
sys.path.insert(0, os.path.join(ROOT, "tools"))
from bench import netns  # noqa: E402
import gossipcluster as cluster  # noqa: E402

BUILD = sys.argv.pop(1) if len(sys.argv) > 1 else os.path.join(ROOT, "build")
GOSSIPD = os.path.join(BUILD, "daemon", "gossipd")
GOSSIPCTL = os.path.join(BUILD, "tools", "gossipctl", "gossipctl")
NAME = "seeds.gossip.test"
SRV = "_gossip._tcp.gossip.test"
INTERVAL = 1
SLACK = 6          # seconds past the interval for a change to show


def with_port(addrs, port):
    """The daemon's text of each address with port, sorted."""
    return sorted(("[%s]:%d" if ":" in a else "%s:%d") % (a, port) for a in addrs)


def records(name_addrs, targets):
    """dnsmasq's records: NAME's A and AAAA records, and SRV's targets
    (name, address, port), each target with its own A record."""
    hosts = [(NAME, name_addrs)] + [(t, [a]) for t, a, _ in targets]
    return hosts, [(SRV, t, p) for t, _, p in targets]


class Seeds(unittest.TestCase):
    def setUp(self):
        netns.sweep()
        self.dir = tempfile.mkdtemp(prefix="seeds-")
        self.net = netns.Net(2, None, tag="seeds").create()
        self.addCleanup(self.net.remove)
        self.addCleanup(shutil.rmtree, self.dir, True)
        self.dns_log = os.path.join(self.dir, "dnsmasq.log")
        self.sock = os.path.join(self.dir, "gossipd.sock")
        self.log = os.path.join(self.dir, "gossipd.log")
        self.daemon = None

    def tearDown(self):
        if self.daemon and self.daemon.poll() is None:
            self.daemon.terminate()
            try:
                self.daemon.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.daemon.kill()
                self.daemon.wait()

    def write_config(self, interval, seeds=None):
        """gossipd.conf with [Cluster]'s seed lines (the Seed of NAME and the
        SeedSRV of SRV unless given)."""
        seeds = seeds or ["Seed = %s:7000" % NAME, "SeedSRV = %s" % SRV]
        conf = os.path.join(self.dir, "gossipd.conf")
        with open(conf, "w") as f:
            f.write("[Node]\nListenAddress = %s:7000\nPrivateKeyFile = %s\n"
                    "Socket = %s\n\n[Cluster]\n%s\nResolveIntervalSeconds = %d\n"
                    % (self.net.addr[0], os.path.join(self.dir, "private.key"),
                       self.sock, "\n".join(seeds), interval))
        return conf

    def start_daemon(self, seeds=None):
        conf = self.write_config(INTERVAL, seeds)
        notify = cluster.Notify(os.path.join(self.dir, "notify"))
        self.addCleanup(notify.close)
        env = dict(os.environ, NOTIFY_SOCKET=notify.path)
        with open(self.log, "w") as out:
            self.daemon = subprocess.Popen(self.net.wrap(0) + [GOSSIPD, "--config", conf],
                                           stdout=out, stderr=subprocess.STDOUT, env=env)
        # Its READY=1 (sd_notify), not a poll for the socket's file.
        self.assertEqual(notify.claim_ready(1, 15), 1, "not ready: " + self.daemon_log())

    def daemon_log(self, whole=False):
        """gossipd's output: its end for messages, or whole to count in."""
        with open(self.log) as f:
            text = f.read()
        return text if whole else text[-3000:]

    def ctl(self, *args):
        r = subprocess.run([GOSSIPCTL, "--socket", self.sock] + list(args),
                           capture_output=True, text=True, timeout=20)
        self.assertEqual(r.returncode, 0, r.stderr)
        return r.stdout

    def status(self):
        return json.loads(self.ctl("status", "--json"))

    def view(self):
        """{seed: (state, sorted addresses)} as the daemon shows it."""
        return {s["seed"]: (s["state"], sorted(s["addresses"]))
                for s in self.status()["seeds"]}

    def wait_view(self, want, timeout, what):
        """Polls until every seed's (state, addresses) is as wanted; the
        time it took."""
        t0 = time.monotonic()
        got = None
        while time.monotonic() - t0 < timeout:
            got = self.view()
            if got == want:
                return time.monotonic() - t0
            time.sleep(0.1)
        self.fail("%s: after %.1f s the daemon shows %s, not %s\n--- gossipd:\n%s"
                  % (what, timeout, got, want, self.daemon_log()))

    def test_seeds_follow_dns(self):
        a = self.net.addr
        first_name = ["10.77.0.11", "10.77.0.12", "10.77.0.13", "fd77::11"]
        first_srv = [("n1.gossip.test", a[0], 7100), ("n2.gossip.test", a[1], 7101)]
        self.net.start_dns(*records(first_name, first_srv), log=self.dns_log)
        self.start_daemon()
        seed_name = "%s:7000" % NAME
        took = self.wait_view(
            {seed_name: ("resolved", with_port(first_name, 7000)),
             SRV: ("resolved", sorted(["%s:7100" % a[0], "%s:7101" % a[1]]))},
            5 + SLACK, "first resolution")
        st = self.status()
        self.assertEqual(st["seed_addresses"], 6)
        print("first resolution seen after %.2f s" % took)

        # New records: 10.77.0.12 gone, .14 new; n2 moved to port 7201.
        second_name = ["10.77.0.11", "10.77.0.13", "10.77.0.14", "fd77::11"]
        second_srv = [("n1.gossip.test", a[0], 7100), ("n2.gossip.test", a[1], 7201)]
        self.net.start_dns(*records(second_name, second_srv), log=self.dns_log)
        took = self.wait_view(
            {seed_name: ("resolved", with_port(second_name, 7000)),
             SRV: ("resolved", sorted(["%s:7100" % a[0], "%s:7201" % a[1]]))},
            INTERVAL + SLACK, "after the records changed")
        print("changed records seen after %.2f s (ResolveIntervalSeconds = %d)"
              % (took, INTERVAL))

        # No DNS server: each seed keeps its last addresses, and says so.
        failures = self.status()["counters"]["seed_failures"]
        self.net.stop_dns()
        took = self.wait_view(
            {seed_name: ("stale", with_port(second_name, 7000)),
             SRV: ("stale", sorted(["%s:7100" % a[0], "%s:7201" % a[1]]))},
            INTERVAL + SLACK + 4, "with the DNS server gone")
        st = self.status()
        self.assertGreater(st["counters"]["seed_failures"], failures)
        self.assertEqual(st["seed_addresses"], 6)
        for s in st["seeds"]:
            self.assertTrue(s["last_error"], s)
        print("stale after %.2f s without a DNS server" % took)

        self.net.start_dns(*records(first_name, first_srv), log=self.dns_log)
        self.wait_view(
            {seed_name: ("resolved", with_port(first_name, 7000)),
             SRV: ("resolved", sorted(["%s:7100" % a[0], "%s:7101" % a[1]]))},
            INTERVAL + SLACK + 4, "with the DNS server back")

        text = self.ctl("status")
        self.assertIn("seeds:     2, 6 address(es) in all", text)
        self.assertIn("%s (resolved): 10.77.0.11:7000 10.77.0.12:7000 10.77.0.13:7000 "
                      "[fd77::11]:7000\n" % seed_name, text)
        metrics = self.ctl("metrics")
        resolutions = [line for line in metrics.splitlines()
                       if line.startswith("gossipd_seed_resolutions_total ")]
        self.assertEqual(len(resolutions), 1, metrics)
        self.assertGreaterEqual(int(resolutions[0].split()[1]), 6)
        # The log says a seed's change once, not at every lookup: three
        # changes (a fourth if a lookup fell between dnsmasq's stop and
        # start), over three more lookups with nothing changing (counted,
        # not slept for).
        done0 = int(resolutions[0].split()[1])

        def lookups():
            for line in self.ctl("metrics").splitlines():
                if line.startswith("gossipd_seed_resolutions_total "):
                    return int(line.split()[1])
            return 0
        deadline = time.monotonic() + 3 * INTERVAL + 10
        while lookups() < done0 + 3:
            self.assertLess(time.monotonic(), deadline, "no three more lookups")
            time.sleep(0.05)
        log = self.daemon_log(True)
        self.assertIn(log.count("seed '%s': 4 address(es)" % seed_name), (3, 4), log)
        # SIGHUP: the same [Cluster] says nothing; a changed one warns
        # that it takes effect at the next start.
        warning = "reload: [Cluster]'s seeds take effect at the next start"
        for n, interval in ((1, INTERVAL), (2, INTERVAL + 1)):
            self.write_config(interval)
            self.daemon.send_signal(signal.SIGHUP)
            deadline = time.monotonic() + 10
            while self.daemon_log(True).count("reload: configuration re-read") < n:
                self.assertLess(time.monotonic(), deadline, self.daemon_log())
                time.sleep(0.05)
            self.assertEqual(self.daemon_log(True).count(warning), n - 1, self.daemon_log())
        # A stop with the seeds' timer and lookups: exits 0, at once.
        self.daemon.terminate()
        self.assertEqual(self.daemon.wait(timeout=10), 0, self.daemon_log())

    def test_bounds(self):
        """Five names of 66 A records each (answers too large for UDP: over
        TCP): each seed keeps 64 and counts 2 cut; the merged list keeps
        256 of the 320 and counts the 64 beyond."""
        names = ["big%d.gossip.test" % k for k in range(5)]
        hosts = [(n, ["10.78.%d.%d" % (k, i + 1) for i in range(66)])
                 for k, n in enumerate(names)]
        self.net.start_dns(hosts, log=self.dns_log)
        self.start_daemon(["Seed = %s:7000" % n for n in names])
        deadline = time.monotonic() + 5 + SLACK
        while True:
            st = self.status()
            if all(s["state"] == "resolved" for s in st["seeds"]):
                break
            self.assertLess(time.monotonic(), deadline, st["seeds"])
            time.sleep(0.1)
        for s in st["seeds"]:
            self.assertEqual(len(s["addresses"]), 64, s)
            self.assertEqual(s["cut"], 2, s)
        self.assertEqual(st["seed_addresses"], 256)
        # Each answer's 2 cut, and the 64 beyond the merged bound, once.
        self.assertGreaterEqual(st["counters"]["seed_addresses_cut"], 5 * 2 + 64)
        print("5 x 66 addresses: 64 kept per seed, 256 merged")


if __name__ == "__main__":
    why = netns.skip_reason((GOSSIPD, GOSSIPCTL), dns=True)
    if why:
        print("SKIP: " + why)
        sys.exit(77)
    unittest.main(verbosity=2)
