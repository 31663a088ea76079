"""The statistics of the per-config estimates, in one place: a config's interval, a pair's ratio and its verdict.

Every table, finding and comparison calls these and nothing else computes an interval, a ratio or a verdict.

The process is the unit of replication. A config's number is the geometric mean of its processes' medians. Its
between-process spread on the log scale is moderated by the whole sweep (bench/moderated.py: each config's
variance shrunk toward what the other configs of its pool show, limma's empirical Bayes; a config whose spread
really differs keeps its own): the pool is one platform's single-process configs, or its distributed ones. Where
two or more sweeps measured a config the sweep (the day) is a level above the process, and over nodes (each the
mean of its processes) where a scheduler ran the config's processes on several nodes: those intervals are the
config's own, as before. A comparison's verdict is one of bench/verdicts.py's three, at the report's margin.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ...moderated import Spread, SweepSpreads, moderated_interval, moderated_ratio
from ...stats import outer_level, process_interval, process_ratio, sweep_level_interval, sweep_level_ratio
from ...verdicts import DEFAULT_MARGIN, EQUIVALENT, UNDECIDED, WINNER, Verdict, judge
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
    # The between-process spread the interval (and every ratio with this config) uses: the variance of one
    # process's log value, its degrees of freedom, and whether the sweep's prior moderated it. None: no spread
    # (one process and nothing to borrow from, or an interval over sweeps or nodes).
    spread_var: float | None = None
    spread_df: float | None = None
    pooled: bool = False
    own_ci_low: float | None = None  # the config's own t-interval over its processes (Welch), for the details
    own_ci_high: float | None = None

    @property
    def kind(self) -> str:
        """What the interval is over: 'within' (one process), 'nodes', 'sweeps', 'pooled' or 'processes'."""
        if self.ci_low is None:
            return "within"
        return ("nodes" if self.nodes > 1 else "sweeps" if self.sweeps else "pooled" if self.pooled
                else "processes")


def config_intervals(configs: Sequence[tuple[Sequence[float], Sequence, Sequence, Hashable]]) -> list[Interval]:
    """Every config's interval in one call, each config given as its processes' median images/s, each process's
    node (None where unknown), each process's sweep id, and its spread pool (configs that may share a spread)."""
    levels = [outer_level(values, nodes) for values, nodes, _, _ in configs]
    own_level = [lv == 1 and len(v) >= 2 and sweep_level_interval(list(v), list(s)) is None
                 for (v, _, s, _), (_, lv) in zip(configs, levels)]
    spreads = SweepSpreads({i: list(v) for i, ((v, _, _, _), mine) in enumerate(zip(configs, own_level)) if mine},
                           {i: pool for i, (_, _, _, pool) in enumerate(configs)})
    return [config_interval(v, n, s, spreads.spread(i) if own_level[i] else None)
            for i, (v, n, s, _) in enumerate(configs)]


def config_interval(values: Sequence[float], nodes: Sequence, sweeps: Sequence, spread: Spread | None = None
                    ) -> Interval:
    """One config's interval: over sweeps or nodes where those are levels, else over its processes with `spread`
    (the sweep-moderated one) where given, else its own."""
    replicates, levels = outer_level(values, nodes)
    by_sweep = sweep_level_interval(list(values), list(sweeps)) if levels == 1 else None
    own = process_interval(replicates)
    est = by_sweep or own
    if by_sweep is None and levels == 1 and spread is not None:
        est = moderated_interval(replicates, spread)
    return Interval(est["estimate"], est["ci_low"], est["ci_high"], replicates,
                    list(sweeps) if levels == 1 else [None] * len(replicates), levels,
                    by_sweep["sweeps"] if by_sweep else None,
                    by_sweep["between_sweep_share"] if by_sweep else None,
                    spread.var if spread and by_sweep is None and levels == 1 else None,
                    spread.df if spread and by_sweep is None and levels == 1 else None,
                    bool(spread and spread.pooled and by_sweep is None and levels == 1),
                    own["ci_low"], own["ci_high"])


def _spread(row: Mapping[str, Any]) -> Spread | None:
    var, df = row.get("spread_var"), row.get("spread_df")
    if var is None or df is None or var != var:
        return None
    return Spread(float(var), float(df), bool(row.get("spread_pooled")), float("nan"), 0.0)


