"""gossipd.protocol: the byte layout of the local API (proto/PROTOCOL.md
sections 2, 5 and 6) in pure Python, for the tests only: the fake daemon
(tests/python/fakedaemon.py), the hostile API client of the integration
tests and their raw registrations.  The package's client does not use it:
gossipd.Client is libgossip's C client (proto/api.c encodes and decodes
its messages).  test_protocol checks this codec against the C corpus, and
py-c-client runs the C client against it.

This module owns the message types, the frame header and an encoder and
a decoder for every API request and reply; the argument rules are
gossipd.checks'.  Pure functions over bytes: no I/O.  Encoders raise
InvalidArgument for values outside a field's rules (nothing is
produced); decoders accept exactly what the C decoders accept and raise
ProtocolError with the C code otherwise (-EBADMSG truncated / trailing
bytes / field out of range, -ENOMSG wrong type byte, -EPROTONOSUPPORT
another major).  Encoding is canonical: decode then encode gives back
the same bytes.  Text fields are str, carried as UTF-8 with
surrogateescape so any byte string round-trips.
"""
import errno
import math
import struct
from collections import namedtuple

from .checks import (API_MAX_FRAME, MAX_TENSORS, METHODS, NAME_MAX,  # noqa: F401
                     PRECISIONS, STEP_DRAIN, STEP_FLAGS_KNOWN, STEP_SYNC,
                     U32_MAX, U64_MAX, WIRE_MAX_DIMS, WIRE_NAME_MAX,
                     AverageResult, RegisterOptions, StepStats, Tensor,
                     DTYPE_BYTES, DTYPES,
                     average_args, average_ok, step_flags,
                     register_options as _register_options,
                     tensor_list, text_bytes, uint as _uint)
from .errors import InvalidArgument, ProtocolError

# The protocol version: proto/proto.h's, never copied by hand (_proto_h.py).
try:    # an installed package: written from proto.h by the build
    from ._proto_version import VERSION_MAJOR, VERSION_MINOR
except ModuleNotFoundError:     # the source tree: proto.h itself
    from ._proto_h import checkout_version
    VERSION_MAJOR, VERSION_MINOR = checkout_version()
VERSION = VERSION_MAJOR << 8 | VERSION_MINOR

FRAME_HEADER = 4
ERROR_TEXT_MAX = 1024
STATUS_JSON_MAX = API_MAX_FRAME - 5

HELLO, REGISTER, STEP, AVERAGE, STATUS, DETACH = 0x40, 0x41, 0x42, 0x43, 0x44, 0x45
HELLO_OK, OK, STEP_OK, AVERAGE_OK, STATUS_OK, ERROR = 0xC0, 0xC1, 0xC2, 0xC3, 0xC4, 0xFF
NAMES = {HELLO: "HELLO", REGISTER: "REGISTER", STEP: "STEP", AVERAGE: "AVERAGE",
         STATUS: "STATUS", DETACH: "DETACH", HELLO_OK: "HELLO_OK", OK: "OK",
         STEP_OK: "STEP_OK", AVERAGE_OK: "AVERAGE_OK", STATUS_OK: "STATUS_OK",
         ERROR: "ERROR"}

Hello = namedtuple("Hello", "version name")
# options: the RegisterOptions it carries, or None (the daemon's settings).
Register = namedtuple("Register", "buffer_bytes tensors n_floats options",
                      defaults=(None,))
Average = namedtuple("Average", "target time_limit_ms max_rounds")
ErrorReply = namedtuple("ErrorReply", "code text")

_STEP = struct.Struct("<BI")                 # 5 bytes
_STEP_OK = struct.Struct("<BQIIIIQQd")       # 49 bytes
_AVERAGE = struct.Struct("<BdII")            # 17 bytes
_AVERAGE_OK = struct.Struct("<BIdB")         # 14 bytes
_REGISTER_OPTS = struct.Struct("<BBHfHB")    # 11 bytes, after the tensors
_REGISTER_DTYPE = struct.Struct("<B")        # then 1 with REG_DTYPE

# REGISTER's options: the bit of each field in `set`, the method codes
# (GSP_WIRE_METHOD_*) and the wire precisions (GSP_WIRE_PRECISION_*).
REG_METHOD, REG_RANK, REG_GAMMA, REG_ITERATIONS, REG_PRECISION = 1, 2, 4, 8, 16
REG_DTYPE = 32
REG_GROUP = 64                                # a flag: no field
REG_KNOWN = 0x7F

# The undo section after the parameters (PROTOCOL.md 5.4; proto.h's
# gsp_undo_*): its header's magic, size and states.  The C client makes
# the buffer: the tests check its size and magic with these.
UNDO_MAGIC = b"gsp-undo"
UNDO_HEADER = 64
UNDO_STATE_AT = 16                         # u32, host order
UNDO_IDLE, UNDO_WRITING, UNDO_UNDONE = 0, 1, 2


