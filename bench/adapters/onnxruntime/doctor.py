"""ONNX Runtime's answer to `bench doctor`: whether its build has the CUDA provider, and the CUDA it was built for."""

from __future__ import annotations

import contextlib

from ..doctor import facts, wheel_version


def gpu_facts() -> dict:
    import onnxruntime as ort

    cuda = "CUDAExecutionProvider" in ort.get_available_providers()
    built = None
    with contextlib.suppress(ImportError, AttributeError):  # only GPU wheels carry their CUDA version
        from onnxruntime.capi import build_and_package_info as info

        built = getattr(info, "cuda_version", None)
    # The provider loads CUDA and cuDNN when a session starts; it names no devices before that.
    reason = None if cuda and ort.get_device() == "GPU" else "no CUDAExecutionProvider (the onnxruntime wheel, " \
                                                             "not onnxruntime-gpu)"
    return facts(ort.__version__, f"CUDA {built}" if cuda else "CPU only", [], reason,
                 cudnn=wheel_version("cudnn") if cuda else None, providers=ort.get_available_providers())
