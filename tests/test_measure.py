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


def test_adaptive_first_iteration_is_warm_up_even_past_the_budget():
    clock = itertools.count(0.0, 100.0)  # every clock read is 100 s later: the budget is gone at once
    s = measure(lambda: 1.0, _cfg(time_budget_s=10.0, iterations=3), clock=lambda: next(clock))
    assert s.warmup_s == [1.0] and s.warmup_stop == "steady" and len(s.timed_s) == 3


def _slow_step(times):
    """Iterations that advance a fake clock by their own seconds, as a real slow training step does."""
    now = [0.0]
    it = iter(times)

    def step():
        t = next(it)
        now[0] += t
        return t
    return step, lambda: now[0]


def test_slow_steps_end_warm_up_on_steadiness_not_on_the_budget():
    # a 3 s step with a 9 s first one, a 4 s budget: two consecutive steps cannot agree with the first, so the old
    # pairwise rule ended such warm-ups on half the budget; the steady stretch after the first ends it here, and its
    # steps are the first timed ones (measured exactly as timed steps are)
    step, clock = _slow_step(itertools.chain([9.0], itertools.repeat(3.0)))
    s = measure(step, _cfg(warmup=3, iterations=3, time_budget_s=4.0), clock=clock)
    assert s.warmup_stop == "steady" and s.warmup_s == [9.0] and s.timed_s[:3] == [3.0, 3.0, 3.0]
    assert s.timed_wall_s == sum(s.timed_s)  # the timed wall time starts where the warm-up ended


def test_a_pair_that_agrees_is_not_yet_steady():
    times = itertools.chain([5.0, 2.0, 2.0, 1.0], itertools.repeat(1.0))
    s = measure(lambda: next(times), _cfg(time_budget_s=0, iterations=3))
    assert s.warmup_s == [5.0, 2.0, 2.0] and s.warmup_stop == "steady"


def test_a_steady_trend_never_reads_as_steady():
    # 6% faster every iteration: any two neighbours agree within 10%, three never do
    falling = (0.94 ** i for i in itertools.count())
    s = measure(lambda: next(falling), _cfg(warmup=5, iterations=3, time_budget_s=0, ci_target=1.0))
    assert s.warmup_stop == "warm-up cap" and len(s.warmup_s) == 5


def test_noise_that_never_settles_ends_warm_up_on_half_the_budget_after_one_full_window():
    clock = itertools.count(0.0, 1.0)
    noisy = itertools.cycle([1.0, 3.0])
    s = measure(lambda: next(noisy), _cfg(warmup=50, iterations=3, time_budget_s=4.0), clock=lambda: next(clock))
    assert s.warmup_stop == "half the time budget" and len(s.warmup_s) == 4  # the first + one steadiness window


def test_ci_target_is_never_met_by_fewer_iterations_than_a_95_percent_interval_needs():
    # identical iterations: the range is zero, yet 3 samples give no 95% interval of the median (coverage 75%)
    clock = itertools.count(0.0, 1.0)
    s = measure(lambda: 1.0, _cfg(iterations=3, time_budget_s=1000.0), clock=lambda: next(clock))
    assert s.timed_stop == "CI target met" and len(s.timed_s) == 6
    short = measure(lambda: 1.0, _cfg(iterations=3, time_budget_s=2.0), clock=lambda: next(clock))
    assert short.timed_stop == "time budget" and len(short.timed_s) < 6


def test_the_time_budget_counts_from_the_end_of_the_first_iteration():
    # a 5 s trace (the first iteration, start-up kept apart as first_iteration_s) then 0.5 s steps, a 4 s budget:
    # the budget counted from the start was spent by the trace alone, leaving the 3 steps of the steadiness window
    step, clock = _slow_step(itertools.chain([5.0], itertools.cycle([0.5, 0.52, 0.48])))
    s = measure(step, _cfg(warmup=3, iterations=3, time_budget_s=4.0, ci_target=0.001), clock=clock)
    assert s.warmup_s == [5.0] and s.timed_stop == "time budget" and len(s.timed_s) == 8  # just over 4 s of steps
