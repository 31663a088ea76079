"""Executors under the sweep: where each task's papermill notebook runs (`local`, the default, or `slurm`).

An executor is anything with the `Executor` protocol: `check` what it needs before any work, and `submit` a batch
of tasks, getting each back as it finishes, in the batch's order. The sweep (bench/sweep/runner.py) owns the
queue and submits what it adds meanwhile (retries, the adaptive plan's extra processes) as the next batch. Both
executors run the same function on a task (bench/sweep/task.py `run_task`: the benchmark notebook in a fresh
kernel, or the record of why it could not run), so a record does not depend on the executor; the Slurm one
adds its job id and node to the record's sweep placement.

Slurm (through submitit): the tasks not yet submitted go out as one job array, one array task per process
repetition, in the planned order, with at most `parallel` of them running at once (`%parallel`). Slurm
starts an array's tasks in index order, so with `parallel: 1` (the default) the sweep runs exactly as the
local one does, one benchmark at a time in the interleaved order; with `parallel: N` (N nodes) the order is
kept per node and, since `parallel > 1` requires `exclusive`, two benchmarks never share a node (they would
distort each other). A job that ends without a result (cancelled, timed out, its node failed) becomes an
`error` record with the scheduler's reason and its state, and a resumed sweep submits it again. Ctrl-C
cancels this sweep's jobs, and only those.
"""

from __future__ import annotations

import json
import math
import os
import re
import signal
import time
import traceback
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from ..config import RunConfig
from ..errors import ConfigError
from ..host.interference import wait_until_quiet
from ..host.machines import SLURM_IDS
from ..host.manifest import host_name
from ..masking import mask_text, masked_command
from ..paths import PROJECT_ROOT
from ..results.record import Record
from ..results.store import atomic_write_json, finished_runs, host_dir, host_records
from ..values import env_integer
from . import slurm_jobs
from .jupyter_kernels import kernel_environment
from .plan import Task
from .task import record_failure, run_task

EXECUTORS = ("local", "slurm")
JOBS = "slurm-jobs"  # results/<host>/slurm-jobs/<sweep id>/: submitit's pickles and the jobs' logs
POLL_S = 2.0
RESULT_GRACE_S = 10.0  # a job that has ended may still be writing its result file (shared file systems lag)


@dataclass(frozen=True)
class Submission:
    """A task and its place in the sweep (the record's `sweep` section: id, profile, order index, round)."""

    task: Task
    info: dict[str, Any]


def _nothing() -> None:
    pass


@runtime_checkable
class Executor(Protocol):
    """Where a sweep's tasks run. `state` is what the sweep manifest keeps of it (its name, a scheduler's jobs)."""

    name: str
    local: bool  # True: the sweep measures peaks, links and largest batches on this machine
    state: dict[str, Any]

    def check(self, configs: Sequence[RunConfig]) -> None:
        """Before any work: raise ConfigError when the executor cannot run these configs."""

    def finished(self, results_dir: Path) -> set[tuple[str, int]]:
        """(config key, repeat) of the repetitions a resumed sweep skips."""

    def records(self, results_dir: Path, config_key: str) -> list[Record]:
        """The records of a config its runs wrote (wherever they ran)."""

    def submit(self, batch: Sequence[Submission], results_dir: Path,
               notify: Callable[[], None] = _nothing) -> Iterator[Submission]:
        """Run the batch, yielding each submission once its task has ended (its record written, a failure's
        included), in the batch's order; `notify` is called whenever `state` changed. Closing the iterator early
        (Ctrl-C, the sweep failed) stops what is still running."""


class LocalExecutor:
    """Today's sweep: every task in this process's machine, one after the other, in the queue's order."""

    name = "local"
    local = True  # the sweep measures peaks, links and largest batches on this machine

    def __init__(self, wait_until_quiet: Callable[[], dict] = wait_until_quiet) -> None:
        self.state = {"name": self.name}
        self.wait_until_quiet = wait_until_quiet

    def check(self, configs: Sequence[RunConfig]) -> None:
        """Nothing to check: the profile was validated against this machine when it loaded."""

    def finished(self, results_dir: Path) -> set[tuple[str, int]]:
        return finished_runs(results_dir)

    def records(self, results_dir: Path, config_key: str) -> list[Record]:
        return host_records(results_dir, config_key=config_key)

    def submit(self, batch: Sequence[Submission], results_dir: Path,
               notify: Callable[[], None] = _nothing) -> Iterator[Submission]:
        for submission in batch:
            if submission.task.attempt > 0:  # a retry goes where the machine is quiet, not into the same busy spell
                seen = self.wait_until_quiet()
                submission.info.update(quiet_wait_s=round(seen["waited_s"], 1),
                                       busy_share_before=seen["busy_share"])
            run_task(submission.task, results_dir, submission.info)
            yield submission


