"""ONNX Runtime's answer to `bench doctor`: whether its build has the CUDA provider, and the CUDA it was built for."""

from __future__ import annotations

import contextlib

from ...host import devices
from ..doctor import facts, wheel_version


def gpu_facts() -> dict:
    import onnxruntime as ort

    cuda = "CUDAExecutionProvider" in ort.get_available_providers()
    built = None
    with contextlib.suppress(ImportError, AttributeError):  # only GPU wheels carry their CUDA version
        from onnxruntime.capi import build_and_package_info as info

        built = getattr(info, "cuda_version", None)
    # The provider loads CUDA and cuDNN when a session starts and counts no devices before: the GPUs it would use are
    # the ones CUDA numbers here.
    gpus = [f"cuda:{g['index']} {g['name']}" for g in devices.gpus()] if cuda else []
    reason = ("no CUDAExecutionProvider (the onnxruntime wheel, not onnxruntime-gpu)" if not cuda
              else None if gpus else "no GPU visible (nvidia-smi lists none)")
    return facts(ort.__version__, f"CUDA {built}" if cuda else "CPU only", gpus, reason,
                 cudnn=wheel_version("cudnn") if cuda else None, providers=ort.get_available_providers())
