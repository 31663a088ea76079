"""The sweep (the day) as a level above the process, its variance estimated jointly over the configs.

Where two or more sweeps measured a config, its log throughput is modelled as

    log y[s, p] = mu + u[s] + e[s, p],    u ~ N(0, tau^2),  e ~ N(0, sigma^2)

with sigma^2 the config's process-to-process spread (its processes' deviations from their own sweep's mean,
moderated by the whole sweep like any config's: bench/stats/moderated.py) and tau^2 the sweep-to-sweep shift. A config
seen in two sweeps holds one degree of freedom for its own tau^2 (t = 12.7: a factor two either side from a 2%
drift); tau^2 is one number for all the configs of a pool, estimated by the method of moments summed over them
(DerSimonian and Laird's estimator, as a meta-analysis pools studies, with the configs' contrasts added up), so it
carries the degrees of freedom all of them hold. A config whose sweeps differ by more than tau^2 and its processes
explain (Cochran's Q of its sweep means, an F test: the configs found so are set aside before tau^2 is fitted,
each step at alpha / the configs still in) keeps its own sweep-level variance, and more sweeps, not more processes,
would narrow it. A config's estimate is the inverse-variance weighted mean of its sweep means (the mean over all
its processes when tau^2 is 0).
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from .moderated import HETEROGENEITY_ALPHA
from .quantiles import welch_satterthwaite


@dataclass(frozen=True)
class SweepMeans:
    """One config's log values summarised per sweep (sweeps in order of first appearance)."""

    sweeps: tuple
    means: np.ndarray  # mean log value per sweep
    sizes: np.ndarray  # processes per sweep
    within_var: float | None  # pooled variance of the processes around their own sweep's mean
    within_df: float  # sum over sweeps of (processes - 1)

    @property
    def count(self) -> int:
        return len(self.sweeps)


def sweep_means(values: Sequence[float], sweeps: Sequence) -> SweepMeans:
    """Per-sweep means and sizes of log(values), and the processes' variance around their own sweep's mean."""
    groups: dict = {}
    for v, s in zip(np.log(np.asarray(values, dtype=float)), sweeps):
        groups.setdefault(s, []).append(float(v))
    arrays = [np.asarray(g) for g in groups.values()]
    df = float(sum(a.size - 1 for a in arrays))
    ss = float(sum(((a - a.mean()) ** 2).sum() for a in arrays))
    return SweepMeans(tuple(groups), np.array([a.mean() for a in arrays]), np.array([a.size for a in arrays], float),
                      ss / df if df > 0 else None, df)


@dataclass(frozen=True)
class Component:
    """The pool's between-sweep variance of log throughput (tau^2), its degrees of freedom, and the configs it was
    fitted to and set aside (their sweeps differ beyond it)."""

    tau_sq: float
    df: float
    configs: int
    excluded: tuple = ()


@dataclass(frozen=True)
class LevelMean:
    """A config's mean log value over its sweeps with the variance of that mean and its degrees of freedom."""

    mean: float
    var: float
    df: float
    sweeps: int
    differ: bool  # its sweeps differ beyond the pool's tau^2: its own sweep-level variance (df = sweeps - 1)
    tau_sq: float | None  # the between-sweep variance used (None where its own)
    tau_df: float | None  # its degrees of freedom (the pool's)
    between_sq: float | None = None  # the between-sweep variance behind `share`: tau^2, or its own where it differs

    def share(self, sigma_sq: float | None) -> float | None:
        """The between-sweep variance's share of one process's variance (between + sigma^2)."""
        if self.between_sq is None or sigma_sq is None or self.between_sq + sigma_sq <= 0:
            return None
        return self.between_sq / (self.between_sq + sigma_sq)


def _weights(sm: SweepMeans, sigma_sq: float, tau_sq: float) -> np.ndarray:
    return 1.0 / (tau_sq + sigma_sq / sm.sizes)


def cochran_q(sm: SweepMeans, sigma_sq: float, tau_sq: float = 0.0) -> float:
    """Cochran's Q of the sweep means around their weighted mean, each weighted by 1 / (tau^2 + sigma^2 / n)."""
    w = _weights(sm, sigma_sq, tau_sq)
    centre = float((w * sm.means).sum() / w.sum())
    return float((w * (sm.means - centre) ** 2).sum())


def _moments(items: Sequence[tuple[SweepMeans, float, float]]) -> tuple[float, float]:
    """(tau^2, its degrees of freedom) by the method of moments summed over configs: E[sum Q] = sum (k - 1) +
    tau^2 sum (S1 - S2 / S1) with each config's weights n / sigma^2 (DerSimonian-Laird). The degrees of freedom are
    Satterthwaite's for the estimate: sum (k - 1) times its share of sum Q, squared; 0 when tau^2 is 0."""
    q = contrasts = scale = 0.0
    for sm, sigma_sq, _ in items:
        w = sm.sizes / sigma_sq
        q += cochran_q(sm, sigma_sq)
        contrasts += sm.count - 1
        scale += float(w.sum() - (w * w).sum() / w.sum())
    if not contrasts or scale <= 0:
        return 0.0, 0.0
    tau_sq = max(0.0, (q - contrasts) / scale)
    return tau_sq, contrasts * (tau_sq * scale / (contrasts + tau_sq * scale)) ** 2


