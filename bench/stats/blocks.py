"""Comparisons inside blocks: the sides of one comparison run back to back in each round of a sweep (a block), so a
slow spell of the machine falls on both; the speed-up is estimated from the within-block differences, with the residual
spread pooled over the whole sweep.

The model is log(rate) = config + block + noise, fitted by least squares within each comparison group (a block holds
one round's processes of that group); the noise variance is pooled over every group of the sweep, with its degrees of
freedom counted over all of them (observations less fitted parameters), never from one group's blocks alone. A pair's
ratio is the mean of its log differences over the blocks both sides ran in.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from .quantiles import exp_bounds, t_quantile

# A pair needs this many shared blocks for a blocked estimate, covering at least this share of each side's processes
# (else the caller's unblocked estimate, over every process, stands: a few blocks never override many processes).
MIN_BLOCKS = 2
MIN_COVERED = 0.5


@dataclass(frozen=True)
class Residual:
    """The sweep's pooled within-block noise: the variance of one process's log rate and its degrees of freedom."""

    var: float
    df: int


def _by_block(values: Sequence[tuple[Hashable, float]]) -> dict:
    """block -> the mean log value of a side's processes in it (None: a process outside any block, e.g. a retry, which
    runs apart from its group)."""
    out: dict = {}
    for block, v in values:
        if block is not None and v and v > 0:
            out.setdefault(block, []).append(math.log(v))
    return {b: sum(x) / len(x) for b, x in out.items()}


def pooled_residual(groups: Mapping[Hashable, Mapping[Hashable, Sequence[tuple[Hashable, float]]]]) -> Residual | None:
    """The residual variance of log rate ~ config + block, fitted in each comparison group (`groups`: group ->
    config -> [(block, rate), ...]) and pooled over the groups; None where no group leaves a degree of freedom."""
    ss, df = 0.0, 0
    for configs in groups.values():
        cells = [(c, b, y) for c, values in configs.items() for b, y in _by_block(values).items()]
        keys = list(dict.fromkeys(c for c, _, _ in cells))
        blocks = list(dict.fromkeys(b for _, b, _ in cells))
        if len(keys) < 2 or len(blocks) < 2:
            continue
        x = np.zeros((len(cells), len(keys) + len(blocks)))
        for i, (c, b, _) in enumerate(cells):
            x[i, keys.index(c)] = 1.0
            x[i, len(keys) + blocks.index(b)] = 1.0
        y = np.array([v for _, _, v in cells])
        beta, *_ = np.linalg.lstsq(x, y, rcond=None)
        rank = int(np.linalg.matrix_rank(x))
        if len(cells) > rank:
            ss += float(((y - x @ beta) ** 2).sum())
            df += len(cells) - rank
    return Residual(ss / df, df) if df > 0 else None


def blocked_ratio(a: Sequence[tuple[Hashable, float]], b: Sequence[tuple[Hashable, float]],
                  residual: Residual | None, confidence: float = 0.95) -> dict | None:
    """a / b from the blocks both ran in: the geometric mean of the within-block ratios, with a t interval from the
    sweep's pooled residual (variance of a difference: twice one process's); None with fewer than MIN_BLOCKS shared
    blocks or no residual (the caller's unblocked estimate stands). Keys as the other ratios', plus `blocks`."""
    ma, mb = _by_block(a), _by_block(b)
    shared = [k for k in ma if k in mb]
    if residual is None or len(shared) < MIN_BLOCKS or len(shared) < MIN_COVERED * max(len(a), len(b)):
        return None
    d = np.array([ma[k] - mb[k] for k in shared])
    mean = float(d.mean())
    half = t_quantile(confidence, residual.df) * math.sqrt(2 * residual.var / len(shared))
    lo, hi = exp_bounds(mean, half)
    return {"ratio": math.exp(mean), "ci_low": lo, "ci_high": hi, "within_noise": bool(lo <= 1.0 <= hi),
            "df": float(residual.df), "pooled": True, "blocked": True, "blocks": len(shared)}
