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
import signal
import sys
import tempfile
import time
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


KERNEL_MODULE = "bench.sweep.kernel_launcher"


def _our_kernels() -> list[psutil.Process]:
    """The kernels this process started that are still alive. jupyter_client starts each in a session of its own, so
    Ctrl-C does not reach them: nbclient shuts them down, but not one that was still starting when the sweep ended."""
    kernels = []
    for child in psutil.Process().children(recursive=True):
        with contextlib.suppress(psutil.Error):
            if KERNEL_MODULE in child.cmdline():
                kernels.append(child)
    return kernels


def _remove(folder: str, grace_s: float = 3.0) -> None:
    """Remove the private folder once no kernel of ours can write to it. After Ctrl-C a kernel that is still exiting
    can write its log into the folder, and one that was still starting recreates it (ipykernel makes the folder of
    its connection file, and writes the HMAC key there), so wait for our kernels a moment, end those that outlive
    the grace (their owner is gone), and remove the folder after the last one."""
    deadline = time.monotonic() + grace_s
    while (kernels := _our_kernels()) and time.monotonic() < deadline:
        psutil.wait_procs(kernels, timeout=0.1)
    for signum, wait_s in ((signal.SIGTERM, 3.0), (signal.SIGKILL, 3.0)):
        if not kernels:
            break
        for kernel in kernels:
            with contextlib.suppress(psutil.Error):
                kernel.send_signal(signum)
        _, kernels = psutil.wait_procs(kernels, timeout=wait_s)
    for _ in range(10):  # a file written while rmtree walks the folder leaves it: walk again
        shutil.rmtree(folder, ignore_errors=True)
        if not os.path.exists(folder):
            return
        time.sleep(0.05)


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
            "argv": [python, "-m", KERNEL_MODULE, "-f", "{connection_file}"],
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
