"""The environment of the notebook kernels a sweep or a report starts, and cleaning up after them.

Kernels inherit our environment: `bench` must be importable and TensorFlow's C++ logging quiet. Each
kernel's connection file holds its HMAC key, so they live in a private folder that is removed when
the sweep ends, and a folder left by a killed sweep is removed by the next one. The folder also holds a
private `python3` kernelspec (found first through JUPYTER_PATH), and one per framework environment of its
own, that start the kernel through bench/sweep/kernel_launcher.py, so a kernel's own log goes to `log_path`
instead of the user's terminal. BENCH_MAIN_PYTHON names the main environment's interpreter, which
measures per-host facts (peak, FLOPs) for kernels of every environment.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import sys
import tempfile
from pathlib import Path

import psutil

from ..adapters import ADAPTERS
from ..adapters.base import MAIN_KERNEL
from ..errors import terminations_unwind
from ..host.devices import CPU_INFO_ENV, cpu_info
from ..paths import PROJECT_ROOT

PREFIX = "bench-kernels-"


def remove_stale() -> None:
    """Remove the private kernel folders (connection files, HMAC keys) of sweeps or reports that were killed."""
    for folder in Path(tempfile.gettempdir()).glob(f"{PREFIX}*"):
        try:
            pid = int(folder.name.removeprefix(PREFIX).split("-")[0])
        except ValueError:
            continue
        if not psutil.pid_exists(pid):
            shutil.rmtree(folder, ignore_errors=True)


def _remove(folder: str, attempts: int = 50) -> None:
    """Remove the private folder. After Ctrl-C a kernel that is still exiting can write its log or a file into the
    folder while it is being removed (rmtree then leaves it), so wait for our children a moment and try again."""
    for _ in range(attempts):
        shutil.rmtree(folder, ignore_errors=True)
        if not os.path.exists(folder):
            return
        psutil.wait_procs(psutil.Process().children(recursive=True), timeout=0.1)


def _private_kernelspecs(folder: str) -> None:
    """The main environment's kernel, and one per framework environment that is built (MXNet's; TensorFlow's CUDA
    build, which runs its GPU configs: Adapter.kernel_for)."""
    kernels = {MAIN_KERNEL: (sys.executable, "Python 3 (bench)")}
    for adapter in map(ADAPTERS.get, ADAPTERS):
        if adapter.kernel != MAIN_KERNEL and adapter.interpreter():
            kernels[adapter.kernel] = (str(adapter.interpreter()), f"Python 3 ({adapter.name}, bench)")
        if adapter.gpu_kernel and adapter.gpu_interpreter():
            kernels[adapter.gpu_kernel] = (str(adapter.gpu_interpreter()), f"Python 3 ({adapter.name} GPU, bench)")
    for name, (python, display) in kernels.items():
        spec = Path(folder) / "kernels" / name
        spec.mkdir(parents=True)
        (spec / "kernel.json").write_text(json.dumps({
            "argv": [python, "-m", "bench.sweep.kernel_launcher", "-f", "{connection_file}"],
            "display_name": display, "language": "python"}))


@contextlib.contextmanager
def kernel_environment(log_path: Path | str | None = None):
    """Set PYTHONPATH, quiet TensorFlow, a private runtime folder and kernelspec for kernels whose own
    log goes to `log_path` (default: discarded with the folder); clean up after."""
    paths = [str(PROJECT_ROOT)] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    os.environ["PYTHONPATH"] = os.pathsep.join(dict.fromkeys(paths))
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    remove_stale()
    runtime = tempfile.mkdtemp(prefix=f"{PREFIX}{os.getpid()}-")  # mode 0700
    _private_kernelspecs(runtime)
    if log_path is not None:
        Path(log_path).parent.mkdir(parents=True, exist_ok=True)
    settings = {"JUPYTER_RUNTIME_DIR": runtime, "BENCH_MAIN_PYTHON": sys.executable,
                CPU_INFO_ENV: json.dumps(cpu_info()),  # read once here, not in every kernel
                "JUPYTER_PATH": os.pathsep.join(filter(None, [runtime, os.environ.get("JUPYTER_PATH")])),
                "BENCH_KERNEL_LOG": str(log_path) if log_path is not None else os.path.join(runtime, "kernel.log")}
    previous = {k: os.environ.get(k) for k in settings}
    os.environ.update(settings)
    # jupyter_client writes a kernel's connection file (its HMAC key) with mkstemp, in the temporary folder, not
    # JUPYTER_RUNTIME_DIR: here that is the private folder, so a killed sweep's file goes with it
    previous_tmp, tempfile.tempdir = tempfile.tempdir, runtime
    try:
        with terminations_unwind():  # SIGTERM / SIGHUP remove the folder of connection files as Ctrl-C does
            yield runtime
    finally:
        tempfile.tempdir = previous_tmp
        _remove(runtime)
        for k, v in previous.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
