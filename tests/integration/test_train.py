#!/usr/bin/env python3
"""gossip-train integration tests: 4 real gossipd on loopback (a ring,
PowerGossip), one gossip-train per node learning Fashion-MNIST from its
own shard; plus gossip-train's error messages, and tools/gossip-cluster
(the quick start's main job): its argument checks and a short run.

usage: test_train.py BUILD_DIR [unittest options]
"""
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "..", "tools"))
import gossipcluster as cluster  # noqa: E402

BUILD = None
FMNIST = "/usr/share/datasets/fashion-mnist"
RING4 = "Method = powergossip\nRank = 4\nGamma = auto\nTopology = ring\nNodes = 4\n"
CLUSTER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..",
                       "tools", "gossip-cluster")
# A small network keeps the run short on 2 cores and the dumps cheap to
# compare in Python.
LAYERS = "784-128-10"


def relative_consensus(models):
    """(1/n) sum_i ||x_i - mean||^2 / ||mean||^2."""
    n, f = len(models), len(models[0])
    mean = [sum(m[j] for m in models) / n for j in range(f)]
    spread = sum((m[j] - mean[j]) ** 2 for m in models for j in range(f)) / n
    return spread / sum(v * v for v in mean)


def train_bin():
    return os.path.join(BUILD, "examples", "gossip-train")


@unittest.skipUnless(os.path.exists(os.path.join(FMNIST, "t10k-labels-idx1-ubyte.gz")),
                     "dataset-fashion-mnist is not installed")
class Train(unittest.TestCase):
    def test_ring4_learns_and_reaches_consensus(self):
        """One epoch on a 4-ring: every node beats chance by far, the
        consensus estimate falls during the final AVERAGE, and the dumped
        models agree afterwards."""
        c = cluster.Cluster(BUILD, 4, node_conf=RING4)
        if not os.environ.get("GSP_KEEP_TMP"):
            self.addCleanup(c.remove)
        self.addCleanup(lambda: self.assertEqual(c.sanitizer_reports(), []))
        self.addCleanup(c.close)
        c.start()
        dumps = [os.path.join(c.dir, "final%d" % i) for i in range(c.n)]
        t0 = time.monotonic()
        procs = [c.train(i, "--layers", LAYERS, "--epochs", "1",
                         "--report-every", "50", "--average-target", "1e-3",
                         "--average-time", "20000", "--dump", dumps[i])
                 for i in range(c.n)]
        records = []
        for i, p in enumerate(procs):
            out, err = p.communicate(timeout=120)
            self.assertEqual(p.returncode, 0, "trainer %d: %s\n%s"
                             % (i, err, c.tail_logs()))
            records.append([json.loads(line) for line in out.splitlines()])
        self.assertLess(time.monotonic() - t0, 90)

        for i, recs in enumerate(records):
            events = [r["event"] for r in recs]
            self.assertEqual(events.count("epoch"), 1, events)
            self.assertEqual(events[-1], "final", events)
            final = recs[-1]
            self.assertEqual(final["node"], i)
            # Chance is 10%; one epoch of a quarter of the data gets ~80%.
            self.assertGreater(final["test_accuracy"], 0.5, final)
            self.assertGreater(final["averaged_accuracy"], 0.5, final)
            # Gossip ran: bytes went out and steps reported an estimate.
            self.assertGreater(final["sent_mb"], 0, final)
            during = [r["consensus"] for r in recs if r["event"] == "step"
                      and r["consensus"] is not None]
            self.assertTrue(during, recs)
            self.assertGreater(final["average_rounds"], 0, final)
            self.assertLess(final["consensus"], during[-1] / 10,
                            "AVERAGE did not bring the estimate down: %s -> %s"
                            % (during[-1], final["consensus"]))

        # The averaged models themselves agree (they all started equal,
        # were pulled apart by their shards, then averaged).
        models = [cluster.read_floats(p) for p in dumps]
        self.assertLess(relative_consensus(models), 1e-4)
        accs = [r[-1]["averaged_accuracy"] for r in records]
        self.assertLess(max(accs) - min(accs), 0.01, accs)


