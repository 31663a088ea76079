"""The statistics' one face (bench/stats/judge.py): the margin travels inside a Judge, and one rule judges a side
that the sweep's spreads do not hold."""

import pandas as pd
import pytest

from bench.report import parallelism
from bench.stats.judge import Judge
from bench.stats.moderated import SweepSpreads
from bench.stats.verdicts import EQUIVALENT, UNDECIDED, WINNER

# two configs 20% apart, each with a tight spread, and a third alike one for the prior
FAST, SLOW, OTHER = [12.0, 12.1, 11.9, 12.05], [10.0, 10.1, 9.9, 10.05], [8.0, 8.1, 7.95, 8.02]


def test_a_judge_refuses_a_margin_outside_its_range_naming_it():
    with pytest.raises(ValueError, match="1.5"):
        Judge(1.5)


def test_the_reports_judge_is_the_newest_sweep_that_states_a_margin():
    assert Judge.of_sweeps([0.05, None, 0.1, float("nan")]).margin == 0.1
    assert Judge.of_sweeps([]).margin == Judge().margin


def test_the_margin_decides_what_a_judge_calls_equivalent():
    assert Judge(0.05).verdict(1.01, 0.94, 1.04).word == UNDECIDED
    assert Judge(0.10).verdict(1.01, 0.94, 1.04).word == EQUIVALENT
    assert Judge(0.02).within == "+-2%"


def test_a_bound_judge_compares_from_the_sweeps_spreads_and_divides_by_the_divisor():
    on = Judge().on(SweepSpreads({"a": FAST, "b": SLOW, "c": OTHER}))
    v = on.compare("a", "b")
    assert v.word == WINNER and v.ratio == pytest.approx(1.2, rel=0.01)
    halved = on.compare("a", "b", divisor=1.2)
    assert halved.ratio == pytest.approx(1.0, abs=0.01) and halved.word != WINNER
    report, stop, strict = on.compare_to_stop("a", "b")
    assert report == v and strict["ci_low"] < v.ci_low  # the stopping interval is the wider one
    assert on.compare("a", "missing").word == UNDECIDED


def test_a_side_the_spreads_do_not_hold_is_shown_and_undecided_however_far_apart():
    on = Judge().on(SweepSpreads({"a": FAST, "c": OTHER}))  # b not sound: left out of the spreads
    ratio, v = on.compare_values("a", "b", FAST, SLOW)
    assert ratio["ratio"] == pytest.approx(1.2, rel=0.01) and ratio["ci_low"] > 1.1
    assert v.word == UNDECIDED


def test_a_pipeline_against_a_data_parallel_baseline_not_sound_is_undecided():
    """The parallelism table judged such a row from the sides' own values (a winner here), while the scaling section
    said undecided for the same rule; both now follow the Judge's one rule."""
    row = pd.Series({"config_key": "pipe", "values": FAST, "strategy": "gpipe", "workers": 2, "model": "m",
                     "image_size": 32, "link": "loopback", "global_batch": 32, "processes": 4,
                     "images_per_sec": 12.0, "ci_low": 11.9, "ci_high": 12.1, "efficiency": None,
                     "efficiency_flags": [], "eff_why": "no 1-worker run", "flag_reasons": []})
    dp = pd.DataFrame([{"config_key": "dp", "values": SLOW}])
    on = Judge().on(SweepSpreads({"pipe": FAST, "c": OTHER}))  # the data-parallel run is not sound
    out = parallelism._row(row, {}, dp, on)
    assert out["verdict_vs_dp"].startswith(UNDECIDED)
    sound = parallelism._row(row, {}, dp, Judge().on(SweepSpreads({"pipe": FAST, "dp": SLOW, "c": OTHER})))
    assert sound["verdict_vs_dp"].startswith(WINNER)
