"""The four verdicts every surface uses (answer table, findings, `bench compare`, details), defined once.

A comparison of A and B is a ratio (speed-up) with an interval, judged against an equivalence margin m (default
+-5%, symmetric on the log scale: the band [1/(1+m), 1+m]). Its verdict is one of:

- **winner**: the whole interval lies beyond the band (its lower bound above 1 + m, or its upper bound below
  1/(1+m)): one side is faster by more than the margin, a difference that matters;
- **small difference**: the interval excludes 1x and lies inside the band: one side is faster, by less than the
  margin;
- **equivalent**: the interval includes 1x and lies inside the band: equal within the margin (the logic of two
  one-sided tests, Schuirmann 1987);
- **undecided**: anything else. An interval that excludes 1x but reaches past the band is "faster, the size not yet
  known to matter", never a headline; "no difference shown" is not "equal". The verdict says how many more
  processes a side would likely decide it.

The first three are decided. A winner is never also inside the band, so the four never overlap.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from .printed import ratio_interval
from .quantiles import t_quantile

WINNER, SMALL, EQUIVALENT, UNDECIDED = "winner", "small difference", "equivalent", "undecided"
VERDICTS = (WINNER, SMALL, EQUIVALENT, UNDECIDED)
DECIDED = (WINNER, SMALL, EQUIVALENT)
DEFAULT_MARGIN = 0.05
# Beyond this many more processes a side, a row is "not decidable at this spread" rather than a count.
MAX_EXTRA_PROCESSES = 40


@dataclass(frozen=True)
class Verdict:
    """One comparison's verdict: the word, the ratio and interval it rests on, the margin, and what would decide it."""

    word: str
    ratio: float
    ci_low: float | None
    ci_high: float | None
    margin: float
    extra_processes: int | None = None  # undecided only: more processes a side that would likely decide it

    @property
    def decided(self) -> bool:
        return self.word != UNDECIDED

    @property
    def direction_shown(self) -> bool:
        """An undecided interval that excludes 1x: which side is faster is shown, not whether by more than the
        margin."""
        return self.word == UNDECIDED and self.ci_low is not None and (self.ci_low > 1 or self.ci_high < 1)

    def interval(self) -> str:
        return ratio_interval(self.ratio, self.ci_low, self.ci_high) or f"{self.ratio:.2f}x [no interval]"

    def to_decide(self) -> str:
        """What would decide an undecided row, in words ('' when decided)."""
        if self.decided:
            return ""
        if self.ci_low is None:
            return "needs two or more processes a side for an interval"
        if self.direction_shown:
            more = (f"about {self.extra_processes} more process{'es' if self.extra_processes != 1 else ''} a side "
                    f"would likely decide it" if self.extra_processes is not None else
                    undecidable(self.ratio, self.margin))
            return f"faster one shown, not yet whether by more than +-{self.margin:.0%}; {more}"
        if self.extra_processes is None:
            return undecidable(self.ratio, self.margin)
        return f"about {self.extra_processes} more process{'es' if self.extra_processes != 1 else ''} a side " \
               f"would likely decide it"


# What an undecided interval supports, counted on page 1 beside the four outcomes: a direction (the interval excludes
# 1x: which side is faster, and by how much at least and at most) or a bound (it holds 1x: how far apart at most).
DIRECTION, BOUND = "direction shown", "bounded"
PLURALS = {WINNER: "winners", SMALL: "small differences"}


def verdict_count(n: int, word: str) -> str:
    """'1 winner', '2 winners', '3 equivalent', '2 undecided': a verdict with its count."""
    return f"{n} {PLURALS.get(word, word) if n != 1 else word}"


def _percent(x: float) -> str:
    """A share as page 1 prints a range: whole percents, one decimal under 1% (a bound of 0% says nothing)."""
    return f"{x * 100:.0f}" if x >= 0.01 else f"{x * 100:.1f}"


def support_kind(ci_low: float | None, ci_high: float | None) -> str | None:
    """DIRECTION where the interval excludes 1x, BOUND where it holds it, None without an interval."""
    if ci_low is None or ci_high is None or ci_low != ci_low or ci_high != ci_high:
        return None
    return DIRECTION if ci_low > 1 or ci_high < 1 else BOUND


