#!/usr/bin/env python3
"""The C client (libgossip.so, through ctypes) against the Python codec:
libgossip/client.c talks to the fake daemon (fakedaemon.py), so every
request it sends was encoded by proto/api.c and must equal the Python
encoding of the same values, and every reply the Python codec encodes
must decode in C to the same fields.  Standard library only.

usage: test_c_client.py PATH_TO_LIBGOSSIP_SO [unittest options]
"""
import ctypes
import errno
import os
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import fakedaemon  # noqa: E402
from fakedaemon import P  # noqa: E402
from gossipd import undo  # noqa: E402

LIB = None


class Tensor(ctypes.Structure):        # gsp_tensor (libgossip/gossip.h)
    _fields_ = [("name", ctypes.c_char * 64), ("ndim", ctypes.c_uint),
                ("shape", ctypes.c_uint64 * 8), ("offset", ctypes.c_uint64),
                ("numel", ctypes.c_uint64), ("m", ctypes.c_uint64),
                ("k", ctypes.c_uint64), ("compressed", ctypes.c_bool)]


class StepOk(ctypes.Structure):        # gsp_client_step_result (client.h)
    _fields_ = [("step", ctypes.c_uint64), ("edges_applied", ctypes.c_uint32),
                ("edges_projected", ctypes.c_uint32), ("edges_skipped", ctypes.c_uint32),
                ("max_staleness", ctypes.c_uint32), ("bytes_sent", ctypes.c_uint64),
                ("bytes_received", ctypes.c_uint64), ("consensus_estimate", ctypes.c_double),
                ("offline", ctypes.c_bool), ("offline_steps", ctypes.c_uint64),
                ("reconnects", ctypes.c_uint32)]


class AverageOk(ctypes.Structure):     # gsp_client_average_result
    _fields_ = [("rounds", ctypes.c_uint32), ("estimate", ctypes.c_double),
                ("reached", ctypes.c_bool)]


class CClient(unittest.TestCase):
    def setUp(self):
        self.lib = ctypes.CDLL(LIB)
        self.lib.gsp_client_last_error.restype = ctypes.c_char_p
        self.fake = fakedaemon.FakeDaemon()
        self.addCleanup(self.fake.close)
        self.c = ctypes.c_void_p()
        r = self.lib.gsp_client_connect(self.fake.path.encode(), b"c-client",
                                        ctypes.byref(self.c))
        self.assertEqual(r, 0)
        self.addCleanup(self.lib.gsp_client_close, self.c)

    def test_requests_match_the_python_encoding(self):
        ts = (Tensor * 3)()
        for t, (name, shape) in zip(ts, [("conv.w", (4, 3, 2)), ("b", (4,)), ("s", ())]):
            t.name, t.ndim = name.encode(), len(shape)
            for i, d in enumerate(shape):
                t.shape[i] = d
        params = ctypes.POINTER(ctypes.c_float)()
        self.assertEqual(self.lib.gsp_client_register(self.c, ts, 3, ctypes.byref(params)), 0)
        self.assertEqual(self.lib.gsp_client_step(self.c, P.STEP_SYNC, None), 0)
        self.assertEqual(self.lib.gsp_client_average(
            self.c, ctypes.c_double(2.5e-4), 1500, 9, None), 0)
        self.assertEqual(self.lib.gsp_client_detach(self.c), 0)
        raw = [r[2] for r in self.fake.requests]
        self.assertEqual(raw, [
            P.encode_hello("c-client"),
            P.encode_register(undo.nbytes(29), [("conv.w", (4, 3, 2)), ("b", (4,)), ("s", ())]),
            P.encode_step(P.STEP_SYNC), P.encode_average(2.5e-4, 1500, 9),
            P.encode_detach()])
        want = 0x1 | 0x2 | 0x4             # F_SEAL_SEAL | SHRINK | GROW
        self.assertEqual(self.fake.seals & want, want, "the C client seals as Python does")

    def test_replies_decode_in_c_to_the_same_fields(self):
        st = P.StepStats(2**40 + 5, 3, 4, 5, 6, 2**33, 2**34 + 1, 0.125)
        self.fake.replies = {P.STEP: P.encode_step_ok(st),
                             P.AVERAGE: P.encode_average_ok(P.AverageResult(77, 1.5e-5, True)),
                             P.STATUS: P.encode_status_ok('{"x": "é"}')}
        out = StepOk()
        self.assertEqual(self.lib.gsp_client_step(self.c, 0, ctypes.byref(out)), 0)
        self.assertEqual(tuple(getattr(out, f) for f in P.StepStats._fields), tuple(st))
        self.assertEqual((out.offline, out.offline_steps, out.reconnects), (False, 0, 0))
        avg = AverageOk()
        self.assertEqual(self.lib.gsp_client_average(
            self.c, ctypes.c_double(0), 0, 1, ctypes.byref(avg)), 0)
        self.assertEqual((avg.rounds, avg.estimate, avg.reached), (77, 1.5e-5, True))
        js = ctypes.c_char_p()
        self.assertEqual(self.lib.gsp_client_status(self.c, ctypes.byref(js)), 0)
        self.assertEqual(js.value.decode(), '{"x": "é"}')

    def test_error_reply_code_and_text(self):
        for code in (-errno.EBUSY, -4099, -2**31):
            self.fake.replies = {P.STEP: P.encode_error(code, "why %d" % code)}
            self.assertEqual(self.lib.gsp_client_step(self.c, 0, None), code)
            self.assertEqual(self.lib.gsp_client_last_error(self.c).decode(), "why %d" % code)


if __name__ == "__main__":
    LIB = sys.argv.pop(1)
    try:
        ctypes.CDLL(LIB)
    except OSError as e:               # e.g. a sanitizer build
        print("SKIP: cannot load %s: %s" % (LIB, e))
        sys.exit(77)
    unittest.main()
