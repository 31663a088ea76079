"""The t quantile and the Welch-Satterthwaite degrees of freedom: what every interval is built from.

No module outside bench/stats/ imports this one (an import contract in pyproject.toml): an interval, a ratio's
interval or a verdict is asked of the statistics room, never computed beside it.
"""

from __future__ import annotations

import math


def t_quantile(confidence: float, df: float | None) -> float:
    """The two-sided t quantile at `confidence` (the normal's where df is None, infinite or beyond 1e6): the one t
    quantile of the statistics room."""
    from scipy import stats as st  # lazily: a run process never needs scipy

    if df is None or not math.isfinite(df) or df > 1e6:
        return float(st.norm.ppf(0.5 + confidence / 2))
    return float(st.t.ppf(0.5 + confidence / 2, df))


def welch_satterthwaite(parts) -> float:
    """Degrees of freedom of a sum of independent variances of means, [(variance, its df), ...]
    (Welch-Satterthwaite). A part with zero variance or infinite df adds nothing to the denominator; 1e6 (the
    normal quantile) when no part does."""
    denominator = sum(v * v / df for v, df in parts if v and math.isfinite(df))
    return sum(v for v, _ in parts) ** 2 / denominator if denominator > 0 else 1e6


def exp_bounds(center: float, half: float) -> tuple[float, float]:
    """exp(center - half), exp(center + half): a log-scale interval on the original scale. A half-width too wide to
    exponentiate (a side with one degree of freedom at the plan's stopping confidence, on a noisy machine) gives
    infinity, an interval that decides nothing, instead of an overflow."""
    high = center + half
    return math.exp(center - half), (math.exp(high) if high < 709.0 else math.inf)
