"""The sweep runner: repeated, interleaved papermill runs of notebooks/benchmark.ipynb; resumable.

Order of work: take the host's results lock, plan (interleaved repetitions, budget), measure the
device peak, run every task in a fresh notebook process, retry a disturbed run at the end of the
queue (a bounded number of times), measure the peak again, and close the sweep manifest.
"""

from __future__ import annotations

import contextlib
import fcntl
import logging
import math
import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from ..adapters import ADAPTERS, measures_a_framework
from ..config import RunConfig
from ..errors import ConfigError, UnsupportedError
from ..host.interference import cv_outlier_reason
from ..host.manifest import host_name, mask_text
from ..measurement.flops import flops_per_image
from ..measurement.peak import measure_peak, peak_key
from ..measurement.utilisation import peak_threads
from ..paths import PROJECT_ROOT, default_results_dir
from ..results.record import Record
from ..results.store import host_dir, host_records, write_record
from ..results.sweep_manifest import load_sweeps, new_sweep_id, process_walls, wall_key, write_sweep
from ..runs import maxbatch
from ..runs.distributed import network
from ..runs.distributed.cluster import resolve
from ..runs.distributed.launcher import LaunchError
from ..runs.distributed.run import remove_stale_scratch
from ..values import counted
from .executors import LocalExecutor, SlurmExecutor
from .jupyter_kernels import kernel_environment
from .masked_notebooks import execute_masked
from .plan import (
    PROCESS_OVERHEAD_S,
    STARTUP_S,
    Task,
    busy_warning,
    clean_process_values,
    estimate_run_s,
    expected_extra_s,
    extra_share,
    fit_budget,
    fixed_cost_s,
    interleaved_order,
    next_process,
    startup_history,
)
from .profiles import Profile

BENCHMARK_NOTEBOOK = PROJECT_ROOT / "notebooks" / "benchmark.ipynb"
DISTRIBUTED_NOTEBOOK = PROJECT_ROOT / "notebooks" / "distributed.ipynb"  # its ranks are plain processes
NOTEBOOKS = "notebooks"
LOCK_FILE = ".sweep.lock"


@dataclass
class SweepResult:
    sweep_id: str = ""
    ran: list[str] = field(default_factory=list)  # run labels, one per process (retries included)
    already_done: list[str] = field(default_factory=list)  # "config key/repeat"
    dropped: list[str] = field(default_factory=list)  # labels not run: over budget
    retried: list[str] = field(default_factory=list)  # "label (repeat r): reason"
    extra: list[str] = field(default_factory=list)  # adaptive plan: "label (repeat r): why it got one more process"
    still_disturbed: list[str] = field(default_factory=list)
    failures: list[tuple[str, str, str]] = field(default_factory=list)  # (label, status, reason)
    estimate_s: float = 0.0
    papermill_s: float = 0.0  # wall time inside papermill (kernel start, imports, run)
    measured_s: float = 0.0  # the runs' own duration as recorded (what the harness spent)
    manifest: dict = field(default_factory=dict)  # the sweep manifest as written last


def notebook_parameters(config: RunConfig, results_dir: Path, task: Task, sweep: dict) -> dict:
    """The benchmark notebook's parameters: the config's fields as `settings` (the notebook repeats no default)."""
    settings = {k: v for k, v in config.to_dict().items() if k != "extra"}
    return {"settings": settings, "results_dir": str(results_dir), "repeat": task.repeat, "attempt": task.attempt,
            "sweep": sweep}


def executed_notebook_path(config: RunConfig, results_dir: Path, repeat: int = 0, attempt: int = 0) -> Path:
    c = config
    dist = f"_{c.strategy}x{c.workers}" if c.distributed else ""
    name = (f"{c.framework}_{c.model}_{c.mode}_{c.precision}_bs{c.batch_size}_{c.device.replace(':', '')}"
            f"{dist}_r{repeat}a{attempt}_{c.key}.ipynb")
    return host_dir(results_dir) / NOTEBOOKS / name


