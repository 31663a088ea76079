"""The environment manifest: versions, CPU/GPU, git commit, and an allow-listed set of env vars."""

from __future__ import annotations

import functools
import os
import platform
import re
import socket
import subprocess
import sys

import psutil

from . import devices
from .adapters.base import dist_version
from .paths import PROJECT_ROOT

# Only variables with these prefixes (or these exact names) are ever recorded...
ENV_PREFIXES = ("OMP_", "MKL_", "KMP_", "CUDA_", "NCCL_", "TF_", "XLA_", "JAX_", "ONEDNN_", "DNNL_",
                "OPENBLAS_", "GOMP_", "PYTORCH_", "TORCH_", "TORCHINDUCTOR_", "MXNET_", "ORT_")
ENV_NAMES = ("KERAS_BACKEND", "CUBLAS_WORKSPACE_CONFIG", "LD_PRELOAD")
# ...and never one whose name suggests a credential, even under an allowed prefix.
_SECRET = re.compile(r"KEY|TOKEN|SECRET|PASSW|CREDENTIAL|AUTH|COOKIE|SESSION", re.IGNORECASE)
LIBRARIES = ("torch", "torchvision", "tensorflow-cpu", "tensorflow", "keras", "jax", "jaxlib",
             "onnxruntime", "numpy", "scipy", "pandas")



def recorded_environment(environ=None) -> dict[str, str]:
    env = os.environ if environ is None else environ
    return {k: v for k, v in sorted(env.items())
            if (k in ENV_NAMES or k.startswith(ENV_PREFIXES)) and not _SECRET.search(k)}


@functools.lru_cache(maxsize=1)
def _cpuinfo() -> dict:
    import cpuinfo

    return cpuinfo.get_cpu_info()


def cpu_brand() -> str:
    return _cpuinfo().get("brand_raw") or platform.processor() or "unknown CPU"


def cpu_flags() -> list[str]:
    return list(_cpuinfo().get("flags", []))


def _git() -> dict:
    def git(*args: str) -> str | None:
        try:
            return subprocess.run(["git", *args], cwd=PROJECT_ROOT, capture_output=True, text=True,
                                  timeout=10, check=True).stdout.strip()
        except (OSError, subprocess.SubprocessError):
            return None

    status = git("status", "--porcelain", "--untracked-files=no")
    return {"commit": git("rev-parse", "HEAD"), "dirty": bool(status) if status is not None else None}


def host_name() -> str:
    """Folder-safe host name; BENCH_HOST overrides it (e.g. to label a machine in merged results)."""
    name = os.environ.get("BENCH_HOST") or socket.gethostname() or "unknown-host"
    return re.sub(r"[^A-Za-z0-9_.-]", "_", name)


@functools.lru_cache(maxsize=1)
def _static_manifest() -> dict:
    flags = cpu_flags()
    interesting = sorted(f for f in flags if re.match(r"(avx|fma|amx|sse4|f16c|vnni)", f))
    mem = psutil.virtual_memory()
    return {
        "python": sys.version.split()[0],
        "platform": platform.platform(),
        "cpu": {
            "model": cpu_brand(),
            "arch": _cpuinfo().get("arch"),
            "flags": interesting,
            "physical_cores": psutil.cpu_count(logical=False),
            "logical_cpus": psutil.cpu_count(logical=True),
            "affinity_cpus": len(os.sched_getaffinity(0)),
        },
        "memory_bytes": mem.total,
        "gpus": [dict(g) for g in devices.gpus()],
        "libraries": {name: v for name in LIBRARIES if (v := dist_version(name))},
        "git": _git(),
    }


def collect_manifest(framework_info: dict | None = None) -> dict:
    """Everything about the machine and software that a result depends on (never secrets)."""
    return {"host": host_name(), **_static_manifest(), "framework": framework_info or {}, "env": recorded_environment()}
