"""The sweep: repeated, interleaved papermill runs of notebooks/benchmark.ipynb through an executor; resumable.

A `Sweep` takes the host's results lock and goes through three steps. `plan`: measure the device peak, order the
work (interleaved repetitions, budget), write the manifest. `run`: submit the queue to the executor
(bench/sweep/executors.py), and after each process let the queue policies (bench/sweep/policies.py) add a retry of
a disturbed run or the adaptive plan's next process. `finish`: measure the peak again and close the manifest,
finished or interrupted.
"""

from __future__ import annotations

import contextlib
import fcntl
import logging
import math
import os
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from ..adapters import compile_cache, measures_a_framework
from ..config import RunConfig
from ..errors import ConfigError
from ..host.interference import OTHER_CPU_LIMIT, QUIET_MAX_WAIT_S, machine_share_busy, wait_until_quiet
from ..host.manifest import host_name
from ..measurement.flops import flops_per_sample
from ..measurement.peak import peak_key
from ..measurement.utilisation import peak_threads
from ..paths import default_results_dir
from ..results.record import Record
from ..results.store import host_dir, host_records
from ..results.sweep_manifest import (
    AdaptivePlan,
    DroppedConfig,
    SweepManifest,
    estimate_error,
    load_sweeps,
    new_sweep_id,
    process_walls,
    wall_key,
    write_sweep,
)
from ..runs.distributed.run import remove_stale_scratch
from ..values import counted
from .executors import Executor, LocalExecutor, Submission
from .jupyter_kernels import kernel_environment
from .measurements import measure_memory, measure_networks, measure_peaks
from .plan import (
    PROCESS_OVERHEAD_S,
    Task,
    comparison_group,
    default_startup_s,
    estimate_run_s,
    expected_extra_s,
    extra_share,
    fit_budget,
    fixed_cost_s,
    interleaved_order,
    startup_history,
)
from .policies import AdaptiveExtras, Ended, Journal, QueuePolicy, Retries, SweepQueue, planned_run
from .profiles import Profile
from .result import SweepResult
from .speed_reference import SpeedReference, speed_reference_on
from .task import NOTEBOOKS, latest_by_repeat

LOCK_FILE = ".sweep.lock"


def _quiet_abandoned_kernel_tasks() -> None:
    """Ctrl-C can kill a kernel while nbclient still awaits it: its asyncio task then ends with a DeadKernelError
    nobody retrieves, and asyncio would print that traceback at exit. The interrupt is the message; drop the echo."""
    logging.getLogger("asyncio").setLevel(logging.CRITICAL)


@contextlib.contextmanager
def results_lock(results_dir: Path):
    """One sweep per host results folder: a second one is refused instead of measuring beside it."""
    folder = host_dir(results_dir)
    folder.mkdir(parents=True, exist_ok=True)
    with open(folder / LOCK_FILE, "a+") as f:
        try:
            fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            f.seek(0)
            holder = f.read().strip() or "another process"
            raise ConfigError(f"another sweep ({holder}) is writing to {folder}; two sweeps on one machine "
                              "distort each other's numbers: wait for it to finish") from None
        f.truncate(0)
        f.write(f"pid {os.getpid()} since {datetime.now(UTC):%Y-%m-%d %H:%M:%S} UTC")
        f.flush()
        try:
            yield
        finally:
            f.truncate(0)
            fcntl.flock(f, fcntl.LOCK_UN)


def estimate_line(p: Plan | Mapping) -> str:
    """The estimate a plan prints before it starts: of the whole sweep, the adaptive plan's expected extra processes
    included and named."""
    estimate_s, rounds_s, extra_s = ((p["estimate_s"], p["rounds_s"], p.get("extra_s")) if isinstance(p, Mapping)
                                     else (p.estimate_s, p.rounds_s, p.extra_s))
    text = f"estimated {estimate_s / 60:.1f} min"
    if extra_s:
        text += (f" ({rounds_s / 60:.1f} for the rounds, ~{extra_s / 60:.1f} for the extra processes "
                 "undecided comparisons usually get here)")
    return text