# ---- Slurm ------------------------------------------------------------------------------------------------

OPTION_KEYS = ("partition", "time_limit", "cpus_per_task", "gpus_per_task", "exclusive", "constraint", "parallel")
DEFAULT_TIME_LIMIT_MIN = 60
_NAME = re.compile(r"[A-Za-z0-9_.+-]+")
_CONSTRAINT = re.compile(r"[A-Za-z0-9_.,&|*!()\[\]-]+")
_TIME = re.compile(r"(?:(\d+)-)?(\d+)(?::(\d+))?(?::(\d+))?")


@dataclass(frozen=True)
class SlurmOptions:
    """What each job asks the scheduler for (profile key `slurm`, or `bench sweep` options)."""

    partition: str | None = None  # None: the cluster's default partition
    time_limit_min: int = DEFAULT_TIME_LIMIT_MIN
    cpus_per_task: int | None = None
    gpus_per_task: int | None = None
    exclusive: bool = True  # the whole node: nothing else runs beside a benchmark
    constraint: str | None = None
    parallel: int = 1  # jobs running at once (at most one per node)


def time_limit_minutes(value) -> int:
    """A time limit as Slurm writes it (minutes, 'H:MM:SS', 'D-HH:MM[:SS]') in whole minutes."""
    if isinstance(value, int) and not isinstance(value, bool):
        minutes = value
    else:
        match = _TIME.fullmatch(str(value).strip())
        if not match:
            raise ConfigError(f"invalid time limit {value!r}; give minutes (e.g. 90) or Slurm's H:MM:SS or "
                              "D-HH:MM:SS (e.g. 1:30:00)")
        days, a, b, c = (int(x) if x else None for x in match.groups())
        if days is not None:  # D-H, D-H:M, D-H:M:S
            hours, mins, secs = a, b or 0, c or 0
        elif c is not None:  # H:M:S
            hours, mins, secs = a, b, c
        elif b is not None:  # M:S
            hours, mins, secs = 0, a, b
        else:
            hours, mins, secs = 0, a, 0
        minutes = math.ceil(((days or 0) * 1440 + hours * 60 + mins) + secs / 60)
    if not 1 <= minutes <= 365 * 1440:
        raise ConfigError(f"invalid time limit {value!r}: it must be from 1 minute to 365 days")
    return minutes


def _count(key: str, value, low: int, high: int) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or not low <= value <= high:
        raise ConfigError(f"invalid {key} {value!r}; it must be an integer from {low} to {high}")
    return value


def slurm_options(given: Mapping, where: str = "slurm options") -> SlurmOptions:
    """Validated options from a mapping of OPTION_KEYS (None values are left at their defaults)."""
    unknown = sorted(set(map(str, given)) - set(OPTION_KEYS))
    if unknown:
        raise ConfigError(f"{where}: unknown key(s) {', '.join(unknown)}; valid: {', '.join(OPTION_KEYS)}")
    g = {k: v for k, v in given.items() if v is not None}
    try:
        out = {}
        for key, pattern in (("partition", _NAME), ("constraint", _CONSTRAINT)):
            if key in g:
                if not isinstance(g[key], str) or not pattern.fullmatch(g[key]):
                    raise ConfigError(f"invalid {key} {g[key]!r}; it must be a Slurm {key} (letters, digits"
                                      f"{', &, |, brackets' if key == 'constraint' else ''} and _ . + -)")
                out[key] = g[key]
        if "time_limit" in g:
            out["time_limit_min"] = time_limit_minutes(g["time_limit"])
        if "cpus_per_task" in g:
            out["cpus_per_task"] = _count("cpus_per_task", g["cpus_per_task"], 1, 4096)
        if "gpus_per_task" in g:
            out["gpus_per_task"] = _count("gpus_per_task", g["gpus_per_task"], 0, 64) or None
        if "parallel" in g:
            out["parallel"] = _count("parallel", g["parallel"], 1, 1000)
        if "exclusive" in g:
            if not isinstance(g["exclusive"], bool):
                raise ConfigError(f"invalid exclusive {g['exclusive']!r}; valid choices: true, false")
            out["exclusive"] = g["exclusive"]
        options = SlurmOptions(**out)
        if options.parallel > 1 and not options.exclusive:
            raise ConfigError(f"parallel {options.parallel} needs exclusive: without whole nodes, two benchmarks "
                              "could share a node and distort each other")
    except ConfigError as exc:
        raise ConfigError(f"{where}: {exc}") from None
    return options


