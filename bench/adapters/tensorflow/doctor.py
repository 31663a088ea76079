"""TensorFlow's answer to `bench doctor`: its build's CUDA and cuDNN, the GPUs it sees."""

from __future__ import annotations

from ..doctor import facts, wheel_version
from .recipe import import_tf


def gpu_facts() -> dict:
    tf, _ = import_tf()
    build = dict(tf.sysconfig.get_build_info())
    cuda = build.get("is_cuda_build")
    gpus = [d.name for d in tf.config.list_physical_devices("GPU")]  # [] and a log line where it finds none
    reason = None if gpus else ("no GPU visible to TensorFlow" if cuda else "a CPU-only build (tensorflow-cpu)")
    return facts(tf.__version__, f"CUDA {build.get('cuda_version')}" if cuda else "CPU only", gpus, reason,
                 cudnn=build.get("cudnn_version"), nccl=wheel_version("nccl") if cuda else None)
