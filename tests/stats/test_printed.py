"""One interval printer for every surface (bench/stats/printed.py)."""

import math

from bench.stats.printed import bounds, quantity, ratio_and_range, ratio_interval


def test_a_bound_that_is_not_one_never_prints_as_one():
    assert ratio_interval(1.2, 1.1, 1.31) == "1.20x [1.10-1.31]"
    assert ratio_interval(1.008, 1.004, 1.012) == "1.008x [1.004-1.012]"  # not "1.01x [1.00-1.01]"
    assert bounds(0.9996, 1.2) == "[0.9996-1.2000]"
    assert ratio_and_range(1.5, 1.4, 1.6, least=3) == ("1.500x", "1.400-1.600")


def test_a_missing_interval_or_number_is_said_not_printed_as_nan():
    assert ratio_and_range(1.2, None, None) == ("1.20x", "")
    assert ratio_and_range(math.nan, 1.0, 1.1) == ("", "")
    assert ratio_interval(1.2, math.nan, math.nan) == "1.20x [no interval]"
    assert quantity(12.34, 11.0, 13.0, ".1f") == "12.3 [11.0-13.0]"
    assert quantity(0.81, None, None, ".0%", "(no CI)") == "81% (no CI)"
    assert quantity(None, 1.0, 2.0, ".1f") == ""
