"""Each config's interval and each pair's ratio, from the processes' medians: the statistics of the per-config
estimates (bench/report/estimates/ asks these and computes none of its own).

The process is the unit of replication. A config's number is the geometric mean of its processes' medians. Its
between-process spread on the log scale is moderated by the whole sweep (moderated.py: each config's variance shrunk
toward what the other configs of its pool show, limma's empirical Bayes; a config whose spread really differs keeps
its own): the pool is one platform's single-process configs, or its distributed ones. Where two or more sweeps
measured a config the sweep (the day) is a level above the process, its variance estimated jointly over the pool's
configs (sweep_level.py; a config whose sweeps differ keeps its own), and the process spread is the processes'
deviation from their own sweep's mean; over nodes (each the mean of its processes) where a scheduler ran the config's
processes on several nodes the interval is the config's own.

A pair is given as two config rows (mappings holding `process_ips`, `process_sweeps` and the spread the config's
interval used: `spread_var`, `spread_df`, `spread_pooled`, and over sweeps `sweep_var`, `sweep_df`,
`sweeps_differ`): the report's config frame, or anything shaped like it.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from .blocks import Residual, blocked_ratio
from .intervals import outer_level, process_interval, process_ratio
from .moderated import Spread, SweepSpreads, log_spread, moderated_interval, moderated_ratio
from .quantiles import exp_bounds, t_quantile, welch_satterthwaite
from .sweep_level import Component, LevelMean, differs, fit_component, level_mean, per_sweep_ratios, sweep_means


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
    # Over several sweeps: the between-sweep variance used and its df (the pool's), or None with sweeps_differ
    # (its own sweeps' variance: more sweeps, not processes, would narrow it)
    sweep_var: float | None = None
    sweep_df: float | None = None
    sweeps_differ: bool = False
    rests_on: str | None = None  # what its spread rests on, in words (bench/stats/moderated.py: SweepSpreads)
    groups: str | None = None  # its processes form two groups (bench/stats/mixtures.py), in words; None: they do not

    @property
    def kind(self) -> str:
        """What the interval is over: 'within' (one process), 'nodes', 'sweeps', 'pooled' or 'processes'."""
        if self.ci_low is None:
            return "within"
        return ("nodes" if self.nodes > 1 else "sweeps" if self.sweeps else "pooled" if self.pooled
                else "processes")


def config_intervals(configs: Sequence[tuple]) -> list[Interval]:
    """Every config's interval in one call, each config given as its processes' median images/s, each process's
    node (None where unknown), each process's sweep id, its spread pool (configs that may share a spread) and,
    optionally, its family within the pool (configs alike enough to share a prior where their spread differs from
    the pool's: a framework and mode)."""
    levels = [outer_level(c[0], c[1])[1] for c in configs]
    by_sweep = {i: sweep_means(c[0], c[2]) for i, (c, lv) in enumerate(zip(configs, levels))
                if lv == 1 and len(c[0]) >= 2}
    spreads = SweepSpreads({i: list(configs[i][0]) for i in by_sweep}, {i: c[3] for i, c in enumerate(configs)},
                           own={i: (0.0, sm.within_var, sm.within_df) for i, sm in by_sweep.items()},
                           families={i: c[4] for i, c in enumerate(configs) if len(c) > 4},
                           sweeps={i: list(configs[i][2]) for i in by_sweep})
    pools: dict = {}
    for i, sm in by_sweep.items():
        spread = spreads.spread(i)
        if sm.count >= 2 and spread is not None:
            pools.setdefault(configs[i][3], {})[i] = (sm, spread.var, spread.df)
    components = {pool: fit_component(items) for pool, items in pools.items()}
    out = []
    for i, (v, n, s, pool, *_) in enumerate(configs):
        spread = spreads.spread(i) if i in by_sweep else None
        sm = by_sweep.get(i)
        level = None
        if sm is not None and sm.count >= 2:
            component = components.get(pool)
            differ = differs(component, i, sm, spread.var if spread else None, spread.df if spread else 0.0)
            level = level_mean(sm, spread.var if spread else None, spread.df if spread else 0.0, component, differ)
        interval = config_interval(v, n, s, spread, level)
        if i in by_sweep:  # what its spread rests on, and two groups among its processes where there are
            groups = spreads.groups.get(i)
            interval = dataclasses.replace(interval, rests_on=spreads.rests_on(i),
                                           groups=groups.describe() if groups else None)
        out.append(interval)
    return out


def config_interval(values: Sequence[float], nodes: Sequence, sweeps: Sequence, spread: Spread | None = None,
                    level: LevelMean | None = None) -> Interval:
    """One config's interval: over nodes where its processes ran on several; over sweeps where `level` (its mean
    over two or more sweeps) is given; else over its processes with `spread` (the sweep-moderated one) where
    given, else its own."""
    replicates, levels = outer_level(values, nodes)
    own = process_interval(replicates)
    est = own
    if levels == 1 and level is not None:
        half = t_quantile(0.95, max(level.df, 1.0)) * math.sqrt(level.var)
        lo, hi = exp_bounds(level.mean, half)
        est = {"estimate": math.exp(level.mean), "ci_low": lo, "ci_high": hi}
    elif levels == 1 and spread is not None:
        est = moderated_interval(replicates, spread)
    mine = levels == 1 and spread is not None
    return Interval(est["estimate"], est["ci_low"], est["ci_high"], replicates,
                    list(sweeps) if levels == 1 else [None] * len(replicates), levels,
                    level.sweeps if level else None,
                    level.share(spread.var if spread else None) if level else None,
                    spread.var if mine else None, spread.df if mine else None,
                    bool(mine and spread.pooled), own["ci_low"], own["ci_high"],
                    level.tau_sq if level else None,
                    level.tau_df if level else None,
                    bool(level and level.differ))


def _spread(row: Mapping[str, Any]) -> Spread | None:
    var, df = row.get("spread_var"), row.get("spread_df")
    if var is None or df is None or var != var:
        return None
    return Spread(float(var), float(df), bool(row.get("spread_pooled")), float("nan"), 0.0)


def _side(row: Mapping[str, Any]) -> tuple[float, float | None, float, bool]:
    """(mean log images/s, variance of that mean, its df, whether its sweeps differ) of a config row: over its
    sweeps where it holds several, else over its processes with its (moderated) spread; variance None where
    neither gives one (one process and no spread)."""
    values, sweeps = row["process_ips"], row["process_sweeps"]
    spread = _spread(row)
    sm = sweep_means(values, sweeps)
    if sm.count >= 2 and None not in sm.sweeps:
        tau_sq, tau_df = row.get("sweep_var"), row.get("sweep_df")
        differ = bool(row.get("sweeps_differ")) or tau_sq is None or tau_sq != tau_sq
        component = None if differ else Component(float(tau_sq), float(tau_df), 0)
        level = level_mean(sm, spread.var if spread else None, spread.df if spread else 0.0, component, differ)
        return level.mean, level.var, level.df, level.differ
    mean, var, df = log_spread(values)
    if spread is not None:
        var, df = spread.var, spread.df
    return mean, None if var is None else var / len(values), df, False


def _every_sweep(a: Mapping[str, Any], b: Mapping[str, Any], sa: Spread | None, sb: Spread | None) -> dict:
    """Where a side's sweeps differ beyond the others' (its between-sweep variance is its own, one degree of freedom
    from two sweeps), the ratio's interval in each sweep both sides measured, from that sweep's processes and each
    side's spread, and their union: a union that excludes 1x (or lies within the margin) says so of every sweep
    (an intersection-union test at the same level), whatever moved between the sweeps. No interval with fewer
    than two shared sweeps or no spread."""
    shared = [x for x in dict.fromkeys(a["process_sweeps"]) if x is not None and x in set(b["process_sweeps"])]
    if len(shared) < 2 or sa is None or sb is None:
        return {}
    each = [moderated_ratio([v for v, x in zip(a["process_ips"], a["process_sweeps"]) if x == sweep],
                            [v for v, x in zip(b["process_ips"], b["process_sweeps"]) if x == sweep], sa, sb)
            for sweep in shared]
    lo, hi = min(r["ci_low"] for r in each), max(r["ci_high"] for r in each)
    return {"ci_low": lo, "ci_high": hi, "within_noise": bool(lo <= 1.0 <= hi), "df": None, "every_sweep": True}


def pair_ratio(a: Mapping[str, Any], b: Mapping[str, Any]) -> dict:
    """a's images/s over b's (config rows holding `process_ips`, `process_sweeps` and their spread): ratio,
    ci_low, ci_high, within_noise, df; where a side holds several sweeps, each side's mean over its sweeps (the
    pool's between-sweep variance, or its own where its sweeps differ: `sweeps_differ`) and the ratio in each sweep
    both measured (`sweep_ratios`), the interval the union of the per-sweep ones where a side's sweeps differ
    (`every_sweep`); else each side's (moderated) spread."""
    several = any(len({s for s in row["process_sweeps"] if s is not None}) > 1 for row in (a, b))
    sa, sb = _spread(a), _spread(b)
    if not several and (blocked := _blocked(a, b)) is not None:
        return blocked
    if not several:
        if sa is None or sb is None:
            return process_ratio(a["process_ips"], b["process_ips"])
        return moderated_ratio(a["process_ips"], b["process_ips"], sa, sb)
    (ma, va, da, xa), (mb, vb, db, xb) = _side(a), _side(b)
    out = {"ratio": math.exp(ma - mb), "ci_low": None, "ci_high": None, "within_noise": None, "df": None,
           "pooled": bool(sa and sa.pooled and sb and sb.pooled), "sweeps_differ": xa or xb,
           "sweep_ratios": per_sweep_ratios(a["process_ips"], a["process_sweeps"], b["process_ips"],
                                            b["process_sweeps"])}
    if out["sweeps_differ"]:
        return {**out, **_every_sweep(a, b, sa, sb)}
    if va is None or vb is None:
        return out
    se = math.sqrt(va + vb)
    df = welch_satterthwaite([(va, da), (vb, db)]) if se > 0 else math.inf
    half = t_quantile(0.95, max(df, 1.0)) * se
    lo, hi = exp_bounds(ma - mb, half)
    out.update(ci_low=lo, ci_high=hi, within_noise=bool(lo <= 1.0 <= hi), df=df)
    return out


def _blocked(a: Mapping[str, Any], b: Mapping[str, Any]) -> dict | None:
    """a / b within the blocks both ran in, with the sweep's pooled within-block residual (bench/stats/blocks.py), where
    both rows name their processes' blocks and the residual; None otherwise (older sweeps: the estimate above)."""
    var, df = a.get("block_var"), a.get("block_df")
    blocks_a, blocks_b = a.get("process_blocks"), b.get("process_blocks")
    if var is None or var != var or not df or blocks_a is None or blocks_b is None:
        return None
    if not isinstance(blocks_a, list | tuple) or not isinstance(blocks_b, list | tuple):
        return None
    return blocked_ratio(list(zip(blocks_a, a["process_ips"])), list(zip(blocks_b, b["process_ips"])),
                         Residual(float(var), int(df)))


def welch_ratio(a: Mapping[str, Any], b: Mapping[str, Any]) -> dict:
    """a / b with each config's own spread alone (Welch): shown in the details beside the moderated one."""
    return process_ratio(a["process_ips"], b["process_ips"])
