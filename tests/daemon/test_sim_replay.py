#!/usr/bin/env python3
"""The simulation's own test (tests/daemon/edgesim.h): a failing seed
prints a replay command, and that command replays the failure.

The bug is planted with --sabotage: in one schedule in 8, chosen from the
seed, one end loses the update of a round its STEP applied, and nothing
reports it.  For each sweep below the test asserts that
  - the sweep without --sabotage passes (exit 0, nothing moved), so what
    is found is the planted bug;
  - the sweep with --sabotage fails (exit 1), counts moved schedules,
    lists failing seeds and prints "replay: ..." with --sabotage in it;
  - the replay command, run as printed, fails for the same seed with the
    same drift bit for bit (printed with %.17g), and its --trace names the
    sabotaged action (the step, its end and action number);
  - the replay run twice gives the same output byte for byte.

usage: test_sim_replay.py TEST_DAEMON_SIM
"""
import re
import shlex
import subprocess
import sys

# (method, faults, seeds, whether every planted loss must be seen).  In
# exact gossip a pair's ends are equal after one round, so a later
# round's update is float rounding and losing it moves nothing: only
# some planted losses show there.  PowerGossip still differs at the end.
SWEEPS = [
    ("powergossip", "none", 300, True),
    ("exact", "reset,detach,remove", 400, False),
]

SUMMARY = re.compile(r"^(\d+) schedules of \d+ actions \(.*\): (\d+) moved the average, "
                     r"(\d+) moved it after .*, (\d+) did not resume; worst drift \S+$", re.M)
SABOTAGED = re.compile(r"^sabotage: (\d+) schedules lost an update$", re.M)
FIRST = re.compile(r"^replay seed (\d+): drift (\S+)$", re.M)
FAILING = re.compile(r"^failing seeds: ([\d ]+)(?: \.\.\.)?$", re.M)
REPLAY = re.compile(r"^replay: (.*)$", re.M)
PLANTED = re.compile(r"^ +\(sabotage: action (\d+), the step at ([ab]), "
                     r"loses the update of round \d+, sum \S+\)$")


def run(argv):
    p = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=300)
    return p.returncode, p.stdout.decode(), p.stderr.decode()


def one(pattern, text, what):
    found = pattern.findall(text)
    if len(found) != 1:
        sys.exit("FAIL: expected one %s line, found %d in:\n%s" % (what, len(found), text))
    return found[0]


def check(cond, msg, text=""):
    if not cond:
        sys.exit("FAIL: %s%s" % (msg, "\n" + text if text else ""))


def sweep(sim, method, faults, seeds, every):
    base = [sim, "--seeds", str(seeds), "--steps", "200", "--faults", faults, "--method", method]
    name = "%s, faults %s, %d seeds" % (method, faults, seeds)

    rc, out, _ = run(base)
    check(rc == 0, "%s without --sabotage: exit %d, expected 0" % (name, rc), out)
    n, moved, _, stuck = one(SUMMARY, out, "summary")
    check(moved == "0" and stuck == "0", "%s without --sabotage moved or stuck" % name, out)

    rc, out, _ = run(base + ["--sabotage"])
    check(rc == 1, "%s with --sabotage: exit %d, expected 1" % (name, rc), out)
    n, moved, _, stuck = one(SUMMARY, out, "summary")
    lost = int(one(SABOTAGED, out, "sabotage count"))
    check(int(moved) > 0, "%s: the planted losses moved nothing" % name, out)
    check(int(moved) <= lost and stuck == "0",
          "%s: %s moved, %s did not resume, of %d planted" % (name, moved, stuck, lost), out)
    if every:
        check(int(moved) == lost, "%s: %s planted losses seen of %d" % (name, moved, lost), out)
    failing = one(FAILING, out, "failing seeds").split()
    seed, drift = one(FIRST, out, "replay seed")
    check(failing[0] == seed, "%s: first failing seed %s, list starts %s" % (name, seed, failing[0]))
    replay = one(REPLAY, out, "replay")
    argv = shlex.split(replay)
    check("--sabotage" in argv and "--trace" in argv,
          "%s: replay line lacks --sabotage or --trace: %s" % (name, replay))
    print("%s: %s of %s schedules moved, %d planted; first failing seed %s, drift %s"
          % (name, moved, n, lost, seed, drift))
    print("replay: " + replay)

    # The replay as printed: the same seed fails with the same drift.
    rc1, out1, err1 = run(argv)
    check(rc1 == 1, "%s: replay exit %d, expected 1" % (name, rc1), out1)
    n1, moved1, _, _ = one(SUMMARY, out1, "replay summary")
    check((n1, moved1) == ("1", "1"), "%s: the replay ran %s schedules, %s moved" % (name, n1, moved1), out1)
    check(one(FAILING, out1, "replay failing seeds").split() == [seed],
          "%s: the replay's failing seed is not %s" % (name, seed), out1)
    seed1, drift1 = one(FIRST, out1, "the replay's replay seed")
    check(seed1 == seed and drift1 == drift and float(drift1) == float(drift),
          "%s: replay seed %s drift %s, the sweep's seed %s drift %s" % (name, seed1, drift1, seed, drift))
    check(one(REPLAY, out1, "replay's replay") == replay,
          "%s: the replay prints another replay command" % name, out1)

    # Its trace names the sabotaged action, once, as the line after it.
    lines = out1.splitlines()
    check(lines.count("seed %s:" % seed) == 1, "%s: the trace does not open with seed %s" % (name, seed), out1)
    planted = [(k, PLANTED.match(line)) for k, line in enumerate(lines) if "(sabotage:" in line]
    check(len(planted) == 1 and planted[0][1] is not None,
          "%s: %d sabotage lines in the trace" % (name, len(planted)), out1)
    k, m = planted[0]
    action = re.compile(r"^ +%s step(?: off the loop begins)? %s$" % (m.group(1), m.group(2)))
    check(k > 0 and action.match(lines[k - 1]),
          "%s: the sabotage line names action %s at %s, the line before it is %r"
          % (name, m.group(1), m.group(2), lines[k - 1] if k else None))
    print("trace: %s\n       %s" % (lines[k - 1].strip(), lines[k].strip()))

    # Deterministic: the same replay again, byte for byte.
    rc2, out2, err2 = run(argv)
    check((rc2, out2, err2) == (rc1, out1, err1),
          "%s: two runs of the replay differ (exit %d and %d, %d and %d bytes)"
          % (name, rc1, rc2, len(out1) + len(err1), len(out2) + len(err2)))
    print("replayed twice: %d bytes each, identical" % (len(out1) + len(err1)))


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    for method, faults, seeds, every in SWEEPS:
        sweep(sys.argv[1], method, faults, seeds, every)
    print("ok")


if __name__ == "__main__":
    main()
