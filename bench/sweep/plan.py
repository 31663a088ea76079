"""Sweep planning: interleaved repetitions, a duration estimate, a budget that drops configs, and the
sequential plan that gives further processes to the configs whose comparisons are undecided.

Every config runs in `repeats` fresh processes. Round r holds one repetition of every config in an
order shuffled with the seed (order_seed, r), so slow drift of the machine (a busy period, thermal
state, a neighbour on the VM) touches every framework alike instead of falling on one.
"""

from __future__ import annotations

import math
import random
import statistics
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from ..adapters.base import step_is_forward
from ..config import RunConfig
from ..measurement import scaling_pairs as scaling
from ..measurement.flags import FLAG_SCOPE
from ..measurement.loop import MIN_STEADY_ITERATIONS, MIN_WARMUP, STEADY_WINDOW, TIMED_CAP_S
from ..results.record import Record
from ..results.store import counted_attempts
from ..results.sweep_manifest import SweepManifest, as_manifests, wall_key
from ..stats.blocks import Residual, blocked_ratio, pooled_residual
from ..stats.judge import Judge, SpreadJudge
from ..stats.moderated import SweepSpreads
from ..stats.printed import bounds
from ..stats.verdicts import WINNER, Verdict

# Seconds a process spends outside the harness's own run (kernel start, interpreter and package imports, the
# notebook's cells after the run, record write, kernel shutdown) when this host has no sweep manifest that timed
# it (`process_walls`): measured here as papermill's wall time minus the run's duration, median over the 77
# processes of a quiet `quick` sweep (2026-11-24): 3.7 s. (It was 8 s, guessed before the manifests timed each
# process; with it a fresh clone's estimate ran ~40% long.) A host's own manifests replace it (`fixed_cost_s`).
PROCESS_OVERHEAD_S = 3.7
# Model build, export/compile and the framework's import when no record on this host says (prepare_s).
STARTUP_S = 5.0
# An int8 config's first process on a host also draws the calibration and held-out images, calibrates and converts
# the model and computes its agreement with fp32 (measured here, ResNet-50 on the 2-core VM: NNCF 33 s, ONNX
# Runtime 39-52 s, the 64 images 9 s); a later process finds ONNX Runtime's or OpenVINO's quantised model cached
# and only computes the agreement. PyTorch (compile), TFLite and MXNet quantise in every process: their records say so.
QUANTISE_S, AGREEMENT_S = 45.0, 4.0
# Without earlier records an iteration is estimated from FLOPs at this share of the measured peak
# (measured here: inference 60-75%, training 40-55%); a little cautious, so the estimate errs long.
ASSUMED_EFFICIENCY = {"inference": 0.55, "training": 0.5}
# A `files` config's first process also times its loader alone at 0, 1 and 2 workers (a few batches each, after
# worker start-up: ~1 s for PyTorch's DataLoader here; tf.data and MXNet's pool start slower). Not counted: the first
# files process on a host writing the procedural set (512 images took 18 s here), once; later ones reuse it.
FILES_CEILING_S = 3.0
# The phase pass of a training step times forward, forward+backward and a whole step; an inference step on
# device-resident data runs none (its forward is the timed loop's step: bench/adapters/workload.py step_is_forward).
PHASE_STEP_COST = {"inference": 1.0, "training": 2.5}


@dataclass(frozen=True)
class Task:
    """One fresh process: a config's repetition `repeat`, attempt `attempt` (0 unless retried)."""

    config: RunConfig
    repeat: int
    round: int
    attempt: int = 0


def comparison_group(config: RunConfig) -> tuple:
    """What a config is compared within: everything but the framework and engine."""
    d = config.to_dict()
    return tuple((k, v) for k, v in sorted(d.items()) if k not in ("framework", "engine", "extra"))


def interleaved_order(configs: Iterable[RunConfig], repeats: int, seed: int,
                      done: set[tuple[str, int]] = frozenset()) -> list[Task]:
    """Rounds over every config, each round in a new random order (RMIT) that keeps a comparison group's configs back
    to back (the groups in a random order, the configs inside a group in a random order): the sides of one comparison
    run next to each other in time, so a slow spell of the machine falls on them alike, and the estimate can compare
    them within each round. Repetitions already done are left out."""
    groups: dict[tuple, list[RunConfig]] = {}
    for c in configs:
        groups.setdefault(comparison_group(c), []).append(c)
    tasks = []
    for r in range(repeats):
        rng = random.Random(f"{seed}:{r}")
        order = list(groups.values())
        rng.shuffle(order)
        for members in order:
            inside = list(members)
            rng.shuffle(inside)
            tasks += [Task(c, r, r) for c in inside if (c.key, r) not in done]
    return tasks


