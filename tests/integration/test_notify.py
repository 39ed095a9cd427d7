#!/usr/bin/env python3
"""gossipd never blocks on a service manager that does not read its
notifications (suite 'integration'): with $NOTIFY_SOCKET's queue full
from the start, gossipd still serves its socket and stops at SIGTERM at
once (sd_notify blocked the loop: 53 of 64 daemons of gossip-cluster hung
at shutdown).

usage: test_notify.py BUILD_DIR
"""
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "..", "tools"))
import gossipcluster as cluster  # noqa: E402

BUILD = None


class Notify(unittest.TestCase):
    def test_full_notify_queue_blocks_nothing(self):
        d = tempfile.mkdtemp(prefix="gossipd-notify-")
        self.addCleanup(lambda: subprocess.run(["rm", "-rf", d]))
        path = os.path.join(d, "notify")
        sink = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        sink.bind(path)
        self.addCleanup(sink.close)
        # Fill the queue: nobody reads it from now on.
        w = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        w.setblocking(False)
        for _ in range(100000):
            try:
                w.sendto(b"X" * 512, path)
            except BlockingIOError:
                break
        else:
            self.fail("the notify queue never filled")
        w.close()
        conf = os.path.join(d, "gossipd.conf")
        with open(conf, "w") as f:
            f.write("[Node]\nListenAddress = 127.0.0.1:0\nPrivateKeyFile = %s\n"
                    "Socket = %s\n" % (os.path.join(d, "key"), os.path.join(d, "sock")))
        log = open(os.path.join(d, "log"), "w")
        p = subprocess.Popen([os.path.join(BUILD, "daemon", "gossipd"), "--config", conf],
                             stdout=log, stderr=log,
                             env=dict(os.environ, NOTIFY_SOCKET=path))
        self.addCleanup(lambda: cluster.kill(p))
        sock = os.path.join(d, "sock")
        self.assertTrue(cluster.eventually(lambda: os.path.exists(sock), 10),
                        "gossipd never served its socket")
        self.assertTrue(cluster.eventually(lambda: cluster.status(sock)["version"], 10))
        t0 = time.monotonic()
        p.send_signal(signal.SIGTERM)
        self.assertEqual(p.wait(timeout=10), 0)
        self.assertLess(time.monotonic() - t0, 3.0)
        with open(os.path.join(d, "log")) as f:
            self.assertIn("cannot notify the service manager", f.read())


if __name__ == "__main__":
    BUILD = sys.argv.pop(1)
    unittest.main(verbosity=2)
