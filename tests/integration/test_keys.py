#!/usr/bin/env python3
"""The static private key's handling, with real daemons on loopback
(issue 13, "Keys"): a key file readable by others is warned about; the
daemon's memory holds one copy of the key and no text of it; and the
daemon is not dumpable, so that neither a core file nor another process
of its user (ptrace, /proc/PID/mem) can read the key.

usage: test_keys.py BUILD_DIR [unittest options]
"""
import base64
import os
import shutil
import subprocess
import sys
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "..", "tools"))
import gossipcluster as cluster  # noqa: E402

BUILD = None
NOBODY = 65534
SCAN_MAX = 1 << 30            # the largest mapping scanned for the key
CHUNK = 4 << 20


def scan(mem, lo, hi, needles):
    """How many times each needle occurs in [lo, hi) of a /proc/PID/mem,
    read in chunks that overlap by a needle's length; 0s for a mapping
    that cannot be read ([vvar])."""
    counts = [0] * len(needles)
    keep = max(len(n) for n in needles) - 1
    tail = b""
    at = lo
    while at < hi:
        try:
            mem.seek(at)
            data = mem.read(min(CHUNK, hi - at))
        except (OSError, ValueError, OverflowError):
            return counts
        if not data:
            break
        buf = tail + data
        for k, n in enumerate(needles):
            # Each occurrence once: those ending in the new bytes.
            counts[k] += buf.count(n) - tail.count(n)
        tail = buf[-keep:]
        at += len(data)
    return counts


class Keys(unittest.TestCase):
    def test_key_file_readable_by_others_is_warned_about(self):
        """Node 0's key file is mode 644, node 1's 600: only node 0 warns,
        naming the file and its mode."""
        c = cluster.owned_by(self, cluster.Cluster(BUILD, 2))
        os.chmod(c.keys[0][0], 0o644)
        os.chmod(c.keys[1][0], 0o600)
        c.start()
        self.assertIn("the key file %s is readable by others (mode 644)" % c.keys[0][0],
                      c.log(0))
        self.assertNotIn("readable by others", c.log(1))

    @unittest.skipUnless(os.geteuid() == 0, "needs root to read another process's memory")
    def test_one_copy_of_the_key_in_memory(self):
        """Node 0 has its key inline in its config.  Once its session with
        node 1 is up (handshakes done, links made), its memory holds the
        raw private key exactly once (the guarded copy every link points
        at) and its base64 text nowhere (the config text was wiped, and
        no buffer that held it stays alive).  A second copy of the key
        (a mutation: a heap copy of the guarded one) fails it; leaving
        out the wipe of the freed config text alone does not, since the
        allocator reuses that memory before the scan."""
        c = cluster.owned_by(self, cluster.Cluster(BUILD, 2))
        with open(c.keys[0][0]) as f:
            b64 = f.read().strip()
        raw = base64.b64decode(b64)
        self.assertEqual(len(raw), 32)
        conf = c.write_config(0)
        with open(conf) as f:
            text = f.read()
        self.assertIn("PrivateKeyFile = %s\n" % c.keys[0][0], text)
        os.unlink(c.keys[0][0])
        inline = text.replace("PrivateKeyFile = %s\n" % c.keys[0][0], "PrivateKey = %s\n" % b64)
        c.write_config = lambda i, **kw: conf if i == 0 else type(c).write_config(c, i, **kw)
        with open(conf, "w") as f:
            f.write(inline)
        c.start()
        self.assertTrue(cluster.eventually(
            lambda: cluster.status(c.sockets[0])["edges"][0]["state"] in ("idle", "up")),
            c.tail_logs())
        found_raw = found_b64 = 0
        pid = c.procs[0].pid
        with open("/proc/%d/maps" % pid) as maps, open("/proc/%d/mem" % pid, "rb", 0) as mem:
            for line in maps:
                addr, perms = line.split()[:2]
                lo, hi = (int(x, 16) for x in addr.split("-"))
                # Readable mappings, not AddressSanitizer's shadow (terabytes
                # reserved: nothing of ours lives there).
                if perms[0] != "r" or hi - lo > SCAN_MAX:
                    continue
                raw_n, b64_n = scan(mem, lo, hi, (raw, b64.encode()))
                found_raw += raw_n
                found_b64 += b64_n
        self.assertEqual(found_b64, 0, "the key's base64 text is still in memory")
        self.assertEqual(found_raw, 1, "the raw key is in memory %d times" % found_raw)

    @unittest.skipUnless(os.geteuid() == 0 and shutil.which("setpriv"),
                         "needs root and setpriv (util-linux) to run gossipd as nobody")
    def test_daemon_is_not_dumpable(self):
        """gossipd run as nobody: its /proc/PID files belong to root, which
        the kernel does for a process that is not dumpable (PR_SET_DUMPABLE
        0), and not to nobody, as they would for a dumpable one."""
        wrap = ["setpriv", "--reuid=%d" % NOBODY, "--regid=%d" % NOBODY, "--clear-groups"]
        c = cluster.owned_by(self, cluster.Cluster(BUILD, 2, wrap=lambda i: wrap))
        os.chmod(c.dir, 0o777)
        for path, _ in c.keys:
            os.chown(path, NOBODY, NOBODY)
        os.chmod(c.notify_path, 0o666)
        c.start()
        pid = c.procs[0].pid
        with open("/proc/%d/status" % pid) as f:
            uid = [line.split()[1] for line in f if line.startswith("Uid:")][0]
        self.assertEqual(int(uid), NOBODY, "the daemon does not run as nobody")
        self.assertEqual(os.stat("/proc/%d/status" % pid).st_uid, 0,
                         "/proc/%d belongs to nobody: the daemon is dumpable" % pid)
        # The same wrapper on a dumpable program, so the check can fail.
        p = subprocess.Popen(wrap + ["sleep", "30"])
        self.addCleanup(p.wait)
        self.addCleanup(p.kill)
        self.assertTrue(cluster.eventually(
            lambda: os.stat("/proc/%d/status" % p.pid).st_uid == NOBODY))


if __name__ == "__main__":
    BUILD = os.path.abspath(sys.argv.pop(1))
    unittest.main(verbosity=2)
