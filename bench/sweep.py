"""The sweep runner: one papermill run of notebooks/benchmark.ipynb per config, resumable, failure-tolerant."""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, field
from pathlib import Path

from .config import RunConfig
from .manifest import host_name
from .paths import PROJECT_ROOT, default_results_dir
from .profiles import Profile
from .runner import failure_record
from .store import finished_keys, host_dir, load_records, write_record

BENCHMARK_NOTEBOOK = PROJECT_ROOT / "notebooks" / "benchmark.ipynb"
NOTEBOOKS = "notebooks"


@dataclass
class SweepResult:
    ran: list[str] = field(default_factory=list)  # config keys
    already_done: list[str] = field(default_factory=list)  # config keys
    failures: list[tuple[str, str, str]] = field(default_factory=list)  # (label, status, reason)
    papermill_s: float = 0.0  # wall time inside papermill (kernel start, imports, run)
    measured_s: float = 0.0  # the runs' own duration as recorded (what the harness spent)


def notebook_parameters(config: RunConfig, results_dir: Path) -> dict:
    params = {k: v for k, v in config.to_dict().items() if k != "extra"}
    return {**params, "results_dir": str(results_dir)}


def executed_notebook_path(config: RunConfig, results_dir: Path) -> Path:
    c = config
    name = f"{c.framework}_{c.model}_{c.mode}_{c.precision}_bs{c.batch_size}_{c.device.replace(':', '')}_{c.key}.ipynb"
    return host_dir(results_dir) / NOTEBOOKS / name


def run_notebook(config: RunConfig, results_dir: Path) -> None:
    """Execute the benchmark notebook for one config; the executed copy is kept under results/<host>/."""
    import papermill

    out = executed_notebook_path(config, results_dir)
    out.parent.mkdir(parents=True, exist_ok=True)
    papermill.execute_notebook(str(BENCHMARK_NOTEBOOK), str(out), parameters=notebook_parameters(config, results_dir),
                               kernel_name="python3", cwd=str(PROJECT_ROOT), progress_bar=False,
                               request_save_on_cell_execute=True)  # an interrupted run keeps its notebook


def _kernel_env() -> None:
    """Kernels inherit our environment: make `bench` importable and quiet TensorFlow's C++ logging."""
    paths = [str(PROJECT_ROOT)] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    os.environ["PYTHONPATH"] = os.pathsep.join(dict.fromkeys(paths))
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")


def _failure_reason(exc: BaseException) -> str:
    ename, evalue = getattr(exc, "ename", None), getattr(exc, "evalue", None)
    if ename:
        return f"notebook failed: {ename}: {(evalue or '').splitlines()[0] if evalue else ''}".rstrip(": ")
    name = type(exc).__name__
    if name == "DeadKernelError":
        return "the notebook's kernel died (killed for memory, or a crash in a framework)"
    return f"notebook failed: {name}: {str(exc).splitlines()[0] if str(exc) else ''}".rstrip(": ")


def run_sweep(profile: Profile, results_dir: Path | str | None = None, force: bool = False,
              progress: bool = True) -> SweepResult:
    """Run every config of `profile` not yet recorded on this host (all of them with `force`)."""
    from tqdm.auto import tqdm

    results_dir = Path(results_dir or default_results_dir()).resolve()
    _kernel_env()
    result = SweepResult()
    done = set() if force else finished_keys(results_dir)
    todo = []
    for c in profile.configs:
        if c.key in done:
            result.already_done.append(c.key)
        else:
            todo.append(c)
        done.add(c.key)  # a profile listing one config twice runs it once
    bar = tqdm(todo, desc=f"sweep {profile.name} on {host_name()}", unit="run", disable=not progress)
    for config in bar:
        bar.set_postfix_str(config.label, refresh=True)
        if not force and config.key in finished_keys(results_dir):  # written meanwhile by another process
            result.already_done.append(config.key)
            continue
        t0 = time.perf_counter()
        try:
            run_notebook(config, results_dir)
        except Exception as exc:  # a failing config is recorded and the sweep goes on
            if config.key not in finished_keys(results_dir):
                write_record(failure_record(config, _failure_reason(exc), repr(exc)), results_dir)
        result.papermill_s += time.perf_counter() - t0
        result.ran.append(config.key)
    keys = set(result.ran)
    for r in load_records(results_dir):
        if r["config_key"] in keys and r["host"] == host_name():
            result.measured_s += r["duration_s"]
            if r["status"] != "ok":
                result.failures.append((r["label"], r["status"], r["reason"]))
    return result
