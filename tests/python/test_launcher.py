#!/usr/bin/env python3
"""Tests of tools/gossip-run: the copies' environment, the worst exit
status, signals passed on (and a second one kills), and --local-cluster:
real gossipd on loopback, a NumPy model per daemon trained to a finish()
that reaches the target on both, every daemon gone afterwards.  The
script run is launched.py.

usage: test_launcher.py BUILD_DIR [unittest options]
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

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "..", "tools"))
import gossipcluster  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
GOSSIP_RUN = os.path.join(HERE, "..", "..", "tools", "gossip-run")
LAUNCHED = os.path.join(HERE, "launched.py")
BUILD = None
WAIT = 30.0          # the bound of every wait here


def eventually(cond, timeout=WAIT):
    """cond() once it holds, within the bound of every wait here."""
    return gossipcluster.eventually(cond, timeout, interval=0.01)


def gone(pid):
    """pid has exited and been reaped (or is a zombie nobody reaps)."""
    try:
        with open("/proc/%d/stat" % pid) as f:
            return f.read().split(") ")[1][0] in "ZX"
    except FileNotFoundError:
        return True


class Base(unittest.TestCase):
    def setUp(self):
        self.out = tempfile.mkdtemp(prefix="gossip-run-test-")
        self.addCleanup(shutil.rmtree, self.out, True)

    def run_launcher(self, *args, timeout=WAIT):
        p = subprocess.run([sys.executable, GOSSIP_RUN] + list(args), timeout=timeout,
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        return p.returncode, p.stderr

    def start(self, *args):
        """gossip-run in the background; at cleanup it and every copy that
        wrote its pid are killed, whatever the test saw."""
        err = open(os.path.join(self.out, "stderr"), "w+")
        self.addCleanup(err.close)
        p = subprocess.Popen([sys.executable, GOSSIP_RUN] + list(args),
                             stdout=subprocess.DEVNULL, stderr=err, text=True)
        p.err = err
        self.addCleanup(self.kill_started)
        self.addCleanup(lambda: p.poll() is None and (p.kill(), p.wait()))
        return p

    def finished(self, p, timeout=10):
        p.wait(timeout=timeout)
        p.err.seek(0)
        return p.err.read()

    def kill_started(self):
        for name in os.listdir(self.out):
            if name.startswith("started-"):
                with open(os.path.join(self.out, name)) as f:
                    try:
                        os.kill(int(f.read()), signal.SIGKILL)
                    except (ProcessLookupError, ValueError):
                        pass

    def markers(self, prefix, n):
        return all(os.path.exists(os.path.join(self.out, "%s-%d" % (prefix, r)))
                   for r in range(n))


class Environment(Base):
    def test_each_copy_gets_its_rank_world_and_socket(self):
        rc, err = self.run_launcher("--nproc-per-node", "3", "--socket", "/tmp/g.sock",
                                    LAUNCHED, "env", self.out)
        self.assertEqual(rc, 0, err)
        envs = {}
        for r in range(3):
            with open(os.path.join(self.out, "env-%d.json" % r)) as f:
                envs[r] = json.load(f)
        for r, env in envs.items():
            self.assertEqual((env["RANK"], env["LOCAL_RANK"], env["WORLD_SIZE"],
                              env["LOCAL_WORLD_SIZE"], env["GROUP_RANK"]),
                             (str(r), str(r), "3", "3", "0"))
            self.assertEqual(env["GOSSIPD_SOCKET"], "/tmp/g.sock")

    def test_ranks_across_machines_and_the_socket_from_the_environment(self):
        env = dict(os.environ, GOSSIPD_SOCKET="/tmp/from-env.sock")
        p = subprocess.run([sys.executable, GOSSIP_RUN, "--nproc-per-node", "2",
                            "--nnodes", "3", "--node-rank", "1", LAUNCHED, "env",
                            self.out], env=env, timeout=WAIT, capture_output=True,
                           text=True)
        self.assertEqual(p.returncode, 0, p.stderr)
        for local, rank in ((0, 2), (1, 3)):
            with open(os.path.join(self.out, "env-%d.json" % rank)) as f:
                e = json.load(f)
            self.assertEqual((e["LOCAL_RANK"], e["WORLD_SIZE"], e["GROUP_RANK"],
                              e["GOSSIPD_SOCKET"]),
                             (str(local), "6", "1", "/tmp/from-env.sock"))

    def test_several_trainers_per_local_daemon_are_refused_with_the_reason(self):
        rc, err = self.run_launcher("--local-cluster", "2", "--nproc-per-node", "2",
                                    LAUNCHED, "env", self.out)
        self.assertEqual(rc, 2)
        self.assertIn("one trainer per daemon", err)
        self.assertIn("node-core work", err)
        self.assertIn("--local-cluster 4 --nproc-per-node 1", err)
        self.assertEqual(os.listdir(self.out), [], "nothing started")


class ExitStatus(Base):
    def test_the_worst_exit_status(self):
        rc, err = self.run_launcher("--nproc-per-node", "3", LAUNCHED, "exit",
                                    self.out, "1:3")
        self.assertEqual(rc, 3, err)

    def test_a_copy_killed_by_sigkill_is_137(self):
        rc, err = self.run_launcher("--nproc-per-node", "3", LAUNCHED, "exit",
                                    self.out, "0:kill,2:3")
        self.assertEqual(rc, 128 + signal.SIGKILL, err)

    def test_all_well_is_0(self):
        rc, err = self.run_launcher("--nproc-per-node", "2", LAUNCHED, "exit",
                                    self.out, "0:0")
        self.assertEqual(rc, 0, err)


class Signals(Base):
    def test_sigterm_reaches_every_copy(self):
        p = self.start("--nproc-per-node", "3", LAUNCHED, "term", self.out)
        self.assertTrue(eventually(lambda: self.markers("started", 3)),
                        "the copies did not start")
        t0 = time.monotonic()
        p.send_signal(signal.SIGTERM)
        err = self.finished(p)
        self.assertTrue(self.markers("term", 3), "SIGTERM did not reach every copy: "
                        + err)
        self.assertEqual(p.returncode, 0, err)   # each handled it and exited 0
        self.assertLess(time.monotonic() - t0, 5)

    def test_a_second_signal_kills(self):
        p = self.start("--nproc-per-node", "2", LAUNCHED, "term", self.out, "ignore")
        self.assertTrue(eventually(lambda: self.markers("started", 2)))
        p.send_signal(signal.SIGTERM)
        self.assertTrue(eventually(lambda: self.markers("term", 2)),
                        "the first SIGTERM did not arrive")
        p.send_signal(signal.SIGINT)
        err = self.finished(p)
        self.assertEqual(p.returncode, 128 + signal.SIGKILL, err)


class LocalCluster(Base):
    def test_two_daemons_train_and_finish_then_are_gone(self):
        try:
            import numpy  # noqa: F401
        except ImportError:
            self.skipTest("NumPy is not installed (python3-numpy)")
        t0 = time.monotonic()
        rc, err = self.run_launcher(
            "--local-cluster", "2", "--nproc-per-node", "1",
            "--gossipd", os.path.join(BUILD, "daemon", "gossipd"),
            LAUNCHED, "train", self.out, timeout=120)
        self.assertEqual(rc, 0, err)
        res = []
        for r in range(2):
            with open(os.path.join(self.out, "train-%d.json" % r)) as f:
                res.append(json.load(f))
        for rank, r in enumerate(res):
            # RANK across the cluster, one trainer per daemon, its own socket.
            self.assertEqual(r["env"][:5], [str(rank), "0", "2", "1", str(rank)])
            self.assertTrue(r["reached"], r)
            self.assertLessEqual(r["estimate"], 1e-5)
            self.assertGreater(r["bytes"], 0)
        # Both ended at the same model: the average of the two optima
        # (1 and 2), as far as 30 steps from different starts came.
        for a, b in zip(res[0]["final"], res[1]["final"]):
            self.assertAlmostEqual(a, b, delta=1e-3)
        self.assertNotEqual(res[0]["daemon"], res[1]["daemon"])
        self.assertNotEqual(res[0]["env"][5], res[1]["env"][5])
        for r in res:
            self.assertTrue(gone(r["daemon"]), "gossipd %d is still running" % r["daemon"])
        tmp = err.split("configs and logs in ")[1].split()[0]
        self.assertFalse(os.path.exists(tmp), "its directory was removed")
        self.assertLess(time.monotonic() - t0, 60)


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    BUILD = os.path.abspath(sys.argv.pop(1))
    unittest.main()