def run_notebook(config: RunConfig, results_dir: Path, task: Task, sweep: dict) -> None:
    """Execute the benchmark notebook for one task; the executed copy is kept under results/<host>/, its outputs
    masked each time it is written."""
    out = executed_notebook_path(config, results_dir, task.repeat, task.attempt)
    out.parent.mkdir(parents=True, exist_ok=True)
    notebook = DISTRIBUTED_NOTEBOOK if config.distributed else BENCHMARK_NOTEBOOK
    execute_masked(notebook, out, parameters=notebook_parameters(config, results_dir, task, sweep),
                   kernel_name=ADAPTERS.get(config.framework).kernel, cwd=str(PROJECT_ROOT), progress_bar=False,
                   request_save_on_cell_execute=True)  # an interrupted run keeps its notebook


def _failure_reason(exc: BaseException) -> str:
    ename, evalue = getattr(exc, "ename", None), getattr(exc, "evalue", None)
    if ename:
        return f"notebook failed: {ename}: {(evalue or '').splitlines()[0] if evalue else ''}".rstrip(": ")
    name = type(exc).__name__
    if name == "DeadKernelError":
        return "the notebook's kernel died (killed for memory, or a crash in a framework)"
    return f"notebook failed: {name}: {str(exc).splitlines()[0] if str(exc) else ''}".rstrip(": ")


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


def estimate_error(estimate_s: float | None, actual_s: float | None) -> float | None:
    """(estimate - actual) / actual: positive when the estimate was too long; None without both."""
    if not estimate_s or not actual_s:
        return None
    return (estimate_s - actual_s) / actual_s


