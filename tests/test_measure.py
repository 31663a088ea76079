"""The protocols, driven by fake iterations and a fake clock (no real timing involved)."""

import itertools

from bench import make_config
from bench.measurement.loop import measure


def _cfg(**kw):
    return make_config(framework="null", model="tiny_cnn", **kw)


def test_seed_protocol_is_exactly_10_plus_20():
    calls = []
    s = measure(lambda: calls.append(1) or 0.01, _cfg(protocol="seed"))
    assert (len(s.warmup_s), len(s.timed_s), len(calls)) == (10, 20, 30)


def test_adaptive_warms_up_until_steady_then_meets_ci_target():
    times = itertools.chain([5.0, 2.0, 1.2], itertools.repeat(1.0))
    s = measure(lambda: next(times), _cfg(time_budget_s=0))
    assert s.warmup_s[:3] == [5.0, 2.0, 1.2] and s.warmup_stop == "steady"
    assert s.timed_stop == "CI target met" and len(s.timed_s) == 10  # the minimum


def test_adaptive_stops_at_time_budget_when_noise_never_settles():
    clock = itertools.count(0.0, 1.0)
    noisy = itertools.cycle([1.0, 3.0])
    s = measure(lambda: next(noisy), _cfg(time_budget_s=40.0), clock=lambda: next(clock))
    assert s.timed_stop == "time budget"
    assert len(s.timed_s) >= 10


def test_adaptive_warmup_cap():
    growing = itertools.count(1.0, 1.0)
    s = measure(lambda: next(growing), _cfg(warmup=4, iterations=10, time_budget_s=0, ci_target=1.0))
    assert len(s.warmup_s) == 4 and s.warmup_stop == "warm-up cap"


def test_adaptive_warms_up_at_least_twice_even_past_the_budget():
    clock = itertools.count(0.0, 100.0)  # every clock read is 100 s later: the budget is gone at once
    s = measure(lambda: 1.0, _cfg(time_budget_s=10.0, iterations=3), clock=lambda: next(clock))
    assert len(s.warmup_s) >= 2 and len(s.timed_s) == 3


def test_ci_target_is_never_met_by_fewer_iterations_than_a_95_percent_interval_needs():
    # identical iterations: the range is zero, yet 3 samples give no 95% interval of the median (coverage 75%)
    clock = itertools.count(0.0, 1.0)
    s = measure(lambda: 1.0, _cfg(iterations=3, time_budget_s=1000.0), clock=lambda: next(clock))
    assert s.timed_stop == "CI target met" and len(s.timed_s) == 6
    short = measure(lambda: 1.0, _cfg(iterations=3, time_budget_s=2.0), clock=lambda: next(clock))
    assert short.timed_stop == "time budget" and len(short.timed_s) < 6