class Errors(unittest.TestCase):
    def run_train(self, *args):
        return subprocess.run([train_bin()] + list(args), capture_output=True,
                              text=True, timeout=60)

    def test_usage_errors_exit_2(self):
        for args in (["--node", "4", "--nodes", "4", "--standalone"],
                     ["--layers", "784-0-10", "--standalone"],
                     ["--lr", "-1", "--standalone"],
                     ["--precision", "float8", "--standalone"],
                     []):
            r = self.run_train(*args)
            self.assertEqual(r.returncode, 2, (args, r.stderr))
            self.assertIn("gossip-train:", r.stderr)
        # Errors without an offending value name none (no stray '').
        for args, text in (([], "--socket is required (or --standalone)"),
                           (["--node", "4", "--nodes", "4", "--standalone"],
                            "--node must be below --nodes")):
            r = self.run_train(*args)
            self.assertEqual(r.stderr, "gossip-train: %s (see --help)\n" % text)
        r = self.run_train("--help")
        self.assertEqual(r.returncode, 0)
        self.assertIn("--standalone", r.stdout)

    def test_missing_dataset_names_the_package(self):
        with tempfile.TemporaryDirectory() as empty:
            r = self.run_train("--standalone", "--data-dir", empty)
        self.assertEqual(r.returncode, 1)
        self.assertIn("dataset-fashion-mnist", r.stderr)

    @unittest.skipUnless(os.path.exists(os.path.join(FMNIST, "t10k-labels-idx1-ubyte.gz")),
                         "dataset-fashion-mnist is not installed")
    def test_no_daemon_says_so(self):
        with tempfile.TemporaryDirectory() as d:
            r = self.run_train("--socket", os.path.join(d, "nothing.sock"))
        self.assertEqual(r.returncode, 1)
        self.assertIn("gossipd is not running", r.stderr)
        self.assertIn("--standalone", r.stderr)