def undo_offset(n_floats):
    """Offset of the undo header after n_floats parameters (64-aligned)."""
    return (4 * n_floats + 63) & ~63


def undo_nbytes(n_floats):
    """The buffer's size with the undo section."""
    return undo_offset(n_floats) + UNDO_HEADER + 4 * n_floats


def _bad(what):
    return ProtocolError("malformed message: " + what, -errno.EBADMSG)


# ---- text and numbers --------------------------------------------------

def _text16(s, cap, what):
    b = text_bytes(s, cap, what)
    return struct.pack("<H", len(b)) + b


class _Reader:
    """Bounded reader over a message body after its type byte."""

    def __init__(self, body):
        self.b = bytes(body)
        self.p = 1

    def take(self, n):
        if n > len(self.b) - self.p:
            raise _bad("truncated")
        v = self.b[self.p:self.p + n]
        self.p += n
        return v

    def u(self, fmt):
        s = struct.calcsize("<" + fmt)
        return struct.unpack("<" + fmt, self.take(s))[0]

    def text16(self, cap):
        n = self.u("H")
        if n > cap:
            raise _bad("text of %d bytes over its cap %d" % (n, cap))
        b = self.take(n)
        if b"\0" in b:
            raise _bad("NUL in a text field")
        return b.decode("utf-8", "surrogateescape")

    def done(self):
        if self.p != len(self.b):
            raise _bad("%d trailing bytes" % (len(self.b) - self.p))


def _check_type(body, t):
    if len(body) == 0:
        raise _bad("empty")
    if body[0] != t:
        raise ProtocolError("expected %s, got type 0x%02x"
                            % (NAMES[t], body[0]), -errno.ENOMSG)


def _fixed(body, t, st):
    _check_type(body, t)
    if len(body) != st.size:
        raise _bad("%s is %d bytes, not %d" % (NAMES[t], len(body), st.size))
    return st.unpack(body)[1:]


# ---- frames ------------------------------------------------------------

def frame(body):
    """The 4-byte length header, then body (1..API_MAX_FRAME bytes)."""
    if not 1 <= len(body) <= API_MAX_FRAME:
        raise InvalidArgument("a frame body is 1..%d bytes, not %d"
                              % (API_MAX_FRAME, len(body)), -errno.EMSGSIZE)
    return struct.pack("<I", len(body)) + bytes(body)


def frame_length(header, cap=API_MAX_FRAME):
    """The body length a 4-byte header announces: ProtocolError for 0
    (-EBADMSG) or over cap (-EMSGSIZE), before any body byte is read."""
    (n,) = struct.unpack("<I", bytes(header))
    if n == 0:
        raise _bad("frame length 0")
    if n > cap:
        raise ProtocolError("frame length %d over the cap %d" % (n, cap),
                            -errno.EMSGSIZE)
    return n


# ---- HELLO / HELLO_OK --------------------------------------------------

def _hello_encode(t, name, version):
    _uint(version, 0xFFFF, "version")
    if version >> 8 != VERSION_MAJOR:
        raise InvalidArgument("version 0x%04x is not of major %d"
                              % (version, VERSION_MAJOR))
    return struct.pack("<BH", t, version) + _text16(name, NAME_MAX, "name")


def _hello_decode(t, body):
    _check_type(body, t)
    if len(body) < 3:
        raise _bad("truncated")
    (version,) = struct.unpack_from("<H", body, 1)
    if version >> 8 != VERSION_MAJOR:
        raise ProtocolError("protocol version %d.%d; this client speaks %d.x"
                            % (version >> 8, version & 0xFF, VERSION_MAJOR),
                            -errno.EPROTONOSUPPORT)
    r = _Reader(body)
    r.take(2)
    name = r.text16(NAME_MAX)
    r.done()
    return Hello(version, name)


def encode_hello(name, version=VERSION):
    return _hello_encode(HELLO, name, version)


def decode_hello(body):
    return _hello_decode(HELLO, body)


def encode_hello_ok(name, version=VERSION):
    return _hello_encode(HELLO_OK, name, version)


def decode_hello_ok(body):
    return _hello_decode(HELLO_OK, body)


# ---- REGISTER ----------------------------------------------------------

def register_options(method=None, rank=None, gamma=None,
                     power_iterations=None, precision=None, dtype=None, group=None):
    """checks.register_options(), where dtype may also be a code 0..255:
    the codec sends codes a daemon does not know (tests of its refusal).
    A known code becomes its name."""
    code = None
    if isinstance(dtype, int) and not isinstance(dtype, bool):
        code, dtype = _uint(dtype, 0xFF, "dtype"), None
    o = _register_options(method, rank, gamma, power_iterations, precision, dtype,
                          group)
    if code is None:
        return o
    return (o or RegisterOptions())._replace(
        dtype=DTYPES[code] if code < len(DTYPES) else code)


