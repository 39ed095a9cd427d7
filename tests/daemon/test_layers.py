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

And the files call one way: the call graph between daemon/*.c files has
no cycle among the files of a module ORDERS lists (link, peers, edge),
each of whose files calls only those before it in its module's order
(LINK_ORDER, PEERS_ORDER, EDGE_ORDER: bottom to top, as the module's
_impl.h states), and elsewhere only the cycles ALLOWED_CYCLES names
(none now; each a strongly connected set of files, so a file that joins
one, or a new cycle, fails).  A file uses another when it names (calls,
or takes as a callback) a function the other defines without `static`,
found by an approximate parse of the sources with comments and literals
stripped: a definition is a line that starts at column 0 with a type and
a name, then its parameters and `{`.  A callback registered at setup
and called later adds no use to the callee's file.  --self-test checks
the parse and the check against planted files (a planted cycle must
fail, in the edge, link and peers modules too).

usage: test_layers.py DAEMON_DIR [--graph]
       test_layers.py --self-test
"""
import os
import re
import sys
import tempfile

# Bottom to top; a module may use those before it.
LAYERS = ["rxbuf", "seeds", "link", "peers", "membership", "edge", "core", "group", "mesh", "probe", "cluster", "model", "step", "fetch",
          "status", "api", "metrics_http", "lifecycle", "main"]
# Files of a module other than <module>.c/.h.
FILES = {"cluster_endpoints.c": "cluster", "cluster_impl.h": "cluster", "link_core.c": "link", "link_handshake.c": "link", "link_impl.h": "link",
         "link_open.c": "link",
         "peers_core.c": "peers", "peers_dial.c": "peers", "peers_reload.c": "peers",
         "peers_impl.h": "peers",
         "api_socket.c": "api", "api_socket.h": "api",
         "edge_core.c": "edge", "edge_estimate.c": "edge", "edge_sched.c": "edge",
         "edge_resync.c": "edge", "edge_end.c": "edge", "edge_gen.c": "edge",
         "edge_records.c": "edge", "edges_pace.c": "edge", "edges.c": "edge",
         "edges_api.c": "edge", "edge_impl.h": "edge",
         "core_average.c": "core", "core_engine.c": "core", "core_impl.h": "core",
         "model_options.c": "model", "model_options.h": "model",
         "model_group.c": "model", "model_impl.h": "model", "model_desc.c": "model",
         "config_check.c": "config", "config_impl.h": "config", "config_cluster.c": "config",
         "seeds_srv.c": "seeds",
         "api_request.c": "api", "api_client.c": "api", "api_impl.h": "api",
         "swim_msg.c": "swim", "swim_gossip.c": "swim", "swim_impl.h": "swim",
         "daemon.h": "status"}
# Modules beside the layers, usable by all: not checked.
SHARED = {"config", "admission", "endpoint", "httpreq", "handshake", "log", "text", "counters", "replay", "file", "slotfile", "notify", "peercred",
          "ratelimit", "members", "graph", "swim",
          "edgestate", "undo"}
PREFIX = {"rxbuf": "rxbuf", "seeds": "seeds", "link": "link", "peers": "peers", "membership": "membership", "edge": "edge",
          "edges": "edge", "core": "core", "group": "group", "mesh": "mesh", "probe": "probe", "cluster": "cluster", "model": "model", "step": "step", "fetch": "fetch",
          "status": "status", "api": "api", "metrics_http": "metrics_http",
          "lifecycle": "lifecycle"}
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


# The cycles of calls between files still allowed (modules not yet made
# one-way inside), each the set of files that call each other.  None may
# hold a file of a module ORDERS lists.  None is left: the mechanism
# stays for a module split before it is made one-way.
ALLOWED_CYCLES = []
# The link module's files, bottom to top: each calls only those before it
# (the order link_impl.h states).
LINK_ORDER = ["link_core.c", "link_handshake.c", "link.c", "link_open.c"]
# The peers module's files, bottom to top (the order peers_impl.h states).
PEERS_ORDER = ["peers_core.c", "peers_dial.c", "peers_reload.c", "peers.c"]
# The edge module's files, bottom to top: each calls only those before it
# (the order edge_core.c and edge_impl.h state).
EDGE_ORDER = ["edge_core.c", "edge_estimate.c", "edge_sched.c", "edge_resync.c",
              "edge_end.c", "edge_gen.c", "edge.c", "edge_records.c", "edges_pace.c",
              "edges.c", "edges_api.c"]
# The modules whose files must call one way: no cycle, and their order.
ORDERS = {"link": LINK_ORDER, "peers": PEERS_ORDER, "edge": EDGE_ORDER}

C_KEYWORDS = {"if", "while", "for", "switch", "return", "sizeof", "else", "do"}
DEFINITION = re.compile(r"^([A-Za-z_][\w \t*]*?)\b(\w+)\s*\("
                        r"((?:[^()]|\([^()]*\))*)\)\s*\{", re.M)
IDENT = re.compile(r"\b[A-Za-z_]\w*\b")


def strip_code(text):
    """Comments, string and character literals gone (the names in them
    are no calls)."""
    text = re.sub(r"/\*.*?\*/", " ", text, flags=re.S)
    text = re.sub(r"//[^\n]*", " ", text)
    text = re.sub(r'"(?:\\.|[^"\\\n])*"', '""', text)
    return re.sub(r"'(?:\\.|[^'\\\n])*'", "''", text)


