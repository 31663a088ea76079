"""What else the machine did during a timed loop: other processes' CPU, steal, load, clock, jitter.

A benchmark on a shared machine (a laptop, a VM, a CI runner) is disturbed when other programs take
CPU time while it runs. The monitor compares the whole system's busy CPU time (/proc/stat) with this
process's own CPU time (rusage, and its descendants': a DataLoader's workers are the run's own work) over the timed
loop: the difference is what other processes used.
"""

from __future__ import annotations

import contextlib
import math
import os
import resource
import statistics
import threading
import time
from pathlib import Path

import psutil

from .devices import current_cpu_mhz

# A run is `disturbed` when, over its timed loop, other processes used more than this share of the
# machine's CPU capacity (cores x wall time). A quiet 2-core VM measured 0.3-2% here (the sweep's own
# papermill parent and the kernel's heartbeat threads); a single busy loop takes about 50%.
OTHER_CPU_LIMIT = 0.10
# ...or the hypervisor took more than this share of the CPUs (steal time).
STEAL_LIMIT = 0.05
# ...or its iteration-time coefficient of variation is more than CV_OUTLIER_FACTOR times the median
# of its config's other repetitions (and above CV_FLOOR, so a tiny absolute jitter never counts).
CV_OUTLIER_FACTOR = 3.0
CV_FLOOR = 0.05
# /proc/stat counts in 10 ms ticks: over a shorter window its shares are too coarse to judge.
MIN_WINDOW_S = 0.5

_STAT = Path("/proc/stat")


def _cpu_ticks() -> dict | None:
    """System-wide CPU time in seconds from /proc/stat's aggregate line (None where unreadable)."""
    try:
        fields = _STAT.read_text().splitlines()[0].split()
    except OSError:
        return None
    hz = os.sysconf("SC_CLK_TCK")
    v = [int(x) / hz for x in fields[1:]]
    v += [0.0] * (8 - len(v))
    user, nice, system, idle, iowait, irq, softirq, steal = v[:8]
    # guest time is already included in user/nice; idle and iowait are the only not-busy states
    return {"busy": user + nice + system + irq + softirq, "steal": steal,
            "total": user + nice + system + idle + iowait + irq + softirq + steal}


# How many of the busiest other processes a disturbed run names (by command name only: arguments may hold secrets).
TOP_OTHERS = 3


def _own_pids() -> set[int]:
    """This process and its descendants (e.g. a DataLoader's worker processes: the run's own work, not others')."""
    me = psutil.Process()
    try:
        return {me.pid, *(c.pid for c in me.children(recursive=True))}
    except psutil.Error:
        return {me.pid}


def _cpu_by_process() -> dict[tuple[int, str], float]:
    """CPU seconds so far of every process on the machine but this one and its descendants, keyed by (pid, command
    name)."""
    mine = _own_pids()
    out = {}
    for p in psutil.process_iter(["pid", "name", "cpu_times"]):
        info = p.info
        if info["pid"] not in mine and info.get("cpu_times") is not None:
            out[(info["pid"], info["name"] or "?")] = info["cpu_times"].user + info["cpu_times"].system
    return out


def busiest_others(before: dict, after: dict, top: int | None = None) -> str | None:
    """The other processes that used the most CPU between two snapshots, as 'name (pid) 1.2 s, ...' (None when
    none used any): what a disturbed run's record names, so a reader can tell what the other work was."""
    used = sorted(((after[k] - before.get(k, 0.0), k) for k in after), reverse=True)
    named = [f"{name} ({pid}) {cpu:.1f} s" for cpu, (pid, name) in used[:top or TOP_OTHERS] if cpu >= 0.05]
    return ", ".join(named) or None


def _cpu_s(pids) -> float:
    """User + system CPU seconds of the processes `pids` (one that exited between listing and reading counts 0)."""
    total = 0.0
    for pid in pids:
        with contextlib.suppress(psutil.Error):
            t = psutil.Process(pid).cpu_times()
            total += t.user + t.system
    return total


def _own_cpu_s() -> float:
    """CPU seconds of this process, its children that ended, and its live descendants (a `files` run's loader
    workers decode for the step: their CPU is the run's own, never another process's)."""
    total = 0.0
    for who in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN):
        r = resource.getrusage(who)
        total += r.ru_utime + r.ru_stime
    return total + _cpu_s(_own_pids() - {os.getpid()})


def _own_faults() -> tuple[int, int]:
    """Minor and major page faults of this process so far."""
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_minflt, r.ru_majflt


