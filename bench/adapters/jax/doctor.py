"""JAX's answer to `bench doctor`: the CUDA plugin beside jaxlib (it must match jaxlib exactly), the GPUs it sees."""

from __future__ import annotations

from ...host.manifest import dist_version
from ..doctor import facts, first_line, wheel_version

PLUGINS = ("jax-cuda13-plugin", "jax-cuda12-plugin")


def gpu_facts() -> dict:
    import jax
    import jaxlib

    plugin = next((f"{name} {dist_version(name)}" for name in PLUGINS if dist_version(name)), None)
    mismatch = plugin and plugin.split()[1] != jaxlib.__version__
    gpus, reason = [], None
    try:
        gpus = [f"{d.platform}:{d.id} {d.device_kind}" for d in jax.devices("gpu")]
    except RuntimeError as exc:  # "Unknown backend: 'gpu'..." where no plugin or no GPU
        reason = first_line(exc)
    if mismatch:
        reason = f"{plugin} does not match jaxlib {jaxlib.__version__}: JAX refuses the plugin" + (
            f"; {reason}" if reason else "")
    built_for = f"CUDA {plugin.split('-')[1][4:]} ({plugin})" if plugin else "CPU only (no CUDA plugin)"
    return facts(jax.__version__, built_for, gpus, reason if not gpus or mismatch else None,
                 cudnn=wheel_version("cudnn") if plugin else None, nccl=wheel_version("nccl") if plugin else None,
                 jaxlib=jaxlib.__version__)
