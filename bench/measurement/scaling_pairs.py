"""The comparisons a scaling finding rests on and their verdicts, defined once for the report's scaling section and
the adaptive plan's extra processes.

A distributed config (a strategy at N > 1 workers) is compared
- with N x the 1-worker independent run (*efficiency*: throughput(N) / (N x throughput(1)), judged against 1, i.e.
  linear scaling);
- where it communicates, with the independent run at the same N (*communication*: throughput(strategy) /
  throughput(independent), judged against 1, i.e. communication at no cost);
- as all-reduce during backward, with all-reduce after backward at the same N and link (*overlap*).
A baseline runs on one machine (no emulated link), on the same platform, framework, model, image size and device,
with the same batch per worker (weak scaling) or the same global batch (strong scaling).

Each ratio (a over b, over the comparison's divisor) is the sweep-moderated one and its verdict the report's `Judge`'s
(bench/stats/judge.py: compare; distributed configs are a pool of their own, ranks add variation of their own), at the
same margin as every other comparison.

N workers sharing one machine cannot beat N x one worker with all of it (weak scaling): an efficiency above 100% is
impossible (bench/measurement/flags.py: above 100% plus its tolerance for timing noise). An interval whose top passes
that bound is shown bounded there and marked (`bounded_top`), never silently; its verdict is taken from the interval as
computed: reaching past the bound it cannot be equivalent, and it is undecided unless its bottom too lies above 100%
(the data cannot tell how far below linear it lies).
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable
from dataclasses import dataclass

from ..config import RunConfig
from ..strategies import strategy
from .flags import EFFICIENCY_TOLERANCE

EFFICIENCY, COMMUNICATION, OVERLAP = "efficiency", "communication", "overlap"
# The most a weak-scaling efficiency can be on workers that share one machine: 100%, plus the tolerance for timing
# noise beyond which bench/measurement/flags.py calls it impossible (so a point estimate is never above its interval).
EFFICIENCY_BOUND = 1 + EFFICIENCY_TOLERANCE


@dataclass(frozen=True)
class Side:
    """What the pairing reads of one distributed config."""

    key: Hashable
    same: tuple  # what a baseline must share: platform, framework, model, image size, device
    scaling: str  # weak or strong
    strategy: str
    workers: int
    nodes: int
    worker_batch: int
    global_batch: int
    link: Hashable  # the link as the caller names it: overlap compares runs on the same link only
    profile: Hashable = None  # the sweep profile that measured it: a baseline of the same profile is preferred


@dataclass(frozen=True)
class Comparison:
    """One scaling comparison: config `a` against baseline `b`, the ratio of their throughputs over `divisor` (N for
    an efficiency, else 1)."""

    kind: str
    a: Hashable
    b: Hashable
    divisor: int = 1


def side_of(config: RunConfig, platform: Hashable = None) -> Side:
    """A sweep's distributed config as the pairing reads it (one machine: the platform is the caller's)."""
    return Side(config.key, (platform, config.framework, config.model, config.image_size, config.device),
                config.scaling, config.strategy, config.workers, config.nodes, config.worker_batch,
                config.global_batch, (config.nodes, config.link_gbit, config.link_delay_ms, config.cluster))


def independent_baseline(side: Side, sides: Iterable[Side], workers: int) -> Side | None:
    """The independent (no communication) config on one machine with `workers` workers that `side` is measured
    against, or None: one measured by the same sweep profile where there is one (two profiles' runs of one
    baseline differ in their measurement settings, and a report holding both must not mix them), else the first."""
    found = [s for s in sides
             if (strategy(s.strategy).baseline and s.workers == workers and s.nodes == 1 and s.same == side.same
                 and s.scaling == side.scaling
                 and (s.worker_batch == side.worker_batch if side.scaling == "weak" else
                      s.global_batch == side.global_batch))]
    return next((s for s in found if s.profile == side.profile), found[0] if found else None)


def comparisons(sides: Iterable[Side]) -> list[Comparison]:
    """Every scaling comparison among `sides`, in their order."""
    sides = list(sides)
    out = []
    for s in sides:
        if s.workers < 2:
            continue
        one = independent_baseline(s, sides, 1)
        if one is not None:
            out.append(Comparison(EFFICIENCY, s.key, one.key, s.workers))
        same_n = independent_baseline(s, sides, s.workers) if not strategy(s.strategy).baseline else None
        if same_n is not None:
            out.append(Comparison(COMMUNICATION, s.key, same_n.key))
        if (without := strategy(s.strategy).overlap_baseline) is not None:
            out += [Comparison(OVERLAP, s.key, n.key) for n in sides
                    if n.strategy == without and n.same == s.same and n.scaling == s.scaling
                    and n.workers == s.workers and n.link == s.link and n.global_batch == s.global_batch]
    return out


def bounded_top(ci_high: float | None, scaling: str) -> tuple[float | None, bool]:
    """An efficiency interval's top as shown: at most EFFICIENCY_BOUND for weak scaling (strong scaling may be
    superlinear: caches), and whether it was bounded."""
    if ci_high is None or scaling != "weak" or ci_high <= EFFICIENCY_BOUND:
        return ci_high, False
    return EFFICIENCY_BOUND, True