# A distributed run's own start-up: the launcher, torchrun / TF servers, every rank importing its framework, and the
# records gathered at the end. Measured here (2026-11-27, 2-core VM) as the duration of tiny runs whose steps cost
# nothing: 4.8-5.0 s for torch over gloo at 1 and 2 workers. (It was 10 s, guessed: the `parallelism` profile's
# 63 runs were estimated at 15.0 min and took 8.4.)
DISTRIBUTED_START_S = 5.0


def estimate_run_s(config: RunConfig, repeat: int, history_s: list[float], flops_per_image: float | None,
                   peak_flops: float | None, overhead_s: float = PROCESS_OVERHEAD_S,
                   startup_s: float = STARTUP_S) -> float:
    """Seconds one process of `config` will take: from its earlier runs here, else from FLOPs and peak.

    `overhead_s`: the fixed cost of a process outside the run (measured per host where known, `fixed_cost_s`);
    `startup_s`: the run's own start-up (model build, export/compile) when the config has no earlier run here.
    """
    if history_s:  # a run's duration_s already holds its start-up
        return statistics.median(history_s) + overhead_s
    if config.distributed:  # fixed step counts; every rank's process starts its framework
        step = flops_per_image * config.global_batch / (peak_flops * ASSUMED_EFFICIENCY["training"]) \
            if flops_per_image and peak_flops else 0.5
        return overhead_s + DISTRIBUTED_START_S + step * (config.warmup + config.iterations)
    if not flops_per_image or not peak_flops:
        return overhead_s + startup_s + (config.time_budget_s or 10.0)
    iteration = flops_per_image * config.batch_size / (peak_flops * ASSUMED_EFFICIENCY[config.mode])
    if config.protocol == "seed":
        loop = iteration * (config.warmup + config.iterations)
    else:  # a steady run: the first iteration, then the minimum timed ones (the steadiness window counts among them),
        # or the budget (counted from the end of the first iteration) when the CI target is not met; the timed loop
        # stops at its cap whatever the minimum
        minimum = max(STEADY_WINDOW, config.iterations, MIN_STEADY_ITERATIONS)
        loop = iteration * MIN_WARMUP + min(max(iteration * minimum, config.time_budget_s), TIMED_CAP_S)
    pass_runs = repeat == 0 and not step_is_forward(config.mode, config.data)
    phases = iteration * config.phase_iterations * PHASE_STEP_COST[config.mode] if pass_runs else 0.0
    ceiling = FILES_CEILING_S if config.data == "files" and repeat == 0 else 0.0
    return overhead_s + startup_s + loop + phases + ceiling


def fixed_cost_s(walls: dict[str, float], records: Iterable[Record]) -> float | None:
    """A process's median seconds outside its run on this host (papermill's wall time minus the run's own
    duration), from the sweep manifests' `process_walls`; None when no manifest timed a recorded process."""
    durations = {wall_key(r.config_key, r.repeat, r.attempt): r.duration_s for r in records
                 if r.status == "ok" and r.duration_s}
    outside = [wall - durations[k] for k, wall in walls.items() if k in durations and wall > durations[k]]
    return statistics.median(outside) if outside else None


def startup_history(records: Iterable[Record]) -> dict[tuple, float]:
    """Median start-up seconds (prepare_s) per (framework, engine, model, precision) and per (framework, engine,
    precision) on this host: what a config never run here will spend before its loop (an int8 start-up holds its
    quantisation, so precisions are kept apart)."""
    seen: dict[tuple, list[float]] = {}
    for r in records:
        if r.status == "ok" and r.startup and r.startup.prepare_s is not None:
            c = r.config
            for key in ((c.framework, c.engine, c.model, c.precision), (c.framework, c.engine, c.precision)):
                seen.setdefault(key, []).append(r.startup.prepare_s)
    return {k: statistics.median(v) for k, v in seen.items()}


