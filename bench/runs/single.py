"""One run end to end: prepare, measure, instrument, summarise, and write one schema-checked record."""

from __future__ import annotations

import time
import traceback
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import psutil

from ..adapters import ADAPTERS, process_environment
from ..adapters.compile_cache import outcomes
from ..config import RunConfig
from ..errors import UnsupportedError
from ..host.energy import energy_meter
from ..host.interference import InterferenceMonitor
from ..measurement import outputs_check
from ..measurement.agreement import attach
from ..measurement.loop import measure
from ..measurement.utilisation import apply_utilisation
from ..paths import default_results_dir
from ..results.record import (
    InputPipeline,
    Manifest,
    Memory,
    Phases,
    Record,
    Samples,
    Startup,
    SweepPlacement,
)
from ..results.store import write_record
from .distributed import run as distributed_run
from .failures import describe_failure
from .fill import Measured, fill


def _framework_info(adapter) -> dict:
    try:
        return adapter.info()
    except Exception as exc:  # an unavailable framework still gets a record
        return {"version": adapter.version(), "unavailable": f"{type(exc).__name__}: {exc}"}


Sweep = SweepPlacement | Mapping[str, Any] | None


def measure_run(config: RunConfig, results_dir: Path | str | None = None, repeat: int = 0, attempt: int = 0,
                sweep: Sweep = None) -> Record:
    """Measure `config` and return its record (status ok, skipped or error); never raises for run failures."""
    if config.distributed:  # ranks are plain processes started by the distributed launcher
        return distributed_run.execute(config, results_dir, repeat, attempt, sweep)
    results_dir = Path(results_dir or default_results_dir())
    adapter = ADAPTERS.get(config.framework)
    started = time.perf_counter()
    process_start_s = process_age_s()
    record = Record.new(config, repeat, attempt, sweep)
    try:
        _measure_into(record, adapter, config, results_dir)
    except UnsupportedError as exc:
        record.status, record.reason = "skipped", str(exc)
    except Exception as exc:  # any framework failure becomes a recorded error, and the sweep goes on
        record.status, record.reason = "error", describe_failure(exc, config)
        record.traceback = traceback.format_exc()
    t0 = time.perf_counter()
    record.manifest = Manifest.collect(_framework_info(adapter) if record.status != "skipped"
                                       else {"version": adapter.version()})
    if record.startup is not None:
        record.startup.process_start_s = process_start_s
        record.startup.manifest_s = time.perf_counter() - t0
    record.duration_s = time.perf_counter() - started
    return record


def process_age_s() -> float | None:
    """Seconds since this process was created (its kernel's start, the interpreter, the imports so far)."""
    try:
        return max(0.0, time.time() - psutil.Process().create_time())
    except psutil.Error:  # a process table that cannot be read: the overhead table shows it as unknown
        return None


def execute(config: RunConfig, results_dir: Path | str | None = None, repeat: int = 0, attempt: int = 0,
            sweep: Sweep = None) -> dict:
    """Measure `config` and return its record's JSON (for notebooks and tests that hold records as dicts)."""
    return measure_run(config, results_dir, repeat, attempt, sweep).to_json()


