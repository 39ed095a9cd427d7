#!/usr/bin/env python3
"""Unit tests of gossipd.protocol against proto/api.c's byte layout.

The seed corpus of tests/fuzz/corpus/proto_api holds messages that the C
decoders accept and re-encode to the same bytes (fuzz_proto_api.c aborts
otherwise); the Python codec must decode each one to the expected values
and re-encode it byte for byte, and reject every truncation, trailing
byte, foreign type byte and other major as the C decoders do.
Standard library only.
"""
import errno
import math
import os
import re
import struct
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "bindings", "python"))
from gossipd import protocol as P  # noqa: E402
from gossipd.errors import InvalidArgument, ProtocolError  # noqa: E402

CORPUS = os.path.join(HERE, "..", "fuzz", "corpus", "proto_api")
SINGLE = ["average", "average_ok", "detach", "error", "hello", "hello_ok", "ok",
          "register", "status", "status_ok", "step", "step_ok"]
# REGISTERs with options (a prefix without them is a valid REGISTER, so
# they are not among SINGLE's every-truncation seeds), and two that the C
# decoder refuses: options cut short, an unknown method id.
OPTS = ["register_opts", "register_opts_rank", "register_opts_choco"]
OPTS_BAD = ["register_opts_cut", "register_opts_bad"]


def corpus(name):
    with open(os.path.join(CORPUS, name), "rb") as f:
        return f.read()


def encode(t, v):
    """Re-encodes a decoded message of type t."""
    return {
        P.HELLO: lambda: P.encode_hello(v.name, v.version),
        P.HELLO_OK: lambda: P.encode_hello_ok(v.name, v.version),
        P.REGISTER: lambda: P.encode_register(v.buffer_bytes, v.tensors, v.options),
        P.OK: P.encode_ok,
        P.STATUS: P.encode_status,
        P.DETACH: P.encode_detach,
        P.STEP: lambda: P.encode_step(v),
        P.STEP_OK: lambda: P.encode_step_ok(v),
        P.AVERAGE: lambda: P.encode_average(*v),
        P.AVERAGE_OK: lambda: P.encode_average_ok(v),
        P.STATUS_OK: lambda: P.encode_status_ok(v),
        P.ERROR: lambda: P.encode_error(v.code, v.text),
    }[t]()


class Corpus(unittest.TestCase):
    def test_every_seed_round_trips_byte_for_byte(self):
        for name in SINGLE:
            body = corpus(name)
            t, v = P.decode_any(body)
            self.assertEqual(encode(t, v), body, name)

    def test_seed_values(self):
        self.assertEqual(P.decode_hello(corpus("hello")), (0x0100, "trainer"))
        self.assertEqual(P.decode_hello_ok(corpus("hello_ok")).name, "gossipd 0.1.0")
        reg = P.decode_register(corpus("register"))
        self.assertEqual(reg.buffer_bytes, 900)
        self.assertEqual(reg.tensors, [("conv1.weight", (8, 3, 3, 3)),
                                       ("conv1.bias", (8,)), ("scale", ())])
        self.assertEqual(reg.n_floats, 216 + 8 + 1)
        self.assertEqual(P.decode_step(corpus("step")), P.STEP_SYNC)
        err = P.decode_error(corpus("error"))
        self.assertEqual(err.code, -errno.EBUSY)
        self.assertTrue(err.text.startswith("model already"))

    def test_request_stream_is_frames_of_valid_requests(self):
        data, types = corpus("request_stream"), []
        while data:
            n = P.frame_length(data[:4])
            body, data = data[4:4 + n], data[4 + n:]
            t, v = P.decode_any(body)
            self.assertEqual(encode(t, v), body)
            types.append(t)
        self.assertEqual(types[:2], [P.HELLO, P.REGISTER])

    def test_every_truncation_and_trailing_byte_is_ebadmsg(self):
        for name in SINGLE:
            body = corpus(name)
            for cut in range(len(body)):
                with self.assertRaises(ProtocolError, msg="%s[:%d]" % (name, cut)) as cm:
                    P.decode_any(body[:cut])
                self.assertEqual(cm.exception.code, -errno.EBADMSG, "%s[:%d]" % (name, cut))
            with self.assertRaises(ProtocolError) as cm:
                P.decode_any(body + b"\0")
            self.assertEqual(cm.exception.code, -errno.EBADMSG, name)

    def test_other_type_bytes_are_enomsg(self):
        body = corpus("step_ok")
        for t in range(256):
            if t == P.STEP_OK:
                continue
            with self.assertRaises(ProtocolError) as cm:
                P.decode_step_ok(bytes([t]) + body[1:])
            self.assertEqual(cm.exception.code, -errno.ENOMSG, hex(t))
        with self.assertRaises(ProtocolError) as cm:
            P.decode_any(b"\x46")
        self.assertEqual(cm.exception.code, -errno.ENOMSG)

    def test_other_major_is_eprotonosupport_any_minor_accepted(self):
        body = bytearray(corpus("hello_ok"))
        body[2] = 2                      # version 0x02xx
        with self.assertRaises(ProtocolError) as cm:
            P.decode_hello_ok(bytes(body))
        self.assertEqual(cm.exception.code, -errno.EPROTONOSUPPORT)
        body[1], body[2] = 7, 1          # version 1.7
        self.assertEqual(P.decode_hello_ok(bytes(body)).version, 0x0107)