class InterferenceMonitor:
    """Context manager around a timed loop; `result()` says what else the machine was doing."""

    def __enter__(self) -> InterferenceMonitor:
        self._cpus = os.cpu_count() or 1
        self._load0 = os.getloadavg()[0]
        self._mhz0 = current_cpu_mhz()
        self._procs0 = _cpu_by_process()
        self._own0 = _own_cpu_s()
        self._faults0 = _own_faults()
        self._sys0 = _cpu_ticks()
        self._t0 = time.perf_counter()
        return self

    def __exit__(self, *exc) -> None:
        self._wall = time.perf_counter() - self._t0
        self._sys1 = _cpu_ticks()
        self._own1 = _own_cpu_s()
        self._faults1 = _own_faults()
        self._load1 = os.getloadavg()[0]
        self._mhz1 = current_cpu_mhz()
        self._others = busiest_others(self._procs0, _cpu_by_process())

    def result(self) -> dict:
        out = {"wall_s": self._wall, "cpus": self._cpus, "own_cpu_s": self._own1 - self._own0,
               "others": self._others,
               # page faults this process took over the loop: memory faulted in per step is time the step spends
               "minor_faults": self._faults1[0] - self._faults0[0], "major_faults": self._faults1[1] - self._faults0[1],
               "loadavg_1m_start": self._load0, "loadavg_1m_end": self._load1,
               "cpu_mhz_start": self._mhz0, "cpu_mhz_end": self._mhz1,
               "method": "/proc/stat busy time minus this process's and its descendants' CPU time over the timed loop"}
        if self._sys0 is None or self._sys1 is None:
            return {**out, "system_busy_s": None, "other_cpu_share": None, "steal_share": None,
                    "judged": False, "note": "/proc/stat is not readable here"}
        busy = self._sys1["busy"] - self._sys0["busy"]
        capacity = self._sys1["total"] - self._sys0["total"] or self._wall * self._cpus
        other = max(0.0, busy - out["own_cpu_s"])
        out.update(system_busy_s=busy, other_cpu_s=other,
                   other_cpu_share=other / capacity if capacity > 0 else None,
                   steal_share=(self._sys1["steal"] - self._sys0["steal"]) / capacity if capacity > 0 else None,
                   judged=self._wall >= MIN_WINDOW_S)
        if not out["judged"]:
            out["note"] = f"timed loop shorter than {MIN_WINDOW_S} s: too short to judge with 10 ms ticks"
        return out


def interference_reasons(interference: dict | None) -> list[str]:
    """Why a run counts as disturbed by other programs ([] when it does not, or cannot be judged)."""
    if not interference or not interference.get("judged"):
        return []
    reasons = []
    other, steal = interference.get("other_cpu_share"), interference.get("steal_share")
    if other is not None and other > OTHER_CPU_LIMIT:
        who = f"; busiest: {interference['others']}" if interference.get("others") else ""
        reasons.append(f"other processes used {other:.0%} of the CPUs during the timed loop "
                       f"(limit {OTHER_CPU_LIMIT:.0%}{who})")
    if steal is not None and steal > STEAL_LIMIT:
        reasons.append(f"the hypervisor stole {steal:.0%} of the CPUs (limit {STEAL_LIMIT:.0%})")
    return reasons


# A jittery process whose median lies within this share of its siblings' median is typical of its config: its jitter
# did not move its number, so it is not left out (the jitter rule drops numbers that moved, not noisy loops).
TYPICAL_MEDIAN = 0.05


# With fewer than two siblings, a process is judged against its framework, mode and precision's other processes (every
# config of theirs in the folder), when at least this many: one rule for every process, a lone repetition included.
MIN_FAMILY = 3


def cv_outlier_reason(run_cv: float, sibling_cvs, value: float | None = None, sibling_values=(),
                      family_cvs=()) -> str | None:
    """A reason when this process's jitter is far above what is usual: its config's other repetitions' median CV,
    or, with fewer than two of them, the median CV of its framework, mode and precision's other processes
    (`family_cvs`), where its one sibling (if any) does not jitter alike; and
    (where its median images/s `value` and two or more siblings' are given) its median is not typical of theirs."""

    sibling_cvs = [c for c in sibling_cvs if c is not None]
    family_cvs = [c for c in family_cvs if c is not None]
    if run_cv is None or run_cv <= CV_FLOOR:
        return None
    # With one sibling there is no telling which of the two is the odd one: judge from two on, else by the family.
    if len(sibling_cvs) >= 2:
        usual, whose = sibling_cvs, "its other repetitions'"
    elif len(family_cvs) >= MIN_FAMILY:
        if sibling_cvs and run_cv <= CV_OUTLIER_FACTOR * sibling_cvs[0]:
            return None  # its one sibling jitters alike: the config's own jitter (a short step), not an odd process
        usual, whose = family_cvs, "its framework, mode and precision's other processes'"
    else:
        return None
    typical = statistics.median(usual)
    if run_cv <= CV_OUTLIER_FACTOR * max(typical, CV_FLOOR / CV_OUTLIER_FACTOR):
        return None
    others = [v for v in sibling_values if v]
    if value and len(others) >= 2 and abs(math.log(value / statistics.median(others))) <= TYPICAL_MEDIAN:
        return None
    return (f"iteration-time CV {run_cv:.0%} is more than {CV_OUTLIER_FACTOR:g}x {whose} median CV "
            f"({typical:.0%})" + (f" and its median is more than {TYPICAL_MEDIAN:.0%} from theirs"
                                  if value and len(others) >= 2 else ""))


