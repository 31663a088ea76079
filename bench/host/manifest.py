"""The environment manifest: versions, CPU/GPU, git commit, and an allow-listed set of env vars."""

from __future__ import annotations

import functools
import importlib.metadata
import os
import platform
import re
import socket
import subprocess
import sys
from collections.abc import Mapping

import psutil

from ..errors import ConfigError
from ..masking import mask_text
from ..paths import PROJECT_ROOT
from . import devices
from .devices import cpu_brand, cpu_flags
from .devices import cpu_info as _cpuinfo

# The exact environment variables a record keeps: those the frameworks and their runtimes document as
# changing performance: the thread pools, oneDNN and CUDA here, and each framework's own, which its adapter
# declares as it registers. Nothing else is ever recorded (a prefix or a deny-list let TF_CLI_CONFIG_FILE,
# a Terraform setting, and names such as TF_PASSPHRASE through).
RECORDED_ENV_VARS = [
    # OpenMP / MKL / OpenBLAS thread pools and affinity
    "OMP_NUM_THREADS", "OMP_PROC_BIND", "OMP_PLACES", "OMP_DYNAMIC", "OMP_WAIT_POLICY", "OMP_SCHEDULE",
    "MKL_NUM_THREADS", "MKL_DYNAMIC", "MKL_ENABLE_INSTRUCTIONS", "MKL_CBWR", "KMP_AFFINITY", "KMP_BLOCKTIME",
    "KMP_HW_SUBSET", "OPENBLAS_NUM_THREADS", "GOMP_CPU_AFFINITY",
    # oneDNN
    "ONEDNN_MAX_CPU_ISA", "DNNL_MAX_CPU_ISA", "ONEDNN_DEFAULT_FPMATH_MODE", "ONEDNN_VERBOSE",
    # CUDA / NCCL / Gloo
    "CUDA_VISIBLE_DEVICES", "CUDA_DEVICE_ORDER", "CUDA_LAUNCH_BLOCKING", "CUDA_MODULE_LOADING",
    "CUBLAS_WORKSPACE_CONFIG", "NCCL_DEBUG", "NCCL_SOCKET_IFNAME", "NCCL_IB_DISABLE", "NCCL_P2P_DISABLE",
    "NCCL_SHM_DISABLE", "NCCL_NVLS_ENABLE", "NCCL_HOSTID",
    "NCCL_ALGO", "NCCL_PROTO", "NCCL_BUFFSIZE", "NCCL_NTHREADS", "GLOO_SOCKET_IFNAME",
    # allocator preloads (jemalloc, tcmalloc) change allocation speed: kept as library names only
    "LD_PRELOAD",
    # the allocators' own settings (jemalloc's decay, glibc's tunables; bench noise's arms test them)
    "MALLOC_CONF", "GLIBC_TUNABLES", "TCMALLOC_RELEASE_RATE", "TCMALLOC_LARGE_ALLOC_REPORT_THRESHOLD",
    # the project's record of which of these it set itself (bench/adapters/process_environment.py)
    "BENCH_PROCESS_ENV_SET",
]
MAX_VALUE_CHARS = 512
# Absolute paths inside a value (e.g. XLA_FLAGS=--xla_dump_to=/home/user/x) name local users and folders.
# A quoted path may hold spaces, so it is masked whole; the lookbehinds keep "a/b" and "x:/y" intact.
_PATH = re.compile(r"""(["'])(?:/|~/|[A-Za-z]:[\\/])[^"']*\1"""
                   r"""|(?<![\w.-])(?:/|~/)[^\s,;:=\"']+"""
                   r"""|(?<![\w])[A-Za-z]:[\\/][^\s,;\"']*""")
_URL_WITH_USER = re.compile(r"[a-z][a-z0-9+.-]*://[^\s/@]+@", re.IGNORECASE)


def _safe_value(name: str, value: str) -> str:
    """No local path and no URL credentials in a recorded value (a report may be shared)."""
    if _URL_WITH_USER.search(value):
        return "<url with credentials removed>"
    if name == "LD_PRELOAD":
        # Which allocator is preloaded matters, where it lives does not.
        value = " ".join(os.path.basename(p) for p in re.split(r"[\s:]+", value) if p)
    else:
        value = _PATH.sub("<path>", value)
    value = mask_text(value)
    return value if len(value) <= MAX_VALUE_CHARS else value[:MAX_VALUE_CHARS] + "<truncated>"


