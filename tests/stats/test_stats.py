"""Statistics against known data."""

import math

import numpy as np
import pytest

from bench.stats.intervals import mad, median_ci, summarize_latencies


def test_median_ci_matches_binomial_tables():
    # For n=20 the distribution-free 95% CI of the median is [x(6), x(15)] (1-indexed), coverage 95.86%.
    x = np.arange(1, 21, dtype=float)
    lo, hi, cov = median_ci(x)
    assert (lo, hi) == (6.0, 15.0)
    assert cov == pytest.approx(0.9586, abs=1e-4)


def test_median_ci_coverage_by_simulation():
    rng = np.random.default_rng(1)
    hits = 0
    for _ in range(2000):
        lo, hi, _ = median_ci(rng.exponential(size=30))
        hits += lo <= np.log(2) <= hi  # the exponential's true median
    assert 0.94 <= hits / 2000 <= 0.99


def test_too_few_samples_returns_min_max_with_lower_coverage():
    lo, hi, cov = median_ci([3.0, 1.0, 2.0])
    assert (lo, hi) == (1.0, 3.0) and cov < 0.95


def test_summary_of_known_latencies():
    s = summarize_latencies([0.1, 0.2, 0.2, 0.3, 0.2], batch_size=4)
    assert s["n"] == 5
    assert s["images_per_sec_median"] == pytest.approx(20.0)
    assert s["latency_ms_median"] == pytest.approx(200.0)
    assert s["latency_ms_mean"] == pytest.approx(200.0)
    assert s["latency_ms_mad"] == pytest.approx(0.0)
    assert s["images_per_sec_ci_low"] <= s["images_per_sec_median"] <= s["images_per_sec_ci_high"]
    assert s["latency_ms_p50"] <= s["latency_ms_p90"] <= s["latency_ms_p99"] <= s["latency_ms_max"]


def test_mad():
    assert mad([1, 2, 3, 4, 100]) == 1.0


def test_welch_satterthwaite_is_the_classic_formula_and_ignores_known_variances():
    from bench.stats.quantiles import welch_satterthwaite
    va, vb = 0.04 / 3, 0.09 / 5
    classic = (va + vb) ** 2 / (va**2 / 2 + vb**2 / 4)
    assert welch_satterthwaite([(va, 2), (vb, 4)]) == pytest.approx(classic)
    assert welch_satterthwaite([(va, 2), (vb, math.inf)]) == pytest.approx((va + vb) ** 2 / (va**2 / 2))
    assert welch_satterthwaite([(0.0, 2), (0.0, 3)]) == 1e6


def test_an_interval_too_wide_to_exponentiate_is_unbounded_not_an_overflow():
    # a noisy tiny sweep (a full-tier run, 2026-11-28): one degree of freedom at the plan's stopping confidence
    from bench.stats.judge import Judge
    from bench.stats.moderated import Spread, moderated_ratio
    from bench.stats.quantiles import exp_bounds

    assert exp_bounds(0.0, 800.0) == (0.0, math.inf) and exp_bounds(0.0, math.log(2)) == pytest.approx((0.5, 2.0))
    wide = Spread(1e4, 1.0, False, float("nan"), 0.0)
    r = moderated_ratio([10.0, 1e6], [10.0, 12.0], wide, wide, confidence=0.999)
    assert r["ci_high"] == math.inf and r["within_noise"]
    assert Judge().verdict(r["ratio"], r["ci_low"], r["ci_high"]).word == "undecided"
