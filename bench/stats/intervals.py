"""Statistics for timing samples: median with a distribution-free 95% CI, robust jitter, ratios."""

from __future__ import annotations

import math

import numpy as np

from .quantiles import exp_bounds, t_quantile, welch_satterthwaite


def median_ci(samples, confidence: float = 0.95) -> tuple[float, float, float]:
    """(lower, upper, achieved coverage) of the median by binomial order statistics.

    Exact and distribution-free: no normality assumption. The interval is [x_(r), x_(n-r+1)] with the
    largest r whose coverage 1 - 2 P(B <= r-1), B ~ Binomial(n, 1/2), is still >= `confidence`. With too
    few samples to reach it, (min, max) is returned with its lower coverage.
    """
    x = np.sort(np.asarray(samples, dtype=float))
    n = x.size
    if n == 0:
        raise ValueError("no samples")
    alpha = 1.0 - confidence
    r, tail = 1, _binom_half_pmf(n, 0)  # tail = P(B <= r-1)
    while r + 1 <= n - r and tail + _binom_half_pmf(n, r) <= alpha / 2:
        tail += _binom_half_pmf(n, r)
        r += 1
    return float(x[r - 1]), float(x[n - r]), 1.0 - 2.0 * tail


def _binom_half_pmf(n: int, k: int) -> float:
    """P(B = k) for B ~ Binomial(n, 1/2), in floating point via log-gamma (exact to ~1e-12)."""
    return math.exp(math.lgamma(n + 1) - math.lgamma(k + 1) - math.lgamma(n - k + 1) - n * math.log(2.0))


def ci_relative_halfwidth(samples, confidence: float = 0.95) -> float:
    """Half the width of the median's interval relative to the median; infinite while too few samples exist for
    the interval to reach `confidence` (fewer than 6 at 95%): a target is never "met" by an interval that is only
    the range of three iterations."""
    lo, hi, coverage = median_ci(samples, confidence)
    med = float(np.median(samples))
    return (hi - lo) / 2 / med if med > 0 and coverage >= confidence else math.inf


def mad(samples) -> float:
    """Median absolute deviation (unscaled): the robust jitter of tf_cnn_benchmarks."""
    x = np.asarray(samples, dtype=float)
    return float(np.median(np.abs(x - np.median(x))))


def summarize_latencies(latencies_s, batch_size: int) -> dict:
    """Summary of per-iteration latencies (seconds) for a batch: throughput and latency views."""
    x = np.asarray(latencies_s, dtype=float)
    med = float(np.median(x))
    lo, hi, coverage = median_ci(x)
    std = float(x.std(ddof=1)) if x.size > 1 else 0.0
    return {
        "n": int(x.size),
        "images_per_sec_median": batch_size / med,
        "images_per_sec_ci_low": batch_size / hi,
        "images_per_sec_ci_high": batch_size / lo,
        "ci_coverage": coverage,
        "ci_rel_halfwidth": (hi - lo) / 2 / med,
        "images_per_sec_mean": batch_size / float(x.mean()),
        "latency_ms_median": med * 1e3,
        "latency_ms_mean": float(x.mean()) * 1e3,
        "latency_ms_std": std * 1e3,
        "latency_ms_sem": std / math.sqrt(x.size) * 1e3,
        "latency_ms_mad": mad(x) * 1e3,
        "latency_ms_p50": float(np.percentile(x, 50)) * 1e3,
        "latency_ms_p90": float(np.percentile(x, 90)) * 1e3,
        "latency_ms_p99": float(np.percentile(x, 99)) * 1e3,
        "latency_ms_min": float(x.min()) * 1e3,
        "latency_ms_max": float(x.max()) * 1e3,
    }


def cv(samples) -> float:
    """Coefficient of variation (std / mean) of iteration times: how jittery one process was."""
    x = np.asarray(samples, dtype=float)
    return float(x.std(ddof=1) / x.mean()) if x.size > 1 and x.mean() > 0 else 0.0


