"""A pair of configs judged: the ratio from the statistics room (bench/stats/config_intervals.py), the verdict from
the report's `Judge`, and the report's own rules on top: a side not measured soundly is undecided whatever its
interval, and a winner over several sweeps must point the same way in each.

Every table, finding and comparison of configs calls `compare_pair` (or `pair_ratio` and `pair_verdict`), and
nothing here computes an interval.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ...stats.config_intervals import pair_ratio, welch_ratio
from ...stats.judge import Judge
from ...stats.sweep_level import sweeps_disagree
from ...stats.verdicts import EQUIVALENT, SMALL, WINNER, Verdict
from .judgement import unsound_reason

UNRELIABLE = "not measured reliably"


def unsound_sides(a: Mapping[str, Any], b: Mapping[str, Any], names: tuple[str, str] | None = None,
                  sep: str = "; ") -> str | None:
    """Why no verdict but 'undecided' may be stated (a side not sound), or None."""
    names = names or (a["series"], b["series"])
    bad = [f"{n}: {unsound_reason(x['flag_list'])}" for n, x in zip(names, (a, b)) if not x["sound"]]
    return f"{UNRELIABLE} (" + sep.join(bad) + ")" if bad else None


SWEEPS_DISAGREE = "the sweeps point different ways"
SWEEPS_DIFFER = "a side's sweeps differ beyond the others'"


def pair_verdict(a: Mapping[str, Any], b: Mapping[str, Any], ratio: dict, judge: Judge,
                 names: tuple[str, str] | None = None, sep: str = "; ") -> tuple[Verdict, str]:
    """The verdict of a/b and the reason it reads with: a side not sound is undecided whatever its interval; over
    several sweeps a winner must be faster in each sweep both measured, and where a side's sweeps differ more
    sweeps, not more processes, would decide it."""
    unsound = unsound_sides(a, b, names, sep)
    if unsound:
        return judge.undecided(ratio["ratio"], ratio["ci_low"], ratio["ci_high"]), unsound
    v = judge.verdict(ratio["ratio"], ratio["ci_low"], ratio["ci_high"], len(a["process_ips"]),
                      len(b["process_ips"]), ratio.get("df"))
    per_sweep = ratio.get("sweep_ratios") or []
    if v.word in (WINNER, SMALL) and sweeps_disagree(per_sweep):
        each = ", ".join(f"{r:.3f}x" for r in per_sweep)
        return (judge.undecided(v.ratio, v.ci_low, v.ci_high),
                f"{SWEEPS_DISAGREE} ({each} in its {len(per_sweep)} sweeps): more sweeps would decide it")
    if v.word == WINNER:
        return v, ""
    if v.word == SMALL:
        return v, f"faster by less than {judge.within}"
    if v.word == EQUIVALENT:
        return v, f"equal within {judge.within}"
    if ratio.get("sweeps_differ"):
        return (judge.undecided(v.ratio, v.ci_low, v.ci_high),
                f"{SWEEPS_DIFFER}: its interval holds in every sweep (the union of theirs); more sweeps, not more "
                "processes, would decide it")
    return v, v.to_decide()


def more_sweeps(reason: str) -> str:
    """'' or what page 1's *to decide* says where only more sweeps would decide a row."""
    for cause in (SWEEPS_DISAGREE, SWEEPS_DIFFER):
        if reason.startswith(cause):
            return f"more sweeps ({cause})"
    return ""


def compare_pair(a: Mapping[str, Any], b: Mapping[str, Any], judge: Judge) -> dict:
    """Verdict on two configs' rows: which is faster, by how much (always >= 1x), with the interval; the verdict
    (winner, equivalent or undecided), its reason, and the Welch interval of the configs' own spreads."""
    r = pair_ratio(a, b)
    v, reason = pair_verdict(a, b, r, judge)
    out = {"a": a["series"], "b": b["series"], "ratio_a_over_b": r["ratio"], "ci_low": r["ci_low"],
           "ci_high": r["ci_high"]}
    faster, slower, ratio, lo, hi = a, b, r["ratio"], r["ci_low"], r["ci_high"]
    own = welch_ratio(a, b)
    own_lo, own_hi = own["ci_low"], own["ci_high"]
    if ratio < 1:
        faster, slower, ratio = b, a, 1 / ratio
        lo, hi = (None, None) if lo is None else (1 / hi, 1 / lo)
        own_lo, own_hi = (None, None) if own_lo is None else (1 / own_hi, 1 / own_lo)
    out.update(faster=faster["series"], slower=slower["series"], speedup=ratio, speedup_ci_low=lo,
               speedup_ci_high=hi, welch_ci_low=own_lo, welch_ci_high=own_hi, verdict=v.word,
               reason=f"{faster['series']} {reason}" if v.word == SMALL else reason or f"{faster['series']} faster",
               winner=v.word == WINNER, small=v.word == SMALL, equivalent=v.word == EQUIVALENT,
               extra_processes=v.extra_processes, margin=judge.margin, pooled=bool(r.get("pooled")),
               more_sweeps=more_sweeps(reason))
    return out