def default_startup_s(config: RunConfig, repeat: int) -> float:
    """A process's start-up where this host has no record of one like it: STARTUP_S, and for int8 the
    quantisation (first process) or the agreement check (later ones)."""
    if config.precision != "int8":
        return STARTUP_S
    return STARTUP_S + (QUANTISE_S if repeat == 0 else AGREEMENT_S)


def fit_budget(configs: list[RunConfig], tasks: list[Task], estimate: Callable[[Task], float],
               budget_s: float) -> tuple[list[Task], list[RunConfig], float]:
    """Drop whole comparison groups, lowest priority first, until the estimated time fits `budget_s`.

    Returns (tasks kept, configs dropped, estimated seconds of the kept tasks). A budget of 0 keeps all.
    A higher-priority group is never dropped while a lower-priority one is kept.
    """
    cost: dict[tuple, float] = {}
    for t in tasks:
        g = comparison_group(t.config)
        cost[g] = cost.get(g, 0.0) + estimate(t)
    groups = list(dict.fromkeys(comparison_group(c) for c in configs))  # priority order
    total = sum(cost.values())
    while budget_s and groups and total > budget_s:
        total -= cost.get(groups.pop(), 0.0)
    keep = set(groups)
    kept = [t for t in tasks if comparison_group(t.config) in keep]
    dropped = [c for c in configs if comparison_group(c) not in keep]
    return kept, dropped, total


# --- Sequential repetitions (`repeats: adaptive`) ------------------------------------------------------------
# Every config first gets `min_repeats` processes in interleaved rounds; then, one process at a time, an undecided
# comparison (page 1's first) gets the next one, until the budget ends, every comparison is decided (winner or
# equivalent), or each config has `max_repeats` (Kalibera & Jones 2013: spend repetitions where they decide).

# A config compared with nothing (the only framework at its batch) wants its own process-level interval within
# this relative half-width; above it, more processes help the number itself.
SOLO_TARGET = 0.05


@dataclass(frozen=True)
class Extra:
    """The next process of an adaptive plan: which config, its score (higher: more undecided), and why."""

    config: RunConfig
    score: float
    reason: str
    # the other side of the comparison it is for: it runs beside `config` in a round of their own, so the pair is
    # compared within that block (None: a config compared with nothing, or a partner at its cap or over the budget)
    partner: RunConfig | None = None


def can_decide(v: Verdict, fewest: int, max_repeats: int) -> bool:
    """Whether more processes, within the cap, would likely decide an undecided comparison: not one whose estimate
    sits so near the margin, or whose spread is so wide, that even MAX_EXTRA_PROCESSES more a side would not, nor one
    that needs more than the cap leaves its side with fewer processes (`fewest`)."""
    return v.extra_processes is not None and v.extra_processes <= max_repeats - fewest


def clean_process_values(records: Iterable[Record]) -> dict[str, list[float]]:
    """config key -> one value (median images/s) per clean process: the attempt of each repetition that counts
    (bench/results/store.py: counted_attempts, as the report counts them), status ok, no throughput flag (what the
    report's intervals are built from)."""
    out: dict[str, list[float]] = {}
    for r in sorted(counted_attempts(list(records)), key=lambda r: (r.config_key, r.repeat, r.created or "")):
        if r.status != "ok" or not r.summary or any(FLAG_SCOPE.get(f.name) == "throughput" for f in r.flags):
            continue
        out.setdefault(r.config_key, []).append(r.summary.images_per_sec_median)
    return out


def _log_halfwidth(interval: dict) -> float:
    """Half-width of a config's process-level interval on the log scale (inf without an interval)."""
    return math.inf if interval["ci_low"] is None else math.log(interval["ci_high"] / interval["estimate"])


def _name(c: RunConfig) -> str:
    return f"{c.framework}/{c.engine}"


def spread_pool(c: RunConfig) -> str:
    """Configs that share a between-process spread: single processes apart from distributed runs (ranks add
    their own variation), so neither borrows the other's."""
    return "distributed" if c.distributed else "single"