class Layout(unittest.TestCase):
    """Offsets and sizes as PROTOCOL.md's table gives them."""

    def test_fixed_sizes(self):
        self.assertEqual(len(P.encode_step(0)), 5)
        self.assertEqual(len(P.encode_step_ok(P.StepStats(1, 2, 3, 4, 5, 6, 7, 0.5))), 49)
        self.assertEqual(len(P.encode_average(1e-3, 10, 0)), 17)
        self.assertEqual(len(P.encode_average_ok(P.AverageResult(1, 0.5, True))), 14)
        for b in (P.encode_ok(), P.encode_status(), P.encode_detach()):
            self.assertEqual(len(b), 1)

    def test_step_ok_field_offsets(self):
        b = P.encode_step_ok(P.StepStats(0x0102030405060708, 9, 10, 11, 12,
                                         2**40 + 1, 2**41 + 3, -0.0))
        self.assertEqual(b[0], 0xC2)
        self.assertEqual(b[1:9], bytes([8, 7, 6, 5, 4, 3, 2, 1]))
        self.assertEqual(struct.unpack_from("<IIII", b, 9), (9, 10, 11, 12))
        self.assertEqual(struct.unpack_from("<QQ", b, 25), (2**40 + 1, 2**41 + 3))
        self.assertEqual(b[41:49], struct.pack("<d", -0.0))
        nan = P.decode_step_ok(P.encode_step_ok(P.StepStats(1, 0, 0, 0, 0, 0, 0, math.nan)))
        self.assertTrue(math.isnan(nan.consensus_estimate))

    def test_register_layout(self):
        b = P.encode_register(40, [("w", (2, 3)), ("", ()), ("b", 3)])
        self.assertEqual(b, bytes([0x41]) + struct.pack("<QI", 40, 3) +
                         b"\x01w\x02" + struct.pack("<QQ", 2, 3) +
                         b"\x00\x00" + b"\x01b\x01" + struct.pack("<Q", 3))

    def test_error_code_is_twos_complement(self):
        b = P.encode_error(-4099, "shape")
        self.assertEqual(b[:5], b"\xff" + struct.pack("<I", 2**32 - 4099))
        self.assertEqual(P.decode_error(b), (-4099, "shape"))
        with self.assertRaises(ProtocolError):
            P.decode_error(b"\xff" + struct.pack("<I", 0) + b"\0\0")

    def test_frames(self):
        self.assertEqual(P.frame(b"\x44"), b"\x01\0\0\0\x44")
        self.assertEqual(P.frame_length(struct.pack("<I", P.API_MAX_FRAME)), P.API_MAX_FRAME)
        for n, code in ((0, -errno.EBADMSG), (P.API_MAX_FRAME + 1, -errno.EMSGSIZE)):
            with self.assertRaises(ProtocolError) as cm:
                P.frame_length(struct.pack("<I", n))
            self.assertEqual(cm.exception.code, code)
        with self.assertRaises(InvalidArgument):
            P.frame(b"")

    def test_text_bytes_survive_non_utf8(self):
        raw = b"\xff\xfe-name"
        body = struct.pack("<BHH", 0x40, P.VERSION, len(raw)) + raw
        self.assertEqual(P.encode_hello(P.decode_hello(body).name), body)


