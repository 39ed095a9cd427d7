"""gossipd._lib: finds and loads libgossip, whose C client (client.h) the
package's Client wraps, and declares that client's functions, structures
and constants for ctypes.

Where the library is looked for, in this order (load() names every place
it tried when none works):
  1. $GOSSIPD_LIBGOSSIP: the library file itself
     (GOSSIPD_LIBGOSSIP=/path/to/libgossip.so); when set, nothing else is
     tried;
  2. the build tree, when the package runs from the source tree
     (bindings/python/gossipd): build/libgossip/libgossip.so, the build
     directory of "meson setup build";
  3. the installed library: in the libdir of meson's prefix (written into
     gossipd/_installed.py when meson installs the package), then as the
     dynamic loader finds it (ctypes.util.find_library("gossip")).

The constants below are client.h's and gossip.h's values; the test
py-c-client checks each one against those headers.
"""
import ctypes
import ctypes.util
import os
import threading

ENV = "GOSSIPD_LIBGOSSIP"
_NAMES = ("libgossip.so.0", "libgossip.so")

# client.h
NO_TIMEOUT = 0xFFFFFFFF              # GSP_CLIENT_NO_TIMEOUT
NO_RECONNECT = 0x1                   # GSP_CLIENT_NO_RECONNECT
NO_UNDO = 0x2                        # GSP_CLIENT_NO_UNDO
ERROR_TEXT_MAX = 1024                # GSP_CLIENT_ERROR_TEXT_MAX
# gsp_client_stage
(STAGE_OK, STAGE_LOCAL, STAGE_CONNECT, STAGE_IO, STAGE_DAEMON, STAGE_VERSION,
 STAGE_FRAME, STAGE_REPLY) = range(8)
# gsp_client_state
CONNECTED, OFFLINE, UNUSABLE = range(3)
# gossip.h
NAME_MAX = 64                        # GSP_NAME_MAX (gsp_tensor.name)
MAX_DIMS = 8                         # GSP_MAX_DIMS


class LibraryNotFound(ImportError):
    """libgossip's shared library could not be loaded; the message names
    every place tried and the GOSSIPD_LIBGOSSIP variable."""


class Tensor(ctypes.Structure):          # gsp_tensor
    _fields_ = [("name", ctypes.c_char * NAME_MAX), ("ndim", ctypes.c_uint),
                ("shape", ctypes.c_uint64 * MAX_DIMS), ("offset", ctypes.c_uint64),
                ("numel", ctypes.c_uint64), ("m", ctypes.c_uint64),
                ("k", ctypes.c_uint64), ("compressed", ctypes.c_bool)]


class StepResult(ctypes.Structure):      # gsp_client_step_result
    _fields_ = [("step", ctypes.c_uint64), ("edges_applied", ctypes.c_uint32),
                ("edges_projected", ctypes.c_uint32), ("edges_skipped", ctypes.c_uint32),
                ("max_staleness", ctypes.c_uint32), ("bytes_sent", ctypes.c_uint64),
                ("bytes_received", ctypes.c_uint64),
                ("consensus_estimate", ctypes.c_double),
                ("offline", ctypes.c_bool), ("offline_steps", ctypes.c_uint64),
                ("reconnects", ctypes.c_uint32)]


class AverageResult(ctypes.Structure):   # gsp_client_average_result
    _fields_ = [("rounds", ctypes.c_uint32), ("estimate", ctypes.c_double),
                ("reached", ctypes.c_bool)]


class FetchResult(ctypes.Structure):     # gsp_client_fetch_result
    _fields_ = [("bytes", ctypes.c_uint64), ("took_ms", ctypes.c_uint32),
                ("peer", ctypes.c_char * 65)]


class Options(ctypes.Structure):         # gsp_client_options
    _fields_ = [("client_name", ctypes.c_char_p), ("timeout_ms", ctypes.c_uint32),
                ("flags", ctypes.c_uint32)]


class RegisterOptions(ctypes.Structure):  # gsp_client_register_options
    _fields_ = [("method", ctypes.c_char_p), ("rank", ctypes.c_uint),
                ("gamma", ctypes.c_float), ("power_iterations", ctypes.c_uint),
                ("precision", ctypes.c_int), ("dtype", ctypes.c_int),
                ("group", ctypes.c_uint)]


