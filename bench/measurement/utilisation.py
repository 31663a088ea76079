"""Utilisation: the share of the device's measured peak that a run's model FLOPs used, for every kind of run."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from ..adapters.precision import has_gemm_peak
from ..models import get_model
from ..results.record import ModelInfo, Peak, Record, SweepPlacement
from ..results.sweep_manifest import read_sweep
from .flops import flops_per_sample
from .peak import device_peak, peak_key

if TYPE_CHECKING:
    from ..config import RunConfig


def utilisation(flops_per_image: float | None, images_per_sec: float | None,
                peak_flops_per_sec: float | None) -> float | None:
    """The share of the peak that a throughput's model FLOPs use; None when any of the three is unknown (None, NaN
    or zero). Every utilisation (a run's, a GPU rank's, a config's) is this one computation."""
    if not all(v and v == v for v in (flops_per_image, images_per_sec, peak_flops_per_sec)):
        return None
    return flops_per_image * images_per_sec / peak_flops_per_sec


def peak_threads(config: RunConfig) -> int:
    """The threads a run is judged against: a distributed run's workers share the machine, so all of theirs."""
    return int(config.threads * config.workers)


def run_peak(results_dir: Path, config: RunConfig, sweep: SweepPlacement | None) -> Peak:
    """The peak measured at the start of this run's sweep; outside a sweep, the host's cached one."""
    threads = peak_threads(config)
    if sweep:
        manifest = read_sweep(results_dir, sweep.id)
        peak = ((manifest or {}).get("peaks") or {}).get(peak_key(config.device, config.precision, threads))
        if peak and peak.get("start"):
            return Peak.from_json({**peak["start"], "sweep_id": sweep.id, "when": "start of this run's sweep"})
    return Peak.from_json({**device_peak(results_dir, config.device, config.precision, threads),
                           "when": "cached for this host (run outside a sweep)"})


def apply_utilisation(record: Record, results_dir: Path, config: RunConfig, params: int | None) -> None:
    """Fill a record's `model`, `peak` and `utilisation` sections: the model's FLOPs per image (measured once per
    host), the peak the run is judged against, and the share of it that the run's median throughput used (None
    when the FLOPs or the throughput are unknown)."""
    spec = get_model(config.model)
    flops, how = flops_per_sample(results_dir, config.model, config.input_size, config.mode)
    record.model = ModelInfo(params=params, params_published_millions=spec.published_params_millions,
                             flops_per_image=flops, flops_method=how, note=spec.note)
    if not has_gemm_peak(config.precision):  # int8: a speed-up against fp32, no utilisation
        record.peak, record.utilisation = None, None
        return
    try:
        record.peak = run_peak(results_dir, config, record.sweep)
    except RuntimeError as exc:  # the peak is the reference framework's GEMM in the main interpreter: where that
        # cannot run (a bare interpreter with one framework), the run keeps its numbers and says why it has no share
        record.peak, record.utilisation = Peak(when=f"not measured: {exc}"[:300]), None
        return
    images_per_sec = record.summary.images_per_sec_median if record.summary else None
    record.utilisation = utilisation(flops, images_per_sec, record.peak.flops_per_sec)
