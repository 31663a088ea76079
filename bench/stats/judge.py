"""The statistics' one face: a `Judge` holds what every comparison is judged by, and judges.

What a comparison is judged by is set once, where the caller reads it (the report from its sweeps' manifests, the
plan from its profile, `bench compare` from its folders): the equivalence margin, the report's confidence and the
adaptive plan's stopping confidence. Every surface that says winner, small difference, equivalent or undecided asks
a `Judge` (page 1, findings, the sections, `bench compare`, the plan, the calibration), so no module carries a margin
of its own. Bound to a sweep's pooled spreads (`Judge.on`) it also gives each config's interval and each pair's
verdict from them, with one rule where a side is missing from the spreads.

The verdict words are bench/stats/verdicts.py's; this module decides nothing they do not.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Sequence
from dataclasses import dataclass

from .intervals import process_ratio
from .moderated import SweepSpreads
from .quantiles import t_quantile
from .verdicts import (
    DEFAULT_MARGIN,
    INTERIM_CONFIDENCE,
    UNDECIDED,
    Verdict,
    definition,
    equivalence_bounds,
    judge,
    short_definition,
    stopping_verdict,
)


@dataclass(frozen=True)
class Judge:
    """The rules of every comparison: the equivalence margin (+-margin on the log scale), the confidence of the
    report's intervals and the adaptive plan's stopping confidence (a Haybittle-Peto boundary)."""

    margin: float = DEFAULT_MARGIN
    confidence: float = 0.95
    stopping_confidence: float = INTERIM_CONFIDENCE

    def __post_init__(self) -> None:
        equivalence_bounds(self.margin)  # a margin outside (0, 1) is refused here, naming the value

    @classmethod
    def of_sweeps(cls, margins: Sequence[float | None]) -> Judge:
        """The report's judge: the newest sweep's margin that states one (`margins` oldest first), else the
        default."""
        stated = [m for m in margins if m is not None and not (isinstance(m, float) and math.isnan(m))]
        return cls(float(stated[-1]) if stated else DEFAULT_MARGIN)

    @property
    def band(self) -> tuple[float, float]:
        """The ratio interval that counts as equal within the margin."""
        return equivalence_bounds(self.margin)

    @property
    def within(self) -> str:
        """The margin as every sentence prints it: '+-5%'."""
        return f"+-{self.margin:.0%}"

    def t(self, df: float | None) -> float:
        """The t multiplier of an interval on `df` degrees of freedom at the report's confidence (what a sentence
        about how wide few processes make an interval quotes)."""
        return t_quantile(self.confidence, df)

    def verdict(self, ratio: float, ci_low: float | None, ci_high: float | None, n_a: int | None = None,
                n_b: int | None = None, df: float | None = None) -> Verdict:
        """The verdict of a ratio and its interval (bench/stats/verdicts.py: judge), with what would decide it where
        the processes per side are given."""
        return judge(ratio, ci_low, ci_high, self.margin, n_a, n_b, df)

    def undecided(self, ratio: float = math.nan, ci_low: float | None = None, ci_high: float | None = None,
                  extra_processes: int | None = None) -> Verdict:
        """An undecided verdict whatever the interval says (a side not sound, sweeps that disagree)."""
        return Verdict(UNDECIDED, ratio, ci_low, ci_high, self.margin, extra_processes)

    def stopping(self, v: Verdict, strict_low: float | None, strict_high: float | None) -> Verdict:
        """The plan's verdict at an interim look (bench/stats/verdicts.py: stopping_verdict)."""
        return stopping_verdict(v, strict_low, strict_high)

    def definition(self) -> str:
        return definition(self.margin)

    def short_definition(self) -> str:
        return short_definition(self.margin)

    def on(self, spreads: SweepSpreads) -> SpreadJudge:
        """This judge bound to a sweep's pooled spreads."""
        return SpreadJudge(self, spreads)


@dataclass(frozen=True)
class SpreadJudge:
    """A `Judge` bound to one sweep's pooled spreads (bench/stats/moderated.py): each key's interval and each pair's
    ratio and verdict from the moderated spreads."""

    rules: Judge
    spreads: SweepSpreads

    def interval(self, key: Hashable, confidence: float | None = None) -> dict:
        return self.spreads.interval(key, confidence or self.rules.confidence)

    def ratio(self, a: Hashable, b: Hashable, confidence: float | None = None, divisor: float = 1.0) -> dict:
        """(a / b) / divisor with its moderated interval (ratio None where a side has no value)."""
        return _divided(self.spreads.ratio(a, b, confidence or self.rules.confidence), divisor)

    def processes(self, key: Hashable) -> int:
        return len(self.spreads.values.get(key, []))

    def compare(self, a: Hashable, b: Hashable, divisor: float = 1.0) -> Verdict:
        """The verdict of (a / b) / divisor at the report's confidence; undecided without a ratio (a side with no
        value)."""
        return self._verdict(a, b, self.ratio(a, b, divisor=divisor))

    def _verdict(self, a: Hashable, b: Hashable, r: dict) -> Verdict:
        """The verdict of a / b's ratio `r` as computed (undecided without one)."""
        if r["ratio"] is None:
            return self.rules.undecided()
        return self.rules.verdict(r["ratio"], r["ci_low"], r["ci_high"], self.processes(a), self.processes(b),
                                  r.get("df"))

    def compare_to_stop(self, a: Hashable, b: Hashable, divisor: float = 1.0) -> tuple[Verdict, Verdict, dict]:
        """(the report's verdict, the plan's stopping verdict, the ratio at the stopping confidence) of
        (a / b) / divisor."""
        report = self.compare(a, b, divisor)
        strict = self.ratio(a, b, self.rules.stopping_confidence, divisor)
        return report, self.rules.stopping(report, strict["ci_low"], strict["ci_high"]), strict

    def compare_values(self, a: Hashable, b: Hashable, values_a: Sequence[float], values_b: Sequence[float],
                       divisor: float = 1.0) -> tuple[dict, Verdict]:
        """(ratio, verdict) of (a / b) / divisor, the one rule for a side the spreads do not hold (a config not
        sound is left out of them): with both sides in the spreads, the moderated ratio and its verdict; else the
        ratio of the sides' own values (`values_a`, `values_b`, with its Welch interval where each has two), shown
        but undecided, since a side that is not sound decides nothing."""
        if a in self.spreads.values and b in self.spreads.values:
            r = self.ratio(a, b, divisor=divisor)
            return r, self._verdict(a, b, r)
        r = _divided(process_ratio(values_a, values_b), divisor)
        return r, self.rules.undecided(r["ratio"], r["ci_low"], r["ci_high"])


def _divided(ratio: dict, divisor: float) -> dict:
    """A ratio's keys (ratio, ci_low, ci_high; None stays None) divided by `divisor`, the rest as they are."""
    return {**ratio, **{k: ratio[k] / divisor for k in ("ratio", "ci_low", "ci_high") if ratio[k] is not None}}