# Priority tiers of the next process (higher first): a config without an interval, or with one on a single degree of
# freedom (one_df_own_spread); an undecided page-1 row (the
# fastest and the runner-up of a comparison group); another undecided pair, an undecided scaling comparison (a
# distributed config without an interval first), or a config compared with nothing whose own interval is wider than
# SOLO_TARGET.
NO_INTERVAL, PAGE_ONE, OTHER = 3, 2, 1


# Within the first tier, a config with no interval comes before one whose interval rests on one degree of freedom.
ONE_DF_URGENCY = 1e6


def one_df_own_spread(on: SpreadJudge, c: RunConfig, compared_with: int) -> bool:
    """A compared single-process config whose two clean processes' spread is its own (set apart from the sweep's
    prior as differing, so not moderated): its interval rests on one degree of freedom (t = 12.7) and says nothing
    a reader can use (2026-11-28: PyTorch training batch 16, 4.6 and 5.8 img/s, gave page 1 [0.49-2.28] while the
    plan spent its extra processes on a comparison it called undecidable)."""
    if c.distributed or compared_with < 2 or on.processes(c.key) != 2:
        return False
    spread = on.spreads.spread(c.key)
    return spread is not None and not spread.pooled


def _urgency(v: Verdict) -> float:
    """Within a tier, the comparison that fewer more processes would likely decide comes first."""
    return 1 / (1 + v.extra_processes) if v.extra_processes is not None else 0.0


def why_more(what: str, report: Verdict, strict: dict, judge: Judge) -> str:
    """Why a comparison (`what`: 'a / b') gets another process, in words: undecided and what would decide it, or a
    winner at 95% that its interval at the plan's stopping confidence does not yet show."""
    if report.word == WINNER and strict.get("ci_low") is not None:
        return (f"winner at {judge.confidence:.0%}, not yet at the plan's stopping confidence: {what} = "
                f"{report.interval()}, at {judge.stopping_confidence:.1%} "
                f"{bounds(strict['ci_low'], strict['ci_high'])}")
    return f"undecided: {what} = {report.interval()}; {report.to_decide()}"


def _scaling_name(c: RunConfig) -> str:
    return f"{c.framework} {c.strategy} x{c.workers}"


def clean_process_blocks(records: Iterable[Record]) -> dict[str, list[tuple[str | None, float]]]:
    """config key -> (block, value) per clean process, as `clean_process_values` counts them: its block is its sweep's
    round where its comparison group ran back to back (None: an older sweep's process, or a retry)."""
    out: dict[str, list[tuple[str | None, float]]] = {}
    for r in sorted(counted_attempts(list(records)), key=lambda r: (r.config_key, r.repeat, r.created or "")):
        if r.status != "ok" or not r.summary or any(FLAG_SCOPE.get(f.name) == "throughput" for f in r.flags):
            continue
        block = f"{r.sweep.id}:{r.sweep.block}" if r.sweep and r.sweep.block is not None else None
        out.setdefault(r.config_key, []).append((block, r.summary.images_per_sec_median))
    return out


def _blocked_compare(judge: Judge, a: list, b: list, residual: Residual | None) -> tuple | None:
    """(report verdict, stopping verdict, the ratio at the stopping confidence) of a / b within their shared blocks,
    as the report judges a grouped sweep's pair (bench/stats/blocks.py); None where the pair has no blocked
    estimate."""
    r95 = blocked_ratio(a, b, residual, judge.confidence)
    if r95 is None:
        return None
    strict = blocked_ratio(a, b, residual, judge.stopping_confidence)
    report = judge.verdict(r95["ratio"], r95["ci_low"], r95["ci_high"], len(a), len(b), r95["df"])
    return report, judge.stopping(report, strict["ci_low"], strict["ci_high"]), strict


