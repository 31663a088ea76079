"""One task of a sweep, wherever it runs: its benchmark notebook in a fresh kernel, or the record of why it
could not run. Executors (bench/sweep/executors.py) call `run_task`, so a record does not depend on where it ran."""

from __future__ import annotations

import os
from pathlib import Path

from ..adapters import ADAPTERS, process_environment
from ..config import RunConfig
from ..errors import UnsupportedError
from ..paths import PROJECT_ROOT
from ..results.record import Record
from ..results.store import host_dir, host_records, write_record
from .masked_notebooks import execute_masked
from .plan import Task

BENCHMARK_NOTEBOOK = PROJECT_ROOT / "notebooks" / "benchmark.ipynb"
DISTRIBUTED_NOTEBOOK = PROJECT_ROOT / "notebooks" / "distributed.ipynb"  # its ranks are plain processes
NOTEBOOKS = "notebooks"


def notebook_parameters(config: RunConfig, results_dir: Path, task: Task, sweep: dict) -> dict:
    """The benchmark notebook's parameters: the config's fields as `settings` (the notebook repeats no default), and
    no latency plot (a sweep's process spends its time measuring; the record keeps every iteration for a trace)."""
    settings = {k: v for k, v in config.to_dict().items() if k != "extra"}
    params = {"settings": settings, "results_dir": str(results_dir), "repeat": task.repeat, "attempt": task.attempt,
              "sweep": sweep}
    return params if config.distributed else {**params, "plots": False}  # the distributed notebook has no such cell


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
    adapter = ADAPTERS.get(config.framework)
    # the framework's documented process settings, in the kernel's environment from its start (an allocator's too)
    with process_environment.environment(process_environment.to_set(adapter.process_environment, os.environ)):
        execute_masked(notebook, out, parameters=notebook_parameters(config, results_dir, task, sweep),
                       kernel_name=adapter.kernel_for(config.device), cwd=str(PROJECT_ROOT),
                       progress_bar=False, request_save_on_cell_execute=True,  # an interrupted run keeps its notebook
                       # its record is written and the notebook saved by then: the kernel is stopped at once instead
                       # of being asked to exit (a framework's exit handlers and threads can take seconds)
                       shutdown_kernel="immediate")


def _failure_reason(exc: BaseException) -> str:
    ename, evalue = getattr(exc, "ename", None), getattr(exc, "evalue", None)
    if ename:
        return f"notebook failed: {ename}: {(evalue or '').splitlines()[0] if evalue else ''}".rstrip(": ")
    name = type(exc).__name__
    if name == "DeadKernelError":
        return "the notebook's kernel died (killed for memory, or a crash in a framework)"
    return f"notebook failed: {name}: {str(exc).splitlines()[0] if str(exc) else ''}".rstrip(": ")


def latest_by_repeat(records: list[Record], key: str) -> dict[int, Record]:
    """The newest record of each repetition of config `key` (a retry replaces the attempt before it)."""
    out: dict[int, Record] = {}
    for r in sorted(records, key=lambda r: r.created):
        if r.config_key == key:
            out[r.repeat] = r
    return out


def _failure(config: RunConfig, reason: str, detail: str | None, task: Task, sweep: dict,
             status: str = "error") -> Record:
    """The record of a run whose notebook could not start it or died outside the harness."""
    return Record.failure(config, reason, detail, task.repeat, task.attempt, sweep, status,
                          framework={"version": ADAPTERS.get(config.framework).version()})


def record_failure(task: Task, results_dir: Path, info: dict, reason: str, detail: str | None,
                   host: str | None = None) -> None:
    """The error record of a task whose run ended without writing one for this attempt of this sweep."""
    config = task.config
    latest = latest_by_repeat(host_records(results_dir, host=host, config_key=config.key), config.key).get(task.repeat)
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