def dtype_bytes(dtype):
    """Bytes per value of a buffer of dtype (None: float32; a code this
    module does not know: 2, the decoder's bound)."""
    return 4 if dtype is None else DTYPE_BYTES.get(dtype, 2)


def _encode_register_opts(o):
    o = register_options(*o)
    if o is None:
        return b""
    bits = [REG_METHOD, REG_RANK, REG_GAMMA, REG_ITERATIONS, REG_PRECISION, REG_DTYPE,
            REG_GROUP]
    mask = sum(b for b, v in zip(bits, o) if v is not None)
    body = _REGISTER_OPTS.pack(
        mask, METHODS.index(o.method) if o.method is not None else 0,
        o.rank or 0, o.gamma or 0.0, o.power_iterations or 0,
        PRECISIONS.index(o.precision) if o.precision is not None else 0)
    if o.dtype is not None:
        body += _REGISTER_DTYPE.pack(DTYPES.index(o.dtype) if o.dtype in DTYPES
                                     else o.dtype)
    return body


def _decode_register_opts(r):
    """The options at the reader's position (the body's last 11 bytes, or
    12 with a dtype)."""
    mask, method, rank, gamma, iters, prec = _REGISTER_OPTS.unpack(
        r.take(_REGISTER_OPTS.size))
    if mask == 0 or mask & ~REG_KNOWN:
        raise _bad("options set 0x%02x" % mask)
    dtype = _REGISTER_DTYPE.unpack(r.take(1))[0] if mask & REG_DTYPE else None
    if dtype is not None and dtype < len(DTYPES):
        dtype = DTYPES[dtype]

    def field(bit, value, ok):
        if not mask & bit:
            if value != 0 or (bit == REG_GAMMA and math.copysign(1, value) < 0):
                raise _bad("an option not set is not 0")
            return None
        if not ok:
            raise _bad("option out of range")
        return value
    method = field(REG_METHOD, method, method < len(METHODS))
    rank = field(REG_RANK, rank, rank >= 1)
    gamma = field(REG_GAMMA, gamma, math.isfinite(gamma) and gamma > 0)
    iters = field(REG_ITERATIONS, iters, iters >= 1)
    prec = field(REG_PRECISION, prec, prec < len(PRECISIONS))
    return RegisterOptions(None if method is None else METHODS[method], rank,
                           gamma, iters, None if prec is None else PRECISIONS[prec],
                           dtype, True if mask & REG_GROUP else None)


def encode_register(buffer_bytes, tensors, options=None):
    """REGISTER for a buffer of buffer_bytes holding tensors, which
    tensor_list() validates, asking options (RegisterOptions, or None:
    the daemon's settings; register_options() checks them)."""
    ts, floats = tensor_list(tensors)
    buffer_bytes = _uint(buffer_bytes, U64_MAX, "buffer_bytes")
    size = dtype_bytes(options.dtype if options else None)
    if buffer_bytes < size * floats:
        raise InvalidArgument("buffer of %d bytes is too small for %d values "
                              "of %d bytes" % (buffer_bytes, floats, size))
    parts = [struct.pack("<BQI", REGISTER, buffer_bytes, len(ts))]
    for t in ts:
        name = text_bytes(t.name, WIRE_NAME_MAX, "name")
        parts.append(struct.pack("<B", len(name)) + name +
                     struct.pack("<B%dQ" % len(t.shape), len(t.shape), *t.shape))
    parts.append(_encode_register_opts(options or RegisterOptions()))
    body = b"".join(parts)
    if len(body) > API_MAX_FRAME:
        raise InvalidArgument("the model description takes %d bytes, over the "
                              "API frame cap of %d: too many tensors or names "
                              "too long" % (len(body), API_MAX_FRAME),
                              -errno.EMSGSIZE)
    return body


def decode_register(body):
    _check_type(body, REGISTER)
    r = _Reader(body)
    buffer_bytes, n = r.u("Q"), r.u("I")
    if not 1 <= n <= MAX_TENSORS or n > (len(body) - r.p) // 2:
        raise _bad("tensor count %d" % n)
    tensors, floats = [], 0
    for _ in range(n):
        name_len = r.u("B")
        name = r.take(name_len)
        ndim = r.u("B")
        if name_len > WIRE_NAME_MAX or ndim > WIRE_MAX_DIMS or b"\0" in name:
            raise _bad("tensor name or ndim")
        shape = tuple(r.u("Q") for _ in range(ndim))
        numel = math.prod(shape)
        if 0 in shape or numel > U64_MAX:
            raise _bad("tensor dimensions")
        floats += numel
        if floats > U64_MAX:
            raise _bad("tensor sizes overflow")
        tensors.append(Tensor(name.decode("utf-8", "surrogateescape"), shape))
    options = _decode_register_opts(r) if r.p < len(r.b) else None
    r.done()
    if buffer_bytes // dtype_bytes(options.dtype if options else None) < floats:
        raise _bad("buffer_bytes below the dtype's size * floats")
    return Register(buffer_bytes, tensors, floats, options)