def next_process(configs: Iterable[RunConfig], values: dict[str, list[float]], processes: dict[str, int],
                 cost_s: Callable[[RunConfig], float], budget_left_s: float, max_repeats: int,
                 judge: Judge, blocks: dict[str, list[tuple[str | None, float]]] | None = None) -> Extra | None:
    """The config that gets the next process, or None when none should (budget spent, all decided, or capped).

    `values`: clean per-process values per config key (`clean_process_values`), and where the sweep ran in blocks
    `blocks` (`clean_process_blocks`: a pair is then judged within its blocks, as the report judges it); `processes`:
    processes already run
    per config key (clean or not, retries excluded); `cost_s`: estimated seconds of one more process of a config.
    Every comparison is judged as the report judges it (bench/stats/moderated.py's sweep-moderated spreads,
    bench/stats/verdicts.py's four verdicts, asked of `judge`), except that a winner stops only once its interval
    at the judge's stopping confidence lies beyond the margin (stopping once decided must not inflate false
    winners); a decided one asks for
    nothing. Among the undecided, page 1's rows come first (each comparison group's fastest against its runner-up),
    then those that more processes would decide soonest; the process goes to the side with fewer processes. A config
    compared with nothing asks for more while its own interval is wider than SOLO_TARGET. Only configs under
    `max_repeats` whose next process fits the budget are candidates. Distributed configs are judged by their scaling
    comparisons instead (bench/measurement/scaling_pairs.py: efficiency, communication, overlap), after page 1's
    rows, and a decided one asks for nothing.
    """
    configs = list(configs)
    spreads = SweepSpreads({c.key: values.get(c.key, []) for c in configs}, {c.key: spread_pool(c) for c in configs},
                           families={c.key: f"{c.framework} {c.mode}" for c in configs})  # the report's families
    on = judge.on(spreads)
    groups: dict[tuple, list[RunConfig]] = {}
    distributed = [c for c in configs if c.distributed]
    comps = scaling.comparisons(map(scaling.side_of, distributed))
    scaled = list(dict.fromkeys(k for comp in comps for k in (comp.a, comp.b)))
    for c in configs:  # a distributed config in a scaling comparison is judged there (below)
        if c.key not in scaled:
            groups.setdefault(comparison_group(c), []).append(c)

    residual = pooled_residual({g: {c.key: (blocks or {}).get(c.key, []) for c in members}
                                for g, members in groups.items()}) if blocks else None

    def open_(c: RunConfig) -> bool:
        return processes.get(c.key, 0) < max_repeats and cost_s(c) <= budget_left_s

    def fewer(a: RunConfig, b: RunConfig) -> RunConfig | None:
        """The side of an undecided comparison that gets the process: the one with fewer, then the cheaper."""
        return next((c for c in sorted((a, b), key=lambda c: (len(values[c.key]), -cost_s(c))) if open_(c)), None)

    candidates: list[tuple[tuple, Extra]] = []

    def offer(c: RunConfig, tier: int, urgency: float, reason: str, partner: RunConfig | None = None) -> None:
        if open_(c):
            both = partner is not None and open_(partner) and cost_s(c) + cost_s(partner) <= budget_left_s
            candidates.append(((tier, urgency, -cost_s(c)),
                               Extra(c, float(tier) + urgency, reason, partner if both else None)))

    for members in groups.values():
        ranked = sorted((c for c in members if len(values.get(c.key, [])) >= 2),
                        key=lambda c: -on.interval(c.key)["estimate"])

        # who runs beside a config that needs a process of its own: the fastest other member of its group
        partner = {c.key: next((m for m in ranked + members if m is not c), None) for c in members}
        for c in members:
            if len(values.get(c.key, [])) < 2:  # a distributed config's after page 1's rows
                offer(c, OTHER if c.distributed else NO_INTERVAL, math.inf,
                      f"{_name(c)}: fewer than two clean processes", partner[c.key])
            elif one_df_own_spread(on, c, len(members)):
                offer(c, NO_INTERVAL, ONE_DF_URGENCY, f"{_name(c)}: its interval rests on its own spread from 2 "
                                                      "processes (1 degree of freedom: the sweep's prior does not "
                                                      "fit it); a third gives it one worth reading", partner[c.key])
        if len(members) == 1 and ranked:
            half = _log_halfwidth(on.interval(ranked[0].key))
            if half > math.log1p(SOLO_TARGET):
                offer(ranked[0], OTHER, 0.0, f"its own interval is +-{math.expm1(half):.1%}, wider than the "
                                             f"{SOLO_TARGET:.0%} target")
        for i, b in enumerate(ranked[1:]):
            a = ranked[0]
            report, v, strict = (blocks and _blocked_compare(judge, blocks.get(a.key, []), blocks.get(b.key, []),
                                                             residual)) or on.compare_to_stop(a.key, b.key)
            fewest = min(processes.get(a.key, 0), processes.get(b.key, 0))
            if v.decided or (report.word != WINNER and not can_decide(v, fewest, max_repeats)):
                continue  # decided, or more processes within the cap would not decide it: none go there
            side = fewer(a, b)
            if side is None:
                continue
            offer(side, PAGE_ONE if i == 0 else OTHER, _urgency(v),
                  why_more(f"{_name(a)} / {_name(b)}", report, strict, judge), b if side is a else a)
    by_key = {c.key: c for c in distributed}
    for c in (by_key[k] for k in scaled):
        if len(values.get(c.key, [])) < 2:
            offer(c, OTHER, math.inf, f"{_scaling_name(c)}: fewer than two clean processes")
    for comp in comps:
        a, b = by_key[comp.a], by_key[comp.b]
        if min(len(values.get(a.key, [])), len(values.get(b.key, []))) < 2:
            continue
        report, v, strict = on.compare_to_stop(comp.a, comp.b, comp.divisor)
        fewest = min(processes.get(a.key, 0), processes.get(b.key, 0))
        if v.decided or (report.word != WINNER and not can_decide(v, fewest, max_repeats)):
            continue
        side = fewer(a, b)
        if side is not None:
            what = f"{comp.kind} {_scaling_name(a)} / {_scaling_name(b)}" + (
                f" / {comp.divisor}" if comp.divisor > 1 else "")
            offer(side, OTHER, _urgency(v), why_more(what, report, strict, judge), b if side is a else a)
    if not candidates:
        return None
    return max(candidates, key=lambda x: x[0])[1]


