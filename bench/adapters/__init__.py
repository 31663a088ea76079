"""Framework adapters, registered by name (lazy: no framework is imported until a run prepares)."""

from ..registry import Registry
from .base import Adapter, Workload
from .null import NullAdapter
from .pytorch import TorchAdapter
from .tensorflow import TensorFlowAdapter

ADAPTERS: Registry[Adapter] = Registry("framework")
for _cls in (TorchAdapter, TensorFlowAdapter, NullAdapter):
    ADAPTERS.add(_cls.name, _cls())

__all__ = ["ADAPTERS", "Adapter", "Workload"]
