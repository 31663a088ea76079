"""Facts measured once per host in a fresh `python -m bench` process and cached under results/<host>/.

A fresh process keeps these measurements independent of the run's state (threads, allocator,
imported frameworks: importing torch's FLOP counter after TensorFlow crashes the process).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from ..adapters import process_environment
from ..masking import mask_text
from ..paths import PROJECT_ROOT
from ..results.store import atomic_write_json, host_dir


def main_python() -> str:
    """The main environment's interpreter: BENCH_MAIN_PYTHON (set for the kernels a sweep starts), else the
    project's .venv (a framework's own kernel opened in JupyterLab), else this one."""
    venv = PROJECT_ROOT / ".venv" / "bin" / "python"
    return os.environ.get("BENCH_MAIN_PYTHON") or (str(venv) if venv.exists() else sys.executable)


def bench_environ() -> dict[str, str]:
    """The environment for a `python -m bench` child in any of the project's environments."""
    pythonpath = os.pathsep.join(dict.fromkeys(filter(None, [str(PROJECT_ROOT), os.environ.get("PYTHONPATH")])))
    return {**os.environ, "PYTHONPATH": pythonpath, "BENCH_MAIN_PYTHON": main_python()}


def plain_environ() -> dict[str, str]:
    """bench_environ without a framework's process settings (those the project set, and any allocator preload or
    setting read at start): a per-host fact is the machine's, whatever the run that asks for it started with (a GEMM
    peak under a preloaded tcmalloc hung here in a futex, 2026-11-29)."""
    env = bench_environ()
    drop = set(process_environment.AT_START) | set(filter(None, env.get(process_environment.SET_BY_PROJECT,
                                                                       "").split(",")))
    return {k: v for k, v in env.items() if k not in drop and k != process_environment.SET_BY_PROJECT}


def in_fresh_process(argv: list[str]) -> dict:
    """Run `python -m bench *argv` in a fresh process of the main environment and return the JSON it prints
    (from a framework's own environment too: per-host facts are measured the same way for every kernel, in a plain
    process: plain_environ)."""
    proc = subprocess.run([main_python(), "-m", "bench", *argv], capture_output=True, text=True,
                          env=plain_environ())
    if proc.returncode != 0:
        tail = mask_text((proc.stderr.strip().splitlines() or ["no output"])[-1])  # a child's words: masked
        raise RuntimeError(f"'python -m bench {' '.join(argv)}' failed: {tail}")
    return json.loads(proc.stdout)


def cached(results_dir: Path | str, filename: str, key: str, argv: list[str]) -> dict:
    """Return cache[key] from results/<host>/<filename>, running `python -m bench *argv` on a miss."""
    path = host_dir(results_dir) / filename
    cache = json.loads(path.read_text()) if path.exists() else {}
    if key in cache:
        return cache[key]
    value = in_fresh_process(argv)
    cache = json.loads(path.read_text()) if path.exists() else {}  # another run may have written
    cache[key] = value
    atomic_write_json(path, cache)
    return value
