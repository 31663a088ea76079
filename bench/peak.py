"""The device's measured peak: a large matrix product timed in several trials, with its spread.

A sweep measures it at its start and at its end (bench/sweeps.py), so a utilisation is computed
against the peak of its own sweep and a peak taken in a busy moment shows up as a spread.
"""

from __future__ import annotations

import statistics
import time
from pathlib import Path

from .devices import is_gpu
from .isolated import cached, in_fresh_process

PEAK_FILE = "device_peak.json"
PEAK_TRIALS = 5


def matmul_peak(device: str, precision: str, threads: int, trials: int = PEAK_TRIALS) -> dict:
    """FLOP/s of an n x n matrix product: best and median of `trials` timings after two warm-ups."""
    import torch

    torch.set_num_threads(threads)
    n = 8192 if is_gpu(device) else 4096
    dtype = {"fp32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}[precision]
    a = torch.randn(n, n, device=device, dtype=dtype)
    b = torch.randn(n, n, device=device, dtype=dtype)

    def sync() -> None:
        if is_gpu(device):
            torch.cuda.synchronize(device)

    times = []
    for i in range(trials + 2):
        sync()
        t0 = time.perf_counter()
        torch.mm(a, b)
        sync()
        if i >= 2:
            times.append(time.perf_counter() - t0)
    flops = [2 * n**3 / t for t in times]
    best = max(flops)
    return {"flops_per_sec": best, "median_flops_per_sec": statistics.median(flops),
            "trials_flops_per_sec": flops, "spread": (best - min(flops)) / best,
            "method": f"torch.mm {n}x{n} {precision}, best of {trials} after 2 warm-ups",
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
