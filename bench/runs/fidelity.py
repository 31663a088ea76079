"""Harness fidelity: the harness's median images/s vs a minimal hand-written loop with the same settings.

Each arm runs in its own fresh process (thread pools can be set only once per process), and the
arms alternate for several rounds so that drift of the machine hits both alike.
"""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

from ..adapters import ADAPTERS
from ..config import RunConfig
from ..errors import ConfigError
from ..measurement.fresh_process import bench_environ
from ..results.store import read_record

BASELINE_WARMUP, BASELINE_ITERATIONS = 5, 20


def _loop(step) -> list[float]:
    for _ in range(BASELINE_WARMUP):
        step()
    times = []
    for _ in range(BASELINE_ITERATIONS):
        t0 = time.perf_counter()
        step()
        times.append(time.perf_counter() - t0)
    return times


def baseline(config: RunConfig) -> float:
    """Median images/s of the framework's own hand-written loop (run in this process)."""
    step = ADAPTERS.get(config.framework).hand_loop(config)
    if step is None:
        raise ConfigError(f"framework {config.framework!r} has no hand-written loop to compare with; valid: "
                          + ", ".join(n for n in ADAPTERS.names() if ADAPTERS.get(n).has_hand_loop))
    return config.batch_size / statistics.median(_loop(step))


def _bench(args: list[str]) -> str:
    return subprocess.run([sys.executable, "-m", "bench", *args], capture_output=True, text=True,
                          check=True, env=bench_environ()).stdout


def execute(config: RunConfig, results_dir: str, rounds: int = 2) -> dict:
    """Alternate baseline and harness processes for `rounds` rounds; ratio of the medians of each arm."""
    if not ADAPTERS.get(config.framework).has_hand_loop:
        raise ConfigError(f"framework {config.framework!r} has no hand-written loop to compare with; valid: "
                          + ", ".join(n for n in ADAPTERS.names() if ADAPTERS.get(n).has_hand_loop))
    if not 1 <= rounds <= 100:
        raise ConfigError(f"invalid --rounds {rounds}; it must be an integer from 1 to 100")
    flags = ["--framework", config.framework, "--model", config.model, "--mode", config.mode,
             "--batch-size", str(config.batch_size), "--threads", str(config.threads)]
    base, harness = [], []
    for _ in range(rounds):
        base.append(json.loads(_bench(["fidelity", "--baseline-only", *flags]))["images_per_sec"])
        path = _bench(["run", *flags, "--results-dir", results_dir]).strip().splitlines()[-1]
        harness.append(read_record(Path(path.removeprefix("record: "))).summary.images_per_sec_median)
    return {"config": config.label, "baseline_img_s": base, "harness_img_s": harness,
            "ratio": statistics.median(harness) / statistics.median(base)}
