"""Framework adapters, registered by name (lazy: no framework is imported until a run prepares)."""

from ..registry import Registry
from .base import Adapter, Workload
from .jax import JaxAdapter
from .mxnet import MXNetAdapter
from .null import NullAdapter
from .onnxruntime import ORTAdapter
from .openvino import OpenVINOAdapter
from .pytorch import TorchAdapter
from .tensorflow import TensorFlowAdapter

ADAPTERS: Registry[Adapter] = Registry("framework")
for _cls in (TorchAdapter, TensorFlowAdapter, JaxAdapter, ORTAdapter, OpenVINOAdapter, MXNetAdapter, NullAdapter):
    ADAPTERS.add(_cls.name, _cls())


def measures_a_framework(name: str) -> bool:
    """False for the harness-overhead adapter ('null'); True for every framework, known here or not
    (a record from a newer checkout)."""
    return name not in ADAPTERS or ADAPTERS.get(name).measures_a_framework

__all__ = ["ADAPTERS", "Adapter", "Workload", "measures_a_framework"]
