"""The measurement loop: warm-up, then timed iterations under the `seed` or `adaptive` protocol."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

from ..config import RunConfig
from ..stats.intervals import ci_relative_halfwidth

WARMUP_TOLERANCE = 0.10
# The first iteration is never steady state (allocation, tracing, compilation): it is always warm-up.
MIN_WARMUP = 1
# Steady: this many consecutive iterations after the warm-up, their range within WARMUP_TOLERANCE of their median.
# Three, not two: a pair agrees by chance as often as it is steady, and a trend shows in three.
STEADY_WINDOW = 3
# The adaptive protocol times at least this many iterations after its warm-up ended on steadiness (`--iterations` may
# raise it): on 2026-11-27 a 4 s budget gave every ResNet-50 training process at batch 16 and 32 exactly 3 timed
# iterations, of steps still climbing 6.5 -> 8.2 img/s. A process with fewer, or whose warm-up never steadied, is
# flagged (bench/measurement/flags.py: short_process, unsteady) and decides nothing.
MIN_STEADY_ITERATIONS = 10
# A p99 latency needs at least this many timed iterations (below, it is the slowest iteration or next to it).
P99_MIN_TIMED = 100
# The warm-up waits for steadiness this long at most (from the end of the first iteration); then the process is timed
# anyway and flagged unsteady.
WARMUP_CAP_S = 30.0
# The timed loop stops here (from the end of the warm-up) even short of its minimum: a step over 9 s cannot give 10
# steady iterations within a process a sweep can afford (that process is flagged short_process).
TIMED_CAP_S = 90.0
WARMUP_STEADY, NEVER_STEADY = "steady", "never steady"


def steady_start(times: list[float], cap: int, tolerance: float = WARMUP_TOLERANCE,
                 window: int = STEADY_WINDOW) -> int | None:
    """The first iteration (index >= MIN_WARMUP, at most `cap`) from which `window` consecutive iterations agree:
    their range within `tolerance` of their median, and not a trend (iterations that move one way only by more
    than half the tolerance: 4.6, 4.4, 4.2 s is 9% and still settling). None while no such stretch exists yet."""
    for start in range(MIN_WARMUP, min(cap, len(times) - window) + 1):
        run = times[start:start + window]
        stretch = sorted(run)
        median = stretch[window // 2]
        spread = stretch[-1] - stretch[0]
        trend = run in (stretch, stretch[::-1]) and spread > tolerance / 2 * median
        if median > 0 and spread <= tolerance * median and not trend:
            return start
    return None


@dataclass
class Samples:
    """Raw per-iteration latencies (seconds) and why each phase stopped."""

    warmup_s: list[float] = field(default_factory=list)
    timed_s: list[float] = field(default_factory=list)
    warmup_stop: str = ""
    timed_stop: str = ""
    timed_wall_s: float = 0.0  # wall time of the timed loop, including the harness's own bookkeeping


def measure(timed_iteration: Callable[[], float], config: RunConfig,
            clock: Callable[[], float] = time.perf_counter, mark: Callable[[], None] | None = None) -> Samples:
    """Run the protocol of `config` over `timed_iteration` (which returns one iteration's seconds). `mark` is called
    before the first iteration and after each one (outside its time): an energy meter reads its counters there, so
    its reading can start where the warm-up, decided afterwards, ended (mark k is the end of iteration k)."""
    s = Samples()
    mark = mark or (lambda: None)
    mark()
    if config.protocol == "seed":
        s.warmup_s = [_then(timed_iteration(), mark) for _ in range(config.warmup)]
        t0 = clock()
        s.timed_s = [_then(timed_iteration(), mark) for _ in range(config.iterations)]
        s.timed_wall_s = clock() - t0
        s.warmup_stop = s.timed_stop = "fixed count"
        return s

    budget = config.time_budget_s
    cap = max(config.warmup, MIN_WARMUP)
    minimum = max(config.iterations, MIN_STEADY_ITERATIONS)
    marks = [clock()]  # the clock at each iteration's end: the timed loop's wall time starts where warm-up ended
    times: list[float] = []
    # The budget counts from the end of the first iteration, which is always warm-up and is start-up rather than
    # measurement (tracing, compilation, allocation: the record keeps it apart as first_iteration_s): a framework
    # that traces its step for 5 s got 3 timed iterations where one that starts at once got 4 s of them.
    since_first = lambda: marks[-1] - marks[MIN_WARMUP]  # noqa: E731
    # Warm-up ends at the first iteration from which STEADY_WINDOW iterations agree; those iterations ran exactly
    # as timed ones do, so they are the first timed iterations rather than thrown away (the warm-up is decided
    # from what came after it, once, and never revised). Without such a stretch by the cap (`warmup` iterations, or
    # WARMUP_CAP_S) the process is timed from there and its record says its steps never steadied. The time budget
    # does not end a warm-up: cutting it at half the budget is what timed unsettled training steps.
    while True:
        times.append(timed_iteration())
        marks.append(clock())
        mark()
        n = len(times)
        warm = steady_start(times, cap)
        if warm is not None:
            s.warmup_stop = WARMUP_STEADY
            break
        if n >= cap + STEADY_WINDOW or (since_first() > WARMUP_CAP_S and n >= MIN_WARMUP + STEADY_WINDOW):
            warm, s.warmup_stop = min(n, cap), NEVER_STEADY
            break
    s.warmup_s, s.timed_s = times[:warm], times[warm:]
    timed_from = marks[warm]
    # Timed: at least `minimum` iterations (unless TIMED_CAP_S ends the process first), then until the CI target is
    # met or the budget ends.
    while True:
        n = len(s.timed_s)
        if marks[-1] - timed_from > TIMED_CAP_S:
            s.timed_stop = "timed-loop cap"
            break
        if n >= minimum:
            if ci_relative_halfwidth(s.timed_s) <= config.ci_target:
                s.timed_stop = "CI target met"
                break
            if budget and since_first() > budget:
                s.timed_stop = "time budget"
                break
            if n >= 10000:
                s.timed_stop = "iteration cap"
                break
        s.timed_s.append(timed_iteration())
        marks.append(clock())
        mark()
    s.timed_wall_s = marks[-1] - marks[len(s.warmup_s)]
    return s


def _then(seconds: float, mark: Callable[[], None]) -> float:
    mark()
    return seconds