class RegisterOptions(unittest.TestCase):
    """REGISTER's options decode as proto/api.c decodes them."""

    def test_seeds_round_trip_and_carry_their_options(self):
        for name in OPTS:
            body = corpus(name)
            reg = P.decode_register(body)
            self.assertEqual(encode(P.REGISTER, reg), body, name)
        self.assertEqual(P.decode_register(corpus("register_opts")).options,
                         P.RegisterOptions("powergossip", 2, 0.5, 1, "float32"))
        self.assertEqual(P.decode_register(corpus("register_opts_rank")).options,
                         P.RegisterOptions(rank=8))
        self.assertEqual(P.decode_register(corpus("register_opts_choco")).options,
                         P.RegisterOptions(method="choco-topk", gamma=1.25))
        self.assertIsNone(P.decode_register(corpus("register")).options)

    def test_malformed_options_are_refused(self):
        base = corpus("register")
        good = corpus("register_opts")
        opts = good[len(base):]

        def refused(body, what):
            with self.assertRaises(ProtocolError, msg=what) as cm:
                P.decode_register(body)
            self.assertEqual(cm.exception.code, -errno.EBADMSG, what)
        for name in OPTS_BAD:
            refused(corpus(name), name)
        for cut in range(1, 11):
            refused(base + opts[:cut], "cut to %d" % cut)
        refused(good + b"\0", "a trailing byte")
        pack = struct.Struct("<BBHfHB").pack
        for what, o in [("nothing set", pack(0, 0, 0, 0.0, 0, 0)),
                        ("unknown bit", pack(0x20 | 2, 0, 1, 0.0, 0, 0)),
                        ("unknown method", pack(1, 5, 0, 0.0, 0, 0)),
                        ("rank 0", pack(2, 0, 0, 0.0, 0, 0)),
                        ("gamma NaN", pack(4, 0, 0, math.nan, 0, 0)),
                        ("gamma inf", pack(4, 0, 0, math.inf, 0, 0)),
                        ("gamma 0", pack(4, 0, 0, 0.0, 0, 0)),
                        ("gamma < 0", pack(4, 0, 0, -1.0, 0, 0)),
                        ("iterations 0", pack(8, 0, 0, 0.0, 0, 0)),
                        ("precision 3", pack(16, 0, 0, 0.0, 0, 3)),
                        ("rank not set", pack(1, 0, 3, 0.0, 0, 0)),
                        ("gamma -0 not set", pack(2, 0, 1, -0.0, 0, 0))]:
            refused(base + o, what)


