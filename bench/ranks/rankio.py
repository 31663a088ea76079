"""What every rank reads at start (its spec) and writes at the end (its result), for any framework.

Run-side code: imports nothing heavy, so a framework's own environment can run it.
"""

from __future__ import annotations

import json
import os
import resource
import sys
import time
from pathlib import Path

SPEC_ENV = "BENCH_DIST_SPEC"
# Set by the launcher for GPU placement: how many ranks this machine runs, and the machine-wide index of this agent's
# first rank (emulated nodes share one machine's GPUs, while each node's LOCAL_RANK starts at 0).
MACHINE_RANKS_ENV = "BENCH_MACHINE_RANKS"
GPU_BASE_ENV = "BENCH_GPU_BASE"
# A TensorFlow task on Slurm: {"jobs": {...}, "port_base": N} for SlurmClusterResolver, which resolves its cluster.
TF_SLURM_ENV = "BENCH_TF_SLURM"


def read_spec() -> dict:
    """The spec the launcher wrote for this run: {"config": {...}, "out_dir": str, "timeout_s": float}."""
    return json.loads(Path(os.environ[SPEC_ENV]).read_text())


def peak_rss_bytes() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def stamped(result: dict) -> dict:
    """This process's result with its pid and peak memory (before it is sent to the rank that writes it)."""
    return {**result, "pid": os.getpid(), "peak_rss_bytes": peak_rss_bytes(), "written": time.time()}


def write_result(spec: dict, name: str, result: dict) -> None:
    """Atomically write a rank's stamped result (the launcher only reads complete files)."""
    out = Path(spec["out_dir"])
    tmp = out / f".{name}.json.tmp"
    tmp.write_text(json.dumps(result if "pid" in result else stamped(result)))
    tmp.replace(out / f"{name}.json")


def cpu_seconds() -> float:
    """CPU time of this whole process (every thread: the framework's pools and its communication threads)."""
    return time.process_time()


def exit_now() -> None:
    """Leave without running C++ static destructors: the results are written and the group destroyed,
    but a gloo/DDP worker thread still joinable at interpreter exit aborts the process ("terminate called
    without an active exception", SIGABRT) in about one run in ten, which would fail a finished run."""
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)
