"""The nodes' latest models: which saved models a user could have averaged
at a moment of the run, for tools/bench/bench-e2e's wall-clock measure.

Every node saves its model at every evaluation step and reports when it
got there (seconds since "go").  An evaluation at step k averages every
node's step-k model, and so waits for the slowest node: with a straggler
it measures the straggler's pace, whatever the others do meanwhile.  At a
moment t, a user holds each node's model as it is at t; the harness has,
for each node, its last saved model no later than t (up to eval_every
steps older, so the measure is conservative).  A combination of those is
formed at the time the last of its models was saved.

combos(times, cap) lists those combinations."""


def combos(times, cap):
    """times[i]: node i's (step, seconds) in the order it saved them.
    The distinct combinations of each node's latest saved model, one per
    moment some node saved one and every node had saved one: a list of
    (formed_at, [step of node i]) in time order, at most cap of them
    (evenly spaced, the last one always kept)."""
    if not times or any(not t for t in times):
        return []
    events = sorted((sec, i, step) for i, node in enumerate(times) for step, sec in node)
    latest = [None] * len(times)
    out = []
    for sec, i, step in events:
        latest[i] = step
        if None not in latest:
            if out and out[-1][0] == sec:
                out[-1] = (sec, list(latest))
            else:
                out.append((sec, list(latest)))
    if cap < 2:
        return out[-1:] if cap == 1 else []
    if len(out) > cap:
        # evenly spaced indices, the last one included
        picks = sorted({round(j * (len(out) - 1) / max(cap - 1, 1)) for j in range(cap)})
        out = [out[j] for j in picks]
    return out