class FieldRules(unittest.TestCase):
    """Values the C encoders refuse are refused here, with a message."""

    def refused(self, fn, *args, words=()):
        with self.assertRaises(InvalidArgument) as cm:
            fn(*args)
        for w in words:
            self.assertIn(w, str(cm.exception))
        return cm.exception

    def test_step_flags(self):
        self.refused(P.encode_step, 4, words=["unknown STEP flags"])
        self.refused(P.encode_step, -1)
        self.refused(P.encode_step, True)
        self.assertEqual(P.decode_step(P.encode_step(3)), 3)
        with self.assertRaises(ProtocolError):
            P.decode_step(b"\x42\x04\0\0\0")

    def test_average_limits(self):
        self.refused(P.encode_average, 1e-3, 0, 0, words=["not both 0"])
        self.refused(P.encode_average, math.inf, 10, 0)
        self.refused(P.encode_average, math.nan, 10, 0)
        self.refused(P.encode_average, -1.0, 10, 0)
        self.refused(P.encode_average, 1.0, 2**32, 0, words=["time_limit_ms"])
        self.refused(P.encode_average, "x", 10, 0, words=["target"])
        with self.assertRaises(ProtocolError):
            P.decode_average(struct.pack("<BdII", 0x43, 1.0, 0, 0))

    def test_register_rules(self):
        self.refused(P.encode_register, 4, [], words=["1..65536 tensors"])
        self.refused(P.encode_register, 4, [("x" * 64, (1,))], words=["64 bytes", "63"])
        self.refused(P.encode_register, 4, [("a\0b", (1,))], words=["NUL"])
        self.refused(P.encode_register, 4, [("z", (1, 0))], words=["'z'", ">= 1"])
        self.refused(P.encode_register, 4, [("z", (1.5,))], words=[">= 1"])
        self.refused(P.encode_register, 4 ** 9, [("d", (1,) * 9)], words=["9 dimensions"])
        self.refused(P.encode_register, 4, [("a", (2,))], words=["too small"])
        self.refused(P.encode_register, 4, ["a"], words=["(name, shape) pair"])
        e = self.refused(P.encode_register, 2**64 - 1, [("h", (2**62,)), ("i", (2**62,))])
        self.assertEqual(e.code, -errno.EOVERFLOW)
        e = self.refused(P.encode_register, 4 * 50000,
                         [("t%05d" % i, (1,)) for i in range(30000)] +
                         [("n" * 63, (1,))] * 20000, words=["frame cap"])
        self.assertEqual(e.code, -errno.EMSGSIZE)
        # 65536 one-float tensors with empty names fit; one more does not.
        ok = [("", (1,))] * 65536
        self.assertEqual(len(P.encode_register(4 * 65536, ok)), 13 + 65536 * 10)
        self.refused(P.encode_register, 4 * 65537, ok + [("", (1,))])

    def test_register_options_rules(self):
        ts = [("w", (3, 2))]
        self.refused(P.encode_register, 24, ts, P.RegisterOptions(method="powergosip"),
                     words=["unknown method"])
        self.refused(lambda: P.register_options(rank=0), words=["rank"])
        self.refused(lambda: P.register_options(rank=65536), words=["rank"])
        self.refused(lambda: P.register_options(power_iterations=0), words=["power_iterations"])
        for g in (0, -1.0, math.nan, math.inf, -math.inf, 1e39, 1e-50, "1", True):
            self.refused(lambda: P.register_options(gamma=g), words=["gamma"])  # noqa: B023
        self.refused(lambda: P.register_options(precision="float8"), words=["precision"])
        self.assertIsNone(P.register_options())
        # Without options, the bytes of before.
        self.assertEqual(P.encode_register(24, ts, None), P.encode_register(24, ts))
        o = P.register_options("exact", None, 0.5, 1, "bfloat16")
        body = P.encode_register(24, ts, o)
        self.assertEqual(len(body), len(P.encode_register(24, ts)) + 11)
        self.assertEqual(body[-11:], struct.pack("<BBHfHB", 1 | 4 | 8 | 16, 1, 0, 0.5, 1, 2))
        self.assertEqual(P.decode_register(body).options, o)
        # The dtype: a 12th byte with bit 0x20, and a buffer of 2 bytes a value.
        o = P.register_options(rank=3, dtype="float16")
        body = P.encode_register(12, ts, o)
        self.assertEqual(body[-12:], struct.pack("<BBHfHBB", 2 | 32, 0, 3, 0, 0, 0, 1))
        reg = P.decode_register(body)
        self.assertEqual((reg.options, reg.n_floats, reg.buffer_bytes), (o, 6, 12))
        self.refused(P.encode_register, 11, ts, o, words=["too small"])
        self.refused(P.encode_register, 12, ts, P.register_options(dtype="float32"),
                     words=["too small"])
        self.refused(lambda: P.register_options(dtype="float64"), words=["dtype"])
        # An unknown code goes as it is: the daemon says it does not know it.
        o = P.register_options(dtype=7)
        self.assertEqual(P.decode_register(P.encode_register(12, ts, o)).options.dtype, 7)
        with self.assertRaises(ProtocolError):
            P.decode_register(body[:-1])           # the bit without the byte

    def test_register_decoder_rules(self):
        good = P.encode_register(8, [("w", (2,))])
        bad_count = good[:9] + struct.pack("<I", 0) + good[13:]
        zero_dim = good[:-8] + struct.pack("<Q", 0)
        small = good[:1] + struct.pack("<Q", 7) + good[9:]
        nul = good.replace(b"\x01w", b"\x01\0")
        for b in (bad_count, zero_dim, small, nul):
            with self.assertRaises(ProtocolError) as cm:
                P.decode_register(b)
            self.assertEqual(cm.exception.code, -errno.EBADMSG)

    def test_text_caps(self):
        P.encode_hello("n" * 128)
        self.refused(P.encode_hello, "n" * 129, words=["128"])
        self.refused(P.encode_hello, "é" * 65)          # 130 bytes
        self.refused(P.encode_hello, "x", 0x0200, words=["major"])
        self.refused(P.encode_error, 0, "x")
        self.refused(P.encode_error, -1, "t" * 1025)
        body = P.encode_error(-1, "t" * 1024)
        too_long = body[:5] + struct.pack("<H", 1025) + body[7:] + b"t"
        with self.assertRaises(ProtocolError):
            P.decode_error(too_long)



