"""A sweep's processes and folders: Ctrl-C exits 130 cleanly, one sweep per folder, kernels and scratch folders go
with their sweep, and the progress bar names each run."""

import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

import psutil
import pytest

from bench.runs.distributed.run import SCRATCH_PREFIX, remove_stale_scratch
from bench.sweep import jupyter_kernels
from tests.conftest import ROOT, TEST_HOST, interruptible


def _dead_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def _kernel_like(folder: Path, *body: str) -> subprocess.Popen:
    """A process our kernel lookup takes for a kernel (its command line names the launcher module) that runs `body`
    with `f`, the private folder, as a kernel would write into it."""
    script = "\n".join(("import sys, time, pathlib", "f = pathlib.Path(sys.argv[2])") + body)
    return subprocess.Popen([sys.executable, "-c", script, jupyter_kernels.KERNEL_MODULE, str(folder)],
                            start_new_session=True)  # as jupyter_client starts a kernel: Ctrl-C does not reach it


def test_a_killed_launchers_scratch_and_kernel_folders_are_removed_by_the_next_run():
    pid = _dead_pid()
    scratch = Path(tempfile.mkdtemp(prefix=f"{SCRATCH_PREFIX}{pid}-"))
    kernels = Path(tempfile.mkdtemp(prefix=f"{jupyter_kernels.PREFIX}{pid}-"))
    mine = Path(tempfile.mkdtemp(prefix=f"{SCRATCH_PREFIX}{os.getpid()}-"))  # a live launcher's: kept
    try:
        remove_stale_scratch()
        jupyter_kernels.remove_stale()
        assert not scratch.exists() and not kernels.exists() and mine.exists()
    finally:
        mine.rmdir()


def test_the_kernel_folder_goes_even_while_an_exiting_kernel_still_writes_into_it(tmp_path):
    """After Ctrl-C a kernel still exiting can write into the private folder while it is being removed: the
    sweep waits for it and removes the folder (CI once found one left behind)."""
    folder = tmp_path / "kernels"
    folder.mkdir()
    writer = _kernel_like(folder, "end = time.time() + 1.5; i = 0", "while time.time() < end:",
                          "    try: (f / f'log{i}').write_text('x'); i += 1", "    except OSError: break")
    time.sleep(0.3)
    jupyter_kernels._remove(str(folder))
    writer.wait(timeout=10)
    assert not folder.exists()


def test_a_kernel_still_starting_when_the_sweep_ends_neither_recreates_the_folder_nor_outlives_it(tmp_path):
    """ipykernel makes the folder of its connection file and writes its HMAC key there, so a kernel that was still
    starting when Ctrl-C ended the sweep recreated the private folder after it had been removed (CI found one left
    behind). Its own session keeps Ctrl-C from it, and nbclient had not got to it: the sweep ends it, then removes
    the folder."""
    folder = tmp_path / "kernels"
    folder.mkdir()
    kernel = _kernel_like(folder, "time.sleep(0.5)", "f.mkdir(parents=True, exist_ok=True)",
                          "(f / 'kernel-1.json').write_text('key')", "time.sleep(60)")
    try:
        jupyter_kernels._remove(str(folder))
        assert not psutil.pid_exists(kernel.pid)  # ended (and reaped) by the sweep, not left to its own end
        time.sleep(0.7)
        assert not folder.exists()
    finally:
        kernel.kill()
        kernel.wait()


NULL_PROFILE = "frameworks: [null]\nmodels: [tiny_cnn]\nbatch_sizes: [1, 2]\nrepeats: {r}\nretries: 0\n" \
               "settings: {{protocol: seed, warmup: 2, iterations: 5, phase_iterations: 0}}\n"


def _kernels_of(pid: int) -> list[Path]:
    return list(Path(tempfile.gettempdir()).glob(f"bench-kernels-{pid}-*"))