def supported(ci_low: float | None, ci_high: float | None, above: str, below: str) -> str:
    """What a ratio's interval supports, in words, for a row that does not decide: 'torch 1-9% faster' (the interval
    lies above 1x: `above`, the ratio's numerator, is faster; below 1x: `below`), or 'at most 11% apart' (it holds 1x:
    the larger of its two distances from 1x, each side's own way up); '' without an interval. Never names a fastest
    where the interval does not show one."""
    kind = support_kind(ci_low, ci_high)
    if kind is None:
        return ""
    if kind == DIRECTION:
        low, high, who = ((ci_low, ci_high, above) if ci_low > 1 else
                          (1 / ci_high, 1 / ci_low if ci_low > 0 else math.inf, below))
        top = "?" if high == math.inf else _percent(high - 1)
        return f"{who} {_percent(low - 1)}-{top}% faster"
    apart = max(ci_high - 1, 1 / ci_low - 1) if ci_low > 0 else math.inf
    return "no bound on the difference" if apart == math.inf else f"at most {_percent(apart)}% apart"


# An estimate within this distance (on the log scale) of the margin's edge is "on the margin": whichever side of the
# edge the truth lies, no practical number of processes moves its interval off the edge.
ON_MARGIN = 0.01


def on_the_margin(ratio: float, margin: float) -> bool:
    return ratio > 0 and abs(abs(math.log(ratio)) - math.log(1 + margin)) < ON_MARGIN


def undecidable(ratio: float, margin: float) -> str:
    """Why more processes would not decide a comparison, in words: its estimate sits on the margin's edge, or its
    spread is too wide for the processes a sweep can add."""
    if on_the_margin(ratio, margin):
        return (f"on the margin: its estimate ({ratio:.3f}x) sits at the +-{margin:.0%} edge, where no practical "
                "number of processes decides it")
    return f"too noisy: more than {MAX_EXTRA_PROCESSES} more processes a side would be needed at this spread"


def phrase(word: str, direction: str = "", detail: str = "") -> str:
    """A verdict as every table cell and sentence prints it: the word first, then which side where it has one, then
    any detail in parentheses ('winner: B faster (1.20x)', 'winner: linear scaling faster', 'equivalent: linear (within
    +-5%)', 'undecided (about 3 more processes a side would likely decide it)'). No surface prints a verdict any
    other way ('below linear (winner)', 'slower 0.67x')."""
    if word not in VERDICTS:
        raise ValueError(f"{word!r} is not a verdict: one of {', '.join(VERDICTS)}")
    return word + (f": {direction}" if direction else "") + (f" ({detail})" if detail else "")


def said(v: Verdict, above: str, below: str, same: str, detail: str = "") -> str:
    """A verdict said with its direction: a winner `above` or `below` 1x by which side its interval lies, equivalent
    as `same` within the margin, undecided with what would decide it (`detail` first where given)."""
    if v.word == WINNER:
        return phrase(WINNER, above if v.ci_low > 1 else below, detail)
    if v.word == SMALL:
        return phrase(SMALL, above if v.ci_low > 1 else below,
                      "; ".join(filter(None, [detail, f"within +-{v.margin:.0%}"])))
    if v.word == EQUIVALENT:
        return phrase(EQUIVALENT, same, "; ".join(filter(None, [detail, f"within +-{v.margin:.0%}"])))
    return phrase(UNDECIDED, detail="; ".join(filter(None, [detail, v.to_decide()])))


# The adaptive plan's interim looks: a comparison stops getting processes as a winner only when its interval at this
# confidence excludes 1x (a Haybittle-Peto boundary). Stopping at the first 95% interval that excludes 1x looks
# several times at the same comparison (optional stopping): on this VM's own residuals, 2 processes a side growing to
# 6 called 14% of equal pairs a winner (bench/stats/power.py: adaptive_plan). The report's verdict stays the 95% one.
INTERIM_CONFIDENCE = 0.999


def stopping_verdict(v: Verdict, strict_low: float | None, strict_high: float | None) -> Verdict:
    """The adaptive plan's verdict at an interim look: `v` (the report's, at 95%) unless it is a winner whose
    interval at INTERIM_CONFIDENCE (strict_low, strict_high) still reaches into the margin's band: then undecided,
    so the comparison gets more processes. A small difference and equivalence stop at once (they make no winner)."""
    lo_eq, hi_eq = equivalence_bounds(v.margin)
    if v.word != WINNER or strict_low is None or strict_low > hi_eq or strict_high < lo_eq:
        return v
    return Verdict(UNDECIDED, v.ratio, v.ci_low, v.ci_high, v.margin, v.extra_processes)


