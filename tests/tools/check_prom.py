#!/usr/bin/env python3
"""Checks a Prometheus text exposition (format 0.0.4) on stdin, twice:

1. a strict line grammar: line syntax, names, label escapes, values, one
   HELP and TYPE per family before its samples, families not interleaved,
   no duplicate series, counters named *_total;
2. Prometheus' own Python parser (prometheus_client, Debian's
   python3-prometheus-client) must read every sample back.

Prints one line per problem; exits 1 on any, 0 otherwise.  Used by
tests/tools/test_gossipctl.sh and tests/install/test_service.py.
"""
import re
import sys

NAME = r"[a-zA-Z_:][a-zA-Z0-9_:]*"
LABEL = r'[a-zA-Z_][a-zA-Z0-9_]*="(?:[^"\\\n]|\\[\\"n])*"'
VALUE = r"(?:[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?|NaN|[+-]Inf)"
SAMPLE = re.compile(r"^(%s)(\{(?:%s(?:,%s)*,?)?\})? (%s)(?: -?[0-9]+)?$"
                    % (NAME, LABEL, LABEL, VALUE))
HELP = re.compile(r"^# HELP (%s) ((?:[^\\\n]|\\[\\n])*)$" % NAME)
TYPE = re.compile(r"^# TYPE (%s) (counter|gauge|histogram|summary|untyped)$" % NAME)

errors = []
types, helps, done, series = {}, set(), set(), set()
current = None
text = sys.stdin.read()
if not text.endswith("\n"):
    errors.append("the exposition does not end with a newline")
for n, line in enumerate(text.split("\n")[:-1], 1):
    m = HELP.match(line) or TYPE.match(line)
    if m:
        fam = m.group(1)
        if fam != current and fam in done | {current}:
            errors.append("%d: family %s appears twice" % (n, fam))
        if line.startswith("# HELP"):
            if fam in helps:
                errors.append("%d: second HELP for %s" % (n, fam))
            helps.add(fam)
        else:
            if fam in types:
                errors.append("%d: second TYPE for %s" % (n, fam))
            types[fam] = m.group(2)
        if current and current != fam:
            done.add(current)
        current = fam
        continue
    if line.startswith("#"):
        errors.append("%d: unexpected comment %r" % (n, line))
        continue
    m = SAMPLE.match(line)
    if not m:
        errors.append("%d: not a sample: %r" % (n, line))
        continue
    fam = m.group(1)
    if fam != current:
        errors.append("%d: sample of %s outside its family block" % (n, fam))
    if fam not in types or fam not in helps:
        errors.append("%d: %s has no HELP or TYPE before it" % (n, fam))
    if types.get(fam) == "counter" and not fam.endswith("_total"):
        errors.append("%d: counter %s is not named *_total" % (n, fam))
    labels = tuple(sorted(re.findall(LABEL, m.group(2) or "")))
    if (fam, labels) in series:
        errors.append("%d: duplicate series %s%s" % (n, fam, m.group(2) or ""))
    series.add((fam, labels))


def parser_samples(text):
    """The samples prometheus_client reads, or a string saying why not."""
    try:
        from prometheus_client.parser import text_string_to_metric_families
    except ImportError:
        # Debian's package, when this interpreter is not /usr/bin/python3.
        sys.path.append("/usr/lib/python3/dist-packages")
        try:
            from prometheus_client.parser import text_string_to_metric_families
        except ImportError:
            return ("prometheus_client is missing: install python3-prometheus-client "
                    "(tools/run-tests does)")
    try:
        return [s for fam in text_string_to_metric_families(text)
                for s in fam.samples]
    except Exception as e:  # the parser raises ValueError and others
        return "prometheus_client cannot parse the exposition: %r" % e


samples = parser_samples(text)
if isinstance(samples, str):
    errors.append(samples)
elif len(samples) != len(series):
    errors.append("prometheus_client read %d samples, the grammar %d"
                  % (len(samples), len(series)))
for e in errors:
    print(e)
sys.exit(1 if errors else 0)
