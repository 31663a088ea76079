"""The three verdicts (bench/stats/verdicts.py) and the sweep-moderated spread (bench/stats/moderated.py)."""

import math

import numpy as np
import pytest

from bench.stats.intervals import process_ratio
from bench.stats.judge import Judge
from bench.stats.moderated import Spread, fit_prior, log_spread, moderate, moderated_interval, moderated_ratio
from bench.stats.verdicts import (
    DECIDED,
    EQUIVALENT,
    SMALL,
    UNDECIDED,
    WINNER,
    definition,
    equivalence_bounds,
    extra_processes,
    judge,
    said,
)


def test_a_winner_is_a_difference_beyond_the_margin():
    assert judge(1.14, 1.06, 1.23).word == WINNER
    assert judge(0.8, 0.7, 0.9).word == WINNER
    # last sweep's headline 'winner' ONNX Runtime 1.04x [1.02-1.07] over OpenVINO: faster, not shown to matter
    v = judge(1.04, 1.02, 1.07)
    assert v.word == UNDECIDED and v.direction_shown and not v.decided
    assert "not yet whether by more than +-5%" in v.to_decide()
    assert judge(1.14, 1.05, 1.23).word == UNDECIDED  # a lower bound at 1 + margin is not beyond it


def test_four_outcomes_that_never_overlap():
    assert judge(1.03, 1.01, 1.045).word == SMALL  # excludes 1x, inside the band
    assert judge(0.97, 0.955, 0.99).word == SMALL
    assert judge(1.01, 0.97, 1.04).word == EQUIVALENT  # holds 1x, inside the band
    assert judge(1.0, 0.9, 1.1).word == UNDECIDED and not judge(1.0, 0.9, 1.1).direction_shown
    assert DECIDED == (WINNER, SMALL, EQUIVALENT)
    assert said(judge(1.03, 1.01, 1.045), "A faster", "B faster", "equal") == \
        "small difference: A faster (within +-5%)"
    assert said(judge(0.97, 0.955, 0.99), "A faster", "B faster", "equal").startswith("small difference: B faster")
    # on a grid of intervals, exactly one outcome each, and each where the definition puts it
    lo_eq, hi_eq = equivalence_bounds(0.05)
    for lo in np.linspace(0.8, 1.2, 41):
        for hi in np.linspace(lo, 1.3, 13):
            w = judge(math.sqrt(lo * hi), lo, hi).word
            assert (w == WINNER) == (lo > hi_eq or hi < lo_eq)
            assert (w == SMALL) == (lo_eq <= lo and hi <= hi_eq and (lo > 1 or hi < 1))
            assert (w == EQUIVALENT) == (lo_eq <= lo <= 1 <= hi <= hi_eq)


def test_equivalent_only_when_the_whole_interval_is_inside_the_margin():
    assert judge(1.01, 0.97, 1.04, margin=0.05).word == EQUIVALENT
    assert judge(1.01, 0.94, 1.04, margin=0.05).word == UNDECIDED  # 0.94 < 1/1.05
    assert judge(1.01, 0.94, 1.04, margin=0.10).word == EQUIVALENT


def test_undecided_without_an_interval_says_why():
    v = judge(1.2, None, None)
    assert v.word == UNDECIDED and "two or more processes" in v.to_decide()


def test_undecided_says_how_many_more_processes_would_decide_it():
    # ratio 1.14, half-width ~0.13 on the log scale with 3 and 4: a winner needs it below log(1.14) - log(1.05)
    # = 0.082, so (0.131/0.082)^2 times the processes: about 6 more a side
    v = judge(1.14, 1.00, 1.30, n_a=3, n_b=4)
    assert v.word == UNDECIDED and v.extra_processes is not None and 4 <= v.extra_processes <= 8
    assert "more process" in v.to_decide()
    # a ratio right at the margin is never decided by more data at this spread
    assert extra_processes(1.05, 0.8, 1.38, 0.05, 2, 2) is None


