"""What a framework can reach on this machine (`bench doctor`): the facts every adapter's `doctor()` returns, and
the CUDA libraries a process has loaded, read from the loader's own map of this process."""

from __future__ import annotations

import re
from pathlib import Path

from ..host.manifest import dist_version

# The CUDA libraries whose copy decides what a framework runs with (a process may load another wheel's copy).
CUDA_LIBRARIES = ("libcudart", "libcudnn", "libnccl", "libcublas", "libcuda")
# The wheels those libraries come in, for each CUDA major version (what an environment would load them from).
CUDA_WHEELS = {"cudnn": ("nvidia-cudnn-cu13", "nvidia-cudnn-cu12"), "nccl": ("nvidia-nccl-cu13", "nvidia-nccl-cu12")}


def loaded_libraries(names: tuple[str, ...] = CUDA_LIBRARIES) -> dict[str, str]:
    """{library file name: its path} of each library whose name starts with one of `names` in this process."""
    try:
        maps = Path("/proc/self/maps").read_text()
    except OSError:  # not Linux: nothing to say
        return {}
    out = {}
    for path in re.findall(r"(/\S+\.so[.\d]*)$", maps, flags=re.M):
        name = Path(path).name
        if name.startswith(names):
            out.setdefault(name, path)
    return dict(sorted(out.items()))


def wheel_version(kind: str) -> str | None:
    """The installed wheel of `kind` ("cudnn", "nccl") as `name version`, the CUDA 13 one first (None: neither)."""
    for name in CUDA_WHEELS[kind]:
        version = dist_version(name)
        if version:
            return f"{name} {version}"
    return None


def facts(version: str | None, built_for: str, gpus: list[str], gpu: str | None, cudnn: str | None = None,
          nccl: str | None = None, **more) -> dict:
    """One framework's answer: its `version`, what its build targets (`built_for`: "CUDA 13.0", "CPU only"), the
    `gpus` it sees, why it cannot run on one (`gpu`, None when it can), the cuDNN and NCCL it uses, the CUDA
    libraries loaded by then, and anything else it knows (`more`)."""
    return {"version": version, "built_for": built_for, "gpus": gpus, "gpu": gpu, "cudnn": cudnn, "nccl": nccl,
            "loaded": loaded_libraries(), **more}


def first_line(exc: BaseException) -> str:
    """An exception as one line: a framework's "no GPU" message without its traceback or help text."""
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0] if text else ''}"
