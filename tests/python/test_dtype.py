#!/usr/bin/env python3
"""Integration test of 16-bit parameters (PROTOCOL.md 5.3): 3 real gossipd
on loopback (tools/gossipcluster.py, a ring of 3: every pair an edge) and
trainers that register float16 or bfloat16 buffers through
gossipd.Client.register(dtype=...).

- Trainers change their 16-bit buffers between steps, then gossip alone
  until the nodes agree.  The daemons gossip float32 masters and take in
  each trainer's change as the change of its 16-bit value, so the network
  average of the masters ends at the initial average plus the trainers'
  changes, exactly up to float32 rounding: it never takes the rounding to
  16 bits in.  What the test sees are the buffers, each the rounded
  master: every value of every node is asserted within half a 16-bit unit
  in the last place (ulp) of that expected average, plus 1e-5 of it (the
  masters' float32 rounding and their last distance from one another).
  That bound does not grow with the number of steps.
- A REGISTER with a dtype the daemon does not know is refused with the
  reason, and the daemon stays free.
- Two ends of different dtypes refuse the edge, each naming both.

Needs NumPy (exit 77, a meson skip, without it).

usage: test_dtype.py BUILD_DIR [unittest options]
"""
import errno
import fcntl
import os
import re
import socket
import sys
import unittest

from daemonharness import np, cluster, gossipd, ClusterCase  # noqa: E402 (exit 77 without NumPy)
from gossipd import protocol as P  # noqa: E402

BUILD = None
CONF = "Method = powergossip\nRank = 2\nGamma = 1\nMaxWait = 60000\n"
TENSORS = [("w", (12, 8)), ("b", (8,))]
TRAIN_STEPS, GOSSIP_STEPS = 15, 60


def values(a, dtype):
    """A buffer array's values as float64 (bfloat16: uint16 bits)."""
    if dtype == "bfloat16":
        return (a.astype(np.uint32) << 16).view(np.float32).astype(np.float64)
    return a.astype(np.float64)


def rounded(x, dtype):
    """float64 values x as the buffer's dtype, rounded to nearest even,
    in the array kind Client.register returns."""
    if dtype == "float16":
        return x.astype(np.float16)
    f = x.astype(np.float32).view(np.uint32).astype(np.uint64)
    return ((f + 0x7FFF + ((f >> 16) & 1)) >> 16).astype(np.uint16)


def half_ulp(x, dtype):
    """Half the spacing of 16-bit values of dtype at x (normal range)."""
    _, e = np.frexp(x)
    bits = 11 if dtype == "float16" else 8
    return np.ldexp(0.5, e - bits)