class Failure(ctypes.Structure):         # gsp_client_failure
    _fields_ = [("stage", ctypes.c_int), ("code", ctypes.c_int),
                ("version", ctypes.c_uint16), ("frame_len", ctypes.c_uint32),
                ("reply_type", ctypes.c_uint8), ("unexpected_type", ctypes.c_bool),
                ("text", ctypes.c_char * (ERROR_TEXT_MAX + 1))]


_P = ctypes.c_void_p
_PROTOTYPES = {
    # name: (restype, argtypes)
    "gsp_strerror": (ctypes.c_char_p, [ctypes.c_int]),
    "gsp_client_connect_opts": (ctypes.c_int, [ctypes.c_char_p, ctypes.POINTER(Options),
                                               ctypes.POINTER(_P), ctypes.POINTER(Failure)]),
    "gsp_client_register_opts": (ctypes.c_int, [_P, ctypes.POINTER(Tensor), ctypes.c_size_t,
                                                ctypes.POINTER(RegisterOptions),
                                                ctypes.POINTER(ctypes.POINTER(ctypes.c_float))]),
    "gsp_client_step": (ctypes.c_int, [_P, ctypes.c_uint32, ctypes.POINTER(StepResult)]),
    "gsp_client_average": (ctypes.c_int, [_P, ctypes.c_double, ctypes.c_uint32,
                                          ctypes.c_uint32, ctypes.POINTER(AverageResult)]),
    "gsp_client_fetch": (ctypes.c_int, [_P, ctypes.c_uint32, ctypes.POINTER(FetchResult)]),
    "gsp_client_status": (ctypes.c_int, [_P, ctypes.POINTER(ctypes.c_void_p)]),
    "gsp_client_detach": (ctypes.c_int, [_P]),
    "gsp_client_last_failure": (ctypes.POINTER(Failure), [_P]),
    "gsp_client_state_of": (ctypes.c_int, [_P]),
    "gsp_client_daemon": (ctypes.c_char_p, [_P, ctypes.POINTER(ctypes.c_uint16)]),
    "gsp_client_buffer_fd": (ctypes.c_int, [_P]),
    "gsp_client_set_timeout": (ctypes.c_int, [_P, ctypes.c_uint32]),
    "gsp_client_interrupt": (None, [_P]),
    "gsp_client_close": (None, [_P]),
}

_lock = threading.Lock()
_lib = None


def _candidates():
    """[(where, path or name)] in the order load() tries them."""
    explicit = os.environ.get(ENV)
    if explicit:
        return [("$" + ENV, explicit)]
    out = []
    here = os.path.dirname(os.path.abspath(__file__))
    root = os.path.dirname(os.path.dirname(os.path.dirname(here)))
    if os.path.basename(os.path.dirname(here)) == "python" and \
            os.path.isfile(os.path.join(root, "meson.build")):
        out.append(("the build tree", os.path.join(root, "build", "libgossip",
                                                   "libgossip.so")))
    try:
        from . import _installed
        out += [("the install prefix", os.path.join(_installed.LIBDIR, n))
                for n in _NAMES]
    except ImportError:
        pass
    found = ctypes.util.find_library("gossip")
    out.append(("the dynamic loader", found or _NAMES[0]))
    return out


def _declare(lib):
    for name, (restype, argtypes) in _PROTOTYPES.items():
        f = getattr(lib, name)
        f.restype, f.argtypes = restype, argtypes
    return lib


def load():
    """libgossip as a ctypes.CDLL with the client's prototypes declared
    (loaded once); LibraryNotFound naming what was tried otherwise."""
    global _lib
    with _lock:
        if _lib is not None:
            return _lib
        tried = []
        for where, path in _candidates():
            if os.sep in path and not os.path.exists(path):
                tried.append("%s: %s (no such file)" % (where, path))
                continue
            try:
                lib = ctypes.CDLL(path)
            except OSError as e:
                tried.append("%s: %s (%s)" % (where, path, e))
                continue
            if not hasattr(lib, "gsp_client_state_of"):
                tried.append("%s: %s (a libgossip without the client's "
                             "gsp_client_state_of: too old)" % (where, path))
                continue
            _lib = _declare(lib)
            return _lib
        raise LibraryNotFound(
            "gossipd needs libgossip (the C client of gossipd's API), which "
            "could not be loaded; tried %s.  Install gossipd's library, build "
            "it (meson setup build && ninja -C build), or point %s at the "
            "file: %s=/path/to/libgossip.so" % ("; ".join(tried), ENV, ENV),
            name="libgossip")