def test_margin_is_checked():
    with pytest.raises(ValueError, match="margin"):
        equivalence_bounds(1.5)
    lo, hi = equivalence_bounds(0.05)
    assert math.isclose(lo * hi, 1.0)
    assert "+-5%" in definition(0.05) and "undecided" in definition()


def _spreads(samples):
    return [log_spread(x) for x in samples]


def test_prior_of_similar_configs_has_many_degrees_of_freedom_and_the_right_scale():
    rng = np.random.default_rng(0)
    samples = [np.exp(rng.normal(0, 0.05, 3)) for _ in range(30)]
    sp = _spreads(samples)
    prior = fit_prior([v for _, v, _ in sp], [d for _, _, d in sp])
    assert prior is not None and prior.d0 > 10
    assert 0.03 < prior.sd < 0.08


def test_a_config_with_a_really_larger_spread_keeps_its_own_variance():
    rng = np.random.default_rng(1)
    samples = [np.exp(rng.normal(0, 0.03, 4)) for _ in range(20)] + [np.array([10.0, 14.0, 7.0, 12.0])]
    sp = _spreads(samples)
    prior = fit_prior([v for _, v, _ in sp], [d for _, _, d in sp], keys=range(len(sp)))
    jittery = moderate(sp[-1][1], sp[-1][2], prior, key=len(sp) - 1)
    assert jittery is not None and not jittery.pooled and jittery.var == sp[-1][1]
    quiet = moderate(sp[0][1], sp[0][2], prior, key=0)
    assert quiet.pooled and quiet.df > sp[0][2]


def test_no_prior_from_too_few_configs_falls_back_to_welch():
    sp = _spreads([np.array([1.0, 1.1]), np.array([2.0, 2.1])])
    assert fit_prior([v for _, v, _ in sp], [d for _, _, d in sp]) is None
    own = moderate(sp[0][1], sp[0][2], None)
    assert own == Spread(sp[0][1], 1.0, False, sp[0][1], 1.0)
    a, b = [17.4, 18.9, 19.4], [16.1, 16.1, 16.3, 16.5]
    sa, sb = (moderate(*log_spread(x)[1:], None) for x in (a, b))
    mine, welch = moderated_ratio(a, b, sa, sb), process_ratio(a, b)
    assert math.isclose(mine["ci_low"], welch["ci_low"], rel_tol=1e-9)


def test_one_process_gets_the_prior_spread_but_no_own_one():
    sp = _spreads([np.exp(np.random.default_rng(i).normal(0, 0.05, 3)) for i in range(10)])
    prior = fit_prior([v for _, v, _ in sp], [d for _, _, d in sp])
    single = moderate(None, 0.0, prior)
    assert single.pooled and single.var == prior.s0_sq
    iv = moderated_interval([10.0], single)
    assert iv["ci_low"] < 10.0 < iv["ci_high"]
    assert moderated_interval([10.0], None)["ci_low"] is None


def _simulated_rates(shift: float, trials: int = 60, configs: int = 20, n: int = 3, sd: float = 0.05,
                     jittery: int = 0, seed: int = 7) -> tuple[float, float]:
    """(share called winner among quiet configs, share among jittery ones) over simulated sweeps."""
    rng = np.random.default_rng(seed)
    calls, jcalls = [], []
    for _ in range(trials):
        sds = [sd * 5 if i < jittery else sd for i in range(configs)]
        a = [np.exp(rng.normal(0, s, n)) for s in sds]
        b = [np.exp(rng.normal(shift, s, n)) for s in sds]
        sp = _spreads(a + b)
        prior = fit_prior([v for _, v, _ in sp], [d for _, _, d in sp], keys=range(2 * configs))
        for i in range(configs):
            r = moderated_ratio(b[i], a[i], moderate(sp[configs + i][1], sp[configs + i][2], prior, configs + i),
                                moderate(sp[i][1], sp[i][2], prior, i))
            (jcalls if i < jittery else calls).append(judge(r["ratio"], r["ci_low"], r["ci_high"]).word == WINNER)
    return float(np.mean(calls)), float(np.mean(jcalls)) if jcalls else 0.0