def definitions(text):
    """The functions a stripped C text defines: (all, those not static)."""
    every, public = set(), set()
    for m in DEFINITION.finditer(text):
        head, name = m.group(1), m.group(2)
        if set(head.split()) & C_KEYWORDS or name in C_KEYWORDS:
            continue
        every.add(name)
        if "static" not in head.split():
            public.add(name)
    return every, public


def call_graph(d):
    """{file: {other file: [names it uses of the other]}} over d's .c files."""
    texts, owner, own = {}, {}, {}
    for name in sorted(os.listdir(d)):
        if name.endswith(".c"):
            texts[name] = strip_code(open(os.path.join(d, name)).read())
            own[name], public = definitions(texts[name])
            for fn in public:
                owner.setdefault(fn, name)
    graph = {}
    for name, text in texts.items():
        for ident in set(IDENT.findall(text)) - own[name]:
            callee = owner.get(ident)
            if callee and callee != name:
                graph.setdefault(name, {}).setdefault(callee, []).append(ident)
    return graph


def cycles(graph):
    """The sets of two or more files that reach each other by uses."""
    def reach(start):
        seen, todo = set(), [start]
        while todo:
            for nxt in graph.get(todo.pop(), {}):
                if nxt not in seen:
                    seen.add(nxt)
                    todo.append(nxt)
        return seen
    reached = {f: reach(f) for f in graph}
    found = []
    for f in sorted(graph):
        group = {f} | {g for g in reached[f] if f in reached.get(g, ())}
        if len(group) > 1 and group not in found:
            found.append(group)
    return found


def check_cycles(graph, allowed, forbidden_in):
    """(errors, notes): a cycle holding a file of a module in
    `forbidden_in`, or one not in `allowed`, is an error; an allowed one
    a note."""
    errors, notes = [], []
    for group in cycles(graph):
        names = ", ".join(sorted(group))
        path = " -> ".join(cycle_path(graph, sorted(group)))
        ordered = sorted({module_of(f) for f in group} & set(forbidden_in))
        if ordered:
            errors.append("the %s module's files call each other in a cycle: %s (%s)"
                          % (" and ".join(ordered), names, path))
        elif group not in allowed:
            errors.append("a new cycle of calls between files: %s (%s); make the "
                          "calls one way (ARCHITECTURE.md)" % (names, path))
        else:
            notes.append("allowed cycle (ALLOWED_CYCLES): %s (%s)" % (names, path))
    for group in allowed:
        if group not in cycles(graph):
            notes.append("ALLOWED_CYCLES names %s, a cycle no more: drop it"
                         % ", ".join(sorted(group)))
    return errors, notes


def check_order(graph, order, module):
    """A file of `module` that calls one after it in `order`, or is not
    in it."""
    errors = []
    for f in sorted(graph):
        if module_of(f) != module:
            continue
        if f not in order:
            errors.append("%s: not in the %s module's order (%s_ORDER)"
                          % (f, module, module.upper()))
            continue
        for g in sorted(graph[f]):
            if g in order and order.index(g) > order.index(f):
                errors.append("%s calls %s, after it in the %s module's order: %s"
                              % (f, g, module, " ".join(sorted(graph[f][g]))))
    return errors


def cycle_path(graph, group):
    """A shortest cycle through group's first file, as a list of files."""
    start, inside = group[0], set(group)
    back = {start: None}
    todo = [start]
    while todo:
        f = todo.pop(0)
        for g in sorted(graph.get(f, {})):
            if g == start:
                path = [f]
                while back[path[-1]]:
                    path.append(back[path[-1]])
                return path[::-1] + [start]
            if g in inside and g not in back:
                back[g] = f
                todo.append(g)
    return [start]


def plant(d, files):
    """files ({name: text}) written into directory d."""
    for name, text in files.items():
        with open(os.path.join(d, name), "w") as f:
            f.write(text)


