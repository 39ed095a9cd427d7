#!/usr/bin/env python3
"""The daemon's layers (daemon/daemon.h, docs/ARCHITECTURE.md): every
daemon/ file includes and calls only modules of its own layer or below.
A call is a module's prefix (link_, peers_, edge_ ...) followed by '('.
And no file above the edge module writes a field of the edge set: it
tells the set through edge.h's functions (edges_busy_begin,
edges_write_end ...).  struct edge is opaque, so the compiler stops
writes to an edge's fields; the set's struct is public for reads, so
writes are found here, over each statement with comments stripped:
  - `edges` reached as a member or by a call: `X.edges.f`, `X->edges.f`,
    `edges(s)->f`;
  - a name the file declares `edge_set *NAME` (a parameter or a local):
    `NAME->f`;
followed by the set's own storage (`.g` or `[i]`, not another `->`) and
an assignment (=, +=, |= ...) or ++/--.  A field whose address is
passed on (`&s->writes`) is not followed.

usage: test_layers.py DAEMON_DIR [--graph]
"""
import os
import re
import sys

# Bottom to top; a module may use those before it.
LAYERS = ["rxbuf", "link", "peers", "edge", "core", "mesh", "model", "step",
          "status", "api", "metrics_http", "main"]
# Files of a module other than <module>.c/.h.
FILES = {"link_handshake.c": "link", "link_impl.h": "link", "link_open.c": "link",
         "peers_dial.c": "peers", "peers_reload.c": "peers", "peers_impl.h": "peers",
         "api_socket.c": "api", "api_socket.h": "api",
         "edge_core.c": "edge", "edge_estimate.c": "edge", "edge_sched.c": "edge",
         "edge_resync.c": "edge", "edge_end.c": "edge", "edge_gen.c": "edge",
         "edge_records.c": "edge", "edges.c": "edge", "edges_api.c": "edge",
         "edge_impl.h": "edge",
         "core_average.c": "core", "core_engine.c": "core", "core_impl.h": "core",
         "model_options.c": "model", "model_options.h": "model",
         "config_check.c": "config", "config_impl.h": "config",
         "api_request.c": "api", "api_client.c": "api", "api_impl.h": "api",
         "daemon.h": "status"}
# Modules beside the layers, usable by all: not checked.
SHARED = {"config", "endpoint", "httpreq", "handshake", "log", "text", "counters", "replay", "file", "slotfile", "notify", "peercred",
          "ratelimit",
          "edgestate", "undo"}
PREFIX = {"rxbuf": "rxbuf", "link": "link", "peers": "peers", "edge": "edge",
          "edges": "edge", "core": "core", "mesh": "mesh", "model": "model", "step": "step",
          "status": "status", "api": "api", "metrics_http": "metrics_http"}
CALL = re.compile(r"\b(%s)_[a-z_0-9]+\s*\(" % "|".join(PREFIX))
INCLUDE = re.compile(r'#include "([a-z_]+)\.h"')
# Writes into the edge set's fields (see the docstring).
WRITE_TAIL = r"(?:\.\w+|\[[^\]]*\])*\s*(?:(?:[-+*/%|&^]|<<|>>)?=(?!=)|\+\+|--)"
SET_MEMBER = re.compile(r"(?:(?:\.|->)edges|\bedges\s*\([^()]*\))(?:\.|->)(\w+)"
                        + WRITE_TAIL)
SET_ALIAS = re.compile(r"\bedge_set\s*\*\s*(?:const\s+)?(\w+)")
WRITES_CHECKED_ABOVE = "edge"


def set_writes(text):
    """The fields of the edge set the text writes (see the docstring)."""
    found = SET_MEMBER.findall(text)
    for alias in set(SET_ALIAS.findall(text)):
        found += re.findall(r"(?<![\w.>])%s->(\w+)%s" % (alias, WRITE_TAIL), text)
    return sorted(set(found))


def module_of(name):
    if name in FILES:
        return FILES[name]
    return os.path.splitext(name)[0]


def strip_comments(text):
    return re.sub(r"/\*.*?\*/", "", text, flags=re.S)


def main():
    d = sys.argv[1]
    errors, graph = [], []
    for name in sorted(os.listdir(d)):
        if not name.endswith((".c", ".h")):
            continue
        mod = module_of(name)
        if mod in SHARED:
            continue
        if mod not in LAYERS:
            errors.append("%s: module %s is not in the layer list" % (name, mod))
            continue
        rank = LAYERS.index(mod)
        text = strip_comments(open(os.path.join(d, name)).read())
        for inc in INCLUDE.findall(text):
            m = module_of(inc + ".h")
            graph.append("%s -> %s.h" % (name, inc))
            if m in LAYERS and LAYERS.index(m) > rank:
                errors.append("%s includes %s.h, a layer above it" % (name, inc))
        for prefix in set(CALL.findall(text)):
            m = PREFIX[prefix]
            if LAYERS.index(m) > rank:
                errors.append("%s calls %s_*(), a layer above it" % (name, prefix))
        if rank > LAYERS.index(WRITES_CHECKED_ABOVE):
            for field in set_writes(text):
                errors.append("%s writes the edge set's field %s (tell the set "
                              "through edge.h instead)" % (name, field))
    if "--graph" in sys.argv:
        print("\n".join(graph))
    for e in errors:
        print("FAIL: " + e)
    print("%d files checked, %d violations" % (len(graph) and len(set(
        g.split(" ")[0] for g in graph)), len(errors)))
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
