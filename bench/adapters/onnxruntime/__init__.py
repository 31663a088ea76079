"""ONNX Runtime: the adapter (inference on an exported ONNX graph)."""

from . import adapter  # noqa: F401  (registers the adapter)
