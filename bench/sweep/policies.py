"""Queue policies: what a sweep adds to its queue as its runs end (the retry of a disturbed run, the adaptive
plan's next process once the rounds are done), and the manifest entries that say why.

The sweep (bench/sweep/runner.py) calls each policy, in order, after every process it gets back from its executor;
what a policy queues is submitted as the executor's next batch.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from ..config import RunConfig
from ..host.interference import cv_outlier_reason
from ..results.record import Record
from ..results.store import host_records
from ..results.sweep_manifest import ExtraProcess, PlannedRun, Retry, SweepManifest
from .plan import Task, busy_warning, clean_process_blocks, clean_process_values, next_process
from .profiles import Profile
from .result import SweepResult


def planned_run(task: Task) -> PlannedRun:
    """A task as the manifest's order lists it."""
    return PlannedRun(config_key=task.config.key, repeat=task.repeat, round=task.round, label=task.config.label)


@dataclass(frozen=True)
class Ended:
    """A process the executor gave back, with what its config's records say."""

    task: Task
    done: int  # processes ended so far in this sweep, this one included
    record: Record | None  # the latest record of its repetition (None: none was written)
    siblings: list[Record]  # the latest record of each other repetition of its config
    # the iteration-time CVs of this sweep's other processes of its framework, mode and precision (the jitter rule's
    # family)
    family_cvs: list[float] = field(default_factory=list)


class SweepQueue:
    """The sweep's tasks in order; policies append to it while it runs."""

    def __init__(self, tasks: list[Task], on_add: Callable[[Task], None]) -> None:
        self.tasks, self._on_add = list(tasks), on_add

    def add(self, task: Task) -> None:
        self.tasks.append(task)
        self._on_add(task)

    def __len__(self) -> int:
        return len(self.tasks)


@dataclass(frozen=True)
class Journal:
    """Where a policy says what it did: the manifest (written at once with `save`), the summary, the terminal."""

    manifest: SweepManifest
    result: SweepResult
    estimate: Callable[[Task], float]  # seconds a task is expected to take (what it adds to the estimate)
    say: Callable[[str], None]
    save: Callable[[], None]


class QueuePolicy(Protocol):
    def after(self, ended: Ended, queue: SweepQueue) -> None:
        """Queue what this process's end calls for (nothing, mostly)."""


def needs_retry(record: Record, siblings: list[Record], family_cvs=()) -> str | None:
    """Why a finished run should be repeated: other programs disturbed it, or it jittered far more than
    its config's other repetitions."""
    if record.status != "ok":
        return None
    disturbed = [f.reason for f in record.flags if f.name == "disturbed"]
    if disturbed:
        return disturbed[0]
    ok = [s for s in siblings if s.status == "ok" and s.summary]
    return cv_outlier_reason(record.summary.cv if record.summary else None, [s.summary.cv for s in ok],
                             record.summary.images_per_sec_median if record.summary else None,
                             [s.summary.images_per_sec_median for s in ok], family_cvs)


class Retries:
    """A disturbed (or unusually jittery) run runs again at the end of the queue, at most `retries` times; a
    machine that stays loaded is said once, as early as it is clear (plan.busy_warning)."""

    def __init__(self, retries: int, journal: Journal) -> None:
        self.retries, self.journal = retries, journal

    def after(self, ended: Ended, queue: SweepQueue) -> None:
        task, record, j = ended.task, ended.record, self.journal
        why = needs_retry(record, ended.siblings, ended.family_cvs) if record is not None else None
        if not why:
            return
        what = f"{task.config.label} (repeat {task.repeat}): {why}"
        if task.attempt < self.retries:
            retry = Task(task.config, task.repeat, task.round, task.attempt + 1)
            queue.add(retry)
            j.manifest.retry_estimate_s += j.estimate(retry)  # what retries add to the estimate
            j.result.retried.append(what)
            j.manifest.retried.append(Retry(config_key=task.config.key, repeat=task.repeat, attempt=task.attempt,
                                            reason=why))
            j.save()
        else:
            j.result.still_disturbed.append(what)
        if not j.manifest.busy_warning:  # said once, as early as the load is clear
            warning = busy_warning(ended.done, len(j.result.retried) + len(j.result.still_disturbed),
                                   j.manifest.retry_estimate_s)
            if warning:
                j.manifest.busy_warning = warning
                j.say(warning)


def adaptive_task(profile: Profile, results_dir: Path, kept: list[RunConfig], estimator: Callable[[Task], float],
                  budget_left_s: float) -> tuple[list[Task], str] | None:
    """The adaptive plan's next processes (bench/sweep/plan.py: next_process) from this host's records, or None: the
    config it names, and the other side of its comparison where that one can run too, back to back in a round of
    their own (a new block, so the pair is compared within it)."""
    records = [r for r in host_records(results_dir) if r.config_key in {c.key for c in kept}]
    failing = {r.config_key for r in records if r.status != "ok"}  # another process would fail or skip again
    kept = [c for c in kept if c.key not in failing]
    repeats: dict[str, set[int]] = {}
    for r in records:
        repeats.setdefault(r.config_key, set()).add(r.repeat)
    processes = {k: len(v) for k, v in repeats.items()}
    nxt = next_process(kept, clean_process_values(records), processes,
                       lambda c: estimator(Task(c, max(repeats.get(c.key, {0})) + 1, 0)), budget_left_s,
                       profile.max_repeats, profile.judge, clean_process_blocks(records))
    if nxt is None:
        return None
    block = max((r.sweep.round for r in records if r.sweep and r.sweep.round is not None), default=0) + 1
    configs = [nxt.config] + ([nxt.partner] if nxt.partner is not None else [])
    random.Random(f"{profile.order_seed}:{block}").shuffle(configs)  # the order inside the pair, drawn
    return [Task(c, max(repeats.get(c.key, {-1})) + 1, block) for c in configs], nxt.reason


class AdaptiveExtras:
    """`repeats: adaptive`: once the queue is done, one more process for the config whose comparison is least
    decided, until the budget ends, every comparison is decided, or each config has `max_repeats`."""

    def __init__(self, profile: Profile, results_dir: Path, kept: list[RunConfig],
                 budget_left_s: Callable[[], float], journal: Journal) -> None:
        self.profile, self.results_dir, self.kept = profile, results_dir, kept
        self.budget_left_s, self.journal = budget_left_s, journal

    def after(self, ended: Ended, queue: SweepQueue) -> None:
        if ended.done < len(queue):  # the rounds (and their retries) first
            return
        j = self.journal
        extra = adaptive_task(self.profile, self.results_dir, self.kept, j.estimate, self.budget_left_s())
        if extra is None:
            return
        tasks, why = extra
        for task in tasks:
            queue.add(task)
            j.manifest.extra_estimate_s += j.estimate(task)
            j.result.extra.append(f"{task.config.label} (repeat {task.repeat}): {why}")
            j.manifest.extra_processes.append(ExtraProcess(config_key=task.config.key, label=task.config.label,
                                                           repeat=task.repeat, reason=why))
            j.manifest.order.append(planned_run(task))