# Before a retry of a disturbed run: how long one look at the machine lasts, and how long to wait at most for quiet.
QUIET_WINDOW_S = 2.0
QUIET_MAX_WAIT_S = 90.0


def machine_share_busy(window_s: float = QUIET_WINDOW_S, sleep=time.sleep) -> float | None:
    """The share of the machine's CPU capacity that was busy over `window_s` (this process idles meanwhile, so it
    is other work); None where /proc/stat is unreadable."""
    t0 = _cpu_ticks()
    sleep(window_s)
    t1 = _cpu_ticks()
    if t0 is None or t1 is None or t1["total"] <= t0["total"]:
        return None
    return (t1["busy"] - t0["busy"]) / (t1["total"] - t0["total"])


def wait_until_quiet(limit: float = OTHER_CPU_LIMIT, max_wait_s: float = QUIET_MAX_WAIT_S,
                     look=machine_share_busy, clock=time.monotonic) -> dict:
    """Look at the machine until other work uses at most `limit` of it (a retry of a disturbed run then goes where
    the machine is quiet, not straight back into the same busy spell), at most `max_wait_s`. Returns what was
    seen: quiet or not, the seconds waited and the last busy share."""
    start = clock()
    share = look()
    while share is not None and share > limit and clock() - start < max_wait_s:
        share = look()
    return {"quiet": share is None or share <= limit, "waited_s": clock() - start, "busy_share": share}


class TreeSampler:
    """Samples the system's CPU time and this process tree's own every `interval` seconds.

    A distributed run has many processes (ranks, launchers, servers), so rusage of one process
    cannot tell them apart from others; this background sampler reads /proc/stat and the CPU
    time of this process and all its descendants at the same instants, and `result(start, end)`
    judges the samples inside the ranks' timed window like `InterferenceMonitor` does.
    """

    def __init__(self, interval: float = 0.1) -> None:
        self.interval, self.samples = interval, []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _tree_cpu_s(self) -> float:
        return _cpu_s(_own_pids())

    def _run(self) -> None:
        while not self._stop.is_set():
            ticks = _cpu_ticks()
            if ticks is not None:
                self.samples.append((time.perf_counter(), ticks, self._tree_cpu_s(), os.getloadavg()[0]))
            self._stop.wait(self.interval)

    def __enter__(self) -> TreeSampler:
        self._mhz0 = current_cpu_mhz()
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()
        self._mhz1 = current_cpu_mhz()

    def result(self, start: float, end: float) -> dict:
        inside = [s for s in self.samples if start <= s[0] <= end]
        out = {"cpus": os.cpu_count() or 1, "cpu_mhz_start": self._mhz0, "cpu_mhz_end": self._mhz1,
               "method": f"/proc/stat busy time minus the run's own process tree (ranks, launchers), "
                         f"sampled every {self.interval:g} s inside the ranks' timed window"}
        if len(inside) < 2:
            return {**out, "wall_s": end - start, "other_cpu_share": None, "steal_share": None, "judged": False,
                    "note": "too few samples inside the timed window to judge"}
        (t0, sys0, own0, load0), (t1, sys1, own1, load1) = inside[0], inside[-1]
        busy = sys1["busy"] - sys0["busy"]
        capacity = sys1["total"] - sys0["total"] or (t1 - t0) * out["cpus"]
        other = max(0.0, busy - (own1 - own0))
        out.update(wall_s=t1 - t0, own_cpu_s=own1 - own0, system_busy_s=busy, other_cpu_s=other,
                   other_cpu_share=other / capacity if capacity > 0 else None,
                   steal_share=(sys1["steal"] - sys0["steal"]) / capacity if capacity > 0 else None,
                   loadavg_1m_start=load0, loadavg_1m_end=load1, judged=t1 - t0 >= MIN_WINDOW_S)
        if not out["judged"]:
            out["note"] = f"timed window shorter than {MIN_WINDOW_S} s: too short to judge with 10 ms ticks"
        return out
