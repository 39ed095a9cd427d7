"""The client's side of the shared buffer's undo section (PROTOCOL.md 5.4).

After the parameters, at offset(n), the buffer carries a 64-byte header
and a copy of the parameters: gossipd copies them there before each write
into them and marks the write under way.  When the connection is lost
while that mark stands and the daemon's process is gone (it was killed
inside the write), recover() puts the parameters back as they were before
it and leaves in the copy what the write had added; the next daemon redoes
it at REGISTER if its records count it.  So a round lands at both ends of
an edge or at neither.
"""

import os
import select
import socket
import struct
import time

MAGIC = b"gsp-undo"
HEADER = 64
IDLE, WRITING, UNDONE = 0, 1, 2
_STATE = 16                                # u32, host order, after magic, seq
WAIT = 5.0                                 # for a daemon still writing


def offset(n_floats):
    """Offset of the undo header after n_floats parameters (64-aligned)."""
    return (4 * n_floats + 63) & ~63


def nbytes(n_floats):
    """The buffer's size with the undo section."""
    return offset(n_floats) + HEADER + 4 * n_floats


def init(mm, n_floats):
    """Marks a zeroed buffer as one with an undo section."""
    o = offset(n_floats)
    mm[o:o + len(MAGIC)] = MAGIC


def daemon_pidfd(sock):
    """A pidfd of the process at the other end of the Unix socket, or None."""
    try:
        pid = struct.unpack("3i", sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED,
                                                  struct.calcsize("3i")))[0]
        return os.pidfd_open(pid) if pid > 0 else None
    except (OSError, AttributeError):
        return None


def _state(mm, n_floats):
    return struct.unpack_from("=I", mm, offset(n_floats) + _STATE)[0]


def recover(mm, n_floats, pidfd, np, wait=WAIT):
    """After the connection was lost: True if a write under way was undone.
    A daemon that still runs is given `wait` seconds to finish its write;
    without a pidfd nothing is touched."""
    if _state(mm, n_floats) != WRITING or pidfd is None:
        return False
    end = time.monotonic() + wait
    poller = select.poll()
    poller.register(pidfd, select.POLLIN)
    while True:
        left = end - time.monotonic()
        gone = poller.poll(max(0, min(10, int(left * 1000))))
        if _state(mm, n_floats) != WRITING:
            return False
        if gone:
            break
        if left <= 0:
            return False
    o = offset(n_floats) + HEADER
    x = np.frombuffer(mm, dtype=np.float32, count=n_floats)
    copy = np.frombuffer(mm, dtype=np.float32, count=n_floats, offset=o)
    added = x - copy
    x[:] = copy
    copy[:] = added
    struct.pack_into("=I", mm, offset(n_floats) + _STATE, UNDONE)
    return True


def close(pidfd):
    """Closes a pidfd of daemon_pidfd() (None: nothing)."""
    if pidfd is not None:
        os.close(pidfd)
