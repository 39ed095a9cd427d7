#!/usr/bin/env python3
"""The C client (libgossip.so, through ctypes) against the Python codec:
libgossip/client.c talks to the fake daemon (fakedaemon.py), so every
request it sends was encoded by proto/api.c and must equal the Python
encoding of the same values, and every reply the Python codec encodes
must decode in C to the same fields.  And the constants the Python
package keeps (gossipd._lib, gossipd.checks, gossipd.errors, the tests'
codec gossipd.protocol) against the C headers they come from.  Standard
library only.

usage: test_c_client.py PATH_TO_LIBGOSSIP_SO [unittest options]
"""
import ctypes
import errno
import os
import re
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import fakedaemon  # noqa: E402
from fakedaemon import P  # noqa: E402
from gossipd import _lib, checks, errors  # noqa: E402
from gossipd._lib import Tensor  # noqa: E402
from gossipd._lib import AverageResult as AverageOk  # noqa: E402
from gossipd._lib import StepResult as StepOk  # noqa: E402

LIB = None
ROOT = os.path.join(HERE, "..", "..")


def header_values(*paths):
    """{NAME: int} of the #defines and enum constants of C headers whose
    values are integer expressions (implicit enum values counted)."""
    out = {}

    def num(expr):
        expr = re.sub(r"/\*.*", "", re.sub(r"/\*.*?\*/", "", expr)).strip()
        expr = re.sub(r"\b(0x[0-9a-fA-F]+|\d+)[uU]?[lL]*\b", r"\1", expr)
        expr = expr.replace("UINT32_MAX", str(2**32 - 1))
        if not re.fullmatch(r"[\w\s()<>|+*-]*", expr):
            return None
        try:
            return int(eval(expr, {"__builtins__": {}}, dict(out)))
        except Exception:
            return None
    for path in paths:
        with open(os.path.join(ROOT, path)) as f:
            text = f.read()
        for name, expr in re.findall(r"^#define\s+(GSP_\w+)[ \t]+([^\n]+)$", text, re.M):
            v = num(expr)
            if v is not None:
                out[name] = v
        for body in re.findall(r"\benum\s+\w*\s*\{(.*?)\}", text, re.S):
            body = re.sub(r"/\*.*?\*/", "", body, flags=re.S)
            nxt = 0
            for item in body.split(","):
                m = re.match(r"\s*(GSP_\w+)\s*(?:=\s*(.+))?$", item.strip() and item, re.S)
                if not m:
                    continue
                v = nxt if m.group(2) is None else num(m.group(2))
                out[m.group(1)] = v
                nxt = v + 1
    return out


class Constants(unittest.TestCase):
    """What the Python package keeps of the C headers holds their values."""

    C = header_values("libgossip/gossip.h", "libgossip/client.h", "proto/proto.h")

    def same(self, pairs):
        for py, name in pairs:
            self.assertTrue(name in self.C, name + " not found in the headers")
            self.assertEqual(py, self.C[name], name)

    def test_the_client_layer(self):
        self.same([(_lib.NO_TIMEOUT, "GSP_CLIENT_NO_TIMEOUT"),
                   (_lib.NO_RECONNECT, "GSP_CLIENT_NO_RECONNECT"),
                   (_lib.NO_UNDO, "GSP_CLIENT_NO_UNDO"),
                   (_lib.ERROR_TEXT_MAX, "GSP_CLIENT_ERROR_TEXT_MAX"),
                   (_lib.NAME_MAX, "GSP_NAME_MAX"), (_lib.MAX_DIMS, "GSP_MAX_DIMS")])
        stages = ["OK", "LOCAL", "CONNECT", "IO", "DAEMON", "VERSION", "FRAME", "REPLY"]
        self.same([(getattr(_lib, "STAGE_" + s), "GSP_CLIENT_" + s) for s in stages])
        self.same([(getattr(_lib, s), "GSP_CLIENT_" + s)
                   for s in ("CONNECTED", "OFFLINE", "UNUSABLE")])

    def test_the_argument_checks_and_errors(self):
        self.same([(checks.NAME_MAX, "GSP_CLIENT_NAME_MAX"),
                   (checks.WIRE_NAME_MAX, "GSP_CLIENT_TENSOR_NAME_MAX"),
                   (checks.WIRE_MAX_DIMS, "GSP_MAX_DIMS"),
                   (checks.MAX_TENSORS, "GSP_CLIENT_MAX_TENSORS"),
                   (checks.API_MAX_FRAME, "GSP_CLIENT_MAX_FRAME"),
                   (checks.STEP_SYNC, "GSP_CLIENT_STEP_SYNC"),
                   (checks.STEP_DRAIN, "GSP_CLIENT_STEP_DRAIN")])
        self.same([(i + 1, "GSP_CLIENT_PRECISION_" + p.upper())
                   for i, p in enumerate(checks.PRECISIONS)])
        self.same([(getattr(errors, n), n) for n in
                   ("GSP_ENONFINITE", "GSP_ESTATE", "GSP_ESHAPE", "GSP_EROUND")])

    def test_the_test_codec(self):
        names = ["HELLO", "REGISTER", "STEP", "AVERAGE", "STATUS", "DETACH",
                 "HELLO_OK", "OK", "STEP_OK", "AVERAGE_OK", "STATUS_OK", "ERROR"]
        self.same([(getattr(P, n), "GSP_API_" + n) for n in names])
        self.same([(P.UNDO_HEADER, "GSP_UNDO_HEADER"), (P.UNDO_IDLE, "GSP_UNDO_IDLE"),
                   (P.UNDO_WRITING, "GSP_UNDO_WRITING"), (P.UNDO_UNDONE, "GSP_UNDO_UNDONE")])


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
            P.encode_register(P.undo_nbytes(29), [("conv.w", (4, 3, 2)), ("b", (4,)), ("s", ())]),
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

    def test_method_names_in_the_c_order(self):
        """checks.METHODS names the C client's methods in their wire order."""
        self.lib.gsp_client_detach(self.c)
        for name in checks.METHODS:
            t = (Tensor * 1)()
            t[0].name, t[0].ndim, t[0].shape[0] = b"w", 1, 4
            o = _lib.RegisterOptions(name.encode(), 0, 0.0, 0, 0)
            params = ctypes.POINTER(ctypes.c_float)()
            self.assertEqual(self.lib.gsp_client_register_opts(
                self.c, t, 1, ctypes.byref(o), ctypes.byref(params)), 0, name)
            reg = P.decode_register(self.fake.requests[-1][2])
            self.assertEqual(reg.options.method, name)
            self.assertEqual(self.lib.gsp_client_detach(self.c), 0)

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
