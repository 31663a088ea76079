"""The environment of the notebook kernels a sweep or a report starts, and cleaning up after them.

Kernels inherit our environment: `bench` must be importable and TensorFlow's C++ logging quiet. Each
kernel's connection file holds its HMAC key, so they live in a private folder that is removed when
the sweep ends, and a folder left by a killed sweep is removed by the next one.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from pathlib import Path

import psutil

from .paths import PROJECT_ROOT

PREFIX = "bench-kernels-"


def _remove_stale() -> None:
    for folder in Path(tempfile.gettempdir()).glob(f"{PREFIX}*"):
        try:
            pid = int(folder.name.removeprefix(PREFIX).split("-")[0])
        except ValueError:
            continue
        if not psutil.pid_exists(pid):
            shutil.rmtree(folder, ignore_errors=True)


@contextlib.contextmanager
def kernel_environment():
    """Set PYTHONPATH, quiet TensorFlow and a private JUPYTER_RUNTIME_DIR for kernels; clean up after."""
    paths = [str(PROJECT_ROOT)] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    os.environ["PYTHONPATH"] = os.pathsep.join(dict.fromkeys(paths))
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    _remove_stale()
    runtime = tempfile.mkdtemp(prefix=f"{PREFIX}{os.getpid()}-")  # mode 0700
    previous = os.environ.get("JUPYTER_RUNTIME_DIR")
    os.environ["JUPYTER_RUNTIME_DIR"] = runtime
    try:
        yield runtime
    finally:
        shutil.rmtree(runtime, ignore_errors=True)
        if previous is None:
            os.environ.pop("JUPYTER_RUNTIME_DIR", None)
        else:
            os.environ["JUPYTER_RUNTIME_DIR"] = previous
