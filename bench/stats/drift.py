"""A shift every config shares, apart from each config's own change: what `bench compare A B` needs.

Two sweeps of the same code an hour apart measured most configs about 6% slower, while the matrix-product peak
was unchanged: the machine drifted, and four configs were read as regressions. So the ratios B/A of all matched
configs are first summarised by their common shift (a random-effects mean on the log scale, DerSimonian & Laird
1986: each config weighted by 1 / (its variance + the between-config variance)); each config's own change is its
ratio divided by that shift, with an interval that carries the shift's uncertainty too. A user comparing two
library versions reads both: "everything moved by x" and "this config moved beyond that".
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from .printed import ratio_interval
from .quantiles import exp_bounds, t_quantile

# Below this many configs with an interval, a common shift is not estimated (it would be one config's own).
MIN_CONFIGS = 3


@dataclass(frozen=True)
class Shift:
    """The shift B/A that every config shares, with its 95% interval and the between-config spread around it."""

    ratio: float
    ci_low: float
    ci_high: float
    configs: int
    tau: float  # between-config standard deviation of the log ratios beyond their own noise

    @property
    def shown(self) -> bool:
        return self.ci_low > 1 or self.ci_high < 1

    def text(self) -> str:
        what = ("B faster" if self.ratio > 1 else "B slower") if self.shown else "no shared shift shown"
        return (f"{what}: every config shares {ratio_interval(self.ratio, self.ci_low, self.ci_high, least=3)} "
                f"over {self.configs} configs")


def se_from_interval(ci_low: float, ci_high: float, df: float | None, confidence: float = 0.95) -> float:
    """The standard error on the log scale that a t-interval [ci_low, ci_high] with `df` degrees of freedom had."""
    t = t_quantile(confidence, df if df and math.isfinite(df) else 1e6)
    return (math.log(ci_high) - math.log(ci_low)) / (2 * t)


def common_shift(log_ratios: Sequence[float], ses: Sequence[float], confidence: float = 0.95) -> Shift | None:
    """The random-effects mean of the configs' log ratios (None with fewer than MIN_CONFIGS)."""
    y, v = np.asarray(log_ratios, dtype=float), np.asarray(ses, dtype=float) ** 2
    keep = np.isfinite(y) & np.isfinite(v) & (v > 0)
    y, v = y[keep], v[keep]
    k = int(y.size)
    if k < MIN_CONFIGS:
        return None
    w = 1 / v
    fixed = float((w * y).sum() / w.sum())
    q = float((w * (y - fixed) ** 2).sum())
    tau2 = max(0.0, (q - (k - 1)) / float(w.sum() - (w**2).sum() / w.sum()))
    w_star = 1 / (v + tau2)
    mu = float((w_star * y).sum() / w_star.sum())
    half = t_quantile(confidence, k - 1) * math.sqrt(1 / float(w_star.sum()))
    return Shift(math.exp(mu), *exp_bounds(mu, half), k, math.sqrt(tau2))


def own_change(log_ratio: float, se: float, df: float | None, shift: Shift, all_ses: Sequence[float],
               confidence: float = 0.95) -> tuple[float, float, float]:
    """(ratio, ci_low, ci_high) of one config's change beyond the shared shift: its ratio over the shift, with the
    variance of the difference (its own, plus the shift's, minus twice its own share in the shift)."""
    mu = math.log(shift.ratio)
    w_star = 1 / (np.asarray(all_ses, dtype=float) ** 2 + shift.tau**2)
    var_mu = 1 / float(w_star.sum())
    mine = 1 / (se**2 + shift.tau**2)
    var = max(se**2 + var_mu - 2 * mine * var_mu * se**2, 1e-12)
    half = t_quantile(confidence, df if df and math.isfinite(df) else 1e6) * math.sqrt(var)
    d = log_ratio - mu
    return (math.exp(d), *exp_bounds(d, half))