def _now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


class _Estimator:
    """Per-task seconds from this host's earlier records, else from FLOPs and the measured peak; the fixed cost
    of a process (outside its run, and its start-up) from this host's sweep manifests and records where known."""

    def __init__(self, results_dir: Path, records: list[Record], peaks: dict[str, dict]) -> None:
        self.results_dir, self.peaks = results_dir, peaks
        self.history: dict[str, list[float]] = {}
        for r in records:
            if r.status == "ok":
                self.history.setdefault(r.config_key, []).append(r.duration_s)
        measured = fixed_cost_s(process_walls(load_sweeps(results_dir)), records)
        self.overhead_s = PROCESS_OVERHEAD_S if measured is None else measured
        self.startup = startup_history(records)

    def __call__(self, task: Task) -> float:
        c = task.config
        peak = self.peaks.get(peak_key(c.device, c.precision, peak_threads(c))) or {}
        flops = None
        if measures_a_framework(c.framework) and not self.history.get(c.key):
            with contextlib.suppress(Exception):  # an estimate never stops a sweep
                flops, _ = flops_per_sample(self.results_dir, c.model, c.input_size, c.mode)
        startup = self.startup.get((c.framework, c.engine, c.model, c.precision),
                                   self.startup.get((c.framework, c.engine, c.precision)))
        startup = default_startup_s(c, task.repeat) if startup is None else startup
        return estimate_run_s(c, task.repeat, self.history.get(c.key, []), flops, peak.get("flops_per_sec"),
                              self.overhead_s, startup)


@dataclass(frozen=True)
class Plan:
    """What a sweep would run now: tasks in order, repetitions already done, configs over budget, the estimate."""

    tasks: list[Task]
    done: list[tuple[str, int]]  # (config key, repeat) already recorded
    dropped: list[RunConfig]  # over the profile's budget
    estimate_s: float  # the rounds and the adaptive plan's expected extra processes
    rounds_s: float
    extra_s: float
    repeats: int
    estimator: Callable[[Task], float]


def plan(profile: Profile, results_dir: Path, force: bool = False, repeats: int | None = None,
         peaks: dict[str, dict] | None = None, executor: Executor | None = None) -> Plan:
    """What a sweep would run now (nothing runs: `bench sweep --list` prints it)."""
    repeats = repeats or profile.repeats
    records = host_records(results_dir)
    done = set() if force else (executor or LocalExecutor()).finished(results_dir)
    tasks = interleaved_order(profile.configs, repeats, profile.order_seed, done)
    estimator = _Estimator(results_dir, records, peaks or {})
    kept, dropped, estimate = fit_budget(list(profile.configs), tasks, estimator, profile.budget_minutes * 60)
    extra = 0.0
    if profile.adaptive and repeats == profile.repeats:  # what the adaptive plan is expected to add after the rounds
        budget_s = profile.budget_minutes * 60 or math.inf
        extra = expected_extra_s([c for c in profile.configs if c not in set(dropped)],
                                 lambda c: estimator(Task(c, repeats, repeats)), repeats, profile.max_repeats,
                                 extra_share(load_sweeps(results_dir), profile.name), budget_s - estimate)
    return Plan(kept, sorted(done & {(c.key, r) for c in profile.configs for r in range(repeats)}), dropped,
                estimate + extra, estimate, extra, repeats, estimator)


