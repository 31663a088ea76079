"""PyTorch: the adapter, its model definitions and its distributed rank."""

from . import adapter  # noqa: F401  (registers the adapter)
