"""`bench compare`'s shared shift (bench/stats/drift.py): the machine's drift apart from a config's own change."""

import math

import numpy as np

from bench.stats.drift import common_shift, own_change, se_from_interval
from bench.stats.verdicts import WINNER, judge


def _ratios(shift: float, configs: int = 20, se: float = 0.03, seed: int = 0, outlier: float = 0.0):
    rng = np.random.default_rng(seed)
    y = rng.normal(math.log(shift), se, configs)
    y[0] += math.log1p(outlier)
    return list(y), [se] * configs


def test_a_machine_wide_drift_is_one_shift_not_many_regressions():
    y, ses = _ratios(0.85)
    shift = common_shift(y, ses)
    assert shift.shown and shift.ci_low < 0.85 < shift.ci_high and "B slower" in shift.text()
    # each config's own change beyond the shift: rarely a winner (only chance)
    own = [judge(*own_change(yi, s, 30, shift, ses)).word for yi, s in zip(y, ses)]
    raw = [judge(math.exp(yi), math.exp(yi - 2.04 * s), math.exp(yi + 2.04 * s)).word for yi, s in zip(y, ses)]
    assert own.count(WINNER) <= 2 < raw.count(WINNER)


def test_a_config_that_changed_beyond_the_shift_is_called():
    y, ses = _ratios(1.0, outlier=0.25)
    shift = common_shift(y, ses)
    ratio, lo, hi = own_change(y[0], ses[0], 30, shift, ses)
    assert lo > 1.1 and judge(ratio, lo, hi).word == WINNER


def test_too_few_configs_give_no_shift_and_the_se_round_trips():
    assert common_shift([0.1, 0.2], [0.01, 0.01]) is None
    se = se_from_interval(math.exp(-0.1), math.exp(0.1), 1e6)
    assert math.isclose(se, 0.1 / 1.959964, rel_tol=1e-4)
