"""The statistics of the per-config estimates, in one place: a config's interval, a pair's ratio and its verdict.

The decisive-answers change (pooled between-process variance, three verdicts) replaces this module's functions;
every table, finding and comparison calls them and nothing else computes an interval, a ratio or a verdict.

The process is the unit of replication. A config's number is the geometric mean of its processes' medians with a
t-interval over processes; over nodes (each the mean of its processes) where a scheduler ran the config's processes
on several nodes; with the sweep (the day) as a level above the process where two or more sweeps measured it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ...stats import outer_level, process_interval, sweep_level_interval, sweep_level_ratio
from .judgement import unsound_reason

UNRELIABLE = "not measured reliably"


@dataclass(frozen=True)
class Interval:
    """A config's images/s: the estimate, its 95% interval (None with one replicate) and what it was built from."""

    estimate: float
    ci_low: float | None
    ci_high: float | None
    replicates: list[float]  # one per process, or one per node where the processes ran on several nodes
    replicate_sweeps: list  # each replicate's sweep id (None where replicates are nodes)
    nodes: int  # how many nodes the replicates span (1: processes are the replicates)
    sweeps: int | None  # sweeps in the interval where the sweep is a level, else None
    between_sweep_share: float | None

    @property
    def kind(self) -> str:
        """What the interval is over: 'within' (one process), 'nodes', 'sweeps' or 'processes'."""
        if self.ci_low is None:
            return "within"
        return "nodes" if self.nodes > 1 else "sweeps" if self.sweeps else "processes"


def config_intervals(configs: Sequence[tuple[Sequence[float], Sequence, Sequence]]) -> list[Interval]:
    """Every config's interval in one call (a variance pooled across configs belongs here): each config given as
    its processes' median images/s, each process's node (None where unknown) and each process's sweep id."""
    return [config_interval(values, nodes, sweeps) for values, nodes, sweeps in configs]


def config_interval(values: Sequence[float], nodes: Sequence, sweeps: Sequence) -> Interval:
    """One config's interval on its own processes alone."""
    replicates, levels = outer_level(values, nodes)
    by_sweep = sweep_level_interval(list(values), list(sweeps)) if levels == 1 else None
    est = by_sweep or process_interval(replicates)
    return Interval(est["estimate"], est["ci_low"], est["ci_high"], replicates,
                    list(sweeps) if levels == 1 else [None] * len(replicates), levels,
                    by_sweep["sweeps"] if by_sweep else None,
                    by_sweep["between_sweep_share"] if by_sweep else None)


def pair_ratio(a: Mapping[str, Any], b: Mapping[str, Any]) -> dict:
    """a's images/s over b's (config rows holding `process_ips` and `process_sweeps`): ratio, ci_low, ci_high,
    within_noise."""
    return sweep_level_ratio(a["process_ips"], a["process_sweeps"], b["process_ips"], b["process_sweeps"])


def no_winner(a: Mapping[str, Any], b: Mapping[str, Any], ratio: dict, names: tuple[str, str] | None = None,
              sep: str = "; ") -> str | None:
    """The verdict when no winner may be stated (a side unsound, no interval, or within noise); None when the
    interval names one. `names` label the sides in the reasons (default: their series)."""
    names = names or (a["series"], b["series"])
    bad = [f"{n}: {unsound_reason(x['flag_list'])}" for n, x in zip(names, (a, b)) if not x["sound"]]
    if bad:
        return f"{UNRELIABLE} (" + sep.join(bad) + ")"
    if ratio["ci_low"] is None:
        return f"{UNRELIABLE} (fewer than two processes)"
    if ratio["within_noise"]:
        return "within noise"
    return None


def compare_pair(a: Mapping[str, Any], b: Mapping[str, Any]) -> dict:
    """Verdict on two configs' rows: which is faster, by how much (always >= 1x), with the CI."""
    r = pair_ratio(a, b)
    out = {"a": a["series"], "b": b["series"], "ratio_a_over_b": r["ratio"], "ci_low": r["ci_low"],
           "ci_high": r["ci_high"]}
    faster, slower, ratio, lo, hi = a, b, r["ratio"], r["ci_low"], r["ci_high"]
    if ratio < 1:
        faster, slower, ratio = b, a, 1 / ratio
        lo, hi = (None, None) if lo is None else (1 / hi, 1 / lo)
    out.update(faster=faster["series"], slower=slower["series"], speedup=ratio, speedup_ci_low=lo,
               speedup_ci_high=hi)
    out["verdict"] = no_winner(a, b, r) or f"{faster['series']} faster"
    out["winner"] = out["verdict"].endswith(" faster")
    return out
