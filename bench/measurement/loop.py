"""The measurement loop: warm-up, then timed iterations under the `seed` or `adaptive` protocol."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

from ..config import RunConfig
from ..stats import ci_relative_halfwidth, is_steady

WARMUP_TOLERANCE = 0.10
MIN_WARMUP = 2


@dataclass
class Samples:
    """Raw per-iteration latencies (seconds) and why each phase stopped."""

    warmup_s: list[float] = field(default_factory=list)
    timed_s: list[float] = field(default_factory=list)
    warmup_stop: str = ""
    timed_stop: str = ""
    timed_wall_s: float = 0.0  # wall time of the timed loop, including the harness's own bookkeeping


def measure(timed_iteration: Callable[[], float], config: RunConfig,
            clock: Callable[[], float] = time.perf_counter) -> Samples:
    """Run the protocol of `config` over `timed_iteration` (which returns one iteration's seconds)."""
    s = Samples()
    if config.protocol == "seed":
        s.warmup_s = [timed_iteration() for _ in range(config.warmup)]
        t0 = clock()
        s.timed_s = [timed_iteration() for _ in range(config.iterations)]
        s.timed_wall_s = clock() - t0
        s.warmup_stop = s.timed_stop = "fixed count"
        return s

    budget = config.time_budget_s
    start = clock()
    # Warm-up: the first iteration compiles/allocates; stop once two consecutive iterations agree
    # within WARMUP_TOLERANCE (so at least two warm-up iterations; a 10 s training step costs 20 s,
    # not the five iterations a wider window would need).
    while True:
        s.warmup_s.append(timed_iteration())
        if is_steady(s.warmup_s, window=1, tolerance=WARMUP_TOLERANCE):
            s.warmup_stop = "steady"
            break
        if len(s.warmup_s) >= max(config.warmup, MIN_WARMUP):
            s.warmup_stop = "warm-up cap"
            break
        # The first iteration is never steady state (allocation, tracing): at least two, whatever the budget.
        if budget and clock() - start > budget / 2 and len(s.warmup_s) >= MIN_WARMUP:
            s.warmup_stop = "half the time budget"
            break
    # Timed: at least `iterations`, then until the CI target is met or the budget ends.
    t0 = clock()
    while True:
        s.timed_s.append(timed_iteration())
        n = len(s.timed_s)
        if n < config.iterations:
            continue
        if ci_relative_halfwidth(s.timed_s) <= config.ci_target:
            s.timed_stop = "CI target met"
            break
        if budget and clock() - start > budget:
            s.timed_stop = "time budget"
            break
        if n >= 10000:
            s.timed_stop = "iteration cap"
            break
    s.timed_wall_s = clock() - t0
    return s