class Dtype(ClusterCase):
    def setUp(self):
        self.c = cluster.owned_by(self, cluster.Cluster(BUILD, 3, node_conf=CONF))
        self.c.start()

    def check_average_kept(self, dtype):
        apis = [self.client(i) for i in range(3)]
        flats = []
        for i, api in enumerate(apis):
            # float16 as NumPy's dtype on one node, as the name on the others
            api.register(TENSORS, dtype=np.float16 if dtype == "float16" and i == 0 else dtype)
            rng = np.random.default_rng(i)
            x = 0.5 + rng.random(api.flat.shape)          # in [0.5, 1.5)
            api.flat[...] = rounded(x, dtype)
            flats.append(api.flat)
        self.assertEqual(flats[0].dtype, np.float16 if dtype == "float16" else np.uint16)
        # The expected network average: the initial one plus the trainers'
        # changes of their 16-bit values, over the 3 nodes.
        total = sum(values(f, dtype) for f in flats)
        changes = [np.zeros_like(total) for _ in apis]
        for api in apis:
            api.wait_edges(2, timeout=15)
        model = cluster.status(self.c.sockets[0])["model"]
        self.assertEqual(model["dtype"], dtype)
        self.assertRegex(model["summary"], r"^powergossip r2 %s, 2 tensors, 104 floats" % dtype)

        def train(i, api):
            rng = np.random.default_rng(10 + i)
            for _ in range(TRAIN_STEPS):
                old = values(api.flat, dtype)
                new = old + rng.normal(0, 0.01, old.shape)
                api.flat[...] = rounded(new, dtype)
                changes[i] += values(api.flat, dtype) - old
                api.step(sync=True)
        self.together(apis, train)
        self.together(apis, lambda i, api: [api.step(sync=True)
                                             for _ in range(GOSSIP_STEPS)])
        mean = (total + sum(changes)) / 3
        bound = half_ulp(mean, dtype) + 1e-5 * np.abs(mean)
        for i, f in enumerate(flats):
            err = np.abs(values(f, dtype) - mean)
            worst = int(np.argmax(err / bound))
            self.assertTrue(np.all(err <= bound),
                            "node %d value %d: %.9g, the average %.9g, bound %.3g"
                            % (i, worst, values(f, dtype)[worst], mean[worst],
                               bound[worst]))

    def test_float16_average_kept(self):
        self.check_average_kept("float16")

    def test_bfloat16_average_kept(self):
        self.check_average_kept("bfloat16")

    def raw_register(self, dtype_code):
        """A REGISTER of TENSORS asking dtype_code, through the tests'
        codec (the clients refuse a code they do not know): the reply."""
        o = P.register_options(dtype=dtype_code)
        ts, n = P.tensor_list(TENSORS)
        fd = os.memfd_create("dtype", os.MFD_CLOEXEC | os.MFD_ALLOW_SEALING)
        self.addCleanup(os.close, fd)
        os.ftruncate(fd, 2 * n)
        fcntl.fcntl(fd, fcntl.F_ADD_SEALS, fcntl.F_SEAL_SHRINK | fcntl.F_SEAL_GROW)
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.addCleanup(s.close)
        s.settimeout(10)
        s.connect(self.c.sockets[0])
        s.sendall(P.frame(P.encode_hello("raw")))
        P.decode_hello_ok(cluster.read_reply(s))
        socket.send_fds(s, [P.frame(P.encode_register(2 * n, ts, o))], [fd])
        return cluster.read_reply(s)

    def test_unknown_dtype_refused_with_the_reason(self):
        code, text = P.decode_error(self.raw_register(7))
        self.assertEqual(code, -errno.EOPNOTSUPP)
        self.assertIn("dtype 7 is unknown: this daemon knows float32 (0), float16 (1) "
                      "and bfloat16 (2)", text)
        self.assertFalse(cluster.status(self.c.sockets[0])["model"]["registered"])
        # The clients refuse it before sending: the name is checked.
        api = self.client(0)
        with self.assertRaises(gossipd.InvalidArgument) as cm:
            api.register(TENSORS, dtype="float64")
        self.assertIn("unknown parameter dtype 'float64'", str(cm.exception))
        api.register(TENSORS, dtype="bfloat16")
        self.assertTrue(cluster.status(self.c.sockets[0])["model"]["registered"])

    def test_different_dtypes_refuse_the_edge_naming_both(self):
        apis = [self.client(i) for i in range(2)]
        apis[0].register(TENSORS, dtype="bfloat16")
        apis[1].register(TENSORS, dtype="float16")
        names = {0: ("bfloat16", "float16"), 1: ("float16", "bfloat16")}

        def why(i):
            edges = cluster.status(self.c.sockets[i])["edges"]
            return " ".join(e["last_error"] or "" for e in edges)
        for i in range(2):
            self.assertTrue(cluster.eventually(lambda: "model mismatch" in why(i)),  # noqa: B023
                            self.c.tail_logs())
            ours, theirs = names[i]
            self.assertRegex(why(i), r"model mismatch \(settings differ\): ours "
                             r"powergossip r2 %s, .*; theirs powergossip r2 %s, "
                             % (re.escape(ours), re.escape(theirs)))


if __name__ == "__main__":
    BUILD = sys.argv.pop(1)
    unittest.main()