def _measure_into(record: Record, adapter, config: RunConfig, results_dir: Path) -> None:
    reason = adapter.cannot_run(config.mode, config.precision, config.device, config.model)
    if reason:
        raise UnsupportedError(reason)
    process_environment.apply(adapter.process_environment)  # before the framework loads (a kernel has them already)
    t0 = time.perf_counter()
    workload = adapter.prepare(config)
    prepare_s = time.perf_counter() - t0
    settings, facts = dict(workload.settings), workload.certificate_facts()  # as prepared, before any step
    if adapter.process_environment:
        settings["process_environment"] = process_environment.in_effect(adapter.process_environment)
    quantised = getattr(workload, "quantised", None)  # an int8 run: its held-out logits against fp32's
    if quantised is not None:
        attach(settings, quantised.fp32_logits, quantised.int8_logits)
    same_network = outputs_check.check(workload, config, results_dir)  # before any timing: the same network?
    if same_network is not None:
        settings["outputs_check"] = same_network
    workload.reset_memory()
    weights_before = workload.weights_checksum()
    t0 = time.perf_counter()
    with energy_meter(config.device) as meter, InterferenceMonitor() as monitor:
        samples = measure(workload.timed_iteration, config, mark=meter.mark)
    loop_s = time.perf_counter() - t0
    build_cache = outcomes(workload.compile_caches)  # after the loop: lazy compilers build at the first step
    weights_after = workload.weights_checksum()
    # Start-up cost, kept apart from steady-state throughput: building (exporting, compiling) the model,
    # and the first iteration (tracing, jit compilation, allocation); and the loops' wall times.
    record.startup = Startup(prepare_s=prepare_s,
                             first_iteration_s=samples.warmup_s[0] if samples.warmup_s else samples.timed_s[0],
                             warmup_s=max(0.0, loop_s - samples.timed_wall_s), timed_s=samples.timed_wall_s,
                             build_cache=build_cache)
    memory = workload.memory()  # read before anything else allocates
    outputs_check.check_compiled(workload, config, results_dir, same_network)  # the loop's compiled forward too
    # the loader's ceiling once per config (the first repetition), like the phases: it costs a few batches
    pipeline = workload.input_report(samples.timed_s, measure_ceiling=record.repeat == 0)
    if pipeline is not None:
        record.input = InputPipeline.from_json(pipeline)
    monitor_result, energy = monitor.result(), meter.result(config.batch_size * len(samples.timed_s),
                                                               from_mark=len(samples.warmup_s))
    params = workload.params or None
    measured = Measured(
        samples=Samples(warmup_s=samples.warmup_s, timed_s=samples.timed_s, warmup_stop=samples.warmup_stop,
                        timed_stop=samples.timed_stop, timed_wall_s=samples.timed_wall_s),
        images_per_step=config.batch_size, energy=energy, memory=Memory.from_json(memory) if memory is not None
        else None, interference=monitor_result, settings=settings, facts=facts, params=params,
        weights=(weights_before, weights_after), placement=workload.input_placement())
    utilise = (lambda r: apply_utilisation(r, results_dir, config, params)) if adapter.measures_a_framework else None
    fill(record, config, measured, utilise, before_checks=lambda r: _phases(r, workload, config))


PASS_METHOD = "separate instrumented pass after the timed loop, device synced around each phase"
# Where the step is one of its phases (Workload.loop_phase), that phase's samples are the timed loop's own.
LOOP_METHOD = {
    "forward": "the timed loop's own steps (an inference step on device-resident data is its forward alone: no "
               "separate pass)",
    "step": PASS_METHOD + "; the whole step is the timed loop's median (the same compiled step, not run again)",
}


def _phases(record: Record, workload, config: RunConfig) -> None:
    """Phases once per config (the first repetition): the pass costs several steps and the headline number never
    depends on it. A phase that is the whole step is taken from the timed loop rather than run again."""
    if not config.phase_iterations or record.repeat != 0:
        return
    t0 = time.perf_counter()
    loop_phase, timed = workload.loop_phase(), list(record.samples.timed_s)
    if loop_phase == "forward":
        raw = {"forward": timed}
    else:
        raw = workload.phases(config.phase_iterations, step_s=timed if loop_phase == "step" else ())
    record.startup.phases_s = time.perf_counter() - t0
    if raw:
        record.phases = Phases(
            iterations=max(len(v) for v in raw.values()),
            method=LOOP_METHOD.get(loop_phase, PASS_METHOD),
            median_ms={k: float(np.median(v)) * 1e3 for k, v in raw.items()},
            samples_s=raw,
        )


def run(config: RunConfig, results_dir: Path | str | None = None, repeat: int = 0, attempt: int = 0,
        sweep: Sweep = None) -> tuple[Record, Path]:
    """Measure `config` and write its record atomically; returns (record, path)."""
    results_dir = Path(results_dir or default_results_dir())
    record = measure_run(config, results_dir, repeat, attempt, sweep)
    return record, write_record(record, results_dir)