# An upward call planted in the link and the peers module, each making a
# cycle with a call down: the real orders (ORDERS) must catch both.
PLANTED_UPWARD = {
    "link_core.c": "void link__fail(void)\n{\n\tlink__new();\n}\n",
    "link.c": "void link__new(void)\n{\n}\n"
              "static void on_read(void)\n{\n\tlink__fail();\n}\n",
    "peers_core.c": "void peers_error(void)\n{\n\tpeers__dial_later();\n}\n",
    "peers_dial.c": "void peers__dial_later(void)\n{\n\tpeers_error();\n}\n",
}


def self_test_orders():
    """The link and peers modules' orders on planted upward calls."""
    with tempfile.TemporaryDirectory() as d:
        plant(d, PLANTED_UPWARD)
        graph = call_graph(d)
        errors, _ = check_cycles(graph, ALLOWED_CYCLES, ORDERS)
        assert errors == [
            "the link module's files call each other in a cycle: link.c, "
            "link_core.c (link.c -> link_core.c -> link.c)",
            "the peers module's files call each other in a cycle: peers_core.c, "
            "peers_dial.c (peers_core.c -> peers_dial.c -> peers_core.c)"], errors
        order = []
        for module, files in ORDERS.items():
            order += check_order(graph, files, module)
        assert order == [
            "link_core.c calls link.c, after it in the link module's order: "
            "link__new",
            "peers_core.c calls peers_dial.c, after it in the peers module's "
            "order: peers__dial_later"], order


def self_test():
    """The parse and the cycle check on planted files."""
    planted = {
        # An edge cycle: edge_core.c <-> edge.c, by a call across lines
        # and a function passed as a callback.
        "edge_core.c": "#include \"edge.h\"\n"
                       "int edge__low(int x,\n\t      void (*cb)(int))\n{\n"
                       "\treturn edge_high\n\t\t(x);\n}\n",
        "edge.c": "static const struct ops o = { .f = edge__low };\n"
                  "void edge_high(int x)\n{\n\t(void)x;\n}\n",
        # No uses: a name in a comment or a string, a static function of
        # the same name as another file's.
        "model.c": "/* edge_high() */\nstatic const char *s = \"edge_high()\";\n"
                   "static void edge__low(void)\n{\n}\n"
                   "void model_go(void)\n{\n\tedge__low();\n}\n",
        # An allowed cycle, and one not allowed.
        "step.c": "void step_a(void)\n{\n\tstep__b();\n}\n",
        "step_average.c": "void step__b(void)\n{\n\tstep_a();\n}\n",
        "mesh.c": "void mesh_a(void)\n{\n\tapi_b();\n\tif (x) {\n\t}\n}\n",
        "api.c": "void api_b(void)\n{\n\tmesh_a();\n}\n",
    }
    with tempfile.TemporaryDirectory() as d:
        plant(d, planted)
        graph = call_graph(d)
        want = {"edge_core.c": {"edge.c": ["edge_high"]},
                "edge.c": {"edge_core.c": ["edge__low"]},
                "step.c": {"step_average.c": ["step__b"]},
                "step_average.c": {"step.c": ["step_a"]},
                "mesh.c": {"api.c": ["api_b"]},
                "api.c": {"mesh.c": ["mesh_a"]}}
        assert graph == want, graph
        errors, notes = check_cycles(graph, [{"step.c", "step_average.c"},
                                             {"peers.c", "peers_dial.c"}], ["edge"])
        assert len(errors) == 2, errors
        assert "edge module's files call each other" in errors[1], errors
        assert "edge.c, edge_core.c (edge.c -> edge_core.c -> edge.c)" in errors[1], errors
        assert "a new cycle" in errors[0] and "api.c, mesh.c" in errors[0], errors
        assert any("allowed cycle" in n and "step.c" in n for n in notes), notes
        assert any("cycle no more" in n and "peers.c" in n for n in notes), notes
        order = check_order(graph, ["edge_core.c", "edge.c"], "edge")
        assert order == ["edge_core.c calls edge.c, after it in the edge module's "
                         "order: edge_high"], order
    self_test_orders()
    print("self-test: the planted cycles fail, the allowed one passes")
    return 0


def main():
    if "--self-test" in sys.argv:
        return self_test()
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
    calls = call_graph(d)
    cycle_errors, notes = check_cycles(calls, ALLOWED_CYCLES, ORDERS)
    errors += cycle_errors
    for module, order in ORDERS.items():
        errors += check_order(calls, order, module)
    if "--graph" in sys.argv:
        print("\n".join(graph))
        for f in sorted(calls):
            for g in sorted(calls[f]):
                print("%s calls %s: %s" % (f, g, " ".join(sorted(calls[f][g]))))
    for n in notes:
        print("note: " + n)
    for e in errors:
        print("FAIL: " + e)
    print("%d files checked, %d violations" % (len(graph) and len(set(
        g.split(" ")[0] for g in graph)), len(errors)))
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
