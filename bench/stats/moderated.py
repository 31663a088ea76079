"""Between-process variance moderated by the whole sweep: each config borrows strength from the others.

A config measured in 2-4 processes has 1-3 degrees of freedom for its own between-process variance, so its
t-interval is wide (t up to 12.7) or, by luck, far too narrow. Across a sweep the spread of log throughput is
usually small and similar, so each config's variance is shrunk toward a prior fitted to every config's
variance: the empirical-Bayes estimate of limma (Smyth 2004). The prior is a scaled inverse chi-square with
`d0` degrees of freedom and scale `s0^2`; a config's moderated variance is (d0 s0^2 + d s^2) / (d0 + d) with
d0 + d degrees of freedom.

What is pooled and what is not, in three steps:

1. **Configs whose spread is larger than the rest's are set aside** (`outliers`): each config's variance is tested
   against the pooled variance of the *other* configs, F(d, their summed df), so one noisy config (jittery,
   busy, distributed in a shared pool) among many quiet ones is plain even from two processes; the search goes on
   past a step that is not significant (Rosner's generalised ESD), so several noisy configs do not hide each other
   in the others' pool, at a threshold alpha / m that sets aside a config of a sweep whose spreads are alike with
   probability about alpha in all. They keep their own (Welch) variance and are named in the prior's `excluded`.
2. **The prior is fitted to the rest by maximum likelihood** (s^2 / s0^2 ~ F(d, d0), Smyth 2004 section 6.2), not
   by limma's moments of log variances: with one degree of freedom a pair of processes that agree by chance has a
   log variance far in the lower tail, and that one value made the moments read a homogeneous sweep as very
   heterogeneous (d0 1.8 instead of 18 on a real 19-config sweep of this VM), so every quiet config borrowed
   almost nothing. d0 + d is at most the configs' summed degrees of freedom (no more than the data hold).
3. **Each config is checked against the fitted prior** (`differs_from`: s^2 / s0^2 in the upper 5% of F(d, d0));
   one in that tail keeps its own variance too. The prior is not refitted without these: dropping the upper 5%
   of alike spreads would bias s0^2 low (by about a quarter at one degree of freedom).

A config's own Welch interval stays available (Spread.own_var, own_df) beside the moderated one.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from .mixtures import two_groups
from .quantiles import exp_bounds, t_quantile, welch_satterthwaite

# A config's own variance beyond this upper-tail probability under the prior is not pooled; the search for configs
# noisier than the rest uses it for the whole sweep (alpha / m a step).
HETEROGENEITY_ALPHA = 0.05
# Fewer configs than this fit no prior; the search for noisier configs always leaves at least this many.
MIN_CONFIGS = 3


@dataclass(frozen=True)
class Prior:
    """The sweep's prior for a config's between-process variance of log throughput."""

    s0_sq: float
    d0: float  # at most the summed degrees of freedom of the configs it was fitted to
    configs: int  # how many configs it was fitted to
    excluded: tuple = field(default_factory=tuple)  # keys of configs whose spread differs (not pooled)

    @property
    def sd(self) -> float:
        return math.sqrt(self.s0_sq)

    @property
    def sd_upper(self) -> float:
        """An upper 75% confidence bound on the between-process SD the prior stands for (s0 rests on d0 degrees of
        freedom: with few, it is often an underestimate, which would split alike processes into two groups)."""
        from scipy.stats import chi2

        return self.sd * math.sqrt(self.d0 / float(chi2.ppf(0.25, self.d0)))


@dataclass(frozen=True)
class Spread:
    """One config's variance of log throughput between processes, and where it came from."""

    var: float
    df: float
    pooled: bool  # True: moderated by the sweep's prior; False: the config's own (Welch) estimate
    own_var: float
    own_df: float