class Mutations(unittest.TestCase):
    """A bounded fuzz run: seeded mutations of every seed (bit flips, byte
    changes, insertions, deletions, truncations, splices) must each either
    be refused with ProtocolError or decode to a message that re-encodes
    to the same bytes.  Anything else (another exception, a hang, a value
    that does not round-trip) is a decoder bug."""

    ROUNDS = 20000

    def mutate(self, rng, data, seeds):
        data = bytearray(data)
        for _ in range(rng.randint(1, 4)):
            op = rng.randrange(6)
            if op == 0 and data:
                i = rng.randrange(len(data))
                data[i] ^= 1 << rng.randrange(8)
            elif op == 1 and data:
                data[rng.randrange(len(data))] = rng.choice(
                    [0, 1, 0x7f, 0x80, 0xff, rng.randrange(256)])
            elif op == 2:
                i = rng.randrange(len(data) + 1)
                data[i:i] = bytes(rng.randrange(256) for _ in range(rng.randint(1, 8)))
            elif op == 3 and data:
                i = rng.randrange(len(data))
                del data[i:i + rng.randint(1, 8)]
            elif op == 4:
                del data[rng.randrange(len(data) + 1):]
            else:
                other = rng.choice(seeds)
                i = rng.randrange(len(data) + 1)
                data[i:] = other[rng.randrange(len(other) + 1):]
        return bytes(data)

    def test_mutated_seeds_are_refused_or_round_trip(self):
        import random
        rng = random.Random(20261130)
        seeds = [corpus(name) for name in SINGLE + OPTS]
        refused = decoded = 0
        for _ in range(self.ROUNDS):
            body = self.mutate(rng, rng.choice(seeds), seeds)
            try:
                t, v = P.decode_any(body)
            except ProtocolError:
                refused += 1
                continue
            self.assertEqual(encode(t, v), body, body.hex())
            decoded += 1
        # Both outcomes must actually occur, or the run proved nothing.
        self.assertGreater(refused, self.ROUNDS // 10)
        self.assertGreater(decoded, 0)


class OneVersion(unittest.TestCase):
    """The protocol version is written once, in proto/proto.h; the Python
    module, the build's generated module, the specification and the
    changelog's newest entry all say that one, so a bump that forgets one
    of them fails here."""
    ROOT = os.path.join(HERE, "..", "..")

    def header(self):
        from gossipd import _proto_h
        return _proto_h.read(os.path.join(self.ROOT, "proto", "proto.h"))

    def test_python_module_says_proto_h_version(self):
        major, minor = self.header()
        self.assertEqual((P.VERSION_MAJOR, P.VERSION_MINOR), (major, minor))
        self.assertEqual(P.VERSION, major << 8 | minor)

    def test_generated_module_says_proto_h_version(self):
        build = os.environ.get("GSP_BUILD_ROOT")
        if not build:
            self.skipTest("GSP_BUILD_ROOT not set (meson test sets it)")
        path = os.path.join(build, "bindings", "python", "_proto_version.py")
        namespace = {}
        with open(path, encoding="utf-8") as f:
            exec(f.read(), namespace)
        self.assertEqual((namespace["VERSION_MAJOR"], namespace["VERSION_MINOR"]),
                         self.header())

    def test_specification_states_proto_h_version_once(self):
        with open(os.path.join(self.ROOT, "proto", "PROTOCOL.md"), encoding="utf-8") as f:
            text = f.read()
        stated = re.findall(r"specifies\s+protocol\s+version\s+\*\*(\d+)\.(\d+)\*\*\s+"
                            r"\(`0x([0-9a-f]{4})`\)", text)
        self.assertEqual(len(stated), 1, "PROTOCOL.md states its version once: %r" % stated)
        major, minor = self.header()
        self.assertEqual(stated[0], (str(major), str(minor), "%04x" % (major << 8 | minor)))
        title = text.split("\n", 1)[0]
        self.assertIsNone(re.search(r"\d+\.\d+", title), "the title names no version")

    def test_changelog_newest_entry_is_proto_h_version(self):
        path = os.path.join(self.ROOT, "docs", "journal", "PROTOCOL-changelog.md")
        with open(path, encoding="utf-8") as f:
            entries = re.findall(r"^## (\d+)\.(\d+)\b", f.read(), re.MULTILINE)
        self.assertTrue(entries, "the changelog has entries '## MAJOR.MINOR'")
        major, minor = self.header()
        self.assertEqual(entries[0], (str(major), str(minor)))
        versions = [(int(a), int(b)) for a, b in entries]
        self.assertEqual(versions, sorted(versions, reverse=True), "newest first")

    def test_reader_refuses_a_header_without_exactly_one_of_each(self):
        import tempfile
        from gossipd import _proto_h
        for body in ("#define GSP_PROTO_VERSION_MAJOR 1\n",
                     "#define GSP_PROTO_VERSION_MAJOR 1\n#define GSP_PROTO_VERSION_MINOR 6\n"
                     "#define GSP_PROTO_VERSION_MINOR 7\n"):
            with tempfile.NamedTemporaryFile("w", suffix=".h") as f:
                f.write(body)
                f.flush()
                with self.assertRaises(ValueError):
                    _proto_h.read(f.name)

if __name__ == "__main__":
    unittest.main()