def pair_ratio(a: Mapping[str, Any], b: Mapping[str, Any]) -> dict:
    """a's images/s over b's (config rows holding `process_ips`, `process_sweeps` and their spread): ratio,
    ci_low, ci_high, within_noise; the sweep a level where a side holds several sweeps, else each side's
    (moderated) spread."""
    several = any(len({s for s in row["process_sweeps"] if s is not None}) > 1 for row in (a, b))
    sa, sb = _spread(a), _spread(b)
    if several or sa is None or sb is None:
        return sweep_level_ratio(a["process_ips"], a["process_sweeps"], b["process_ips"], b["process_sweeps"])
    return moderated_ratio(a["process_ips"], b["process_ips"], sa, sb)


def welch_ratio(a: Mapping[str, Any], b: Mapping[str, Any]) -> dict:
    """a / b with each config's own spread alone (Welch): shown in the details beside the moderated one."""
    return process_ratio(a["process_ips"], b["process_ips"])


def unsound_sides(a: Mapping[str, Any], b: Mapping[str, Any], names: tuple[str, str] | None = None,
                  sep: str = "; ") -> str | None:
    """Why no verdict but 'undecided' may be stated (a side not sound), or None."""
    names = names or (a["series"], b["series"])
    bad = [f"{n}: {unsound_reason(x['flag_list'])}" for n, x in zip(names, (a, b)) if not x["sound"]]
    return f"{UNRELIABLE} (" + sep.join(bad) + ")" if bad else None


def pair_verdict(a: Mapping[str, Any], b: Mapping[str, Any], ratio: dict, margin: float = DEFAULT_MARGIN,
                 names: tuple[str, str] | None = None, sep: str = "; ") -> tuple[Verdict, str]:
    """The verdict of a/b and the reason it reads with: a side not sound is undecided whatever its interval."""
    unsound = unsound_sides(a, b, names, sep)
    if unsound:
        return Verdict(UNDECIDED, ratio["ratio"], ratio["ci_low"], ratio["ci_high"], margin), unsound
    v = judge(ratio["ratio"], ratio["ci_low"], ratio["ci_high"], margin, len(a["process_ips"]),
              len(b["process_ips"]), ratio.get("df"))
    if v.word == WINNER:
        return v, ""
    if v.word == EQUIVALENT:
        return v, f"equal within +-{margin:.0%}"
    return v, v.to_decide()


def compare_pair(a: Mapping[str, Any], b: Mapping[str, Any], margin: float = DEFAULT_MARGIN) -> dict:
    """Verdict on two configs' rows: which is faster, by how much (always >= 1x), with the interval; the verdict
    (winner, equivalent or undecided), its reason, and the Welch interval of the configs' own spreads."""
    r = pair_ratio(a, b)
    v, reason = pair_verdict(a, b, r, margin)
    out = {"a": a["series"], "b": b["series"], "ratio_a_over_b": r["ratio"], "ci_low": r["ci_low"],
           "ci_high": r["ci_high"]}
    faster, slower, ratio, lo, hi = a, b, r["ratio"], r["ci_low"], r["ci_high"]
    own = welch_ratio(a, b)
    own_lo, own_hi = own["ci_low"], own["ci_high"]
    if ratio < 1:
        faster, slower, ratio = b, a, 1 / ratio
        lo, hi = (None, None) if lo is None else (1 / hi, 1 / lo)
        own_lo, own_hi = (None, None) if own_lo is None else (1 / own_hi, 1 / own_lo)
    out.update(faster=faster["series"], slower=slower["series"], speedup=ratio, speedup_ci_low=lo,
               speedup_ci_high=hi, welch_ci_low=own_lo, welch_ci_high=own_hi, verdict=v.word,
               reason=reason or f"{faster['series']} faster", winner=v.word == WINNER,
               equivalent=v.word == EQUIVALENT, extra_processes=v.extra_processes, margin=margin,
               pooled=bool(r.get("pooled")))
    return out


def extra_text(extra: float | None) -> str:
    """'n more processes a side' for a table cell ('' where none would decide it soon)."""
    return "" if extra is None or extra != extra else f"{int(extra)}"


def margin_of(margins: Sequence[float | None]) -> float:
    """The report's equivalence margin: the newest sweep's that states one, else the default."""
    stated = [m for m in margins if m is not None and not (isinstance(m, float) and math.isnan(m))]
    return float(stated[-1]) if stated else DEFAULT_MARGIN
