"""How busy the shared machine is: load average, the CPU other processes
use, and the CPU seconds of this harness's children."""
import os
import resource
import time


def loadavg():
    with open("/proc/loadavg") as f:
        return [float(x) for x in f.read().split()[:3]]


def busy_jiffies():
    """(busy, total) jiffies of all CPUs from /proc/stat."""
    with open("/proc/stat") as f:
        v = [int(x) for x in f.readline().split()[1:]]
    idle = v[3] + v[4]
    return sum(v) - idle, sum(v)


def _proc_cpu():
    """{pid: (comm, utime+stime jiffies)} of every process now."""
    out = {}
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open("/proc/%s/stat" % d) as f:
                s = f.read()
        except OSError:
            continue
        comm = s[s.index("(") + 1:s.rindex(")")]
        rest = s[s.rindex(")") + 2:].split()
        out[int(d)] = (comm, int(rest[11]) + int(rest[12]))
    return out


def others(interval=1.0, exclude=()):
    """[(cores, pid, comm)] of processes that used > 0.1 core over
    interval seconds, this process and `exclude` left out; and the total
    cores used by everything but this process."""
    hz = os.sysconf("SC_CLK_TCK")
    a, (b0, _) = _proc_cpu(), busy_jiffies()
    time.sleep(interval)
    b, (b1, _) = _proc_cpu(), busy_jiffies()
    me = os.getpid()
    mine = (b.get(me, ("", 0))[1] - a.get(me, ("", 0))[1]) / hz / interval
    heavy = []
    for pid, (comm, t) in b.items():
        if pid == me or pid in exclude or pid not in a:
            continue
        cores = (t - a[pid][1]) / hz / interval
        if cores > 0.1:
            heavy.append((round(cores, 2), pid, comm))
    return sorted(heavy, reverse=True), (b1 - b0) / hz / interval - mine


def wait_quiet(max_wait, threshold=0.3, log=None):
    """Waits up to max_wait seconds for other processes to use less than
    threshold cores; returns what it saw last (the run goes ahead either
    way, unless the caller refuses a busy machine: the record says how
    quiet it was, and whether it was quiet)."""
    t0 = time.monotonic()
    while True:
        heavy, busy = others()
        rec = dict(load1=loadavg()[0], other_cores=round(busy, 2),
                   heavy=" ".join("%s:%.2f" % (c, x) for x, _, c in heavy[:3]),
                   waited_s=round(time.monotonic() - t0, 1), quiet=busy < threshold)
        if busy < threshold or time.monotonic() - t0 >= max_wait:
            return rec
        if log:
            log("machine busy (%.2f cores used by others: %s); waiting"
                % (busy, rec["heavy"] or "many small"))
        time.sleep(4)


def children_cpu():
    """CPU seconds (user + system) of every child waited for so far."""
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


class Meter:
    """CPU seconds of the children and of the whole machine over a span:
    others_cpu_s is what everything else used meanwhile."""

    def __init__(self):
        self.c0, self.b0, self.t0 = children_cpu(), busy_jiffies()[0], time.monotonic()
        self.me0 = time.process_time()

    def done(self):
        hz = os.sysconf("SC_CLK_TCK")
        cpu = children_cpu() - self.c0
        me = time.process_time() - self.me0
        busy = (busy_jiffies()[0] - self.b0) / hz
        return dict(cpu_s=round(cpu, 1), harness_cpu_s=round(me, 1),
                    others_cpu_s=round(max(busy - cpu - me, 0.0), 1),
                    span_s=round(time.monotonic() - self.t0, 1))