def check_for_profile(options: SlurmOptions, configs) -> None:
    """What a job asks for must fit the profile's runs: enough CPUs for their threads, GPUs for GPU runs."""
    threads = max(c.threads * c.workers for c in configs)
    if options.cpus_per_task is not None and options.cpus_per_task < threads:
        raise ConfigError(f"--cpus-per-task {options.cpus_per_task} is fewer than the {threads} threads a run of this "
                          f"profile uses; give at least {threads} (or --exclusive for whole nodes)")
    gpu = sorted({c.device for c in configs if c.device != "cpu"})
    if gpu and not options.gpus_per_task:
        raise ConfigError(f"the profile runs on {', '.join(gpu)}: give --gpus-per-task (Slurm gives a job no GPU "
                          "it did not ask for)")


def slurm_job_id(env: Mapping[str, str]) -> str:
    """This job's id as its files are named ('<array>_<index>' for an array task), each part checked as a Slurm id:
    it becomes part of a file name; 'unknown' outside Slurm."""
    array, index, job = (env_integer(env, name, *SLURM_IDS) for name in
                         ("SLURM_ARRAY_JOB_ID", "SLURM_ARRAY_TASK_ID", "SLURM_JOB_ID"))
    return f"{array}_{index}" if array is not None and index is not None else str(job if job is not None else
                                                                                  "unknown")


def _job(task: Task, results_dir: Path, info: dict, folder: Path) -> None:
    """One array task, on its node: note where it runs, then the same task function as a local sweep."""
    # submitit warns a job of its time limit with SIGUSR2 and then raises inside it, mid-measurement, which would
    # record a notebook error; a benchmark cannot be checkpointed, so the scheduler's TIMEOUT is the record
    signal.signal(signal.SIGUSR2, signal.SIG_IGN)
    job_id = slurm_job_id(os.environ)
    node = os.environ.get("SLURMD_NODENAME") or os.uname().nodename
    atomic_write_json(folder / f"{job_id}.started.json", {"host": host_name(), "node": node})
    try:
        with kernel_environment(folder / f"{job_id}.kernels.log"):
            run_task(task, results_dir, {**info, "executor": "slurm", "job_id": job_id, "node": node})
    except Exception:  # submitit pickles what escapes into the job's result file: masked, as its log is
        raise RuntimeError(mask_text(traceback.format_exc())) from None


