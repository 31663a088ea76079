"""Shared fixtures: an isolated results folder and a helper that runs the real CLI in a fresh process."""

from __future__ import annotations

import atexit
import contextlib
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import psutil
import pytest

from tests import local_slurm

ROOT = Path(__file__).resolve().parent.parent
TEST_HOST = "test-host"
os.environ["BENCH_HOST"] = TEST_HOST  # every record written by the tests lands in results/test-host/
os.environ["BENCH_PEAK_N"] = "1024"  # the tests' runs are not benchmarks: a quick device peak is enough
# the tests' sweeps are not benchmarks: no quiet start (its own test fakes the machine)
os.environ["BENCH_QUIET_START_S"] = "0"
os.environ["BENCH_SPEED_REFERENCE"] = "0"  # nor a speed reference (its own test turns it on)
# the compiled-artefact caches of the tests' runs in a folder of this session, not the user's ~/.cache/dlbench
if "BENCH_COMPILE_CACHE" not in os.environ:
    os.environ["BENCH_COMPILE_CACHE"] = tempfile.mkdtemp(prefix="bench-test-compile-cache-")
    atexit.register(shutil.rmtree, os.environ["BENCH_COMPILE_CACHE"], ignore_errors=True)

# Several tests load frameworks into this one pytest process. Loading TensorFlow before torch's compiler (torch._dynamo,
# which imports triton) kills the process with a segmentation fault in triton/knobs.py (torch 2.14.1, TF 2.21, seen
# here: `import tensorflow; import torch._dynamo` crashes, the other order works). A benchmark never holds two
# frameworks in one process (one kernel per run), but the test session does: load torch's compiler first.
with contextlib.suppress(ImportError):
    import torch._dynamo  # noqa: F401


def bench_cli(*args: str, results: Path | None = None, env: dict | None = None, timeout: int = 600):
    """Run `python -m bench ARGS` as a user would (fresh process) and return the CompletedProcess."""
    full_env = {**os.environ, "PYTHONPATH": str(ROOT), "BENCH_HOST": TEST_HOST, "TF_CPP_MIN_LOG_LEVEL": "3",
                **(env or {})}
    if results is not None:
        full_env["BENCH_RESULTS"] = str(results)
    return subprocess.run([sys.executable, "-m", "bench", *args], capture_output=True, text=True,
                          env=full_env, timeout=timeout, cwd=ROOT)


def assert_utilisation_sane(record: dict) -> None:
    """A measured peak and a positive utilisation; above 100% only with the guard's flag. (The suite's peak
    uses a small matrix, BENCH_PEAK_N, so an efficient runtime on a tiny model can pass it: then the record
    must say so, never report it silently.)"""
    assert record["peak"]["flops_per_sec"] > 0 and record["utilisation"] > 0
    over = "utilisation_over_peak" in [f["name"] for f in record["flags"]]
    assert over == (record["utilisation"] > 1), (record["utilisation"], record["flags"])


# A tiny, quick run: small CNN, small images, few iterations.
TINY_RUN = ("--model", "tiny_cnn", "--batch-size", "4", "--image-size", "32", "--protocol", "seed",
            "--warmup", "2", "--iterations", "5", "--phase-iterations", "2")


@pytest.fixture(scope="session")
def slurm_cluster():
    """The local one-node Slurm cluster (tests/local_slurm.py) for the session: what was up is reused and left up,
    what the session started (slurmctld, slurmd, munged) is stopped at its end, so the machine is left as found."""
    reason = local_slurm.unavailable_reason()
    if reason:
        pytest.skip(reason)
    started = local_slurm.start()
    yield {"SLURM_CONF": str(local_slurm.CONF)}
    local_slurm.stop(started)


@pytest.fixture(scope="session")
def shared_results(tmp_path_factory) -> Path:
    """One results folder for the real-run tests, so the device peak is measured once per session."""
    return tmp_path_factory.mktemp("results")


# A real tiny sweep (`bench sweep --profile tiny`, 22 records, its sweep manifests and cached FLOP counts),
# committed so that the default tier reads real records without sweeping; `make test-full` sweeps afresh.
COMMITTED_SWEEP = ROOT / "tests" / "fixtures" / "tiny_sweep"


@pytest.fixture(scope="session")
def committed_sweep(tmp_path_factory) -> Path:
    """A writable copy of the committed tiny-sweep results (the report may cache into it)."""
    results = tmp_path_factory.mktemp("committed-sweep") / "results"
    shutil.copytree(COMMITTED_SWEEP, results)
    return results


@pytest.fixture(scope="session")
def tiny_sweep(tmp_path_factory):
    """The tiny profile swept once, killed after its first records, then resumed to completion."""
    results = tmp_path_factory.mktemp("tiny-sweep")
    records = results / TEST_HOST / "records"
    env = {**os.environ, "PYTHONPATH": str(ROOT), "BENCH_HOST": TEST_HOST, "TF_CPP_MIN_LOG_LEVEL": "3"}
    cmd = [sys.executable, "-m", "bench", "sweep", "--profile", "tiny", "--results-dir", str(results)]
    proc = subprocess.Popen(cmd, env=env, cwd=ROOT, start_new_session=True,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.time() + 300
    while len(list(records.glob("*.json"))) < 2:
        assert proc.poll() is None and time.time() < deadline, "sweep ended before it could be killed"
        time.sleep(0.2)
    tree = [proc.pid] + [c.pid for c in psutil.Process(proc.pid).children(recursive=True)]
    for pid in tree:  # the sweep and its notebook kernel, mid-run
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    proc.wait()
    psutil.wait_procs([p for p in map(_proc, tree[1:]) if p], timeout=10)
    killed_after = len(list(records.glob("*.json")))
    done = subprocess.run(cmd, env=env, cwd=ROOT, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr[-3000:]
    return results, killed_after


def _proc(pid: int):
    try:
        return psutil.Process(pid)
    except psutil.NoSuchProcess:
        return None


def interruptible() -> None:
    """A child's preexec_fn: a background job of a non-interactive shell (as CI may start us) ignores SIGINT, and
    children inherit that (Python then never raises KeyboardInterrupt); a terminal's foreground process does not.
    Restore the terminal's default, so a test's Ctrl-C reaches the sweep it starts."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def run_on_machines(nodes, argv_for, env: dict, log_dir: Path, timeout_s: float) -> list[str]:
    """Each emulated node (bench/runs/distributed/topology.py) runs the command one machine would type,
    `argv_for(node)`, inside its namespace; returns every machine's output once all have exited 0."""
    procs, logs = [], [log_dir / f"machine{node.index}.log" for node in nodes]
    for node in nodes:
        with logs[node.index].open("w") as log:  # files, not pipes: an unread pipe would stall both machines
            procs.append(subprocess.Popen(node.command(argv_for(node)), cwd=ROOT, env=env, stdout=log,
                                          stderr=subprocess.STDOUT))
    try:
        for p in procs:
            p.wait(timeout=timeout_s)
    finally:
        for p in procs:
            p.kill() if p.poll() is None else None
    outs = [log.read_text() for log in logs]
    assert [p.returncode for p in procs] == [0] * len(procs), [o[-2000:] for o in outs]
    return outs
