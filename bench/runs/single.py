"""One run end to end: prepare, measure, instrument, summarise, and write one schema-checked record."""

from __future__ import annotations

import time
import traceback
import uuid
from datetime import UTC, datetime
from pathlib import Path

import numpy as np

from ..adapters import ADAPTERS, says_out_of_memory
from ..config import RunConfig
from ..errors import UnsupportedError
from ..host.devices import device_label
from ..host.energy import EnergyMeter
from ..host.interference import InterferenceMonitor
from ..host.manifest import collect_manifest, host_name
from ..measurement.certificate import run_checks
from ..measurement.flags import run_flags
from ..measurement.loop import measure
from ..measurement.utilisation import utilisation
from ..paths import default_results_dir
from ..results.schema import SCHEMA_VERSION
from ..results.store import write_record
from ..stats import cv, summarize_latencies


def describe_failure(exc: BaseException, config: RunConfig) -> str:
    """One sentence a user can act on, from whatever a framework raised."""
    name = type(exc).__name__
    first = (str(exc).strip().splitlines() or [""])[0][:300]
    if isinstance(exc, MemoryError) or says_out_of_memory(f"{name} {first}"):
        return f"out of memory at batch size {config.batch_size} on {config.device} ({name})"
    return f"{name}: {first}" if first else name


def _framework_info(adapter) -> dict:
    try:
        return adapter.info()
    except Exception as exc:  # an unavailable framework still gets a record
        return {"version": adapter.version(), "unavailable": f"{type(exc).__name__}: {exc}"}


def base_record(config: RunConfig, repeat: int = 0, attempt: int = 0, sweep: dict | None = None) -> dict:
    """A record for `config` with nothing measured yet (status ok until something says otherwise).

    `repeat` numbers the fresh process this is among the config's repetitions; `attempt` counts
    retries of that repetition after a disturbed run; `sweep` places it in its sweep (id, order).
    """
    return {
        "schema_version": SCHEMA_VERSION,
        "record_id": uuid.uuid4().hex,
        "config_key": config.key,
        "repeat": repeat, "attempt": attempt, "sweep": sweep,
        "interference": None, "flags": [],
        "created": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ"),
        "host": host_name(),
        "hardware": device_label(config.device),
        "status": "ok", "reason": None,
        "config": config.to_dict(), "label": config.label,
        "settings": {}, "model": {}, "samples": {"warmup_s": [], "timed_s": []},
        "summary": None, "phases": None, "memory": None, "peak": None, "utilisation": None,
        "energy": {"available": False, "reason": "run did not reach the timed loop"},
        "fairness": None, "traceback": None, "distributed": None, "startup": None,
    }


def failure_record(config: RunConfig, reason: str, detail: str | None = None, repeat: int = 0,
                   attempt: int = 0, sweep: dict | None = None, status: str = "error") -> dict:
    """An `error` record for a run that died outside the harness (e.g. its notebook kernel), or a `skipped`
    one for a run that could not start (its framework's environment is not built)."""
    record = base_record(config, repeat, attempt, sweep)
    record.update(status=status, reason=reason, traceback=detail, duration_s=0.0,
                  manifest=collect_manifest({"version": ADAPTERS.get(config.framework).version()}))
    return record


def execute(config: RunConfig, results_dir: Path | str | None = None, repeat: int = 0, attempt: int = 0,
            sweep: dict | None = None) -> dict:
    """Measure `config` and return its record (status ok, skipped or error); never raises for run failures."""
    if config.distributed:  # ranks are plain processes started by the distributed launcher
        from .distributed.run import execute as execute_distributed

        return execute_distributed(config, results_dir, repeat, attempt, sweep)
    results_dir = Path(results_dir or default_results_dir())
    adapter = ADAPTERS.get(config.framework)
    started = time.perf_counter()
    record = base_record(config, repeat, attempt, sweep)
    try:
        _measure_into(record, adapter, config, results_dir)
    except UnsupportedError as exc:
        record.update(status="skipped", reason=str(exc))
    except Exception as exc:  # any framework failure becomes a recorded error, and the sweep goes on
        record.update(status="error", reason=describe_failure(exc, config), traceback=traceback.format_exc())
    record["manifest"] = collect_manifest(_framework_info(adapter) if record["status"] != "skipped"
                                          else {"version": adapter.version()})
    record["duration_s"] = time.perf_counter() - started
    return record


def _measure_into(record: dict, adapter, config: RunConfig, results_dir: Path) -> None:
    reason = adapter.not_applicable(config.mode, config.precision, config.device)
    if reason:
        raise UnsupportedError(reason)
    t0 = time.perf_counter()
    workload = adapter.prepare(config)
    prepare_s = time.perf_counter() - t0
    record["settings"] = dict(workload.settings)
    workload.reset_memory()
    weights_before = workload.weights_checksum()
    with EnergyMeter() as meter, InterferenceMonitor() as monitor:
        samples = measure(workload.timed_iteration, config)
    weights_after = workload.weights_checksum()
    # Start-up cost, kept apart from steady-state throughput: building (exporting, compiling) the model,
    # and the first iteration (tracing, jit compilation, allocation).
    record["startup"] = {"prepare_s": prepare_s,
                         "first_iteration_s": samples.warmup_s[0] if samples.warmup_s else samples.timed_s[0]}
    record["memory"] = workload.memory()  # read before anything else allocates
    record["interference"] = {**monitor.result(), "iteration_cv": cv(samples.timed_s)}
    record["energy"] = meter.result(config.batch_size * len(samples.timed_s))
    record["samples"] = {"warmup_s": samples.warmup_s, "timed_s": samples.timed_s,
                         "warmup_stop": samples.warmup_stop, "timed_stop": samples.timed_stop,
                         "timed_wall_s": samples.timed_wall_s}
    summary = summarize_latencies(samples.timed_s, config.batch_size)
    summary["cv"] = cv(samples.timed_s)
    record["summary"] = summary
    # Phases once per config (the first repetition): the pass costs several steps and the headline
    # number never depends on it.
    if config.phase_iterations and record["repeat"] == 0:
        raw = workload.phases(config.phase_iterations)
        if raw:
            record["phases"] = {
                "iterations": config.phase_iterations,
                "method": "separate instrumented pass after the timed loop, device synced around each phase",
                "median_ms": {k: float(np.median(v)) * 1e3 for k, v in raw.items()},
                "samples_s": raw,
            }
    params = workload.params or None
    if adapter.measures_a_framework:
        record.update(utilisation(results_dir, config, record["sweep"], params, summary["images_per_sec_median"]))
        record["fairness"] = run_checks(config, record["settings"], params, record["model"]["flops_per_image"],
                                        (weights_before, weights_after), workload.input_placement())
    record["flags"] = run_flags(record)


def run(config: RunConfig, results_dir: Path | str | None = None, repeat: int = 0, attempt: int = 0,
        sweep: dict | None = None) -> tuple[dict, Path]:
    """Execute `config` and write its record atomically; returns (record, path)."""
    results_dir = Path(results_dir or default_results_dir())
    record = execute(config, results_dir, repeat, attempt, sweep)
    return record, write_record(record, results_dir)
