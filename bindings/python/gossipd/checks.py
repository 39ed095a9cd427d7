"""gossipd.checks: the local API's rules for a caller's arguments, checked
before anything reaches libgossip's client, so that a refusal names the
argument and the rule (libgossip answers -EINVAL alone).

This module owns the limits of the local API that a trainer's arguments
meet (client.h's GSP_CLIENT_* limits and STEP flags, gossip.h's dims; the
test py-c-client checks each value against those headers), the checks of
a client name, a model's tensors, REGISTER's options, STEP's flags and
AVERAGE's limits, and the named tuples the client returns.  Standard
library only; no I/O.  gossipd.protocol, the tests' codec, uses the same
checks for its encoders.
"""
import errno
import math
import operator
import struct
from collections import namedtuple

from .errors import InvalidArgument

NAME_MAX = 128                 # GSP_CLIENT_NAME_MAX: a client name, bytes
WIRE_NAME_MAX = 63             # GSP_CLIENT_TENSOR_NAME_MAX: a tensor name
WIRE_MAX_DIMS = 8              # GSP_MAX_DIMS
MAX_TENSORS = 65536            # GSP_CLIENT_MAX_TENSORS
API_MAX_FRAME = 1 << 20        # GSP_CLIENT_MAX_FRAME
U32_MAX = (1 << 32) - 1
U64_MAX = (1 << 64) - 1

STEP_SYNC = 0x1                # GSP_CLIENT_STEP_SYNC: wait for every edge
STEP_DRAIN = 0x2               # GSP_CLIENT_STEP_DRAIN: settle, no new round
STEP_FLAGS_KNOWN = STEP_SYNC | STEP_DRAIN

# gsp_client_register_options.method's names, and the wire precisions in
# gsp_client_precision's order (after GSP_CLIENT_PRECISION_DEFAULT).
METHODS = ("powergossip", "exact", "choco-topk", "choco-randk", "choco-sign")
PRECISIONS = ("float32", "float16", "bfloat16")
# The parameters' types in the buffer, in gsp_client_dtype's order (after
# GSP_CLIENT_DTYPE_DEFAULT), and their bytes per value.
DTYPES = ("float32", "float16", "bfloat16")
DTYPE_BYTES = {"float32": 4, "float16": 2, "bfloat16": 2}

Tensor = namedtuple("Tensor", "name shape")
# REGISTER's options: each None when not asked (the daemon's config's).
RegisterOptions = namedtuple("RegisterOptions",
                             "method rank gamma power_iterations precision dtype "
                             "group", defaults=(None,) * 7)
StepStats = namedtuple("StepStats", "step edges_applied edges_projected "
                       "edges_skipped max_staleness bytes_sent bytes_received "
                       "consensus_estimate")
AverageResult = namedtuple("AverageResult", "rounds estimate reached")
# Client.fetch(): bytes copied, seconds it took, the peer (short key).
FetchResult = namedtuple("FetchResult", "bytes seconds peer")


def text_bytes(s, cap, what):
    """s (str or bytes) as the bytes of a text field of at most cap bytes,
    no NUL; InvalidArgument otherwise."""
    b = s.encode("utf-8", "surrogateescape") if isinstance(s, str) else bytes(s)
    if len(b) > cap:
        raise InvalidArgument("%s is %d bytes long; the limit is %d"
                              % (what, len(b), cap))
    if b"\0" in b:
        raise InvalidArgument("%s contains a NUL byte" % what)
    return b


def as_int(v):
    """v as an int (int, NumPy integer...), or None; bools are not."""
    if isinstance(v, bool):
        return None
    try:
        return operator.index(v)
    except TypeError:
        return None


def uint(v, top, what):
    i = as_int(v)
    if i is None or not 0 <= i <= top:
        raise InvalidArgument("%s must be an integer in 0..%d, not %r"
                              % (what, top, v))
    return i


