"""The protocols, driven by fake iterations and a fake clock (no real timing involved)."""

import itertools

from bench.config import make_config
from bench.measurement.loop import MIN_STEADY_ITERATIONS, NEVER_STEADY, TIMED_CAP_S, WARMUP_CAP_S, measure


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
    assert len(s.warmup_s) == 4 and s.warmup_stop == NEVER_STEADY


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
    assert s.warmup_stop == NEVER_STEADY and len(s.warmup_s) == 5


def test_noise_that_never_settles_ends_warm_up_at_its_time_cap_not_at_half_the_budget():
    # until 2026-11-27 a warm-up ended at half the time budget (2 s of a 4 s one), and slow training steps were
    # timed before they settled; now only the warm-up's own cap ends it, and the process says it never steadied
    clock = itertools.count(0.0, 1.0)
    noisy = itertools.cycle([1.0, 3.0])
    s = measure(lambda: next(noisy), _cfg(warmup=50, iterations=3, time_budget_s=4.0), clock=lambda: next(clock))
    assert s.warmup_stop == NEVER_STEADY and WARMUP_CAP_S - 1 <= len(s.warmup_s) <= WARMUP_CAP_S + 2
    assert len(s.timed_s) == MIN_STEADY_ITERATIONS


def test_ci_target_is_never_met_before_the_minimum_of_steady_iterations():
    # identical iterations: the range is zero at once, yet the process times its 10 (3 asked for: the floor wins)
    clock = itertools.count(0.0, 1.0)
    s = measure(lambda: 1.0, _cfg(iterations=3, time_budget_s=1000.0), clock=lambda: next(clock))
    assert s.timed_stop == "CI target met" and len(s.timed_s) == MIN_STEADY_ITERATIONS
    short = measure(lambda: 1.0, _cfg(iterations=3, time_budget_s=2.0), clock=lambda: next(clock))
    assert short.timed_stop == "CI target met" and len(short.timed_s) == MIN_STEADY_ITERATIONS


def test_a_slow_training_step_that_settles_late_is_timed_ten_times_once_steady():
    # last session's ResNet-50 training at batch 32: steps of ~4.5 s still climbing (6.5 -> 8.2 img/s, i.e. 4.9 s ->
    # 3.9 s) for their first iterations, a 4 s budget: 3 timed iterations then; now the warm-up waits for the steps
    # to settle and at least 10 of them are timed
    climbing = [4.9, 4.6, 4.4, 4.2, 4.0]
    step, clock = _slow_step(itertools.chain([12.0], climbing, itertools.cycle([3.9, 3.95, 3.85])))
    s = measure(step, _cfg(warmup=20, iterations=10, time_budget_s=4.0), clock=clock)
    assert s.warmup_stop == "steady" and len(s.timed_s) >= MIN_STEADY_ITERATIONS
    assert max(s.timed_s) <= 4.0 * 1.1  # no unsettled step among the timed ones
    assert s.warmup_s == [12.0, 4.9, 4.6, 4.4, 4.2]  # 4.6, 4.4, 4.2 is within 10% but a trend


def test_a_step_too_slow_for_ten_iterations_stops_at_the_timed_cap():
    step, clock = _slow_step(itertools.repeat(12.0))
    s = measure(step, _cfg(warmup=20, iterations=10, time_budget_s=4.0), clock=clock)
    assert s.timed_stop == "timed-loop cap" and len(s.timed_s) < MIN_STEADY_ITERATIONS
    assert sum(s.timed_s) <= TIMED_CAP_S + 2 * 12.0


def test_the_time_budget_counts_from_the_end_of_the_first_iteration():
    # a 5 s trace (the first iteration, start-up kept apart as first_iteration_s) then 0.5 s steps, a 4 s budget:
    # the budget counted from the start was spent by the trace alone, leaving the 3 steps of the steadiness window
    step, clock = _slow_step(itertools.chain([5.0], itertools.cycle([0.5, 0.52, 0.48])))
    s = measure(step, _cfg(warmup=3, iterations=3, time_budget_s=4.0, ci_target=0.001), clock=clock)
    # the minimum of 10 steps (5 s) outlasts the budget: the budget then ends the loop at once
    assert s.warmup_s == [5.0] and s.timed_stop == "time budget" and len(s.timed_s) == MIN_STEADY_ITERATIONS
    # with 8 s, the budget (counted from the end of the 5 s first iteration) holds just over 8 s of steps
    step, clock = _slow_step(itertools.chain([5.0], itertools.cycle([0.5, 0.52, 0.48])))
    longer = measure(step, _cfg(warmup=3, iterations=3, time_budget_s=8.0, ci_target=0.001), clock=clock)
    assert longer.warmup_s == [5.0] and longer.timed_stop == "time budget" and len(longer.timed_s) == 17


def test_a_process_that_measured_too_little_is_flagged_and_decides_nothing():
    from bench.measurement.flags import FLAG_SCOPE, depth_flags
    from bench.results.record import Samples
    from tests.synthetic import _record

    def rec(samples, protocol="adaptive"):
        r = _record(_cfg(protocol=protocol, time_budget_s=4.0))
        r.status, r.samples = "ok", samples
        return r

    short = rec(Samples(warmup_s=[9.0], timed_s=[3.0, 3.1, 3.0], warmup_stop="steady", timed_stop="time budget"))
    unsteady = rec(Samples(warmup_s=[9.0, 4.9, 4.6], timed_s=[4.4] * 10, warmup_stop=NEVER_STEADY,
                           timed_stop="time budget"))
    deep = rec(Samples(warmup_s=[9.0], timed_s=[3.0] * 10, warmup_stop="steady", timed_stop="time budget"))
    seed = rec(Samples(warmup_s=[1.0] * 2, timed_s=[1.0] * 3, warmup_stop="fixed count", timed_stop="fixed count"),
               protocol="seed")
    assert [f.name for f in depth_flags(short)] == ["short_process"]
    assert "timed 3 iterations, fewer than 10" in depth_flags(short)[0].reason
    assert [f.name for f in depth_flags(unsteady)] == ["unsteady"]
    assert depth_flags(deep) == [] and depth_flags(seed) == []  # fixed counts are the user's, not flagged
    # a pipeline run of 4 steps (the parallelism profile's) under the default protocol: a fixed count, not flagged
    pipeline = _record(make_config(framework="torch", model="resnet18", mode="training", batch_size=32,
                                   strategy="gpipe", workers=2, micro_batches=4))
    pipeline.status, pipeline.samples = "ok", Samples(warmup_s=[1.0], timed_s=[1.0] * 4,
                                                      warmup_stop="fixed count, the same on every rank",
                                                      timed_stop="fixed count, the same on every rank")
    assert depth_flags(pipeline) == []
    assert FLAG_SCOPE["short_process"] == FLAG_SCOPE["unsteady"] == "throughput"  # the config is not sound
