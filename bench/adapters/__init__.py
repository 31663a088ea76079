"""Framework adapters, registered by name (lazy: no framework is imported until a run prepares)."""

from ..registry import Registry
from .base import Adapter, Workload
from .jax.adapter import JaxAdapter
from .mxnet.adapter import MXNetAdapter
from .null.adapter import NullAdapter
from .onnxruntime.adapter import ORTAdapter
from .openvino.adapter import OpenVINOAdapter
from .tensorflow.adapter import TensorFlowAdapter
from .torch.adapter import TorchAdapter

ADAPTERS: Registry[Adapter] = Registry("framework")
for _cls in (TorchAdapter, TensorFlowAdapter, JaxAdapter, ORTAdapter, OpenVINOAdapter, MXNetAdapter, NullAdapter):
    ADAPTERS.add(_cls.name, _cls())


def measures_a_framework(name: str) -> bool:
    """False for the harness-overhead adapter ('null'); True for every framework, known here or not
    (a record from a newer checkout)."""
    return name not in ADAPTERS or ADAPTERS.get(name).measures_a_framework

__all__ = ["ADAPTERS", "Adapter", "Workload", "measures_a_framework"]
