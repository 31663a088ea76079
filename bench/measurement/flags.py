"""Sanity guards on one run: named flags with reasons, shown next to a number and never a finding.

Cross-run guards (a jump across batch sizes, training cheaper than inference, a jittery repetition)
need several records and live in bench/report/soundness.py; the rules they share are here.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..host.interference import interference_reasons
from ..results.record import Certificate, Flag, Record

# A utilisation above the measured peak means the peak or the throughput is wrong.
UTILISATION_LIMIT = 1.0
# The instrumented phases of one step must add up to the headline step time within this share.
PHASE_SUM_TOLERANCE = 0.25

# What a flag makes unusable: the run's throughput (and so every finding built on it), or only
# the derived figure it names (its utilisation, its phase breakdown).
FLAG_SCOPE = {
    "disturbed": "throughput",
    "cv_outlier": "throughput",
    "batch_jump": "throughput",
    "training_cheaper_than_inference": "throughput",
    "too_few_processes": "throughput",
    "utilisation_over_peak": "utilisation",
    "phase_sum_mismatch": "phases",
    # distributed runs (bench/runs/distributed/record.py)
    "no_emulated_link": "throughput",
    "ranks_disagree": "throughput",
    "weights_unchanged": "throughput",
    # the run's fairness certificate (bench/measurement/certificate.py) has a failed check
    "certificate_failed": "throughput",
}


def flag(name: str, reason: str) -> Flag:
    if name not in FLAG_SCOPE:
        raise ValueError(f"unknown flag {name!r}; valid: {', '.join(FLAG_SCOPE)}")
    return Flag(name=name, reason=reason)


def utilisation_flag(utilisation: float | None) -> Flag | None:
    if utilisation is not None and utilisation > UTILISATION_LIMIT:
        return flag("utilisation_over_peak",
                    f"utilisation {utilisation:.0%} exceeds the measured peak: the peak or the timing is wrong")
    return None


def phase_sum_flag(phases_median_ms: dict | None, step_ms: float | None) -> Flag | None:
    """The phases' medians must add up to the headline median step time within the tolerance."""
    if not phases_median_ms or not step_ms:
        return None
    total = sum(phases_median_ms.values())
    off = total / step_ms - 1
    if abs(off) > PHASE_SUM_TOLERANCE:
        return flag("phase_sum_mismatch",
                    f"phases add up to {total:.1f} ms against a {step_ms:.1f} ms headline step "
                    f"({off:+.0%}; tolerance {PHASE_SUM_TOLERANCE:.0%})")
    return None


def run_flags(record: Record | Mapping[str, Any]) -> list[Flag]:
    """Every flag one record earns on its own (a record held as JSON is read as one, unchecked)."""
    if not isinstance(record, Record):
        record = Record.from_json(record, check=False)
    interference = record.interference.to_json() if record.interference else None
    out = [flag("disturbed", r) for r in interference_reasons(interference)]
    phases = record.phases.median_ms if record.phases else None
    step = record.summary.latency_ms_median if record.summary else None
    out += [f for f in (utilisation_flag(record.utilisation), phase_sum_flag(phases, step)) if f]
    return out + certificate_flags(record.fairness)


def certificate_flags(fairness: Certificate | None) -> list[Flag]:
    """A failed fairness check makes the run's number unusable: the work measured was not the same."""
    failed = fairness.failed if fairness else []
    out = []
    if "weights_changed" in failed:
        out.append(flag("weights_unchanged", "the trainable weights were identical before and after the timed "
                                             "training loop: the step did not update the model"))
    rest = [c for c in failed if c != "weights_changed"]
    if rest:
        out.append(flag("certificate_failed", "fairness check(s) failed: " + ", ".join(rest)))
    return out
