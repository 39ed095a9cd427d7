#!/usr/bin/env python3
"""gossipd's metrics listener (MetricsListen, daemon/metrics_http.h)
against real daemons on loopback (suite 'integration'):

- a real Prometheus server (Debian's prometheus, /usr/bin/prometheus)
  scrapes a 3-node cluster and its HTTP API returns each edge's rounds
  counter, equal to what `gossipctl metrics` prints, with the name label
  of the [Peer]'s Name; the body served is gossipctl's text;
- hostile scrapers (silent, trickling, oversized, not reading) are cut
  off within the stated time, the connection cap holds, and a trainer's
  STEPs on the same daemon are not delayed meanwhile.

The daemons listen for metrics on port 0 and the test reads the bound
port back from the status document (metrics_listen).  Prometheus gets a
port picked by binding and closing (gossipcluster.free_ports): it does
not report the port it bound for :0.  Skipped (77) without prometheus
for that test only.

usage: test_metrics.py BUILD_DIR [unittest options]
"""
import json
import os
import re
import select
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
import unittest
import urllib.parse
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "..", "tools"))
import gossipcluster as cluster  # noqa: E402

P = cluster.gossipd.protocol
BUILD = None
PROMETHEUS = "/usr/bin/prometheus"
# daemon/metrics_http.h: METRICS_HTTP_TIMEOUT_MS and METRICS_HTTP_MAX_CONNS.
TIMEOUT_S = 5.0
MAX_CONNS = 8
# How much later than TIMEOUT_S a cut-off may be seen on a loaded machine.
SLACK_S = 1.5
# The longest a STEP of a model without neighbours may take while the
# scrapers attack (they take tens of microseconds of the loop each; a
# blocked loop would show seconds).
STEP_BOUND_S = 0.25
SAMPLE = re.compile(r'^(\w+)\{([^}]*)\} (\S+)$')


def gossipctl_metrics(sock):
    out = subprocess.run([os.path.join(BUILD, "tools", "gossipctl", "gossipctl"),
                          "--socket", sock, "metrics"],
                         capture_output=True, text=True, check=True, timeout=20)
    return out.stdout


def labels_of(text):
    return dict(re.findall(r'(\w+)="((?:[^"\\]|\\.)*)"', text))


def samples(text, family):
    """{(peer, name): value} of family's samples in an exposition."""
    out = {}
    for line in text.splitlines():
        m = SAMPLE.match(line)
        if m and m.group(1) == family:
            lab = labels_of(m.group(2))
            out[(lab["peer"], lab.get("name"))] = float(m.group(3))
    return out


def http_get(addr, path="/metrics", timeout=10):
    host, port = addr.rsplit(":", 1)
    with socket.create_connection((host, int(port)), timeout=timeout) as s:
        s.sendall(b"GET %s HTTP/1.1\r\nHost: %s\r\n\r\n" % (path.encode(), addr.encode()))
        data = b""
        while True:
            chunk = s.recv(65536)
            if not chunk:
                break
            data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    return head.decode(), body.decode()


def without_scrape_count(text):
    return "\n".join(l for l in text.splitlines()
                     if not l.startswith("gossipd_metrics_scrapes_total "))


def closed_within(s, limit):
    """Seconds until the peer closed s (EOF or reset), reading and
    discarding what comes; None if still open after limit seconds."""
    t0 = time.monotonic()
    while True:
        left = limit - (time.monotonic() - t0)
        if left <= 0:
            return None
        if select.select([s], [], [], left)[0]:
            try:
                if not s.recv(65536):
                    return time.monotonic() - t0
            except ConnectionError:
                return time.monotonic() - t0


class Stepper(threading.Thread):
    """A trainer of a 256-float model that STEPs as fast as the daemon
    answers, timing each STEP, until stopped."""

    def __init__(self, sock):
        super().__init__(daemon=True)
        self.s, body, self.buf = cluster.register_raw(sock, "stepper", [("w", (256,))])
        if body is None or body[:1] != bytes([P.OK]):
            raise AssertionError("REGISTER failed: %r" % body)
        self.latencies = []
        self.failed = False
        self.stop = threading.Event()

    def run(self):
        while not self.stop.is_set():
            t0 = time.monotonic()
            try:
                self.s.sendall(P.frame(P.encode_step()))
                reply = cluster.read_reply(self.s)
            except OSError as e:
                reply = e
            if not isinstance(reply, bytes) or reply[:1] != bytes([P.STEP_OK]):
                self.failed = reply
                return
            self.latencies.append(time.monotonic() - t0)
            self.stop.wait(0.002)

    def finish(self):
        self.stop.set()
        self.join(10)
        self.s.close()
        return self.latencies


