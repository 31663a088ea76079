"""The one function that fills a record with what a run measured, from a single process or from a distributed
run's ranks: its samples and summary, energy, memory, interference and settings, then the checks every run kind
shares (utilisation, the fairness certificate, the flags)."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from ..adapters.base import CertificateFacts
from ..config import RunConfig
from ..measurement.certificate import run_checks
from ..measurement.flags import run_flags
from ..models import family_of
from ..results.record import Energy, Flag, Interference, Memory, Phases, Record, Samples, Summary
from ..stats.intervals import cv, summarize_latencies


@dataclass
class Measured:
    """What one run measured, whatever ran it: its timed steps and the images each one trained on (a distributed run:
    the global batch, one global step = the slowest rank's), the readings over them, the settings the certificate
    reads, and the facts it judges (the model's size, the weights before and after, where the batch lived)."""

    samples: Samples
    images_per_step: int
    energy: dict[str, Any]
    memory: Memory | None
    interference: dict[str, Any]
    settings: dict[str, Any]
    facts: CertificateFacts
    params: int | None
    weights: tuple[float | None, float | None]
    placement: dict | None
    phases: Phases | None = None


def fill(record: Record, config: RunConfig, measured: Measured, utilisation: Callable[[Record], None] | None,
         extra_flags: Callable[[Record], Sequence[Flag]] = lambda record: (),
         before_checks: Callable[[Record], None] | None = None) -> None:
    """Put `measured` into `record`; `utilisation` fills the model, peak and utilisation sections (None: the run
    measures no framework, so neither utilisation nor a certificate), `extra_flags` adds a run kind's own flags.
    `before_checks`: what a run kind adds once its measurements are in and before the checks judge them (a single
    run's instrumented phase pass: should it fail, the record keeps what was measured)."""
    timed = measured.samples.timed_s
    record.samples = measured.samples
    summary = summarize_latencies(timed, measured.images_per_step)
    median = summary.get("images_per_sec_median")
    tokens = median * config.sequence_length if config.sequence_length and median is not None else None
    record.summary = Summary(**summary, cv=cv(timed), sample_unit=family_of(config.model).sample_unit,
                             tokens_per_sec_median=tokens)
    record.memory = measured.memory
    record.interference = Interference.from_json({**measured.interference, "iteration_cv": cv(timed)})
    record.energy = Energy.from_json(measured.energy)
    record.keep_settings(measured.settings)
    if measured.phases is not None:
        record.phases = measured.phases
    if before_checks is not None:
        before_checks(record)
    t0 = time.perf_counter()
    if utilisation is not None:
        utilisation(record)
        record.fairness = run_checks(config, measured.facts, measured.params,
                                     record.model.flops_per_image if record.model else None, measured.weights,
                                     measured.placement)
        if measured.settings.get("process_environment"):
            record.fairness.process_environment = measured.settings["process_environment"]
    record.flags = run_flags(record) + list(extra_flags(record))
    if record.startup is not None:
        record.startup.checks_s = time.perf_counter() - t0