class Sweep:
    """One sweep of `profile`: every (config, repetition) not yet recorded (all of them with `force`), on this host
    or through `executor`; `shard` ('k/n') is noted in the manifest. `execute` runs plan, run and finish."""

    def __init__(self, profile: Profile, results_dir: Path | str | None = None, force: bool = False,
                 progress: bool = True, repeats: int | None = None, announce: Callable[[str], None] = print,
                 executor: Executor | None = None, shard: str | None = None) -> None:
        self.profile, self.force, self.progress, self.repeats = profile, force, progress, repeats
        self.announce, self.shard = announce, shard
        self.executor = executor or LocalExecutor()
        self.results_dir = Path(results_dir or default_results_dir()).resolve()
        self.result = SweepResult()
        self.manifest: SweepManifest | None = None
        self.done = 0  # processes the executor gave back
        self._family_cvs: dict[tuple[str, str, str], list[float]] = {}  # (framework, mode, precision) -> ended CVs
        self.reference: SpeedReference | None = None
        self._t0 = time.perf_counter()
        self._bar = None

    def execute(self) -> SweepResult:
        remove_stale_scratch()  # a killed sweep's distributed scratch and namespaces (its kernel folders: below)
        with kernel_environment(host_dir(self.results_dir) / NOTEBOOKS / "kernels.log"), \
                results_lock(self.results_dir):
            self._t0 = time.perf_counter()
            try:
                planned = self.plan()
                try:
                    self.run(planned)
                except BaseException as exc:
                    self.finish("interrupted")
                    if isinstance(exc, KeyboardInterrupt):
                        _quiet_abandoned_kernel_tasks()
                    raise
                self.finish("finished")
            finally:
                if self.reference is not None:
                    self.reference.close()
        return self.result

    def plan(self) -> Plan:
        """Measure what the estimate needs, plan, write the manifest and say what the sweep will do."""
        profile, local = self.profile, self.executor.local
        if local:  # the first measurement (the peak, then the first run) waits for a quiet machine, bounded
            quiet_start(self.announce)
            if speed_reference_on():  # then the machine's own speed, read until steady
                self.reference = SpeedReference(self.announce)
                self.reference.steady(position=0)
        # a scheduler's runs measure their own nodes' peaks (cached per host); the submitting machine measures none
        peaks = measure_peaks(profile, self.announce) if local else {}
        networks = measure_networks(profile, self.results_dir, self.force, self.announce) if local else []
        p = plan(profile, self.results_dir, self.force, self.repeats, peaks, self.executor)
        self.result = SweepResult(sweep_id=new_sweep_id(), estimate_s=p.estimate_s,
                                  already_done=[f"{k}/{r}" for k, r in p.done], dropped=[c.label for c in p.dropped])
        self.manifest = SweepManifest(
            sweep_id=self.result.sweep_id, host=host_name(), profile=profile.name,
            description=profile.description, order_seed=profile.order_seed, repeats=p.repeats,
            adaptive=AdaptivePlan(min_repeats=p.repeats, max_repeats=profile.max_repeats) if profile.adaptive
            else None,
            extra_processes=[], retries=profile.retries, budget_minutes=profile.budget_minutes,
            equivalence_margin=profile.equivalence_margin, force=self.force,
            started=_now(), finished=None, status="running", estimate_s=p.estimate_s,
            rounds_estimate_s=p.rounds_s, expected_extra_s=p.extra_s,
            order=[planned_run(t) for t in p.tasks], already_done=len(p.done),
            dropped=[DroppedConfig(config_key=c.key, label=c.label, reason="not run: over the profile's budget of "
                                   f"{profile.budget_minutes:g} min") for c in p.dropped],
            peaks={k: {"start": v, "end": None} for k, v in peaks.items()}, retried=[],
            networks=networks, not_applicable=list(profile.not_applicable),
            process_walls={}, runs_s=None, estimate_error=None, estimate_error_with_queued=None,
            retry_estimate_s=0.0, extra_estimate_s=0.0, executor=self.executor.state, shard=self.shard,
            compile_caches=compile_cache.listing())
        self._save()
        self.announce(f"sweep {profile.name}: {counted(len(p.tasks), 'run')} to do ({p.repeats} repetitions per "
                      f"config, order seed {profile.order_seed}), {len(p.done)} already recorded, "
                      f"{counted(len(p.dropped), 'config')} dropped to fit the budget; {estimate_line(p)}")
        return p

    def policies(self, p: Plan, journal: Journal) -> list[QueuePolicy]:
        """Retries first: a retry queued keeps the adaptive plan waiting until it has run."""
        out: list[QueuePolicy] = [Retries(self.profile.retries, journal)]
        if self.profile.adaptive:
            budget_s = self.profile.budget_minutes * 60 or float("inf")
            kept = [c for c in self.profile.configs if c not in set(p.dropped)]
            out.append(AdaptiveExtras(self.profile, self.results_dir, kept,
                                      lambda: budget_s - (time.perf_counter() - self._t0), journal))
        return out

    def run(self, p: Plan) -> None:
        """Submit the queue to the executor, batch after batch while the policies add to it; then what the estimate
        was worth, and the profile's largest-batch searches."""
        from tqdm.auto import tqdm

        m, result, executor = self.manifest, self.result, self.executor
        bar = self._bar = tqdm(total=len(p.tasks), desc=f"sweep {self.profile.name} on {host_name()}", unit="run",
                               disable=not self.progress)
        queue = SweepQueue(p.tasks, on_add=lambda _: setattr(bar, "total", bar.total + 1))
        policies = self.policies(p, Journal(m, result, p.estimator, bar.write, self._save))
        t_runs = t1 = time.perf_counter()
        _show_next(bar, queue, self.done, len(p.tasks))
        while self.done < len(queue):
            batch = [Submission(t, self._info(self.done + i, t)) for i, t in enumerate(queue.tasks[self.done:])]
            # closed at once when the sweep stops: a scheduler's executor cancels this sweep's jobs
            with contextlib.closing(executor.submit(batch, self.results_dir, self._save)) as finished:
                for submission in finished:
                    task = submission.task
                    wall = time.perf_counter() - t1
                    result.papermill_s += wall
                    if executor.local:  # a scheduler's job runs elsewhere: the time between two ends is not its wall
                        m.process_walls[wall_key(task.config.key, task.repeat, task.attempt)] = wall
                    result.ran.append(f"{task.config.label} r{task.repeat}")
                    self.done += 1
                    bar.update(1)
                    t1 = time.perf_counter()
                    self._ended(task, queue, policies)
                    self._between_groups(task, queue)
                    # after the policies: the run they queued (an extra process, a retry) is the one that runs next
                    _show_next(bar, queue, self.done, len(p.tasks))
        bar.close()
        m.runs_s = time.perf_counter() - t_runs  # what the estimate is of (the timed runs)
        # the estimate printed before the start against the actual time; and the estimator's own accuracy, with what
        # was queued later (the adaptive plan's extra processes, the retries) added at its estimate
        m.estimate_error = estimate_error(m.estimate_s, m.runs_s)
        queued = m.rounds_estimate_s + m.extra_estimate_s + m.retry_estimate_s
        m.estimate_error_with_queued = estimate_error(queued, m.runs_s)
        m.memory_searches = measure_memory(self.profile, self.results_dir, self.announce) if executor.local else []

    def _ended(self, task: Task, queue: SweepQueue, policies: list[QueuePolicy]) -> None:
        runs = latest_by_repeat(self.executor.records(self.results_dir, task.config.key), task.config.key)
        record = runs.get(task.repeat)
        if record is not None:
            self.result.measured_s += record.duration_s
        family = (task.config.framework, task.config.mode, task.config.precision)
        ended = Ended(task, self.done, record, [r for k, r in runs.items() if k != task.repeat],
                      list(self._family_cvs.get(family, [])))
        if record is not None and record.ok and record.summary and record.summary.cv is not None:
            self._family_cvs.setdefault(family, []).append(record.summary.cv)
        for policy in policies:
            policy.after(ended, queue)
        if record is not None and record.status != "ok" and record.attempt == task.attempt:
            self.result.failures.append((record.label, record.status, record.reason))

    def finish(self, status: str) -> None:
        """Close the manifest: the end peak of a finished local sweep, when it ended, how far it got."""
        m = self.manifest
        if self._bar is not None:
            self._bar.close()
        m.status = status
        if status == "finished" and self.executor.local:
            for k, v in measure_peaks(self.profile, self.announce).items():
                m.peaks.setdefault(k, {"start": None})["end"] = v
        m.finished = _now()
        m.compile_caches = compile_cache.listing()  # the folders as the sweep's processes left them
        m.elapsed_s = time.perf_counter() - self._t0
        m.runs_done = self.done
        self._save()
        self.result.manifest = m

    def _info(self, order_index: int, task: Task) -> dict:
        """The record's placement in this sweep."""
        m = self.manifest
        info = {"id": m.sweep_id, "profile": m.profile, "order_seed": m.order_seed, "order_index": order_index,
                "round": task.round, "planned_runs": len(m.order)}
        # its comparison group ran back to back in this round (plan.interleaved_order; the adaptive plan's extras go
        # as whole groups in a round of their own): the block it is compared in; a retry runs apart from its group
        return {**info, "block": task.round} if task.attempt == 0 else info

    def _between_groups(self, task: Task, queue: SweepQueue) -> None:
        """A speed reading where a comparison group has ended (the next process is another group's) and at the end."""
        if self.reference is None:
            return
        if self.done >= len(queue) or comparison_group(queue.tasks[self.done].config) != comparison_group(task.config):
            self.reference.read(self.done)
            self._save()

    def _save(self) -> None:
        if self.reference is not None:
            self.manifest.speed_reference = list(self.reference.readings)
            self.manifest.speed_reference_label = self.reference.label
            self.manifest.speed_reference_failed = self.reference.failed
        write_sweep(self.results_dir, self.manifest)


