"""Sanity guards on one run: named flags with reasons, shown next to a number and never a finding.

Cross-run guards (a jump across batch sizes, training cheaper than inference, a jittery repetition)
need several records and live in bench/report/estimates/; the rules they share are here.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ..host.interference import (
    CV_FLOOR,
    CV_OUTLIER_FACTOR,
    MIN_FAMILY,
    MIN_WINDOW_S,
    OTHER_CPU_LIMIT,
    STEAL_LIMIT,
    interference_reasons,
)
from ..results.record import Certificate, Flag, Record
from .agreement import COSINE_MIN, SQNR_MIN_DB, judged, outputs_judged
from .loop import (
    MIN_STEADY_ITERATIONS,
    NEVER_STEADY,
    STEADY_WINDOW,
    TIMED_CAP_S,
    WARMUP_CAP_S,
    WARMUP_TOLERANCE,
)
from .spells import SPELL_LIMIT

# A utilisation above this machine's best measured GEMM is plausible, not an error: an engine may need fewer arithmetic
# operations than the model's FLOP count (Winograd or FFT convolutions): it is marked, the throughput stands.
UTILISATION_LIMIT = 1.0
# Weak-scaling efficiency above 100% by more than this (workers sharing one machine cannot beat N x one worker
# with all of it; the slack is for timing noise) means the 1-worker baseline or the timing is wrong.
EFFICIENCY_TOLERANCE = 0.05
# Training's backward does about twice the forward's work; a forward longer than its backward by more than this
# share means the phases were timed wrongly (a clock read before the device finished, say).
FORWARD_BACKWARD_TOLERANCE = 0.10
# The instrumented phases of one step must add up to the headline step time within this share.
PHASE_SUM_TOLERANCE = 0.25

# A larger batch's throughput may fall (memory, cache), but not by more than this share beyond its CIs.
BATCH_DROP_LIMIT = 1 / 3
# A config is sound (usable for a finding) with at least this many clean processes and no flag on its throughput.
MIN_PROCESSES = 2


@dataclass(frozen=True)
class Rule:
    """A flag's rule: its name, what it makes unusable (`scope`: the run's throughput, and so every finding built on
    it, or only the derived figure it names), the methodology's sentence stating it (None: not stated there yet),
    whether it guards an impossible number (shown as "n/a (reason)", never as a number), and, for a throughput flag,
    why it leaves a comparison without a winner (the answer table's footnote)."""

    name: str
    scope: str
    sentence: str | None = None
    impossible: bool = False
    why_no_winner: str | None = None

    def methodology_line(self) -> str:
        return f"- *{self.name}*: {self.sentence}."


# A GEMM peak whose trials spread more than this was measured while other work ran (quiet here: 3-8%; on a busy
# machine 30-42%): a utilisation against it would be a number nobody should believe, so none is given.
PEAK_SPREAD_LIMIT = 0.15


RULES: tuple[Rule, ...] = (
    Rule("disturbed", "throughput",
         f"other processes used more than {OTHER_CPU_LIMIT:.0%} of the CPUs, or steal exceeded {STEAL_LIMIT:.0%} "
         f"(judged on timed loops of at least {MIN_WINDOW_S:g} s); retried at the end of the sweep, and kept but "
         "flagged if still disturbed",
         why_no_winner=f"disturbed: fewer than {MIN_PROCESSES} clean processes, because other work on the machine took "
                       "CPU time while they were timed (the disturbed processes are listed in details)"),
    Rule("slow_spell", "throughput",
         f"the sweep's speed reference (a fixed ResNet-18 step, read at the start, between comparison groups and at "
         f"the end) ran more than {SPELL_LIMIT:.0%} slower than its median both just before and just after the "
         "process: the machine was slow then, whatever other processes' CPU share and steal said",
         why_no_winner="processes run in a slow spell of the machine (its speed reference read slow)"),
    Rule("cv_outlier", "throughput",
         f"iteration-time CV above {CV_OUTLIER_FACTOR:g}x the median of the config's other repetitions (and above "
         f"{CV_FLOOR:.0%}); with fewer than two of them, {CV_OUTLIER_FACTOR:g}x the median of its framework, "
         f"mode and precision's other processes (at least {MIN_FAMILY}) and {CV_OUTLIER_FACTOR:g}x its one sibling's "
         "where it has one (two that jitter alike are the config's own jitter): one rule for every process, a lone "
         "repetition included",
         why_no_winner="a process far jitterier than its repetitions"),
    Rule("utilisation_over_peak", "utilisation",
         f"above {UTILISATION_LIMIT:.0%} of the peak: plausible, not an error (\"faster than this machine's best "
         "GEMM\": an engine may need fewer operations, e.g. Winograd); the throughput stays a finding"),
    Rule("phase_sum_mismatch", "phases",
         f"instrumented phases that differ from the headline step by more than {PHASE_SUM_TOLERANCE:.0%} (blocks the "
         "phase breakdown)"),
    Rule("batch_jump", "throughput",
         f"a larger batch taking less time per iteration than a smaller one, or throughput falling by more than "
         f"{BATCH_DROP_LIMIT:.0%} between neighbouring batch sizes, beyond the CIs",
         why_no_winner="throughput jumps across neighbouring batch sizes beyond the intervals"),
    Rule("training_cheaper_than_inference", "throughput",
         "training images/s above inference images/s beyond the CIs",
         why_no_winner="training measured faster than inference beyond the intervals"),
    Rule("unsteady", "throughput",
         f"an adaptive process whose warm-up never reached {STEADY_WINDOW} consecutive iterations within "
         f"{WARMUP_TOLERANCE:.0%} of their median (by its warm-up cap, or {WARMUP_CAP_S:g} s): its steps never settled",
         why_no_winner="a process whose steps never settled"),
    Rule("short_process", "throughput",
         f"an adaptive process that timed fewer than {MIN_STEADY_ITERATIONS} iterations after its warm-up (its timed "
         f"loop stops at {TIMED_CAP_S:g} s): too few steady steps to stand for the config",
         why_no_winner=f"a process that timed fewer than {MIN_STEADY_ITERATIONS} steady iterations"),
    Rule("too_few_processes", "throughput",
         f"fewer than {MIN_PROCESSES} processes, so the between-process spread is unknown",
         why_no_winner=f"fewer than {MIN_PROCESSES} processes: the spread between processes is unknown"),
    # the rules below have no sentence in the methodology yet (its text predates them; the reason each flag carries
    # says what happened): a sentence here lists it among the guards
    Rule("peak_unsteady", "utilisation",
         f"no steady matrix-multiply peak in the config's sweeps: each one measured (at the start and at the end) had "
         f"trials spread more than {PEAK_SPREAD_LIMIT:.0%}, so no utilisation is given; where one is steady, the "
         "utilisation uses the best steady one and nothing is flagged"),
    # a config whose processes form two groups (bench/stats/mixtures.py): its interval is its own processes', never
    # the sweep's borrowed spread; its number stands (a finding may rest on it), said beside it in the details
    Rule("two_groups", "spread",
         "a config whose processes form two groups (a gap between neighbouring processes beyond 3 SDs of the sweep's "
         "between-process spread): its interval is its own processes', never a borrowed narrow one"),
    # the impossible-number guards: the scaling table, the findings, the figures and the methodology all read these
    Rule("efficiency_over_100", "efficiency",
         f"weak-scaling efficiency above {1 + EFFICIENCY_TOLERANCE:.0%} (100% plus {EFFICIENCY_TOLERANCE:.0%} for "
         "timing noise): N workers sharing one machine cannot beat N x one worker with all of it, so the baseline or "
         "the timing is wrong", impossible=True),
    Rule("disturbed_baseline", "ratio",
         "a ratio (scaling efficiency, communication cost, the no-communication ceiling) whose baseline config "
         "(1 worker, or the independent run at the same N) is not sound", impossible=True),
    Rule("forward_over_backward", "phases",
         f"a training forward longer than its backward by more than {FORWARD_BACKWARD_TOLERANCE:.0%} (backward does "
         "about twice the forward's work): the phases were timed wrongly", impossible=True),
    # a run's communication the link's fit cannot predict (bench/report/scaling.py: predictions)
    Rule("link_fit_backend", "ratio"),
    # distributed runs (bench/runs/distributed/record.py)
    Rule("no_emulated_link", "throughput"),
    Rule("ranks_disagree", "throughput"),
    Rule("weights_unchanged", "throughput", why_no_winner="the training step did not change the weights"),
    # an int8 run whose logits on the held-out images stray from fp32's (bench/measurement/agreement.py)
    Rule("int8_disagrees", "throughput",
         f"an int8 run whose logits on held-out images differ from the same framework's fp32 logits by more than "
         f"MLPerf's 99%-of-fp32 anchor allows here: SQNR below {SQNR_MIN_DB:g} dB or mean cosine similarity below "
         f"{COSINE_MIN:g} (random weights: the fp32 output, not an accuracy, is what is kept)",
         why_no_winner="the int8 model's output strays from fp32's (a quantisation that loses the model)"),
    # a run whose outputs on the probe batch stray from PyTorch's (bench/measurement/outputs_check.py)
    Rule("outputs_disagree", "throughput",
         "a run whose logits on a seeded probe batch differ from PyTorch's eager fp32 logits by more than "
         "the tolerance of its precision (a share of the largest logit: fp32 1e-4): it did not run the same network",
         why_no_winner="its outputs differ from PyTorch's: it did not run the same network"),
    # the run's fairness certificate (bench/measurement/certificate.py) has a failed check
    Rule("certificate_failed", "throughput",
         why_no_winner="a fairness check failed: the frameworks did not do the same work"),
)
RULE = {r.name: r for r in RULES}
# Flags about what was measured rather than the machine it ran on: a process carrying one is not "disturbed" (a retry
# or another process cannot clear it); its config keeps it under its own name and is never a finding.
MODEL_FLAGS = ("int8_disagrees", "outputs_disagree")
# What each flag makes unusable, by name (the rules' scopes).
FLAG_SCOPE = {r.name: r.scope for r in RULES}
# The impossible-number guards: name -> the rule as the methodology states it.
IMPOSSIBLE = {r.name: r.sentence for r in RULES if r.impossible}
# The guards the methodology lists, in its order (the impossible ones have a list of their own).
GUARDS = [r for r in RULES if r.sentence and not r.impossible]


def flag(name: str, reason: str) -> Flag:
    if name not in FLAG_SCOPE:
        raise ValueError(f"unknown flag {name!r}; valid: {', '.join(FLAG_SCOPE)}")
    return Flag(name=name, reason=reason)


def peak_flag(spread: float | None) -> Flag | None:
    if spread is not None and spread > PEAK_SPREAD_LIMIT:
        return flag("peak_unsteady", f"the matrix-multiply peak was measured while other work ran (its trials spread "
                                     f"{spread:.0%}, more than {PEAK_SPREAD_LIMIT:.0%}): no utilisation is given")
    return None


def utilisation_flag(utilisation: float | None) -> Flag | None:
    if utilisation is not None and utilisation > UTILISATION_LIMIT:
        return flag("utilisation_over_peak",
                    f"utilisation {utilisation:.0%}: faster than this machine's best measured GEMM (plausible for an "
                    "engine that needs fewer operations per convolution, e.g. Winograd); the throughput stands")
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


def not_available(flags: list[Flag]) -> str:
    """How a guarded number is printed: 'n/a (name: reason; ...)', never the number."""
    return "n/a (" + "; ".join(dict.fromkeys(f"{f.name}: {f.reason}" for f in flags)) + ")"


def efficiency_flag(efficiency: float | None, scaling: str) -> Flag | None:
    """Weak-scaling efficiency beyond 100% plus the tolerance (strong scaling may be superlinear: caches)."""
    if efficiency is not None and scaling == "weak" and efficiency > 1 + EFFICIENCY_TOLERANCE:
        # the reason does not quote the value: an impossible number is not printed, not even as a reason
        return flag("efficiency_over_100", f"weak-scaling efficiency above {1 + EFFICIENCY_TOLERANCE:.0%}: the "
                                           f"1-worker baseline or the timing is wrong")
    return None


def baseline_flag(what: str, sound: bool, reason: str) -> Flag | None:
    """A ratio against an unsound baseline config: the ratio inherits the baseline's disturbance."""
    if sound:
        return None
    return flag("disturbed_baseline", f"{what} is not sound ({reason or 'fewer than 2 clean processes'})")


def forward_backward_flag(forward_ms: float | None, backward_ms: float | None) -> Flag | None:
    """A training step's forward cannot take longer than its backward beyond the tolerance."""
    if not forward_ms or not backward_ms or forward_ms != forward_ms or backward_ms != backward_ms:
        return None
    if forward_ms > backward_ms * (1 + FORWARD_BACKWARD_TOLERANCE):
        return flag("forward_over_backward",
                    f"training forward {forward_ms:,.0f} ms exceeds its backward {backward_ms:,.0f} ms "
                    f"(tolerance {FORWARD_BACKWARD_TOLERANCE:.0%}): the phases were timed wrongly")
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
    if phases and record.config.mode == "training":
        out += [f for f in (forward_backward_flag(phases.get("forward"), phases.get("backward")),) if f]
    out += depth_flags(record)
    out += [flag("int8_disagrees", f"int8 against fp32 on held-out images: {why}")
            for why in judged(record.int8) if record.config.precision == "int8"]
    why = outputs_judged(record.outputs_check)
    if why:
        out.append(flag("outputs_disagree", f"outputs against the reference framework's: {why}"))
    return out + certificate_flags(record.fairness)


def depth_flags(record: Record) -> list[Flag]:
    """An adaptive process that measured too little to stand for its config: its warm-up never steadied, or it timed
    fewer than MIN_STEADY_ITERATIONS iterations (seed-protocol and distributed runs time fixed counts)."""
    samples = record.samples
    # a distributed run's steps are a fixed count on every rank ("fixed count, the same on every rank"), whatever its
    # config's protocol says: judged by its own rules, never by this floor
    if (record.status != "ok" or record.config is None or record.config.protocol != "adaptive" or samples is None
            or record.config.distributed or (samples.warmup_stop or "").startswith("fixed count")):
        return []
    out = []
    if samples.warmup_stop == NEVER_STEADY:
        out.append(flag("unsteady", f"its warm-up ended without {STEADY_WINDOW} consecutive iterations within "
                                    f"{WARMUP_TOLERANCE:.0%} of their median (after {len(samples.warmup_s)} "
                                    "iterations): its steps never settled"))
    if len(samples.timed_s) < MIN_STEADY_ITERATIONS:
        out.append(flag("short_process", f"timed {len(samples.timed_s)} iterations, fewer than "
                                         f"{MIN_STEADY_ITERATIONS} ({samples.timed_stop or 'stopped'})"))
    return out


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