def tensor_list(tensors):
    """Validates (name, shape) pairs (or a {name: shape} mapping) against
    the REGISTER rules; returns [Tensor(name, shape tuple)] and the total
    float count.  Errors name the offending tensor."""
    items = list(tensors.items() if hasattr(tensors, "items") else tensors)
    if not 1 <= len(items) <= MAX_TENSORS:
        raise InvalidArgument("a model has 1..%d tensors, not %d"
                              % (MAX_TENSORS, len(items)))
    out, floats = [], 0
    for i, item in enumerate(items):
        try:
            name, shape = item
        except (TypeError, ValueError):
            raise InvalidArgument("tensor %d: expected a (name, shape) pair, "
                                  "got %r" % (i, item)) from None
        label = "tensor %d (%r)" % (i, name)
        text_bytes(name, WIRE_NAME_MAX, label + ": name")
        try:
            dims = (shape,) if as_int(shape) is not None else tuple(shape)
        except TypeError:
            dims = (None,)
        if len(dims) > WIRE_MAX_DIMS:
            raise InvalidArgument("%s: %d dimensions; the limit is %d"
                                  % (label, len(dims), WIRE_MAX_DIMS))
        dims = tuple(as_int(d) for d in dims)
        if None in dims or any(d < 1 for d in dims):
            raise InvalidArgument("%s: every dimension must be an integer "
                                  ">= 1, shape is %r" % (label, shape))
        shape = dims
        numel = math.prod(shape)
        floats += numel
        if numel > U64_MAX or floats > U64_MAX // 4:
            raise InvalidArgument("%s: the model's size overflows 64 bits"
                                  % label, -errno.EOVERFLOW)
        out.append(Tensor(name, shape))
    return out, floats


def _f32(x):
    """x as the float32 the wire carries, or None if it does not fit."""
    try:
        return struct.unpack("<f", struct.pack("<f", x))[0]
    except (OverflowError, struct.error):
        return None


def register_options(method=None, rank=None, gamma=None,
                     power_iterations=None, precision=None, dtype=None,
                     group=None):
    """Checks REGISTER's options (None: the daemon's) and returns them as
    RegisterOptions, or None when none is asked.  The daemon checks its own
    limits (MaxRank) and what it implements (one power iteration per step,
    float32 on the wire).  group: True joins the machine's local group
    (False or None: the model alone)."""
    if method is not None and method not in METHODS:
        raise InvalidArgument("unknown method %r (%s)" % (method, ", ".join(METHODS)))
    if rank is not None:
        rank = uint(rank, 0xFFFF, "rank")
        if rank < 1:
            raise InvalidArgument("rank must be >= 1, not %d" % rank)
    if power_iterations is not None:
        power_iterations = uint(power_iterations, 0xFFFF, "power_iterations")
        if power_iterations < 1:
            raise InvalidArgument("power_iterations must be >= 1, not %d"
                                  % power_iterations)
    if gamma is not None:
        g = _f32(gamma) if isinstance(gamma, (int, float)) and \
            not isinstance(gamma, bool) else None
        if g is None or not math.isfinite(g) or g <= 0:
            raise InvalidArgument("gamma must be a finite number > 0 (as a "
                                  "float32), not %r" % (gamma,))
        gamma = g
    if precision is not None and precision not in PRECISIONS:
        raise InvalidArgument("unknown wire precision %r (%s)"
                              % (precision, ", ".join(PRECISIONS)))
    if dtype is not None and dtype not in DTYPES:
        raise InvalidArgument("unknown parameter dtype %r (%s)"
                              % (dtype, ", ".join(DTYPES)))
    if group not in (None, False, True):
        raise InvalidArgument("group must be True or False, not %r" % (group,))
    opts = RegisterOptions(method, rank, gamma, power_iterations, precision, dtype,
                           True if group else None)
    return None if opts == RegisterOptions() else opts


def step_flags(flags):
    """STEP's flags as an int; InvalidArgument for unknown bits."""
    flags = uint(flags, U32_MAX, "flags")
    if flags & ~STEP_FLAGS_KNOWN:
        raise InvalidArgument("unknown STEP flags 0x%x (known: SYNC 0x1, "
                              "DRAIN 0x2)" % (flags & ~STEP_FLAGS_KNOWN))
    return flags


def average_ok(target, time_limit_ms, max_rounds):
    """AVERAGE's rule: a finite target >= 0 and not both limits 0."""
    return (math.isfinite(target) and target >= 0 and
            (time_limit_ms != 0 or max_rounds != 0))


def average_args(target, time_limit_ms=0, max_rounds=0):
    """AVERAGE's arguments checked: (target float, time_limit_ms,
    max_rounds)."""
    time_limit_ms = uint(time_limit_ms, U32_MAX, "time_limit_ms")
    max_rounds = uint(max_rounds, U32_MAX, "max_rounds")
    try:
        target = float(target)
    except (TypeError, ValueError):
        raise InvalidArgument("target must be a number, not %r" % (target,)) from None
    if not average_ok(target, time_limit_ms, max_rounds):
        raise InvalidArgument("AVERAGE needs a finite target >= 0 (got %r) and "
                              "a time limit or a round limit (0 = none, not "
                              "both 0)" % target)
    return target, time_limit_ms, max_rounds