@pytest.mark.full
def test_ctrl_c_during_a_sweep_exits_130_cleanly(tmp_path):
    profile = tmp_path / "p.yaml"
    profile.write_text(NULL_PROFILE.format(r=20))
    results = tmp_path / "results"
    env = {**os.environ, "PYTHONPATH": str(ROOT), "BENCH_HOST": TEST_HOST}
    proc = subprocess.Popen([sys.executable, "-m", "bench", "sweep", "--profile", str(profile), "--results-dir",
                             str(results)], env=env, cwd=ROOT, start_new_session=True, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, preexec_fn=interruptible)
    records = results / TEST_HOST / "records"
    deadline = time.time() + 240
    while len(list(records.glob("*.json"))) < 2:
        assert proc.poll() is None and time.time() < deadline, "sweep ended before it could be interrupted"
        time.sleep(0.2)
    children = psutil.Process(proc.pid).children(recursive=True)
    os.killpg(proc.pid, signal.SIGINT)  # what Ctrl-C in a terminal does: the whole foreground group
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 130, err[-2000:]
    assert "Traceback" not in err and "interrupted" in err
    gone, alive = psutil.wait_procs(children, timeout=30)
    assert not alive, f"orphans: {alive}"
    assert not list(results.rglob("*.tmp")) and not _kernels_of(proc.pid)
    [manifest] = (results / TEST_HOST / "sweeps").glob("*.json")
    assert json.loads(manifest.read_text())["status"] == "interrupted"


@pytest.mark.full
def test_a_second_sweep_on_the_same_folder_is_refused(tmp_path):
    profile = tmp_path / "p.yaml"
    profile.write_text(NULL_PROFILE.format(r=2))
    results = tmp_path / "results"
    env = {**os.environ, "PYTHONPATH": str(ROOT), "BENCH_HOST": TEST_HOST}
    cmd = [sys.executable, "-m", "bench", "sweep", "--profile", str(profile), "--results-dir", str(results)]
    first = subprocess.Popen(cmd, env=env, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    lock = results / TEST_HOST / ".sweep.lock"
    deadline = time.time() + 120
    while not (lock.exists() and lock.read_text()):
        assert first.poll() is None and time.time() < deadline
        time.sleep(0.1)
    second = subprocess.run(cmd, env=env, cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert first.wait(timeout=300) == 0
    assert second.returncode == 2 and "another sweep" in second.stderr and "Traceback" not in second.stderr
    records = [json.loads(p.read_text()) for p in (results / TEST_HOST / "records").glob("*.json")]
    assert Counter((r["config_key"], r["repeat"]) for r in records) == Counter(
        {k: 1 for k in {(r["config_key"], r["repeat"]) for r in records}}) and len(records) == 4


def test_the_progress_bar_names_each_run_while_it_runs_extra_processes_included(tmp_path):
    """The bar names the run in progress, not the last planned one while the adaptive plan's extra processes run."""
    from bench.sweep.runner import Sweep
    from tests.sweep.test_sweep_objects import DoubleExecutor, _profile

    class Watching(DoubleExecutor):
        def __init__(self, **kw) -> None:
            super().__init__(**kw)
            self.shown, self.sweep = [], None

        def submit(self, batch, results_dir, notify=lambda: None):
            inner = super().submit(batch, results_dir, notify)
            for s in batch:  # what the bar says as each run starts
                self.shown.append((getattr(self.sweep._bar, "postfix", ""), f"{s.task.config.label} r{s.task.repeat}"))
                yield next(inner)

    profile = _profile(tmp_path, "batch_sizes: [1]\nrepeats: adaptive\nmax_repeats: 4\nretries: 0\n")
    executor = Watching(spread=0.5)
    executor.sweep = Sweep(profile, tmp_path / "results", progress=False, announce=lambda _: None, executor=executor)
    m = executor.sweep.execute().manifest
    assert m.extra_processes and len(executor.shown) == 2 + len(m.extra_processes)
    for i, (shown, running) in enumerate(executor.shown):
        assert shown == running + (" (extra process)" if i >= 2 else ""), executor.shown