def _likelihood_fit(variances: np.ndarray, dfs: np.ndarray) -> tuple[float, float]:
    """(s0^2, d0) of the scaled inverse chi-square prior by maximum likelihood: under it each config's variance
    over s0^2 follows F(d, d0) (Smyth 2004, section 6.2). limma fits by the moments of the log variances, but with
    one or two degrees of freedom a config whose processes agreed by chance has a log variance far in the lower
    tail, and that one value makes the moments say "very different spreads" (d0 near 1) for a sweep whose spreads
    are alike; the likelihood takes such a value for what it is, a likely draw. d0 lies in [0.5, the configs'
    summed degrees of freedom less the largest one's] (limma allows infinity; here a config's d0 + d never exceeds
    what the sweep holds, which matters with few configs)."""
    from scipy.optimize import minimize
    from scipy.special import betaln

    cap = max(float(dfs.sum() - dfs.max()), 0.5)  # d0 + d never exceeds the degrees of freedom the sweep holds
    pooled = float((dfs * variances).sum() / dfs.sum())
    log_v, half = np.log(variances), dfs / 2

    def nll(p: np.ndarray) -> float:
        """Minus the log likelihood of log s0^2 = p[0], log d0 = p[1]: the F(d, d0) log density of s^2 / s0^2, less
        log s0^2 (its Jacobian), written out (scipy.stats' per-call overhead would dominate)."""
        d0 = math.exp(p[1])
        log_x = log_v - p[0]
        ll = (half * np.log(dfs) + d0 / 2 * p[1] + (half - 1) * log_x
              - (half + d0 / 2) * np.logaddexp(p[1], np.log(dfs) + log_x) - betaln(half, d0 / 2) - p[0])
        return -float(ll.sum())

    start = np.array([math.log(pooled), math.log(min(10.0, cap))])
    # Nelder-Mead: two parameters, no gradient needed (L-BFGS-B's Fortran setup costs more than the fit here)
    fit = minimize(nll, start, method="Nelder-Mead", bounds=[(None, None), (math.log(0.5), math.log(cap))],
                   options={"xatol": 1e-3, "fatol": 1e-6})
    p = fit.x if fit.success or nll(fit.x) <= nll(start) else start
    return math.exp(p[0]), math.exp(p[1])