class SlurmExecutor:
    """Each task a Slurm job (submitit), its notebook run on the node; records land in results/<node's host>/."""

    name = "slurm"
    local = False  # peaks are measured by the runs on their nodes, not on the submitting machine

    def __init__(self, options: SlurmOptions) -> None:
        self.options = options
        self.state = {"name": self.name, "options": asdict(options), "jobs": []}

    def check(self, configs) -> None:
        """Before any work: a Slurm client, a controller that answers, the partition, the profile's needs."""
        known = slurm_jobs.partitions()
        if self.options.partition and self.options.partition not in known:
            raise ConfigError(f"unknown partition {self.options.partition!r}; valid choices: {', '.join(known)}")
        check_for_profile(self.options, configs)

    def finished(self, results_dir: Path) -> set[tuple[str, int]]:
        """Repetitions a Slurm job finished, on any node (a job that ended without its run is not finished)."""
        return {(r.config_key, r.repeat) for r in _all_hosts(results_dir)
                if r.sweep and r.sweep.job_id and not r.sweep.job_state}

    def records(self, results_dir: Path, config_key: str) -> list[Record]:
        return _all_hosts(results_dir, config_key)

    def _executor(self, folder: Path):
        import submitit  # lazily: only a Slurm sweep needs it

        o = self.options
        # the job's interpreter writes its log through the one masking, as it is written (a job that prints its
        # environment, as frameworks do on some errors, leaves no credential in results/<host>/slurm-jobs/)
        executor = submitit.SlurmExecutor(folder=folder, max_num_timeout=0, python=masked_command())
        executor.update_parameters(
            job_name=f"bench-{folder.name}", time=o.time_limit_min, partition=o.partition,
            cpus_per_task=o.cpus_per_task, gpus_per_task=o.gpus_per_task, exclusive=True if o.exclusive else None,
            constraint=o.constraint, array_parallelism=o.parallel, stderr_to_stdout=True,
            setup=[f"export PYTHONPATH={PROJECT_ROOT}${{PYTHONPATH:+:$PYTHONPATH}}"])  # `bench` on every node
        return executor

    def submit(self, batch: Sequence[Submission], results_dir: Path,
               notify: Callable[[], None] = _nothing) -> Iterator[Submission]:
        """Submit the batch as one job array, yield each submission in order as its job ends."""
        tasks, infos = [s.task for s in batch], [s.info for s in batch]
        folder = host_dir(results_dir) / JOBS / infos[0]["id"]
        jobs = self._executor(folder).map_array(_job, tasks, [results_dir] * len(batch), infos, [folder] * len(batch))
        array_id = jobs[0].job_id.split("_")[0]
        entries = [{"config_key": t.config.key, "repeat": t.repeat, "attempt": t.attempt,
                    "job_id": j.job_id, "state": "PENDING", "node": None} for t, j in zip(tasks, jobs)]
        self.state["jobs"] += entries
        try:
            notify()  # inside: a Ctrl-C as soon as the jobs are known still cancels them
            for submission, job, entry in zip(batch, jobs, entries):
                end = self._wait(job, array_id)
                entry.update(state=end.state, node=end.node)
                failure = self._failure(job, end, folder)
                if failure:
                    reason, detail, host = failure
                    failed = {**submission.info, "executor": self.name, "job_id": job.job_id, "node": end.node,
                              "job_state": end.state}
                    record_failure(submission.task, results_dir, failed, reason, detail, host=host)
                notify()
                yield submission
        except BaseException:  # Ctrl-C, or the sweep failed (it closes this iterator): this sweep's jobs only
            slurm_jobs.cancel([array_id])
            for entry in entries:
                if entry["state"] not in slurm_jobs.ENDED:
                    entry["state"] = "CANCELLED"
            notify()
            raise

    def _wait(self, job, array_id: str) -> slurm_jobs.JobInfo:
        """Until the job has ended: its result file exists, or the scheduler says it ended (then a grace period
        for a result file still on its way)."""
        ended_at = None
        while True:
            if job.paths.result_pickle.exists():  # its task is done; the scheduler may still be ending the job
                info = (slurm_jobs.job_states(array_id) or {}).get(job.job_id)
                return info if info and info.ended else slurm_jobs.JobInfo(job.job_id, "COMPLETED", None,
                                                                           info.node if info else None)
            states = slurm_jobs.job_states(array_id)
            if states is None:  # the controller did not answer: the job is not lost for that
                time.sleep(POLL_S)
                continue
            info = states.get(job.job_id) or slurm_jobs.forgotten_state(job.job_id)
            if info.ended:
                ended_at = ended_at or time.monotonic()
                if time.monotonic() - ended_at > RESULT_GRACE_S or info.state != "COMPLETED":
                    return info
            time.sleep(POLL_S)

    def _failure(self, job, end: slurm_jobs.JobInfo, folder: Path) -> tuple[str, str | None, str | None] | None:
        """(reason, detail, host) of a job that ended without finishing its task; None when it finished it."""
        started = folder / f"{job.job_id}.started.json"
        host = None
        if started.exists():  # the record goes where the job's own records go
            host = json.loads(started.read_text()).get("host")
        log = _tail(job.paths.stdout)
        if job.paths.result_pickle.exists():
            error = job.exception()
            if error is None:
                return None
            return (f"Slurm job {job.job_id} on node {end.node or '?'} failed: "
                    f"{str(error).strip().splitlines()[-1] if str(error).strip() else type(error).__name__}",
                    str(error)[-4000:], host)
        return end.explain(), log, host


def _tail(path: Path, chars: int = 4000) -> str | None:
    try:
        return path.read_text(errors="replace")[-chars:] or None
    except OSError:
        return None


def _all_hosts(results_dir: Path, config_key: str | None = None) -> list[Record]:
    """Records of every host folder under `results_dir` (a Slurm sweep's nodes each write their own); a foreign
    host's unreadable file is skipped, never moved (reading, as `--list` does, changes nothing of another host's)."""
    hosts = sorted(p.parent.name for p in Path(results_dir).glob("*/records") if p.is_dir())
    return [r for h in hosts for r in host_records(results_dir, host=h, config_key=config_key,
                                                   quarantine=h == host_name())]


def make_executor(name: str, profile_options: Mapping | None = None,
                  command_line: Mapping | None = None) -> Executor:
    """The executor called `name`. Slurm options come from the profile's `slurm` block, the command line's
    overriding them; given on the command line to the local executor, they are refused, not ignored."""
    if name not in EXECUTORS:
        raise ConfigError(f"unknown executor {name!r}; valid choices: {', '.join(EXECUTORS)}")
    given = {k: v for k, v in (command_line or {}).items() if v is not None}
    if name == "local":
        if given:
            flags = ", ".join("--" + k.replace("_", "-") for k in given)
            raise ConfigError(f"{flags}: only for --executor slurm (this sweep uses the local executor)")
        return LocalExecutor()
    return SlurmExecutor(slurm_options({**dict(profile_options or {}), **given}))
