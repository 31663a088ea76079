"""The distributed strategies, each a registered object (bench/strategies/base.py): adding one is one module here,
imported below in the order the report lists them."""

from importlib import import_module

from .base import (
    ALL_REDUCE,
    BASELINE,
    BATCH_METHOD,
    DATA_PARALLEL,
    ONE_PROCESS,
    PARAMETER_SERVER,
    PIPELINE,
    REGISTRY,
    SGD_RECIPE,
    SINGLE,
    Strategy,
    has,
    names,
    strategy,
)

# each module registers its strategies when imported: in this order, the order the report lists them
for _module in ("single", "independent", "allreduce", "parameter_server", "pipelines", "sandblaster"):
    import_module(f"{__name__}.{_module}")

__all__ = ["ALL_REDUCE", "BASELINE", "BATCH_METHOD", "DATA_PARALLEL", "ONE_PROCESS", "PARAMETER_SERVER", "PIPELINE",
           "REGISTRY", "SGD_RECIPE", "SINGLE", "Strategy", "has", "names", "strategy"]