class GossipCluster(unittest.TestCase):
    """tools/gossip-cluster, with TMPDIR pointed at an empty directory so
    that whatever it leaves behind is seen."""

    def run_cluster(self, *args):
        tmp = tempfile.TemporaryDirectory()
        self.addCleanup(tmp.cleanup)
        # A later --build wins over this one.
        r = subprocess.run([CLUSTER, "--build", BUILD] + list(args),
                           capture_output=True, text=True, timeout=240,
                           env=dict(os.environ, TMPDIR=tmp.name))
        return r, os.listdir(tmp.name)

    def test_bad_arguments_exit_2_and_create_nothing(self):
        for args, text in ((["--topology", "hypercube"], "invalid choice: 'hypercube'"),
                           (["--topology", "torus", "--nodes", "7"],
                            "--topology torus needs --nodes a x b"),
                           (["--method", "sgd"], "invalid choice: 'sgd'"),
                           (["--rank", "0"], "--rank needs 1..1024"),
                           (["--nodes", "1"], "--nodes needs 2..4096"),
                           (["--layers", "784-0-10"], "--layers:"),
                           (["--momentum", "1"], "--momentum 0 <= M < 1"),
                           (["--precision", "float8"], "invalid choice: 'float8'"),
                           (["--method", "exact", "--precision", "float16"],
                            "--precision float16: PowerGossip's"),
                           (["--trainer", "test", "--precision", "bfloat16"],
                            "--precision bfloat16: PowerGossip's"),
                           (["--build", "/nonexistent"], "no daemon/gossipd")):
            r, left = self.run_cluster(*args)
            self.assertEqual(r.returncode, 2, (args, r.stderr))
            self.assertIn(text, r.stderr, args)
            self.assertEqual(left, [], args)

    @unittest.skipUnless(os.path.exists(os.path.join(FMNIST, "t10k-labels-idx1-ubyte.gz")),
                         "dataset-fashion-mnist is not installed")
    def test_one_epoch_run_labels_its_figures(self):
        r, left = self.run_cluster("--nodes", "2", "--epochs", "1",
                                   "--layers", "784-16-10", "--compare")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(left, [])
        self.assertIn("gossip-train 784-16-10, 1 epoch\n", r.stderr)
        self.assertNotIn("1 epochs", r.stderr + r.stdout)
        head = r.stdout.split("\n")[1].split()
        self.assertEqual(head[-4:], ["MB", "total", "payload", "seconds"], r.stdout)
        for text in ("MB: wire bytes sent per node, framing and handshakes included",
                     "MB total with the final AVERAGE",
                     "payload: exact gossip's message bytes over the message bytes sent",
                     "fewer while training (", "fewer including the final AVERAGE ("):
            self.assertIn(text, r.stdout)

    @unittest.skipUnless(os.path.exists(os.path.join(FMNIST, "t10k-labels-idx1-ubyte.gz")),
                         "dataset-fashion-mnist is not installed")
    def test_average_schedule_finite_ends_at_the_exact_average(self):
        """--average-schedule finite: the final AVERAGE ends with the
        graph's finite-time schedule (two exact rounds on a 4-ring), at
        the exact average: every node's consensus estimate is float
        rounding and every node scores the same, where gossip stops near
        its target (1e-3; on a pair gossip is exact too, so 4 nodes).  The
        same with --average-schedule matching (the 4-ring's two rounds of
        one model each)."""
        for schedule, lo, hi in (("finite", 0, 1e-5), ("matching", 0, 1e-5),
                                 ("off", 1e-5, 1.0)):
            r, left = self.run_cluster("--nodes", "4", "--epochs", "1", "--layers",
                                       "784-16-10", "--average-schedule", schedule)
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertEqual(left, [])
            lines = r.stdout.split("\n")
            head = lines[1].split()
            self.assertEqual(head[5:7], ["rounds", "estimate"], r.stdout)
            f = lines[2][len("powergossip rank 4 "):].split()
            averaged, estimate = f[1], float(f[3])
            self.assertTrue(lo <= estimate <= hi, (schedule, r.stdout))
            if schedule != "off":
                low, _, high = averaged.rstrip("%").split("/")
                self.assertEqual(low, high, r.stdout)

    def test_ctrl_c_stops_everything(self):
        """Ctrl-C (SIGINT to the whole process group, as a terminal sends
        it) while training: gossip-cluster exits 130 within seconds, and
        no daemon, trainer or temporary directory of its run is left."""
        tmp = tempfile.TemporaryDirectory()
        self.addCleanup(tmp.cleanup)
        p = subprocess.Popen([CLUSTER, "--build", BUILD, "--nodes", "2",
                              "--epochs", "50", "--layers", "784-16-10"],
                             stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                             env=dict(os.environ, TMPDIR=tmp.name),
                             start_new_session=True)
        self.addCleanup(lambda: p.poll() is None and os.killpg(p.pid, signal.SIGKILL))

        def ours():
            """PIDs of processes whose command line names our TMPDIR."""
            found = []
            for pid in filter(str.isdigit, os.listdir("/proc")):
                try:
                    with open("/proc/%s/cmdline" % pid, "rb") as f:
                        if tmp.name.encode() in f.read():
                            found.append(int(pid))
                except OSError:
                    pass
            return found
        def training():
            """Both daemons have a trainer's model registered."""
            socks = [os.path.join(tmp.name, d, "s%d" % i)
                     for d in os.listdir(tmp.name) for i in range(2)]
            try:
                return len(socks) == 2 and all(
                    cluster.status(s)["model"]["registered"] for s in socks)
            except (OSError, cluster.gossipd.GossipdError):   # not up yet
                return False
        self.assertTrue(cluster.eventually(training, 60), "the cluster did not start")
        self.assertGreaterEqual(len(ours()), 4)   # 2 daemons, 2 trainers
        os.killpg(p.pid, signal.SIGINT)
        try:
            rc = p.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.fail("gossip-cluster still running 20 s after Ctrl-C")
        p.stderr.close()
        self.assertEqual(rc, 130)
        self.assertEqual(ours(), [])
        self.assertEqual(os.listdir(tmp.name), [])


if __name__ == "__main__":
    BUILD = os.path.abspath(sys.argv.pop(1))
    unittest.main(verbosity=2)
