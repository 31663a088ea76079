"""Every interval as every surface prints it (page 1, findings, the sections, `bench compare`, the terminal): one
printer for a ratio and its interval, one for a quantity and its interval.

A ratio prints with two decimals, or more (up to four) where two would print a bound that is not 1x as 1.00: a winner's
interval must be seen to exclude 1x ([1.004-1.012], not [1.00-1.01]), and a ratio prints at its interval's decimals
(a winner at 1.004x reads 1.004x, never 1.00x).
"""

from __future__ import annotations

import math

NO_INTERVAL = "no interval"


def _missing(v) -> bool:
    return v is None or (isinstance(v, float) and math.isnan(v))


def _digits(low: float, high: float, least: int = 2) -> int:
    """`least` decimals, or more (up to four) where `least` would print a bound that is not 1x as 1."""
    digits = least
    while digits < 4 and any(b != 1 and float(f"{b:.{digits}f}") == 1 for b in (low, high)):
        digits += 1
    return digits


def bounds(low: float, high: float, least: int = 2) -> str:
    """'[1.10-1.31]'."""
    d = _digits(low, high, least)
    return f"[{low:.{d}f}-{high:.{d}f}]"


def ratio_and_range(ratio, low, high, least: int = 2) -> tuple[str, str]:
    """('1.20x', '1.10-1.31') for a sentence that words the interval itself ('1.20x faster [95% CI 1.10-1.31]'); a
    ratio without an interval ('1.20x', ''), no ratio ('', '')."""
    if _missing(ratio):
        return "", ""
    if _missing(low) or _missing(high):
        return f"{ratio:.{least}f}x", ""
    d = _digits(low, high, least)
    return f"{ratio:.{d}f}x", f"{low:.{d}f}-{high:.{d}f}"


def ratio_interval(ratio, low, high, least: int = 2) -> str:
    """'1.20x [1.10-1.31]', or '1.20x [no interval]'."""
    number, span = ratio_and_range(ratio, low, high, least)
    return f"{number} [{span or NO_INTERVAL}]" if number else ""


def quantity(estimate, low, high, fmt: str, missing: str = "") -> str:
    """'12.3 [11.0-13.1]' (`fmt` the format of all three, e.g. '.1f' or '.0%'), or the estimate with `missing` where
    it has no interval ('' without an estimate)."""
    if _missing(estimate):
        return ""
    if _missing(low) or _missing(high):
        return f"{estimate:{fmt}}" + (f" {missing}" if missing else "")
    return f"{estimate:{fmt}} [{low:{fmt}}-{high:{fmt}}]"


def interval(low, high, fmt: str) -> str:
    """'[11.0-13.1]', or '[no interval]'."""
    return f"[{NO_INTERVAL}]" if _missing(low) or _missing(high) else f"[{low:{fmt}}-{high:{fmt}}]"