def _differs_p(sm: SweepMeans, sigma_sq: float, sigma_df: float, tau_sq: float, tau_df: float) -> float:
    """Upper-tail probability of a config's Q / (sweeps - 1) under F(sweeps - 1, the df of tau^2 + sigma^2 / n)."""
    from scipy.special import fdtrc

    k = sm.count
    n_bar = float(k / (1.0 / sm.sizes).sum())
    df = welch_satterthwaite([(tau_sq, tau_df if tau_sq else math.inf), (sigma_sq / n_bar, sigma_df)])
    return float(fdtrc(k - 1, min(max(df, 1.0), 1e6), cochran_q(sm, sigma_sq, tau_sq) / (k - 1)))


def fit_component(items: Mapping[Hashable, tuple[SweepMeans, float, float]],
                  alpha: float = HETEROGENEITY_ALPHA) -> Component | None:
    """The pool's tau^2 from its configs measured in two or more sweeps ({key: (sweep means, sigma^2, its df)}):
    configs whose sweeps differ are set aside one at a time (the smallest F probability while below alpha / the
    configs still in, up to half of them), then tau^2 is fitted to the rest. None with no such config."""
    left = {k: v for k, v in items.items() if v[0].count >= 2 and v[1] is not None and v[1] > 0}
    if not left:
        return None
    excluded: list = []
    while len(excluded) < len(items) // 2 and len(left) > 1:
        tau_sq, tau_df = _moments(list(left.values()))
        p = {k: _differs_p(sm, s2, d, tau_sq, tau_df) for k, (sm, s2, d) in left.items()}
        worst = min(p, key=p.get)
        if p[worst] >= alpha / len(left):
            break
        excluded.append(worst)
        del left[worst]
    tau_sq, tau_df = _moments(list(left.values()))
    return Component(tau_sq, tau_df, len(left), tuple(excluded))


def differs(component: Component | None, key: Hashable, sm: SweepMeans, sigma_sq: float | None, sigma_df: float,
            alpha: float = HETEROGENEITY_ALPHA) -> bool:
    """Whether a config's sweeps differ beyond the pool's tau^2 (set aside in the fit, or its own F test below
    alpha): then it keeps its own sweep-level variance."""
    if component is None or sigma_sq is None or sigma_sq <= 0:
        return True
    return key in component.excluded or _differs_p(sm, sigma_sq, sigma_df, component.tau_sq,
                                                   component.df) < alpha


def level_mean(sm: SweepMeans, sigma_sq: float | None, sigma_df: float, component: Component | None,
               differ: bool) -> LevelMean:
    """A config's mean over its sweeps: weighted by 1 / (tau^2 + sigma^2 / n) with the variance 1 / sum(w) split
    into its tau^2 and sigma^2 parts for Welch-Satterthwaite degrees of freedom; where its sweeps differ (or no
    spread is known), the plain mean of the sweep means with their own variance over the sweeps (sweeps - 1 df)."""
    k = sm.count
    if differ or component is None or sigma_sq is None:
        var = float(sm.means.var(ddof=1)) / k
        own = None if sigma_sq is None else max(0.0, k * var - sigma_sq * float((1 / sm.sizes).mean()))
        return LevelMean(float(sm.means.mean()), var, float(k - 1), k, True, None, None, own)
    tau_sq = component.tau_sq
    w = _weights(sm, sigma_sq, tau_sq)
    total = float(w.sum())
    tau_part = tau_sq * float((w * w).sum()) / total ** 2
    sigma_part = sigma_sq * float((w * w / sm.sizes).sum()) / total ** 2
    df = welch_satterthwaite([(tau_part, max(component.df, 1.0) if tau_sq else math.inf), (sigma_part, sigma_df)])
    return LevelMean(float((w * sm.means).sum() / total), tau_part + sigma_part, df, k, False, tau_sq, component.df,
                     tau_sq)


def per_sweep_ratios(a: Sequence[float], a_sweeps: Sequence, b: Sequence[float], b_sweeps: Sequence) -> list[float]:
    """a / b in each sweep both measured (geometric means of their processes there), in the order of a's sweeps."""
    ma, mb = sweep_means(a, a_sweeps), sweep_means(b, b_sweeps)
    theirs = dict(zip(mb.sweeps, mb.means))
    return [math.exp(m - theirs[s]) for s, m in zip(ma.sweeps, ma.means) if s in theirs]


def sweeps_disagree(ratios: Sequence[float]) -> bool:
    """True when the per-sweep ratios point different ways (some above 1x, some below)."""
    return any(r > 1 for r in ratios) and any(r < 1 for r in ratios)