# ---- messages without fields: OK, STATUS, DETACH ------------------------

def encode_ok():
    return bytes([OK])


def encode_status():
    return bytes([STATUS])


def encode_detach():
    return bytes([DETACH])


def decode_empty(body, t):
    """Checks an OK, STATUS or DETACH body (type t)."""
    _check_type(body, t)
    if len(body) != 1:
        raise _bad("%s with %d trailing bytes" % (NAMES[t], len(body) - 1))


# ---- STEP / STEP_OK ----------------------------------------------------

def encode_step(flags=0):
    return _STEP.pack(STEP, step_flags(flags))


def decode_step(body):
    (flags,) = _fixed(body, STEP, _STEP)
    if flags & ~STEP_FLAGS_KNOWN:
        raise _bad("unknown STEP flags")
    return flags


def encode_step_ok(s):
    for f in StepStats._fields[:-1]:
        _uint(getattr(s, f), U32_MAX if f.startswith(("edges", "max")) else U64_MAX, f)
    return _STEP_OK.pack(STEP_OK, *s[:-1], float(s.consensus_estimate))


def decode_step_ok(body):
    return StepStats(*_fixed(body, STEP_OK, _STEP_OK))


# ---- AVERAGE / AVERAGE_OK ----------------------------------------------

def encode_average(target, time_limit_ms=0, max_rounds=0):
    return _AVERAGE.pack(AVERAGE, *average_args(target, time_limit_ms, max_rounds))


def decode_average(body):
    a = Average(*_fixed(body, AVERAGE, _AVERAGE))
    if not average_ok(*a):
        raise _bad("AVERAGE limits")
    return a


def encode_average_ok(a):
    _uint(a.rounds, U32_MAX, "rounds")
    return _AVERAGE_OK.pack(AVERAGE_OK, a.rounds, float(a.estimate),
                            1 if a.reached else 0)


def decode_average_ok(body):
    rounds, estimate, reached = _fixed(body, AVERAGE_OK, _AVERAGE_OK)
    if reached > 1:
        raise _bad("AVERAGE_OK reached %d" % reached)
    return AverageResult(rounds, estimate, bool(reached))


# ---- STATUS_OK ---------------------------------------------------------

def encode_status_ok(json_text):
    b = text_bytes(json_text, STATUS_JSON_MAX, "status JSON")
    return struct.pack("<BI", STATUS_OK, len(b)) + b


def decode_status_ok(body):
    _check_type(body, STATUS_OK)
    r = _Reader(body)
    n = r.u("I")
    if n > STATUS_JSON_MAX:
        raise _bad("status JSON over its cap")
    b = r.take(n)
    r.done()
    if b"\0" in b:
        raise _bad("NUL in the status JSON")
    return b.decode("utf-8", "surrogateescape")


# ---- ERROR -------------------------------------------------------------

def encode_error(code, text):
    if isinstance(code, bool) or not isinstance(code, int) or not -2**31 <= code < 0:
        raise InvalidArgument("an ERROR code is a negative int32, not %r" % (code,))
    return struct.pack("<Bi", ERROR, code) + _text16(text, ERROR_TEXT_MAX, "error text")


def decode_error(body):
    _check_type(body, ERROR)
    r = _Reader(body)
    code = r.u("i")
    text = r.text16(ERROR_TEXT_MAX)
    r.done()
    if code >= 0:
        raise _bad("ERROR code %d is not negative" % code)
    return ErrorReply(code, text)


# ---- dispatch ----------------------------------------------------------

_REQUESTS = {
    HELLO: decode_hello,
    REGISTER: decode_register,
    STEP: decode_step,
    AVERAGE: decode_average,
    STATUS: lambda b: decode_empty(b, STATUS),
    DETACH: lambda b: decode_empty(b, DETACH),
}
_REPLIES = {
    HELLO_OK: decode_hello_ok,
    OK: lambda b: decode_empty(b, OK),
    STEP_OK: decode_step_ok,
    AVERAGE_OK: decode_average_ok,
    STATUS_OK: decode_status_ok,
    ERROR: decode_error,
}


def decode_any(body):
    """(type, decoded value) of any request or reply; -ENOMSG for an
    unknown type byte."""
    if len(body) == 0:
        raise _bad("empty")
    dec = _REQUESTS.get(body[0]) or _REPLIES.get(body[0])
    if dec is None:
        raise ProtocolError("unknown message type 0x%02x" % body[0], -errno.ENOMSG)
    return body[0], dec(body)