def process_interval(values, confidence: float = 0.95) -> dict:
    """Geometric mean of per-process values (e.g. each process's median images/s) with a t-interval
    on the log scale (always positive, and the same scale as `process_ratio`).

    The process is the unit of replication (Kalibera & Jones 2013): drift between processes is
    usually larger than the noise inside one, so the interval is built from one number per process.
    With a single process there is no interval (ci_low/ci_high are None).
    """
    x = np.log(np.asarray(values, dtype=float))
    n = int(x.size)
    if n == 0:
        raise ValueError("no process values")
    mean = float(x.mean())
    if n < 2:
        return {"estimate": math.exp(mean), "ci_low": None, "ci_high": None, "n": n, "sd_log": None}
    sd = float(x.std(ddof=1))
    half = t_quantile(confidence, n - 1) * sd / math.sqrt(n)
    lo, hi = exp_bounds(mean, half)
    return {"estimate": math.exp(mean), "ci_low": lo, "ci_high": hi,
            "n": n, "sd_log": sd}


def outer_level(values, levels) -> tuple[list[float], int]:
    """The replicates an interval is built from, and how many levels they span: one value per process, or,
    where the processes ran on several nodes (`levels`: each process's node, None where unknown), one per node,
    the geometric mean of its processes' values (the node is then the outer level of a nested design: processes
    on one node share its hardware and neighbours, so they are not independent replicates of the config)."""
    values = [float(v) for v in values]
    named = list(levels)
    distinct = list(dict.fromkeys(lv for lv in named if lv is not None))
    if len(distinct) < 2 or len(named) != len(values):
        return values, max(len(distinct), 1)
    groups: dict = {}
    for v, lv in zip(values, named):
        groups.setdefault(lv, []).append(math.log(v))
    return [math.exp(sum(g) / len(g)) for g in groups.values()], len(groups)


def welch_interval(a, b, confidence: float = 0.95) -> tuple[float, float | None, float | None]:
    """mean(a) - mean(b) with a Welch t-interval (None, None with fewer than two values on a side)."""
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    d = float(a.mean() - b.mean())
    if a.size < 2 or b.size < 2:
        return d, None, None
    va, vb = a.var(ddof=1) / a.size, b.var(ddof=1) / b.size
    se = math.sqrt(va + vb)
    if se == 0:
        return d, d, d
    df = welch_satterthwaite([(va, a.size - 1), (vb, b.size - 1)])
    half = t_quantile(confidence, max(df, 1.0)) * se
    return d, d - half, d + half


def process_ratio(a, b, confidence: float = 0.95) -> dict:
    """Ratio of geometric means of per-process values a/b with a Welch t-interval on the log scale.

    Each side contributes one value per process, so a ratio's interval is never narrower than the
    between-process spread allows. Needs at least two processes on each side for an interval.
    """
    d, lo, hi = welch_interval(np.log(np.asarray(a, dtype=float)), np.log(np.asarray(b, dtype=float)), confidence)
    ratio = math.exp(d)
    if lo is None:
        return {"ratio": ratio, "ci_low": None, "ci_high": None, "within_noise": None}
    lo, hi = math.exp(lo), math.exp(hi)
    return {"ratio": ratio, "ci_low": lo, "ci_high": hi, "within_noise": bool(lo <= 1.0 <= hi)}


def variance_components(groups) -> dict:
    """Within- and between-process variance of per-iteration values (one-way random effects).

    `groups` holds one array of per-iteration values per process. Returns the within-process
    variance, the between-process variance component (process means' variance minus what the
    within-process noise explains), the between share of the total and the mean iterations per process.
    """
    groups = [np.asarray(g, dtype=float) for g in groups if len(g) > 1]
    if len(groups) < 2:
        return {"within_var": None, "between_var": None, "between_share": None, "processes": len(groups)}
    within = float(np.mean([g.var(ddof=1) for g in groups]))
    n_bar = float(np.mean([g.size for g in groups]))
    means = np.array([g.mean() for g in groups])
    between = max(0.0, float(means.var(ddof=1)) - within / n_bar)
    total = within + between
    return {"within_var": within, "between_var": between,
            "between_share": between / total if total > 0 else 0.0, "processes": len(groups),
            "iterations_per_process": n_bar}