def equivalence_bounds(margin: float) -> tuple[float, float]:
    """The ratio interval that counts as equal within `margin` (symmetric on the log scale)."""
    if not 0 < margin < 1:
        raise ValueError(f"equivalence margin {margin!r} must lie in (0, 1), e.g. 0.05 for +-5%")
    return 1 / (1 + margin), 1 + margin


def judge(ratio: float, ci_low: float | None, ci_high: float | None, margin: float = DEFAULT_MARGIN,
          n_a: int | None = None, n_b: int | None = None, df: float | None = None) -> Verdict:
    """The verdict of a ratio and its interval at `margin`; with the processes per side (n_a, n_b), an undecided
    verdict carries how many more processes a side would likely decide it (with `df`, the interval's degrees of
    freedom, the t quantile's fall as processes are added is counted too)."""
    lo_eq, hi_eq = equivalence_bounds(margin)
    if ci_low is None or ci_high is None:
        return Verdict(UNDECIDED, ratio, None, None, margin)
    if ci_low > hi_eq or ci_high < lo_eq:
        return Verdict(WINNER, ratio, ci_low, ci_high, margin)
    if ci_low >= lo_eq and ci_high <= hi_eq:
        return Verdict(SMALL if ci_low > 1 or ci_high < 1 else EQUIVALENT, ratio, ci_low, ci_high, margin)
    extra = extra_processes(ratio, ci_low, ci_high, margin, n_a, n_b, df) if n_a and n_b else None
    return Verdict(UNDECIDED, ratio, ci_low, ci_high, margin, extra)


def extra_processes(ratio: float, ci_low: float, ci_high: float, margin: float, n_a: int, n_b: int,
                    df: float | None = None) -> int | None:
    """More processes per side that would likely decide an undecided comparison, if the ratio and the spread stay
    as measured: the half-width on the log scale shrinks as 1/sqrt(n) (n the harmonic mean of the sides) and, given
    the interval's degrees of freedom `df`, as its t quantile falls (each process a side adds about two); a winner
    needs it below |log ratio| - log(1 + margin), a verdict inside the band below log(1 + margin) - |log ratio|.
    None when neither is reached within MAX_EXTRA_PROCESSES more a side (a ratio right at 1 +- margin is never
    decided by more data)."""
    half = (math.log(ci_high) - math.log(ci_low)) / 2
    if half <= 0:
        return 0
    n = 2 / (1 / n_a + 1 / n_b)
    effect = abs(math.log(ratio))
    band = math.log(1 + margin)
    targets = [t for t in (effect - band, band - effect) if t > 0]
    if not targets:
        return None
    t_now = t_quantile(0.95, df)
    for more in range(1, MAX_EXTRA_PROCESSES + 1):
        shrink = math.sqrt(n / (n + more)) * (t_quantile(0.95, df + 2 * more) / t_now if df else 1.0)
        if half * shrink < max(targets):
            return more
    return None


def definition(margin: float = DEFAULT_MARGIN) -> str:
    """The one paragraph that defines the verdicts, for the methodology, page 1's footnote and the README."""
    lo, hi = equivalence_bounds(margin)
    return (f"Every comparison is a speed-up with a 95% interval, judged against the band [{lo:.3f}x, {hi:.3f}x] "
            f"(+-{margin:.0%}): **winner** (the interval lies beyond the band: a difference that matters), **small "
            f"difference** (it excludes 1x inside the band), **equivalent** (it holds 1x inside the band) or "
            f"**undecided** (anything else; the row says how many more processes, or sweeps, would likely decide "
            f"it).")


def short_definition(margin: float = DEFAULT_MARGIN) -> str:
    """The verdicts in one sentence, for page 1 (the methodology carries `definition`)."""
    return (f"**winner**: the interval lies beyond +-{margin:.0%}; **small difference**: it excludes 1x within it; "
            f"**equivalent**: it holds 1x within it; **undecided**: else (*to decide*: more processes, or sweeps).")