def test_moderated_intervals_keep_the_false_winner_rate_near_five_percent():
    quiet, jittery = _simulated_rates(0.0, jittery=2)
    assert quiet <= 0.08
    assert jittery <= 0.15  # a jittery config does not borrow the quiet ones' small spread


def test_moderation_buys_power_over_per_config_welch():
    rng = np.random.default_rng(3)
    moderated, _ = _simulated_rates(0.15, trials=40)
    welch = np.mean([judge(**{k: r[k] for k in ("ratio", "ci_low", "ci_high")}).word == WINNER
                     for r in (process_ratio(np.exp(rng.normal(0.15, 0.05, 3)), np.exp(rng.normal(0, 0.05, 3)))
                               for _ in range(800))])
    assert moderated > welch + 0.1


def _machine(seed: int = 11, configs: int = 21, sd: float = 0.05) -> dict:
    rng = np.random.default_rng(seed)
    return {f"c{i}": list(np.exp(rng.normal(np.log(10 + i), sd, 4))) for i in range(configs)}


def test_split_halves_rarely_call_a_winner():
    from bench.stats.power import split_half_aa

    rate = split_half_aa(_machine(), Judge(), trials=10)
    assert rate.judged == 210 and rate.rate <= 0.08
    assert split_half_aa({"a": [1.0, 2.0]}, Judge()).judged == 0


def test_power_grows_with_processes_and_the_shift():
    from bench.stats.power import curve

    # a winner is a difference beyond the +-5% margin: power for 10% and 20% differences
    small = curve(_machine(), 0.10, Judge(), processes=(2, 6), trials=8)
    large = curve(_machine(), 0.20, Judge(), processes=(2, 6), trials=8)
    assert small[2].rate < small[6].rate and large[2].rate < large[6].rate
    assert large[6].rate > small[6].rate and large[6].rate > 0.8
    null = curve(_machine(), 0.0, Judge(), processes=(4,), trials=8)
    assert null[4].rate <= 0.1
    eq = curve(_machine(), 0.0, Judge(), word="equivalent", processes=(2, 8), trials=8)
    assert eq[8].rate > eq[2].rate
    with pytest.raises(ValueError, match="undecided"):
        curve(_machine(), 0.0, Judge(), word="undecided")


def test_few_degrees_of_freedom_need_fewer_extra_processes_than_the_width_alone_says():
    # 1.29x [0.50-3.31] from 2 processes a side with 1 df: t(1) = 12.7 inflates the width; a few more processes
    # shrink t, not only the standard error
    without = extra_processes(1.5, 0.58, 3.85, 0.05, 2, 2)
    with_df = extra_processes(1.5, 0.58, 3.85, 0.05, 2, 2, df=1.0)
    assert without >= 10 and with_df is not None and with_df <= 3


def _alike(configs: int, df: int, s0_sq: float) -> list[float]:
    """Variances of `configs` configs with one spread s0_sq, at evenly spaced quantiles of s0_sq chi2(df) / df: a
    deterministic sample of what alike configs show."""
    from scipy.stats import chi2

    return [s0_sq * float(chi2.ppf((i + 0.5) / configs, df)) / df for i in range(configs)]


def test_a_pair_of_processes_that_agreed_by_chance_does_not_weaken_the_prior():
    # 19 alike configs of two processes each, one of whose pairs agreed to five digits: limma's moments of the log
    # variances read that one value as very different spreads (d0 about 1: nothing to borrow); the likelihood does not
    variances = _alike(18, 1, 0.05**2) + [0.05**2 * 1e-8]
    prior = fit_prior(variances, [1.0] * 19, keys=range(19))
    assert prior.d0 >= 10 and 0.035 < prior.sd < 0.07 and not prior.excluded