def estimate_line(p: dict) -> str:
    """The estimate a plan prints before it starts: of the whole sweep, the adaptive plan's expected extra processes
    included and named."""
    text = f"estimated {p['estimate_s'] / 60:.1f} min"
    if p.get("extra_s"):
        text += (f" ({p['rounds_s'] / 60:.1f} for the rounds, ~{p['extra_s'] / 60:.1f} for the extra processes "
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
                flops, _ = flops_per_image(self.results_dir, c.model, c.image_size, c.mode)
        startup = self.startup.get((c.framework, c.engine, c.model), self.startup.get((c.framework, c.engine),
                                                                                      STARTUP_S))
        return estimate_run_s(c, task.repeat, self.history.get(c.key, []), flops, peak.get("flops_per_sec"),
                              self.overhead_s, startup)


def plan(profile: Profile, results_dir: Path, force: bool = False, repeats: int | None = None,
         peaks: dict[str, dict] | None = None, executor: LocalExecutor | SlurmExecutor | None = None) -> dict:
    """What a sweep would run now: tasks in order, repetitions already done, configs over budget, estimate."""
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
    return {"tasks": kept, "done": sorted(done & {(c.key, r) for c in profile.configs for r in range(repeats)}),
            "dropped": dropped, "estimate_s": estimate + extra, "rounds_s": estimate, "extra_s": extra,
            "repeats": repeats, "estimator": estimator}


def adaptive_task(profile: Profile, results_dir: Path, kept: list[RunConfig], estimator: _Estimator,
                  budget_left_s: float) -> tuple[Task, str] | None:
    """The adaptive plan's next process (bench/sweep/plan.py: next_process) from this host's records, or None."""
    records = [r for r in host_records(results_dir) if r.config_key in {c.key for c in kept}]
    failing = {r.config_key for r in records if r.status != "ok"}  # another process would fail or skip again
    kept = [c for c in kept if c.key not in failing]
    repeats: dict[str, set[int]] = {}
    for r in records:
        repeats.setdefault(r.config_key, set()).add(r.repeat)
    processes = {k: len(v) for k, v in repeats.items()}
    nxt = next_process(kept, clean_process_values(records), processes,
                       lambda c: estimator(Task(c, max(repeats.get(c.key, {0})) + 1, 0)), budget_left_s,
                       profile.max_repeats)
    if nxt is None:
        return None
    repeat = max(repeats.get(nxt.config.key, {-1})) + 1
    return Task(nxt.config, repeat, repeat), nxt.reason


def _sweep_info(manifest: dict, order_index: int, task: Task) -> dict:
    return {"id": manifest["sweep_id"], "profile": manifest["profile"], "order_seed": manifest["order_seed"],
            "order_index": order_index, "round": task.round, "planned_runs": len(manifest["order"])}


def measure_peaks(profile: Profile) -> dict[str, dict]:
    keys = {(c.device, c.precision, peak_threads(c))
            for c in profile.configs if measures_a_framework(c.framework)}
    return {peak_key(*k): measure_peak(*k) for k in sorted(keys)}


def measure_networks(profile: Profile, results_dir: Path, force: bool, announce) -> list[str]:
    """Fit alpha-beta for every link the profile's distributed configs use (cached per host)."""

    links = sorted({(c.workers, c.nodes, c.link_gbit, c.link_delay_ms, c.cluster) for c in profile.configs
                    if c.distributed and c.workers > 1}, key=str)
    examples = {(c.workers, c.nodes, c.cluster): c for c in profile.configs if c.cluster}
    done = []
    for workers, nodes, gbit, delay, cluster in links:
        try:  # real machines: every machine's sweep measures their link together (node 0 stores it)
            machines = resolve(examples[workers, nodes, cluster], env=os.environ) if cluster else None
            entry = network.measure(results_dir, workers, nodes, gbit, delay, force=force, machines=machines)
            done += [entry["key"]] if entry else []
        except (LaunchError, ConfigError, OSError) as exc:  # the model is extra: say so, go on
            announce(f"network micro-benchmark for {network.link_key(workers, nodes, gbit, delay, cluster)} "
                     f"failed: {mask_text(str(exc))}")
    return done


def measure_memory(profile: Profile, results_dir: Path, announce) -> list[str]:
    """The profile's largest-batch searches (bench/runs/maxbatch.py), each stored once per host and reused."""

    done = []
    for config, cap, max_batch in profile.memory_searches:
        cap = cap or maxbatch.default_cap_bytes(config.device)
        what = f"{config.framework}/{config.engine} {config.model} {config.mode} {config.precision} {config.device}"
        reason = ADAPTERS.get(config.framework).cannot_run(config.mode, config.precision, config.device)
        if reason:  # what a run would skip (the profile already left out what the framework cannot do)
            announce(f"largest batch for {what}: skipped ({reason})")
            continue
        announce(f"largest batch for {what} ({maxbatch.cap_text(cap)}, at most {max_batch})")
        try:
            found = maxbatch.execute(config, results_dir, cap, max_batch)
        except (OSError, ValueError) as exc:  # an extra section: say so and go on (nothing is stored for it)
            announce(f"  largest batch for {what} failed: {mask_text(str(exc))}")
            continue
        announce(f"  largest batch {found['largest_batch']} (limited by {found['limited_by']}), "
                 f"{len(found['probes'])} probes in {found['seconds']:.0f} s")
        done.append(what)
    return done


def _needs_retry(record: Record, siblings: list[Record]) -> str | None:
    """Why a finished run should be repeated: other programs disturbed it, or it jittered far more than
    its config's other repetitions."""
    if record.status != "ok":
        return None
    disturbed = [f.reason for f in record.flags if f.name == "disturbed"]
    if disturbed:
        return disturbed[0]
    cvs = [s.summary.cv if s.summary else None for s in siblings if s.status == "ok"]
    return cv_outlier_reason(record.summary.cv if record.summary else None, cvs)


def _latest(records: list[Record], key: str) -> dict[int, Record]:
    out: dict[int, Record] = {}
    for r in sorted(records, key=lambda r: r.created):
        if r.config_key == key:
            out[r.repeat] = r
    return out


def _queue_extra(queue: list[Task], extra: tuple[Task, str] | None, result: SweepResult, manifest: dict,
                 bar, estimate: Callable[[Task], float]) -> bool:
    """Append the adaptive plan's next process to the queue (and say why in the manifest); False when none."""
    if extra is None:
        return False
    task, why = extra
    queue.append(task)
    manifest["extra_estimate_s"] += estimate(task)
    bar.total += 1
    result.extra.append(f"{task.config.label} (repeat {task.repeat}): {why}")
    manifest["extra_processes"].append({"config_key": task.config.key, "label": task.config.label,
                                        "repeat": task.repeat, "reason": why})
    manifest["order"].append({"config_key": task.config.key, "repeat": task.repeat, "round": task.round,
                              "label": task.config.label})
    return True


def _failure(config: RunConfig, reason: str, detail: str | None, task: Task, sweep: dict,
             status: str = "error") -> Record:
    """The record of a run whose notebook could not start it or died outside the harness."""
    return Record.failure(config, reason, detail, task.repeat, task.attempt, sweep, status,
                          framework={"version": ADAPTERS.get(config.framework).version()})


def record_failure(task: Task, results_dir: Path, info: dict, reason: str, detail: str | None,
                   host: str | None = None) -> None:
    """The error record of a task whose run ended without writing one for this attempt of this sweep."""
    config = task.config
    latest = _latest(host_records(results_dir, host=host, config_key=config.key), config.key).get(task.repeat)
    if latest is None or latest.attempt != task.attempt or (latest.sweep.id if latest.sweep else None) != info["id"]:
        record = _failure(config, reason, detail, task, info)
        record.host = host or record.host
        write_record(record, results_dir)


def run_task(task: Task, results_dir: Path, info: dict) -> None:
    """One task, here (on this machine, or on a Slurm node): its notebook in a fresh kernel; a run that cannot
    start or dies outside the harness becomes a record, so the sweep goes on."""
    config = task.config
    try:
        ADAPTERS.get(config.framework).check_available()  # before starting a kernel that cannot run it
        run_notebook(config, results_dir, task, info)
    except UnsupportedError as exc:
        write_record(_failure(config, str(exc), None, task, info, status="skipped"), results_dir)
    except Exception as exc:  # a failing config is recorded and the sweep goes on
        if getattr(exc, "ename", None) == "KeyboardInterrupt":
            raise KeyboardInterrupt from None  # Ctrl-C reached the kernel first: stop, record nothing
        record_failure(task, results_dir, info, _failure_reason(exc), repr(exc))


def run_sweep(profile: Profile, results_dir: Path | str | None = None, force: bool = False,
              progress: bool = True, repeats: int | None = None,
              announce: Callable[[str], None] = print, executor: LocalExecutor | SlurmExecutor | None = None,
              shard: str | None = None) -> SweepResult:
    """Run every (config, repetition) of `profile` not yet recorded (all of them with `force`): on this host,
    or through `executor` (bench/sweep/executors.py); `shard` ('k/n') is noted in the manifest."""
    from tqdm.auto import tqdm

    executor = executor or LocalExecutor()
    results_dir = Path(results_dir or default_results_dir()).resolve()
    remove_stale_scratch()  # a killed sweep's distributed scratch and namespaces (its kernel folders: below)
    with kernel_environment(host_dir(results_dir) / NOTEBOOKS / "kernels.log"), results_lock(results_dir):
        t0 = time.perf_counter()
        # a scheduler's runs measure their own nodes' peaks (cached per host); the submitting machine measures none
        peaks = measure_peaks(profile) if executor.local else {}
        networks = measure_networks(profile, results_dir, force, announce) if executor.local else []
        p = plan(profile, results_dir, force, repeats, peaks, executor)
        result = SweepResult(sweep_id=new_sweep_id(), estimate_s=p["estimate_s"],
                             already_done=[f"{k}/{r}" for k, r in p["done"]],
                             dropped=[c.label for c in p["dropped"]])
        manifest = {
            "sweep_id": result.sweep_id, "host": host_name(), "profile": profile.name,
            "description": profile.description, "order_seed": profile.order_seed, "repeats": p["repeats"],
            "adaptive": {"min_repeats": p["repeats"], "max_repeats": profile.max_repeats} if profile.adaptive else None,
            "extra_processes": [],
            "retries": profile.retries, "budget_minutes": profile.budget_minutes, "force": force,
            "started": _now(), "finished": None, "status": "running", "estimate_s": p["estimate_s"],
            "rounds_estimate_s": p["rounds_s"], "expected_extra_s": p["extra_s"],
            "order": [{"config_key": t.config.key, "repeat": t.repeat, "round": t.round, "label": t.config.label}
                      for t in p["tasks"]],
            "already_done": len(p["done"]),
            "dropped": [{"config_key": c.key, "label": c.label, "reason": "not run: over the profile's budget of "
                         f"{profile.budget_minutes:g} min"} for c in p["dropped"]],
            "peaks": {k: {"start": v, "end": None} for k, v in peaks.items()}, "retried": [],
            "networks": networks, "not_applicable": list(profile.not_applicable),
            "process_walls": {}, "runs_s": None, "estimate_error": None, "estimate_error_with_queued": None,
            "retry_estimate_s": 0.0, "extra_estimate_s": 0.0,
            "executor": executor.state, "shard": shard,
        }
        write_sweep(results_dir, manifest)
        announce(f"sweep {profile.name}: {counted(len(p['tasks']), 'run')} to do ({p['repeats']} repetitions per "
                 f"config, order seed {profile.order_seed}), {len(p['done'])} already recorded, "
                 f"{counted(len(p['dropped']), 'config')} over budget; {estimate_line(p)}")
        queue = list(p["tasks"])
        bar = tqdm(total=len(queue), desc=f"sweep {profile.name} on {host_name()}", unit="run", disable=not progress)
        index = 0
        kept = [c for c in profile.configs if c not in set(p["dropped"])]
        t_runs = time.perf_counter()
        budget_s = profile.budget_minutes * 60 or float("inf")
        finished = executor.run(queue, results_dir, lambda i, t: _sweep_info(manifest, i, t), run_task,
                                record_failure, lambda: write_sweep(results_dir, manifest))
        try:
            t1 = time.perf_counter()
            for index, task in finished:
                config = task.config
                wall = time.perf_counter() - t1
                result.papermill_s += wall
                if executor.local:  # a scheduler's job runs elsewhere: the time between two ends is not its wall
                    manifest["process_walls"][wall_key(config.key, task.repeat, task.attempt)] = wall
                result.ran.append(f"{config.label} r{task.repeat}")
                index += 1
                bar.update(1)
                if index < len(queue):
                    bar.set_postfix_str(f"{queue[index].config.label} r{queue[index].repeat}", refresh=True)
                t1 = time.perf_counter()
                runs = _latest(executor.records(results_dir, config.key), config.key)
                record = runs.get(task.repeat)
                if record is not None:
                    result.measured_s += record.duration_s
                    why = _needs_retry(record, [r for k, r in runs.items() if k != task.repeat])
                    if why and task.attempt < profile.retries:
                        queue.append(Task(config, task.repeat, task.round, task.attempt + 1))
                        manifest["retry_estimate_s"] += p["estimator"](queue[-1])  # what retries add to the estimate
                        bar.total += 1
                        result.retried.append(f"{config.label} (repeat {task.repeat}): {why}")
                        manifest["retried"].append({"config_key": config.key, "repeat": task.repeat,
                                                    "attempt": task.attempt, "reason": why})
                        write_sweep(results_dir, manifest)
                    elif why:
                        result.still_disturbed.append(f"{config.label} (repeat {task.repeat}): {why}")
                    if why and not manifest.get("busy_warning"):  # said once, as early as the load is clear
                        warning = busy_warning(index, len(result.retried) + len(result.still_disturbed),
                                               manifest["retry_estimate_s"])
                        if warning:
                            manifest["busy_warning"] = warning
                            bar.write(warning)
                    if record.status != "ok" and record.attempt == task.attempt:
                        result.failures.append((record.label, record.status, record.reason))
                if profile.adaptive and index >= len(queue):  # the rounds are done: one more process where undecided
                    _queue_extra(queue, adaptive_task(profile, results_dir, kept, p["estimator"],
                                                      budget_s - (time.perf_counter() - t0)),
                                 result, manifest, bar, p["estimator"])
            bar.close()
            manifest["runs_s"] = time.perf_counter() - t_runs  # what the estimate is of (the timed runs)
            # the estimate printed before the start against the actual time; and the estimator's own accuracy, with
            # what was queued later (the adaptive plan's extra processes, the retries) added at its estimate
            manifest["estimate_error"] = estimate_error(manifest["estimate_s"], manifest["runs_s"])
            queued = manifest["rounds_estimate_s"] + manifest["extra_estimate_s"] + manifest["retry_estimate_s"]
            manifest["estimate_error_with_queued"] = estimate_error(queued, manifest["runs_s"])
            manifest["memory_searches"] = measure_memory(profile, results_dir, announce) if executor.local else []
            manifest["status"] = "finished"
        except BaseException as exc:
            finished.close()  # now, not when collected: a scheduler's executor cancels this sweep's jobs
            manifest["status"] = "interrupted"
            if isinstance(exc, KeyboardInterrupt):
                _quiet_abandoned_kernel_tasks()
            raise
        finally:
            bar.close()
            if manifest["status"] == "finished" and executor.local:
                for k, v in measure_peaks(profile).items():
                    manifest["peaks"].setdefault(k, {"start": None})["end"] = v
            manifest["finished"] = _now()
            manifest["elapsed_s"] = time.perf_counter() - t0
            manifest["runs_done"] = index
            write_sweep(results_dir, manifest)
            result.manifest = manifest
    return result