def outliers(variances, dfs, keys=None, alpha: float = HETEROGENEITY_ALPHA) -> list:
    """Keys of configs whose spread is larger than the rest's, by a generalised extreme-studentised-deviate search
    (Rosner 1983) with F tests: step by step the config with the largest ratio of its own variance to the pooled
    variance of the others still in is set aside (up to half of the configs), each step's upper-tail probability
    under F(its df, the others' summed df) noted; the outliers are the configs set aside up to the last step whose
    probability is below alpha / (configs still in at that step). Testing against the others' pooled variance,
    with their summed degrees of freedom, makes one noisy config among many quiet ones plain even from two
    processes; going on past a step that is not significant finds several noisy configs that, together in the
    others' pool, would hide each other (masking); the alpha / m threshold keeps a sweep whose spreads are alike
    losing a config with probability about alpha in all, so the prior is not fitted to a truncated sample."""
    from scipy.special import fdtrc

    keys = list(range(len(variances))) if keys is None else list(keys)
    left = [(k, float(v), float(d)) for k, v, d in zip(keys, variances, dfs) if d >= 1 and v > 0]
    steps: list[tuple] = []
    for _ in range(min(len(left) // 2, len(left) - MIN_CONFIGS)):
        v, d = np.array([x[1] for x in left]), np.array([x[2] for x in left])
        others_df = d.sum() - d
        p = fdtrc(d, others_df, v / (((d * v).sum() - d * v) / others_df))
        worst = int(np.argmin(p))
        steps.append((left.pop(worst)[0], bool(p[worst] < alpha / (len(left) + 1))))
    last = max((i for i, (_, significant) in enumerate(steps) if significant), default=-1)
    return [k for k, _ in steps[: last + 1]]


def fit_prior(variances, dfs, keys=None) -> Prior | None:
    """The prior from configs' own variances (each with its degrees of freedom), fitted to the configs that remain
    once `outliers` left (they are the prior's `excluded`). None with fewer than MIN_CONFIGS usable configs."""
    keys = list(range(len(variances))) if keys is None else list(keys)
    data = [(k, float(v), float(d)) for k, v, d in zip(keys, variances, dfs) if d >= 1 and v > 0]
    if len(data) < MIN_CONFIGS:
        return None
    excluded = outliers([v for _, v, _ in data], [d for _, _, d in data], [k for k, _, _ in data])
    use = [x for x in data if x[0] not in excluded]
    s0_sq, d0 = _likelihood_fit(np.array([v for _, v, _ in use]), np.array([d for _, _, d in use]))
    return Prior(s0_sq, d0, len(use), tuple(excluded))


def differs_from(prior: Prior, var: float, df: float) -> bool:
    """True when a config's own variance lies in the prior's upper tail (s^2 / s0^2 ~ F(df, d0)): its spread
    really differs, so it must not borrow the sweep's."""
    from scipy.stats import f as f_dist

    return float(f_dist.sf(var / prior.s0_sq, df, min(prior.d0, 1e6))) < HETEROGENEITY_ALPHA


def moderate(own_var: float | None, own_df: float, prior: Prior | None, key=None) -> Spread | None:
    """A config's spread: the moderated variance where the prior applies and the config is not excluded from it,
    else its own. None when neither exists (one process, no prior)."""
    excluded = prior is None or key in prior.excluded or (
        own_var is not None and own_df >= 1 and differs_from(prior, own_var, own_df))
    if prior is not None and not excluded:
        if own_var is None or own_df < 1:
            return Spread(prior.s0_sq, prior.d0, True, float("nan"), 0.0)
        var = (prior.d0 * prior.s0_sq + own_df * own_var) / (prior.d0 + own_df)
        return Spread(var, prior.d0 + own_df, True, own_var, own_df)
    if own_var is None or own_df < 1:
        return None
    return Spread(own_var, own_df, False, own_var, own_df)


def log_spread(values) -> tuple[float, float | None, float]:
    """(mean, variance, degrees of freedom) of the logs of per-process values; variance None for one process."""
    x = np.log(np.asarray(values, dtype=float))
    if x.size < 2:
        return float(x.mean()), None, 0.0
    return float(x.mean()), float(x.var(ddof=1)), float(x.size - 1)


def moderated_ratio(a, b, spread_a: Spread | None, spread_b: Spread | None, confidence: float = 0.95) -> dict:
    """Ratio of geometric means a/b with a t-interval on the log scale from each side's (moderated) spread and
    Welch-Satterthwaite degrees of freedom. Keys as `bench.stats.process_ratio`, plus `df` and `pooled`."""
    ma, mb = float(np.log(a).mean()), float(np.log(b).mean())
    ratio = math.exp(ma - mb)
    if spread_a is None or spread_b is None:
        return {"ratio": ratio, "ci_low": None, "ci_high": None, "within_noise": None, "df": None, "pooled": False}
    va, vb = spread_a.var / len(a), spread_b.var / len(b)
    se = math.sqrt(va + vb)
    if se == 0:
        return {"ratio": ratio, "ci_low": ratio, "ci_high": ratio, "within_noise": ratio == 1, "df": math.inf,
                "pooled": spread_a.pooled and spread_b.pooled}
    df = welch_satterthwaite([(va, spread_a.df), (vb, spread_b.df)])
    half = t_quantile(confidence, max(df, 1.0)) * se
    lo, hi = exp_bounds(ma - mb, half)
    return {"ratio": ratio, "ci_low": lo, "ci_high": hi, "within_noise": bool(lo <= 1 <= hi), "df": df,
            "pooled": spread_a.pooled and spread_b.pooled}


def moderated_interval(values, spread: Spread | None, confidence: float = 0.95) -> dict:
    """Geometric mean of per-process values with a t-interval from the (moderated) spread; keys as
    `bench.stats.process_interval`, plus `df` and `pooled`."""
    mean, _, _ = log_spread(values)
    n = len(values)
    if spread is None:
        return {"estimate": math.exp(mean), "ci_low": None, "ci_high": None, "n": n, "sd_log": None, "df": None,
                "pooled": False}
    half = t_quantile(confidence, max(spread.df, 1.0) if math.isfinite(spread.df) else 1e6) * math.sqrt(
        spread.var / n)
    lo, hi = exp_bounds(mean, half)
    return {"estimate": math.exp(mean), "ci_low": lo, "ci_high": hi, "n": n,
            "sd_log": math.sqrt(spread.var), "df": spread.df, "pooled": spread.pooled}


def differing_families(families: Mapping[Hashable, Sequence[tuple[float, float]]],
                       alpha: float = HETEROGENEITY_ALPHA) -> set:
    """Families of configs (e.g. a framework's training configs) whose pooled between-process variance differs from
    the rest of their pool's, each by a two-sided F test of its pooled variance against the others' (summed degrees
    of freedom on both sides) at alpha / the number of families tested (Bonferroni): those get a prior of their
    own, as a hierarchical model would give them, instead of one prior for unlike configs. `families` maps a family
    to its configs' (variance, df)."""
    from scipy.stats import f as f_dist

    def pooled(items):
        df = sum(d for _, d in items)
        return (sum(v * d for v, d in items) / df if df else None), df

    tested = {fam: items for fam, items in families.items() if sum(d for _, d in items) >= 1}
    if len(tested) < 2:
        return set()
    out = set()
    for fam, items in tested.items():
        rest = [x for other, xs in tested.items() if other != fam for x in xs]
        (v, d), (v_rest, d_rest) = pooled(items), pooled(rest)
        if not v or not v_rest:
            continue
        ratio = v / v_rest
        p = 2 * min(float(f_dist.sf(ratio, d, d_rest)), float(f_dist.cdf(ratio, d, d_rest)))
        if p < alpha / len(tested):
            out.add(fam)
    return out


class SweepSpreads:
    """Every config's spread in a sweep, each moderated by the prior of its pool (configs that share a spread: by
    default one pool; e.g. single-process and distributed configs apart), from one value per process per config.
    Within a pool, a family (`families`: e.g. a framework and mode) whose spread differs from the rest's gets a
    prior of its own (`differing_families`), and a config whose processes form two groups (bench/stats/mixtures.py)
    keeps its own spread and is left out of every prior. The one place the report, `bench compare` and the adaptive
    plan get a config's interval and a ratio from."""

    def __init__(self, values: Mapping[Hashable, Sequence[float]], pools: Mapping[Hashable, Hashable] | None = None,
                 own: Mapping[Hashable, tuple[float, float | None, float]] | None = None,
                 families: Mapping[Hashable, Hashable] | None = None,
                 sweeps: Mapping[Hashable, Sequence] | None = None):
        """`own` gives a config's own (mean, variance, df) where it is not its values' plain one (a config over
        several sweeps: its processes' variance around their own sweep's mean, bench/stats/sweep_level.py);
        `sweeps` each value's sweep, so that two groups are looked for within one sweep (sweeps differ by a level of
        their own)."""
        self.values = {k: [float(x) for x in v] for k, v in values.items() if len(v)}
        self._own = {k: (own or {}).get(k) or log_spread(v) for k, v in self.values.items()}
        pools = pools or {}
        self._pool = {k: pools.get(k) for k in self.values}
        # a key's prior: its family's where that family's spread differs from its pool's, else its pool's
        self._family = {k: (families or {}).get(k) for k in self.values}
        self.groups: dict = {}  # key -> Groups: its processes form two groups, so it keeps its own spread
        self._fit()
        for k, v in self.values.items():
            prior = self.prior(k)
            labels = list((sweeps or {}).get(k) or [None] * len(v))
            for sweep in dict.fromkeys(labels):
                mine = [x for x, s in zip(v, labels) if s == sweep]
                if (g := two_groups(mine, prior.sd_upper if prior else None)) is not None:
                    self.groups[k] = g
                    break
        if self.groups:  # their spread is not a process spread: fitted again without them
            self._fit()

    def _fit(self) -> None:
        """The pools' priors, and a prior of its own for each family whose spread differs from the rest of its pool's
        (without families, one family: none differs)."""
        members: dict = {}
        for k in self.values:
            if k not in self.groups:
                members.setdefault(self._pool[k], []).append(k)
        self.priors, self.family_priors = {}, {}
        for pool, keys in members.items():
            with_var = [k for k in keys if self._own[k][1] is not None and self._own[k][2] >= 1]
            apart = differing_families({fam: [self._own[k][1:] for k in with_var if self._family[k] == fam]
                                        for fam in {self._family[k] for k in with_var}})
            for fam in apart:
                mine = [k for k in with_var if self._family[k] == fam]
                self.family_priors[(pool, fam)] = fit_prior([self._own[k][1] for k in mine],
                                                            [self._own[k][2] for k in mine], keys=mine)
            rest = [k for k in with_var if self._family[k] not in apart]
            self.priors[pool] = fit_prior([self._own[k][1] for k in rest], [self._own[k][2] for k in rest], keys=rest)

    def _family_key(self, key: Hashable) -> tuple:
        return self._pool.get(key), self._family.get(key)

    def rests_on(self, key: Hashable) -> str:
        """What the key's spread rests on, in words, for the details."""
        spread = self.spread(key)
        if key in self.groups:
            return f"its own processes: two groups, {self.groups[key].describe()}"
        if spread is None:
            return "no spread (one process, nothing to borrow from)"
        if not spread.pooled:
            return f"its own processes ({spread.df:.0f} df): its spread differs from the sweep's"
        source = (f"the prior of its family {self._family[key]} (its spread differs from the rest)"
                  if self._family_key(key) in self.family_priors else "the sweep's prior")
        return f"{source}, {spread.df:.0f} df in all"

    def prior(self, key: Hashable) -> Prior | None:
        if key in self.groups:
            return None
        if self._family_key(key) in self.family_priors:
            return self.family_priors[self._family_key(key)]
        return self.priors.get(self._pool.get(key))

    def spread(self, key: Hashable) -> Spread | None:
        if key not in self.values:
            return None
        _, var, df = self._own[key]
        return moderate(var, df, self.prior(key), key=key)

    def interval(self, key: Hashable, confidence: float = 0.95) -> dict:
        return moderated_interval(self.values[key], self.spread(key), confidence)

    def ratio(self, a: Hashable, b: Hashable, confidence: float = 0.95) -> dict:
        """a / b with its moderated interval; a side with no value gives no ratio (ratio None)."""
        if a not in self.values or b not in self.values:
            return {"ratio": None, "ci_low": None, "ci_high": None, "within_noise": None, "df": None, "pooled": False}
        return moderated_ratio(self.values[a], self.values[b], self.spread(a), self.spread(b), confidence)