def test_noisy_configs_keep_their_own_variance_and_the_quiet_majority_gets_a_strong_prior():
    # 24 quiet configs of three processes (one pair agreed by chance) and 4 whose spread is 5x theirs (jittery,
    # busy): the noisy ones keep their own variance, the quiet ones borrow a prior fitted to them with many degrees
    # of freedom. The former moment fit gave d0 below 1: the noisy ones "borrowed" and the quiet ones had nothing.
    quiet = _alike(23, 2, 0.03**2) + [0.03**2 * 1e-6]
    noisy = [v * 25 for v in _alike(4, 2, 0.03**2)]
    prior = fit_prior(quiet + noisy, [2.0] * 28, keys=range(28))
    assert set(prior.excluded) <= set(range(24, 28)) and prior.configs >= 24
    assert prior.d0 >= 24 and math.isclose(prior.sd, 0.03, rel_tol=0.15)
    # the per-config check against the fitted prior costs the largest quiet config (its 5% tail) its borrowing
    assert sum(moderate(v, 2.0, prior, key=i).pooled for i, v in enumerate(quiet)) >= 23
    assert not any(moderate(v, 2.0, prior, key=24 + i).pooled for i, v in enumerate(noisy))


def test_alike_spreads_lose_no_config_to_the_search_for_noisier_ones():
    from bench.stats.moderated import outliers

    assert outliers(_alike(40, 1, 0.01), [1.0] * 40) == []
    assert outliers(_alike(40, 1, 0.01) + [0.01 * 60], [1.0] * 41) == [40]


def test_a_winners_interval_is_printed_so_it_is_seen_to_exclude_one():
    # 1.004-1.012 printed with two decimals reads [1.00-1.01]: a winner whose interval seems to touch 1x.
    assert judge(1.008, 1.004, 1.012).interval() == "1.008x [1.004-1.012]"
    assert judge(1.2, 1.1, 1.31).interval() == "1.20x [1.10-1.31]"
    assert judge(0.996, 0.992, 0.9996).interval() == "0.9960x [0.9920-0.9996]"


def test_the_adaptive_plan_stops_a_winner_only_at_its_interim_confidence():
    from bench.stats.verdicts import stopping_verdict

    v = judge(1.12, 1.06, 1.18)
    assert v.word == "winner"
    # its 99.9% interval still reaches into the +-5% band: the plan asks for more processes, the report's verdict
    # is unchanged
    assert stopping_verdict(v, 1.02, 1.25).word == "undecided"
    assert stopping_verdict(v, 1.055, 1.2).word == "winner"
    eq = judge(1.0, 0.98, 1.02)
    assert stopping_verdict(eq, 0.9, 1.1).word == "equivalent"  # equivalence stops: it makes no winner
    small = judge(1.03, 1.01, 1.045)
    assert stopping_verdict(small, 0.98, 1.08).word == SMALL  # so does a small difference


def test_stopping_at_the_first_95_percent_winner_inflates_false_winners_and_the_boundary_holds_them():
    """Optional stopping, simulated on log-normal processes (3% spread) with a real difference right at the +-5%
    margin (so a winner, a difference beyond it, is false): judging at 95% after every added process and stopping
    once decided calls more such pairs a winner than the interim boundary does."""
    import numpy as np

    from bench.stats.power import adaptive_plan

    rng = np.random.default_rng(4)
    values = {str(i): list(np.exp(0.03 * rng.standard_normal(4))) for i in range(20)}
    naive = adaptive_plan(values, 0.05, Judge(), trials=6, interim=False)
    bounded = adaptive_plan(values, 0.05, Judge(), trials=6)
    assert naive.rate.called > bounded.rate.called
    assert bounded.rate.rate <= 0.05
    found = adaptive_plan(values, 0.15, Judge(), trials=3)
    assert found.rate.rate >= 0.85  # a real 15% difference is still found beyond the margin
