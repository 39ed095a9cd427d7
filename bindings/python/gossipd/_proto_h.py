"""gossipd._proto_h: the protocol version read out of proto/proto.h.

proto/proto.h's GSP_PROTO_VERSION_MAJOR and GSP_PROTO_VERSION_MINOR are
the one place the protocol version is written.  The Python package never
copies them by hand:

- an installed package (meson install, pip install) has
  gossipd/_proto_version.py, which the build writes from proto.h by
  running this file: python3 _proto_h.py PROTO_H OUTPUT;
- the source tree (PYTHONPATH=bindings/python) has no such module, and
  gossipd.protocol reads proto.h beside it (checkout_version()).

Standard library only; imported by gossipd.protocol only when the
generated module is missing.
"""
import os
import re
import sys

_DEFINE = re.compile(r"^#define[ \t]+GSP_PROTO_VERSION_(MAJOR|MINOR)[ \t]+(\d+)[ \t]*$",
                     re.MULTILINE)
# Where proto.h is from this file in a source checkout:
# bindings/python/gossipd/_proto_h.py -> proto/proto.h.
CHECKOUT_PROTO_H = os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "..", "..", "proto", "proto.h")


def read(path):
    """(major, minor) from the header at path; ValueError unless it
    defines each of the two exactly once."""
    with open(path, encoding="utf-8") as f:
        found = _DEFINE.findall(f.read())
    numbers = dict(found)
    if len(found) != 2 or set(numbers) != {"MAJOR", "MINOR"}:
        raise ValueError("%s: expected one #define GSP_PROTO_VERSION_MAJOR and one "
                         "GSP_PROTO_VERSION_MINOR, found %r" % (path, found))
    return int(numbers["MAJOR"]), int(numbers["MINOR"])


def checkout_version():
    """(major, minor) from the source checkout's proto/proto.h; ImportError
    saying how to get the generated module when there is none."""
    if not os.path.isfile(CHECKOUT_PROTO_H):
        raise ImportError(
            "gossipd: gossipd/_proto_version.py is missing and no proto/proto.h "
            "is beside this package (%s): install the package with meson install "
            "or pip install bindings/python from the gossipd source tree, or use "
            "it from that tree (PYTHONPATH=bindings/python)"
            % os.path.dirname(os.path.abspath(__file__)))
    return read(CHECKOUT_PROTO_H)


def write(proto_h, output):
    """Writes the generated module: the two numbers of proto_h."""
    major, minor = read(proto_h)
    with open(output, "w", encoding="utf-8") as f:
        f.write('"""Generated from proto/proto.h by gossipd/_proto_h.py; '
                'do not edit."""\n'
                "VERSION_MAJOR = %d\nVERSION_MINOR = %d\n" % (major, minor))


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit("usage: _proto_h.py PROTO_H OUTPUT")
    write(sys.argv[1], sys.argv[2])
