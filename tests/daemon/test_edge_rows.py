#!/usr/bin/env python3
"""The edge's transition tables (proto/PROTOCOL.md 4.9) against the code.

Fails when (a) a table row has no EDGE_ROW(id) mark in daemon/edge*.c or a
mark names a row the table lacks, or (b) a row is never taken by the unit
tests of daemon-edge (test-daemon-edge run in one process, CK_FORK=no,
dumping edge_rows_hit into the file GOSSIPD_EDGE_ROWS names).

  test_edge_rows.py SOURCE_ROOT TEST_DAEMON_EDGE
  test_edge_rows.py SOURCE_ROOT --counts FILE   (counts already dumped)
"""
import glob
import os
import re
import subprocess
import sys
import tempfile

ROW_ID = r"[SG][0-9]+"


def table_rows(protocol):
    """Row ids of section 4.9's tables: '| S1 | ...' lines."""
    text = open(protocol, encoding="utf-8").read()
    start = text.index("### 4.9 ")
    end = text.index("\n## ", start)
    return re.findall(r"^\|\s*(" + ROW_ID + r")\s*\|", text[start:end], re.M)


def code_rows(daemon):
    marks = {}
    for path in sorted(glob.glob(os.path.join(daemon, "edge*.c"))):
        text = open(path, encoding="utf-8").read()
        for m in re.finditer(r"\bEDGE_ROW\((" + ROW_ID + r")\)", text):
            marks.setdefault(m.group(1), []).append(os.path.basename(path))
    return marks


def run_counts(exe):
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "rows")
        env = dict(os.environ, CK_FORK="no", GOSSIPD_EDGE_ROWS=out)
        r = subprocess.run([exe], env=env, stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, text=True)
        if r.returncode != 0:
            sys.stdout.write(r.stdout[-4000:])
            raise SystemExit(f"FAIL: {exe} failed in one process (CK_FORK=no)")
        return read_counts(out)


def read_counts(path):
    counts = {}
    for line in open(path, encoding="utf-8"):
        row, n = line.split()
        counts[row] = int(n)
    return counts


def main(argv):
    root = argv[1]
    table = table_rows(os.path.join(root, "proto", "PROTOCOL.md"))
    marks = code_rows(os.path.join(root, "daemon"))
    counts = read_counts(argv[3]) if argv[2] == "--counts" else run_counts(argv[2])
    errors = []
    dup = sorted({r for r in table if table.count(r) > 1})
    if dup:
        errors.append("rows listed twice in PROTOCOL.md 4.9: " + ", ".join(dup))
    for r in table:
        if r not in marks:
            errors.append(f"row {r}: in PROTOCOL.md 4.9, no EDGE_ROW({r}) in daemon/edge*.c")
    for r, files in sorted(marks.items()):
        if r not in table:
            errors.append(f"EDGE_ROW({r}) ({', '.join(files)}): no such row in PROTOCOL.md 4.9")
    for r in table:
        if r in marks and counts.get(r, 0) == 0:
            errors.append(f"row {r}: never taken by daemon-edge's tests")
    for r in sorted(set(counts) - set(table)):
        errors.append(f"row {r}: counted (edge_impl.h EDGE_ROW_IDS) but not in PROTOCOL.md 4.9")
    for e in errors:
        print("FAIL:", e)
    print(f"{len(table)} rows; taken: " +
          " ".join(f"{r}={counts.get(r, 0)}" for r in table))
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
