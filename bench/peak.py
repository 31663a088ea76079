"""The device's measured peak: one large matrix product, timed once per device/dtype/threads and cached."""

from __future__ import annotations

import time
from pathlib import Path

from .devices import is_gpu
from .isolated import cached

PEAK_FILE = "device_peak.json"


def matmul_peak(device: str, precision: str, threads: int, repeats: int = 5) -> dict:
    """FLOP/s of the best of `repeats` n x n matrix products (after two warm-ups), measured here."""
    import torch

    torch.set_num_threads(threads)
    n = 8192 if is_gpu(device) else 4096
    dtype = {"fp32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}[precision]
    a = torch.randn(n, n, device=device, dtype=dtype)
    b = torch.randn(n, n, device=device, dtype=dtype)

    def sync() -> None:
        if is_gpu(device):
            torch.cuda.synchronize(device)

    best = float("inf")
    for i in range(repeats + 2):
        sync()
        t0 = time.perf_counter()
        torch.mm(a, b)
        sync()
        if i >= 2:
            best = min(best, time.perf_counter() - t0)
    return {"flops_per_sec": 2 * n**3 / best, "method": f"torch.mm {n}x{n} {precision}, best of {repeats}",
            "device": device, "precision": precision, "threads": threads,
            "measured_at": time.strftime("%Y-%m-%dT%H:%M:%S%z")}


def device_peak(results_dir: Path | str, device: str, precision: str, threads: int) -> dict:
    """This host's cached peak for device/precision/threads (measured on first use)."""
    return cached(results_dir, PEAK_FILE, f"{device}|{precision}|threads={threads}",
                  ["peak", "--device", device, "--precision", precision, "--threads", str(threads)])