def recorded_environment(environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """The allow-listed variables that are set, with paths and credentials masked."""
    env = os.environ if environ is None else environ
    return {k: _safe_value(k, env[k]) for k in sorted(RECORDED_ENV_VARS) if k in env}


COMMON_LIBRARIES = ("numpy", "scipy", "pandas")
# Each framework adapter declares its distributions when it registers (bench/adapters/base.py: register).
_FRAMEWORK_LIBRARIES: list[str] = []


def dist_version(distribution: str) -> str | None:
    """Installed version of a distribution, without importing it."""
    try:
        return importlib.metadata.version(distribution)
    except importlib.metadata.PackageNotFoundError:
        return None


def declare_framework(distributions: tuple[str, ...], environment_variables: tuple[str, ...]) -> None:
    """A framework's distributions (listed in every manifest) and the environment variables it documents as
    changing performance (recorded when set): called by each adapter as it registers."""
    _FRAMEWORK_LIBRARIES.extend(d for d in distributions if d not in _FRAMEWORK_LIBRARIES)
    RECORDED_ENV_VARS.extend(v for v in environment_variables if v not in RECORDED_ENV_VARS)


def libraries() -> tuple[str, ...]:
    """The distributions a manifest lists: each framework's own and those it declares, and the common ones."""
    return tuple(dict.fromkeys(_FRAMEWORK_LIBRARIES + list(COMMON_LIBRARIES)))


_UNIT_MHZ = {"hz": 1e-6, "khz": 1e-3, "mhz": 1.0, "ghz": 1e3}


def _advertised_mhz() -> float | None:
    """The CPU's nominal clock: py-cpuinfo's advertised figure, else the current one."""
    info = _cpuinfo()
    friendly = re.fullmatch(r"\s*([\d.]+)\s*([kmg]?hz)\s*", str(info.get("hz_advertised_friendly") or ""), re.I)
    if friendly:
        mhz = float(friendly[1]) * _UNIT_MHZ[friendly[2].lower()]
        if mhz > 0:
            return round(mhz, 1)
    hz = info.get("hz_advertised")
    if hz and hz[0]:
        return round(hz[0] / 1e6, 1)
    now = devices.current_cpu_mhz()
    return round(now, 1) if now else None


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
    """One safe folder name for this host; BENCH_HOST overrides it (e.g. to label a machine in merged results)."""
    explicit = os.environ.get("BENCH_HOST")
    # the machine's own name is made safe; a value the user gave is checked as given (a pasted `user:password@host`
    # must not become a folder name that spells the password)
    name = explicit or re.sub(r"[^A-Za-z0-9_.-]", "_", socket.gethostname() or "unknown-host")
    if name in (".", "..") or not 1 <= len(name) <= 64 or re.search(r"[^A-Za-z0-9_.-]", name):
        raise ConfigError(f"invalid {'BENCH_HOST' if explicit else 'host name'} {name[:80]!r}: a host name must be "
                          "1-64 characters of letters, digits, '_', '-', '.', and not '.' or '..'")
    return name


# The CPU features an int8 or bf16 speed-up depends on (VNNI: int8 dot products in one instruction; AMX: int8/bf16
# tile matrix units): recorded by name and shown beside every int8 and bf16 result. int8 runs without them (AVX2 or
# AVX-512 int8 arithmetic, slower), so none is required.
REDUCED_PRECISION_FEATURES = ("avx512_vnni", "avx_vnni", "amx_int8", "avx512_bf16", "amx_bf16")


def reduced_precision_features(flags) -> dict[str, bool]:
    """Which of the int8/bf16 CPU features `flags` (/proc/cpuinfo's names) has."""
    have = set(flags or ())
    return {name: name in have for name in REDUCED_PRECISION_FEATURES}


@functools.lru_cache(maxsize=1)
def _static_manifest() -> dict:
    flags = cpu_flags()
    interesting = sorted(f for f in flags if re.match(r"(avx|fma|amx|sse4|f16c|vnni|hypervisor)", f))
    physical, logical = psutil.cpu_count(logical=False), psutil.cpu_count(logical=True)
    mem = psutil.virtual_memory()
    return {
        "python": sys.version.split()[0],
        "interpreter": sys.prefix,  # which environment ran it (the main one, or a framework's own: MXNet's)
        "platform": platform.platform(),
        "cpu": {
            "model": cpu_brand(),
            "arch": _cpuinfo().get("arch"),
            "flags": interesting,
            "physical_cores": physical,
            "logical_cpus": logical,
            "mhz_advertised": _advertised_mhz(),
            "smt": bool(physical and logical and logical > physical),
            "threads_per_core": logical // physical if physical and logical else None,
            "virtual_machine": ("hypervisor" in flags) if flags else None,
            "affinity_cpus": len(os.sched_getaffinity(0)),
            "precision_features": reduced_precision_features(flags),
        },
        "memory_bytes": mem.total,
        "gpus": [dict(g) for g in devices.gpus()],
        "libraries": {name: v for name in libraries() if (v := dist_version(name))},
        "git": _git(),
    }


def collect_manifest(framework_info: dict | None = None) -> dict:
    """Everything about the machine and software that a result depends on (never secrets)."""
    return {"host": host_name(), **_static_manifest(), "framework": framework_info or {}, "env": recorded_environment()}
