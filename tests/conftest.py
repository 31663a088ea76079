"""Shared fixtures: an isolated results folder and a helper that runs the real CLI in a fresh process."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
TEST_HOST = "test-host"
os.environ["BENCH_HOST"] = TEST_HOST  # every record written by the tests lands in results/test-host/


def bench_cli(*args: str, results: Path | None = None, env: dict | None = None, timeout: int = 600):
    """Run `python -m bench ARGS` as a user would (fresh process) and return the CompletedProcess."""
    full_env = {**os.environ, "PYTHONPATH": str(ROOT), "BENCH_HOST": TEST_HOST, "TF_CPP_MIN_LOG_LEVEL": "3",
                **(env or {})}
    if results is not None:
        full_env["BENCH_RESULTS"] = str(results)
    return subprocess.run([sys.executable, "-m", "bench", *args], capture_output=True, text=True,
                          env=full_env, timeout=timeout, cwd=ROOT)


# A tiny, quick run: small CNN, small images, few iterations.
TINY_RUN = ("--model", "tiny_cnn", "--batch-size", "4", "--image-size", "32", "--protocol", "seed",
            "--warmup", "2", "--iterations", "5", "--phase-iterations", "2")


@pytest.fixture(scope="session")
def shared_results(tmp_path_factory) -> Path:
    """One results folder for the real-run tests, so the device peak is measured once per session."""
    return tmp_path_factory.mktemp("results")
