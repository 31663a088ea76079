"""The device's measured peak: a large matrix product timed in several trials (in every GEMM library the main
environment has), with its spread.

A sweep measures it at its start and at its end (bench/results/sweep_manifest.py), so a utilisation is computed
against the peak of its own sweep and a peak taken in a busy moment shows up as a spread.
"""

from __future__ import annotations

import functools
import os
import statistics
import time
from pathlib import Path

from ..adapters import ADAPTERS, reference_adapter
from ..host.devices import is_gpu
from ..values import env_integer
from .fresh_process import cached, in_fresh_process

PEAK_FILE = "device_peak.json"
PEAK_TRIALS = 5
# The matrix side: large enough to be compute-bound (on this 2-core CPU, n = 2048 reads 10% lower than
# n = 4096). BENCH_PEAK_N overrides it (the test suite uses a small one: its runs are not benchmarks); the
# size is part of the recorded method.
PEAK_N = {"cpu": 4096, "gpu": 8192}


def matrix_side(device: str) -> int:
    """The matrix side of the peak's GEMM on `device`: BENCH_PEAK_N (checked as a value, 64 to 65536) or the default."""
    return env_integer(os.environ, "BENCH_PEAK_N", 64, 65536, default=PEAK_N["gpu" if is_gpu(device) else "cpu"])


def _best_of(run, flop: float, trials: int) -> list[float]:
    """FLOP/s of `trials` timed calls of `run` after two warm-ups."""
    times = []
    for i in range(trials + 2):
        t0 = time.perf_counter()
        run()
        if i >= 2:
            times.append(time.perf_counter() - t0)
    return [flop / t for t in times]


def _numpy_matmul(threads: int, n: int):
    import numpy as np
    from threadpoolctl import threadpool_limits

    a = np.random.default_rng(0).standard_normal((n, n), dtype=np.float32)
    b = np.random.default_rng(1).standard_normal((n, n), dtype=np.float32)

    def run() -> None:
        with threadpool_limits(limits=threads):
            np.matmul(a, b)
    return run


def _gemms(device: str, precision: str, threads: int, n: int) -> dict:
    """Every matrix-product library the main environment has for this device and precision, the reference
    framework's first (a peak without it is an error). On a CPU the frameworks do not share one BLAS (PyTorch:
    MKL or OpenBLAS, OpenVINO and TensorFlow: oneDNN, NumPy: OpenBLAS), and one of them can be far from the
    hardware on a given vendor's CPU; the peak is the best."""
    reference = reference_adapter()
    gemms = {reference.gemm_label(device, precision): functools.partial(reference.gemm, device, precision, threads, n)}
    if not is_gpu(device) and precision == "fp32":
        gemms["numpy.matmul (OpenBLAS)"] = lambda: _numpy_matmul(threads, n)
    for adapter in (ADAPTERS.get(name) for name in ADAPTERS):
        label = adapter.gemm_label(device, precision) if adapter is not reference else None
        if label:
            gemms[label] = functools.partial(adapter.gemm, device, precision, threads, n)
    return gemms


def matmul_peak(device: str, precision: str, threads: int, trials: int = PEAK_TRIALS) -> dict:
    """FLOP/s of an n x n matrix product, in every library that has one here: best and median of `trials`
    timings after two warm-ups, per library; the peak is the best library's. A library that cannot run
    is listed with its error (the peak then comes from the others)."""
    n = matrix_side(device)
    libraries: dict[str, dict] = {}
    for name, build in _gemms(device, precision, threads, n).items():
        try:
            flops = _best_of(build(), 2 * n**3, trials)
        except Exception as exc:  # noqa: BLE001 - an unavailable library is a fact to record
            if not libraries:  # the reference framework's own: no peak without it
                raise
            libraries[name] = {"error": f"{type(exc).__name__}: {exc}"[:300]}
            continue
        libraries[name] = {"flops_per_sec": max(flops), "median_flops_per_sec": statistics.median(flops),
                           "trials_flops_per_sec": flops}
    winner = max((k for k in libraries if "flops_per_sec" in libraries[k]),
                 key=lambda k: libraries[k]["flops_per_sec"])
    flops = libraries[winner]["trials_flops_per_sec"]
    best = max(flops)
    return {"flops_per_sec": best, "median_flops_per_sec": statistics.median(flops),
            "trials_flops_per_sec": flops, "spread": (best - min(flops)) / best,
            "method": f"{winner} {n}x{n} {precision}, best of {trials} after 2 warm-ups "
                      f"(the fastest of: {', '.join(libraries)})",
            "library": winner, "libraries": libraries,
            "device": device, "precision": precision, "threads": threads,
            "measured_at": time.strftime("%Y-%m-%dT%H:%M:%S%z")}


def peak_key(device: str, precision: str, threads: int) -> str:
    return f"{device}|{precision}|threads={threads}"


def peak_argv(device: str, precision: str, threads: int) -> list[str]:
    return ["peak", "--device", device, "--precision", precision, "--threads", str(threads)]


def measure_peak(device: str, precision: str, threads: int) -> dict:
    """One fresh-process measurement (the run's own threads and imports must not colour it)."""
    return in_fresh_process(peak_argv(device, precision, threads))


def device_peak(results_dir: Path | str, device: str, precision: str, threads: int) -> dict:
    """For a run outside a sweep: this host's cached peak (measured on first use)."""
    return cached(results_dir, PEAK_FILE, peak_key(device, precision, threads), peak_argv(device, precision, threads))