def _show_next(bar, queue: SweepQueue, done: int, planned: int) -> None:
    """Name on the progress bar the run that starts next (none when the queue is done), saying which are queued
    beyond the plan."""
    if done < len(queue):
        nxt = queue.tasks[done]
        kind = f" (retry {nxt.attempt})" if nxt.attempt else " (extra process)" if done >= planned else ""
        bar.set_postfix_str(f"{nxt.config.label} r{nxt.repeat}{kind}", refresh=True)


def quiet_start(announce: Callable[[str], None], look: Callable[[], float | None] = machine_share_busy,
                wait: Callable[..., dict] = wait_until_quiet, max_wait_s: float | None = None) -> dict | None:
    """Before a sweep's first measurement: wait (at most `max_wait_s`, default QUIET_MAX_WAIT_S or the environment's
    BENCH_QUIET_START_S) while other work uses more than OTHER_CPU_LIMIT of the CPUs, and say so. On 2026-11-27 six of
    a fresh clone's seven disturbed processes came in its first 75 s, while the machine was still busy from building
    the environment. Returns what was seen, None where the machine was quiet at once (or /proc/stat unreadable)."""
    if max_wait_s is None:
        max_wait_s = float(os.environ.get("BENCH_QUIET_START_S", QUIET_MAX_WAIT_S))
    if max_wait_s <= 0:
        return None
    share = look()
    if share is None or share <= OTHER_CPU_LIMIT:
        return None
    announce(f"waiting for a quiet machine before the first measurement: other work uses {share:.0%} of the CPUs "
             f"(limit {OTHER_CPU_LIMIT:.0%}; waiting at most {max_wait_s:g} s)")
    seen = wait(max_wait_s=max_wait_s, look=look)
    last = seen["busy_share"]
    announce(f"quiet after {seen['waited_s']:.0f} s" if seen["quiet"] else
             f"still busy after {seen['waited_s']:.0f} s (other work: {last:.0%} of the CPUs): measuring anyway; "
             "disturbed runs are flagged and retried")
    return seen


def run_sweep(profile: Profile, results_dir: Path | str | None = None, force: bool = False,
              progress: bool = True, repeats: int | None = None,
              announce: Callable[[str], None] = print, executor: Executor | None = None,
              shard: str | None = None) -> SweepResult:
    """Run every (config, repetition) of `profile` not yet recorded (all of them with `force`): on this host,
    or through `executor` (bench/sweep/executors.py); `shard` ('k/n') is noted in the manifest."""
    return Sweep(profile, results_dir, force, progress, repeats, announce, executor, shard).execute()
