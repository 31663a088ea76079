"""The sweep as a level above the process, its variance pooled over the configs (bench/stats/sweep_level.py), and how a
comparison over two sweeps is judged (bench/stats/config_intervals.py, bench/report/estimates/pair_verdicts.py)."""

import math

import numpy as np

from bench.report.estimates.pair_verdicts import compare_pair
from bench.stats.config_intervals import config_intervals
from bench.stats.judge import Judge
from bench.stats.sweep_level import fit_component, sweep_means


def _two_sweeps(rng, configs=30, processes=3, sigma=0.02, tau=0.0, shifted=None, shift=0.10):
    """Per config: its processes' images/s and sweep ids over two sweeps, log-normal around 100 img/s with a
    process spread `sigma` and a per-config sweep shift of sd `tau`; config `shifted` moves by `shift` on day 2."""
    out = []
    for c in range(configs):
        values, sweeps = [], []
        for day in ("d1", "d2"):
            u = tau * rng.standard_normal() + (math.log(1 + shift) if c == shifted and day == "d2" else 0.0)
            values += [100 * math.exp(u + sigma * rng.standard_normal()) for _ in range(processes)]
            sweeps += [day] * processes
        out.append((values, [None] * len(values), sweeps, "cpu"))
    return out


def test_sweep_means_keep_the_processes_spread_around_their_own_sweep():
    sm = sweep_means([100, 102, 110, 112], ["a", "a", "b", "b"])
    assert sm.sweeps == ("a", "b") and list(sm.sizes) == [2, 2] and sm.within_df == 2
    # the 10% between the sweeps is not process spread
    assert sm.within_var < 2e-4 and abs(math.exp(sm.means[1] - sm.means[0]) - 1.098) < 0.01


def test_the_between_sweep_variance_is_pooled_over_the_configs():
    rng = np.random.default_rng(3)
    fits = []
    for _ in range(6):
        items = {i: (sweep_means(v, s), 0.02 ** 2, 60.0) for i, (v, _, s, _) in
                 enumerate(_two_sweeps(rng, configs=40, tau=0.03))}
        fits.append(fit_component(items))
    taus = [math.sqrt(c.tau_sq) for c in fits]
    assert 0.02 < np.median(taus) < 0.04  # the planted 3%, from one degree of freedom per config
    assert all(c.df > 5 for c in fits)  # many configs' contrasts, not one
    quiet = fit_component({i: (sweep_means(v, s), 0.02 ** 2, 60.0) for i, (v, _, s, _) in
                           enumerate(_two_sweeps(rng, configs=40, tau=0.0))})
    assert quiet.tau_sq < 1e-4


def test_a_config_whose_sweeps_differ_keeps_its_own_level_and_the_rest_stay_narrow():
    rng = np.random.default_rng(11)
    configs = _two_sweeps(rng, configs=20, shifted=5)
    intervals = config_intervals(configs)
    moved = intervals[5]
    assert moved.sweeps_differ and moved.sweeps == 2 and moved.sweep_var is None
    assert moved.ci_low < 100 < 110 < moved.ci_high  # covers both days
    quiet = [iv for i, iv in enumerate(intervals) if i != 5]
    assert sum(iv.sweeps_differ for iv in quiet) <= 2  # about 5% of alike configs by chance
    for iv in quiet:
        if not iv.sweeps_differ:
            assert iv.ci_high / iv.ci_low < 1.08  # borrows the pooled level: six processes' worth, not t(1)
            assert iv.kind == "sweeps" and iv.sweep_df is not None


def test_intervals_over_two_sweeps_cover_the_truth():
    """40 configs x 2 sweeps with a real 2% day-to-day shift per config and 3% between processes: the intervals
    of the configs with a pooled level cover the true 100 img/s in about 95% of cases."""
    rng = np.random.default_rng(2027)
    covered = total = 0
    for _ in range(8):
        for iv in config_intervals(_two_sweeps(rng, configs=40, sigma=0.03, tau=0.02)):
            total += 1
            covered += iv.ci_low <= 100 <= iv.ci_high
    assert covered / total > 0.9


def _row(series, values, sweeps, interval):
    return {"series": series, "process_ips": values, "process_sweeps": sweeps, "spread_var": interval.spread_var,
            "spread_df": interval.spread_df, "spread_pooled": interval.pooled, "sweep_var": interval.sweep_var,
            "sweep_df": interval.sweep_df, "sweeps_differ": interval.sweeps_differ, "sound": True,
            "flag_list": []}


def _pair(a_values, b_values, sweeps, rng):
    """Rows a and b among 20 quiet configs of the same two sweeps (so the pool's prior and tau^2 are fitted)."""
    others = _two_sweeps(rng, configs=20, processes=2)
    configs = [(a_values, [None] * len(sweeps), sweeps, "cpu"), (b_values, [None] * len(sweeps), sweeps, "cpu")]
    ia, ib = config_intervals(configs + others)[:2]
    return _row("a", a_values, sweeps, ia), _row("b", b_values, sweeps, ib)


def test_a_side_whose_sweeps_differ_is_judged_in_every_sweep():
    rng = np.random.default_rng(5)
    sweeps = ["d1", "d1", "d2", "d2"]
    # b moved 7% between the days; a is faster in every process of both
    a, b = _pair([130, 131, 130.5, 131.5], [100, 101, 93, 94], sweeps, rng)
    c = compare_pair(a, b, Judge())
    assert c["verdict"] == "winner" and c["faster"] == "a"
    # the interval holds each day's ratio (1.30x on day 1, 1.40x on day 2)
    assert c["speedup_ci_low"] < 1.30 and c["speedup_ci_high"] > 1.40
    # the same shift, a 1% difference on day 1 and 8% on day 2: undecided, and only more sweeps would decide it
    a, b = _pair([100.5, 101.5, 100.5, 101.5], [100, 101, 93, 94], sweeps, rng)
    c = compare_pair(a, b, Judge())
    assert c["verdict"] == "undecided" and c["more_sweeps"].startswith("more sweeps")
    assert c["extra_processes"] is None


def test_a_winner_over_two_sweeps_points_the_same_way_in_each():
    rng = np.random.default_rng(9)
    sweeps = ["d1"] * 3 + ["d2"] * 3
    # a 3% faster on day 1, 1% slower on day 2: whatever the pooled interval, no winner
    a, b = _pair([103, 103.2, 102.8, 99, 99.1, 98.9], [100, 100.1, 99.9, 100, 100.1, 99.9], sweeps, rng)
    c = compare_pair(a, b, Judge())
    assert c["verdict"] != "winner"
    if c["verdict"] == "undecided" and c["more_sweeps"]:
        assert "more sweeps" in c["reason"]
