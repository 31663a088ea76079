"""How noisy a machine is for one framework: the spread between fresh processes and inside one, with intervals, and
the smallest speed-up a comparison of a given number of processes a side could call a winner (`bench noise`)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from .intervals import median_ci, process_ratio
from .quantiles import t_quantile


@dataclass(frozen=True)
class Spread:
    """The standard deviation of log values across processes (about the relative spread), with a chi-squared
    interval; None where fewer than two processes ran."""

    n: int
    sd_log: float | None
    low: float | None
    high: float | None


def spread(values: Sequence[float], confidence: float = 0.95) -> Spread:
    """The between-process spread of `values` (one per process: its median or mean rate) on the log scale."""
    from scipy import stats as st  # lazily, as the t quantile

    x = np.log(np.asarray([v for v in values if v and v > 0], dtype=float))
    n = int(x.size)
    if n < 2:
        return Spread(n, None, None, None)
    sd, df = float(x.std(ddof=1)), n - 1
    tail = (1 - confidence) / 2
    low = sd * math.sqrt(df / st.chi2.ppf(1 - tail, df))
    high = sd * math.sqrt(df / st.chi2.ppf(tail, df))
    return Spread(n, sd, low, high)


@dataclass(frozen=True)
class Within:
    """The within-process spread: the median iteration-time CV over processes, with the median's interval."""

    n: int
    cv: float | None
    low: float | None
    high: float | None


def within(cvs: Sequence[float | None]) -> Within:
    values = [c for c in cvs if c is not None]
    if not values:
        return Within(0, None, None, None)
    if len(values) < 3:
        return Within(len(values), float(np.median(values)), None, None)
    low, high, _ = median_ci(values)  # the median's distribution-free interval (and its coverage)
    return Within(len(values), float(np.median(values)), low, high)


def decidable_ratio(sd_log: float | None, df: int, per_side: int, margin: float,
                    confidence: float = 0.95) -> float | None:
    """The smallest ratio whose whole interval lies beyond 1 + `margin` when both sides have `per_side` processes
    spread by `sd_log` (estimated with `df` degrees of freedom): the interval's half-width on the log scale is
    t * sd * sqrt(2 / n), so the estimate must reach (1 + margin) * exp(half)."""
    if sd_log is None or per_side < 2 or df < 1:
        return None
    half = t_quantile(confidence, df) * sd_log * math.sqrt(2 / per_side)
    return (1 + margin) * math.exp(half)


@dataclass(frozen=True)
class ArmEffect:
    """One arm against the baseline, per-process values of each side: the ratio of geometric means with its
    Welch interval (of the medians and of the means), and the within-process CVs' medians."""

    median_ratio: dict
    mean_ratio: dict
    cv_arm: float | None
    cv_base: float | None


def arm_effect(arm_medians: Sequence[float], base_medians: Sequence[float], arm_means: Sequence[float],
               base_means: Sequence[float], arm_cvs: Sequence[float | None],
               base_cvs: Sequence[float | None]) -> ArmEffect | None:
    if len(arm_medians) < 2 or len(base_medians) < 2:
        return None
    return ArmEffect(process_ratio(arm_medians, base_medians), process_ratio(arm_means, base_means),
                     within(arm_cvs).cv, within(base_cvs).cv)