# --- What an adaptive sweep will add ---------------------------------------------------------------------------
# The share of the possible extra processes (every config up to max_repeats) that an adaptive sweep of `quick`
# runs on this quiet 2-core VM, when this host has no finished adaptive sweep to learn it from: 21 of 46 in a sweep
# that ended before its budget (2026-11-24), and at least 30 of 46 and 26 of 44 in two that ran into a 25-minute
# budget (2026-11-24). The estimate printed before a sweep counts them (capped by the budget), so it is of the
# whole sweep.
EXTRA_SHARE = 0.6


def extra_share(manifests: Iterable[SweepManifest], profile: str) -> float:
    """The share of the possible extra processes this host's finished adaptive sweeps of `profile` ran (mean over
    them), else EXTRA_SHARE."""
    shares = []
    for m in as_manifests(manifests):
        adaptive = m.adaptive
        if m.profile != profile or not adaptive or m.status != "finished":
            continue
        configs = {o.config_key for o in m.order}
        possible = len(configs) * (adaptive.max_repeats - adaptive.min_repeats)
        if possible > 0:
            shares.append(len(m.extra_processes) / possible)
    return statistics.mean(shares) if shares else EXTRA_SHARE


def expected_extra_s(configs: Iterable[RunConfig], cost_s: Callable[[RunConfig], float], min_repeats: int,
                     max_repeats: int, share: float, budget_left_s: float) -> float:
    """Seconds the adaptive plan is expected to add after the rounds: `share` of every config's possible extra
    processes at its estimated cost, never more than the budget left after the rounds."""
    possible = sum(cost_s(c) for c in configs) * max(max_repeats - min_repeats, 0)
    return max(0.0, min(possible * share, budget_left_s))


# A machine is persistently loaded when at least this share of the runs so far (and at least BUSY_MIN_RUNS) were
# disturbed: retrying each at the end of the queue then mostly measures the load again.
BUSY_SHARE = 0.5
BUSY_MIN_RUNS = 4


def busy_warning(done: int, disturbed: int, retry_estimate_s: float) -> str | None:
    """What to tell the user early when the machine is persistently loaded (None otherwise): how many runs were
    disturbed, what their retries add to the estimate, and that stopping now and resuming when quiet is cheaper
    than re-running at the end."""
    if done < BUSY_MIN_RUNS or disturbed < BUSY_SHARE * done:
        return None
    return (f"{disturbed} of the {done} runs so far were disturbed by other programs: their retries add about "
            f"{retry_estimate_s / 60:.1f} min at the end of the queue, and on a machine this loaded they may be "
            "disturbed again. Consider stopping now (Ctrl-C) and running the same command when the machine is quiet: "
            "the sweep resumes where it stopped and keeps every clean run.")
