#!/usr/bin/env python3
"""gossipd as a service manager sees it, without systemd: a fake
NOTIFY_SOCKET (a datagram socket this test owns) and the environment that
systemd's StateDirectory=, RuntimeDirectory= and WatchdogSec= set.

Checks READY=1, WATCHDOG=1 at half of WATCHDOG_USEC (and none without it,
or for another WATCHDOG_PID), no pings while the process is stopped, the
key created in $STATE_DIRECTORY (0600) and the socket in
$RUNTIME_DIRECTORY (0660) under UMask=0077, SIGHUP, `gossipctl metrics`
of real daemons through the exposition checker, the textfile collector
unit's command (deploy/gossipd-metrics.service) against a real daemon,
and SIGTERM: STOPPING=1 and exit 0.

usage: test_service.py BUILD_DIR [unittest options]
"""
import os
import re
import shutil
import signal
import socket
import stat
import subprocess
import sys
import tempfile
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "tools"))
import gossipcluster as cluster  # noqa: E402
CHECK_PROM = os.path.join(HERE, "..", "tools", "check_prom.py")
BUILD = None


def is_stopped(pid):
    """True once the kernel shows pid in state T (stopped)."""
    with open("/proc/%d/stat" % pid) as f:
        return f.read().rsplit(")", 1)[1].split()[0] == "T"


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Node:
    """One gossipd with its own state and runtime directories, config and
    notify socket."""

    def __init__(self, tmp, name, watchdog_usec=None, watchdog_pid=None):
        self.dir = os.path.join(tmp, name)
        self.state = os.path.join(self.dir, "state")
        self.run = os.path.join(self.dir, "run")
        for d in (self.state, self.run):
            os.makedirs(d, mode=0o700)
        self.conf = os.path.join(self.dir, "gossipd.conf")
        self.log = os.path.join(self.dir, "log")
        self.port = free_port()
        self.notify = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.notify.bind(os.path.join(self.dir, "notify"))
        self.env = dict(os.environ, NOTIFY_SOCKET=os.path.join(self.dir, "notify"),
                        STATE_DIRECTORY=self.state, RUNTIME_DIRECTORY=self.run)
        for k in ("WATCHDOG_USEC", "WATCHDOG_PID", "XDG_RUNTIME_DIR"):
            self.env.pop(k, None)
        if watchdog_usec is not None:
            self.env["WATCHDOG_USEC"] = str(watchdog_usec)
        if watchdog_pid is not None:
            self.env["WATCHDOG_PID"] = str(watchdog_pid)
        self.proc = None
        self.write_config([])

    @property
    def socket_path(self):
        return os.path.join(self.run, "gossipd.sock")

    def write_config(self, peers):
        # No PrivateKeyFile and no Socket: the service's defaults.
        with open(self.conf, "w") as f:
            f.write("[Node]\nListenAddress = 127.0.0.1:%d\nLogLevel = debug\n"
                    % self.port)
            for pub, port in peers:
                f.write("[Peer]\nPublicKey = %s\n" % pub)
                if port:
                    f.write("Endpoint = 127.0.0.1:%d\n" % port)

    def start(self):
        log = open(self.log, "a")
        self.proc = subprocess.Popen(
            [os.path.join(BUILD, "daemon", "gossipd"), "--config", self.conf],
            stdout=log, stderr=log, env=self.env,
            preexec_fn=lambda: os.umask(0o077))
        log.close()

    def messages(self, timeout):
        """Datagrams that arrive within timeout s: (time, set of lines)."""
        out = []
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                return out
            self.notify.settimeout(left)
            try:
                msg = self.notify.recv(4096).decode()
            except socket.timeout:
                return out
            out.append((time.monotonic(), set(msg.split("\n"))))

    def wait_for(self, line, timeout=20.0):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for _, lines in self.messages(min(0.5, deadline - time.monotonic())):
                if line in lines:
                    return True
            if self.proc.poll() is not None:
                break
        raise AssertionError("no %s from gossipd (exit %s); log:\n%s"
                             % (line, self.proc.poll(), self.read_log()))

    def public_key(self):
        out = subprocess.run([os.path.join(BUILD, "daemon", "gossipd"), "--config",
                              self.conf, "--check-config"], env=self.env,
                             capture_output=True, text=True, check=True)
        return out.stdout.strip()

    def read_log(self):
        with open(self.log, errors="replace") as f:
            return f.read()

    def close(self):
        if self.proc and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        self.notify.close()


