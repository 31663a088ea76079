"""Statistics for timing samples: median with a distribution-free 95% CI, robust jitter, ratios."""

from __future__ import annotations

import math

import numpy as np


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
    lo, hi, _ = median_ci(samples, confidence)
    med = float(np.median(samples))
    return (hi - lo) / 2 / med if med > 0 else math.inf


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


def ratio_of_medians_ci(a, b, n_boot: int = 4000, confidence: float = 0.95, seed: int = 0):
    """median(a)/median(b) with a percentile-bootstrap CI: (ratio, low, high, within_noise)."""
    a = np.asarray(a, dtype=float)
    b = np.asarray(b, dtype=float)
    rng = np.random.default_rng(seed)
    ma = np.median(rng.choice(a, size=(n_boot, a.size)), axis=1)
    mb = np.median(rng.choice(b, size=(n_boot, b.size)), axis=1)
    q = (1 - confidence) / 2
    low, high = np.quantile(ma / mb, [q, 1 - q])
    ratio = float(np.median(a) / np.median(b))
    return ratio, float(low), float(high), bool(low <= 1.0 <= high)


def is_steady(times, window: int = 3, tolerance: float = 0.05) -> bool:
    """True when the median of the last `window` iterations is within `tolerance` of the window before."""
    if len(times) < 2 * window:
        return False
    last = float(np.median(times[-window:]))
    prev = float(np.median(times[-2 * window:-window]))
    return abs(last - prev) <= tolerance * prev