class Metrics(unittest.TestCase):
    def cluster(self, n, **kw):
        c = cluster.Cluster(BUILD, n, node_conf="MetricsListen = 127.0.0.1:0\n", **kw)
        if not os.environ.get("GSP_KEEP_TMP"):
            self.addCleanup(c.remove)
        self.addCleanup(lambda: self.assertEqual(c.sanitizer_reports(), []))
        self.addCleanup(c.close)
        return c

    def metrics_addr(self, sock):
        addr = cluster.status(sock).get("metrics_listen")
        self.assertRegex(addr or "", r"^127\.0\.0\.1:[1-9][0-9]*$")
        return addr

    def test_prometheus_scrapes_the_cluster(self):
        if not os.access(PROMETHEUS, os.X_OK):
            raise unittest.SkipTest("no %s (Debian package prometheus)" % PROMETHEUS)
        c = self.cluster(3)
        c.peer_names = True
        c.start()
        # Every edge completes rounds; then the counters stay as they are.
        c.run_trainers(lambda i: ["--steps", "20", "--sync", "--wait-edges", "2"],
                       timeout=120)
        addrs = [self.metrics_addr(s) for s in c.sockets]

        # The HTTP body is gossipctl's text (the scrape count aside: each
        # scrape counts itself).
        def same_text():
            head, body = http_get(addrs[0])
            return (head.startswith("HTTP/1.1 200 ") and
                    "Connection: close" in head and
                    "text/plain; version=0.0.4" in head and
                    without_scrape_count(body) ==
                    without_scrape_count(gossipctl_metrics(c.sockets[0])))
        self.assertTrue(cluster.eventually(same_text, timeout=10),
                        "GET /metrics differs from gossipctl metrics")

        want = {}
        for i, s in enumerate(c.sockets):
            for (peer, name), v in samples(gossipctl_metrics(s),
                                           "gossipd_edge_rounds_total").items():
                want[(addrs[i], peer, name)] = v
        self.assertEqual(len(want), 6)
        self.assertTrue(all(v > 0 for v in want.values()), want)
        names = {"node%d" % j: c.keys[j][1] for j in range(3)}
        for (_, peer, name) in want:
            self.assertEqual(names.get(name), peer, "name label beside its peer")

        tmp = tempfile.mkdtemp(prefix="gossipd-prom-")
        self.addCleanup(shutil.rmtree, tmp, True)
        port = cluster.free_ports(1)[0]
        with open(os.path.join(tmp, "prometheus.yml"), "w") as f:
            f.write("global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\n"
                    "scrape_configs:\n  - job_name: gossipd\n"
                    "    static_configs:\n      - targets: [%s]\n"
                    % ", ".join("'%s'" % a for a in addrs))
        log = open(os.path.join(tmp, "prometheus.log"), "w")
        prom = subprocess.Popen(
            [PROMETHEUS, "--config.file=" + os.path.join(tmp, "prometheus.yml"),
             "--storage.tsdb.path=" + os.path.join(tmp, "data"),
             "--web.listen-address=127.0.0.1:%d" % port, "--log.level=warn"],
            stdout=log, stderr=log)
        log.close()
        self.addCleanup(prom.wait)
        self.addCleanup(prom.kill)
        api = "http://127.0.0.1:%d/api/v1/query?" % port

        def query(q):
            try:
                with urllib.request.urlopen(api + urllib.parse.urlencode({"query": q}),
                                            timeout=5) as r:
                    doc = json.load(r)
            except OSError:
                return None
            self.assertEqual(doc["status"], "success")
            return doc["data"]["result"]

        got = {}

        def scraped():
            got.clear()
            for r in query("gossipd_edge_rounds_total") or []:
                m = r["metric"]
                got[(m["instance"], m["peer"], m.get("name"))] = float(r["value"][1])
            return got == want
        ok = cluster.eventually(scraped, timeout=60, interval=0.25)
        if not ok:
            with open(os.path.join(tmp, "prometheus.log")) as f:
                plog = f.read()[-3000:]
        self.assertTrue(ok, "Prometheus has %r, gossipctl %r\n%s" % (
            got, want, "" if ok else plog))
        up = query('up{job="gossipd"}')
        self.assertEqual(sorted((r["metric"]["instance"], r["value"][1]) for r in up),
                         sorted((a, "1") for a in addrs))
        scrapes = query("gossipd_metrics_scrapes_total")
        self.assertEqual(len(scrapes), 3)
        self.assertTrue(all(float(r["value"][1]) >= 1 for r in scrapes), scrapes)

    def test_hostile_scrapers_are_cut_off_and_steps_go_on(self):
        c = self.cluster(1, edges=[])
        c.start()
        addr = self.metrics_addr(c.sockets[0])
        host, port = addr.rsplit(":", 1)
        stepper = Stepper(c.sockets[0])
        stepper.start()

        def connect():
            s = socket.create_connection((host, int(port)), timeout=10)
            self.addCleanup(s.close)
            return s

        # Every slot held: one that sends its request but never reads the
        # response (the daemon writes it to the kernel, half-closes and
        # waits for the client's end), 6 that send nothing and one that
        # trickles a byte a second; a ninth connection is closed at once.
        t_open = time.monotonic()
        lazy = connect()
        lazy.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1)
        lazy.sendall(b"GET /metrics HTTP/1.1\r\n\r\n")
        silent = [connect() for _ in range(MAX_CONNS - 2)]
        trickler = connect()
        request = b"GET /metrics HTTP/1.1\r\n\r\n"
        trickle_end = []

        def trickle():
            for k in range(len(request)):
                try:
                    trickler.send(request[k:k + 1])
                except OSError:
                    break
                if select.select([trickler], [], [], 1.0)[0]:
                    break
            trickle_end.append(time.monotonic())
        tt = threading.Thread(target=trickle, daemon=True)
        tt.start()
        extra = connect()
        extra.sendall(b"GET /metrics HTTP/1.1\r\n\r\n")
        self.assertTrue(select.select([extra], [], [], 1.0)[0],
                        "a ninth connection was not closed at once")
        try:
            self.assertEqual(extra.recv(65536), b"", "a ninth connection was served")
        except ConnectionError:
            pass
        self.assertEqual(cluster.status(c.sockets[0])["counters"]["metrics_rejected"], 1)

        # Each of the eight is cut off at TIMEOUT_S, not before.
        for s in [lazy] + silent + [trickler]:
            left = TIMEOUT_S + SLACK_S - (time.monotonic() - t_open)
            self.assertIsNotNone(closed_within(s, max(left, 0.01)),
                                 "a scraper outlived %.1f s" % TIMEOUT_S)
        held = time.monotonic() - t_open
        self.assertGreater(held, TIMEOUT_S - 0.5, "cut off before the stated time")
        tt.join(5)
        self.assertLess(trickle_end[0] - t_open, TIMEOUT_S + SLACK_S)
        # The trickler got as far as 5 of its 25 bytes: no scrape.
        self.assertEqual(cluster.status(c.sockets[0])["counters"]["metrics_scrapes"], 1)

        # A header past the 4 KiB head: 431 at once, then closed.
        big = connect()
        big.sendall(b"GET /metrics HTTP/1.1\r\nX-Big: " + b"a" * 5000)
        reply = b""
        while True:
            chunk = big.recv(65536)
            if not chunk:
                break
            reply += chunk
        big.close()
        self.assertTrue(reply.startswith(b"HTTP/1.1 431 "), reply[:80])
        self.assertIn(b"Connection: close", reply)

        # Slots free again: a normal scrape is served.
        head, body = http_get(addr)
        self.assertTrue(head.startswith("HTTP/1.1 200 "), head)
        lat = stepper.finish()
        self.assertIs(stepper.failed, False, "a STEP failed")
        counters = cluster.status(c.sockets[0])["counters"]
        self.assertEqual(counters["metrics_timed_out"], MAX_CONNS)
        self.assertEqual(counters["metrics_rejected"], 1)
        self.assertEqual(counters["metrics_bad_requests"], 1)
        self.assertEqual(counters["metrics_scrapes"], 2)
        self.assertIn("gossipd_metrics_timed_out_total %d" % counters["metrics_timed_out"],
                      body.replace("\r", ""))
        self.assertGreater(len(lat), 100, "the trainer hardly stepped")
        self.assertLess(max(lat), STEP_BOUND_S,
                        "a STEP took %.3f s while scrapers attacked" % max(lat))
        print("steps %d, longest %.1f ms, scrapers held %.2f s"
              % (len(lat), 1000 * max(lat), held))


def main():
    global BUILD
    BUILD = os.path.abspath(sys.argv.pop(1))
    unittest.main(verbosity=2)


if __name__ == "__main__":
    main()