class Service(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="gossipd-service-")
        self.addCleanup(shutil.rmtree, self.tmp, True)

    def node(self, name, **kw):
        n = Node(self.tmp, name, **kw)
        self.addCleanup(n.close)
        return n

    def test_ready_key_socket_watchdog_stop(self):
        n = self.node("a", watchdog_usec=400000)
        n.start()
        n.wait_for("READY=1")
        key = os.path.join(n.state, "private.key")
        self.assertEqual(stat.S_IMODE(os.stat(key).st_mode), 0o600)
        st = os.stat(n.socket_path)
        self.assertTrue(stat.S_ISSOCK(st.st_mode))
        self.assertEqual(stat.S_IMODE(st.st_mode), 0o660)
        # 200 ms pings: about 7 in 1.5 s; at least 4 whatever the load.
        pings = [t for t, lines in n.messages(1.5) if "WATCHDOG=1" in lines]
        self.assertGreaterEqual(len(pings), 4, n.read_log())
        self.assertIn("watchdog: WATCHDOG=1 every 200 ms", n.read_log())
        # A stopped process sends nothing; pings resume after SIGCONT.
        n.proc.send_signal(signal.SIGSTOP)
        self.assertTrue(cluster.eventually(lambda: is_stopped(n.proc.pid), 5))
        n.messages(0.05)                          # drop what was in flight
        stopped = [m for m in n.messages(1.0) if "WATCHDOG=1" in m[1]]
        n.proc.send_signal(signal.SIGCONT)
        self.assertEqual(stopped, [])
        n.wait_for("WATCHDOG=1", 2.0)
        # SIGHUP re-reads the file and the daemon carries on.
        n.proc.send_signal(signal.SIGHUP)
        n.wait_for("WATCHDOG=1", 2.0)
        self.assertIn("reload: configuration re-read", n.read_log())
        # SIGTERM: STOPPING=1, exit 0 within 2 s.
        t0 = time.monotonic()
        n.proc.send_signal(signal.SIGTERM)
        n.wait_for("STOPPING=1", 2.0)
        self.assertEqual(n.proc.wait(timeout=5), 0)
        self.assertLess(time.monotonic() - t0, 2.0)
        # The key survives a restart: same public key.
        first = n.public_key()
        n.start()
        n.wait_for("READY=1")
        self.assertEqual(n.public_key(), first)

    def test_no_watchdog_unless_enabled(self):
        for name, kw in (("plain", {}), ("otherpid", {"watchdog_usec": 200000,
                                                      "watchdog_pid": 1})):
            n = self.node(name, **kw)
            n.start()
            n.wait_for("READY=1")
            pings = [m for m in n.messages(0.6) if "WATCHDOG=1" in m[1]]
            self.assertEqual(pings, [], name)

    def test_metrics_of_real_daemons(self):
        a, b = self.node("a"), self.node("b")
        a.write_config([])
        b.write_config([])
        ka, kb = a.public_key(), b.public_key()
        a.write_config([(kb, b.port)])
        b.write_config([(ka, None)])
        a.start()
        b.start()
        a.wait_for("READY=1")
        b.wait_for("READY=1")
        gossipctl = os.path.join(BUILD, "tools", "gossipctl", "gossipctl")
        def linked():
            out = subprocess.run([gossipctl, "--socket", a.socket_path, "metrics"],
                                 capture_output=True, text=True)
            self.assertEqual(out.returncode, 0, out.stderr)
            return out if 'gossipd_edges{state="idle"} 1' in out.stdout.split("\n") else None
        out = cluster.eventually(linked)
        self.assertIsNotNone(out, "the link did not come up:\n" + a.read_log())
        check = subprocess.run([sys.executable, CHECK_PROM], input=out.stdout,
                               capture_output=True, text=True)
        self.assertEqual(check.returncode, 0, check.stdout + check.stderr)
        for line in ('gossipd_edge_state{peer="%s",state="idle"} 1' % kb,
                     'gossipd_hs_refused_total 0',
                     'gossipd_rx_malformed_total 0',
                     'gossipd_edge_staleness{peer="%s"} 0' % kb,
                     'gossipd_edge_resyncs_total{peer="%s"} 1' % kb,   # RESYNCs go both ways even with no model
                     'gossipd_model_registered 0'):
            self.assertIn(line, out.stdout.split("\n"))
        for family in ("gossipd_edge_tx_bytes_total", "gossipd_edge_rx_frames_total",
                       "gossipd_edge_rounds_total"):
            self.assertIn("# TYPE %s counter" % family, out.stdout)

    def test_textfile_unit_writes_the_metrics_whole(self):
        """gossipd-metrics.service's ExecStart, as systemd runs it ($$ is
        a $; PROM from its Environment=, pointed here): gossipd.prom is
        the exposition, renamed into place with no temporary file left;
        with gossipd gone the unit fails and gossipd.prom goes."""
        unit = os.path.join(BUILD, "deploy", "gossipd-metrics.service")
        with open(unit) as f:
            lines = f.read().splitlines()
        execs = [l[len("ExecStart="):] for l in lines if l.startswith("ExecStart=")]
        self.assertEqual(len(execs), 1)
        self.assertTrue(execs[0].startswith("/bin/sh -c '") and execs[0].endswith("'"))
        script = execs[0][len("/bin/sh -c '"):-1].replace("$$", "$")
        gossipctl = os.path.join(BUILD, "tools", "gossipctl", "gossipctl")
        script = re.sub(r"^\S*/gossipctl ", gossipctl + " ", script)
        self.assertIn("PROM=/var/lib/prometheus/node-exporter/gossipd.prom", lines[
            [l.startswith("Environment=") for l in lines].index(True)])
        out_dir = os.path.join(self.tmp, "node-exporter")
        os.mkdir(out_dir)
        prom = os.path.join(out_dir, "gossipd.prom")
        n = self.node("a")
        n.start()
        n.wait_for("READY=1")
        env = dict(os.environ, PROM=prom, GOSSIPD_SOCKET=n.socket_path)
        run = subprocess.run(["/bin/sh", "-c", script], env=env,
                             capture_output=True, text=True, timeout=30)
        self.assertEqual(run.returncode, 0, run.stderr)
        self.assertEqual(os.listdir(out_dir), ["gossipd.prom"])
        with open(prom) as f:
            text = f.read()
        check = subprocess.run([sys.executable, CHECK_PROM], input=text,
                               capture_output=True, text=True)
        self.assertEqual(check.returncode, 0, check.stdout + check.stderr)
        self.assertIn("gossipd_model_registered 0", text.split("\n"))
        n.close()
        run = subprocess.run(["/bin/sh", "-c", script], env=env,
                             capture_output=True, text=True, timeout=30)
        self.assertNotEqual(run.returncode, 0)
        self.assertEqual(os.listdir(out_dir), [])


if __name__ == "__main__":
    BUILD = os.path.abspath(sys.argv.pop(1))
    unittest.main(verbosity=2)
