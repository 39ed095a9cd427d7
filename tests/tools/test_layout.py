#!/usr/bin/env python3
"""The source tree's layout (docs/ARCHITECTURE.md, "Where the programs
live"): tools/ holds the product's programs and the helpers they share,
and nothing else; benchmark drivers live in tools/bench/, the test
harness in tests/harness/, the example trainer in examples/.

Fails when
  - tools/ holds an entry not on the PRODUCT list below (a test harness
    file, a benchmark driver or an example put back there: move it, or,
    for a new product program, add it here and to ARCHITECTURE.md);
  - a file of tools/ (tools/bench/ included) or examples/ uses the test
    harness: imports one of its Python modules, or puts tests/ on
    sys.path (the harness may use tools/, never the other way round).

usage: test_layout.py SOURCE_ROOT
"""
import os
import re
import sys

# tools/, top level: what a user runs or what meson installs, and the C
# helpers those programs share.
PRODUCT = {
    "meson.build",
    "gossipctl",                    # folder: gossipctl (installed)
    "gossip-sim.c",                 # gossip-sim (installed)
    "gossip-run",                   # the launcher (installed)
    "gossipcluster.py",             # gossip-run's local cluster (installed)
    "gossip-cluster",               # the quick start's local cluster
    "gossipcerts.py",               # gossip-cluster's authority and certificates
    "quickstart", "deps.sh",        # install, build, run the quick start
    "run-tests", "fuzz", "sim-sweep", "sim-mutants", "chaos",   # the developer's entry points
    "cli.c", "cli.h", "idx.c", "idx.h", "shapes.c", "shapes.h",
    "trainerlink.c", "trainerlink.h",
    "data",                         # folder: model layouts (resnet50.shapes)
    "bench",                        # folder: the benchmark drivers
}
# Where what is not product goes, for the failure message.
ELSEWHERE = ("benchmark drivers: tools/bench/; test harness: tests/harness/; "
             "example programs: examples/")
# The harness's Python modules (tests/harness/*.py).
HARNESS_IMPORT = re.compile(r"^\s*(?:import|from)\s+(faultproxy|hostile)\b", re.M)
# sys.path.insert / append with an argument that names tests/ or harness.
TESTS_ON_PATH = re.compile(r"sys\.path\.(?:insert|append)\([^\n]*[\"'](?:tests|harness)[\"']")


def stray_entries(root):
    tools = os.path.join(root, "tools")
    return sorted(e for e in os.listdir(tools)
                  if e not in PRODUCT and e != "__pycache__")


def harness_users(root):
    """Files of tools/ and examples/ that use tests/harness/."""
    found = []
    for top in ("tools", "examples"):
        for d, dirs, files in os.walk(os.path.join(root, top)):
            dirs[:] = [x for x in dirs if x != "__pycache__"]
            for name in files:
                path = os.path.join(d, name)
                try:
                    with open(path, encoding="utf-8") as f:
                        text = f.read()
                except (UnicodeDecodeError, OSError):
                    continue
                for pattern in (HARNESS_IMPORT, TESTS_ON_PATH):
                    m = pattern.search(text)
                    if m:
                        found.append("%s: %s" % (os.path.relpath(path, root),
                                                 m.group(0).strip()))
    return found


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    root = sys.argv[1]
    failures = ["tools/%s: not a product file (%s)" % (e, ELSEWHERE)
                for e in stray_entries(root)]
    failures += ["%s: uses the test harness" % u for u in harness_users(root)]
    for f in failures:
        print("FAIL " + f)
    if failures:
        sys.exit(1)
    print("layout: tools/ holds %d product entries; tools/ and examples/ "
          "use no test harness" % len(PRODUCT))


if __name__ == "__main__":
    main()
