#!/usr/bin/env python3
"""A fake daemon in its own process that is killed inside a write, for
the Python client's crash test (test_client.py KilledInsideAWrite).

usage: dyingdaemon.py SOCKET_PATH

Serves one connection on SOCKET_PATH with gossipd.protocol: HELLO_OK,
REGISTER (maps the buffer), the first STEP adds 1.0 to every parameter
and answers; the second STEP does what gossipd does before a write into
the parameters (PROTOCOL.md 5.4: the copy into the undo section, the
state WRITING), adds 100.0 to the first two parameters and then kills
itself with SIGKILL, unanswered.  Standard library only.
"""
import array
import mmap
import os
import signal
import socket
import struct
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "..", "bindings", "python"))
from gossipd import protocol as P  # noqa: E402


def main(path):
    srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    srv.bind(path + ".tmp")
    srv.listen(1)
    os.rename(path + ".tmp", path)          # the path appears listening
    srv.settimeout(20)
    conn, _ = srv.accept()
    conn.settimeout(20)
    buf, fds, mm, n, steps = b"", [], None, 0, 0
    while True:
        data, got, _, _ = socket.recv_fds(conn, 1 << 16, 4)
        if not data:
            return
        buf, fds = buf + data, fds + got
        while len(buf) >= 4 and len(buf) >= 4 + struct.unpack_from("<I", buf)[0]:
            size = struct.unpack_from("<I", buf)[0]
            body, buf = buf[4:4 + size], buf[4 + size:]
            t, value = P.decode_any(body)
            if t == P.HELLO:
                reply = P.encode_hello_ok("dying 0.1")
            elif t == P.REGISTER:
                mm = mmap.mmap(fds[0], value.buffer_bytes, mmap.MAP_SHARED,
                               mmap.PROT_READ | mmap.PROT_WRITE)
                n = value.n_floats
                reply = P.encode_ok()
            elif t == P.STEP and steps == 0:
                steps += 1
                x = array.array("f", mm[:4 * n])
                mm[:4 * n] = array.array("f", (v + 1.0 for v in x)).tobytes()
                reply = P.encode_step_ok(P.StepStats(1, 1, 1, 0, 0, 10, 10, 0.5))
            elif t == P.STEP:
                at = P.undo_offset(n)
                mm[at + P.UNDO_HEADER:at + P.UNDO_HEADER + 4 * n] = mm[:4 * n]
                struct.pack_into("=I", mm, at + P.UNDO_STATE_AT, P.UNDO_WRITING)
                x = array.array("f", mm[:4 * n])
                x[0] += 100.0
                x[1] += 100.0
                mm[:4 * n] = x.tobytes()
                os.kill(os.getpid(), signal.SIGKILL)
            else:
                reply = P.encode_error(-1, "unexpected")
            conn.sendall(P.frame(reply))


if __name__ == "__main__":
    main(sys.argv[1])
